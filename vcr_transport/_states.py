"""The states of a session: what one cassette opened in one mode is now, and what became of it.

A ``CassetteSession`` (``_session.py``) holds one state, a value; its outcome (the end-of-run summary's word)
is the state's, and a transition gives the next state:

| state       | the session is                                                   | outcome                          |
|-------------|------------------------------------------------------------------|----------------------------------|
| ``Off``     | in mode off: nothing read, nothing written                       | off                              |
| ``Refused`` | without a cassette to use (missing, refused under CI, stale with | missing, refused, not needed,    |
|             | ``on_expiry="fail"``): every request meets the diagnostic        | stale                            |
| ``Replaying`` | answering from the cassette (replay; record-on-miss until its  | replayed, unplayed (not          |
|             | first miss)                                                      | checked), mismatched             |
| ``Checking`` | in mode check: live answers, shapes compared with the recording | checked, shape changed           |
| ``Recording`` | forwarding and recording (record; record-on-miss from its      | recorded, re-recorded, recorded  |
|             | first miss, or with no cassette yet; serve's appending)          | unchanged, not saved, failed,    |
|             |                                                                  | not saved                        |

Transitions: ``Replaying.on_miss(call_index)`` is record-on-miss's cut (the calls this run replayed are kept,
the new ones recorded after them); ``Replaying.on_record_start()`` and ``Recording.fresh()`` start a
recording with the cassette (serve's appending keeps every recorded call, a record mode none);
``on_close(failure)``, on every state, commits or drops a recording. *When* a transition happens is the
mode's ``Decision`` (``_core/engine/_modes.py``): it calls ``on_miss`` once, under its lock, at the first miss.
A state holds its objects (the replayer, the recorder, the checker); their I/O is theirs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ._core.format._format import lines_before_call, lines_of_calls
from ._exceptions import CassetteError, ReplayMismatch

if TYPE_CHECKING:  # the recording's module is imported by the transitions that start one, not by a replay
    from ._check import ShapeChecker
    from ._core.engine._options import Options
    from ._recording import CassetteRecorder
    from ._replay import Replayer

__all__ = ["Checking", "Off", "Recording", "Refused", "Replaying", "SessionState"]


class SessionState:
    """What every state answers; a state with no replayer, recorder or checker answers None."""

    __slots__ = ()
    replayer: Replayer | None = None
    recorder: CassetteRecorder | None = None
    checker: ShapeChecker | None = None
    error: CassetteError | None = None  # why no request can be answered (``Refused``)

    def on_close(self, failure: BaseException | None) -> SessionState:
        """The session closed (``failure``: what ended its block, if an exception did)."""
        return self

    def outcome(self) -> str:
        raise NotImplementedError

    def first_mismatch(self) -> ReplayMismatch | None:
        """The first mismatch replay saw (mode replay only)."""
        return None

    def unplayed_calls(self) -> list[tuple[int, str, str]]:
        """Recorded calls no request asked for (replay, record-on-miss before a miss; never in check, which
        compares shapes only, nor once recording)."""
        return []


class Off(SessionState):
    """Mode off: every request passes through; no cassette is touched."""

    __slots__ = ()

    def outcome(self) -> str:
        return "off"


class Refused(SessionState):
    """No cassette to answer from: ``error`` (the cassette's diagnostic) is what every request meets, and
    ``requests`` counts them. ``kind``: ``missing`` (no such cassette), ``refused`` (the mode refused it under
    CI: ``concrete_mode``), ``stale`` (older than max_age, ``on_expiry="fail"``). ``existed``: the file is there
    (for a shared cassette: it holds the test's calls)."""

    __slots__ = ("error", "existed", "kind", "replayer", "requests")
    error: CassetteError

    def __init__(
        self,
        error: CassetteError,
        kind: Literal["missing", "refused", "stale"],
        *,
        existed: bool,
        replayer: Replayer | None = None,
    ) -> None:
        self.error = error
        self.kind = kind
        self.existed = existed
        self.replayer = replayer  # a stale cassette, read: its calls are the test's requests, all unplayed
        self.requests = 0

    def refuse(self) -> CassetteError:
        """The diagnostic a request meets (counted: a test no request of which met it may pass)."""
        self.requests += 1
        return self.error

    def excused_when_unused(self) -> bool:
        """A cassette that isn't there (or that the mode refused) when no request asked for it: vcrpy lets such
        a test pass."""
        return (not self.existed or self.kind == "refused") and self.requests == 0

    def unplayed_calls(self) -> list[tuple[int, str, str]]:
        return self.replayer.engine.unplayed() if self.replayer is not None else []

    def outcome(self) -> str:
        if self.kind == "stale":
            return "stale"
        if self.kind == "refused" and self.existed:
            return "refused" if self.requests else "not needed"
        return "missing" if self.requests else "not needed"


class Replaying(SessionState):
    """Answering from the cassette. ``reports_mismatch``: a miss is the run's mismatch (replay; record-on-miss
    records it instead). ``path``, ``options`` and ``pid`` (the process that opened it: a forked child replays
    but never records) are what the cut needs."""

    __slots__ = ("options", "path", "pid", "replayer", "reports_mismatch")
    replayer: Replayer

    def __init__(self, replayer: Replayer, path: Path, options: Options, *, reports_mismatch: bool) -> None:
        self.replayer = replayer
        self.path = path
        self.options = options
        self.pid = os.getpid()
        self.reports_mismatch = reports_mismatch

    def on_miss(self, call_index: int) -> Recording:
        """record-on-miss's first miss, at ``call_index``: keep exactly the calls this run replayed (in file
        order, renumbered 0, 1, 2...; byte for byte where their number stays), the new calls numbered after
        them. The kept calls of a group the run was in the middle of have their call_end written after the
        first new request, so the calls recorded next count as concurrent with them and the cassette replays
        in the orders this run can take. When replay did not stop at the miss, the calls before
        ``call_index``."""
        engine = self.replayer.engine
        if engine.kept is None:
            return self._recording_from(call_index)
        self._refuse_in_fork()
        origin = engine.cassette.origin  # a shared cassette: the test's calls' numbers in the file
        played, still_open = engine.kept, engine.open_calls
        if origin is not None:
            played, still_open = tuple(origin[i] for i in played), tuple(origin[i] for i in still_open)
        kept, deferred = lines_of_calls(self.path.read_bytes(), played, still_open)
        from ._recording import CassetteRecorder

        recorder = CassetteRecorder.from_options(
            self.path, self.options, kept_lines=kept, deferred_lines=deferred, first_index=len(engine.kept)
        )
        return Recording(recorder, existed=True, replayer=self.replayer)

    def on_record_start(self) -> Recording:
        """serve's appending: the recording starts with the cassette, every recorded call kept (they go on
        answering), each miss recorded after them."""
        return self._recording_from(len(self.replayer.calls))

    def _recording_from(self, call_index: int) -> Recording:
        self._refuse_in_fork()
        kept = lines_before_call(self.path.read_bytes(), call_index) if call_index else []
        from ._recording import CassetteRecorder

        recorder = CassetteRecorder.from_options(self.path, self.options, kept_lines=kept, first_index=call_index)
        return Recording(recorder, existed=True, replayer=self.replayer)

    def _refuse_in_fork(self) -> None:
        if os.getpid() != self.pid:  # record-on-miss in a forked child: the cassette is its parent's
            from ._recording import forked_child_error

            raise forked_child_error(str(self.path), self.pid)

    def first_mismatch(self) -> ReplayMismatch | None:
        return self.replayer.engine.first_mismatch if self.reports_mismatch else None

    def unplayed_calls(self) -> list[tuple[int, str, str]]:
        return self.replayer.engine.unplayed()

    def outcome(self) -> str:
        if self.first_mismatch() is not None:
            return "mismatched"
        if not self.unplayed_calls():
            return "replayed"
        return "unplayed, not checked" if self.options.unplayed == "ignore" else "unplayed"


class Checking(SessionState):
    """Mode check: each request answered live, its answer's shape compared with the recorded call's
    (``_check.ShapeChecker``); nothing written."""

    __slots__ = ("checker", "replayer")
    replayer: Replayer
    checker: ShapeChecker

    def __init__(self, replayer: Replayer, checker: ShapeChecker) -> None:
        self.replayer = replayer
        self.checker = checker

    def outcome(self) -> str:
        return "shape changed" if self.checker.findings else "checked"


class Recording(SessionState):
    """Forwarding and recording into ``recorder``. ``existed``: a cassette was there before (re-recorded);
    ``replayer``: the cassette replayed before the recording took over (record-on-miss, serve), kept for its
    requests; ``ended_by``: what ended the block, once closed, when an exception did."""

    __slots__ = ("ended_by", "existed", "recorder", "replayer")
    recorder: CassetteRecorder

    def __init__(
        self,
        recorder: CassetteRecorder,
        *,
        existed: bool,
        replayer: Replayer | None = None,
        ended_by: BaseException | None = None,
    ) -> None:
        self.recorder = recorder
        self.existed = existed
        self.replayer = replayer
        self.ended_by = ended_by

    @classmethod
    def fresh(cls, path: Path, options: Options, *, existed: bool) -> Recording:
        """A recording that starts with the cassette and keeps none of it (record; record-on-miss of a
        cassette not there yet)."""
        from ._recording import CassetteRecorder

        return cls(CassetteRecorder.from_options(path, options), existed=existed)

    def on_close(self, failure: BaseException | None) -> Recording:
        """Commit the recording, or drop it when ``failure`` ended its block."""
        self.recorder.close(failure)
        return Recording(self.recorder, existed=self.existed, replayer=self.replayer, ended_by=failure)

    def outcome(self) -> str:
        if self.recorder.unchanged:
            return "recorded unchanged"
        if not self.recorder.saved:
            return "not saved" if self.ended_by is None else "failed, not saved"
        return "re-recorded" if self.existed else "recorded"
