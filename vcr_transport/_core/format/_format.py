"""Cassette format v1: the line schema, the one encoder of each line type, the one reader and checker. No
I/O: the shells hand in bytes and blocks of bytes. A change to the format touches this module alone.

One JSON object per line, written as things happen:

    header     {"type": "header", "format_version": 1, ...optional metadata}
    request    {"type": "request", "call_index", "method", "url", "headers": [[name, value]...], "body",
                "test"?}
    response   {"type": "response", "call_index", "status", "headers", "http_version"}
    event      {"type": "event", "call_index", "event_index", "t", "text" | "base64"}
    call_end   {"type": "call_end", "call_index", "event_count", "outcome", "error"?, "early_stop"?, "close"?}
    message    {"type": "message", "call_index", "message_index", "t", "from": "client" | "server",
                "text" | "base64"}

``outcome`` is ``complete``, ``closed_early`` (the code closed the response before its end) or ``error``.
``"early_stop": "intended"`` (only with ``closed_early``) says the test that recorded it stopped the stream on
purpose (``early_stop_ok``): ``verify --strict`` accepts such a call, and still refuses an accidental one.

A request body is ``null``, ``{"json": value}``, ``{"text": str}`` or ``{"base64": str}``. ``test`` (optional)
is the owner of the call in a cassette several tests share: the pytest node id of the test that made it
(``merge_shared`` writes it; the header of such a cassette says ``"shared": true``). A cassette without
owners is read as it always was.

A WebSocket session is a call too: its request line is the opening handshake (method GET, a ``ws://`` or
``wss://`` URL, the handshake's headers), its response line the server's answer (101 and its headers), then
one ``message`` line per message in either direction, in the order the client sent or received them (``t``:
seconds since the handshake; a text message as ``text``, a binary one as ``base64``), and its call_end says
how it closed: ``close`` {"code", "reason", "by": "client" | "server" | null (no closing handshake)}. The
version rule: line types are only ever added within a format version, and a cassette that uses none of
the added ones is written exactly as before; a reader that predates a line type refuses it as "unknown line
type ... a newer vcr_transport may have written it". The version changes only when an existing line
changes its meaning.

The schema is declared once, as the msgspec Structs below (a union tagged on ``"type"``), which decode and
validate a line in one pass. Nothing is coerced: a value of the wrong type or out of range is refused with a
``CassetteError`` naming the file, the line and the field. Every reader (replay, in memory or lazily, the
outline of ``verify`` and ``list``, the quiet re-record's comparison) reads lines one at a time through
``Parser``: a line is decoded on its own, so a line holding two values, a value spread over two lines or a
blank line is refused as the line it is.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime
import io
import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol, overload
from urllib.parse import urlsplit

import msgspec

from ..._exceptions import CassetteError

__all__ = [
    "CallEndLine",
    "Cassette",
    "ChunkSource",
    "CloseInfo",
    "EventLine",
    "FORMAT_VERSION",
    "PLACEHOLDER",
    "Finding",
    "HELD_LINE_BYTES",
    "HTTP_VERSIONS",
    "HeaderLine",
    "INTENDED",
    "Line",
    "MAX_LINE_BYTES",
    "MAX_NESTING",
    "MAX_SECONDS",
    "MessageLine",
    "OUTCOMES",
    "Parser",
    "RecordedCall",
    "RecordedMessage",
    "RequestLine",
    "ResponseLine",
    "StoredBody",
    "call_end_line",
    "decode_json",
    "encode_line",
    "event_lines",
    "foreign_file",
    "header_age_days",
    "header_line",
    "header_problem",
    "line_place",
    "lines_before_call",
    "lines_of_calls",
    "load_outline",
    "load_streaming",
    "merge_shared",
    "message_line",
    "overlap_groups",
    "problems",
    "request_line",
    "response_line",
    "without_owners",
]

FORMAT_VERSION = 1
OUTCOMES = ("complete", "closed_early", "error")
HTTP_VERSIONS = ("HTTP/0.9", "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/3")
WEBSOCKET_SCHEMES = ("ws", "wss")
# What stands in a cassette where redaction removed a secret (the rules layer writes it; matching and the views
# read it).
PLACEHOLDER = "[secret removed]"
# The longest line a reader accepts (an event carries one chunk; a request its whole body). A longer line is
# refused before it is read whole, so a damaged or hostile file can't make a reader hold it all in memory.
MAX_LINE_BYTES = 256 * 1024 * 1024
# A line longer than this is measured, not held, until its end, then read again from the file (when the reader
# can): a file with one endless line costs this much memory, not MAX_LINE_BYTES.
HELD_LINE_BYTES = 8 * 1024 * 1024
# The deepest nesting of JSON a cassette may hand to code that walks it recursively: a request's JSON body
# (matching and redaction), refused on load; and every JSON the views and the stream redaction decode from
# recorded text (a response body, an SSE data line, a WebSocket message), which ``decode_json`` reads as no
# JSON (shown and compared as the text it is) when it nests deeper.
MAX_NESTING = 100
_MAX_INDEX = 2**53
# The latest a chunk or message may come after its request (``t``): an hour, longer than any call a test makes.
# A paced replay waits for the recorded times, so this bounds its wait for one call (times ``pace``); a later
# time is refused on load like any value out of range, and the recorder writes a later arrival as this.
MAX_SECONDS = 3_600.0
_TOKEN = r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$"  # RFC 9110 token, the grammar of a method
_RERECORD = "re-record the cassette"

StoredBody = dict[str, Any] | None
# One message of a WebSocket session: who sent it ("client" or "server"), the message (text as ``str``,
# binary as ``bytes``) and when (seconds since the handshake). Plain tuples: the parse cache marshals them.
RecordedMessage = tuple[str, str | bytes, float]


# --- the schema ------------------------------------------------------------------------------------------

Index = Annotated[int, msgspec.Meta(ge=0, le=_MAX_INDEX)]
Seconds = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_SECONDS)]
Status = Annotated[int, msgspec.Meta(ge=100, le=599)]
Method = Annotated[str, msgspec.Meta(pattern=_TOKEN)]
HeaderPair = tuple[str, str]
HttpVersion = Literal["HTTP/0.9", "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/3"]
Outcome = Literal["complete", "closed_early", "error"]
EarlyStop = Literal["intended"]
INTENDED = "intended"


class _Line(msgspec.Struct, tag_field="type", gc=False):
    """What every line has: its type (the tag). Only the header may carry keys of its own (metadata)."""


class HeaderLine(_Line, tag="header"):
    format_version: Any = None


class Body(msgspec.Struct, forbid_unknown_fields=True):
    """A request body: exactly one of json, text, base64 (valid base64)."""

    json: Any = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        given = [name for name in ("json", "text", "base64") if getattr(self, name) is not msgspec.UNSET]
        if len(given) != 1:
            raise ValueError(f"a body is exactly one of json, text, base64; found {given or 'none'}")
        if isinstance(self.base64, str):
            _b64decode(self.base64)
        elif given == ["json"] and _too_deep(self.json):
            raise ValueError(f"the JSON body is nested deeper than {MAX_NESTING} levels")

    def stored(self) -> dict[str, Any]:
        if self.json is not msgspec.UNSET:
            return {"json": self.json}
        if isinstance(self.text, str):
            return {"text": self.text}
        return {"base64": self.base64}


def _latin1_pairs(headers: list[HeaderPair]) -> None:
    for name, value in headers:
        try:
            name.encode("latin-1")
            value.encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError(f"header {name!r}: names and values are latin-1 text, as HTTP carries them") from None


class RequestLine(_Line, tag="request", forbid_unknown_fields=True):
    call_index: Index
    method: Method
    url: str
    headers: list[HeaderPair]
    body: Body | None = None
    test: str | msgspec.UnsetType = msgspec.UNSET  # the owner, in a shared cassette

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https", *WEBSOCKET_SCHEMES) or not parts.netloc:
            raise ValueError(f"url {self.url[:80]!r} is not an absolute http, https, ws or wss URL")
        try:
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0..65535
        except ValueError:
            raise ValueError(f"url {self.url[:80]!r}: the port is not a number in 0..65535") from None
        _latin1_pairs(self.headers)


class ResponseLine(_Line, tag="response", forbid_unknown_fields=True):
    call_index: Index
    status: Status
    headers: list[HeaderPair]
    http_version: HttpVersion = "HTTP/1.1"

    def __post_init__(self) -> None:
        _latin1_pairs(self.headers)


class EventLine(_Line, tag="event", forbid_unknown_fields=True):
    call_index: Index
    event_index: Index
    t: Seconds = 0.0
    text: str | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    def chunk(self) -> bytes:
        """The raw chunk: exactly one of text and base64 (valid base64) must be there."""
        text = self.text
        if text.__class__ is str and self.base64 is msgspec.UNSET:
            return text.encode()
        if isinstance(self.base64, str) and text is msgspec.UNSET:
            return _b64decode(self.base64)
        raise ValueError("an event has exactly one of 'text' and 'base64'")


class ErrorInfo(msgspec.Struct, forbid_unknown_fields=True):
    class_: str = msgspec.field(name="class")
    message: str


class CloseInfo(msgspec.Struct, forbid_unknown_fields=True):
    """How a WebSocket session closed: the close code and reason, and who sent the first close frame (None:
    the connection ended with no closing handshake, code None)."""

    code: Annotated[int, msgspec.Meta(ge=1000, le=4999)] | None = None
    reason: str = ""
    by: Literal["client", "server"] | None = None


class CallEndLine(_Line, tag="call_end", forbid_unknown_fields=True):
    call_index: Index
    event_count: Index
    outcome: Outcome
    error: ErrorInfo | None = None
    early_stop: EarlyStop | msgspec.UnsetType = msgspec.UNSET
    close: CloseInfo | None = None

    def __post_init__(self) -> None:
        if (self.outcome == "error") != (self.error is not None):
            raise ValueError("'error' {class, message} is there exactly when the outcome is 'error'")
        if self.early_stop is not msgspec.UNSET and self.outcome != "closed_early":
            raise ValueError("'early_stop' is there only when the outcome is 'closed_early'")


Side = Literal["client", "server"]


class MessageLine(_Line, tag="message", forbid_unknown_fields=True):
    """One WebSocket message: who sent it, when (seconds since the handshake), text or binary (base64)."""

    call_index: Index
    message_index: Index
    t: Seconds = 0.0
    from_: Side = msgspec.field(name="from", default="server")
    text: str | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        if isinstance(self.text, str) == isinstance(self.base64, str):
            raise ValueError("a message has exactly one of 'text' and 'base64'")
        if isinstance(self.base64, str):
            _b64decode(self.base64)

    def data(self) -> str | bytes:
        """The message as the client sends or receives it: text as ``str``, binary as ``bytes``."""
        return self.text if isinstance(self.text, str) else _b64decode(str(self.base64))


Line = HeaderLine | RequestLine | ResponseLine | EventLine | CallEndLine | MessageLine
_KINDS = "header, request, response, event, call_end, message"
_decoder = msgspec.json.Decoder(Line)
_untyped = msgspec.json.Decoder()


class _Place(msgspec.Struct):
    """What copying lines of a file already read needs to know of a line: its type and its call."""

    type: str = ""
    call_index: int = -1


_place_decoder = msgspec.json.Decoder(_Place)


class _Owner(msgspec.Struct):
    """What merging a shared cassette needs to know of a request line: its owner."""

    test: str = ""


_owner_decoder = msgspec.json.Decoder(_Owner)


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not valid base64") from None


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests deeper than MAX_NESTING, found without recursion: one level at a time, the
    containers of each level gathered by one comprehension (at most MAX_NESTING of them)."""
    level = [value] if isinstance(value, dict | list) else []
    for _ in range(MAX_NESTING):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


def decode_json(data: str | bytes) -> Any:
    """``json.loads(data)`` for JSON recorded as text (a response body, an SSE data line, a WebSocket message):
    the one decoder of such text for every view and the stream redaction. A ValueError, as for text that is
    no JSON, when it nests deeper than MAX_NESTING (or deeper than ``json`` reads): the code that reads it
    walks it recursively. Counting the brackets first spares the walk of the value for the many documents
    that can't nest that deep."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_NESTING} levels") from None
    brackets = data.count("[") + data.count("{") if isinstance(data, str) else data.count(b"[") + data.count(b"{")
    if brackets > MAX_NESTING and _too_deep(value):
        raise ValueError(f"JSON nested deeper than {MAX_NESTING} levels")
    return value


# --- encoders: the one place lines are written ---------------------------------------------------------


def encode_line(obj: dict[str, Any]) -> bytes:
    """A line object as one JSONL line in UTF-8: the text of ``json.dumps(obj, ensure_ascii=False,
    separators=(",", ":"))``, which msgspec writes faster. The two write a float the same way unless its
    ``repr`` has an exponent or it is not finite; a line holding such a float, or anything msgspec refuses
    (a lone surrogate, which then fails to encode as it always did), is written by ``json``."""
    if not _odd_floats(obj):
        try:
            return _encoder.encode(obj) + b"\n"
        except (msgspec.EncodeError, TypeError, ValueError, OverflowError):
            pass
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
    return text.encode("utf-8")


_encoder = msgspec.json.Encoder()


def _odd_floats(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` holds a float whose text has an exponent (``1e-05``) or that is not finite, or a
    value of a type other than JSON's own (a subclass has its own text, which json writes)."""
    stack: list[Any] = [obj]
    while stack:
        item = stack.pop()
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is str or kind is int or kind is bool or child is None:
                continue
            if kind is dict or kind is list or kind is tuple:
                stack.append(child)
            elif kind is not float:
                return True
            else:
                text = repr(child)
                if "e" in text or "n" in text:
                    return True
    return False


def header_line(versions: dict[str, str] | None = None, **metadata: Any) -> dict[str, Any]:
    """The header (line 1): the format version, when it was written, and optional metadata readers ignore."""
    line: dict[str, Any] = {
        "type": "header",
        "format_version": FORMAT_VERSION,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    if versions is not None:
        line["versions"] = dict(versions)
    line.update(metadata)
    return line


def header_age_days(header: Mapping[str, Any], now: datetime.datetime) -> float | None:
    """How many days before ``now`` the cassette was recorded (its header's ``created``); None when the header
    says no time, or none that parses (an imported cassette's may carry none)."""
    created = header.get("created")
    if not isinstance(created, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(created)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return (now - when).total_seconds() / 86400


def request_line(
    call_index: int, method: str, url: str, headers: Sequence[tuple[str, str]], body: StoredBody
) -> dict[str, Any]:
    return {
        "type": "request",
        "call_index": call_index,
        "method": method,
        "url": url,
        "headers": list(headers),
        "body": body,
    }


def response_line(
    call_index: int, status: int, headers: Sequence[tuple[str, str]], http_version: str = "HTTP/1.1"
) -> dict[str, Any]:
    return {
        "type": "response",
        "call_index": call_index,
        "status": status,
        "headers": list(headers),
        "http_version": http_version,
    }


def call_end_line(
    call_index: int,
    event_count: int,
    outcome: str,
    error: tuple[str, str] | None = None,
    close: tuple[int | None, str, str | None] | None = None,
    *,
    early_stop_ok: bool = False,
) -> dict[str, Any]:
    """The end of a call; ``error`` is (class name, message) when the outcome is ``error``; ``close`` (code,
    reason, by) how a WebSocket session closed. ``early_stop_ok``: a ``closed_early`` call is marked
    ``"early_stop": "intended"`` (the test stopped it on purpose)."""
    line: dict[str, Any] = {
        "type": "call_end",
        "call_index": call_index,
        "event_count": event_count,
        "outcome": outcome,
    }
    if error is not None:
        line["error"] = {"class": error[0], "message": error[1]}
    if early_stop_ok and outcome == "closed_early":
        line["early_stop"] = INTENDED
    if close is not None:
        line["close"] = {"code": close[0], "reason": close[1], "by": close[2]}
    return line


def message_line(call_index: int, message_index: int, offset: float, side: str, data: str | bytes) -> dict[str, Any]:
    """A WebSocket message's line: ``offset`` in seconds since the handshake, rounded to the microsecond (at
    most MAX_SECONDS)."""
    line: dict[str, Any] = {
        "type": "message",
        "call_index": call_index,
        "message_index": message_index,
        "t": round(min(max(offset, 0.0), MAX_SECONDS), 6),
        "from": side,
    }
    if isinstance(data, str):
        line["text"] = data
    else:
        line["base64"] = base64.b64encode(data).decode("ascii")
    return line


def event_lines(call_index: int, first_index: int, chunks: Iterable[tuple[bytes, int]], started: int) -> bytes:
    """The event lines of ``chunks`` ((chunk, arrival) pairs), numbered from ``first_index``, encoded together
    from the schema's own Struct: a chunk as ``text`` when it is valid UTF-8 on its own, else ``base64``.
    Arrivals and ``started`` are nanoseconds on one clock; an event's ``t`` is its arrival's offset from
    ``started`` in seconds, rounded to the microsecond (half up: integer arithmetic, far cheaper per chunk
    than ``round``), at most MAX_SECONDS."""
    return _encoder.encode_lines(
        [
            _event(call_index, index, min((arrived - started + 500) // 1000 / 1e6, MAX_SECONDS), chunk)
            for index, (chunk, arrived) in enumerate(chunks, first_index)
        ]
    )


def _event(call_index: int, event_index: int, offset: float, chunk: bytes) -> EventLine:
    try:
        return EventLine(call_index, event_index, offset, chunk.decode())
    except UnicodeDecodeError:
        return EventLine(call_index, event_index, offset, base64=base64.b64encode(chunk).decode("ascii"))


def line_place(line: bytes) -> tuple[str, int]:
    """(type, call index) of a line of a cassette that was read successfully (-1: the header)."""
    place = _place_decoder.decode(line)
    return place.type, place.call_index


def lines_before_call(data: bytes, call_index: int) -> list[bytes]:
    """The raw lines (header excluded) of the calls before ``call_index``, in file order, byte for byte.
    ``data`` is a cassette that was read successfully."""
    return [line for line in data.split(b"\n")[1:] if line and 0 <= line_place(line)[1] < call_index]


def lines_of_calls(
    data: bytes, indexes: Iterable[int], open_calls: Iterable[int] = ()
) -> tuple[list[bytes], list[bytes]]:
    """What record-on-miss keeps of a cassette that was read successfully: the lines of the calls
    ``indexes`` (those this run replayed) in file order, numbered 0, 1, 2... in the order of their old
    numbers (a line whose number stays is kept byte for byte), and apart, the call_end lines of
    ``open_calls``: the recording writes them after its first new request line, so that the calls recorded
    next count as overlapping those (they ran concurrently with them), and replay again in any order among
    them."""
    renumber = {old: new for new, old in enumerate(sorted(set(indexes)))}
    held = frozenset(open_calls)
    kept: list[bytes] = []
    deferred: list[bytes] = []
    for line in data.split(b"\n")[1:]:
        if not line:
            continue
        kind, index = line_place(line)
        if index not in renumber:
            continue
        if renumber[index] != index:
            line = _renumbered(line, index, renumber[index])
        (deferred if kind == "call_end" and index in held else kept).append(line)
    return kept, deferred


def _renumbered(line: bytes, old: int, new: int) -> bytes:
    """A line with another call_index: the field as the encoder writes it (second, after the type) is
    replaced in place; a line written otherwise is encoded again."""
    written = b'","call_index":%d,' % old
    at = line.find(written)
    if 0 < at < 24:
        return line[:at] + b'","call_index":%d,' % new + line[at + len(written) :]
    obj = json.loads(line)
    obj["call_index"] = new
    return encode_line(obj).rstrip(b"\n")


def merge_shared(old: bytes | None, new: bytes, owner: str) -> bytes:
    """A cassette several tests share, after ``owner`` recorded ``new`` (a whole cassette holding its calls
    alone): the calls of ``old`` (a cassette that was read successfully, or None) that other tests own,
    byte for byte but for their call numbers, with ``owner``'s calls in the place its earlier calls held
    (else after the others), every call renumbered 0, 1, 2... in file order. Each of ``new``'s request lines
    gets ``"test": owner`` (added at its end when missing), and the header ``"shared": true``. Calls of
    ``old`` that name no owner (a cassette recorded before it was shared) are ``owner``'s earlier calls.
    Calls stay whole and in their order within each test, so their overlap (``overlap_groups``) is kept."""
    new_lines = [line for line in new.split(b"\n") if line]
    header = _untyped.decode(new_lines[0])
    header["shared"] = True
    blocks = _owner_blocks(old, owner) if old is not None else {}
    owned = [_with_owner(line, owner) if line_place(line)[0] == "request" else line for line in new_lines[1:]]
    blocks[owner] = owned  # in its earlier place, else last
    return _joined(header, blocks.values())


def without_owners(data: bytes, owners: Collection[str]) -> bytes:
    """A shared cassette (read successfully) without the calls of the tests ``owners``: the other calls byte
    for byte but for their call numbers, renumbered 0, 1, 2... in file order; the header as it was."""
    header = _untyped.decode(data.split(b"\n", 1)[0])
    blocks = _owner_blocks(data, "")
    return _joined(header, (block for who, block in blocks.items() if who not in owners))


def _owner_blocks(data: bytes, default: str) -> dict[str, list[bytes]]:
    """The lines of a cassette's calls (its header left out), by the test that owns them, the tests in the
    order they first come in the file; a call that names no owner is ``default``'s."""
    owners: dict[int, str] = {}
    blocks: dict[str, list[bytes]] = {}
    for line in data.split(b"\n")[1:]:
        if not line:
            continue
        kind, index = line_place(line)
        if kind == "request":
            owners[index] = _owner_decoder.decode(line).test or default
        blocks.setdefault(owners[index], []).append(line)
    return blocks


def _joined(header: dict[str, Any], blocks: Iterable[list[bytes]]) -> bytes:
    """``header`` and the lines of ``blocks`` in order, each call renumbered 0, 1, 2... in file order."""
    merged = [encode_line(header)]
    first = 0
    for block in blocks:
        numbers: dict[int, int] = {}
        for line in block:
            index = line_place(line)[1]
            if index not in numbers:
                numbers[index] = first + len(numbers)
            if numbers[index] != index:
                line = _renumbered(line, index, numbers[index])
            merged.append(line + b"\n")
        first += len(numbers)
    return b"".join(merged)


def _with_owner(line: bytes, owner: str) -> bytes:
    """A request line naming ``owner`` (``"test"`` added at its end when it names none)."""
    if _owner_decoder.decode(line).test == owner:
        return line
    obj = json.loads(line)
    obj["test"] = owner
    return encode_line(obj).rstrip(b"\n")


def overlap_groups(calls: Sequence[RecordedCall]) -> list[int]:
    """The concurrency group of each call, by index: calls that overlapped in time while recording share
    one. A call whose request line comes before the call_end line of an earlier call started before that
    call ended; the recorder numbers calls as their requests start and writes each line as it happens, so
    the line order says so, with no field for it. A group is a run of consecutive calls (every call between
    two overlapping calls started after the first and before the second, so before the first ended)."""
    groups: list[int] = []
    group = -1
    latest_end = 0  # the last call_end line of the calls so far
    for call in calls:
        if call.line > latest_end or group < 0:
            group += 1
        groups.append(group)
        latest_end = max(latest_end, call.end_line)
    return groups


# --- the model -------------------------------------------------------------------------------------------


class ChunkSource(Protocol):
    """Where a lazily loaded cassette's lines are read from, by byte offsets (the storage shell)."""

    def read(self, start: int, end: int) -> bytes: ...


@dataclass(slots=True)
class RecordedCall:
    index: int
    method: str
    url: str
    request_headers: list[tuple[str, str]]
    body: StoredBody
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    http_version: str = "HTTP/1.1"
    chunks: list[bytes] = field(default_factory=list)
    offsets: list[float] = field(default_factory=list)
    size: int = 0
    outcome: str | None = None
    error_class: str = ""
    error_message: str = ""
    early_stop: str = ""  # "intended": the recording test stopped it on purpose (closed_early only)
    line: int = 0
    event_total: int = 0
    end_line: int = 0  # the line of its call_end: what calls overlapped while recording (``overlap_groups``)
    owner: str = ""  # the test that made it, in a shared cassette ("": none said)
    messages: list[RecordedMessage] = field(default_factory=list)  # a WebSocket session's, in order
    close: tuple[int | None, str, str | None] | None = None  # a WebSocket session's (code, reason, by)
    lazy: LazyChunks | None = None  # last: every field before it is plain data (the parse cache keeps them)

    @property
    def complete(self) -> bool:
        return self.outcome == "complete"

    @property
    def websocket(self) -> bool:
        """Whether the call is a WebSocket session (its request is the opening handshake)."""
        return self.url.partition(":")[0] in WEBSOCKET_SCHEMES

    @property
    def stopped_on_purpose(self) -> bool:
        """Closed early by the recording test, which said it meant to (``"early_stop": "intended"``)."""
        return self.outcome == "closed_early" and self.early_stop == INTENDED

    @property
    def events(self) -> Sequence[bytes]:
        """The recorded chunks in order: held in memory, or read from the file as they are replayed."""
        return self.lazy if self.lazy is not None else self.chunks


class LazyChunks(Sequence[bytes]):
    """The chunks of one call of a large cassette, read from the (already validated) file when asked for, so
    replaying a long stream doesn't hold it in memory."""

    def __init__(self, source: ChunkSource) -> None:
        self._source = source
        self.spans: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self.spans)

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start, end = self.spans[index]
        line = _decoder.decode(self._source.read(start, end))
        assert isinstance(line, EventLine), "a span always points at a validated event line"
        return line.chunk()


@dataclass
class Cassette:
    path: str
    header: dict[str, Any]
    calls: list[RecordedCall]
    # A part of the file (``owned_by``): the call index in the file of each of ``calls``; None: the whole file.
    origin: list[int] | None = None

    @classmethod
    def parse(cls, data: bytes, path: str) -> Cassette:
        """Read a whole cassette held in memory. Refuses anything it can't replay faithfully, naming the line."""
        return Parser(path, "memory").read([data])

    def owned_by(self, owner: str) -> Cassette:
        """The calls ``owner`` made, numbered 0, 1, 2... in file order (``origin`` says their numbers in the
        file): what one test of a shared cassette replays. When no call names ``owner`` (a cassette not
        shared, written before owners were, or recorded by other tests for this one to replay), it is the
        whole cassette."""
        if not any(call.owner == owner for call in self.calls):
            return self
        origin = [call.index for call in self.calls if call.owner == owner]
        calls = [dataclasses.replace(self.calls[old], index=new) for new, old in enumerate(origin)]
        return Cassette(self.path, self.header, calls, origin)


# --- reading ---------------------------------------------------------------------------------------------


def _too_long(path: str, number: int) -> CassetteError:
    return CassetteError(
        path,
        number,
        f"line {number} is longer than {MAX_LINE_BYTES:,} bytes, the most a reader accepts",
        "the file is damaged or not a cassette: restore it from version control, or re-record it",
    )


_CONFLICT_MARKERS = (b"<<<<<<<", b">>>>>>>", b"|||||||")


def foreign_file(path: str, number: int, line: bytes) -> CassetteError | None:
    """The CassetteError for a line that shows the file is something else than a damaged cassette, with the
    fix that gets the cassette back: a byte order mark, a git merge-conflict marker, a Git LFS pointer."""
    if number == 1 and line.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return CassetteError(
            path,
            1,
            "the file starts with a byte order mark (BOM); a cassette is UTF-8 without one",
            "remove the BOM (an editor saved the file as 'UTF-8 with BOM'): save it as plain UTF-8, or "
            f"`sed -i '1s/^\\xEF\\xBB\\xBF//' {path}`",
        )
    if line.startswith(_CONFLICT_MARKERS) or line.rstrip(b"\r\n") == b"=======":
        marker = line.rstrip(b"\r\n")[:60].decode("utf-8", "replace")
        return CassetteError(
            path,
            number,
            f"line {number} is a git merge-conflict marker ({marker!r}): the file holds both sides of a conflict",
            f"resolve the conflict: keep one side whole (`git checkout --ours {path}` or `--theirs`) and "
            "`git add` it, or re-record the cassette; its lines don't merge one by one",
        )
    if number == 1 and line.startswith(b"version https://git-lfs.github.com/spec/"):
        return CassetteError(
            path,
            1,
            "the file is a Git LFS pointer, not the cassette it stands for",
            "run `git lfs pull` to fetch the cassette (`git lfs install` first, if Git LFS is new here)",
        )
    return None


def load_streaming(path: str, blocks: Iterable[bytes], source: ChunkSource | None) -> Cassette:
    """A cassette read block by block. With a ``source`` the chunks are read from it when replayed; without,
    only the outline is kept (calls, statuses, outcomes, no chunks): every line is validated either way."""
    return Parser(path, "lazy" if source is not None else "outline", source).read(blocks, source)


def load_outline(path: str, blocks: Iterable[bytes], file: ChunkSource | None = None) -> Cassette:
    """The outline of a cassette read block by block (calls, statuses, outcomes, no chunks). ``file``: the
    file the blocks come from, read again at a line longer than HELD_LINE_BYTES (see ``Parser.runs``)."""
    return Parser(path, "outline").read(blocks, file)


_FIELD_AT = re.compile(r"^(.*?)(?: - at `\$(.*)`)?$", re.DOTALL)


class Parser:
    """Reads a cassette line by line, through the schema and the call structure. Modes: ``memory`` keeps
    every chunk, ``lazy`` keeps where each event line is (read from ``source`` when replayed), ``outline``
    keeps no chunk (for checking, listing and comparing).

    ``take`` is the one loop over a file's lines: each line is decoded on its own and checked where it
    stands, and the first problem is raised as a CassetteError naming its line (or, given ``problems``,
    kept there, and the lines after it only decoded)."""

    def __init__(
        self, path: str, mode: Literal["memory", "lazy", "outline"] = "outline", source: ChunkSource | None = None
    ) -> None:
        self.path = path
        self.mode = mode
        self.source = source
        self.header: dict[str, Any] | None = None
        self.calls: dict[int, RecordedCall] = {}
        self.streaming: dict[int, RecordedCall] = {}  # calls with a response line and no call_end yet
        self.number = 0  # the lines taken so far
        self.position = 0  # the byte offset of the next line
        self.checking = True  # False once ``take`` has kept a problem: the structure is no longer checked
        self._handlers: dict[type, Callable[[int, Any], None]] = {
            HeaderLine: self._line_header,
            RequestLine: self._line_request,
            ResponseLine: self._line_response,
            CallEndLine: self._line_call_end,
            MessageLine: self._line_message,
        }

    def read(self, blocks: Iterable[bytes], file: ChunkSource | None = None) -> Cassette:
        """The cassette in ``blocks`` (consecutive blocks of the file's bytes), every line checked. ``file``:
        where the blocks come from, for a long line (see ``runs``)."""
        for run in self.runs(blocks, file):
            self.take(run)
        return self.finish()

    def fail(self, line: int | None, problem: str, fix: str = "") -> CassetteError:
        return CassetteError(self.path, line, problem, fix)

    def runs(self, blocks: Iterable[bytes], file: ChunkSource | None = None) -> Iterator[bytes]:
        """Runs of whole lines (each with its newline) of a file given as consecutive blocks of bytes, for
        ``take``, which numbers their lines on from those taken so far. A block that ends with a newline is
        a run as it is (not copied: a cassette held in memory is one block). Raises for a line longer than
        ``MAX_LINE_BYTES`` as soon as it gets that long, and for a last line cut off before its newline.
        With ``file`` (what the blocks are read from), a line is held only up to HELD_LINE_BYTES: past that
        it is measured as it goes by, and read again from ``file`` when it ends within MAX_LINE_BYTES; so a
        file with one endless line costs HELD_LINE_BYTES of memory."""
        parts: list[bytes] = []  # the start of a line that continues in the next block
        pending = 0  # its length
        offset = 0  # where the next block starts in the file
        measured = -1  # where the line being measured (not held) starts, or -1
        for block in blocks:
            offset += len(block)
            if measured >= 0 and file is not None:
                first = block.find(b"\n")
                if first < 0:
                    pending += len(block)
                    if pending > MAX_LINE_BYTES:
                        raise _too_long(self.path, self.number + 1)
                    continue
                if pending + first > MAX_LINE_BYTES:
                    raise _too_long(self.path, self.number + 1)
                yield file.read(measured, measured + pending + first + 1)
                measured, pending = -1, 0
                block = block[first + 1 :]
            cut = block.rfind(b"\n") + 1
            if cut:
                run = block if cut == len(block) else block[:cut]
                if parts:
                    run = b"".join([*parts, run])
                if len(run) > MAX_LINE_BYTES:
                    for offset, line in enumerate(run.split(b"\n")):
                        if len(line) > MAX_LINE_BYTES:
                            raise _too_long(self.path, self.number + 1 + offset)
                yield run
                parts, pending = [], 0
                block = block[cut:]
            if block:
                parts.append(block)
                pending += len(block)
                if pending > MAX_LINE_BYTES:
                    raise _too_long(self.path, self.number + 1)
                if file is not None and pending > HELD_LINE_BYTES:
                    measured, parts = offset - pending, []
        if pending:
            raise self.fail(
                self.number + 1, "the last line is cut off (no newline): the recording was interrupted", _RERECORD
            )

    def take(
        self,
        run: bytes,
        objects: list[tuple[Line, bytes]] | None = None,
        problems: list[CassetteError] | None = None,
    ) -> None:
        """Decode and check the file's next lines, ``run`` (whole lines, as ``runs`` gives them), appending
        each decoded object with its line to ``objects`` when it is given. The one loop over every line of
        a load: a line is decoded on its own, and an event's checks and chunk are worked out right here.
        The first problem is raised, or (given ``problems``) kept there, and the lines after it are only
        decoded."""
        number, start = self.number, self.position
        keep = self.mode != "outline"
        lazy = self.mode == "lazy"
        streaming = self.streaming
        handlers = self._handlers
        decode = _decoder.decode
        unset = msgspec.UNSET
        checking = self.checking
        for line in io.BytesIO(run):  # each with its newline (JSON's whitespace), one at a time
            number += 1
            end = start + len(line)
            try:
                if number == 1:
                    obj: Line = self._decode_header(line)
                elif (obj := decode(line)).__class__ is EventLine and checking:
                    call = streaming.get(obj.call_index)
                    if call is None or obj.event_index != call.event_total:
                        raise self._misplaced_event(number, obj)
                    text = obj.text
                    chunk = text.encode() if text.__class__ is str and obj.base64 is unset else obj.chunk()
                    call.event_total += 1
                    call.size += len(chunk)
                    if keep:
                        if lazy:
                            call.lazy.spans.append((start, end - 1))  # type: ignore[union-attr]
                        else:
                            call.chunks.append(chunk)
                        call.offsets.append(obj.t)
                elif checking:
                    handlers[obj.__class__](number, obj)
            except (msgspec.MsgspecError, RecursionError, ValueError, CassetteError) as error:
                foreign = foreign_file(self.path, number, line)
                if foreign is not None:  # the whole file is something else: this is all there is to say
                    raise foreign from None
                problem = self._problem(number, line, error)
                if problems is None:
                    raise problem from None
                problems.append(problem)
                checking = self.checking = False
            else:
                if objects is not None:
                    objects.append((obj, line))
            start = end
        self.number, self.position = number, start

    def _problem(self, number: int, line: bytes, error: Exception) -> CassetteError:
        """The CassetteError for what went wrong on line ``number``."""
        if isinstance(error, CassetteError):
            return error
        if isinstance(error, RecursionError):
            return self.fail(number, "unreadable line: JSON nested too deeply", _RERECORD)
        if isinstance(error, msgspec.ValidationError):
            return self._invalid(number, line, str(error))
        if isinstance(error, msgspec.DecodeError):
            return self.fail(number, f"unreadable line: not valid JSON ({error})", _RERECORD)
        return self.fail(number, f"malformed event line: {error}", _RERECORD)  # EventLine.chunk

    def _decode_header(self, line: bytes) -> HeaderLine:
        obj = _untyped.decode(line)
        if not isinstance(obj, dict) or obj.get("type") != "header":
            raise self.fail(1, "line 1 is not a header line", "the file is not a vcr_transport cassette")
        version = obj.get("format_version")
        if version.__class__ is not int or version != FORMAT_VERSION:
            raise self.fail(
                1,
                f"format_version {version!r} is not supported; this vcr_transport reads version {FORMAT_VERSION}",
                "re-record the cassette, or use the vcr_transport version that wrote it",
            )
        self.header = obj
        return HeaderLine(format_version=version)

    def _invalid(self, number: int, line: bytes, message: str) -> CassetteError:
        try:
            obj = _untyped.decode(line)
        except (msgspec.MsgspecError, RecursionError):  # pragma: no cover - the typed decode read it
            obj = None
        kind = obj.get("type") if isinstance(obj, dict) else None
        if not isinstance(obj, dict):
            return self.fail(number, f"expected a JSON object, found {type(obj).__name__}", _RERECORD)
        if kind not in ("header", "request", "response", "event", "call_end", "message"):
            return self.fail(
                number,
                f"unknown line type {kind!r}",
                f"expected one of {_KINDS}; a newer vcr_transport may have written it",
            )
        if kind == "call_end" and message.endswith("at `$.outcome`") and obj.get("outcome") not in OUTCOMES:
            return self.fail(
                number, f"unknown outcome {obj.get('outcome')!r}; expected one of {', '.join(OUTCOMES)}", _RERECORD
            )
        match = _FIELD_AT.match(message)
        problem, at = (match.group(1), match.group(2)) if match else (message, None)
        where = f" field {at.lstrip('.')!r}" if at else ""
        return self.fail(
            number, f"malformed {kind} line:{where} {problem}", "re-record the cassette, or correct the value by hand"
        )

    def _misplaced_event(self, number: int, obj: EventLine) -> CassetteError:
        call = self.calls.get(obj.call_index)
        if call is None or call.outcome is not None:
            return self._unknown_call(number, obj.call_index)
        if call.status is None:
            return self.fail(number, f"event for call {obj.call_index} before its response line")
        expected = call.event_total
        return self.fail(number, f"event_index {obj.event_index!r} of call {call.index}, expected {expected}")

    def _unknown_call(self, number: int, index: int) -> CassetteError:
        if index not in self.calls:
            return self.fail(number, f"call {index!r} has no request line before this line")
        return self.fail(number, f"line for call {index} after its call_end")

    def _call(self, number: int, index: int) -> RecordedCall:
        call = self.calls.get(index)
        if call is None or call.outcome is not None:
            raise self._unknown_call(number, index)
        return call

    def _line_header(self, number: int, obj: HeaderLine) -> None:
        raise self.fail(number, "a second header line: only line 1 may be a header", _RERECORD)

    def _line_request(self, number: int, obj: RequestLine) -> None:
        index = obj.call_index
        if index in self.calls:
            raise self.fail(number, f"call_index {index!r} is repeated")
        self.calls[index] = RecordedCall(
            index=index,
            method=obj.method,
            url=obj.url,
            request_headers=obj.headers,
            body=None if obj.body is None else obj.body.stored(),
            owner=obj.test if isinstance(obj.test, str) else "",
            line=number,
            lazy=LazyChunks(self.source) if self.source is not None else None,
        )

    def _line_response(self, number: int, obj: ResponseLine) -> None:
        call = self._call(number, obj.call_index)
        if call.status is not None:
            raise self.fail(number, f"a second response line for call {call.index}")
        call.status = obj.status
        self.streaming[call.index] = call
        call.response_headers = obj.headers
        call.http_version = obj.http_version

    def _line_message(self, number: int, obj: MessageLine) -> None:
        call = self._call(number, obj.call_index)
        if not call.websocket or call.status != 101:
            raise self.fail(
                number,
                f"a message line for call {call.index}, which is not an open WebSocket session (no 101 response)",
            )
        if obj.message_index != len(call.messages):
            raise self.fail(
                number, f"message_index {obj.message_index!r} of call {call.index}, expected {len(call.messages)}"
            )
        call.messages.append((obj.from_, obj.data(), obj.t))

    def _line_call_end(self, number: int, obj: CallEndLine) -> None:
        call = self._call(number, obj.call_index)
        if obj.close is not None:
            if not call.websocket:
                raise self.fail(number, f"call {call.index} is not a WebSocket session: its call_end has no 'close'")
            call.close = (obj.close.code, obj.close.reason, obj.close.by)
        if obj.event_count != call.event_total:
            raise self.fail(
                number,
                f"call {call.index} ends with event_count {obj.event_count!r} but has {call.event_total} events",
            )
        if obj.outcome != "error" and call.status is None:
            raise self.fail(number, f"call {call.index} ends {obj.outcome!r} without a response line")
        if obj.error is not None:
            call.error_class = obj.error.class_
            call.error_message = obj.error.message
        call.outcome = obj.outcome
        if obj.early_stop is not msgspec.UNSET:
            call.early_stop = obj.early_stop
        call.end_line = number
        self.streaming.pop(call.index, None)

    def finish(self) -> Cassette:
        if self.header is None:
            raise self.fail(1, "the file is empty: no header line", "record the cassette again")
        for call in self.calls.values():
            if call.outcome is None:
                raise self.fail(
                    call.line, f"call {call.index} has no call_end line: the recording was interrupted", _RERECORD
                )
        indexes = sorted(self.calls)
        for position, index in enumerate(indexes):
            if index != position:
                raise self.fail(
                    self.calls[index].line, f"call_index {index}: call {position} is missing (calls are 0, 1, 2...)"
                )
        return Cassette(self.path, self.header, [self.calls[i] for i in indexes])


# --- checking --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """What ``verify`` reports about a cassette: a problem, or (``incomplete``) a note on a call that was
    recorded incomplete and replays as recorded."""

    path: str
    line: int | None
    problem: str
    fix: str = ""
    incomplete: bool = False
    call: int | None = None  # the call of a note on an incomplete call
    outcome: str = ""  # its outcome

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.problem}" + (f"\n  fix: {self.fix}" if self.fix else "")


def _finding(error: CassetteError) -> Finding:
    return Finding(error.path, error.line, error.problem, error.fix)


def problems(path: str, blocks: Iterable[bytes], file: ChunkSource | None = None) -> Iterator[Finding]:
    """Every unreadable or malformed line, then the first structural problem (a missing call_end, a line out
    of order), then notes on incomplete calls when there was no problem; a file that is something else (a
    BOM, a merge conflict, a Git LFS pointer) gets its one finding there. Reads block by block: memory stays
    bounded by the longest line (HELD_LINE_BYTES past the longest a reader accepts, with ``file``, which the
    blocks come from) and the number of calls."""
    parser = Parser(path, "outline")
    found: list[CassetteError] = []
    shown = 0
    try:
        for run in parser.runs(blocks, file):
            parser.take(run, problems=found)
            yield from map(_finding, found[shown:])
            shown = len(found)
    except CassetteError as error:  # a line too long, or cut off; a file that is something else
        yield from map(_finding, found[shown:])
        yield _finding(error)
        return
    if found:
        return
    try:
        cassette = parser.finish()
    except CassetteError as error:
        yield _finding(error)
        return
    for call in cassette.calls:
        if call.stopped_on_purpose:
            continue  # the test that recorded it said so: no problem, even for verify --strict
        if not call.complete:
            detail = f": {call.error_class}" if call.outcome == "error" else ""
            ended = f"call {call.index} ({call.method} {call.url}) ended {call.outcome}{detail}"
            yield Finding(path, None, ended, "", True, call.index, call.outcome or "")
        else:
            yield from _lost_bodies(path, call)


_LOST_FIX = (
    "a converter lost it (vcrpy serializers that store bodies in their own fields): import the YAML again with "
    "this version, or re-record"
)


def _lost_bodies(path: str, call: RecordedCall) -> Iterator[Finding]:
    """Notes on bodies missing in a way no real exchange produces: a POST/PUT/PATCH that says JSON and sends
    nothing, a response that says it has content (content-length > 0) and has no events."""
    where = f"call {call.index} ({call.method} {call.url})"
    request_type = next((v.lower() for k, v in call.request_headers if k.lower() == "content-type"), "")
    if call.method in ("POST", "PUT", "PATCH") and "json" in request_type and call.body is None:
        yield Finding(
            path, call.line or None, f"{where}: a request with a JSON content-type and no body", _LOST_FIX, True
        )
    length = next((v.strip() for k, v in call.response_headers if k.lower() == "content-length"), "")
    if call.event_total == 0 and length.isdigit() and int(length) > 0 and call.method != "HEAD":
        yield Finding(
            path,
            call.line or None,
            f"{where}: a {call.status} response with content-length {length} and no body",
            _LOST_FIX,
            True,
        )


def header_problem(first_line: bytes) -> str | None:
    """Why a file's first line is not a cassette header, or None when it is one (any format version: a file
    of another version is still a cassette, for delete and prune)."""
    try:
        header = json.loads(first_line)
    except ValueError:
        return "its first line is not a cassette header"
    if not isinstance(header, dict) or header.get("type") != "header" or "format_version" not in header:
        return "its first line is not a cassette header"
    return None
