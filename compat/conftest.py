"""The compatibility suite's harness: record a framework's run through the fake vendor, stop the vendor,
replay it, check the results are equal and no credential reached the cassette, then change the prompt and
check the user sees the mismatch line, with no retry (transport calls are counted). Each row's figures
(delivery time, what the user saw) go to the file named by ``VCR_COMPAT_FIGURES`` for compat/run.py's
report; tests assert on counts, never on time."""

from __future__ import annotations

import json
import os
import shutil
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fakes import Upstream, fake_vendor

import vcr_transport

RECORDED = "tell me about cats"
CHANGED = "tell me about dogs"
LINE_TAIL = f"recorded '{RECORDED}', incoming '{CHANGED}'"
# Credentials every row uses; none may reach a cassette.
SECRETS = {
    "OPENAI": "sk-proj-COMPATKEYabcdefghijklmnopqrstuvwxyz012",
    "ANTHROPIC": "sk-ant-api03-COMPATKEYabcdefghijklmnopqrstuvw",
    "GOOGLE": "AIzaSyCOMPATKEY0123456789abcdefghijklmn",
    "AZURE": "azurekey0123456789abcdef0123456789",
    "AZURE_AD": "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.azureadtoken",
    "AWS_ACCESS": "AKIAIOSFODNN7COMPAT1",
    "AWS_SECRET": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYCOMPATKEY1",
    "AWS_SESSION": "IQoJb3JpZ2luX2VjCOMPATSESSIONTOKEN0123456789",
    "OAUTH": "ya29.a0COMPATOAUTHTOKEN0123456789abcdefghij",
}


@dataclass
class Row:
    """One row of the compatibility table, filled in as the test goes."""

    row: str
    library: str
    figures: dict[str, Any] = field(default_factory=dict)

    def save(self) -> None:
        target = os.environ.get("VCR_COMPAT_FIGURES")
        if target:
            with open(target, "a") as out:
                out.write(json.dumps({"row": self.row, "library": self.library, **self.figures}) + "\n")


@pytest.fixture(autouse=True, scope="session")
def _loopback_only() -> Iterator[None]:
    """The whole compatibility run may reach loopback only: any framework or client that tries anything else
    (a telemetry ping, a price list, a DNS lookup) fails the run with NetworkBlockedError naming it."""
    from vcr_transport._guard import NetworkGuard

    guard = NetworkGuard().start()
    try:
        yield
    finally:
        guard.stop()


@pytest.fixture(autouse=True)
def _not_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts outside CI, as on a developer's machine: ``CI`` changes what a configured recording mode
    does, and these tests record."""
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture
def vendor() -> Iterator[Upstream]:
    server = fake_vendor()
    yield server
    try:
        server.stop()
    except Exception:  # stopped by the test already
        pass


def secrets_in(path: Path) -> list[str]:
    text = path.read_text()
    return [name for name, value in SECRETS.items() if value in text or value.split("/")[0] in text]


def check_session(row: Row, cassette: Path, server: Any, run: Callable[[str], Any]) -> None:
    """``run(prompt)`` drives a realtime client (a WebSocket session) against ``server``
    (``tests/realtime_server.py``) and returns what the user gets. Records, replays with the server stopped
    (no socket), compares, scans, then replays with the changed prompt and keeps the mismatch the user saw
    (the field path of the changed client message)."""
    with vcr_transport.use_cassette(cassette, mode="record"):
        recorded = run(RECORDED)
    opened = server.connections
    assert opened > 0, "no session reached the server: the client bypassed it"
    row.figures["record"] = f"ok ({opened} sessions)"
    # record-on-miss, on a copy: replayed up to the changed client message, live from there.
    missed = cassette.with_name("record-on-miss.jsonl")
    shutil.copyfile(cassette, missed)
    with vcr_transport.use_cassette(missed, mode="record-on-miss"):
        changed = run(CHANGED)
    went_live = server.connections - opened
    assert went_live > 0, "record-on-miss never went live"
    server.close()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error", block_network=True):
        replayed = run(RECORDED)
    assert replayed == recorded and server.connections == opened + went_live
    with vcr_transport.use_cassette(missed, mode="replay", unplayed="error", block_network=True):
        assert run(CHANGED) == changed
    row.figures["replay"] = "ok, equal, no socket; record-on-miss went live at the changed message"
    found = secrets_in(cassette)
    row.figures["secrets"] = ", ".join(found) or "none"
    assert found == [], f"credentials in the cassette: {found}"
    with pytest.raises(vcr_transport.ReplayMismatch) as caught:
        with vcr_transport.use_cassette(cassette, mode="replay", unplayed="ignore"):
            run(CHANGED)
    error = caught.value
    assert error.field_path.startswith("message[") and LINE_TAIL.split(", incoming")[0] in str(error), str(error)
    row.figures["mismatch_seen"] = f"vcr_transport.ReplayMismatch at {error.field_path}"
    row.save()


def check_row(
    row: Row,
    cassette: Path,
    vendor: Upstream,
    run: Callable[[str, str], Any],
    *,
    calls: int | None = None,
    **options: Any,
) -> Any:
    """``run(base_url, prompt)`` drives the framework and returns what the user gets. Records, replays,
    compares, scans, then replays with the changed prompt and returns the exception the user saw."""
    with vcr_transport.use_cassette(cassette, mode="record", **options):
        recorded = run(vendor.url, RECORDED)
    received = len(vendor.received)
    vendor.stop()
    assert received > 0, "nothing reached the fake vendor: the framework bypassed it"
    row.figures["record"] = f"ok ({received} calls)"

    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error", **options) as used:
        replayed = run(vendor.url, RECORDED)
        assert used.session is not None and used.session.first_mismatch is None
    assert replayed == recorded
    row.figures["replay"] = "ok, equal"

    found = secrets_in(cassette)
    row.figures["secrets"] = ", ".join(found) or "none"
    assert found == [], f"credentials in the cassette: {found}"

    cassette_calls = sum(
        1 for line in cassette.read_text().splitlines() if '"type": "request"' in line or '"type":"request"' in line
    )
    answered: list[int] = []
    with pytest.raises(BaseException) as caught:
        with vcr_transport.use_cassette(cassette, mode="replay", unplayed="ignore", **options) as used:
            assert used.session is not None and used.session.replayer is not None
            replay = used.session.replayer
            respond = replay.respond

            started: list[float] = []

            def counting(request: Any, body: bytes) -> Any:
                answered.append(1)
                started.append(time.perf_counter())
                return respond(request, body)

            replay.respond = counting  # type: ignore[method-assign]
            try:
                run(vendor.url, CHANGED)
            finally:
                # From the request that missed reaching the transport to the user's exception.
                row.figures["mismatch_ms"] = round((time.perf_counter() - started[-1]) * 1000, 1) if started else None
    error = caught.value
    shown = "".join(traceback.format_exception(error))
    line = next((ln.strip() for ln in shown.splitlines() if LINE_TAIL in ln), None)
    row.figures["mismatch_seen"] = f"{type(error).__module__}.{type(error).__qualname__}" + (
        " (line in its message)" if LINE_TAIL in str(error) else " (line in the traceback's cause)"
    )
    row.save()
    assert line is not None and "replay mismatch at call" in shown and "field body." in shown, shown[-2000:]
    # The first call that differs is answered once: no retry reached the transport.
    expected = calls if calls is not None else 1
    assert len(answered) == expected, f"{len(answered)} requests reached the transport (cassette has {cassette_calls})"
    return error


def check_mcp_row(row: Row, cassette: Path, stop: Callable[[], None], run: Callable[[str], Any]) -> Any:
    """``run(prompt)`` drives an agent whose tools come from an MCP server, both servers (the fake vendor and
    the MCP server) running; ``stop`` stops them. Records, stops, replays ten times (each equal, no mismatch,
    no unplayed call), scans, then replays with the changed prompt and checks the user sees the mismatch
    line. Returns what the recording run gave."""
    try:
        with vcr_transport.use_cassette(cassette, mode="record"):
            recorded = run(RECORDED)
    finally:
        stop()
    requests = sum(1 for line in cassette.read_text().splitlines() if line.startswith('{"type":"request"'))
    row.figures["record"] = f"ok ({requests} calls)"
    for _ in range(10):  # whatever of the session ran concurrently must pair the same way every time
        with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error") as used:
            assert run(RECORDED) == recorded
        assert used.session is not None and used.session.first_mismatch is None
    row.figures["replay"] = "ok, equal (10 runs)"
    found = secrets_in(cassette)
    row.figures["secrets"] = ", ".join(found) or "none"
    assert found == [], f"credentials in the cassette: {found}"
    started = time.perf_counter()
    with pytest.raises(BaseException) as caught:  # the framework's own error, or an exception group
        with vcr_transport.use_cassette(cassette, mode="replay", unplayed="ignore"):
            run(CHANGED)
    row.figures["mismatch_ms"] = round((time.perf_counter() - started) * 1000, 1)  # the whole run
    error = caught.value
    shown = "".join(traceback.format_exception(error))
    row.figures["mismatch_seen"] = f"{type(error).__module__}.{type(error).__qualname__}" + (
        " (line in its message)" if LINE_TAIL in str(error) else " (line in the traceback's cause)"
    )
    row.save()
    assert LINE_TAIL in shown and "replay mismatch at call" in shown, shown[-2000:]
    return recorded
