"""Quiet re-records: which calls of a new recording are the same as the older cassette's, so that their old
lines are kept byte for byte and a re-record that changed nothing leaves the file as it was. No I/O: the
storage shell hands in the two files as blocks of bytes, and a way to read byte ranges of the old one.

A call is *the same* when, at the same call index:

- its request is the same as matching compares it (``RequestMatcher.comparable``: volatile headers such as
  ``user-agent`` and ignored fields don't count);
- its response has the same status, HTTP version and headers, leaving out those that change on every
  request (``VOLATILE_RESPONSE_HEADERS``: the date, the length, request ids, timings, rate-limit counters);
- its body is the same bytes, the chunks joined (chunk boundaries and the ``t`` offsets don't count);
- it ended the same way (outcome, and the error's class and message).

An old call is kept only when the current redaction rules find nothing to remove in the parts that were not
compared (its URL, headers, and a request body that differs only in ignored fields): a re-record never
keeps a secret that the rules of the new recording would have removed. Bodies are compared by hash, so
neither file is held in memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import msgspec

from .._exceptions import CassetteError
from ._bodies import redact_url
from ._format import (
    FORMAT_VERSION,
    CallEndLine,
    ChunkSource,
    EventLine,
    HeaderLine,
    Line,
    RequestLine,
    ResponseLine,
    StreamingCheck,
    one_value_per_line,
    split_blocks,
)
from ._matching import VOLATILE_RESPONSE_HEADERS, RequestMatcher, is_volatile_response_header
from ._redaction import Redactor

__all__ = ["VOLATILE_RESPONSE_HEADERS", "CallPrint", "FilePrints", "QuietComparison", "QuietPlan", "merged_lines"]

_decoder = msgspec.json.Decoder(Line)


class _WrittenRequest(msgspec.Struct, tag_field="type", tag="request"):
    """A request line of a file this process just wrote: read without checking it again (the schema's
    RequestLine checks its URL, headers and body)."""

    call_index: int
    method: str
    url: str
    headers: list[tuple[str, str]]
    body: dict[str, Any] | None = None


class _WrittenResponse(msgspec.Struct, tag_field="type", tag="response"):
    """A response line of a file this process just wrote (see _WrittenRequest)."""

    call_index: int
    status: int
    headers: list[tuple[str, str]]
    http_version: str = "HTTP/1.1"


_written_decoder = msgspec.json.Decoder(HeaderLine | _WrittenRequest | _WrittenResponse | EventLine | CallEndLine)
_untyped = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder(order="sorted")


class _Place(msgspec.Struct):
    """What merging needs to know of a line: its type and its call."""

    type: str = ""
    call_index: int = -1


_place_decoder = msgspec.json.Decoder(_Place)
_plus_one = (1).__add__
Span = tuple[int, int]
_CACHED = 4096  # distinct URLs, header lists and header names whose check is remembered


_volatile = is_volatile_response_header


def _digest(*parts: Any) -> bytes:
    return hashlib.blake2b(_encoder.encode(parts), digest_size=16).digest()


@dataclass(slots=True)
class CallPrint:
    """One call of a cassette file as a quiet re-record compares it: ``digest`` once its call_end was read,
    ``spans`` the byte ranges of its lines in the file (adjacent lines merged into one range)."""

    index: int
    request: bytes
    clean: bool = True
    response: bytes = b""
    body: Any = field(default_factory=lambda: hashlib.blake2b(digest_size=16))
    digest: bytes = b""
    spans: list[Span] = field(default_factory=list)


@dataclass
class FilePrints:
    """Every call of a cassette file, by call index."""

    calls: dict[int, CallPrint]


@dataclass(frozen=True)
class QuietPlan:
    """What to write: ``unchanged`` when the old file already says it all (keep it, header included), else
    the old spans of each call kept byte for byte, by call index."""

    unchanged: bool
    kept: dict[int, list[Span]]


class QuietComparison:
    """Compares the calls of an older cassette and of a new recording of it (see the module's docstring).
    ``matcher`` is what matching compares (the session's options); ``redactor`` the rules of the new
    recording, which an old call's uncompared parts must pass unchanged to be kept."""

    def __init__(self, matcher: RequestMatcher | None = None, redactor: Redactor | None = None) -> None:
        self.matcher = matcher or RequestMatcher()
        self.redactor = redactor or Redactor()
        # Calls mostly repeat their URL and headers: each distinct one is checked once.
        self._clean: dict[Any, bool] = {}
        self._requests: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[dict[str, Any], str]] = {}
        self._request_prints: dict[bytes, bytes] = {}  # the old file's request lines (their hash): their print

    def prints(self, path: str, blocks: Iterable[bytes], *, old: bool) -> FilePrints | None:
        """The calls of a cassette given as blocks of bytes, or None when a line can't be read as one.
        ``old``: also check its uncompared parts against the redaction rules, keep its spans, and check the
        whole file as ``load_streaming`` does (none of an old file is kept unless all of it is valid); else
        it is the recording this process just wrote, whose lines are not checked against the schema again."""
        header = b""
        calls: dict[int, CallPrint] = {}
        check = StreamingCheck(path) if old else None
        unset = msgspec.UNSET
        try:
            for first, start, block in split_blocks(blocks, path):
                if first == 1:
                    header, _, block = block.partition(b"\n")
                    if not self._is_header(header):
                        return None
                    if check is not None:
                        check.header(header)
                    start += len(header) + 1
                    first = 2
                objects = (_decoder if old else _written_decoder).decode_lines(block)
                if not one_value_per_line(block, block.count(b"\n"), objects):
                    return None
                if check is not None:
                    check.lines(first, objects)
                lines = block.split(b"\n")
                ends = None
                if old:  # where each line ends in the file
                    ends = accumulate(map(_plus_one, map(len, lines[:-1])), initial=start)
                    next(ends)
                for obj, line in zip(objects, lines, strict=False):  # lines ends with the b"" after the last
                    if obj.__class__ is EventLine:  # the most lines by far: folded here
                        call = calls.get(obj.call_index)
                        if call is None or call.digest:
                            return None
                        text = obj.text
                        call.body.update(
                            text.encode() if text.__class__ is str and obj.base64 is unset else obj.chunk()
                        )
                    elif obj.__class__ is RequestLine or obj.__class__ is _WrittenRequest:
                        if obj.call_index in calls:
                            return None
                        call = calls[obj.call_index] = self._request(obj, old, line)
                    elif self._take(obj, calls, old):
                        call = calls[obj.call_index]
                    else:
                        return None
                    if ends is not None:  # the line's span, adjacent spans merged into one
                        line_start, line_end = start, next(ends)
                        spans = call.spans
                        if spans and spans[-1][1] == line_start:
                            spans[-1] = (spans[-1][0], line_end)
                        else:
                            spans.append((line_start, line_end))
                        start = line_end
            if check is not None:
                check.finish()
        except (CassetteError, msgspec.MsgspecError, RecursionError, ValueError):
            return None
        if not header or any(not call.digest for call in calls.values()):
            return None
        return FilePrints(calls)

    @staticmethod
    def _is_header(line: bytes) -> bool:
        try:
            obj = _untyped.decode(line)
        except (msgspec.MsgspecError, RecursionError):
            return False
        return isinstance(obj, dict) and obj.get("type") == "header" and obj.get("format_version") == FORMAT_VERSION

    def _take(self, obj: Line | _WrittenResponse, calls: dict[int, CallPrint], old: bool) -> bool:
        """Fold a response or call_end line into its call (``prints`` folds requests and events); False
        for a line out of place (a header, a line of a call not begun or already ended)."""
        call = calls.get(getattr(obj, "call_index", -1))
        if call is None or call.digest:
            return False
        if isinstance(obj, ResponseLine | _WrittenResponse):
            kept = [(name.lower(), value) for name, value in obj.headers if not _volatile(name.lower())]
            call.response = _digest(obj.status, obj.http_version, kept)
            if old and call.clean:
                call.clean = self._clean_headers(obj.headers)
        elif isinstance(obj, CallEndLine):
            error = None if obj.error is None else (obj.error.class_, obj.error.message)
            call.digest = _digest(call.request, call.response, call.body.digest(), obj.outcome, error)
        else:
            return False
        return True

    def _request(self, obj: RequestLine | _WrittenRequest, old: bool, line: bytes) -> CallPrint:
        """The print of a request ``line``. A new file's request line that is byte for byte an old one
        (the same call, asked the same way) has its print: it is not read again."""
        line_hash = hashlib.blake2b(line, digest_size=16).digest()
        if not old:
            digest = self._request_prints.get(line_hash)
            if digest is not None:
                return CallPrint(obj.call_index, digest)
        body: dict[str, Any] | None
        if isinstance(obj, _WrittenRequest):
            body = obj.body
        else:
            body = None if obj.body is None else obj.body.stored()
        matcher = self.matcher
        # Requests mostly repeat their method, URL and compared headers: each distinct set is read once.
        compared = tuple(pair for pair in obj.headers if not matcher.is_volatile(pair[0].lower()))
        key = (obj.method, obj.url, compared)
        request = self._requests.get(key)
        if request is None:
            if len(self._requests) >= _CACHED:
                self._requests.clear()
            request = self._requests[key] = matcher.comparable_request(obj.method, obj.url, compared)
        comparable = matcher.with_body(*request, body)
        call = CallPrint(obj.call_index, _digest(comparable))
        if old:
            self._request_prints[line_hash] = call.request
            assert isinstance(obj, RequestLine)
            call.clean = self._clean_request(obj, body, comparable["body"])
        return call

    def _clean_request(self, obj: RequestLine, body: dict[str, Any] | None, compared: Any) -> bool:
        """Whether the current rules leave the uncompared parts of an old request as they are."""
        redactor = self.redactor
        if not self._clean_headers(obj.headers):
            return False
        url_clean = self._clean.get(obj.url)
        if url_clean is None:
            url_clean = self._remember(obj.url, redact_url(obj.url, redactor) == obj.url)
        if not url_clean:
            return False
        if body is not None and "json" in body and compared != body["json"]:  # fields were left out
            return bool(redactor.redact_value(body["json"]) == body["json"])
        return True

    def _clean_headers(self, headers: list[tuple[str, str]]) -> bool:
        key = tuple(headers)
        clean = self._clean.get(key)
        if clean is None:
            clean = self._remember(key, self.redactor.redact_headers(headers) == headers)
        return clean

    def _remember(self, key: Any, clean: bool) -> bool:
        if len(self._clean) >= _CACHED:
            self._clean.clear()
        self._clean[key] = clean
        return clean

    @staticmethod
    def plan(old: FilePrints, new: FilePrints) -> QuietPlan:
        """The calls of ``new`` that are the same as ``old``'s at the same index, and whether that is all."""
        kept = {}
        for index, call in new.calls.items():
            before = old.calls.get(index)
            if before is not None and before.clean and before.digest == call.digest:
                kept[index] = before.spans
        return QuietPlan(len(kept) == len(new.calls) == len(old.calls), kept)


def merged_lines(path: str, new_blocks: Iterable[bytes], plan: QuietPlan, old: ChunkSource) -> Iterator[bytes]:
    """The new recording (its header first) with each kept call's lines replaced by its old lines, which
    are written together where the new call's request line stands."""
    for first, start, block in split_blocks(new_blocks, path):
        del start
        position = 0
        if first == 1:
            position = block.index(b"\n") + 1
        run = 0  # the start of the lines copied from this block but not yet given out
        while position < len(block):
            end = block.index(b"\n", position) + 1
            place = _place_decoder.decode(block[position : end - 1])
            spans = plan.kept.get(place.call_index)
            if spans is not None:
                if run < position:
                    yield block[run:position]
                if place.type == "request":
                    for span_start, span_end in spans:
                        yield old.read(span_start, span_end)
                run = end
            position = end
        if run < len(block):
            yield block[run:]
