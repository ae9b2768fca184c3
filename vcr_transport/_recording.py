"""Recording: transports that pass every chunk straight through to the caller and append it to the
cassette on the way. What each call's lines are is worked out in the core (``_core._call_recording``); this
shell holds the locks and the file, finishes recordings nobody closed (garbage collection, interpreter
exit), and wraps httpx and httpx2."""

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
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from ._core.engine._call_recording import CallBook, CallRecording
from ._core.engine._matching import RequestMatcher
from ._core.engine._options import Options
from ._core.engine._quiet import QuietComparison
from ._core.engine._websocket import Close, SessionRecording
from ._core.format._bodies import decoded_headers
from ._core.format._format import header_line
from ._core.rules._redaction import Redactor, RedactWithError
from ._exceptions import CassetteError, RecordingNotSavedWarning, RedactionLimitError, VcrTransportError
from ._http import (
    body_already_read,
    convert_error,
    error_name,
    forwarded_request,
    header_pairs,
    http_version,
    library_of,
    response_in,
    stream_class,
    transport_library,
)
from ._lifecycle import AsyncTransport, ByteStream, ClosingSides, HttpRequest, SyncTransport, TransportLifecycle
from ._storage import CassetteWriter, cassette_target, older_cassette

if TYPE_CHECKING:
    from ._core.engine._typed_options import RecordingOptions

__all__ = [
    "AsyncRecordingTransport",
    "CassetteRecorder",
    "ClosingSides",
    "RecordingSession",
    "RecordingTransport",
    "forked_child_error",
]

T = TypeVar("T")
_clock = time.perf_counter_ns  # a chunk's arrival (its event's ``t`` is the offset from the call's start)


@functools.cache
def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in ("vcr_transport", "httpx2", "httpx", "openai", "anthropic", "google-genai"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def _interruption(error: BaseException) -> bool:
    """Ctrl-C or an exit: whatever was being recorded did not finish."""
    return isinstance(error, KeyboardInterrupt | SystemExit)


class _Call:
    """One call being recorded: its ``CallRecording`` behind a lock (the stream, a close and a GC finalizer
    may race to end the call), the lines of each step appended to the recording's file. A chunk is taken
    with no lock (a stream has one producer); the lock is taken once a batch."""

    def __init__(self, recording: _Recording, core: CallRecording) -> None:
        self.recording = recording
        self.core = core
        self.index = core.index
        self._lock = threading.Lock()

    @property
    def ended(self) -> bool:
        return self.core.ended

    def response(self, status: int, headers: list[tuple[str, str]], http_version: str) -> None:
        self.recording.append(self.core.response, status, headers, http_version)

    def chunk(self, data: bytes) -> None:
        """Take a chunk that has just arrived; a batch of about ``BATCH`` bytes is recorded at once."""
        if self.core.take(data, _clock()):
            self.record_pending()

    def record_pending(self) -> None:
        """Record the chunks taken so far (nothing once the call has ended: they came after its end)."""
        with self._lock:
            self.recording.append(self.core.batch)

    def stop(self) -> None:
        """The caller closed the stream, dropped it, or the cassette closed under it: ``complete`` when the
        whole body had arrived (its content-length), its vendor's protocol had ended (openai's sync client
        closes right after ``[DONE]``, MCP's after the JSON-RPC response) or its event stream had sent nothing
        (``CallRecording.body_ended``), else ``closed_early``."""
        if self.core.ended or self.recording.forked:  # the usual case: a stream closed (and dropped) after its end
            return
        with self._lock:
            self.recording.append(self.core.batch)  # it may hold the protocol's end
            ended = self.recording.guarded(self.core.body_ended)
        self.end("complete" if ended else "closed_early")

    def interrupted(self, error: BaseException) -> None:
        """A BaseException (Ctrl-C, a cancellation) stopped the call where the caller was waiting on it."""
        if _interruption(error):
            self.recording.book.interrupt(f"{type(error).__name__} during call {self.index}")
        if self.core.record.status is None:
            self.end("error", error)  # no response: only an error outcome is a readable call
        else:
            self.stop()  # as when the caller closes it: complete if nothing of it was missing

    def end(self, outcome: str, error: BaseException | None = None) -> None:
        if self.core.ended or self.recording.forked:  # an ended call stays ended: no lock needed to see it
            return
        with self._lock:
            failure = None
            if error is not None:
                message = self.recording.guarded(self.core.redactor.redact_text, str(error))
                failure = (error_name(error), message or "")
            if not self.core.close(outcome, failure):
                return
            self.recording.append(self.core.end_lines, flush=True)
        self.recording.forget(self.index)


class RecordingSession:
    """One WebSocket session being recorded: its ``SessionRecording`` behind a lock (the client's sends and
    receives may come from several threads or tasks, and the recording's end may race with them), each
    step's lines appended to the recording's file as it happens."""

    def __init__(self, recording: _Recording, core: SessionRecording) -> None:
        self.recording = recording
        self.core = core
        self.index = core.index
        self._lock = threading.Lock()

    def accepted(self, status: int, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        """The handshake's response (a refusal's ``body`` too)."""
        at = _clock()
        with self._lock:
            self.recording.append(self.core.accepted, status, headers, body, at)

    def message(self, side: str, data: str | bytes) -> None:
        at = _clock()
        with self._lock:
            self.recording.append(self.core.message, side, data, at)

    def end(self, outcome: str, close: Close | None = None, error: BaseException | None = None) -> None:
        """The session ended: ``complete`` (it closed, ``close`` says how), ``error`` (``error``), or
        ``closed_early`` (the recording ended while it was open)."""
        if self.core.ended:
            return
        failure = None if error is None else (error_name(error), self.core.redactor.redact_text(str(error)))
        with self._lock:
            self.recording.append(self.core.end, outcome, close, failure, flush=True)
        self.recording.forget(self.index)

    def stop(self) -> None:
        self.end("closed_early")


def forked_child_error(path: str, pid: int) -> CassetteError:
    """What a forked child meets at its first call that would record into cassette ``path`` of process ``pid``."""
    return CassetteError(
        path,
        None,
        f"is being recorded by process {pid}, and this process ({os.getpid()}) is a fork of it: a forked "
        "child's calls can't go into its parent's recording (the parent's cassette is left as it is)",
        "record in the parent process, or give each worker a cassette of its own (open the transport or "
        "use_cassette inside the worker, in a Pool initializer for instance), or start workers with the "
        "'spawn' method",
    )


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
        deferred_lines: Sequence[bytes] = (),
        owner: str = "",
        early_stop_ok: bool = False,
    ) -> None:
        self.path = path
        self.owner = owner  # a shared cassette's: the test whose calls this recording holds
        self.redactor = redactor
        self.matcher = matcher
        self.keep_failures = keep_failures
        self.plain_bodies = plain_bodies
        self.book = CallBook(first_index, kept_calls=first_index if kept_lines else 0, early_stop_ok=early_stop_ok)
        self._kept_lines = list(kept_lines)
        self._deferred_lines = list(deferred_lines)
        self._lock = threading.Lock()
        self._writer: CassetteWriter | None = None
        self._calls: dict[int, _Call | RecordingSession] = {}  # the calls not ended yet
        self.finished = False
        self.saved = False
        self.unchanged = False
        self.pid = os.getpid()  # the process that records: a forked child neither writes nor commits

    @property
    def forked(self) -> bool:
        """Whether this is a forked child of the process that records (its copy of the recording is dead)."""
        return os.getpid() != self.pid

    def refuse_in_fork(self) -> None:
        """A forked child's call: refused before it is sent, naming the cassette and what records with workers.
        The parent's recording is left as it is (the child's copy writes nothing, commits nothing)."""
        raise forked_child_error(self.path, self.pid)

    def after_fork(self) -> None:
        """In a forked child: the file the child inherited no longer leads to the parent's (see
        ``CassetteWriter.after_fork``)."""
        if self._writer is not None:
            self._writer.after_fork()

    def guarded(self, step: Callable[..., T], *args: Any) -> T | None:
        """Run a recording step; a failure of the recorder breaks the recording, never the caller's call.
        A broken recording's file is dropped at once."""
        try:
            return step(*args)
        except (RedactWithError, RedactionLimitError) as error:  # the user's function, a hostile answer: neither
            self.book.break_down(str(error), error.FIX)  # reaches the live call
        except Exception as error:  # a recorder bug must not reach the caller's live call
            self.book.break_down(f"the recorder failed: {error_name(error)}: {error}")
        except BaseException as error:  # Ctrl-C (or an exit) in the step: a batch it took may be lost
            self.book.interrupt(f"{error_name(error)} while the recorder wrote a call")
            raise
        finally:
            if self.book.broken and self._writer is not None:
                self._writer.abandon()
        return None

    def append(self, step: Callable[..., list[bytes]], *args: Any, flush: bool = False) -> None:
        """Run a step of a call's recording (guarded) and append the lines it gives, a group at a time."""
        if self.forked:
            return
        self.guarded(self._append, step, args, flush)

    def _append(self, step: Callable[..., list[bytes]], args: tuple[Any, ...], flush: bool) -> None:
        groups = step(*args)
        if not groups:
            return
        writer = self._writer
        if writer is None:
            writer = self._writer = CassetteWriter(self.path, header_line(_versions()))
            if self._kept_lines:
                writer.write_lines(b"".join(line + b"\n" for line in self._kept_lines))
        for group in groups[:-1]:
            writer.write_lines(group)
        writer.write_lines(groups[-1], flush)
        if self._deferred_lines:  # after the first new request: the kept calls it overlapped end here
            writer.write_lines(b"".join(line + b"\n" for line in self._deferred_lines))
            self._deferred_lines = []

    def forget(self, index: int) -> None:
        """Call ``index`` ended: closing the recording has nothing left to end there."""
        with self._lock:
            self._calls.pop(index, None)

    def start(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> _Call:
        if self.forked:
            self.refuse_in_fork()
        with self._lock:
            if self.finished:
                raise VcrTransportError(
                    f"cassette {self.path} was already closed (its transport was closed); "
                    "use a new transport to record more calls"
                )
            call = _Call(self, CallRecording(self.book, self.redactor, _clock()))
            self._calls[call.index] = call
            self.append(call.core.request, method, url, headers, body)
        return call

    def start_session(self, url: str, headers: list[tuple[str, str]]) -> RecordingSession:
        if self.forked:
            self.refuse_in_fork()
        with self._lock:
            if self.finished:
                raise VcrTransportError(f"cassette {self.path} was already closed; open a WebSocket inside its block")
            session = RecordingSession(self, SessionRecording(self.book, self.redactor, _clock()))
            self._calls[session.index] = session
            self.append(session.core.handshake, url, headers)
        return session

    def finish(self, failure: BaseException | None, *, at_exit: bool = False) -> None:
        """End what is still open, then commit the cassette, or drop the recording and say why: as a note
        on ``failure`` when one is propagating (the caller's exception stays theirs), else as a warning.
        Nothing in a forked child: the recording is its parent's to finish."""
        if self.forked:
            return
        with self._lock:
            if self.finished:
                return
            self.finished = True
            calls, self._calls = list(self._calls.values()), {}
        for call in calls:
            call.stop()
        if failure is not None and not (isinstance(failure, Exception) and self.keep_failures):
            self.book.interrupt(f"{error_name(failure)} ended the block that recorded it")
        self._commit(failure, at_exit)

    def _commit(self, failure: BaseException | None, at_exit: bool) -> None:
        """Commit the cassette, or drop the recording (``_drop``) when it is not worth saving."""
        writer = self._writer
        if writer is not None and writer.failure is not None:
            writer.commit()  # raises the CassetteError that names the OS error
        older = older_cassette(self.path, self.owner) if self.book.asks_older and not self.keep_failures else None
        reason = self.book.why_not_saved(keep_failures=self.keep_failures, older=older)
        if not reason:
            assert writer is not None, "a recording worth saving wrote its lines"
            quiet = QuietComparison(self.matcher, self.redactor)
            self.unchanged = not writer.commit(quiet, self.redactor, owner=self.owner)
            self.saved = True
        else:
            self._drop(reason, failure, at_exit)

    def _drop(self, reason: str, failure: BaseException | None, at_exit: bool) -> None:
        """Drop a recording not worth saving; say why (nothing when it carried no call and replaced nothing)."""
        if self._writer is not None:
            self._writer.abandon()
        if self.book.broken:
            raise CassetteError(
                self.path,
                None,
                f"was not saved: {reason}; the older cassette, if any, is unchanged",
                self.book.broken_fix,
            )
        if not self.book.calls and not os.path.exists(self.path):
            return  # nothing recorded, nothing replaced: no news
        message = f"cassette {self.path} was not saved, the older one (if any) is unchanged: {reason}"
        if failure is not None and not at_exit:
            failure.add_note(f"vcr_transport: {message}")
        else:
            warnings.warn(message, RecordingNotSavedWarning, stacklevel=4)  # where finish was called (through _commit)


_live_recorders: weakref.WeakSet[CassetteRecorder] = weakref.WeakSet()
_exit_hook_installed = False


def _after_fork_in_child() -> None:
    """``os.fork()``'s child (multiprocessing's fork workers too): the recordings it inherited are dead copies."""
    for recorder in list(_live_recorders):
        recorder._recording.after_fork()


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
        deferred_lines: Sequence[bytes] = (),
        owner: str = "",
        early_stop_ok: bool = False,
    ) -> None:
        """``kept_lines`` (calls replayed before a miss) are copied byte for byte; new calls then start at
        ``first_index``; ``deferred_lines`` (kept calls' call_end lines) are written after the first new
        line, so the first new call counts as overlapping those calls.
        ``keep_failures`` keeps calls that got no response or a 401/403, recordings worse than the complete
        cassette they replace, and recordings whose block ended with an exception (never one cut by Ctrl-C
        or an exit). ``plain_bodies`` asks the
        upstream for uncompressed responses. ``matcher`` says which requests are the same as the older
        cassette's (default: matching's defaults): a call recorded again with the same request and response
        keeps its old lines byte for byte (see ``close``). ``owner``: the cassette is shared by several tests
        and this recording holds the calls of test ``owner``: at commit they replace that test's calls and
        the other tests' stay (``CassetteWriter.commit``). ``early_stop_ok``: a call the code closed early
        is marked an intended early stop."""
        global _exit_hook_installed
        self.path = os.fspath(path)
        cassette_target(self.path)  # a link that may not be written through is refused before a call is sent
        self._recording = _Recording(
            self.path,
            redactor or Redactor(),
            kept_lines,
            first_index,
            keep_failures,
            plain_bodies,
            matcher or RequestMatcher(),
            deferred_lines,
            owner,
            early_stop_ok,
        )
        self._finalizer = weakref.finalize(self, self._recording.finish, None)
        self._finalizer.atexit = False
        _live_recorders.add(self)
        if not _exit_hook_installed:
            _exit_hook_installed = True
            atexit.register(_finish_at_exit)
            if hasattr(os, "register_at_fork"):
                os.register_at_fork(after_in_child=_after_fork_in_child)

    @classmethod
    def from_options(
        cls,
        path: str | os.PathLike[str],
        options: Options,
        *,
        kept_lines: Sequence[bytes] = (),
        first_index: int = 0,
        deferred_lines: Sequence[bytes] = (),
    ) -> CassetteRecorder:
        """A recorder with what ``options`` say of recording: the redaction rules, ``keep_failures``,
        ``plain_bodies``, and the matching a quiet re-record compares calls with. The one place a recorder is
        built from options: the recording transports, the session (record, record-on-miss) and ``serve``."""
        return cls(
            path,
            options.redactor(),
            kept_lines=kept_lines,
            first_index=first_index,
            deferred_lines=deferred_lines,
            keep_failures=options.keep_failures,
            plain_bodies=options.plain_bodies,
            matcher=options.matcher(),
            owner=options.shared_as,
            early_stop_ok=options.early_stop_ok,
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

    def start(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> _Call:
        return self._recording.start(method, url, headers, body)

    def start_session(self, url: str, headers: list[tuple[str, str]]) -> RecordingSession:
        """Start recording a WebSocket session: its handshake (``url``, the request's ``headers``)."""
        return self._recording.start_session(url, headers)

    def close(self, failure: BaseException | None = None) -> None:
        """Finish the recording. Calls still open end ``closed_early`` (``complete`` after their protocol's
        end). The cassette is then replaced, unless: ``failure`` (the exception that ended the block) is
        given, the recording was interrupted (Ctrl-C), no call went through it, or, without
        ``keep_failures``, its last calls failed (no response, 401/403) or it is worse than the complete
        cassette it would replace (a call ended closed_early or error, a last answer of 429/5xx where the
        older cassette's got a success: see ``CallBook.why_not_saved``). Then the cassette is left as it
        was and a RecordingNotSavedWarning says why. A failed write, or a redact_with function that failed,
        raises CassetteError naming it. In a forked child, closing does nothing: the recording is the
        parent's.

        Re-recording is quiet: a call whose request, response (status, headers but the volatile ones, body
        bytes) and outcome are the same as the older cassette's call at the same index keeps its old lines
        byte for byte, and when every call is the same the file is not rewritten at all (``unchanged``)."""
        self._finalizer.detach()
        _live_recorders.discard(self)
        self._recording.finish(failure)


class _Ending:
    """Ends ``call`` when the block raises: ``error`` (the exception raised on as the caller's library's class,
    ``convert``), or, for a BaseException (Ctrl-C, a cancellation), as interrupted; with ``complete``, ends
    it ``complete`` when the block ends. A stream whose caller stops reading (GeneratorExit) is stopped by
    the stream itself (``_RecordingStream``)."""

    __slots__ = ("call", "complete", "convert")

    def __init__(self, call: _Call, convert: Callable[[BaseException], BaseException], complete: bool = False) -> None:
        self.call = call
        self.convert = convert
        self.complete = complete

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: object) -> None:
        if error is None:
            if self.complete:
                self.call.end("complete")
        elif isinstance(error, Exception):
            self.call.end("error", error)
            converted = self.convert(error)
            if converted is not error:
                raise converted from error
        elif not isinstance(error, GeneratorExit):
            self.call.interrupted(error)


class _RecordingStream:
    """Yields each chunk of the inner stream the moment it arrives and records it on the way.

    It is one-shot: while an iteration is open, another continues where it stopped, as a live stream's
    does. An iteration the caller drops before the end (GeneratorExit: a ``break``, an SDK's stream
    abandoned after the first chunk) closes the stream at once, as httpcore's own stream closes itself
    (iterating again then fails with the library's ReadError, as live). Left open, the inner iterator held
    here would be closed only by the garbage collector, at any later moment, possibly inside the connection
    pool's lock, where closing it waits on that lock forever. The sync and async loops differ only in
    ``for`` against ``async for``.
    """

    def __init__(self, inner: ByteStream, call: _Call, convert: Callable[[BaseException], BaseException]) -> None:
        self._inner = inner
        self._call = call
        self._convert = convert
        self._sync_iterator: Iterator[bytes] | None = None
        self._async_iterator: AsyncIterator[bytes] | None = None

    def __del__(self) -> None:
        # A stream dropped unclosed stops its call (at interpreter exit, the exit hook already has).
        self._call.stop()

    def __iter__(self) -> Iterator[bytes]:
        take, clock, record = self._call.core.take, _clock, self._call.record_pending
        with _Ending(self._call, self._convert, complete=True):
            try:
                for chunk in self._sync_chunks():
                    if take(chunk, clock()):
                        record()
                    yield chunk
            except GeneratorExit:
                self.close()
                raise

    async def __aiter__(self) -> AsyncIterator[bytes]:
        take, clock, record = self._call.core.take, _clock, self._call.record_pending
        with _Ending(self._call, self._convert, complete=True):
            try:
                async for chunk in self._async_chunks():
                    if take(chunk, clock()):
                        record()
                    yield chunk
            except GeneratorExit:
                await self.aclose()
                raise

    def _sync_chunks(self) -> Iterator[bytes]:
        if self._sync_iterator is None:
            self._sync_iterator = iter(self._inner)
        return self._sync_iterator

    def _async_chunks(self) -> AsyncIterator[bytes]:
        if self._async_iterator is None:
            self._async_iterator = self._inner.__aiter__()
        return self._async_iterator

    def close(self) -> None:
        self._call.stop()
        self._inner.close()

    async def aclose(self) -> None:
        self._call.stop()
        await self._inner.aclose()


def _check_recorder_arguments(
    path: str | os.PathLike[str] | None,
    recorder: CassetteRecorder | None,
    options: Options | None,
    arguments: RecordingOptions,
) -> None:
    """A recording transport records into its own cassette (``path``, with options) or a shared recorder."""
    if recorder is None and path is None:
        raise TypeError("pass the cassette's path, or recorder= to record into a shared CassetteRecorder")
    if recorder is not None and path is not None and os.fspath(path) != recorder.path:
        raise TypeError(f"path {os.fspath(path)} differs from the recorder's cassette {recorder.path}")
    if recorder is not None and (options is not None or arguments):
        raise TypeError("a shared recorder records with its own options: pass them to CassetteRecorder")


class _RecordingBase(TransportLifecycle):
    def __init__(
        self,
        sync_inner: SyncTransport | None,
        async_inner: AsyncTransport | None,
        path: str | os.PathLike[str] | None,
        recorder: CassetteRecorder | None,
        options: Options | None,
        arguments: RecordingOptions,
    ) -> None:
        _check_recorder_arguments(path, recorder, options, arguments)
        self.sync_inner = sync_inner
        self.async_inner = async_inner
        self.shared = recorder is not None
        if recorder is None:
            chosen = Options.of(options, arguments, where=type(self).__name__, entry="recording")
            recorder = CassetteRecorder.from_options(path or "", chosen)
        self.recorder = recorder
        self.path = self.recorder.path
        self._sides = ClosingSides()

    def _finish(self, failure: BaseException | None) -> None:
        if not self.shared:
            self.recorder.close(failure)

    def _inner_to_close(self, side: str) -> Any:
        return self.sync_inner if side == "sync" else self.async_inner

    def _inner(self, side: str) -> Any:
        inner = self._inner_to_close(side)
        if inner is None:
            keyword = "sync_inner" if side == "sync" else "async_inner"
            raise TypeError(f"{type(self).__name__} for {self.path} has no {side} transport: pass {keyword}=")
        self._sides.use(side)
        return inner

    def _start(self, request: HttpRequest, inner: object) -> tuple[_Call, Any]:
        """The call recorded for a read ``request``, and the request sent on to ``inner``: in its library,
        asking for an uncompressed response with ``plain_bodies``. The cassette holds what is sent."""
        forwarded = forwarded_request(request, transport_library(inner), plain=self.recorder.plain_bodies)
        call = self.recorder.start(
            forwarded.method, str(forwarded.url), header_pairs(forwarded.headers), forwarded.content
        )
        return call, forwarded

    def _wrap(self, request: HttpRequest, response: Any, call: _Call) -> Any:
        """The inner transport's response, in the caller's library, recorded as the caller reads it."""
        library = library_of(request)
        content = body_already_read(response)
        headers = header_pairs(response.headers)
        call.response(
            response.status_code, headers if content is None else decoded_headers(headers), http_version(response)
        )
        if content is not None:
            call.chunk(content)
            call.end("complete")
            return response_in(library, response)
        stream = stream_class(library, _RecordingStream)(
            response.stream, call, lambda exc: convert_error(exc, library, request)
        )
        return response_in(library, response, stream)

    def handle_request(self, request: Any) -> Any:
        inner = self._inner("sync")
        request.read()
        call, forwarded = self._start(request, inner)
        with _Ending(call, lambda exc: convert_error(exc, library_of(request), request)):
            response = inner.handle_request(forwarded)
        return self._wrap(request, response, call)

    async def handle_async_request(self, request: Any) -> Any:
        inner = self._inner("async")
        await request.aread()
        call, forwarded = self._start(request, inner)
        with _Ending(call, lambda exc: convert_error(exc, library_of(request), request)):
            response = await inner.handle_async_request(forwarded)
        return self._wrap(request, response, call)


class RecordingTransport(_RecordingBase):
    """Wraps a sync httpx or httpx2 transport and records what passes through into a JSONL cassette.

    The caller sees exactly what the inner transport returns, chunk by chunk, as it arrives. When the
    transport is closed (or at exit) the recording replaces any older file at ``path``, if it is worth
    keeping: an interrupted recording, one that carried no call, one whose last calls got no response or a
    401/403, or one worse than the complete cassette it would replace (a stream cut short, a last 429/5xx
    where the older got a success) leaves the old cassette as it was, with a RecordingNotSavedWarning saying
    why (``keep_failures=True`` keeps failures on purpose). A forked child's calls are refused (see
    ``forked_child_error``). ``async_inner`` lets the same object serve an async
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
        **arguments: Unpack[RecordingOptions],
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
        **arguments: Unpack[RecordingOptions],
    ) -> None:
        super().__init__(sync_inner, inner, path, recorder, options, arguments)

    @property
    def inner(self) -> AsyncTransport | None:
        return self.async_inner
