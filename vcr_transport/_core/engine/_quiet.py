"""Quiet re-records: which calls of a new recording are the same as the older cassette's, so that their old
lines are kept byte for byte and a re-record that changed nothing leaves the file as it was. No I/O: the
storage shell hands in the two files as blocks of bytes, and a way to read byte ranges of the old one.

A call is *the same* when, at the same call index:

- its request is the same as matching compares it (``RequestMatcher.comparable``: volatile headers such as
  ``user-agent`` and ignored fields don't count);
- its response has the same status, HTTP version and headers, leaving out those that change on every
  request (``VOLATILE_RESPONSE_HEADERS``: the date, the length, request ids, timings, rate-limit counters);
- its body is the same bytes, the chunks joined (chunk boundaries and the ``t`` offsets don't count); a
  WebSocket session's messages are the same, in the same order and from the same side (their ``t`` offsets
  don't count);
- it ended the same way (outcome, the error's class and message, and whether an early stop was intended).

An old call is kept only when the current redaction rules find nothing to remove in the parts that were not
compared (its URL, headers, and a request body that differs only in ignored fields): a re-record never
keeps a secret that the rules of the new recording would have removed. Bodies are compared by hash, so
neither file is held in memory.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..._exceptions import CassetteError
from .._memo import Memo
from ..format._bodies import redact_url
from ..format._format import (
    CallEndLine,
    ChunkSource,
    EventLine,
    Line,
    MessageLine,
    Parser,
    RequestLine,
    ResponseLine,
    line_place,
)
from ..rules._redaction import Redactor
from ._matching import VOLATILE_RESPONSE_HEADERS, RequestMatcher, is_volatile_response_header

__all__ = ["VOLATILE_RESPONSE_HEADERS", "CallPrint", "FilePrints", "QuietComparison", "QuietPlan", "merged_lines"]

_encoder = msgspec.json.Encoder(order="sorted")
Span = tuple[int, int]
_CACHED = 4096  # distinct URLs, header lists and requests whose check or comparable form is remembered


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
        self._clean: Memo[Any, bool] = Memo(_CACHED)
        self._requests: Memo[tuple[str, str, tuple[tuple[str, str], ...]], tuple[dict[str, Any], str]] = Memo(_CACHED)
        self._request_prints: dict[bytes, bytes] = {}  # the old file's request lines (their hash): their print

    def prints(self, path: str, blocks: Iterable[bytes], *, old: bool) -> FilePrints | None:
        """The calls of a cassette given as blocks of bytes, or None when it is not a cassette the strict
        parser reads whole (none of an old file is kept unless all of it is valid). ``old``: also check its
        uncompared parts against the redaction rules and keep its spans; else it is the recording this
        process just wrote, whose request lines that are byte for byte old ones take their prints."""
        calls: dict[int, CallPrint] = {}
        parser = Parser(path)
        place = _Place()
        try:
            for run in parser.runs(blocks):
                objects: list[tuple[Line, bytes]] = []
                parser.take(run, objects)
                self._fold_run(objects, calls, old, place)
            parser.finish()
        except CassetteError:
            return None
        place.close()
        return FilePrints(calls)

    def _fold_run(
        self, objects: list[tuple[Line, bytes]], calls: dict[int, CallPrint], old: bool, place: _Place
    ) -> None:
        """Fold checked lines into the prints of their calls; for an old file, each line's span too (the
        lines of a call one after the other make one span). Events, the most lines by far, are folded here:
        the parser checked that each has exactly one of text and base64."""
        event, start = EventLine, place.start
        pieces: list[bytes] = []  # the chunks of ``call``'s events one after the other, hashed together
        call: CallPrint | None = None
        for obj, line in objects:
            if obj.__class__ is event:
                owner = calls[obj.call_index]
                if owner is not call:
                    _hash_pieces(call, pieces)
                    call = owner
                text = obj.text
                pieces.append(text.encode() if text.__class__ is str else obj.chunk())
            else:
                _hash_pieces(call, pieces)
                call = self._fold(obj, line, calls, old)
            if old and call is not place.call:
                place.move(call, start)
            start += len(line)
        _hash_pieces(call, pieces)
        place.start = start

    def _fold(self, obj: Line, line: bytes, calls: dict[int, CallPrint], old: bool) -> CallPrint | None:
        """Fold a checked line other than an event into the print of its call (None for the header)."""
        if isinstance(obj, RequestLine):
            call = calls[obj.call_index] = self._request(obj, old, line)
        elif isinstance(obj, ResponseLine):
            call = calls[obj.call_index]
            kept = [(name.lower(), value) for name, value in obj.headers if not _volatile(name.lower())]
            call.response = _digest(obj.status, obj.http_version, kept)
            if old and call.clean:
                call.clean = self._clean_headers(obj.headers)
        elif isinstance(obj, MessageLine):
            call = calls[obj.call_index]
            text, binary = obj.text, obj.base64
            call.body.update(
                _digest(obj.from_, text if isinstance(text, str) else None, binary if isinstance(binary, str) else None)
            )
        elif isinstance(obj, CallEndLine):
            call = calls[obj.call_index]
            error = None if obj.error is None else (obj.error.class_, obj.error.message)
            intent = "" if obj.early_stop is msgspec.UNSET else obj.early_stop
            call.digest = _digest(call.request, call.response, call.body.digest(), obj.outcome, error, intent)
        else:
            return None
        return call

    def _request(self, obj: RequestLine, old: bool, line: bytes) -> CallPrint:
        """The print of a request ``line``. A new file's request line that is byte for byte an old one
        (the same call, asked the same way) has its print: it is not read again."""
        line_hash = hashlib.blake2b(line, digest_size=16).digest()
        if not old:
            digest = self._request_prints.get(line_hash)
            if digest is not None:
                return CallPrint(obj.call_index, digest)
        body = None if obj.body is None else obj.body.stored()
        matcher = self.matcher
        # Requests mostly repeat their method, URL and compared headers: each distinct set is read once.
        compared = tuple(pair for pair in obj.headers if not matcher.is_volatile(pair[0].lower()))
        request = self._requests.get(
            (obj.method, obj.url, compared), lambda: matcher.comparable_request(obj.method, obj.url, compared)
        )
        comparable = matcher.with_body(*request, body)
        call = CallPrint(obj.call_index, _digest(comparable))
        if old:
            self._request_prints[line_hash] = call.request
            call.clean = self._clean_request(obj, body, comparable["body"])
        return call

    def _clean_request(self, obj: RequestLine, body: dict[str, Any] | None, compared: Any) -> bool:
        """Whether the current rules leave the uncompared parts of an old request as they are."""
        redactor = self.redactor
        if not self._clean_headers(obj.headers):
            return False
        if not self._clean.get(obj.url, lambda: redact_url(obj.url, redactor) == obj.url):
            return False
        if body is not None and "json" in body and compared != body["json"]:  # fields were left out
            return bool(redactor.redact_value(body["json"]) == body["json"])
        return True

    def _clean_headers(self, headers: list[tuple[str, str]]) -> bool:
        return self._clean.get(tuple(headers), lambda: self.redactor.redact_headers(headers) == headers)

    @staticmethod
    def plan(old: FilePrints, new: FilePrints) -> QuietPlan:
        """The calls of ``new`` that are the same as ``old``'s at the same index, and whether that is all."""
        kept = {}
        for index, call in new.calls.items():
            before = old.calls.get(index)
            if before is not None and before.clean and before.digest == call.digest:
                kept[index] = before.spans
        return QuietPlan(len(kept) == len(new.calls) == len(old.calls), kept)


def _hash_pieces(call: CallPrint | None, pieces: list[bytes]) -> None:
    """Add the chunks in ``pieces`` to ``call``'s body hash, and empty it."""
    if pieces:
        assert call is not None
        call.body.update(b"".join(pieces))
        pieces.clear()


class _Place:
    """Where ``QuietComparison.prints`` is in an old file: the offset of the next line, and the call whose
    lines run from ``since`` to there (None: the header), whose span is added when another call's line
    comes."""

    __slots__ = ("call", "since", "start")

    def __init__(self) -> None:
        self.start = 0
        self.since = 0
        self.call: CallPrint | None = None

    def move(self, call: CallPrint | None, start: int) -> None:
        """The line at ``start`` is ``call``'s, another call's than the line before."""
        self.close(start)
        self.call, self.since = call, start

    def close(self, end: int | None = None) -> None:
        """The current call's lines end at ``end`` (the end of the file when None): their span is added."""
        end = self.start if end is None else end
        if self.call is not None and end > self.since:
            self.call.spans.append((self.since, end))
        self.call = None


def merged_lines(path: str, new_blocks: Iterable[bytes], plan: QuietPlan, old: ChunkSource) -> Iterator[bytes]:
    """The new recording (its header first) with each kept call's lines replaced by its old lines: written
    together where the new call's request line stands, all but its call_end, which stands where the new
    call_end does (the line order says which calls overlapped: ``overlap_groups``)."""
    header = True
    ends: dict[int, bytes] = {}  # the old call_end line of each kept call whose request was written
    for run in Parser(path).runs(new_blocks):
        copied: list[bytes] = []  # lines of this run given out as they are, not yet yielded
        for line in io.BytesIO(run):
            if header:
                header = False
                copied.append(line)
                continue
            kind, index = line_place(line)
            spans = plan.kept.get(index)
            if spans is None:
                copied.append(line)
                continue
            if copied:
                yield b"".join(copied)
                copied = []
            if kind == "request":
                lines = b"".join(old.read(span_start, span_end) for span_start, span_end in spans)
                last = lines.rfind(b"\n", 0, len(lines) - 1) + 1  # where its last line, the call_end, starts
                ends[index] = lines[last:]
                yield lines[:last]
            elif kind == "call_end":
                yield ends.pop(index)
        if copied:
            yield b"".join(copied)
