"""Recording: transports that pass every chunk straight through to the caller and append it to the
cassette on the way (by batches: see ``_CallRecording``)."""

from __future__ import annotations

import atexit
import functools
import os
import platform
import sys
import threading
import time
import warnings
import weakref
from bisect import bisect_left
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from importlib import metadata
from itertools import accumulate
from operator import itemgetter
from typing import Any, NoReturn

from ._core._bodies import body_headers, redact_url, stored_body
from ._core._format import (
    call_end_line,
    encode_line,
    event_lines,
    header_line,
    numbers_are_plain,
    request_line,
    response_line,
)
from ._core._matching import RequestMatcher
from ._core._options import Options
from ._core._quiet import QuietComparison
from ._core._recorder import CallBook, CallRecord, ProtocolEnd, garbled_structure
from ._core._redaction import PLACEHOLDER, Redactor
from ._core._stream_redaction import BATCH, EncodedBodyRedactor, StreamRedactor
from ._exceptions import CassetteError, RecordingNotSavedWarning, VcrTransportError
from ._http import convert_error, error_name, header_pairs, library_of, stream_class, transport_library
from ._lifecycle import AsyncTransport, ByteStream, ClosingSides, HttpRequest, SyncTransport, TransportLifecycle
from ._storage import CassetteWriter

__all__ = ["AsyncRecordingTransport", "CassetteRecorder", "ClosingSides", "RecordingTransport"]


@functools.cache
def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in ("vcr_transport", "httpx2", "httpx", "openai", "anthropic", "google-genai"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


_first = itemgetter(0)  # a (chunk, arrival) pair's chunk
# Recorded chunks of an event stream are shown to its ProtocolEnd once they pass this many bytes (see
# ``_CallRecording._unwatched``): they are kept, by reference, until then.
_WATCH_AFTER = 32 * BATCH
_clock = time.perf_counter_ns  # a chunk's arrival (``event_lines`` gives its offset from the call's start)


def _described(error: BaseException, redactor: Redactor) -> str:
    return f"{error_name(error)}: {redactor.redact_text(str(error))}"


def _interruption(error: BaseException) -> bool:
    """Ctrl-C or an exit: whatever was being recorded did not finish."""
    return isinstance(error, KeyboardInterrupt | SystemExit)


class _CallRecording:
    """One call's lines. ``end`` writes call_end once, under a lock: the stream, a close and a GC
    finalizer may race to end the same call. Chunks are recorded by batches of about ``BATCH`` bytes (the
    caller has each at once): the batch is redacted and written when it is full, and when the call ends."""

    def __init__(self, recording: _Recording, record: CallRecord) -> None:
        self.recording = recording
        self.record = record
        self.index = record.index
        self.started = _clock()
        self.written = 0
        self._lock = threading.Lock()
        self._redacting: StreamRedactor | EncodedBodyRedactor | None = None
        self._protocol: ProtocolEnd | None = None
        # Chunks recorded but not yet shown to ``_protocol``: it is asked only when the stream stops before
        # its end (``stop``), so they are fed to it when they pass ``_WATCH_AFTER`` bytes, or then.
        self._unwatched: list[bytes] = []
        self._unwatched_size = 0
        # (chunk, _clock() on arrival) not yet recorded. The list is never replaced: the stream wrapper
        # appends to it directly (see _RecordingStream.__iter__).
        self.pending: list[tuple[bytes, int]] = []
        self._pending_size = 0  # bytes appended by ``chunk`` since the last batch was recorded

    @property
    def ended(self) -> bool:
        return self.record.ended

    def response(self, status: int, headers: list[tuple[str, str]], http_version: str) -> None:
        self.record.status = status
        redactor = self.recording.redactor
        line = response_line(self.index, status, redactor.redact_headers(headers), http_version)
        self.recording.guarded(self.recording.write, line, False, True)
        content_type, encoding, binary = body_headers(headers)
        if encoding:
            self._redacting = EncodedBodyRedactor(redactor, encoding)
        elif not binary:
            event_stream = "event-stream" in content_type
            # Text spread over SSE deltas is reassembled only in an event stream.
            self._redacting = StreamRedactor(redactor, deltas=event_stream)
            if event_stream:
                self._protocol = ProtocolEnd()

    def chunk(self, data: bytes) -> None:
        """Take a chunk that has just arrived; a batch of about ``BATCH`` bytes is recorded at once."""
        self.pending.append((data, _clock()))
        self._pending_size += len(data)
        if self._pending_size >= BATCH:
            self._pending_size = 0
            self.record_pending()

    def record_pending(self) -> None:
        """Record the chunks taken so far (nothing once the call has ended: they came after its end)."""
        with self._lock:
            if self.record.outcome is not None:
                del self.pending[:]
                return
            self.recording.guarded(self._record_batch, self._take_batch())

    def _take_batch(self) -> list[tuple[bytes, int]]:
        """The chunks not yet recorded, each with its arrival (``_clock``). Only those copied are removed
        from ``pending``: a chunk appended meanwhile stays for the next batch."""
        pending = self.pending
        batch = pending[:]
        del pending[: len(batch)]
        return batch

    def _record_batch(self, batch: list[tuple[bytes, int]]) -> None:
        """Record a batch of chunks: watched for the protocol's end, redacted, written."""
        if not batch:
            return
        if self._protocol is not None:
            chunks = list(map(_first, batch))
            self._unwatched += chunks
            self._unwatched_size += sum(map(len, chunks))
            if self._unwatched_size > _WATCH_AFTER:
                self._watch()
        self._write_events(batch if self._redacting is None else self._redacting.feed_many(batch))

    def _watch(self) -> None:
        """Show ``_protocol`` the chunks recorded since it last looked, as one piece."""
        if self._protocol is not None and self._unwatched:
            self._protocol.feed(b"".join(self._unwatched))
        self._unwatched, self._unwatched_size = [], 0

    def _write_events(self, ready: list[tuple[bytes, int]], last: bytes = b"") -> None:
        """Write event lines, encoded about ``BATCH`` bytes at a time (a held stream comes out whole);
        ``last`` (lines already encoded) goes with the last of them, flushed."""
        # Each group ends with the chunk that brings it to BATCH bytes (found on the running byte count).
        ends = list(accumulate(map(len, map(_first, ready))))
        start = 0
        while start < len(ready):
            end = min(bisect_left(ends, (ends[start - 1] if start else 0) + BATCH, start) + 1, len(ready))
            lines = event_lines(self.index, self.written, ready[start:end], self.started)
            self.written += end - start
            start = end
            if start == len(ready) and last:
                lines, last = lines + last, b""
                self.recording.write_line(lines, True)
            else:
                self.recording.write_line(lines)
        if last:
            self.recording.write_line(last, True)

    def stop(self) -> None:
        """The caller closed the stream, dropped it, or the cassette closed under it: ``complete`` when the
        vendor's protocol had already ended (openai's sync client closes right after ``[DONE]``), else
        ``closed_early``."""
        if self.record.ended:  # the usual case: a stream closed (and dropped) after its end
            return
        with self._lock:
            if not self.record.ended:
                self.recording.guarded(self._record_batch, self._take_batch())  # it may hold the protocol's end
            self.recording.guarded(self._watch)
            ended = self._protocol is not None and self._protocol.ended
        self.end("complete" if ended else "closed_early")

    def interrupted(self, error: BaseException) -> None:
        """A BaseException (Ctrl-C, a cancellation) stopped the call where the caller was waiting on it."""
        if _interruption(error):
            self.recording.book.interrupt(f"{type(error).__name__} during call {self.index}")
        if self.record.status is None:
            self.end("error", error)  # no response: only an error outcome is a readable call
        else:
            self.end("closed_early")

    def end(self, outcome: str, error: BaseException | None = None) -> None:
        if self.record.ended:  # an ended call stays ended: no lock needed to see it
            return
        with self._lock:
            described = "" if error is None else _described(error, self.recording.redactor)
            if not CallBook.end(self.record, outcome, described):
                return
            self.recording.guarded(self._write_end, outcome, error)
        self.recording.forget(self.index)

    def _write_end(self, outcome: str, error: BaseException | None) -> None:
        batch = self._take_batch()
        self._unwatched = []  # the call has ended: whether its protocol had is no longer asked
        if self._redacting is not None:  # the last batch goes with the finish: a body that came at once
            batch = self._redacting.finish(batch)  # is taken in at once
        failure = None
        if error is not None:
            failure = (error_name(error), self.recording.redactor.redact_text(str(error)))
        # The call's last events and its end in one write (their count is known before they are encoded).
        end = call_end_line(self.index, self.written + len(batch), outcome, failure)
        self._write_events(batch, encode_line(end, plain_numbers=True))


class _Recording:
    """What a CassetteRecorder holds, apart from the recorder object itself, so that a GC finalizer or the
    exit hook can finish it: the file, the call book, the open calls."""

    def __init__(
        self,
        path: str,
        redactor: Redactor,
        kept_lines: Sequence[bytes],
        first_index: int,
        keep_failures: bool,
        plain_bodies: bool,
        matcher: RequestMatcher,
    ) -> None:
        self.path = path
        self.redactor = redactor
        self.matcher = matcher
        self.keep_failures = keep_failures
        self.plain_bodies = plain_bodies
        self.book = CallBook(first_index, kept_calls=first_index if kept_lines else 0)
        self._kept_lines = list(kept_lines)
        self._lock = threading.Lock()
        self._writer: CassetteWriter | None = None
        self._calls: dict[int, _CallRecording] = {}  # the calls not ended yet
        self.finished = False
        self.saved = False
        self.unchanged = False

    def _open_writer(self) -> CassetteWriter:
        if self._writer is None:
            self._writer = CassetteWriter(self.path, header_line(_versions()))
            for line in self._kept_lines:
                self._writer.write_raw(line)
        return self._writer

    def guarded(self, step: Callable[..., None], *args: Any) -> None:
        """Run a recording step; a failure of the recorder breaks the recording, never the caller's call."""
        if self.book.broken:
            return
        try:
            step(*args)
        except Exception as error:  # a recorder bug must not reach the caller's live call
            self.book.break_down(f"the recorder failed: {error_name(error)}: {error}")
            if self._writer is not None:
                self._writer.abandon()
        except BaseException as error:  # Ctrl-C (or an exit) in the step: a batch it took may be lost
            self.book.interrupt(f"{error_name(error)} while the recorder wrote a call")
            raise

    def forget(self, index: int) -> None:
        """Call ``index`` ended: closing the recording has nothing left to end there."""
        with self._lock:
            self._calls.pop(index, None)

    def write(self, line: dict[str, Any], flush: bool = False, plain_numbers: bool = False) -> None:
        """One line (``plain_numbers``: see ``_core._format.encode_line``)."""
        self._open_writer().write(line, flush=flush, plain_numbers=plain_numbers)

    def write_line(self, line: str | bytes, flush: bool = False) -> None:
        self._open_writer().write_line(line, flush)

    def start(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> _CallRecording:
        with self._lock:
            if self.finished:
                raise VcrTransportError(
                    f"cassette {self.path} was already closed (its transport was closed); "
                    "use a new transport to record more calls"
                )
            call = _CallRecording(self, self.book.open_call())
            self._calls[call.index] = call
            redactor = self.redactor
            stored_headers = redactor.redact_headers(headers)  # first: the values it learns leave the URL too
            content_type, encoding, _ = body_headers(headers)
            stored = stored_body(body, content_type, redactor, encoding=encoding)
            # The JSON of a body stored parsed is searched for floats json and msgspec write apart only
            # when its text may hold one; the line of a longer body is searched by encode_line, value by
            # value, which is faster than reading its text byte by byte when its strings are long.
            plain = stored is None or "json" not in stored
            if not plain and not encoding and len(body) <= _FLOATS_SEARCHED_IN_TEXT:
                plain = numbers_are_plain(body)
            stored_url = redact_url(url, redactor)
            garbled = garbled_structure(stored_url, stored_headers, PLACEHOLDER)
            if garbled:
                self.book.break_down(
                    f"call {call.index}: redaction would have written {garbled} with a learned value removed "
                    "from it; only credentials are learned, so this is a bug in vcr_transport (please report it "
                    "with the call's URL and headers, secrets left out)"
                )
                if self._writer is not None:
                    self._writer.abandon()
            line = request_line(call.index, method, stored_url, stored_headers, stored)
            self.guarded(self.write, line, False, plain)
        return call

    def finish(self, failure: BaseException | None, *, at_exit: bool = False) -> None:
        """End what is still open, then commit the cassette, or drop the recording and say why: as a note
        on ``failure`` when one is propagating (the caller's exception stays theirs), else as a warning."""
        with self._lock:
            if self.finished:
                return
            self.finished = True
            calls, self._calls = list(self._calls.values()), {}
        for call in calls:
            call.stop()
        if failure is not None and not (isinstance(failure, Exception) and self.keep_failures):
            self.book.interrupt(f"{error_name(failure)} ended the block that recorded it")
        writer = self._writer
        if writer is not None and writer.failure is not None:
            writer.commit()  # raises the CassetteError that names the OS error
        reason = self.book.why_not_saved(keep_failures=self.keep_failures)
        if not reason:
            assert writer is not None, "a recording worth saving wrote its lines"
            self.unchanged = not writer.commit(QuietComparison(self.matcher, self.redactor))
            self.saved = True
            return
        if writer is not None:
            writer.abandon()
        if self.book.broken:
            raise CassetteError(self.path, None, f"was not saved: {reason}; the older cassette, if any, is unchanged")
        if not self.book.calls and not os.path.exists(self.path):
            return  # nothing recorded, nothing replaced: no news
        message = f"cassette {self.path} was not saved, the older one (if any) is unchanged: {reason}"
        if failure is not None and not at_exit:
            failure.add_note(f"vcr_transport: {message}")
        else:
            warnings.warn(message, RecordingNotSavedWarning, stacklevel=2)


_FLOATS_SEARCHED_IN_TEXT = 512  # the longest JSON request body whose text numbers_are_plain searches


_live_recorders: weakref.WeakSet[CassetteRecorder] = weakref.WeakSet()
_exit_hook_installed = False


def _finish_at_exit() -> None:
    """Interpreter exit: finish recordings nobody closed, unless the program died of an exception
    (Ctrl-C included), which means what they hold did not finish."""
    died_of = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    for recorder in list(_live_recorders):
        recorder._finalizer.detach()
        try:
            recorder._recording.finish(died_of, at_exit=True)
        except Exception as error:  # one cassette's failure must not keep the others from finishing
            print(f"vcr_transport: {error}", file=sys.stderr)


class CassetteRecorder:
    """The cassette being recorded: numbers calls and writes their lines into a temporary file; ``close``
    moves it over the cassette when the recording is worth keeping (see ``close``).

    One recorder may serve several transports (``RecordingTransport(inner, recorder=...)``); whoever created
    it closes it. One nobody closes is finished when it is garbage-collected, or at interpreter exit.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        redactor: Redactor | None = None,
        *,
        kept_lines: Sequence[bytes] = (),
        first_index: int = 0,
        keep_failures: bool = False,
        plain_bodies: bool = True,
        matcher: RequestMatcher | None = None,
    ) -> None:
        """``kept_lines`` (calls replayed before a miss) are copied byte for byte; new calls then start at
        ``first_index``. ``keep_failures`` keeps calls that got no response or a 401/403, and recordings
        whose block ended with an exception (never one cut by Ctrl-C or an exit). ``plain_bodies`` asks the
        upstream for uncompressed responses. ``matcher`` says which requests are the same as the older
        cassette's (default: matching's defaults): a call recorded again with the same request and response
        keeps its old lines byte for byte (see ``close``)."""
        global _exit_hook_installed
        self.path = os.fspath(path)
        self._recording = _Recording(
            self.path,
            redactor or Redactor(),
            kept_lines,
            first_index,
            keep_failures,
            plain_bodies,
            matcher or RequestMatcher(),
        )
        self._finalizer = weakref.finalize(self, self._recording.finish, None)
        self._finalizer.atexit = False
        _live_recorders.add(self)
        if not _exit_hook_installed:
            _exit_hook_installed = True
            atexit.register(_finish_at_exit)

    @classmethod
    def from_options(
        cls, path: str | os.PathLike[str], options: Options, *, kept_lines: Sequence[bytes] = (), first_index: int = 0
    ) -> CassetteRecorder:
        """A recorder with what ``options`` say of recording: the redaction rules, ``keep_failures``,
        ``plain_bodies``, and the matching a quiet re-record compares calls with. The one place a recorder is
        built from options: the recording transports, the session (record, record-on-miss) and ``serve``."""
        return cls(
            path,
            options.redactor(),
            kept_lines=kept_lines,
            first_index=first_index,
            keep_failures=options.keep_failures,
            plain_bodies=options.plain_bodies,
            matcher=options.matcher(),
        )

    @property
    def redactor(self) -> Redactor:
        return self._recording.redactor

    @property
    def plain_bodies(self) -> bool:
        return self._recording.plain_bodies

    @property
    def saved(self) -> bool:
        """Whether closing saved this recording: it replaced the cassette, or the cassette already held the
        same calls and was left as it was (``unchanged``)."""
        return self._recording.saved

    @property
    def unchanged(self) -> bool:
        """Whether closing left the cassette as it was because the recording held the same calls."""
        return self._recording.unchanged

    @property
    def closed(self) -> bool:
        return self._recording.finished

    def start(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> _CallRecording:
        return self._recording.start(method, url, headers, body)

    def close(self, failure: BaseException | None = None) -> None:
        """Finish the recording. Calls still open end ``closed_early`` (``complete`` after their protocol's
        end). The cassette is then replaced, unless: ``failure`` (the exception that ended the block) is
        given, the recording was interrupted (Ctrl-C), no call went through it, or its last calls failed
        (no response, 401/403) without ``keep_failures``. Then the cassette is left as it was and a
        RecordingNotSavedWarning says why. A failed write raises CassetteError naming the OS error.

        Re-recording is quiet: a call whose request, response (status, headers but the volatile ones, body
        bytes) and outcome are the same as the older cassette's call at the same index keeps its old lines
        byte for byte, and when every call is the same the file is not rewritten at all (``unchanged``)."""
        self._finalizer.detach()
        _live_recorders.discard(self)
        self._recording.finish(failure)


class _RecordingStream:
    """Yields each chunk of the inner stream the moment it arrives and records it on the way.

    It is one-shot: a second iteration continues where the first stopped, as a live stream does.
    """

    def __init__(
        self, inner: ByteStream, call: _CallRecording, convert: Callable[[BaseException], BaseException]
    ) -> None:
        self._inner = inner
        self._call = call
        self._convert = convert
        self._sync_iterator: Iterator[bytes] | None = None
        self._async_iterator: AsyncIterator[bytes] | None = None

    def __del__(self) -> None:
        # A stream dropped unclosed stops its call (at interpreter exit, the exit hook already has).
        self._call.stop()

    # Each chunk is appended to the call's ``pending`` list right here, with no method call and no lock: a
    # stream has one producer (this iteration), ``list.append`` is atomic, and the lock is taken once a
    # batch (``record_pending``). Another thread only takes ``pending`` (under the lock) to end the call; a
    # chunk racing with that end is either taken with it or left unrecorded, as if it came after the end.

    def __iter__(self) -> Iterator[bytes]:
        if self._sync_iterator is None:
            self._sync_iterator = iter(self._inner)
        iterator = self._sync_iterator
        call = self._call
        append = call.pending.append
        clock = _clock
        size = 0
        while True:
            try:
                chunk = next(iterator)
            except StopIteration:
                call.end("complete")
                return
            except Exception as exc:
                call.end("error", exc)
                _reraise(self._convert(exc), exc)
            except BaseException as exc:
                call.interrupted(exc)
                raise
            append((chunk, clock()))
            size += len(chunk)
            if size >= BATCH:
                size = 0
                call.record_pending()
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._async_iterator is None:
            self._async_iterator = self._inner.__aiter__()
        anext = self._async_iterator.__anext__
        call = self._call
        append = call.pending.append
        clock = _clock
        size = 0
        while True:
            try:
                chunk = await anext()
            except StopAsyncIteration:
                call.end("complete")
                return
            except Exception as exc:
                call.end("error", exc)
                _reraise(self._convert(exc), exc)
            except BaseException as exc:
                call.interrupted(exc)
                raise
            append((chunk, clock()))
            size += len(chunk)
            if size >= BATCH:
                size = 0
                call.record_pending()
            yield chunk

    def close(self) -> None:
        self._call.stop()
        self._inner.close()

    async def aclose(self) -> None:
        self._call.stop()
        await self._inner.aclose()


class _RecordingBase(TransportLifecycle):
    def __init__(
        self,
        sync_inner: SyncTransport | None,
        async_inner: AsyncTransport | None,
        path: str | os.PathLike[str] | None,
        recorder: CassetteRecorder | None,
        options: Options | None,
        arguments: dict[str, Any],
    ) -> None:
        if recorder is None and path is None:
            raise TypeError("pass the cassette's path, or recorder= to record into a shared CassetteRecorder")
        if recorder is not None and path is not None and os.fspath(path) != recorder.path:
            raise TypeError(f"path {os.fspath(path)} differs from the recorder's cassette {recorder.path}")
        if recorder is not None and (options is not None or arguments):
            raise TypeError("a shared recorder records with its own options: pass them to CassetteRecorder")
        self.sync_inner = sync_inner
        self.async_inner = async_inner
        self.shared = recorder is not None
        if recorder is None:
            chosen = Options.of(options, arguments, where=type(self).__name__, entry="recording")
            recorder = CassetteRecorder.from_options(path or "", chosen)
        self.recorder = recorder
        self.path = self.recorder.path
        self._sides = ClosingSides(self._finish)

    def _finish(self, failure: BaseException | None) -> None:
        if not self.shared:
            self.recorder.close(failure)

    def _inner_to_close(self, side: str) -> Any:
        return self.sync_inner if side == "sync" else self.async_inner

    def _asking_plain(self, request: Any) -> Any:
        """With ``plain_bodies``: the request as it is forwarded and recorded, asking for an uncompressed
        response (``accept-encoding: identity``); the caller's request object is left as it is."""
        if not self.recorder.plain_bodies:
            return request
        triples = getattr(request.headers, "_list", None)  # httpx's and httpx2's (name, lower name, value)
        if type(triples) is list:
            names = [lower for _, lower, _ in triples]
        else:
            names = [name.lower() for name, _ in request.headers.raw]
        if names.count(b"accept-encoding") > 1 or not _holds_what_a_build_adds(request, names):
            identity = (b"accept-encoding", b"identity")
            raw = [
                identity if name.lower() == b"accept-encoding" else (name, value) for name, value in request.headers.raw
            ]
            if identity not in raw:
                raw.append(identity)
            return library_of(request).Request(
                request.method, request.url, headers=raw, content=request.content, extensions=request.extensions
            )
        # What that build gives, without parsing the URL and the headers again: the headers copied with
        # ``accept-encoding: identity`` in the place of the one there, or last (as ``headers[...] = ...``,
        # which works out their encoding first).
        if type(triples) is list:
            identity_triple = (b"accept-encoding", b"accept-encoding", b"identity")
            copied = [identity_triple if t[1] == b"accept-encoding" else t for t in triples]
            if b"accept-encoding" not in names:
                copied.append(identity_triple)
            headers = type(request.headers)()
            headers._list = copied
        else:
            headers = type(request.headers)(request.headers)
            headers["accept-encoding"] = "identity"
        forwarded = object.__new__(type(request))
        forwarded.__dict__.update(request.__dict__)  # method, url, the read content and its ByteStream
        forwarded.headers = headers
        forwarded.extensions = dict(request.extensions)
        return forwarded

    def _start(self, request: HttpRequest) -> _CallRecording:
        return self.recorder.start(request.method, str(request.url), header_pairs(request.headers), request.content)

    @staticmethod
    def _forwarded(request: HttpRequest, inner: object) -> Any:
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

    def _wrap(self, request: HttpRequest, response: Any, call: _CallRecording) -> Any:
        library = library_of(request)
        http_version = response.extensions.get("http_version", b"HTTP/1.1")
        if isinstance(http_version, bytes):
            http_version = http_version.decode("ascii", "replace")
        headers = header_pairs(response.headers)
        call.response(response.status_code, headers, str(http_version))
        # A transport may hand back a body it already read (MockTransport): what ``response.content`` holds
        # then, read without the ResponseNotRead it raises otherwise (httpx and httpx2 alike).
        content = getattr(response, "_content", None)
        if content is not None:
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
        forwarded = self._asking_plain(request)
        call = self._start(forwarded)
        try:
            response = self.sync_inner.handle_request(self._forwarded(forwarded, self.sync_inner))
        except Exception as exc:
            call.end("error", exc)
            _reraise(convert_error(exc, library_of(request), request), exc)
        except BaseException as exc:
            call.interrupted(exc)
            raise
        return self._wrap(request, response, call)

    async def handle_async_request(self, request: Any) -> Any:
        if self.async_inner is None:
            raise TypeError(f"{type(self).__name__} for {self.path} has no async transport: pass async_inner=")
        self._sides.use("async")
        await request.aread()
        forwarded = self._asking_plain(request)
        call = self._start(forwarded)
        try:
            response = await self.async_inner.handle_async_request(self._forwarded(forwarded, self.async_inner))
        except Exception as exc:
            call.end("error", exc)
            _reraise(convert_error(exc, library_of(request), request), exc)
        except BaseException as exc:
            call.interrupted(exc)
            raise
        return self._wrap(request, response, call)


# Methods whose empty body a Request still announces (``Content-Length: 0``).
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "QUERY"})


def _holds_what_a_build_adds(request: Any, names: list[bytes]) -> bool:
    """Whether ``Request(method, url, headers=..., content=...)`` of a read ``request`` with header
    ``names`` (lower-case) would add none: ``Host``, and the body's length unless an empty body needs none."""
    has_length = b"content-length" in names or b"transfer-encoding" in names
    return b"host" in names and (has_length or (not request.content and request.method not in _BODY_METHODS))


def _reraise(converted: BaseException, original: BaseException) -> NoReturn:
    if converted is original:
        raise original
    raise converted from original


class RecordingTransport(_RecordingBase):
    """Wraps a sync httpx or httpx2 transport and records what passes through into a JSONL cassette.

    The caller sees exactly what the inner transport returns, chunk by chunk, as it arrives. When the
    transport is closed (or at exit) the recording replaces any older file at ``path``, if it is worth
    keeping: an interrupted recording, one that carried no call, or one whose last calls got no response
    or a 401/403 leaves the old cassette as it was, with a RecordingNotSavedWarning saying why
    (``keep_failures=True`` keeps failures on purpose). ``async_inner`` lets the same object serve an async
    client too (google-genai takes both); calls share one cassette. ``recorder=`` records into a
    CassetteRecorder shared with other transports instead of ``path``; its creator closes it. The options
    (keywords, or ``options=Options(...)``) are the recording ones of ``vcr_transport.Options``: the
    redaction rules (which add to the defaults, never remove them), ``keep_failures`` and ``plain_bodies``
    (default True: the upstream is asked for uncompressed responses, so the cassette holds readable text).
    """

    def __init__(
        self,
        inner: SyncTransport | None,
        path: str | os.PathLike[str] | None = None,
        *,
        async_inner: AsyncTransport | None = None,
        recorder: CassetteRecorder | None = None,
        options: Options | None = None,
        **arguments: Any,
    ) -> None:
        super().__init__(inner, async_inner, path, recorder, options, arguments)

    @property
    def inner(self) -> SyncTransport | None:
        return self.sync_inner


class AsyncRecordingTransport(_RecordingBase):
    """The async twin of RecordingTransport: wraps an async transport (and ``sync_inner``, optionally)."""

    def __init__(
        self,
        inner: AsyncTransport | None,
        path: str | os.PathLike[str] | None = None,
        *,
        sync_inner: SyncTransport | None = None,
        recorder: CassetteRecorder | None = None,
        options: Options | None = None,
        **arguments: Any,
    ) -> None:
        super().__init__(sync_inner, inner, path, recorder, options, arguments)

    @property
    def inner(self) -> AsyncTransport | None:
        return self.async_inner
