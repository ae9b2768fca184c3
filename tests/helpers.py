from __future__ import annotations

import asyncio
import contextlib
import io
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import vcr_transport
from vcr_transport._tools._cli import main as cli


def recording(library: Any, is_async: bool, path: Path, **options: Any) -> Any:
    if is_async:
        return vcr_transport.AsyncRecordingTransport(library.AsyncHTTPTransport(), path, **options)
    return vcr_transport.RecordingTransport(library.HTTPTransport(), path, **options)


def call_lines(index: int, url: str, owner: str | None = None) -> list[dict[str, Any]]:
    """A small complete call's four lines (a GET answered with one text event), owned by ``owner`` when given."""
    request: dict[str, Any] = {
        "type": "request",
        "call_index": index,
        "method": "GET",
        "url": url,
        "headers": [["accept", "*/*"]],
        "body": None,
    }
    if owner is not None:
        request["test"] = owner
    response = {
        "type": "response",
        "call_index": index,
        "status": 200,
        "headers": [["content-type", "text/plain"]],
        "http_version": "HTTP/1.1",
    }
    event = {"type": "event", "call_index": index, "event_index": 0, "t": 0.001, "text": "hello"}
    return [
        request,
        response,
        event,
        {"type": "call_end", "call_index": index, "event_count": 1, "outcome": "complete"},
    ]


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    """Lines as a cassette's compact JSONL bytes."""
    return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)


def cassette_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def call_ends(path: Path) -> list[dict[str, Any]]:
    return sorted(
        (line for line in cassette_lines(path) if line["type"] == "call_end"), key=lambda end: end["call_index"]
    )


def verify_strict(path: Path) -> tuple[int, str]:
    """``vcr-transport verify --strict`` on one cassette, in-process: its exit code and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli(["verify", "--strict", str(path)])
    return code, out.getvalue()


# --- reads with a deadline: a test that waits on a socket fails after READ_TIMEOUT, it never hangs ---------

READ_TIMEOUT = 10.0  # seconds: generous for a loaded machine, short beside a CI job's limit


def recv_event(connection: Any) -> Any:
    """The next event of an openai realtime connection (sync), waiting at most READ_TIMEOUT: its ``recv()``
    takes no timeout, so this reads its websockets connection (``_connection``, openai 3.x) as ``recv`` does."""
    return connection.parse_event(connection._connection.recv(timeout=READ_TIMEOUT, decode=False))


def events(connection: Any) -> Any:
    """``for event in connection`` with READ_TIMEOUT on each read: the events until the server closes."""
    from websockets.exceptions import ConnectionClosedOK

    with contextlib.suppress(ConnectionClosedOK):
        while True:
            yield recv_event(connection)


async def async_events(connection: Any) -> Any:
    """``async for event in connection`` (openai's async realtime connection, or a websockets one) with
    READ_TIMEOUT on each read."""
    from websockets.exceptions import ConnectionClosedOK

    with contextlib.suppress(ConnectionClosedOK):
        while True:
            yield await asyncio.wait_for(connection.recv(), READ_TIMEOUT)


async def each_within(messages: Any) -> Any:
    """``async for message in messages`` (an async iterator: genai's ``session.receive()``) with READ_TIMEOUT on
    each message."""
    iterator = aiter(messages)
    while True:
        try:
            yield await asyncio.wait_for(anext(iterator), READ_TIMEOUT)
        except StopAsyncIteration:
            return


def finishes_within(seconds: float, work: Callable[[], object]) -> None:
    """``work()`` in a daemon thread, which must end within ``seconds``: a guard against work that would take
    hours on hostile input (exponential or quadratic), not a measure of speed."""
    done = threading.Event()

    def run() -> None:
        work()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(seconds), f"still running after {seconds} s: the work grows faster than the input"
