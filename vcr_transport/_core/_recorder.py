"""Where a recorded stream's protocol ends (``ProtocolEnd``), with no I/O: asked by the call recorder
(``_call_recording``) when a stream stops before its own end.
"""

from __future__ import annotations

import json

import ahocorasick_rs

__all__ = ["ProtocolEnd"]


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
