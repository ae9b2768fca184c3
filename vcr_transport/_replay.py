"""Replay: transports that answer each request from the cassette, chunk for chunk, with no network."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import ModuleType
from typing import Any

from ._core._faults import Fault, corrupt_chunk
from ._core._format import RecordedCall
from ._core._modes import Decision, Step
from ._core._options import Options
from ._core._replay import ReplayEngine, replay_headers
from ._exceptions import NetworkBlockedError, ReplayMismatch, UnplayedCallsError
from ._http import header_pairs, library_of, rebuild_error, stream_class
from ._storage import read_cassette

__all__ = [
    "STAINLESS_HEADERS",
    "ReplayTransport",
    "answers_with_error_response",
    "error_response",
    "fault_response",
    "kept_out",
]


class _ReplayStream:
    """The recorded chunks, one-shot: a second iteration continues where the first stopped. ``faults`` (those
    that hit this call) cut, stall, delay or corrupt them; a wait longer than ``read_timeout`` waits that
    long, then raises the library's ReadTimeout, as a silent server makes it do."""

    def __init__(
        self,
        call: RecordedCall,
        fail: Callable[[], BaseException],
        transport: ReplayTransport,
        faults: tuple[Fault, ...] = (),
        request: Any = None,
    ) -> None:
        self._call = call
        self._fail = fail
        self._pace = transport.options.pace
        self._transport = transport  # its sleep and async_sleep, a seam for tests
        self._faults = faults
        self._request = request
        self._steps: Iterator[float | bytes] | None = None

    def _delay(self, position: int) -> float:
        offsets = self._call.offsets
        previous = offsets[position - 1] if position else 0.0
        return max(0.0, offsets[position] - previous) * (self._pace or 0.0)

    def _error(self, name: str, message: str) -> BaseException:
        library = library_of(self._request)
        return rebuild_error(library, f"{library.__name__}.{name}", message, self._request)

    def _wait(self, seconds: float) -> Iterator[float]:
        timeout = (self._request.extensions.get("timeout") or {}).get("read") if self._request is not None else None
        if timeout is not None and seconds > timeout:
            yield timeout
            raise self._error("ReadTimeout", "The read operation timed out")
        yield seconds

    def _corrupted(self) -> int | None:
        for fault in self._faults:
            if fault.kind == "corrupt":
                if fault.chunk is not None:
                    return fault.chunk
                return next((i for i, chunk in enumerate(self._call.events) if corrupt_chunk(chunk)), None)
        return None

    def _run(self) -> Iterator[float | bytes]:
        """What the stream does, in order: a float is a wait, bytes a chunk; a fault or the recorded
        failure raises."""
        chunks = self._call.events
        corrupted = self._corrupted()
        for fault in self._faults:
            if fault.kind == "delay":
                yield from self._wait(fault.seconds)
        for position, chunk in enumerate(chunks):
            for fault in self._faults:
                if fault.kind == "stall" and fault.after == position:
                    yield from self._wait(fault.seconds)
                if fault.kind == "cut" and fault.after == position:
                    raise self._error(
                        "RemoteProtocolError",
                        "peer closed connection without sending complete message body (incomplete chunked read)",
                    )
            if self._pace:
                yield self._delay(position)
            if position == corrupted:
                chunk = corrupt_chunk(chunk) or b"!" + chunk[1:]
            yield chunk
        if self._call.outcome == "error":
            raise self._fail()

    def _next_steps(self) -> Iterator[float | bytes]:
        if self._steps is None:
            self._steps = self._run()
        return self._steps

    def _plain_chunks(self) -> Iterator[bytes] | None:
        """The chunks themselves when nothing waits or fails on the way (no fault, no pace, no recorded
        failure): iterated with no step between them."""
        if self._steps is None and not self._faults and not self._pace and self._call.outcome != "error":
            chunks = iter(self._call.events)
            self._steps = chunks
            return chunks
        return None

    def __iter__(self) -> Iterator[bytes]:
        plain = self._plain_chunks()
        if plain is not None:
            yield from plain
            return
        for step in self._next_steps():
            if isinstance(step, bytes):
                yield step
            else:
                self._transport.sleep(step)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for step in self._next_steps():
            if isinstance(step, bytes):
                yield step
            else:
                await self._transport.async_sleep(step)

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def _anyio_sleep(seconds: float) -> None:
    import anyio  # lazily: only pace needs it

    await anyio.sleep(seconds)


class ReplayTransport:
    """Answers each request from a cassette, byte- and chunk-exact. Holds no HTTP client, opens no socket.

    One object serves httpx and httpx2 clients, sync and async; responses are built from the request's own
    library. The options, as keywords or ``options=Options(...)``, are those of ``vcr_transport.Options``
    (``ordered``, ``pace``, ``max_retry_after``, ``on_mismatch``, ``ignore_headers``, ``compare_headers``,
    ``ignore_fields`` and the redaction rules the cassette was recorded with); unknown names and wrong values
    are refused.
    ``faults`` (``vcr_transport.Fault`` or their text) inject errors, cuts, stalls, delays and corrupt
    chunks. ``sleep`` and ``async_sleep`` are what ``pace``, delays and stalls wait with.
    """

    def __init__(self, path: str | os.PathLike[str], *, options: Options | None = None, **arguments: Any) -> None:
        self.path = os.fspath(path)
        given = Options.of(options, arguments, where="ReplayTransport", entry="replay")
        cassette = read_cassette(path, cache=given.parse_cache)
        # An imported cassette's header says how vcrpy matched it; an option given here overrides that.
        self.options = given.with_cassette_header(cassette.header, given.explicit(), path=self.path)
        self.engine = ReplayEngine(
            cassette, self.options.matcher(), self.options.redactor(), ordered=self.options.ordered
        )
        self.on_mismatch = self.options.on_mismatch
        self.decision = Decision(
            "replay",
            readable=True,
            exists=True,
            passthrough=self.options.passthrough,
            passthrough_replay=self.options.passthrough_replay,
            ignore_hosts=self.options.ignore_hosts,
        )
        # Each call's replayed headers as latin-1 bytes, made when the call is first replayed.
        self._headers: list[list[tuple[bytes, bytes]] | None] = [None] * len(self.engine.cassette.calls)
        self._fault_answers: dict[tuple[int, int], int] = {}  # (fault, call): status answers given
        self._answers = [0] * len(self.engine.cassette.calls)  # how often each call was replayed
        self.sleep: Callable[[float], None] = time.sleep
        self.async_sleep: Callable[[float], Awaitable[None]] = _anyio_sleep

    @property
    def first_mismatch(self) -> ReplayMismatch | None:
        """The first mismatch seen, even if an SDK swallowed or wrapped it."""
        return self.engine.first_mismatch

    def raise_first_mismatch(self) -> None:
        if self.engine.first_mismatch is not None:
            raise self.engine.first_mismatch

    def unplayed_calls(self) -> list[tuple[int, str, str]]:
        """(call index, method, URL) of every recorded call no request has asked for."""
        return self.engine.unplayed()

    def assert_all_played(self) -> None:
        unplayed = self.engine.unplayed()
        if unplayed:
            raise UnplayedCallsError(self.path, unplayed)

    def respond(self, request: Any, body: bytes) -> Any:
        """The recorded response to a request whose body was read (the sync and async sides share this)."""
        library = library_of(request)
        url = str(request.url)
        step = self.decision.step_for(url)
        if step is not Step.REPLAY:
            return kept_out(library, request, step)
        headers = header_pairs(request.headers)
        try:
            call = self.engine.choose(request.method, url, headers, body)
        except ReplayMismatch as mismatch:
            if answers_with_error_response(self.on_mismatch, headers):
                return error_response(library, "replay_mismatch", mismatch)
            raise
        all_faults = self.options.faults
        path = request.url.path if all_faults else ""
        for number, fault in enumerate(all_faults):
            if fault.kind == "status":
                given = self._fault_answers.get((number, call.index), 0)
                if given < fault.times and fault.hits(call.index, path, given):
                    self._fault_answers[number, call.index] = given + 1
                    self.engine.put_back(call)
                    return fault_response(library, fault, call.index)
        attempt = self._answers[call.index]
        self._answers[call.index] += 1
        faults = tuple(f for f in all_faults if f.kind != "status" and f.hits(call.index, path, attempt))
        if call.status is None:
            raise rebuild_error(library, call.error_class, call.error_message, request)
        stream = stream_class(library, _ReplayStream)(
            call, lambda: rebuild_error(library, call.error_class, call.error_message, request), self, faults, request
        )
        return library.Response(
            call.status,
            headers=self._replayed_headers(call),
            stream=stream,
            extensions={"http_version": call.http_version.encode("ascii")},
        )

    def _replayed_headers(self, call: RecordedCall) -> list[tuple[bytes, bytes]]:
        encoded = self._headers[call.index]
        if encoded is None:
            created = self.engine.cassette.header.get("created")
            replayed = replay_headers(call, self.options.max_retry_after, created)
            encoded = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in replayed]
            self._headers[call.index] = encoded
        return list(encoded)  # the response's own list

    def handle_request(self, request: Any) -> Any:
        return self.respond(request, request.read())

    async def handle_async_request(self, request: Any) -> Any:
        return self.respond(request, await request.aread())

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    def __enter__(self) -> ReplayTransport:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    async def __aenter__(self) -> ReplayTransport:
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.aclose()


# Headers every Stainless-generated SDK sends with every request (openai, anthropic and their Azure, Bedrock
# and Vertex clients, whatever the User-Agent a framework gives them).
STAINLESS_HEADERS = frozenset({"x-stainless-lang", "x-stainless-retry-count"})


def answers_with_error_response(on_mismatch: str, headers: list[tuple[str, str]]) -> bool:
    """Whether a failure should reach the SDK as a non-retryable error response rather than an exception.

    ``auto``: a request from a Stainless SDK (it carries ``x-stainless-*`` headers) gets the response, unless
    the SDK module that sent it retries only transport errors and lets other exceptions through (its
    ``_base_client`` uses ``request_exceptions()``: openai 3.50 and later), which then gets the exception
    itself. Stainless SDKs that wrap every exception in ``APIConnectionError`` and retry it with sleeps
    (anthropic, openai 3.3) would otherwise hide the mismatch for a second or more. Everyone else (google-genai,
    litellm's own httpx calls, plain httpx) gets the exception, which carries the mismatch line."""
    if on_mismatch != "auto":
        return on_mismatch == "respond"
    if not any(name.lower() in STAINLESS_HEADERS for name, _ in headers):
        return False
    return not _sending_sdk_lets_exceptions_through()


def _sending_sdk_lets_exceptions_through() -> bool:
    """Whether the Stainless ``_base_client`` in the call stack (sync frames, or the awaiting coroutines)
    retries only transport errors. False when none is found: the error response is then the safe answer."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if isinstance(module, str) and module.endswith("._base_client"):
            return "request_exceptions" in frame.f_globals
        frame = frame.f_back  # type: ignore[assignment]
    return False


def kept_out(library: ModuleType, request: Any, step: Step) -> Any:
    """A passthrough request in replay: an empty 204 (``Step.EMPTY``), or NetworkBlockedError (``Step.BLOCK``,
    and ``Step.PASS_THROUGH``: a ReplayTransport has no transport to send an ignored host's request on)."""
    if step is Step.EMPTY:
        return library.Response(204, headers=[("x-vcr-transport", "passthrough")])
    if step is Step.PASS_THROUGH:
        raise NetworkBlockedError(
            f"{request.method} {request.url}: ignore_hosts names its host, but a ReplayTransport has no transport "
            "to send it on; use use_cassette() or transport(), which send it on with the client's own transport"
        )
    raise NetworkBlockedError(
        f"{request.method} {request.url} matches a passthrough rule, so it is never recorded, and replay does not "
        "forward it (passthrough_replay='block'); use passthrough_replay='empty' to answer it with an empty 204"
    )


def fault_response(library: ModuleType, fault: Fault, call_index: int) -> Any:
    """A status fault's answer: its error status, a JSON error body and the retry delay in ``retry-after``
    (seconds) and ``retry-after-ms``."""
    message = f"fault injected by vcr_transport: {fault.code} before recorded call {call_index}"
    body = json.dumps({"type": "error", "error": {"type": "vcr_transport_fault", "message": message}}).encode()
    return library.Response(
        fault.code,
        headers=[
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
            ("retry-after", f"{fault.retry_after:g}"),
            ("retry-after-ms", f"{fault.retry_after * 1000:g}"),
            ("x-vcr-transport", "fault"),
        ],
        content=body,
    )


def error_response(library: ModuleType, error_type: str, error: Exception) -> Any:
    """A 400 with ``x-should-retry: false`` whose JSON body carries the error's message on one line."""
    message = "; ".join(str(error).splitlines())
    body = json.dumps({"type": "error", "error": {"type": error_type, "message": message}}).encode()
    return library.Response(
        400,
        headers=[
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
            ("x-should-retry", "false"),
            ("x-vcr-transport", error_type.replace("_", "-")),
        ],
        content=body,
    )
