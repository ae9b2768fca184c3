"""Replay: transports that answer each request from the cassette, chunk for chunk, with no network."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from types import ModuleType
from typing import Any, Literal

from ._cassette import Cassette, RecordedCall
from ._exceptions import ReplayMismatch, UnplayedCallsError
from ._http import content_type_of, header_pairs, library_of, rebuild_error, stored_body, stream_class
from ._matching import RequestMatcher
from ._redaction import Redactor
from ._storage import read_cassette

__all__ = ["AsyncReplayTransport", "ReplayTransport", "answers_with_error_response", "error_response"]

RETRYABLE_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
# openai and anthropic stop retrying when a delay exceeds this; a rewrite must never cross it.
SDK_MAX_RETRY_AFTER = 120.0
MismatchAction = Literal["auto", "raise", "respond"]


def _retry_after_seconds(headers: list[tuple[str, str]]) -> float | None:
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        for key, value in headers:
            if key.lower() == name:
                try:
                    return float(value) / divisor
                except ValueError:
                    return None
    return None


def replay_headers(call: RecordedCall, max_retry_after: float | None) -> list[tuple[str, str]]:
    """The headers replayed for a call: content-length made true to the replayed bytes, and (when asked)
    recorded retry delays shortened without changing whether the SDK retries."""
    headers = list(call.response_headers)
    if call.complete:
        length = str(call.size)
        headers = [(k, length if k.lower() == "content-length" else v) for k, v in headers]
    if max_retry_after is not None and call.status in RETRYABLE_STATUSES:
        recorded = _retry_after_seconds(headers)
        if recorded is None or recorded <= SDK_MAX_RETRY_AFTER:
            delay = recorded if recorded is not None and 0 < recorded < max_retry_after else max_retry_after
            headers = [(k, v) for k, v in headers if k.lower() not in ("retry-after", "retry-after-ms")]
            headers.append(("retry-after-ms", f"{delay * 1000:g}"))
            headers.append(("retry-after", f"{delay:g}"))
    return headers


class ReplayEngine:
    """Chooses the recorded call that answers each request, or says which field differs. No I/O."""

    def __init__(
        self,
        cassette: Cassette,
        matcher: RequestMatcher,
        redactor: Redactor,
        *,
        ordered: bool = True,
    ) -> None:
        self.cassette = cassette
        self.matcher = matcher
        self.redactor = redactor
        self.ordered = ordered
        self.played = [False] * len(cassette.calls)
        self.position = 0
        self.first_mismatch: ReplayMismatch | None = None
        self._recorded: list[dict[str, Any] | None] = [None] * len(cassette.calls)
        self._lock = threading.Lock()

    def _recorded_fields(self, index: int) -> dict[str, Any]:
        fields = self._recorded[index]
        if fields is None:
            call = self.cassette.calls[index]
            fields = self.matcher.comparable(call.method, call.url, call.request_headers, call.body)
            self._recorded[index] = fields
        return fields

    def incoming_fields(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
        redactor = self.redactor
        return self.matcher.comparable(
            method,
            redactor.redact_text(url),
            redactor.redact_headers(headers),
            stored_body(body, content_type_of(headers), redactor),
        )

    def select(self, incoming: dict[str, Any]) -> RecordedCall:
        with self._lock:
            if self.ordered:
                index = self.position
                self._check(index, incoming)
                self.position += 1
            else:
                index = self._first_match(incoming)
            self.played[index] = True
            return self.cassette.calls[index]

    def _check(self, index: int, incoming: dict[str, Any]) -> None:
        calls = self.cassette.calls
        if index >= len(calls):
            self._mismatch(
                index,
                "call_index",
                f"{len(calls)} call(s) (0..{len(calls) - 1})" if calls else "no calls",
                _describe(incoming),
                detail=f"the cassette recorded {len(calls)} call(s); this request would be call {index}",
            )
        difference = self.matcher.difference(self._recorded_fields(index), incoming)
        if difference is not None:
            self._mismatch(index, *difference)

    def _first_match(self, incoming: dict[str, Any]) -> int:
        unplayed = [i for i, played in enumerate(self.played) if not played]
        for index in unplayed:
            if self.matcher.difference(self._recorded_fields(index), incoming) is None:
                return index
        same_route = [
            i
            for i in unplayed
            if self._recorded_fields(i)["method"] == incoming["method"]
            and self._recorded_fields(i)["url"]["path"] == incoming["url"]["path"]
        ]
        closest = same_route[0] if same_route else (unplayed[0] if unplayed else len(self.played))
        self._check(closest, incoming)
        raise AssertionError("unreachable: _check raises")  # pragma: no cover

    def _mismatch(self, index: int, path: str, recorded: Any, incoming: Any, *, detail: str = "") -> None:
        mismatch = ReplayMismatch(index, path, recorded, incoming, cassette=self.cassette.path, detail=detail)
        if self.first_mismatch is None:
            self.first_mismatch = mismatch
        raise mismatch

    def unplayed(self) -> list[tuple[int, str, str]]:
        return [(c.index, c.method, c.url) for c in self.cassette.calls if not self.played[c.index]]


def _describe(incoming: dict[str, Any]) -> str:
    url = incoming["url"]
    return f"{incoming['method']} {url['scheme']}://{url['host']}{url['path']}"


class _ReplayStream:
    """The recorded chunks, one-shot: a second iteration continues where the first stopped."""

    def __init__(self, call: RecordedCall, fail: Callable[[], BaseException], pace: float | None) -> None:
        self._call = call
        self._fail = fail
        self._pace = pace
        self._position = 0

    def _delay(self, position: int) -> float:
        offsets = self._call.offsets
        previous = offsets[position - 1] if position else 0.0
        return max(0.0, offsets[position] - previous) * (self._pace or 0.0)

    def __iter__(self) -> Iterator[bytes]:
        chunks = self._call.events
        while self._position < len(chunks):
            position = self._position
            self._position += 1
            if self._pace:
                time.sleep(self._delay(position))
            yield chunks[position]
        if self._call.outcome == "error":
            raise self._fail()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self._call.events
        while self._position < len(chunks):
            position = self._position
            self._position += 1
            if self._pace:
                import anyio

                await anyio.sleep(self._delay(position))
            yield chunks[position]
        if self._call.outcome == "error":
            raise self._fail()

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


class ReplayTransport:
    """Answers each request from a cassette, byte- and chunk-exact. Holds no HTTP client, opens no socket.

    One object serves httpx and httpx2 clients, sync and async; responses are built from the request's own
    library. Options:

    - ``ordered`` (True): request n is compared with recorded call n. False pairs each request with the
      first unplayed recorded call that matches it, for threads and other nondeterministic orders.
    - ``pace``: reproduce the recorded gaps between chunks, scaled by this factor (1.0 = real time).
    - ``max_retry_after`` (0.01 s): recorded ``retry-after`` delays on retryable responses are shortened to
      this, so an SDK's retry sequence replays identically but fast. ``None`` keeps the recorded delays.
      Delays above 120 s, which make openai give up, are never rewritten.
    - ``on_mismatch``: ``"raise"`` raises ReplayMismatch from the transport; ``"respond"`` answers with a
      non-retryable 400 whose body carries the mismatch line; ``"auto"`` (default) responds to anthropic,
      which wraps and retries transport exceptions with sleeps, and raises for everyone else.
    - ``ignore_headers`` / ``compare_headers`` / ``ignore_fields``: adjust what matching compares.
    - ``redact_names`` / ``redact_patterns`` / ``redact_with``: the same redaction rules used to record.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ordered: bool = True,
        pace: float | None = None,
        max_retry_after: float | None = 0.01,
        on_mismatch: MismatchAction = "auto",
        ignore_headers: Iterable[str] = (),
        compare_headers: Iterable[str] = (),
        ignore_fields: Iterable[str] = (),
        redact_names: Iterable[str] = (),
        redact_patterns: Iterable[str] = (),
        redact_with: Iterable[Callable[[str], str]] = (),
    ) -> None:
        if on_mismatch not in ("auto", "raise", "respond"):
            raise ValueError(f"on_mismatch must be 'auto', 'raise' or 'respond', not {on_mismatch!r}")
        self.path = os.fspath(path)
        self.engine = ReplayEngine(
            read_cassette(path),
            RequestMatcher(ignore_headers=ignore_headers, compare_headers=compare_headers, ignore_fields=ignore_fields),
            Redactor(redact_names, redact_patterns, redact_with),
            ordered=ordered,
        )
        self.pace = pace
        self.on_mismatch = on_mismatch
        self._headers = [replay_headers(call, max_retry_after) for call in self.engine.cassette.calls]

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

    def _respond(self, request: Any, body: bytes) -> Any:
        library = library_of(request)
        headers = header_pairs(request.headers)
        incoming = self.engine.incoming_fields(request.method, str(request.url), headers, body)
        try:
            call = self.engine.select(incoming)
        except ReplayMismatch as mismatch:
            if answers_with_error_response(self.on_mismatch, headers):
                return error_response(library, "replay_mismatch", mismatch)
            raise
        if call.status is None:
            raise rebuild_error(library, call.error_class, call.error_message, request)
        stream = stream_class(library, _ReplayStream)(
            call, lambda: rebuild_error(library, call.error_class, call.error_message, request), self.pace
        )
        return library.Response(
            call.status,
            headers=self._headers[call.index],
            stream=stream,
            extensions={"http_version": call.http_version.encode("ascii")},
        )

    def handle_request(self, request: Any) -> Any:
        return self._respond(request, request.read())

    async def handle_async_request(self, request: Any) -> Any:
        return self._respond(request, await request.aread())

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


class AsyncReplayTransport(ReplayTransport):
    """The same replay transport, named for async clients."""


def answers_with_error_response(on_mismatch: str, headers: list[tuple[str, str]]) -> bool:
    """Whether a failure should reach the SDK as a non-retryable error response rather than an exception:
    anthropic wraps every transport exception in APIConnectionError and retries it with sleeps."""
    if on_mismatch != "auto":
        return on_mismatch == "respond"
    agent = next((v for k, v in headers if k.lower() == "user-agent"), "")
    return "Anthropic/Python" in agent


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
