"""A cassette opened in a mode, and the transports built on it.

The decision each request meets is made in ``_core/engine/_modes.py``, once, by the session's ``Decision``; here
its steps are carried out: answered from the cassette (``_replay.Replayer``), passed through, or forwarded
and recorded. ``ModeTransport`` (``transport()``, ``use_cassette()``) and ``ReplayTransport`` (a session in
replay mode) are its transports, and ``serve`` answers over HTTP from sessions too. The sync and async
twins differ only in ``read()`` against ``await aread()`` and in the call to the inner transport.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import inspect
import os
import threading
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, Unpack

from ._config import PytestRun, cassette_mode, current_run, find_pyproject, how_to_record, read_settings, resolve_mode
from ._core.engine._modes import Decision, Mode, Step, expired_mode
from ._core.engine._options import Options
from ._core.format._bodies import redact_url, stored_body, stored_body_bytes
from ._core.format._format import RecordedCall, header_age_days
from ._core.rules._redaction import RedactWithError
from ._exceptions import (
    CassetteError,
    CassetteExpiredWarning,
    RedactionLimitError,
    ReplayMismatch,
    UnplayedCallsError,
)
from ._http import header_pairs, library_of
from ._lifecycle import AsyncTransport, ClosingSides, SyncTransport, TransportBase, TransportLifecycle, propagating
from ._replay import Replayer, answers_with_error_response, error_response, kept_out
from ._states import Checking, Off, Recording, Refused, Replaying, SessionState

if TYPE_CHECKING:  # recording's modules are imported when a recording starts (``_states``), not by a replay
    from ._check import ShapeChecker
    from ._core.engine._typed_options import ReplayOptions, TransportOptions
    from ._recording import CassetteRecorder

__all__ = [
    "CassetteRequest",
    "CassetteSession",
    "ModeTransport",
    "ReplayTransport",
    "async_transport",
    "open_session",
    "transport",
]


@dataclasses.dataclass(frozen=True)
class CassetteRequest:
    """A request of a cassette as a test sees it (like vcrpy's ``cassette.requests``): a recorded call's
    request as stored (redacted) with how often it was replayed, or a request recorded in this block
    (``play_count`` 0)."""

    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes
    play_count: int

    @property
    def uri(self) -> str:
        """vcrpy's name for the URL."""
        return self.url


class CassetteSession:
    """One cassette in one concrete mode (off, record, replay, record-on-miss, check). It answers a request for
    whatever inner transport the caller has, so one session serves many clients.

    ``mode`` is the concrete mode and ``source`` where it came from (argument, pytest option, environment,
    pyproject, default). ``decision`` (``_core/engine/_modes.py``) is the step each request meets; ``state``
    (``_states.py``: replaying, recording, checking, refused, off) what the cassette is now, and what became
    of it (``outcome()``). ``first_mismatch``, ``unplayed_calls()`` and ``assert_all_played()`` report on
    replay; ``close()`` commits a recording. ``run``: the pytest run told what became of the cassette.
    ``serving``: the cassette is served (``serve``): any recorded call answers any matching request, as
    often as it comes, a mismatch is raised for the server to answer, and record-on-miss appends (see
    ``Decision``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: str,
        source: str,
        options: Options,
        *,
        record_hint: str = "",
        run: PytestRun | None = None,
        serving: bool = False,
        refusal: CassetteError | None = None,
    ) -> None:
        self.path = Path(path)
        self.source = source
        self.options = dataclasses.replace(options, ordered=False, on_mismatch="raise") if serving else options
        self.record_hint = record_hint
        self.run = run
        self.closed = False
        self._sent: list[CassetteRequest] = []  # requests forwarded and recorded in this session
        self._sent_lock = threading.Lock()
        self.existed = existed = self._existed()
        # Fail closed: a cassette that can't be read answers every request with its diagnostic.
        # ``refusal``: the mode refused this cassette (CI); every request meets it, as a missing cassette's.
        opened: Replayer | Refused | None = None
        if refusal is not None:
            opened = Refused(refusal, "refused", existed=existed)
        elif Decision.reads(mode, exists=existed):
            opened, mode = self._read(mode, path, serving)
        self.decision = Decision(
            mode,
            readable=not isinstance(opened, Refused),
            exists=existed,
            passthrough=self.options.passthrough,
            passthrough_replay=self.options.passthrough_replay,
            ignore_hosts=self.options.ignore_hosts,
            appending=serving,
        )
        self.state: SessionState = self._first_state(opened, existed)
        if run is not None:
            run.cassette_opened(self.path, mode, self.options.shared_as or "")

    def _existed(self) -> bool:
        """Whether the cassette is there (a shared cassette: whether it holds this test's calls)."""
        if self.options.shared_as and self.path.exists():
            from ._storage import holds_calls_of

            return holds_calls_of(self.path, self.options.shared_as)
        return self.path.exists()

    def _read(self, mode: str, path: str | os.PathLike[str], serving: bool) -> tuple[Replayer | Refused, str]:
        """The cassette read to be replayed or checked (or why not), and the mode (a stale cassette's may
        change)."""
        replayer = self._open(mode, path, serving)
        if isinstance(replayer, CassetteError):
            return Refused(replayer, "missing", existed=False), mode
        if serving or self.options.max_age is None:
            return replayer, mode
        stale, mode = self._check_age(replayer, mode, self.options.max_age)
        return (Refused(stale, "stale", existed=True, replayer=replayer) if stale else replayer), mode

    def _first_state(self, opened: Replayer | Refused | None, existed: bool) -> SessionState:
        """What the session starts as: refused; recording (afresh, or appending to what ``opened`` read);
        off; checking; replaying (record-on-miss: until its first miss)."""
        decision = self.decision
        if isinstance(opened, Refused):
            return opened
        if decision.records_at_start:
            if opened is None:
                return Recording.fresh(self.path, self.options, existed=existed)
            return Replaying(opened, self.path, self.options, reports_mismatch=False).on_record_start()
        if opened is None:
            return Off()
        if decision.checks:
            from ._check import ShapeChecker  # only mode check needs it

            plain = self.options.plain_bodies
            return Checking(
                opened, ShapeChecker(opened, str(self.path), plain_bodies=plain, record_hint=self.record_hint)
            )
        opened.engine.stop_at_miss = decision.stops_at_miss  # the first miss ends replay (``on_miss``)
        return Replaying(opened, self.path, self.options, reports_mismatch=decision.reports_mismatch)

    def _open(self, mode: str, path: str | os.PathLike[str], serving: bool) -> Replayer | CassetteError:
        """The cassette, read to be replayed (its messages name ``path`` as given); when it doesn't exist, the
        error saying what records it. One that can't be read raises, as itself: never as an answer an SDK
        reads as the vendor's (a 400), nor after a request's retries."""
        try:
            replayer = Replayer(path, self.options, reuse=serving)
        except CassetteError as error:
            if error.problem != "no such cassette":
                if self.run is not None:
                    self.run.cassette_opened(self.path, mode)
                    self.run.cassette_closed(self.path, "unreadable")
                raise
            # A missing cassette: say what records it here (the marker's mode=, the option, the variable).
            hint = self.record_hint
            return CassetteError(error.path, None, error.problem, f"record it first: {hint}") if hint else error
        replayer.engine.record_hint = self.record_hint
        return replayer

    def _check_age(self, replayer: Replayer, mode: str, max_age: float) -> tuple[CassetteError | None, str]:
        """A replayed cassette recorded more than ``max_age`` days ago (its header's ``created``) is stale, and
        ``on_expiry`` says what that does: ``fail``, every request meets the CassetteError returned, naming its
        age and the fix (as a missing cassette's); ``record-on-miss``, the first request it can't answer is
        recorded (the mode returned: ``expired_mode``); ``warn`` (and record-on-miss), the pytest run is told,
        to say so once in its summary, or outside pytest a CassetteExpiredWarning."""
        header = replayer.engine.cassette.header
        age = header_age_days(header, datetime.datetime.now(datetime.UTC))
        if age is None or age <= max_age:
            return None, mode
        stale = f"stale cassette, {int(age)} days old (max_age {max_age:g} days; recorded {header['created']})"
        fix = f"re-record it against the real API ({self.record_hint or 'mode=record'}), or raise max_age"
        if self.options.on_expiry == "fail":
            return CassetteError(str(self.path), None, stale, fix), mode
        if self.options.on_expiry == "record-on-miss":
            ci = bool(os.environ.get("CI"))
            mode = expired_mode(mode, str(self.path), ci=ci, how_to_record=self.record_hint)
        if self.run is not None:
            self.run.cassette_stale(self.path, age, max_age)
        else:
            warnings.warn(CassetteExpiredWarning(f"cassette {self.path}: {stale}; {fix}"), stacklevel=_callers_level())
        return None, mode

    @property
    def mode(self) -> str:
        """The concrete mode (``auto`` decided; a stale cassette's replay may have become record-on-miss)."""
        return self.decision.mode

    @property
    def diverged_at(self) -> int | None:
        """record-on-miss: the call at which recording took over, or None."""
        return self.decision.diverged_at

    @property
    def replayer(self) -> Replayer | None:
        """The cassette read (replay, check, record-on-miss), or None."""
        return self.state.replayer

    @property
    def checker(self) -> ShapeChecker | None:
        """Mode check: each answer's shape compared with the recorded call's (``_check``)."""
        return self.state.checker

    @property
    def recorder(self) -> CassetteRecorder | None:
        """The recording, once one started."""
        return self.state.recorder

    _recorder = recorder  # the name the session had for it before its states

    @property
    def broken(self) -> CassetteError | None:
        """Why no request can be answered from the cassette (missing, refused, stale), or None."""
        return self.state.error

    @property
    def refused(self) -> int:
        """The requests answered with the cassette's diagnostic."""
        return self.state.requests if isinstance(self.state, Refused) else 0

    def refuse(self) -> CassetteError:
        """The diagnostic a request meets (``Step.REFUSE``), counted."""
        assert isinstance(self.state, Refused)
        return self.state.refuse()

    def _on_miss(self, call_index: int) -> None:
        """The first miss of record-on-miss (the decision calls this once, under its lock): the cut."""
        assert isinstance(self.state, Replaying)
        self.state = self.state.on_miss(call_index)

    def recording_takes_over(self, miss: ReplayMismatch) -> bool:
        """A miss of a request or WebSocket handshake answered elsewhere than ``_answer``: True when the
        recording takes over (record-on-miss), False when the mismatch is to be raised."""
        return self.decision.after_miss(miss.call_index, self._on_miss) is not Step.RAISE

    def _recording(self) -> CassetteRecorder:
        recorder = self.state.recorder
        if recorder is None:  # pragma: no cover - every recording step has a recorder by now
            raise RuntimeError(f"cassette {self.path} is not recording")
        return recorder

    def handle(self, request: Any, inner: Any) -> Any:
        step = self.decision.step_for(str(request.url))
        if step is Step.PASS_THROUGH:
            return inner.handle_request(request)
        if step is Step.CHECK:
            assert self.checker is not None
            return self.checker.handle(request, request.read(), inner)
        answer = None if step is Step.RECORD else self._answer(request, request.read(), step)
        return answer if answer is not None else self.record(request, inner)

    async def handle_async(self, request: Any, inner: Any) -> Any:
        step = self.decision.step_for(str(request.url))
        if step is Step.PASS_THROUGH:
            return await inner.handle_async_request(request)
        if step is Step.CHECK:
            assert self.checker is not None
            return await self.checker.handle_async(request, await request.aread(), inner)
        answer = None if step is Step.RECORD else self._answer(request, await request.aread(), step)
        return answer if answer is not None else await self.record_async(request, inner)

    def respond(self, request: Any, body: bytes) -> Any:
        """The answer to a request whose body was read, for a caller with no transport to pass it on to (a
        ``ReplayTransport``, ``serve``): from the cassette, or None when it is to be forwarded and recorded
        (record-on-miss)."""
        return self._answer(request, body, self.decision.step_for(str(request.url)))

    def replayed_call(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> RecordedCall | None:
        """The recorded call that answers a request of a client this session replays but never records
        (urllib3, ``_urllib3.py``), or None when the request is to go on to the network, unrecorded: the mode
        records, checks or is off, or a rule keeps the request out of the cassette (the network guard, on in
        replay, then refuses what is not allowed). A cassette that can't be read raises its diagnostic, and a
        miss raises ReplayMismatch, whatever the mode: recording can't take over a call it can't record."""
        step = self.decision.step_for(url)
        if step is Step.REFUSE:
            raise self.refuse()
        if step is not Step.REPLAY:
            return None
        assert self.replayer is not None
        return self.replayer.select(method, url, headers, body)

    def record(self, request: Any, inner: Any) -> Any:
        """Forward a request to ``inner`` and record the exchange."""
        self._note_sent(request, request.read())
        from ._recording import RecordingTransport

        return RecordingTransport(inner, recorder=self._recording()).handle_request(request)

    async def record_async(self, request: Any, inner: Any) -> Any:
        self._note_sent(request, await request.aread())
        from ._recording import AsyncRecordingTransport

        return await AsyncRecordingTransport(inner, recorder=self._recording()).handle_async_request(request)

    def _answer(self, request: Any, body: bytes, step: Step) -> Any:
        """What a request meets at ``step`` but passing it on: the cassette's response, an empty 204 or a
        refusal, the cassette's diagnostic, the mismatch (raised, or as an error response); None when it is
        to be recorded."""
        if step is Step.RECORD:
            return None
        if step in (Step.PASS_THROUGH, Step.EMPTY, Step.BLOCK):
            return kept_out(library_of(request), request, step, self.options.redactor())
        if step is Step.REFUSE:
            return self._failed(request, "cassette_error", self.refuse())
        assert self.replayer is not None
        try:
            return self.replayer.respond(request, body)
        except ReplayMismatch as miss:
            if not self.recording_takes_over(miss):
                return self._failed(request, "replay_mismatch", miss)
        return None

    def _failed(self, request: Any, error_type: str, error: Exception) -> Any:
        """``error`` raised, or as an error response when ``on_mismatch`` says so for this request."""
        if answers_with_error_response(self.options.on_mismatch, header_pairs(request.headers)):
            return error_response(library_of(request), error_type, error)
        raise error

    def _note_sent(self, request: Any, body: bytes) -> None:
        # What a test reads here is printed by a failing assert: values redacted as the cassette's are.
        try:
            self._note_redacted(request, body)
        except (RedactWithError, RedactionLimitError):
            pass  # a redact_with function that fails, too many secrets: the recording says so; the call goes on

    def _note_redacted(self, request: Any, body: bytes) -> None:
        redactor = self.options.redactor()
        pairs = header_pairs(request.headers)
        headers = redactor.redact_headers(pairs)
        content_type = next((value for name, value in pairs if name.lower() == "content-type"), "")
        encoding = ", ".join(value for name, value in pairs if name.lower() == "content-encoding")
        redacted = stored_body_bytes(stored_body(body, content_type, redactor, encoding=encoding))
        url = redact_url(str(request.url), redactor)
        with self._sent_lock:
            self._sent.append(CassetteRequest(request.method, url, headers, redacted, 0))

    @property
    def requests(self) -> list[CassetteRequest]:
        """The recorded calls' requests with their play counts (replay), then the requests recorded in this
        session."""
        found: list[CassetteRequest] = []
        if self.replayer is not None:
            engine = self.replayer.engine
            for call in engine.cassette.calls:
                found.append(
                    CassetteRequest(
                        call.method,
                        call.url,
                        list(call.request_headers),
                        stored_body_bytes(call.body),
                        int(engine.played[call.index]),
                    )
                )
        with self._sent_lock:
            return found + list(self._sent)

    @property
    def first_mismatch(self) -> ReplayMismatch | None:
        return self.state.first_mismatch()

    def raise_if_broken(self, *, unless_missing_and_unused: bool = False) -> None:
        """Raise why the cassette can't be read. ``unless_missing_and_unused``: not for a cassette that does
        not exist when no request asked for it (vcrpy lets such a test pass)."""
        state = self.state
        if not isinstance(state, Refused):
            return
        if unless_missing_and_unused and state.excused_when_unused():
            return
        raise state.error

    def unplayed_calls(self) -> list[tuple[int, str, str]]:
        """Recorded calls no request asked for (replay, record-on-miss before a miss; never in check, which
        compares shapes only)."""
        return self.state.unplayed_calls()

    def unplayed_labels(self) -> dict[int, str]:
        """What tells the unplayed calls apart: call index -> model and first words (``request_label``)."""
        if self.replayer is None:
            return {}
        from ._core.views._conversation import request_label  # a view: only to report unplayed calls

        calls = self.replayer.engine.cassette.calls
        labels = {}
        for index, _, url in self.unplayed_calls():
            body = calls[index].body
            label = request_label(url, body.get("json") if body is not None else None)
            if label:
                labels[index] = label
        return labels

    def unplayed_error(self) -> UnplayedCallsError | None:
        """The unplayed calls as the error that reports them, or None when every call was played."""
        unplayed = self.unplayed_calls()
        return UnplayedCallsError(str(self.path), unplayed, self.unplayed_labels()) if unplayed else None

    def assert_all_played(self) -> None:
        error = self.unplayed_error()
        if error is not None:
            raise error

    def close(self, failure: BaseException | None = None) -> None:
        """Commit a recording, or drop it when ``failure`` (or an exception propagating now) ended its block;
        tell the pytest run what became of the cassette."""
        self.closed = True
        self.state = self.state.on_close(failure if failure is not None else propagating())
        if self.run is not None:
            self.run.cassette_closed(self.path, self.outcome())
            if self.checker is not None:
                self.run.cassette_checked(self.path, self.checker.checked, self.checker.not_compared_text())

    def outcome(self) -> str:
        """What became of the cassette, for the end-of-run summary (the state's): off, not needed (no cassette,
        and no request asked for one), missing (a request asked for it), refused (a recording refused under
        CI), recorded, re-recorded, recorded unchanged (a re-record that left the file as it was), not saved
        (no call, or calls a cassette shouldn't keep: ``CallBook.why_not_saved``), failed, not saved (an
        exception ended its block: a failed test's), mismatched, checked or shape changed (mode check),
        unplayed (recorded calls nobody asked for; "unplayed, not checked" when ``unplayed="ignore"``, the
        compatibility mode's default), stale (older than max_age, with ``on_expiry="fail"``) or replayed. (A
        cassette that can't be read is "unreadable": it raises where it is opened.)"""
        return self.state.outcome()


def _callers_level() -> int:
    """The ``stacklevel`` of a warning that names the first frame outside vcr_transport (the caller of
    ``use_cassette()`` or ``transport()``, however deep the entry point is)."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = inspect.currentframe(), 0
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def open_session(path: str | os.PathLike[str], mode: str | None, options: Options) -> CassetteSession:
    """Resolve the mode (argument, pytest option, environment, pyproject, default), add the settings of
    ``[tool.vcr_transport]`` to ``options``, and open the cassette."""
    pyproject = find_pyproject()
    resolved = resolve_mode(mode, pyproject=pyproject)
    merged = options.with_settings(read_settings(pyproject), where=f"{pyproject} [tool.vcr_transport]")
    hint = how_to_record(resolved)
    exists = None
    if merged.shared_as and resolved.mode == "auto":  # a shared cassette exists for a test holding its calls
        from ._storage import holds_calls_of

        exists = holds_calls_of(Path(path), merged.shared_as)
    try:
        concrete = cassette_mode(resolved, Path(path), exists=exists)
    except CassetteError as refusal:  # auto or a configured record under CI, with no cassette to replay
        if not merged.missing_ok_unused:
            raise
        # The plugin's tests fail at their first request, as for a missing cassette; one with none passes.
        return CassetteSession(
            Path(path), "replay", resolved.source, merged, record_hint=hint, run=current_run(), refusal=refusal
        )
    return CassetteSession(Path(path), concrete, resolved.source, merged, record_hint=hint, run=current_run())


class ModeTransport(TransportLifecycle):
    """A transport whose behaviour the resolved mode decides: pass-through, record, replay, record-on-miss
    or check. One object serves a sync and an async client (google-genai takes both); each side's
    inner transport is created when first needed, from ``library``."""

    def __init__(
        self,
        session: CassetteSession,
        library: ModuleType,
        *,
        inner: SyncTransport | None = None,
        async_inner: AsyncTransport | None = None,
    ) -> None:
        self.session = session
        self.library = library
        self._inner = inner
        self._async_inner = async_inner
        self._sides = ClosingSides()

    def _inner_to_close(self, side: str) -> Any:
        return self._inner if side == "sync" else self._async_inner

    def _finish(self, failure: BaseException | None) -> None:
        self.session.close(failure)

    @property
    def inner(self) -> Any:
        if self._inner is None:
            self._inner = self.library.HTTPTransport()
        return self._inner

    @property
    def async_inner(self) -> Any:
        if self._async_inner is None:
            self._async_inner = self.library.AsyncHTTPTransport()
        return self._async_inner

    @property
    def mode(self) -> str:
        return self.session.mode

    @property
    def first_mismatch(self) -> ReplayMismatch | None:
        return self.session.first_mismatch

    def unplayed_calls(self) -> list[tuple[int, str, str]]:
        return self.session.unplayed_calls()

    def assert_all_played(self) -> None:
        self.session.assert_all_played()

    def handle_request(self, request: Any) -> Any:
        self._sides.use("sync")
        return self.session.handle(request, self.inner)

    async def handle_async_request(self, request: Any) -> Any:
        self._sides.use("async")
        return await self.session.handle_async(request, self.async_inner)


class ReplayTransport(TransportBase):
    """Answers each request from a cassette, byte- and chunk-exact. Holds no HTTP client, opens no socket:
    a session in replay mode, with no transport to pass a request on to.

    One object serves httpx and httpx2 clients, sync and async; responses are built from the request's own
    library. The options, as keywords or ``options=Options(...)``, are those of ``vcr_transport.Options``
    (``ordered``, ``pace``, ``max_retry_after``, ``on_mismatch``, ``ignore_headers``, ``compare_headers``,
    ``ignore_fields`` and the redaction rules the cassette was recorded with); unknown names and wrong values
    are refused.
    ``faults`` (``vcr_transport.Fault`` or their text) inject errors, cuts, stalls, delays and corrupt
    chunks. ``sleep`` and ``async_sleep`` are what ``pace``, delays and stalls wait with.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, options: Options | None = None, **arguments: Unpack[ReplayOptions]
    ) -> None:
        self.path = os.fspath(path)
        given = Options.of(options, arguments, where="ReplayTransport", entry="replay")
        self.session = CassetteSession(path, "replay", "argument", given)
        self.session.raise_if_broken()
        assert self.session.replayer is not None
        self.replayer = self.session.replayer
        self.engine = self.replayer.engine
        self.options = self.replayer.options  # with an imported cassette's match_on and ordered

    @property
    def sleep(self) -> Callable[[float], None]:
        return self.replayer.sleep

    @sleep.setter
    def sleep(self, sleep: Callable[[float], None]) -> None:
        self.replayer.sleep = sleep

    @property
    def async_sleep(self) -> Callable[[float], Awaitable[None]]:
        return self.replayer.async_sleep

    @async_sleep.setter
    def async_sleep(self, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.replayer.async_sleep = sleep

    @property
    def first_mismatch(self) -> ReplayMismatch | None:
        """The first mismatch seen, even if an SDK swallowed or wrapped it."""
        return self.session.first_mismatch

    def raise_first_mismatch(self) -> None:
        if self.first_mismatch is not None:
            raise self.first_mismatch

    def unplayed_calls(self) -> list[tuple[int, str, str]]:
        """(call index, method, URL) of every recorded call no request has asked for."""
        return self.session.unplayed_calls()

    def assert_all_played(self) -> None:
        unplayed = self.unplayed_calls()
        if unplayed:
            raise UnplayedCallsError(self.path, unplayed)

    def respond(self, request: Any, body: bytes) -> Any:
        """The answer to a request whose body was read (the sync and async sides share this)."""
        return self.session.respond(request, body)

    def handle_request(self, request: Any) -> Any:
        return self.respond(request, request.read())

    async def handle_async_request(self, request: Any) -> Any:
        return self.respond(request, await request.aread())

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.aclose()


# The HTTP library whose default transports ``transport()`` creates, by name.
Library = Literal["httpx2", "httpx"]


def _library(library: ModuleType | str | None) -> ModuleType:
    if isinstance(library, ModuleType):
        return library
    return importlib.import_module(library or "httpx2")


def _warn_on_drift(session: CassetteSession) -> None:
    """Mode check through a transport: it has no end to raise at, so each changed shape is a warning."""
    if session.checker is not None:
        session.checker.warn = True


def transport(
    path: str | os.PathLike[str],
    *,
    mode: Mode | None = None,
    inner: SyncTransport | None = None,
    async_inner: AsyncTransport | None = None,
    library: ModuleType | Library | None = None,
    options: Options | None = None,
    **arguments: Unpack[TransportOptions],
) -> ModeTransport:
    """A transport for the resolved mode (argument, pytest option, VCR_TRANSPORT_MODE, pyproject, auto).

    ``inner`` defaults to ``HTTPTransport()`` of httpx2, or of httpx with ``library="httpx"``; the same
    object also serves async clients, through ``async_inner`` (default ``AsyncHTTPTransport()``). Options
    are those of ``Options``, as keyword arguments or ``options=Options(...)``; the redaction options apply
    when recording too. In mode ``check`` each live answer whose shape changed is a ShapeDriftWarning as it
    ends (a transport has no end to raise at; ``use_cassette`` raises ShapeDriftError when its block ends).
    """
    given = Options.of(options, arguments, where="transport()", entry="transport")
    session = open_session(path, given.mode if mode is None else mode, given)
    _warn_on_drift(session)
    return ModeTransport(session, _library(library), inner=inner, async_inner=async_inner)


def async_transport(
    path: str | os.PathLike[str],
    *,
    mode: Mode | None = None,
    inner: AsyncTransport | None = None,
    sync_inner: SyncTransport | None = None,
    library: ModuleType | Library | None = None,
    options: Options | None = None,
    **arguments: Unpack[TransportOptions],
) -> ModeTransport:
    """``transport`` for async clients: ``inner`` is the async transport (default ``AsyncHTTPTransport()``)."""
    given = Options.of(options, arguments, where="async_transport()", entry="transport")
    session = open_session(path, given.mode if mode is None else mode, given)
    _warn_on_drift(session)
    return ModeTransport(session, _library(library), inner=sync_inner, async_inner=inner)
