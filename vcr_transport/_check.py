"""Mode ``check``'s shell: each request goes to the client's own transport (the caller gets the live answer,
chunk for chunk, as it arrives), and when the answer has ended its shape is compared with the recorded call
the request stands for (``_core._pairing``: the call it matches exactly, else the one at its place in the
conversation) by ``_core._shape.shape_changes``, the comparison ``drift`` makes too. Nothing is written: no
cassette, no temporary file. The request is the app's own, sent where the app's client sends it: nothing of
the cassette (its URLs, its hosts) and nothing of the environment (no credential is put back) goes into it.

A changed shape is a ``DriftCall`` finding. ``use_cassette`` and the pytest plugin raise the findings as one
``ShapeDriftError`` when the block or the test's body ends; ``transport()`` has no such end, so each is a
``ShapeDriftWarning`` as its answer ends (``warn``). A request no recorded call stands for, an answer the
caller stopped reading early, or one that failed, is not compared: it is counted (``not_compared``, each with
why), never a finding.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ._core.format._bodies import body_headers, decoded_headers, redact_url
from ._core.format._format import RecordedCall
from ._core.format._sse import ProtocolEnd
from ._core.views._pairing import LivePairing, Unpaired
from ._core.views._shape import DriftCall, live_answer, shape_changes
from ._exceptions import ShapeDriftError, ShapeDriftWarning
from ._http import (
    body_already_read,
    convert_error,
    forwarded_request,
    header_pairs,
    library_of,
    response_in,
    stream_class,
    transport_library,
)
from ._lifecycle import ByteStream
from ._replay import Replayer

__all__ = ["ShapeChecker"]


class _CheckingStream:
    """The live stream passed through as it arrives; its chunks are kept, and handed to ``ended`` once: when
    the stream is exhausted (``complete``), or when it is closed before (openai's sync client closes right
    after ``[DONE]``)."""

    def __init__(self, inner: ByteStream, ended: Callable[[list[bytes], bool], None]) -> None:
        self._inner = inner
        self._ended: Callable[[list[bytes], bool], None] | None = ended
        self._chunks: list[bytes] = []

    def _end(self, complete: bool) -> None:
        ended, self._ended = self._ended, None
        if ended is not None:
            ended(self._chunks, complete)

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._chunks.append(chunk)
            yield chunk
        self._end(True)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner.__aiter__():
            self._chunks.append(chunk)
            yield chunk
        self._end(True)

    def close(self) -> None:
        self._end(False)
        self._inner.close()

    async def aclose(self) -> None:
        self._end(False)
        await self._inner.aclose()


class ShapeChecker:
    """The shape checks of one cassette opened in mode ``check``. Thread-safe."""

    def __init__(self, replayer: Replayer, path: str, *, plain_bodies: bool, record_hint: str = "") -> None:
        self.replayer = replayer
        self.pairing = LivePairing(replayer.engine)
        self.path = path
        self.plain_bodies = plain_bodies
        self.record_hint = record_hint
        self.warn = False  # transport(): a ShapeDriftWarning per finding, as it is found
        self.checked = 0  # answers compared
        self.findings: list[DriftCall] = []
        # the requests whose answer was not compared: (request number, method, URL, why)
        self.not_compared: list[tuple[int, str, str, str]] = []
        self._requests = 0
        self._lock = threading.Lock()

    def _paired(self, request: Any, body: bytes) -> tuple[int, RecordedCall | None]:
        """The request's number (from 0, in the order they came) and the recorded call it stands for (None:
        none does, and the request is counted as not compared, with why)."""
        engine = self.replayer.engine
        incoming = engine.incoming_fields(request.method, str(request.url), header_pairs(request.headers), body)
        paired = self.pairing.pair(incoming)
        with self._lock:
            number, self._requests = self._requests, self._requests + 1
        if isinstance(paired, Unpaired):
            self._not_compared(number, request, paired.why)
            return number, None
        return number, paired

    def handle(self, request: Any, body: bytes, inner: Any) -> Any:
        number, recorded = self._paired(request, body)
        forwarded = forwarded_request(request, transport_library(inner), plain=self.plain_bodies)
        try:
            response = inner.handle_request(forwarded)
        except Exception as error:
            self._failed(number, request, recorded, error)
            raise convert_error(error, library_of(request), request) from error
        return self._answer(request, number, recorded, response)

    async def handle_async(self, request: Any, body: bytes, inner: Any) -> Any:
        number, recorded = self._paired(request, body)
        forwarded = forwarded_request(request, transport_library(inner), plain=self.plain_bodies)
        try:
            response = await inner.handle_async_request(forwarded)
        except Exception as error:
            self._failed(number, request, recorded, error)
            raise convert_error(error, library_of(request), request) from error
        return self._answer(request, number, recorded, response)

    def _failed(self, number: int, request: Any, recorded: RecordedCall | None, error: Exception) -> None:
        if recorded is not None:
            self._not_compared(number, request, f"the request failed ({type(error).__name__})")

    def _answer(self, request: Any, number: int, recorded: RecordedCall | None, response: Any) -> Any:
        """The live response in the caller's library, compared with ``recorded`` once its body has been read."""
        library = library_of(request)
        content = body_already_read(response)
        status, headers = response.status_code, header_pairs(response.headers)
        headers = headers if content is None else decoded_headers(headers)

        def ended(chunks: list[bytes], complete: bool) -> None:
            if recorded is None:
                return  # no recorded call to compare with: counted when it was paired
            if not (complete or _protocol_ended(headers, chunks)):
                self._not_compared(number, request, "the app stopped reading its answer before the end")
                return
            self._compare(recorded, live_answer(recorded, status, headers, chunks))

        if content is not None:
            ended([content], True)
            return response_in(library, response)
        return response_in(library, response, stream_class(library, _CheckingStream)(response.stream, ended))

    def _compare(self, recorded: RecordedCall, live: RecordedCall) -> None:
        changes = shape_changes(recorded, live)
        with self._lock:
            self.checked += 1
        if changes:
            found = DriftCall(self.path, recorded.index, recorded.method, recorded.url, "changed", changes)
            with self._lock:
                self.findings.append(found)
            if self.warn:
                warnings.warn(str(self._error([found], [])), ShapeDriftWarning, stacklevel=2)

    def _not_compared(self, number: int, request: Any, why: str) -> None:
        url = redact_url(str(request.url), self.replayer.engine.redactor)
        with self._lock:
            self.not_compared.append((number, request.method, url, why))

    def not_compared_text(self) -> list[str]:
        """The requests whose answer was not compared, one line each, in the order they came."""
        with self._lock:
            skipped = sorted(self.not_compared)
        return [f"request {number} ({method} {url}): {why}" for number, method, url, why in skipped]

    def error(self) -> ShapeDriftError | None:
        """What the checks found, as one error (calls in call order, then the requests not compared); None
        when every answer compared had the same shape (however many were not compared)."""
        with self._lock:
            findings = sorted(self.findings, key=lambda found: found.index)
        return self._error(findings, self.not_compared_text()) if findings else None

    def _error(self, findings: list[DriftCall], skipped: list[str]) -> ShapeDriftError:
        calls = [
            (found.index, found.method, found.url, [(c.path, c.recorded, c.live) for c in found.changes])
            for found in findings
        ]
        return ShapeDriftError(self.path, calls, self.record_hint, not_compared=skipped)


def _protocol_ended(headers: list[tuple[str, str]], chunks: list[bytes]) -> bool:
    """Whether a stream closed before it was exhausted had reached its protocol's end (``[DONE]``,
    ``message_stop``...): its answer is whole, and compared."""
    content_type, encoding, _ = body_headers(headers)
    if encoding or "event-stream" not in content_type:
        return False
    watch = ProtocolEnd()
    watch.feed(b"".join(chunks))
    return watch.ended
