"""Mode ``check``'s shell: each request goes to the client's own transport (the caller gets the live answer,
chunk for chunk, as it arrives), and when the answer has ended its shape is compared with the recorded call
the request matches, as replay would choose it (``_core._shape.shape_changes``, the comparison ``drift``
makes too). Nothing is written: no cassette, no temporary file.

What differs is kept as ``DriftCall`` findings (a changed shape, or a request no recorded call matches).
``use_cassette`` and the pytest plugin raise them as one ``ShapeDriftError`` when the block or the test's body
ends; ``transport()`` has no such end, so each is a ``ShapeDriftWarning`` as its answer ends (``warn``). An
answer the caller stopped reading early, or that failed, is not compared.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ._core._bodies import body_headers, redact_url
from ._core._format import RecordedCall
from ._core._shape import DriftCall, live_answer, shape_changes
from ._core._sse import ProtocolEnd
from ._exceptions import ReplayMismatch, ShapeDriftError, ShapeDriftWarning
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
        self.path = path
        self.plain_bodies = plain_bodies
        self.record_hint = record_hint
        self.warn = False  # transport(): a ShapeDriftWarning per finding, as it is found
        self.checked = 0  # answers compared
        self.findings: list[DriftCall] = []
        self._lock = threading.Lock()

    def _recorded(self, request: Any, body: bytes) -> RecordedCall | ReplayMismatch:
        engine = self.replayer.engine
        incoming = engine.incoming_fields(request.method, str(request.url), header_pairs(request.headers), body)
        try:
            return engine.select(incoming)
        except ReplayMismatch as miss:
            return miss

    def handle(self, request: Any, body: bytes, inner: Any) -> Any:
        recorded = self._recorded(request, body)
        forwarded = forwarded_request(request, transport_library(inner), plain=self.plain_bodies)
        try:
            response = inner.handle_request(forwarded)
        except Exception as error:
            raise convert_error(error, library_of(request), request) from error
        return self._answer(request, recorded, response)

    async def handle_async(self, request: Any, body: bytes, inner: Any) -> Any:
        recorded = self._recorded(request, body)
        forwarded = forwarded_request(request, transport_library(inner), plain=self.plain_bodies)
        try:
            response = await inner.handle_async_request(forwarded)
        except Exception as error:
            raise convert_error(error, library_of(request), request) from error
        return self._answer(request, recorded, response)

    def _answer(self, request: Any, recorded: RecordedCall | ReplayMismatch, response: Any) -> Any:
        """The live response in the caller's library, compared with ``recorded`` once its body has been read."""
        library = library_of(request)
        status, headers = response.status_code, header_pairs(response.headers)
        if isinstance(recorded, ReplayMismatch):
            url = redact_url(str(request.url), self.replayer.engine.redactor)
            self._found(DriftCall(self.path, recorded.call_index, request.method, url, "failed", error=_miss(recorded)))

        def ended(chunks: list[bytes], complete: bool) -> None:
            if isinstance(recorded, ReplayMismatch) or not (complete or _protocol_ended(headers, chunks)):
                return  # no recorded call to compare with, or the caller stopped reading before the end
            self._compare(recorded, live_answer(recorded, status, headers, chunks))

        content = body_already_read(response)
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
            self._found(found)

    def _found(self, found: DriftCall) -> None:
        with self._lock:
            self.findings.append(found)
        if self.warn:
            warnings.warn(str(self._error([found])), ShapeDriftWarning, stacklevel=2)

    def error(self) -> ShapeDriftError | None:
        """What the checks found, as one error (calls in call order); None when every shape was the same."""
        with self._lock:
            findings = sorted(self.findings, key=lambda found: found.index)
        return self._error(findings) if findings else None

    def _error(self, findings: list[DriftCall]) -> ShapeDriftError:
        calls = [
            (
                found.index,
                found.method,
                found.url,
                [(change.path, change.recorded, change.live) for change in found.changes],
                found.error,
            )
            for found in findings
        ]
        return ShapeDriftError(self.path, calls, self.record_hint)


def _protocol_ended(headers: list[tuple[str, str]], chunks: list[bytes]) -> bool:
    """Whether a stream closed before it was exhausted had reached its protocol's end (``[DONE]``,
    ``message_stop``...): its answer is whole, and compared."""
    content_type, encoding, _ = body_headers(headers)
    if encoding or "event-stream" not in content_type:
        return False
    watch = ProtocolEnd()
    watch.feed(b"".join(chunks))
    return watch.ended


def _miss(miss: ReplayMismatch) -> str:
    """Why a request could not be compared: it matches no recorded call (the mismatch's first line)."""
    return f"matches no recorded call, so its answer was not compared ({miss.headline})"
