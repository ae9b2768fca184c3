"""Cassette format v1: the model and its JSONL lines. No I/O: the storage shell reads and writes files.

One JSON object per line, written as things happen:

    header     {"type": "header", "format_version": 1, ...optional metadata}
    request    {"type": "request", "call_index", "method", "url", "headers": [[name, value]...], "body"}
    response   {"type": "response", "call_index", "status", "headers", "http_version"}
    event      {"type": "event", "call_index", "event_index", "t", "text" | "base64"}
    call_end   {"type": "call_end", "call_index", "event_count", "outcome", "error"?}

A request body is ``null``, ``{"json": value}``, ``{"text": str}`` or ``{"base64": str}``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, overload

from .._exceptions import CassetteError

__all__ = ["FORMAT_VERSION", "Cassette", "RecordedCall", "StoredBody"]

FORMAT_VERSION = 1
OUTCOMES = ("complete", "closed_early", "error")

StoredBody = dict[str, Any] | None


class ChunkSource(Protocol):
    """Where a lazily loaded cassette's lines are read from, by byte offsets (the storage shell)."""

    def read(self, start: int, end: int) -> bytes: ...


def dumps_line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


_encode_string = json.encoder.encode_basestring  # the C encoder: ensure_ascii=False, as dumps_line writes


def event_line(call_index: int, event_index: int, offset: float, chunk: bytes) -> str:
    """An event line, built directly: the same bytes ``dumps_line`` would give, on the hot path."""
    kind, value = encode_chunk(chunk)
    return (
        f'{{"type":"event","call_index":{call_index},"event_index":{event_index},"t":{offset!r},'
        f'"{kind}":{_encode_string(value)}}}\n'
    )


def encode_chunk(chunk: bytes) -> tuple[str, str]:
    """A chunk as ("text", str) when it is valid UTF-8 on its own, else ("base64", str)."""
    try:
        return "text", chunk.decode("utf-8")
    except UnicodeDecodeError:
        return "base64", base64.b64encode(chunk).decode("ascii")


@dataclass
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

    def __init__(self, source: ChunkSource, loads: Callable[[bytes], Any]) -> None:
        self._source = source
        self._loads = loads
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
        return event_chunk(self._loads(self._source.read(start, end)))


def event_chunk(obj: dict[str, Any]) -> bytes:
    """The raw chunk an event line carries."""
    text = obj.get("text")
    if text.__class__ is str:
        return text.encode()
    if isinstance(obj.get("base64"), str):
        return base64.b64decode(obj["base64"], validate=True)
    raise ValueError("an event needs a 'text' or a 'base64' string")


@dataclass
class Cassette:
    path: str
    header: dict[str, Any]
    calls: list[RecordedCall]

    @classmethod
    def parse(cls, data: bytes, path: str) -> Cassette:
        """Read a whole cassette. Refuses anything it can't replay faithfully, naming the line."""
        parser = _Parser(path)
        lines = data.split(b"\n")
        if lines[-1]:
            raise parser.fail(
                len(lines),
                "the last line is cut off (no newline): the recording was interrupted",
                "re-record the cassette",
            )
        lines.pop()
        # One parse of the whole file as a JSON array is much faster than a parse per line; when it fails,
        # the line-by-line parse names the line that is wrong.
        try:
            objects = parser.loads(b"[" + data[:-1].replace(b"\n", b",") + b"]") if lines else []
        except ValueError:
            objects = None
        if objects is None or len(objects) != len(lines):
            for number, line in enumerate(lines, start=1):
                parser.feed(number, line)
        else:
            take = parser.take
            for number, obj in enumerate(objects, start=1):
                take(number, obj)
        return parser.finish()


def _json_loads() -> Any:
    try:
        import orjson
    except ImportError:
        return json.loads
    return orjson.loads


class _Parser:
    def __init__(self, path: str, lazy_source: ChunkSource | None = None) -> None:
        self.path = path
        self.lazy_source = lazy_source
        self.span = (0, 0)
        self.header: dict[str, Any] | None = None
        self.calls: dict[int, RecordedCall] = {}
        self.loads = _json_loads()
        self._handlers = {
            "request": self._line_request,
            "response": self._line_response,
            "event": self._line_event,
            "call_end": self._line_call_end,
        }

    def fail(self, line: int | None, problem: str, fix: str = "") -> CassetteError:
        return CassetteError(self.path, line, problem, fix)

    def feed(self, number: int, line: bytes) -> None:
        try:
            obj = self.loads(line)
        except ValueError as exc:
            raise self.fail(number, f"not valid JSON ({exc})", "re-record the cassette") from None
        self.take(number, obj)

    def take(self, number: int, obj: Any) -> None:
        kind = obj.get("type") if isinstance(obj, dict) else None
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            self._unusual(number, kind, obj)
            return
        if self.header is None:
            raise self.fail(number, "line 1 is not a header line", "the file is not a vcr_transport cassette")
        try:
            handler(number, obj)
        except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as exc:
            raise self.fail(number, f"malformed {kind} line: {type(exc).__name__}: {exc}") from None

    def _unusual(self, number: int, kind: object, obj: Any) -> None:
        if not isinstance(obj, dict):
            raise self.fail(number, f"expected a JSON object, found {type(obj).__name__}")
        if self.header is None:
            self._header(number, kind, obj)
        elif kind == "header":
            raise self.fail(number, "a second header line: only line 1 may be a header")
        else:
            raise self.fail(
                number,
                f"unknown line type {kind!r}",
                "expected one of header, request, response, event, call_end; a newer vcr_transport may have written it",
            )

    def _header(self, number: int, kind: object, obj: dict[str, Any]) -> None:
        if kind != "header":
            raise self.fail(number, "line 1 is not a header line", "the file is not a vcr_transport cassette")
        version = obj.get("format_version")
        if version != FORMAT_VERSION:
            raise self.fail(
                number,
                f"format_version {version!r} is not supported; this vcr_transport reads version {FORMAT_VERSION}",
                "re-record the cassette, or use the vcr_transport version that wrote it",
            )
        self.header = obj

    def _call(self, number: int, obj: dict[str, Any]) -> RecordedCall:
        index = obj["call_index"]
        call = self.calls.get(index)
        if call is None:
            raise self.fail(number, f"call {index!r} has no request line before this line")
        if call.outcome is not None:
            raise self.fail(number, f"line for call {index} after its call_end")
        return call

    def _line_request(self, number: int, obj: dict[str, Any]) -> None:
        index = obj["call_index"]
        if not isinstance(index, int) or index in self.calls:
            raise self.fail(number, f"call_index {index!r} is repeated or not an integer")
        body = obj.get("body")
        if body is not None and not (
            isinstance(body, dict) and len(body) == 1 and next(iter(body)) in ("json", "text", "base64")
        ):
            raise self.fail(number, "request body must be null or one of {json}, {text}, {base64}")
        self.calls[index] = RecordedCall(
            index=index,
            method=str(obj["method"]),
            url=str(obj["url"]),
            request_headers=[(str(k), str(v)) for k, v in obj["headers"]],
            body=body,
            line=number,
            lazy=LazyChunks(self.lazy_source, self.loads) if self.lazy_source is not None else None,
        )

    def _line_response(self, number: int, obj: dict[str, Any]) -> None:
        call = self._call(number, obj)
        if call.status is not None:
            raise self.fail(number, f"a second response line for call {call.index}")
        call.status = int(obj["status"])
        call.response_headers = [(str(k), str(v)) for k, v in obj["headers"]]
        call.http_version = str(obj.get("http_version", "HTTP/1.1"))

    def _line_event(self, number: int, obj: dict[str, Any]) -> None:
        call = self.calls.get(obj["call_index"])
        if call is None or call.outcome is not None or call.status is None:
            self._call(number, obj)
            raise self.fail(number, f"event for call {obj['call_index']} before its response line")
        events = call.events
        if obj["event_index"] != len(events):
            raise self.fail(number, f"event_index {obj['event_index']!r} of call {call.index}, expected {len(events)}")
        chunk = event_chunk(obj)
        call.size += len(chunk)
        if call.lazy is not None:
            call.lazy.spans.append(self.span)
        else:
            call.chunks.append(chunk)
        call.offsets.append(float(obj.get("t", 0.0)))

    def _line_call_end(self, number: int, obj: dict[str, Any]) -> None:
        call = self._call(number, obj)
        outcome = obj["outcome"]
        if outcome not in OUTCOMES:
            raise self.fail(number, f"unknown outcome {outcome!r}; expected one of {', '.join(OUTCOMES)}")
        if obj["event_count"] != len(call.events):
            raise self.fail(
                number,
                f"call {call.index} ends with event_count {obj['event_count']!r} but has {len(call.events)} events",
            )
        if outcome != "error" and call.status is None:
            raise self.fail(number, f"call {call.index} ends {outcome!r} without a response line")
        if outcome == "error":
            error = obj["error"]
            call.error_class = str(error["class"])
            call.error_message = str(error["message"])
        call.outcome = outcome

    def finish(self) -> Cassette:
        if self.header is None:
            raise self.fail(None, "the file is empty: no header line", "record the cassette again")
        for call in self.calls.values():
            if call.outcome is None:
                raise self.fail(
                    call.line,
                    f"call {call.index} has no call_end line: the recording was interrupted",
                    "re-record the cassette",
                )
        indexes = sorted(self.calls)
        if indexes != list(range(len(indexes))):
            raise self.fail(None, f"call indexes are not 0..{len(indexes) - 1}: {indexes}")
        return Cassette(self.path, self.header, [self.calls[i] for i in indexes])
