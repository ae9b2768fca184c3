"""Server-sent events: the one decoder of ``text/event-stream`` bytes, by the rules of the WHATWG HTML
standard ("9.2.5 Parsing an event stream", "9.2.6 Interpreting an event stream"), fed in chunks cut
anywhere. No I/O.

- Lines end at CRLF, LF or CR (a CRLF split between two chunks is one line end); one leading UTF-8 byte
  order mark is skipped.
- A line starting with ``:`` is a comment. Any other line is a field: its name up to the first ``:`` (the
  whole line when it has none), its value after it with one leading space removed. ``event`` sets the
  event's type, ``data`` adds a line to its data, ``id`` sets the last event ID (kept from event to event;
  ignored when it holds a NUL), ``retry`` the reconnection time (when it is ASCII digits). Other fields are
  ignored.
- A blank line ends an event. The standard dispatches it only when it has data (``Event.dispatched``); the
  decoder gives every event that has a line, so that a view can show comments and events without data. The
  event a stream ends in the middle of is not dispatched (``SseDecoder.close`` gives it, read).

The decoder works on bytes: every character the rules name is ASCII, and no byte of a UTF-8 sequence is,
so this is the standard's reading of the stream's text, each field still to be decoded from UTF-8 by
whoever reads it. ``ProtocolEnd`` watches a stream for the event after which its vendor's protocol has
nothing more to say.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import NamedTuple

import ahocorasick_rs

from .._memo import lazy_pattern
from ._format import decode_json

__all__ = ["Event", "ProtocolEnd", "SseDecoder", "data_of", "decode_events"]

_BOM = b"\xef\xbb\xbf"
# A blank line: a line end followed by another (a CR is a line end of its own unless an LF follows it).
_BLANK_LINE = lazy_pattern(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)")
_LONGEST_BLANK_LINE = 4  # b"\r\n\r\n"


class Event(NamedTuple):
    """One event: the lines before a blank line, read. ``type`` is b"" when no ``event`` field set one (the
    standard's "message"); ``data`` is the ``data`` values joined by LF; ``id`` the last event ID when the
    event ended; ``retry`` the reconnection time it set (None: none); ``lines`` its lines as they came
    (without their line ends, comments included); ``data_lines`` the number of its ``data`` fields;
    ``start`` and ``end`` where its bytes start and its blank line ends in the bytes fed."""

    type: bytes
    data: bytes
    id: bytes
    retry: int | None
    lines: tuple[bytes, ...]
    data_lines: int
    start: int
    end: int

    @property
    def dispatched(self) -> bool:
        """Whether the standard dispatches this event: it has data (perhaps empty)."""
        return self.data_lines > 0


_new_event = functools.partial(tuple.__new__, Event)  # Event(*fields), without NamedTuple's Python __new__


class SseDecoder:
    """``feed(bytes)`` gives the events that these bytes end, in order."""

    __slots__ = ("_after_cr", "_edge", "_pieces", "_start", "_started", "last_event_id")

    def __init__(self) -> None:
        self._pieces: list[bytes] = []  # the bytes of the event not yet ended
        self._edge = b""  # the last few of them, where a blank line may start
        self._start = 0  # where they start in the bytes fed
        self._after_cr = False  # the last blank line ended with a CR: an LF right after it ends nothing
        self._started = False  # past the byte order mark, if any
        self.last_event_id = b""

    def feed(self, data: bytes, wanted: ahocorasick_rs.BytesAhoCorasick | None = None) -> list[Event]:
        """The events ended in ``data``. With ``wanted`` (a finder of byte strings), those before the first
        one whose bytes hold one of them are passed over unread (their ``id`` too)."""
        if not self._started or self._after_cr:
            data = self._skip(data)
        probe = self._edge + data
        if not data or not _holds_blank_line(probe):
            if data:
                self._pieces.append(data)
                self._edge = probe[-_LONGEST_BLANK_LINE + 1 :]
            return []
        buffer = b"".join([*self._pieces, data])
        end = _last_blank_line_end(buffer, len(buffer) - len(probe))
        complete, rest = buffer[:end], buffer[end:]
        start = self._start
        self._pieces, self._edge = ([rest] if rest else []), rest[-_LONGEST_BLANK_LINE + 1 :]
        self._start += end
        self._after_cr = not rest and complete.endswith(b"\r")  # an LF may come next, ending nothing
        skip = 0
        if wanted is not None:
            found = wanted.find_matches_as_indexes(complete)
            if not found:
                return []
            skip = _last_blank_line_end(complete, 0, found[0][1])
        return [self._event(block, start + at, start + until) for block, at, until in _blocks(complete, skip)]

    def close(self) -> Event | None:
        """The event the stream ended in the middle of, read as if its blank line had come (the standard
        discards it; a view shows it, and redaction searches it), or None."""
        pending = b"".join(self._pieces)
        self._pieces, self._edge = [], b""
        if not pending.strip(b"\r\n"):
            return None
        return self._event(pending, self._start, self._start + len(pending))

    def _skip(self, data: bytes) -> bytes:
        """``data`` without the LF of a CRLF whose CR ended the last blank line, and without the byte order
        mark at the stream's start (held until it can be told apart)."""
        if self._after_cr and data:
            self._after_cr = False
            if data[:1] == b"\n":
                data = data[1:]
                self._start += 1
        if not self._started:
            data = b"".join([*self._pieces, data])
            self._pieces = []
            if len(data) < len(_BOM) and _BOM.startswith(data):
                self._pieces = [data] if data else []
                return b""
            self._started = True
            if data.startswith(_BOM):
                data = data[len(_BOM) :]
                self._start += len(_BOM)
        return data

    def _event(self, block: bytes, start: int, end: int) -> Event:
        lines = block.splitlines()  # at CRLF, LF and CR only (bytes)
        if not lines[0]:  # the blank lines before the event
            lines = [line for line in lines if line]
        kind, data, retry = b"", [], None
        for line in lines:
            name, _, value = line.partition(b":")
            if not name:  # a comment
                continue
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                data.append(value)
            elif name == b"event":
                kind = value
            elif name == b"id":
                if b"\0" not in value:
                    self.last_event_id = value
            elif name == b"retry" and value.isdigit():
                retry = int(value)
        return _new_event((kind, b"\n".join(data), self.last_event_id, retry, tuple(lines), len(data), start, end))


def _holds_blank_line(data: bytes) -> bool:
    return b"\n\n" in data if b"\r" not in data else _BLANK_LINE.search(data) is not None


def _last_blank_line_end(data: bytes, start: int = 0, end: int | None = None) -> int:
    """Where the last blank line in ``data[start:end]`` ends (``start`` when there is none)."""
    end = len(data) if end is None else end
    if b"\r" not in data:
        found = data.rfind(b"\n\n", start, end)
        return found + 2 if found >= 0 else start
    last = start
    for match in _BLANK_LINE.finditer(data, start, end):
        last = match.end()
    return last


def _blocks(data: bytes, start: int) -> Iterator[tuple[bytes, int, int]]:
    """The bytes of each event of ``data[start:]`` (which ends with a blank line) that has a line, with
    where the event starts and where its blank line ends."""
    position = start
    if b"\r" not in data:
        for block in data[start:].split(b"\n\n")[:-1]:
            end = position + len(block) + 2
            if block.strip(b"\n"):
                yield block, position, end
            position = end
        return
    for match in _BLANK_LINE.finditer(data, start):
        block = data[position : match.start()]
        if block.strip(b"\r\n"):
            yield block, position, match.end()
        position = match.end()


def decode_events(data: bytes) -> list[Event]:
    """The events of a whole stream, the one it ends in the middle of (``SseDecoder.close``) last."""
    decoder = SseDecoder()
    events = decoder.feed(data)
    unfinished = decoder.close()
    return events if unfinished is None else [*events, unfinished]


def data_of(body: bytes) -> list[bytes]:
    """The data of each event of a whole stream that has data: ``[event.data for event in
    decode_events(body) if event.dispatched]``. A stream of ``data: `` lines each followed by a blank line
    (what openai sends) is cut apart at its blank lines, with no loop over its events."""
    if body.startswith(b"data: ") and body.endswith(b"\n\n") and b"\r" not in body:
        data = body.split(b"\n\ndata: ")
        data[0] = data[0][6:]
        data[-1] = data[-1][:-2]
        if b"\n" not in b"".join(data):  # no other line (a copy and a memchr: far cheaper than a count)
            return data
    return [event.data for event in decode_events(body) if event.dispatched]


# What the data of an event that ends a protocol holds (the type of an anthropic or Responses API event is in
# its data too), and so the bytes of that event: worth a JSON parse.
_END_MARKERS = (
    b"message_stop",
    b"response.completed",
    b"response.failed",
    b"response.incomplete",
    b"finishReason",
    b'"jsonrpc"',
)
# The first found in one pass (leftmost-first lets the finder skip ahead on the patterns' first bytes).
_ANY_END = ahocorasick_rs.BytesAhoCorasick([b"[DONE]", *_END_MARKERS], matchkind=ahocorasick_rs.MatchKind.LeftmostFirst)
_END_TYPES = frozenset({"message_stop", "response.completed", "response.failed", "response.incomplete"})


class ProtocolEnd:
    """Watches a server-sent-events stream for the event after which the vendor's protocol has nothing
    more to say: openai's ``data: [DONE]``, anthropic's ``message_stop``, the Responses API's
    ``response.completed`` / ``response.failed`` / ``response.incomplete``, a Gemini event whose every
    candidate carries a ``finishReason``, and in the answer to a POSTed request (``answers_post``) a JSON-RPC
    response: an MCP server's answer to the request, after which its client closes the stream (on a GET's
    stream, MCP's standalone stream or its older SSE transport, responses don't end it). An event counts
    once its blank line has arrived."""

    __slots__ = ("_decoder", "_json_rpc", "ended")

    def __init__(self, *, answers_post: bool = True) -> None:
        self.ended = False
        self._json_rpc = answers_post
        self._decoder = SseDecoder()

    def feed(self, chunk: bytes) -> None:
        if not self.ended:
            # Events that hold no marker can't end the protocol: those before the first that does are
            # passed over unread.
            json_rpc = self._json_rpc
            self.ended = any(_ends_protocol(event, json_rpc) for event in self._decoder.feed(chunk, _ANY_END))


def _ends_protocol(event: Event, json_rpc: bool) -> bool:
    data = event.data
    if data == b"[DONE]" or event.type == b"message_stop":
        return True
    return any(marker in data for marker in _END_MARKERS) and _ends_by_its_json(data, json_rpc)


def _ends_by_its_json(data: bytes, json_rpc: bool) -> bool:
    """An event whose JSON is of an ending type, a Gemini event whose every candidate has finished, or (when
    ``json_rpc``) a JSON-RPC 2.0 response (an ``id`` with a ``result`` or an ``error``; a request or
    notification has a ``method``)."""
    try:
        obj = decode_json(data)
    except ValueError:
        return False
    if not isinstance(obj, dict):
        return False
    if obj.get("jsonrpc") == "2.0":
        return json_rpc and "id" in obj and "method" not in obj and ("result" in obj or "error" in obj)
    candidates = obj.get("candidates")
    return obj.get("type") in _END_TYPES or (
        isinstance(candidates, list)
        and bool(candidates)
        and all(isinstance(c, dict) and c.get("finishReason") for c in candidates)
    )
