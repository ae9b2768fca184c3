"""The modes, and the decision each request meets. No I/O: the caller says whether the cassette exists and
whether ``CI`` is set; the shells only carry out the step decided here.

| mode             | what a request meets                                                              |
|------------------|-----------------------------------------------------------------------------------|
| ``off``          | pass-through; no cassette is touched                                              |
| ``record``       | forwarded and recorded into a fresh cassette                                      |
| ``replay``       | answered from the cassette; a miss is an error                                    |
| ``record-on-miss`` | replayed while requests match; from the first miss on, forwarded and recorded   |
| ``auto``         | ``replay`` when the cassette exists, else ``record`` (never under ``CI``)         |

A cassette that can't be read refuses every request (fails closed) in every mode that would read it.
To add a mode: add it to ``MODES``, to ``concrete_mode`` if it resolves to another, and to ``Decision``.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable

from .._exceptions import CassetteError, ModeError

__all__ = ["ENVIRONMENT_VARIABLE", "MODES", "Decision", "Step", "check_mode", "concrete_mode"]

MODES = ("off", "record", "replay", "record-on-miss", "auto")
ENVIRONMENT_VARIABLE = "VCR_TRANSPORT_MODE"


def check_mode(name: str, source: str) -> str:
    """``name`` when it is a mode; else a ModeError naming where it came from and the valid modes."""
    if name not in MODES:
        raise ModeError(f"unknown vcr_transport mode {name!r} (from {source}); valid modes: {', '.join(MODES)}")
    return name


def concrete_mode(mode: str, path: str, *, exists: bool, ci: bool, how_to_record: str) -> str:
    """``auto`` made into ``replay`` or ``record`` for one cassette; other modes as they are."""
    if mode != "auto":
        return mode
    if exists:
        return "replay"
    if ci:
        raise CassetteError(
            path,
            None,
            "no such cassette, and auto mode never records when CI is set",
            f"record it where the real API is reachable: {how_to_record}; then commit it",
        )
    return "record"


class Step(enum.Enum):
    """What the shell does with a request."""

    PASS_THROUGH = "pass-through"  # send it to the inner transport, record nothing
    REFUSE = "refuse"  # the cassette can't be read: answer with its diagnostic
    REPLAY = "replay"  # answer it from the cassette
    RECORD = "record"  # forward it and record the exchange
    RAISE = "raise"  # after a miss in replay: the mismatch reaches the caller


class Decision:
    """The state of one cassette in one concrete mode: which step the next request meets, and what a replay
    miss turns into. Thread-safe: the first miss of record-on-miss switches to recording exactly once."""

    def __init__(self, mode: str, *, readable: bool, exists: bool) -> None:
        if mode not in MODES or mode == "auto":
            raise ValueError(f"a decision needs a concrete mode, not {mode!r}")
        self.mode = mode
        self.readable = readable
        # record-on-miss with no cassette yet records from the first call.
        self.recording = mode == "record" or (mode == "record-on-miss" and readable and not exists)
        self.diverged_at: int | None = None
        self._lock = threading.Lock()

    @property
    def reads_cassette(self) -> bool:
        return self.mode == "replay" or (self.mode == "record-on-miss" and not self.recording)

    def next_step(self) -> Step:
        if self.mode == "off":
            return Step.PASS_THROUGH
        if not self.readable:
            return Step.REFUSE
        return Step.RECORD if self.recording else Step.REPLAY

    def after_miss(self, call_index: int, start_recording: Callable[[int], None]) -> Step:
        """A replayed request missed at ``call_index``: replay raises; record-on-miss records from there on.
        The first miss calls ``start_recording(call_index)`` (under a lock, before any request can meet the
        RECORD step); later misses find it started."""
        if self.mode != "record-on-miss":
            return Step.RAISE
        with self._lock:
            if not self.recording:
                start_recording(call_index)
                self.diverged_at = call_index
                self.recording = True
        return Step.RECORD
