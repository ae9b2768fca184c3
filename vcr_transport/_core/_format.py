"""Cassette format v1: the line schema, builders for every line type, the parser and the checker. No I/O:
the storage shell hands in bytes and blocks of bytes.

One JSON object per line, written as things happen:

    header     {"type": "header", "format_version": 1, ...optional metadata}
    request    {"type": "request", "call_index", "method", "url", "headers": [[name, value]...], "body"}
    response   {"type": "response", "call_index", "status", "headers", "http_version"}
    event      {"type": "event", "call_index", "event_index", "t", "text" | "base64"}
    call_end   {"type": "call_end", "call_index", "event_count", "outcome", "error"?}

A request body is ``null``, ``{"json": value}``, ``{"text": str}`` or ``{"base64": str}``.

The schema is declared once, as the msgspec Structs below (a union tagged on ``"type"``), which decode and
validate a line in one pass. Nothing is coerced: a value of the wrong type or out of range is refused with a
``CassetteError`` naming the file, the line and the field.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Annotated, Any, Literal, Protocol, overload
from urllib.parse import urlsplit

import msgspec

from .._exceptions import CassetteError

__all__ = [
    "FORMAT_VERSION",
    "HTTP_VERSIONS",
    "MAX_LINE_BYTES",
    "MAX_NESTING",
    "OUTCOMES",
    "Cassette",
    "Finding",
    "RecordedCall",
    "StoredBody",
    "StreamingCheck",
    "call_end_line",
    "dumps_line",
    "encode_chunk",
    "encode_line",
    "event_line",
    "event_lines",
    "header_line",
    "lines_before_call",
    "one_value_per_line",
    "load_streaming",
    "numbers_are_plain",
    "problems",
    "request_line",
    "response_line",
]

FORMAT_VERSION = 1
OUTCOMES = ("complete", "closed_early", "error")
HTTP_VERSIONS = ("HTTP/0.9", "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/3")
# The longest line a reader accepts (an event carries one chunk; a request its whole body). A longer line is
# refused before it is read whole, so a damaged or hostile file can't make a reader hold it all in memory.
MAX_LINE_BYTES = 256 * 1024 * 1024
# The deepest nesting of a request's JSON body: matching and redaction walk it recursively.
MAX_NESTING = 100
_MAX_INDEX = 2**53
_MAX_SECONDS = 1e9  # about 31 years: every finite offset a recording can take
_TOKEN = r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$"  # RFC 9110 token, the grammar of a method
_RERECORD = "re-record the cassette"

StoredBody = dict[str, Any] | None


# --- the schema ------------------------------------------------------------------------------------------

Index = Annotated[int, msgspec.Meta(ge=0, le=_MAX_INDEX)]
Seconds = Annotated[float, msgspec.Meta(ge=0.0, le=_MAX_SECONDS)]
Status = Annotated[int, msgspec.Meta(ge=100, le=599)]
Method = Annotated[str, msgspec.Meta(pattern=_TOKEN)]
HeaderPair = tuple[str, str]
HttpVersion = Literal["HTTP/0.9", "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/3"]
Outcome = Literal["complete", "closed_early", "error"]


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

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"url {self.url[:80]!r} is not an absolute http or https URL")
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


class CallEndLine(_Line, tag="call_end", forbid_unknown_fields=True):
    call_index: Index
    event_count: Index
    outcome: Outcome
    error: ErrorInfo | None = None

    def __post_init__(self) -> None:
        if (self.outcome == "error") != (self.error is not None):
            raise ValueError("'error' {class, message} is there exactly when the outcome is 'error'")


Line = HeaderLine | RequestLine | ResponseLine | EventLine | CallEndLine
_KINDS = "header, request, response, event, call_end"
_decoder = msgspec.json.Decoder(Line)
_LINE_STARTING_BLANK = re.compile(rb"\n[\t\n\r ]")


def one_value_per_line(block: bytes | memoryview, lines: int, objects: list[Any]) -> bool:
    """Whether ``objects``, what ``decode_lines`` read from ``block`` (``lines`` whole lines), are its lines one
    for one. Equal counts alone don't say so: ``decode_lines`` skips blank lines and reads two values written
    on one line, so a line holding two objects and a blank line elsewhere would pair every later object with
    the wrong line. No line of a cassette starts with whitespace; a block with one is read line by line."""
    if len(objects) != lines:
        return False
    return not block or (bytes(block[:1]) not in b"\t\n\r " and _LINE_STARTING_BLANK.search(block) is None)


_untyped = msgspec.json.Decoder()


class _CallIndexOnly(msgspec.Struct):
    call_index: int = -1


_call_index_decoder = msgspec.json.Decoder(_CallIndexOnly)
_plus_one = (1).__add__


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not valid base64") from None


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests deeper than MAX_NESTING, found without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth > MAX_NESTING:
            return True
        stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return False


# --- builders: the one place lines are written ---------------------------------------------------------


def dumps_line(obj: dict[str, Any]) -> str:
    """A line object as one JSONL line, UTF-8 text kept as is."""
    return encode_line(obj).decode("utf-8")


def encode_line(obj: dict[str, Any], *, plain_numbers: bool = False) -> bytes:
    """A line object as one JSONL line in UTF-8: the text of ``json.dumps(obj, ensure_ascii=False,
    separators=(",", ":"))``, which msgspec writes faster. The two write a float the same way unless its
    ``repr`` has an exponent or it is not finite; a line holding such a float, or anything msgspec refuses
    (a lone surrogate, which then fails to encode as it always did), is written by ``json``.
    ``plain_numbers``: the caller knows ``obj`` holds only JSON's own types and no such float (a line
    built here from strings and integers, a body whose JSON text passed ``numbers_are_plain``): it is not
    searched for them."""
    if plain_numbers or not _odd_floats(obj):
        try:
            return _line_encoder.encode(obj) + b"\n"
        except (msgspec.EncodeError, TypeError, ValueError, OverflowError):
            pass
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
    return text.encode("utf-8")


_line_encoder = msgspec.json.Encoder()


# What may stand in JSON text for a float written with an exponent or not finite: an exponent, NaN or
# Infinity, 16 digits in a row (1e16 and up, also after rounding), a fraction below 0.0001; and a NUL byte,
# which UTF-8 JSON never holds but UTF-16 and UTF-32 JSON always do (their digits are not searched here).
# The same as ``[0-9][eE]|NaN|Infinity|[0-9]{16}|0\.0000|\x00``, written to start with one character class
# that the engine skips to (the alternation alone tries each branch at every byte: 3 to 6 times slower).
_ODD_NUMBER = re.compile(rb"[0-9IN\x00](?:(?<=[0-9])(?:[eE]|[0-9]{15})|(?<=0)\.0000|(?<=N)aN|(?<=I)nfinity|(?<=\x00))")


def numbers_are_plain(json_text: bytes) -> bool:
    """Whether every float parsed from ``json_text`` is finite and written without an exponent (by
    ``repr`` as by msgspec): see ``encode_line``. Letters and digits in its strings may say no for
    nothing, never yes wrongly."""
    return _ODD_NUMBER.search(json_text) is None


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
    call_index: int, event_count: int, outcome: str, error: tuple[str, str] | None = None
) -> dict[str, Any]:
    """The end of a call; ``error`` is (class name, message) when the outcome is ``error``."""
    line: dict[str, Any] = {
        "type": "call_end",
        "call_index": call_index,
        "event_count": event_count,
        "outcome": outcome,
    }
    if error is not None:
        line["error"] = {"class": error[0], "message": error[1]}
    return line


_encoder = msgspec.json.Encoder()


def _event(call_index: int, event_index: int, offset: float, chunk: bytes) -> EventLine:
    try:
        return EventLine(call_index=call_index, event_index=event_index, t=offset, text=chunk.decode("utf-8"))
    except UnicodeDecodeError:
        return EventLine(
            call_index=call_index, event_index=event_index, t=offset, base64=base64.b64encode(chunk).decode("ascii")
        )


def event_line(call_index: int, event_index: int, offset: float, chunk: bytes) -> str:
    """An event line, encoded from the schema's own Struct: on the hot path of recording, msgspec is faster
    than the f-string this replaced (2.2 against 3.4 µs a chunk, measured)."""
    return _encoder.encode(_event(call_index, event_index, offset, chunk)).decode() + "\n"


def event_lines(call_index: int, first_index: int, chunks: Sequence[tuple[bytes, int]], started: int) -> bytes:
    """The ``event_line`` of each (chunk, arrival) of ``chunks``, numbered from ``first_index``, joined and
    encoded in UTF-8: one encoding for them all. Arrivals and ``started`` are nanoseconds on one clock; an
    event's ``t`` is its arrival's offset from ``started`` in seconds, rounded to the microsecond (half up:
    integer arithmetic, far cheaper per chunk than ``round``)."""
    try:  # the usual case, every chunk UTF-8: the events built directly
        events = [
            EventLine(call_index, index, (arrived - started + 500) // 1000 / 1e6, chunk.decode())
            for index, (chunk, arrived) in enumerate(chunks, first_index)
        ]
    except UnicodeDecodeError:
        events = [
            _event(call_index, index, (arrived - started + 500) // 1000 / 1e6, chunk)
            for index, (chunk, arrived) in enumerate(chunks, first_index)
        ]
    return _encoder.encode_lines(events)


def encode_chunk(chunk: bytes) -> tuple[str, str]:
    """A chunk as ("text", str) when it is valid UTF-8 on its own, else ("base64", str)."""
    try:
        return "text", chunk.decode("utf-8")
    except UnicodeDecodeError:
        return "base64", base64.b64encode(chunk).decode("ascii")


def lines_before_call(data: bytes, call_index: int) -> list[bytes]:
    """The raw lines (header excluded) of the calls before ``call_index``, in file order, byte for byte:
    what record-on-miss keeps. ``data`` is a cassette that was read successfully."""
    kept = []
    decode = _call_index_decoder.decode
    for line in data.split(b"\n")[1:]:
        if line and 0 <= decode(line).call_index < call_index:
            kept.append(line)
    return kept


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
    lazy: LazyChunks | None = None
    outcome: str | None = None
    error_class: str = ""
    error_message: str = ""
    line: int = 0
    event_total: int = 0

    @property
    def complete(self) -> bool:
        return self.outcome == "complete"

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

    @classmethod
    def parse(cls, data: bytes, path: str) -> Cassette:
        """Read a whole cassette held in memory. Refuses anything it can't replay faithfully, naming the line."""
        parser = _Parser(path, "memory")
        for first, start, block, count in _line_runs(_runs_of_lines(data), path):
            parser.parse_block(first, start, block, count)
        return parser.finish()


_PARSE_RUN_BYTES = 4 * 1024 * 1024


def _runs_of_lines(data: bytes) -> Iterator[bytes]:
    """``data`` in runs of whole lines of about ``_PARSE_RUN_BYTES`` (a line longer than that is one run):
    decoded a run at a time, the decoded lines of only one run are alive beside the chunks kept, so memory
    while parsing stays near the file's size plus its chunks. A copy of each run costs ~0.1 ms a MB."""
    if len(data) <= _PARSE_RUN_BYTES:
        yield data
        return
    start = 0
    while start < len(data):
        cut = data.rfind(b"\n", start, start + _PARSE_RUN_BYTES) + 1
        if cut <= start:  # one line longer than a run, or the cut-off end: up to the next newline
            cut = data.find(b"\n", start + _PARSE_RUN_BYTES) + 1 or len(data)
        yield data[start:cut]
        start = cut


# --- reading ---------------------------------------------------------------------------------------------


def _cut_off(path: str, number: int) -> CassetteError:
    return CassetteError(
        path, number, "the last line is cut off (no newline): the recording was interrupted", _RERECORD
    )


def split_blocks(blocks: Iterable[bytes], path: str) -> Iterator[tuple[int, int, bytes]]:
    """(number of its first line, byte offset, bytes) of runs of whole lines, newlines included, of a file
    given as consecutive blocks of bytes.

    Raises ``CassetteError`` for a line longer than ``MAX_LINE_BYTES`` as soon as it gets that long (without
    holding more of it), and for a last line cut off before its newline."""
    for first, start, block, _ in _line_runs(blocks, path):
        yield first, start, block


def _line_runs(blocks: Iterable[bytes], path: str) -> Iterator[tuple[int, int, bytes, int]]:
    """``split_blocks`` with the number of lines of each run (counted once: 2.8 ms for 7 MB)."""
    parts: list[bytes] = []  # the start of a line that continues in the next block
    pending = 0
    number = 1
    position = 0
    limit = MAX_LINE_BYTES
    for block in blocks:
        cut = block.rfind(b"\n") + 1
        if not cut:
            parts.append(block)
            pending += len(block)
            if pending > limit:
                raise _too_long(path, number)
            continue
        whole = b"".join([*parts, block[:cut]]) if parts else block[:cut]
        if len(whole) > limit:
            for offset, line in enumerate(whole.split(b"\n")):
                if len(line) > limit:
                    raise _too_long(path, number + offset)
        count = whole.count(b"\n")
        yield number, position, whole, count
        number += count
        position += len(whole)
        rest = block[cut:]
        parts = [rest] if rest else []
        pending = len(rest)
        if pending > limit:
            raise _too_long(path, number)
    if pending:
        raise _cut_off(path, number)


def _too_long(path: str, number: int) -> CassetteError:
    return CassetteError(
        path,
        number,
        f"the line is longer than {MAX_LINE_BYTES:,} bytes, the most a reader accepts",
        "the file is damaged or not a cassette; re-record it",
    )


def load_streaming(path: str, blocks: Iterable[bytes], source: ChunkSource | None) -> Cassette:
    """A cassette read block by block. With a ``source`` the chunks are read from it when replayed; without,
    only the outline is kept (calls, statuses, outcomes, no chunks): every line is validated either way."""
    parser = _Parser(path, "lazy" if source is not None else "outline", source)
    for first, start, block, count in _line_runs(blocks, path):
        parser.parse_block(first, start, block, count)
    return parser.finish()


class StreamingCheck:
    """What ``load_streaming`` checks (every line against the schema, the calls' structure), over lines that
    were decoded elsewhere with the schema's decoder: ``header`` for line 1, ``lines`` for the lines of each
    block after it, ``finish`` at the end. Each raises the CassetteError that ``load_streaming`` raises."""

    def __init__(self, path: str) -> None:
        self._parser = _Parser(path, "outline")

    def header(self, line: bytes) -> None:
        self._parser.parse_line(1, line, 0)

    def lines(self, first: int, objects: list[Line]) -> None:
        """The decoded lines from line ``first`` on."""
        self._parser.add_parsed_lines(first, objects, None)

    def finish(self) -> None:
        self._parser.finish()


@dataclass(frozen=True)
class Finding:
    """What ``verify`` reports about a cassette: a problem, or (``incomplete``) a note on a call that was
    recorded incomplete and replays as recorded."""

    path: str
    line: int | None
    problem: str
    fix: str = ""
    incomplete: bool = False

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.problem}" + (f"\n  fix: {self.fix}" if self.fix else "")


def _finding(error: CassetteError) -> Finding:
    return Finding(error.path, error.line, error.problem, error.fix)


def problems(path: str, blocks: Iterable[bytes]) -> Iterator[Finding]:
    """Every unreadable or malformed line, then the first structural problem (a missing call_end, a line out
    of order), then notes on incomplete calls when there was no problem. Reads block by block: memory stays
    bounded by the longest line and the number of calls."""
    parser = _Parser(path, "outline")
    structural = True
    found = False
    try:
        for first, _, block in split_blocks(blocks, path):
            try:
                objects: list[Line] = _decoder.decode_lines(block) if first > 1 else []
            except (msgspec.MsgspecError, RecursionError):
                objects = []
            if not one_value_per_line(block, block.count(b"\n"), objects):  # a line is unreadable, or line 1
                objects = []
                for number, line in enumerate(block.split(b"\n")[:-1], start=first):
                    try:
                        objects.append(parser.decode(number, line))
                    except CassetteError as error:
                        found = True
                        yield _finding(error)
                if found:
                    structural = False
            if structural:
                try:
                    parser.add_parsed_lines(first, objects, None)
                except CassetteError as error:
                    found, structural = True, False
                    yield _finding(error)
    except CassetteError as error:
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
        if not call.complete:
            detail = f": {call.error_class}" if call.outcome == "error" else ""
            yield Finding(
                path, None, f"call {call.index} ({call.method} {call.url}) ended {call.outcome}{detail}", "", True
            )
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


_FIELD_AT = re.compile(r"^(.*?)(?: - at `\$(.*)`)?$", re.DOTALL)


class _Parser:
    """Feeds lines through the schema and the call structure. Modes: ``memory`` keeps every chunk, ``lazy``
    keeps where each event line is, ``outline`` keeps no chunk (for checking and listing)."""

    def __init__(
        self, path: str, mode: Literal["memory", "lazy", "outline"], source: ChunkSource | None = None
    ) -> None:
        self.path = path
        self.mode = mode
        self.source = source
        self.header: dict[str, Any] | None = None
        self.calls: dict[int, RecordedCall] = {}
        self.streaming: dict[int, RecordedCall] = {}  # calls with a response line and no call_end yet
        self._handlers: dict[type, Callable[[int, Any, int, int], None]] = {
            HeaderLine: self._line_header,
            RequestLine: self._line_request,
            ResponseLine: self._line_response,
            EventLine: self._line_event,
            CallEndLine: self._line_call_end,
        }

    def fail(self, line: int | None, problem: str, fix: str = "") -> CassetteError:
        return CassetteError(self.path, line, problem, fix)

    def decode(self, number: int, line: bytes) -> Line:
        """One line through the schema, or a CassetteError naming the line and the field."""
        if number == 1:
            return self._decode_header(line)
        try:
            return _decoder.decode(line)
        except RecursionError:
            raise self.fail(number, "unreadable line: JSON nested too deeply", _RERECORD) from None
        except msgspec.ValidationError as error:
            raise self._invalid(number, line, str(error)) from None
        except msgspec.DecodeError as error:
            raise self.fail(number, f"unreadable line: not valid JSON ({error})", _RERECORD) from None

    def _decode_header(self, line: bytes) -> HeaderLine:
        try:
            obj = _untyped.decode(line)
        except RecursionError:
            raise self.fail(1, "unreadable line: JSON nested too deeply", _RERECORD) from None
        except msgspec.DecodeError as error:
            raise self.fail(1, f"unreadable line: not valid JSON ({error})", _RERECORD) from None
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
        if kind not in ("header", "request", "response", "event", "call_end"):
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

    def parse_line(self, number: int, line: bytes, start: int) -> None:
        self.add_parsed_line(number, self.decode(number, line), start, start + len(line))

    def parse_block(self, first: int, start: int, block: bytes, count: int | None = None) -> None:
        """Whole lines (newlines included) from line ``first`` at byte ``start``; raises the first problem.
        ``count``: the number of lines in ``block``, when the caller has counted them."""
        lines = block.count(b"\n") if count is None else count
        rest: bytes | memoryview = block
        if first == 1:
            end = block.index(b"\n")
            self.parse_line(1, block[:end], start)
            first, start, lines = 2, start + end + 1, lines - 1
            rest = memoryview(block)[end + 1 :]  # not a copy of the whole file
        # One decode of the whole block in C is much faster than a decode per line; when it fails, the
        # line-by-line decode names the line that is wrong. (The lines are split apart only when needed.)
        try:
            objects: list[Line] | None = _decoder.decode_lines(rest)
        except (msgspec.MsgspecError, RecursionError):
            objects = None
        if objects is None or not one_value_per_line(rest, lines, objects):
            split = bytes(rest).split(b"\n")
            split.pop()
            for number, line in enumerate(split, start=first):
                self.parse_line(number, line, start)
                start += len(line) + 1
            return
        starts = None
        if self.mode == "lazy":
            lengths = map(len, bytes(rest).split(b"\n")[:-1])
            starts = list(accumulate(map(_plus_one, lengths), initial=start))
        self.add_parsed_lines(first, objects, starts)

    def add_parsed_lines(self, first: int, objects: list[Line], starts: list[int] | None) -> None:
        """Decoded lines from line ``first``; ``starts`` are their byte offsets (with one more, the end), given
        in lazy mode. The one loop over every event of a load: the call of the last event, its counts and
        its lists' appends are kept in locals while its events follow one another."""
        get = self.streaming.get
        unset = msgspec.UNSET
        keep = self.mode != "outline"
        number = first - 1
        call: RecordedCall | None = None
        index = -1  # no call's: the first event sets call, its counts and its appends
        total = size = 0
        unused: list[Any] = []
        add_chunk = add_span = add_offset = unused.append
        for position, obj in enumerate(objects):
            number += 1
            if not isinstance(obj, EventLine):
                if call is not None:
                    call.event_total, call.size, call, index = total, size, None, -1
                if starts is None:
                    self.add_parsed_line(number, obj, 0, 0)
                else:
                    self.add_parsed_line(number, obj, starts[position], starts[position + 1] - 1)
                continue
            if obj.call_index != index:
                if call is not None:
                    call.event_total, call.size = total, size
                call = get(obj.call_index)
                if call is None:
                    self._line_event(number, obj, 0, 0)  # raises the problem
                    return  # pragma: no cover
                index, total, size = obj.call_index, call.event_total, call.size
                add_chunk, add_offset = call.chunks.append, call.offsets.append
                if call.lazy is not None:
                    add_span = call.lazy.spans.append
            if obj.event_index != total:
                call.event_total, call.size = total, size  # type: ignore[union-attr]
                self._line_event(number, obj, 0, 0)  # raises the problem
                return  # pragma: no cover
            total += 1
            text = obj.text
            if text.__class__ is not str or obj.base64 is not unset:
                chunk = self._chunk(number, obj)
                size += len(chunk)
                if not keep:
                    continue
            elif not keep:
                continue
            elif starts is None:
                chunk = text.encode()
                size += len(chunk)
                add_chunk(chunk)
                add_offset(obj.t)
                continue
            else:  # lazy: only the size is needed now (len of ASCII text is its byte count)
                size += len(text) if text.isascii() else len(text.encode())
            if starts is not None:
                add_span((starts[position], starts[position + 1] - 1))
            else:
                add_chunk(chunk)
            add_offset(obj.t)
        if call is not None:
            call.event_total, call.size = total, size

    def _chunk(self, number: int, obj: EventLine) -> bytes:
        try:
            return obj.chunk()
        except ValueError as error:
            raise self.fail(number, f"malformed event line: {error}", _RERECORD) from None

    def add_parsed_line(self, number: int, obj: Line, start: int, end: int) -> None:
        if self.header is None and number != 1:
            raise self.fail(number, "line 1 is not a header line", "the file is not a vcr_transport cassette")
        self._handlers[obj.__class__](number, obj, start, end)

    def _line_header(self, number: int, obj: HeaderLine, start: int, end: int) -> None:
        if number != 1:
            raise self.fail(number, "a second header line: only line 1 may be a header", _RERECORD)

    def _call(self, number: int, index: int) -> RecordedCall:
        call = self.calls.get(index)
        if call is None:
            raise self.fail(number, f"call {index!r} has no request line before this line")
        if call.outcome is not None:
            raise self.fail(number, f"line for call {index} after its call_end")
        return call

    def _line_request(self, number: int, obj: RequestLine, start: int, end: int) -> None:
        index = obj.call_index
        if index in self.calls:
            raise self.fail(number, f"call_index {index!r} is repeated")
        self.calls[index] = RecordedCall(
            index=index,
            method=obj.method,
            url=obj.url,
            request_headers=obj.headers,
            body=None if obj.body is None else obj.body.stored(),
            line=number,
            lazy=LazyChunks(self.source) if self.source is not None else None,
        )

    def _line_response(self, number: int, obj: ResponseLine, start: int, end: int) -> None:
        call = self._call(number, obj.call_index)
        if call.status is not None:
            raise self.fail(number, f"a second response line for call {call.index}")
        call.status = obj.status
        self.streaming[call.index] = call
        call.response_headers = obj.headers
        call.http_version = obj.http_version

    def _line_event(self, number: int, obj: EventLine, start: int, end: int) -> None:
        call = self.calls.get(obj.call_index)
        if call is None or call.outcome is not None or call.status is None:
            self._call(number, obj.call_index)
            raise self.fail(number, f"event for call {obj.call_index} before its response line")
        if obj.event_index != call.event_total:
            expected = call.event_total
            raise self.fail(number, f"event_index {obj.event_index!r} of call {call.index}, expected {expected}")
        chunk = self._chunk(number, obj)
        call.event_total += 1
        call.size += len(chunk)
        mode = self.mode
        if mode == "outline":
            return
        if call.lazy is not None:
            call.lazy.spans.append((start, end))
        else:
            call.chunks.append(chunk)
        call.offsets.append(obj.t)

    def _line_call_end(self, number: int, obj: CallEndLine, start: int, end: int) -> None:
        call = self._call(number, obj.call_index)
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
