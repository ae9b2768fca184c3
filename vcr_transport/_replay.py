"""Replay's shell: the recorded responses rebuilt in the request's own library, chunk for chunk, with no
network, and the answers replay gives instead (a fault, an error response, a passthrough's 204).

``Replayer`` answers requests from one cassette: the engine (``_core/engine/_engine.py``) chooses the call, the
fault schedule (``_core/engine/_faults.py``) says which faults hit it. Which requests reach it is the session's
decision (``_session.py``, where the transports are).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ._core.engine._engine import ReplayEngine, replay_headers
from ._core.engine._modes import Step
from ._core.engine._options import Options
from ._core.format._bodies import redact_url
from ._core.format._format import RecordedCall
from ._core.rules._redaction import Redactor
from ._exceptions import NetworkBlockedError
from ._http import header_pairs, library_of, rebuild_error, stainless_sender_lets_exceptions_through, stream_class
from ._storage import read_cassette
from ._test_ids import recorded_owner

if TYPE_CHECKING:
    from ._core.engine._faults import Fault, FaultSchedule

__all__ = [
    "CALL_INDEX_EXTENSION",
    "STAINLESS_HEADERS",
    "Replayer",
    "answers_with_error_response",
    "error_response",
    "fault_response",
    "kept_out",
]


class _Poll(float):
    """A wait of a stream held open (``_ReplayStream._hold``) before it looks again whether the calls it
    waits for were played: a real wait, never the ``sleep`` seams, which may skip the recorded waits."""


# A step of a replayed stream: a wait (seconds), or a run of chunks passed on as they are.
_Step = float | Iterator[bytes]
_HOLD_POLL = _Poll(0.01)


class _ReplayStream:
    """The recorded chunks, one-shot: a second iteration continues where the first stopped. ``faults`` (those
    that hit this call) cut, stall, delay or corrupt them; a wait longer than ``read_timeout`` waits that
    long, then raises the library's ReadTimeout, as a silent server makes it do. The sync and async sides
    differ only in how they wait."""

    def __init__(
        self,
        call: RecordedCall,
        fail: Callable[[], BaseException],
        replayer: Replayer,
        faults: tuple[Fault, ...] = (),
        request: Any = None,
    ) -> None:
        self._call = call
        self._fail = fail
        self._pace = replayer.options.pace
        self._replayer = replayer  # its sleep and async_sleep, a seam for tests
        self._faults = faults
        self._request = request
        self._steps: Iterator[_Step] | None = None
        self._run: Iterator[bytes] = iter(())  # the run of chunks being passed on (async)
        self._chained: Iterator[bytes] | None = None  # the chunks passed on (sync)
        self._reached = 0.0  # with pace: the latest recorded time of a chunk passed on

    def _next_steps(self) -> Iterator[_Step]:
        if self._steps is None:
            self._steps = self._plan()
        return self._steps

    def __iter__(self) -> Iterator[bytes]:
        # One iterator, made at the first iteration: a second continues where the first stopped. The runs of
        # chunks chained in C, each wait waited as the chain reaches it.
        if self._chained is None:
            self._chained = itertools.chain.from_iterable(map(self._waited, self._next_steps()))
        return self._chained

    def _waited(self, step: _Step) -> Iterator[bytes]:
        """A step of the plan as chunks: a run as it is; a wait waited, then no chunk."""
        if isinstance(step, float):
            (time.sleep if isinstance(step, _Poll) else self._replayer.sleep)(step)
            return iter(())
        return step

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._run:
            yield chunk
        for step in self._next_steps():
            if isinstance(step, _Poll):
                await _anyio_sleep(step)
            elif isinstance(step, float):
                await self._replayer.async_sleep(step)
            else:
                self._run = step
                for chunk in step:
                    yield chunk

    def _plan(self) -> Iterator[_Step]:
        """What the stream does, in order: waits, and runs of the recorded chunks between the places where
        something happens (a stall, a cut, a paced gap, a corrupt chunk). With none, the stream is one run.
        A cut or the recorded failure raises."""
        chunks = self._call.events
        corrupted = self._corrupted()
        for fault in self._faults:
            if fault.kind == "delay":
                yield from self._wait(fault.seconds)
        start = 0
        run = iter(chunks)  # every run of chunks is the next part of this one iterator (a C loop for a list)
        for position in self._stops(len(chunks), corrupted):
            yield itertools.islice(run, position - start)
            yield from self._before(position)
            start = position
            if position == corrupted:
                from ._core.engine._faults import corrupt_chunk

                chunk = next(run)
                yield iter((corrupt_chunk(chunk) or b"!" + chunk[1:],))
                start += 1
        yield run
        waits_for = self._replayer.engine.holds(self._call.index)
        if waits_for:
            yield from self._hold(waits_for)
        if self._call.outcome == "error":
            raise self._fail()

    def _hold(self, calls: tuple[int, ...]) -> Iterator[float]:
        """Stay open, as the recorded stream did, until ``calls`` are played (``ReplayEngine.holds``: a stream
        with no end of its protocol, such as MCP's GET stream); past the request's read timeout, raise the
        library's ReadTimeout, as a silent server makes it do."""
        timeout = (self._request.extensions.get("timeout") or {}).get("read") if self._request is not None else None
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._replayer.engine.all_played(calls):
            if deadline is not None and time.monotonic() >= deadline:
                raise self._error("ReadTimeout", "The read operation timed out")
            yield _HOLD_POLL

    def _stops(self, count: int, corrupted: int | None) -> Iterable[int]:
        """The chunk positions something happens before (a stall, a cut, a paced gap) or to (corruption)."""
        if self._pace:
            return range(count)
        marked = {fault.after for fault in self._faults if fault.kind in ("stall", "cut")}
        if corrupted is not None:
            marked.add(corrupted)
        return sorted(position for position in marked if position < count)

    def _before(self, position: int) -> Iterator[float]:
        """What happens before the chunk at ``position``: stalls and a cut aimed there, the paced gap."""
        for fault in self._faults:
            if fault.kind == "stall" and fault.after == position:
                yield from self._wait(fault.seconds)
            if fault.kind == "cut" and fault.after == position:
                raise self._error(
                    "RemoteProtocolError",
                    "peer closed connection without sending complete message body (incomplete chunked read)",
                )
        if self._pace:  # from the latest time reached: one call waits at most MAX_SECONDS times pace in all
            offset = self._call.offsets[position]
            yield float(max(0.0, offset - self._reached) * self._pace)
            self._reached = max(self._reached, offset)

    def _error(self, name: str, message: str) -> BaseException:
        library = library_of(self._request)
        return rebuild_error(library, f"{library.__name__}.{name}", message, self._request)

    def _wait(self, seconds: float) -> Iterator[float]:
        timeout = (self._request.extensions.get("timeout") or {}).get("read") if self._request is not None else None
        if timeout is not None and seconds > timeout:
            yield float(timeout)
            raise self._error("ReadTimeout", "The read operation timed out")
        yield float(seconds)

    def _corrupted(self) -> int | None:
        for fault in self._faults:
            if fault.kind == "corrupt":
                if fault.chunk is not None:
                    return fault.chunk
                from ._core.engine._faults import corrupt_chunk

                return next((i for i, chunk in enumerate(self._call.events) if corrupt_chunk(chunk)), None)
        return None

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def _anyio_sleep(seconds: float) -> None:
    import anyio  # lazily: only pace needs it

    await anyio.sleep(seconds)


class Replayer:
    """Answers requests from one cassette, byte- and chunk-exact, in the request's own library (httpx or
    httpx2, sync or async); holds no HTTP client, opens no socket. ``options`` are the cassette's, with the
    ``match_on`` and ``ordered`` an imported cassette's header gives for those not set (see
    ``Options.with_cassette_header``); with ``shared_as``, only that owner's calls (``Cassette.owned_by``);
    ``reuse``: a played call answers a matching request again (serve).
    ``sleep`` and ``async_sleep`` are what ``pace``, delays and stalls wait with."""

    def __init__(self, path: str | os.PathLike[str], options: Options, *, reuse: bool = False) -> None:
        self.path = os.fspath(path)
        cassette = read_cassette(path, cache=options.parse_cache)
        if options.shared_as:  # a cassette several tests share: this one's calls alone
            cassette = cassette.owned_by(recorded_owner((call.owner for call in cassette.calls), options.shared_as))
        self.options = options.with_cassette_header(cassette.header, options.explicit(), path=self.path)
        self.engine = ReplayEngine(
            cassette,
            self.options.matcher(),
            self.options.redactor(),
            ordered=self.options.ordered,
            reuse=reuse,
            repeats=self.options.allow_playback_repeats,
            normalizer=self.options.normalizer(),
        )
        self._faults: FaultSchedule | None = None  # none: a replay with no faults never loads them
        if self.options.faults:
            from ._core.engine._faults import FaultSchedule

            self._faults = FaultSchedule(self.options.faults)
        self.sleep: Callable[[float], None] = time.sleep
        self.async_sleep: Callable[[float], Awaitable[None]] = _anyio_sleep

    @property
    def calls(self) -> list[RecordedCall]:
        return self.engine.cassette.calls

    def respond(self, request: Any, body: bytes) -> Any:
        """The recorded response to a request whose body was read (the sync and async sides share this), a
        status fault's answer in its place, or the recorded failure raised. A miss raises ReplayMismatch."""
        library = library_of(request)
        engine = self.engine
        call = self.select(request.method, str(request.url), header_pairs(request.headers), body)
        faults: tuple[Fault, ...] = ()
        if self._faults is not None:
            path = request.url.path
            status = self._faults.status_answer(call.index, path)
            if status is not None:
                engine.put_back(call)
                return fault_response(library, status, call.index)
            faults = self._faults.stream_faults(call.index, path)
        if call.status is None:
            raise rebuild_error(library, call.error_class, call.error_message, request)
        stream = stream_class(library, _ReplayStream)(
            call, lambda: rebuild_error(library, call.error_class, call.error_message, request), self, faults, request
        )
        return library.Response(
            call.status,
            headers=[(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers_of(call)],
            stream=stream,
            extensions={"http_version": call.http_version.encode("ascii"), CALL_INDEX_EXTENSION: call.index},
        )

    def select(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> RecordedCall:
        """The recorded call that answers a request (the engine's choice, marked played); a miss raises
        ReplayMismatch. Any client's request: httpx and httpx2 here, urllib3 in ``_urllib3.py``."""
        engine = self.engine
        return engine.select(engine.incoming_fields(method, url, headers, body))

    def headers_of(self, call: RecordedCall) -> list[tuple[str, str]]:
        """The headers a call is replayed with (``replay_headers``: a true length, retry delays shortened)."""
        return replay_headers(call, self.options.max_retry_after, self.engine.cassette.header.get("created"))

    def distance(self, request: Any, body: bytes, call_index: int) -> tuple[int, float]:
        """How far recorded call ``call_index`` is from a request (see ``ReplayEngine.distance``); a call past
        the last is the farthest."""
        engine = self.engine
        if call_index >= len(engine.cassette.calls):
            return (2, 1.0)
        incoming = engine.incoming_fields(request.method, str(request.url), header_pairs(request.headers), body)
        return engine.distance(call_index, incoming)


# Headers every Stainless-generated SDK sends with every request (openai, anthropic and their Azure, Bedrock
# and Vertex clients, whatever the User-Agent a framework gives them).
# The response extension that says which recorded call answered (serve's access log reads it).
CALL_INDEX_EXTENSION = "vcr_transport.call_index"

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
    return not stainless_sender_lets_exceptions_through()


def kept_out(library: ModuleType, request: Any, step: Step, redactor: Redactor) -> Any:
    """A passthrough request in replay: an empty 204 (``Step.EMPTY``), or NetworkBlockedError (``Step.BLOCK``,
    and ``Step.PASS_THROUGH``: a ReplayTransport has no transport to send an ignored host's request on). The
    message names the URL redacted (a ``?key=`` would reach the CI log)."""
    url = redact_url(str(request.url), redactor)
    if step is Step.EMPTY:
        return library.Response(204, headers=[("x-vcr-transport", "passthrough")])
    if step is Step.PASS_THROUGH:
        raise NetworkBlockedError(
            f"{request.method} {url}: ignore_hosts names its host, but a ReplayTransport has no transport "
            "to send it on; use use_cassette() or transport(), which send it on with the client's own transport"
        )
    raise NetworkBlockedError(
        f"{request.method} {url} matches a passthrough rule, so it is never recorded, and replay does not "
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
