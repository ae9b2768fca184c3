"""The recorder's bookkeeping, with no I/O: call numbers, what each call got and how it ended, whether the
recording was interrupted, whether it is worth saving, and where a stream's protocol ends.

The recording shell (``_recording.py``) holds the locks and the file; this module only decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._sse import ProtocolEnd  # where a stream's protocol ends: watched on the one SSE decoder

__all__ = ["CREDENTIAL_REFUSALS", "CallBook", "CallRecord", "ProtocolEnd", "garbled_structure"]

# Statuses that say the request's credentials were refused: recording them captures a setup mistake.
CREDENTIAL_REFUSALS = frozenset({401, 403})

FAILURES_FIX = (
    "fix the cause and record again; to keep recordings of failures on purpose (tests of your error "
    "handling), pass keep_failures=True"
)


@dataclass
class CallRecord:
    """One call of the recording: its number, the status it got (None: no response), how it ended."""

    index: int
    status: int | None = None
    outcome: str | None = None
    error: str = ""

    @property
    def ended(self) -> bool:
        return self.outcome is not None

    @property
    def failure(self) -> str:
        """Why this call alone is not worth replaying ("" when it is)."""
        if self.status is None and self.outcome is not None:
            return f"call {self.index} got no response ({self.error or self.outcome})"
        if self.status in CREDENTIAL_REFUSALS:
            return f"call {self.index} was refused for its credentials (status {self.status})"
        return ""


@dataclass
class CallBook:
    """The calls of one recording, numbered from ``first_index`` (after ``kept_calls`` copied ones)."""

    first_index: int = 0
    kept_calls: int = 0
    calls: dict[int, CallRecord] = field(default_factory=dict)
    interrupted: str = ""
    broken: str = ""
    _next: int = -1

    def __post_init__(self) -> None:
        self._next = self.first_index

    def open_call(self) -> CallRecord:
        record = CallRecord(self._next)
        self._next += 1
        self.calls[record.index] = record
        return record

    @staticmethod
    def end(record: CallRecord, outcome: str, error: str = "") -> bool:
        """Mark ``record`` ended; False when it already was (its call_end must not be written twice)."""
        if record.ended:
            return False
        record.outcome = outcome
        record.error = error
        return True

    def interrupt(self, reason: str) -> None:
        """The recording did not finish (a signal, an exception ending the block): it must not be saved."""
        self.interrupted = self.interrupted or reason

    def break_down(self, reason: str) -> None:
        """The recorder itself failed (a write error, a bug): nothing it wrote can be trusted."""
        self.broken = self.broken or reason

    def why_not_saved(self, *, keep_failures: bool) -> str:
        """The reason this recording must not replace the cassette, or "" when it may."""
        if self.broken:
            return self.broken
        if self.interrupted:
            return f"the recording did not finish: {self.interrupted}"
        if not self.calls and not self.kept_calls:
            return "no call went through the recording transport"
        if keep_failures:
            return ""
        # A failure followed by a call that got a real answer is a retry that succeeded: the SDK's real
        # sequence, kept whole. A failure with nothing good after it is the recording.
        answered = [r.index for r in self.calls.values() if r.status is not None and not r.failure]
        last_answered = max(answered, default=self.first_index - 1)
        for record in sorted(self.calls.values(), key=lambda r: r.index):
            if record.failure and record.index > last_answered:
                return f"{record.failure}; {FAILURES_FIX}"
        return ""


def garbled_structure(url: str, headers: list[tuple[str, str]], placeholder: str) -> str:
    """Why a redacted request line must not be written, or "": redaction put ``placeholder`` where only
    structure stands (the URL's host, the ``Host`` header, a header's name). Only credentials are learned
    (see ``_redaction.is_structure``), so this means a bug: the cassette would not be readable, or would
    not replay."""
    if placeholder in url:
        authority = url.partition("://")[2].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        if placeholder in authority.rpartition("@")[2]:  # userinfo may hold a removed password
            return f"the URL's host ({url})"
    for name, value in headers:
        if placeholder in name:
            return f"a header's name ({name!r})"
        if placeholder in value and name.lower() == "host":
            return f"the Host header ({value!r})"
    return ""
