"""The recorder's bookkeeping, with no I/O: call numbers, what each call got and how it ended, whether the
recording was interrupted, whether it is worth saving, and where a stream's protocol ends.

The recording shell (``_recording.py``) holds the locks and the file; this module only decides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import ahocorasick_rs

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


# Markers whose presence in an event's data is worth a JSON parse.
_END_MARKERS = (b"message_stop", b"response.completed", b"response.failed", b"response.incomplete", b"finishReason")
_END_TYPES = frozenset({"message_stop", "response.completed", "response.failed", "response.incomplete"})
# What an event that ends the protocol holds in its name or data, and so in the stream's bytes: the first
# found in one pass (leftmost-first lets the finder skip ahead on the patterns' first bytes).
_ANY_END = ahocorasick_rs.BytesAhoCorasick([b"[DONE]", *_END_MARKERS], matchkind=ahocorasick_rs.MatchKind.LeftmostFirst)


class ProtocolEnd:
    """Watches a server-sent-events stream for the event after which the vendor's protocol has nothing
    more to say: openai's ``data: [DONE]``, anthropic's ``message_stop``, the Responses API's
    ``response.completed`` / ``response.failed`` / ``response.incomplete``, a Gemini event whose every
    candidate carries a ``finishReason``. An event counts once its blank line has arrived."""

    __slots__ = ("_after_cr", "_data", "_line", "_name", "_unread", "ended")

    def __init__(self) -> None:
        self.ended = False
        self._line = b""
        self._name = b""
        self._data: list[bytes] = []
        self._after_cr = False
        self._unread = b""  # bytes after the last blank line, when nothing before it was left unfinished

    def feed(self, chunk: bytes) -> None:
        if self.ended or not chunk:
            return
        if self._unread:
            chunk, self._unread = self._unread + chunk, b""
        if not (self._line or self._data or self._name):
            # Nothing pending: every event that ends at a blank line (the second line break of "\n\n" or
            # "\n\r\n", whatever came before it) before the first marker of a protocol end is passed
            # over unread, since it can't be one. What follows the last such blank line is read now when
            # a marker is there, else kept unread until more comes.
            found = _ANY_END.find_matches_as_indexes(chunk)
            limit = found[0][1] if found else len(chunk)
            lf, crlf = chunk.rfind(b"\n\n", 0, limit), chunk.rfind(b"\n\r\n", 0, limit)
            blank = max(lf + 2 if lf >= 0 else 0, crlf + 3 if crlf >= 0 else 0)
            if blank:
                chunk, self._after_cr = chunk[blank:], False
                if limit == len(chunk) + blank:
                    self._unread = chunk
                    return
        if self._after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]  # the rest of a CRLF split across two chunks
        self._after_cr = chunk[-1:] == b"\r"
        lines = (self._line + chunk).splitlines(keepends=True)
        self._line = b"" if lines and lines[-1][-1:] in (b"\r", b"\n") else lines.pop() if lines else b""
        for line in lines:
            self._take(line.rstrip(b"\r\n"))
            if self.ended:
                return

    def _take(self, line: bytes) -> None:
        if not line:
            self._dispatch()
        elif line.startswith(b"data:"):
            self._data.append(line[5:].removeprefix(b" "))
        elif line.startswith(b"event:"):
            self._name = line[6:].strip()

    def _dispatch(self) -> None:
        name, data = self._name, b"\n".join(self._data)
        self._name, self._data = b"", []
        if data == b"[DONE]" or name == b"message_stop":
            self.ended = True
        elif any(marker in data for marker in _END_MARKERS):
            self.ended = _ends_protocol(data)


def _ends_protocol(data: bytes) -> bool:
    try:
        obj = json.loads(data)
    except ValueError:
        return False
    if not isinstance(obj, dict):
        return False
    if obj.get("type") in _END_TYPES:
        return True
    candidates = obj.get("candidates")
    return (
        isinstance(candidates, list)
        and bool(candidates)
        and all(isinstance(c, dict) and c.get("finishReason") for c in candidates)
    )
