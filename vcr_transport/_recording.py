"""Recording: transports that pass every chunk straight through to the caller and append it to the
cassette as it passes."""

from __future__ import annotations

import asyncio
import datetime
import functools
import os
import platform
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from importlib import metadata
from typing import Any, NoReturn

from ._core._bodies import binary_body, content_encoding, content_type_of, redact_url, stored_body
from ._core._format import FORMAT_VERSION, event_line
from ._core._redaction import Redactor
from ._core._stream_redaction import EncodedBodyRedactor, StreamRedactor
from ._exceptions import VcrTransportError
from ._http import convert_error, error_name, header_pairs, library_of, stream_class, transport_library
from ._storage import CassetteWriter

__all__ = ["AsyncRecordingTransport", "RecordingTransport"]


@functools.cache
def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in ("vcr_transport", "httpx2", "httpx", "openai", "anthropic", "google-genai"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def _owner() -> tuple[int, int | None]:
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    return threading.get_ident(), None if task is None else id(task)


class _CallRecording:
    """One call's lines. Thread-safe through the writer; ``end`` writes call_end once."""

    def __init__(self, recorder: CassetteRecorder, index: int) -> None:
        self.recorder = recorder
        self.index = index
        self.owner = _owner()
        self.started = time.perf_counter()
        self.written = 0
        self.ended = False
        self._redacting: StreamRedactor | EncodedBodyRedactor | None = None

    def response(self, status: int, headers: list[tuple[str, str]], http_version: str) -> None:
        self.recorder.write(
            {
                "type": "response",
                "call_index": self.index,
                "status": status,
                "headers": self.recorder.redactor.redact_headers(headers),
                "http_version": http_version,
            }
        )
        encoding = content_encoding(headers)
        if encoding:
            self._redacting = EncodedBodyRedactor(self.recorder.redactor, encoding)
        elif not binary_body(headers):
            self._redacting = StreamRedactor(self.recorder.redactor)

    def chunk(self, data: bytes) -> None:
        if self.ended:
            return
        offset = round(time.perf_counter() - self.started, 6)
        if self._redacting is None:
            self._write_event(data, offset)
        else:
            for redacted, ready_offset in self._redacting.feed(data, offset):
                self._write_event(redacted, ready_offset)

    def _write_event(self, data: bytes, offset: float) -> None:
        self.recorder.write_line(event_line(self.index, self.written, offset, data))
        self.written += 1

    def end(self, outcome: str, error: BaseException | None = None) -> None:
        if self.ended:
            return
        self.ended = True
        if self._redacting is not None:
            for redacted, offset in self._redacting.finish():
                self._write_event(redacted, offset)
        line: dict[str, Any] = {
            "type": "call_end",
            "call_index": self.index,
            "event_count": self.written,
            "outcome": outcome,
        }
        if error is not None:
            line["error"] = {"class": error_name(error), "message": self.recorder.redactor.redact_text(str(error))}
        self.recorder.write(line, flush=True)
        self.recorder.forget(self)


class CassetteRecorder:
    """The cassette being recorded: numbers calls, writes their lines, finalises what is left at close."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        redactor: Redactor,
        *,
        kept_lines: Sequence[bytes] = (),
        first_index: int = 0,
    ) -> None:
        """``kept_lines`` (calls replayed before a miss) are copied byte for byte; new calls then start at
        ``first_index``."""
        self.path = os.fspath(path)
        self.redactor = redactor
        header = {
            "type": "header",
            "format_version": FORMAT_VERSION,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "versions": dict(_versions()),
        }
        self._writer = CassetteWriter(path, header)
        for line in kept_lines:
            self._writer.write_raw(line)
        self._lock = threading.Lock()
        self._next_index = first_index
        self._open: dict[int, _CallRecording] = {}
        self._finalizer = weakref.finalize(self, CassetteRecorder._finish, self._open, self._writer)

    def write(self, line: dict[str, Any], *, flush: bool = False) -> None:
        self._writer.write(line, flush=flush)

    def write_line(self, line: str) -> None:
        self._writer.write_line(line)

    def start(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> _CallRecording:
        if self._writer.closed:
            raise VcrTransportError(
                f"cassette {self.path} was already closed (its transport was closed); "
                "use a new transport to record more calls"
            )
        with self._lock:
            index = self._next_index
            self._next_index += 1
            call = _CallRecording(self, index)
            # A stream its owner never closed (google-genai async after an early stop) ends when the same
            # thread or task starts its next call.
            abandoned = [c for c in self._open.values() if c.owner == call.owner]
            self._open[index] = call
        for previous in abandoned:
            previous.end("closed_early")
        redactor = self.redactor
        self.write(
            {
                "type": "request",
                "call_index": index,
                "method": method,
                "url": redact_url(url, redactor),
                "headers": redactor.redact_headers(headers),
                "body": stored_body(body, content_type_of(headers), redactor, encoding=content_encoding(headers)),
            }
        )
        return call

    def forget(self, call: _CallRecording) -> None:
        with self._lock:
            self._open.pop(call.index, None)

    def close(self) -> None:
        self._finalizer()

    @staticmethod
    def _finish(open_calls: dict[int, _CallRecording], writer: CassetteWriter) -> None:
        for call in list(open_calls.values()):
            call.end("closed_early")
        writer.commit()


class _RecordingStream:
    """Yields each chunk of the inner stream the moment it arrives and records it on the way.

    It is one-shot: a second iteration continues where the first stopped, as a live stream does.
    """

    def __init__(self, inner: Any, call: _CallRecording, convert: Callable[[BaseException], BaseException]) -> None:
        self._inner = inner
        self._call = call
        self._convert = convert
        self._sync_iterator: Iterator[bytes] | None = None
        self._async_iterator: AsyncIterator[bytes] | None = None
        weakref.finalize(self, call.end, "closed_early")

    def __iter__(self) -> Iterator[bytes]:
        if self._sync_iterator is None:
            self._sync_iterator = iter(self._inner)
        iterator = self._sync_iterator
        while True:
            try:
                chunk = next(iterator)
            except StopIteration:
                self._call.end("complete")
                return
            except Exception as exc:
                self._call.end("error", exc)
                _reraise(self._convert(exc), exc)
            self._call.chunk(chunk)
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._async_iterator is None:
            self._async_iterator = self._inner.__aiter__()
        iterator = self._async_iterator
        while True:
            try:
                chunk = await iterator.__anext__()
            except StopAsyncIteration:
                self._call.end("complete")
                return
            except Exception as exc:
                self._call.end("error", exc)
                _reraise(self._convert(exc), exc)
            self._call.chunk(chunk)
            yield chunk

    def close(self) -> None:
        self._call.end("closed_early")
        self._inner.close()

    async def aclose(self) -> None:
        self._call.end("closed_early")
        await self._inner.aclose()


class ClosingSides:
    """Runs ``finish`` once every side (sync, async) that carried a request has been closed.

    One transport object can serve a sync and an async client (google-genai wants both); the first
    client to close must not end the cassette under the other.
    """

    def __init__(self, finish: Callable[[], None]) -> None:
        self._finish = finish
        self._used: set[str] = set()
        self._closed: set[str] = set()
        self.finished = False

    def use(self, side: str) -> None:
        self._used.add(side)

    def close(self, side: str) -> None:
        self._closed.add(side)
        if not self.finished and self._used <= self._closed:
            self.finished = True
            self._finish()


class _RecordingBase:
    def __init__(
        self,
        sync_inner: Any,
        async_inner: Any,
        path: str | os.PathLike[str],
        redactor: Redactor | None = None,
        recorder: CassetteRecorder | None = None,
    ) -> None:
        self.sync_inner = sync_inner
        self.async_inner = async_inner
        self.path = os.fspath(path)
        self.recorder = recorder or CassetteRecorder(path, redactor or Redactor())
        self._sides = ClosingSides(self.recorder.close)

    @classmethod
    def _over(cls, recorder: CassetteRecorder, *, sync_inner: Any = None, async_inner: Any = None) -> Any:
        """A transport recording into a cassette someone else owns and closes (the context manager's)."""
        return _RecordingBase(sync_inner, async_inner, recorder.path, recorder=recorder)

    def _start(self, request: Any) -> _CallRecording:
        return self.recorder.start(request.method, str(request.url), header_pairs(request.headers), request.content)

    @staticmethod
    def _forwarded(request: Any, inner: Any) -> Any:
        """The request in the inner transport's library (the same object when the libraries agree)."""
        inner_library = transport_library(inner)
        if inner_library is None or inner_library is library_of(request):
            return request
        return inner_library.Request(
            request.method,
            str(request.url),
            headers=request.headers.raw,
            content=request.content,
            extensions=request.extensions,
        )

    def _wrap(self, request: Any, response: Any, call: _CallRecording) -> Any:
        library = library_of(request)
        http_version = response.extensions.get("http_version", b"HTTP/1.1")
        if isinstance(http_version, bytes):
            http_version = http_version.decode("ascii", "replace")
        headers = header_pairs(response.headers)
        call.response(response.status_code, headers, str(http_version))
        try:
            content = response.content  # a transport may hand back a body it already read (MockTransport)
        except (library.ResponseNotRead, library_of(response).ResponseNotRead):
            pass
        else:
            call.chunk(content)
            call.end("complete")
            if library_of(response) is library:
                return response
            return library.Response(
                response.status_code, headers=response.headers.raw, content=content, extensions=response.extensions
            )
        stream = stream_class(library, _RecordingStream)(
            response.stream, call, lambda exc: convert_error(exc, library, request)
        )
        if library_of(response) is library:
            response.stream = stream
            return response
        return library.Response(
            response.status_code, headers=response.headers.raw, stream=stream, extensions=response.extensions
        )

    def handle_request(self, request: Any) -> Any:
        if self.sync_inner is None:
            raise TypeError(f"{type(self).__name__} for {self.path} has no sync transport: pass sync_inner=")
        self._sides.use("sync")
        request.read()
        call = self._start(request)
        try:
            response = self.sync_inner.handle_request(self._forwarded(request, self.sync_inner))
        except Exception as exc:
            call.end("error", exc)
            _reraise(convert_error(exc, library_of(request), request), exc)
        return self._wrap(request, response, call)

    async def handle_async_request(self, request: Any) -> Any:
        if self.async_inner is None:
            raise TypeError(f"{type(self).__name__} for {self.path} has no async transport: pass async_inner=")
        self._sides.use("async")
        await request.aread()
        call = self._start(request)
        try:
            response = await self.async_inner.handle_async_request(self._forwarded(request, self.async_inner))
        except Exception as exc:
            call.end("error", exc)
            _reraise(convert_error(exc, library_of(request), request), exc)
        return self._wrap(request, response, call)

    def close(self) -> None:
        """Close the sync side; the cassette is committed once every side that was used is closed."""
        try:
            if self.sync_inner is not None:
                self.sync_inner.close()
        finally:
            self._sides.close("sync")

    async def aclose(self) -> None:
        try:
            if self.async_inner is not None:
                await self.async_inner.aclose()
        finally:
            self._sides.close("async")

    def __enter__(self) -> Any:
        enter = getattr(self.sync_inner, "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    async def __aenter__(self) -> Any:
        enter = getattr(self.async_inner, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.aclose()


def _reraise(converted: BaseException, original: BaseException) -> NoReturn:
    if converted is original:
        raise original
    raise converted from original


class RecordingTransport(_RecordingBase):
    """Wraps a sync httpx or httpx2 transport and records what passes through into a JSONL cassette.

    The caller sees exactly what the inner transport returns, chunk by chunk, as it arrives. The cassette
    replaces any older file at ``path`` when the transport is closed (or at exit). ``async_inner`` lets
    the same object serve an async client too (google-genai takes both); calls share one cassette.
    Redaction options add to the default rules, never remove them.
    """

    def __init__(
        self,
        inner: Any,
        path: str | os.PathLike[str],
        *,
        async_inner: Any = None,
        redact_names: Iterable[str] = (),
        redact_patterns: Iterable[str] = (),
        redact_with: Iterable[Callable[[str], str]] = (),
    ) -> None:
        super().__init__(inner, async_inner, path, Redactor(redact_names, redact_patterns, redact_with))

    @property
    def inner(self) -> Any:
        return self.sync_inner


class AsyncRecordingTransport(_RecordingBase):
    """The async twin of RecordingTransport: wraps an async transport (and ``sync_inner``, optionally)."""

    def __init__(
        self,
        inner: Any,
        path: str | os.PathLike[str],
        *,
        sync_inner: Any = None,
        redact_names: Iterable[str] = (),
        redact_patterns: Iterable[str] = (),
        redact_with: Iterable[Callable[[str], str]] = (),
    ) -> None:
        super().__init__(sync_inner, inner, path, Redactor(redact_names, redact_patterns, redact_with))

    @property
    def inner(self) -> Any:
        return self.async_inner
