"""Two cassettes compared call by call, and a changed text shown as its changed words. No I/O.

**Pairing.** Calls are paired by their requests, not by position (``paired_calls``): a re-recording of
concurrent calls finishes them in another order, and a new call in the middle shifts every later one. First
each call of B takes the first unpaired call of A whose request matching sees as the same; then each call
of B recorded concurrently (``overlap_groups``: a group of more than one call) takes the first unpaired
call of A recorded concurrently that continues the same conversation (``_conversation_key``: the model, the
system prompt and the messages before the last one: a re-recording repeats them, while the last one, a
tool's result or the user's new turn, may change): a concurrent group finishes in another order and starts
its next turns in that order, so positions say nothing there; then each call left takes, among the unpaired
calls of A to the same method and route, the one with as many messages and the most alike request, the
nearest by position on a tie; the calls still left are only in A or only in B. Each request's keys are
worked out once, and each step is linear in the calls.

**What is compared.** The request as matching sees it (``RequestMatcher.comparable``). The response as a
reader sees it: status, outcome, headers, and the body with its content-encoding undone: JSON parsed; a
stream as its reassembled text and tool calls (the vendor's deltas joined) plus its events, aligned one to
one, with their text pieces left out (they are in the text) so that a changed word shows once, and a
changed chunking or a changed field of an event shows in the events.

**What is marked** (``Difference.kind``, see ``_review``): ``volatile`` for what changes on every recording
(the request headers matching skips, ``VOLATILE_RESPONSE_HEADERS``, ``VOLATILE_FIELDS``): left out unless
asked for, and counted; ``padding`` for random stream padding, summed up in one line per call;
``whitespace`` for texts with the same words; ``added`` and ``removed`` for a call only in B or only in A.
"""

from __future__ import annotations

import base64
import bisect
import difflib
import json
import re
import zlib
from collections import defaultdict, deque
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .._core.engine._matching import VOLATILE_HEADERS, RequestMatcher, is_volatile_response_header, iter_differences
from .._core.format._bodies import DecodeBudget
from .._core.format._format import Cassette, RecordedCall, decode_json, overlap_groups
from .._core.views._conversation import Message, request_messages, request_model
from .._core.views._review import PADDING_FIELDS, VOLATILE_FIELDS, change_kind, described_bytes
from .._core.views._view import NOT_JSON, CallView, call_view
from .._display import MISSING

__all__ = [
    "ComparedCall",
    "Difference",
    "cassette_differences",
    "changed_words",
    "compared_calls",
    "paired_calls",
    "reading_order",
    "recorded_concurrently",
    "word_opcodes",
]


@dataclass
class Difference:
    """One difference between two cassettes: the calls (their indexes in A and in B; None where a call is
    only in the other), the field path, the value in each (``MISSING`` where one has none) and its kind:
    ``changed``, ``whitespace``, ``padding``, ``volatile``, ``added`` (a call only in B) or ``removed``."""

    a_call: int | None
    b_call: int | None
    path: str
    a: Any
    b: Any
    kind: str = "changed"

    @property
    def call(self) -> str:
        """``3`` when both cassettes have the call at the same index, ``3 -> 5`` when not, ``3`` alone for
        a call only in one of them."""
        if self.a_call is None or self.b_call is None or self.a_call == self.b_call:
            return str(self.b_call if self.a_call is None else self.a_call)
        return f"{self.a_call} -> {self.b_call}"


@dataclass
class ComparedCall:
    """A call of A and the call of B it is paired with (``paired_calls``), viewed once each (``call_view``;
    None for the side that has no call), and how they differ. ``hidden``: how many volatile differences
    were left out."""

    a_index: int | None
    b_index: int | None
    a: CallView | None
    b: CallView | None
    differences: list[Difference]
    hidden: int = 0

    @property
    def index(self) -> int:
        """B's index (the page shows B's calls), else A's."""
        return self.b_index if self.b_index is not None else self.a_index  # type: ignore[return-value]


# --- pairing -------------------------------------------------------------------------------------------

_NEAREST = 32  # candidates weighed for a call whose request changed: the nearest by position


def _common_head(a: str, b: str) -> int:
    """The length of the common head of two strings, by halving (string comparisons run in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _alike(a: str, b: str) -> float:
    """How alike two requests' keys are, from 0 to 1: their common head and tail against the longer."""
    if not a and not b:
        return 1.0
    head = _common_head(a, b)
    tail = _common_head(a[head:][::-1], b[head:][::-1])
    return (head + tail) / max(len(a), len(b))


@dataclass
class _Request:
    index: int
    key: str  # the request as matching compares it, as canonical JSON
    route: tuple[str, str, str, str]  # method, scheme, host, path
    messages: int
    conversation: str | None  # ``_conversation_key``


def _conversation_key(route: tuple[str, str, str, str], model: str, messages: list[Message]) -> str | None:
    """The conversation a request continues: its route, its model and every message but the last (the
    system prompt included), by role, text and tool calls (no tool-call ids: a vendor draws new ones on
    every recording); None for a request that continues none (no message but the system prompt before
    its last: concurrent first turns share that, and are told apart by their last message instead)."""
    before = messages[:-1]
    if not any(message.role != "system" for message in before):
        return None
    said = [[m.role, m.text, [[t.name, t.arguments] for t in m.tool_calls]] for m in before]
    return json.dumps([route, model, said], ensure_ascii=False)


def _request(matcher: RequestMatcher, call: RecordedCall) -> _Request:
    fields = matcher.comparable(call.method, call.url, call.request_headers, call.body)
    parts = urlsplit(call.url)
    body = call.body["json"] if call.body is not None and "json" in call.body else None
    route = (call.method.upper(), parts.scheme, parts.netloc, parts.path or "/")
    messages = request_messages(body)
    return _Request(
        call.index,
        json.dumps(fields, sort_keys=True, default=str, ensure_ascii=False),
        route,
        len(messages),
        _conversation_key(route, request_model(body, call.url), messages),
    )


def paired_calls(a: Sequence[RecordedCall], b: Sequence[RecordedCall]) -> list[tuple[int | None, int | None]]:
    """(index in A, index in B) for every call of both, paired by their requests (this module's docstring):
    in B's order, then the calls only in A in theirs."""
    matcher = RequestMatcher()
    requests_a = [_request(matcher, call) for call in a]
    requests_b = [_request(matcher, call) for call in b]
    pair = _pair_same(requests_a, requests_b)  # position in B -> position in A
    _pair_conversations(requests_a, requests_b, _concurrent(a), _concurrent(b), pair)
    _pair_alike(requests_a, requests_b, pair)
    pairs: list[tuple[int | None, int | None]] = [
        (requests_a[pair[j]].index if j in pair else None, requests_b[j].index) for j in range(len(b))
    ]
    paired = set(pair.values())
    return pairs + [(requests_a[i].index, None) for i in range(len(a)) if i not in paired]


def _pair_same(requests_a: list[_Request], requests_b: list[_Request]) -> dict[int, int]:
    """Each call of B paired with the first call of A left with the same comparable request: position in B ->
    position in A."""
    same: dict[str, deque[int]] = defaultdict(deque)
    for position, request in enumerate(requests_a):
        same[request.key].append(position)
    pair: dict[int, int] = {}
    for position, request in enumerate(requests_b):
        if same[request.key]:
            pair[position] = same[request.key].popleft()
    return pair


def _concurrent(calls: Sequence[RecordedCall]) -> list[bool]:
    """Whether each call was recorded concurrently: in a group of more than one (``overlap_groups``)."""
    groups = overlap_groups(calls)
    sizes: dict[int, int] = defaultdict(int)
    for group in groups:
        sizes[group] += 1
    return [sizes[group] > 1 for group in groups]


def _pair_conversations(
    requests_a: list[_Request],
    requests_b: list[_Request],
    concurrent_a: list[bool],
    concurrent_b: list[bool],
    pair: dict[int, int],
) -> None:
    """Pair each call of B recorded concurrently and left unpaired (``pair``: position in B -> position in A)
    with the first unpaired call of A recorded concurrently that continues the same conversation."""
    taken = set(pair.values())
    same: dict[str, deque[int]] = defaultdict(deque)
    for position, conversation in _open_conversations(requests_a, concurrent_a, taken):
        same[conversation].append(position)
    for position, conversation in _open_conversations(requests_b, concurrent_b, pair):
        if same.get(conversation):
            pair[position] = same[conversation].popleft()


def _open_conversations(
    requests: list[_Request], concurrent: list[bool], taken: Container[int]
) -> Iterator[tuple[int, str]]:
    """(position, conversation) of each call recorded concurrently, not in ``taken``, that continues a
    conversation."""
    for position, request in enumerate(requests):
        if concurrent[position] and position not in taken and request.conversation is not None:
            yield position, request.conversation


def _pair_alike(requests_a: list[_Request], requests_b: list[_Request], pair: dict[int, int]) -> None:
    """Pair each call of B left unpaired (``pair``: position in B -> position in A) with the most alike of the
    ``_NEAREST`` unpaired calls of A nearest to it on its route."""
    taken = set(pair.values())
    routes: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)
    for position, request in enumerate(requests_a):
        if position not in taken:
            routes[request.route].append(position)
    unpaired = {route: _Unpaired(positions) for route, positions in routes.items()}
    for position, request in enumerate(requests_b):
        nearest = [] if position in pair else unpaired.get(request.route, _NONE).nearest(position, _NEAREST)
        if not nearest:
            continue
        chosen = min(
            nearest,
            key=lambda i: (
                abs(requests_a[i].messages - request.messages),
                -_alike(requests_a[i].key, request.key),
                abs(i - position),
            ),
        )
        pair[position] = chosen
        unpaired[request.route].take(chosen)


class _Unpaired:
    """The positions of A's calls on one route that are not paired yet, in order: the nearest to a position,
    and one taken, each in about constant time. Each side's next free position is found by following links
    past the taken ones, shortened as they are followed (a list rescanned or shifted at every call of B made
    pairing quadratic in a cassette of many changed calls)."""

    def __init__(self, positions: list[int]) -> None:
        self.positions = positions
        self._right = list(range(len(positions) + 1))  # j: some j' >= j free, or len(positions): none
        self._left = list(range(len(positions) + 1))  # j: some j' <= j with j' - 1 free, or 0: none

    @staticmethod
    def _follow(links: list[int], j: int) -> int:
        while links[j] != j:
            links[j] = links[links[j]]
            j = links[j]
        return j

    def nearest(self, position: int, count: int) -> list[int]:
        """The ``count`` free positions nearest to ``position``, the nearest first (the earlier on a tie)."""
        at = bisect.bisect_left(self.positions, position)
        found: list[int] = []
        j = self._follow(self._right, at)
        while j < len(self.positions) and len(found) < count:
            found.append(j)
            j = self._follow(self._right, j + 1)
        j = self._follow(self._left, at)
        while j > 0 and len(found) < 2 * count:
            found.append(j - 1)
            j = self._follow(self._left, j - 1)
        in_order = sorted(self.positions[j] for j in found)
        return sorted(in_order, key=lambda i: abs(i - position))[:count]

    def take(self, position: int) -> None:
        j = bisect.bisect_left(self.positions, position)
        self._right[j], self._left[j + 1] = j + 1, j


_NONE = _Unpaired([])  # a route of B that A has no unpaired call on


def _lines_of(call: RecordedCall) -> int:
    """How many lines a call takes when its lines are not interleaved with another's."""
    return 1 + (call.status is not None) + len(call.events) + len(call.messages) + (call.outcome is not None)


def recorded_concurrently(cassette: Cassette) -> bool:
    """Whether the lines of the cassette's calls interleave: calls that overlapped while recorded, which a
    re-recording may number in another order."""
    calls = cassette.calls
    return any(later.line != call.line + _lines_of(call) for call, later in zip(calls, calls[1:], strict=False))


def reading_order(cassette: Cassette) -> list[RecordedCall]:
    """The cassette's calls in the order a reader compares them: as recorded, or for calls recorded
    concurrently (``recorded_concurrently``) by their requests (route, number of messages, request), so
    that two recordings of the same calls list them in the same order whichever finished first."""
    if not recorded_concurrently(cassette):
        return list(cassette.calls)
    matcher = RequestMatcher()
    keyed = [(_request(matcher, call), call) for call in cassette.calls]
    keyed.sort(key=lambda pair: (pair[0].route, pair[0].messages, pair[0].key))
    return [call for _, call in keyed]


# --- comparing two calls --------------------------------------------------------------------------------

# The keys whose strings are the pieces of a stream's text or tool-call arguments: compared in the text.
_TEXT_KEYS = frozenset({"content", "text", "delta", "partial_json", "arguments", "thinking", "refusal"})


def _without_text(value: Any) -> Any:
    """An event's data with the strings that make up the reply's text shown as ``…``."""
    if isinstance(value, dict):
        return {k: "…" if k in _TEXT_KEYS and isinstance(v, str) else _without_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_text(item) for item in value]
    return value


def _signature(value: Any) -> str:
    """An event as it is aligned: its data without text, volatile fields and padding."""
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in VOLATILE_FIELDS and k not in PADDING_FIELDS}
        return json.dumps(
            {k: _without_volatile(v) for k, v in value.items()}, sort_keys=True, default=str, ensure_ascii=False
        )
    return json.dumps(value, default=str, ensure_ascii=False)


def _without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_volatile(v) for k, v in value.items() if k not in VOLATILE_FIELDS and k != "obfuscation"}
    if isinstance(value, list):
        return [_without_volatile(item) for item in value]
    return value


def _event_values(view: CallView) -> list[Any]:
    """A stream's events as compared: the name and the data (parsed when it is JSON), without the pieces of
    the text when the text is compared on its own (a vendor's stream: ``_response_fields``)."""
    joined = bool(view.reply.text or view.reply.tool_calls)
    values: list[Any] = []
    for event in view.readable_stream or []:
        try:
            data: Any = decode_json(event.data)
        except ValueError:
            data = event.data
        data = _without_text(data) if joined else data
        values.append({"event": event.name, "data": data} if event.name else data)
    return values


def _event_differences(a: list[Any], b: list[Any]) -> Iterator[tuple[str, Any, Any]]:
    """The events of two streams aligned one to one by their signatures (``word_opcodes``), then each pair
    compared field by field; an event on one side only is a difference of its own. Paths are B's."""
    if len(a) != len(b):
        yield "response.events", f"{len(a)} events", f"{len(b)} events"
    signatures_a, signatures_b = [_signature(x) for x in a], [_signature(x) for x in b]
    for _tag, i1, i2, j1, j2 in word_opcodes(signatures_a, signatures_b):
        for offset in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + offset, j1 + offset
            left = a[i] if i < i2 else MISSING
            right = b[j] if j < j2 else MISSING
            where = f"response.events[{j if j < j2 else j2}]"
            yield from iter_differences(left, right, where)


def _message_value(data: str | bytes) -> Any:
    if isinstance(data, bytes):
        return {"base64": base64.b64encode(data).decode("ascii")}
    try:
        return decode_json(data)
    except ValueError:
        return data


def _body_value(view: CallView) -> Any:
    """A body that is no stream as it is compared: JSON parsed, text as it is, and a binary body (or one shown
    encoded, past the bound) by its size and hash, never as its bytes read as text."""
    if view.json is not NOT_JSON:
        return view.json
    if view.binary:
        return f"{described_bytes(view.body)}{f' ({view.note})' if view.note else ''}"
    return view.text


def _response_fields(view: CallView) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "status": view.status,
        "outcome": view.outcome,
        "headers": {k.lower(): v for k, v in view.response_headers},
    }
    if view.close is not None:  # a WebSocket session: its messages (JSON parsed) and how it closed
        messages = [[side, _message_value(data)] for side, data, _ in view.websocket_messages]
        return fields | {"messages": messages, "close": list(view.close)}
    if view.stream is None:
        return fields | {"body": _body_value(view)}
    reply = view.reply
    if reply.text or reply.tool_calls:
        fields["text"] = reply.text
        fields["tool_calls"] = [f"{call.name}({call.arguments})" for call in reply.tool_calls]
    return fields


def _kind(path: str, a: Any, b: Any, matcher: RequestMatcher) -> str:
    """The kind of one difference (``Difference.kind``)."""
    last = path.rsplit(".", 1)[-1].split("[", 1)[0]
    if path.startswith("headers.") and matcher.is_volatile(path.removeprefix("headers.")):
        return "volatile"
    if path.startswith("response.headers.") and is_volatile_response_header(path.removeprefix("response.headers.")):
        return "volatile"
    if path.startswith("response.") and last in VOLATILE_FIELDS:
        return "volatile"
    return change_kind(path, a, b)


def _call_differences(
    a: CallView, b: CallView, everything: RequestMatcher, matcher: RequestMatcher
) -> Iterator[tuple[str, Any, Any, str]]:
    """(path, a, b, kind) of every difference between two paired calls, volatile ones included."""
    ra = everything.comparable(a.method, a.url, a.request_headers, a.request_body)
    rb = everything.comparable(b.method, b.url, b.request_headers, b.request_body)
    found = [
        d
        for section in ("method", "url", "headers", "body")
        for d in iter_differences(ra[section], rb[section], section)
    ]
    found += iter_differences(_response_fields(a), _response_fields(b), "response")
    if a.stream is not None or b.stream is not None:
        found += _event_differences(_event_values(a), _event_values(b))
    for path, left, right in found:
        yield path, left, right, _kind(path, left, right, matcher)


def _compared(
    a: CallView, b: CallView, everything: RequestMatcher, matcher: RequestMatcher, volatile: bool
) -> ComparedCall:
    shown: list[Difference] = []
    hidden = 0
    padded: set[str] = set()
    for path, left, right, kind in _call_differences(a, b, everything, matcher):
        if kind == "volatile" and not volatile:
            hidden += 1
        elif kind == "padding":
            padded.add(path.rsplit(".", 1)[0])
        else:
            shown.append(Difference(a.index, b.index, path, left, right, kind))
    if padded:
        count = f"{len(padded)} event{'s' if len(padded) > 1 else ''}"
        shown.append(Difference(a.index, b.index, "response.events", count, count, "padding"))
    return ComparedCall(a.index, b.index, a, b, shown, hidden)


def _described(call: RecordedCall) -> str:
    return f"{call.method} {call.url}"


def compared_calls(a: Cassette, b: Cassette, *, volatile: bool = False) -> Iterator[ComparedCall]:
    """Two cassettes compared call by call, paired by their requests (``paired_calls``), each call viewed
    once (``call_view``). ``volatile``: the volatile differences are given too (kind ``volatile``)."""
    everything = RequestMatcher(compare_headers=VOLATILE_HEADERS)
    matcher = RequestMatcher()
    of_a, of_b = DecodeBudget(), DecodeBudget()  # each file's bodies, decoded in all
    for ia, ib in paired_calls(a.calls, b.calls):
        if ia is not None and ib is not None:
            views = call_view(a.calls[ia], of_a), call_view(b.calls[ib], of_b)
            yield _compared(*views, everything, matcher, volatile)
        elif ib is not None:
            call = b.calls[ib]
            yield ComparedCall(
                None,
                ib,
                None,
                call_view(call, of_b),
                [Difference(None, ib, "call", MISSING, _described(call), "added")],
            )
        elif ia is not None:
            call = a.calls[ia]
            yield ComparedCall(
                ia, None, None, None, [Difference(ia, None, "call", _described(call), MISSING, "removed")]
            )


def cassette_differences(a: Cassette, b: Cassette, *, volatile: bool = False) -> Iterator[Difference]:
    """Every difference between two cassettes, call by call (``compared_calls``)."""
    for compared in compared_calls(a, b, volatile=volatile):
        yield from compared.differences


Opcode = tuple[str, int, int, int, int]  # difflib's: (tag, a from, a to, b from, b to)

# A word and the whitespace after it; a punctuation mark and the whitespace after it; leading whitespace.
_TOKENS = re.compile(r"\w+\s*|[^\w\s]\s*|\s+")
WORD_LEVEL = 400  # the most words on either side that a changed stretch is compared word by word
_UNIT_MOST = 64  # the most words in one unit of the coarse comparison
MOST_CHANGES = 100  # changes shown in one text; the rest are counted
MOST_CHANGED_CHARACTERS = 400  # of one side of one change; the rest are counted


def _units(tokens: list[str], low: int, high: int) -> list[tuple[int, int]]:
    """``tokens[low:high]`` cut into units for the coarse comparison: a unit ends after a line, after a
    word whose CRC is a multiple of 8 (so the cuts depend on the words, and an inserted word moves no
    cut but its own), or at ``_UNIT_MOST`` words."""
    spans: list[tuple[int, int]] = []
    start = low
    for position in range(low, high):
        token = tokens[position]
        if position + 1 - start >= _UNIT_MOST or "\n" in token or zlib.crc32(token.encode()) & 7 == 0:
            spans.append((start, position + 1))
            start = position + 1
    if start < high:
        spans.append((start, high))
    return spans


def _stretch_changes(a: list[str], b: list[str], span: Opcode, coarse: bool) -> Iterator[Opcode]:
    """The opcodes of ``a[i1:i2]`` against ``b[j1:j2]`` (``span``), with bounded work: word by word when
    both sides are at most ``WORD_LEVEL`` words; else (``coarse``) unit by unit first (``_units``), then
    word by word inside each changed stretch small enough, the others as replaced whole. difflib's cost
    grows with the product of the lengths, and faster still with words that recur (spaces, "the")."""
    _, i1, i2, j1, j2 = span
    if i1 == i2 or j1 == j2:
        if i1 != i2 or j1 != j2:
            yield ("delete" if j1 == j2 else "insert", i1, i2, j1, j2)
    elif i2 - i1 <= WORD_LEVEL and j2 - j1 <= WORD_LEVEL:
        yield from _word_changes(a, b, span)
    elif coarse:
        yield from _unit_changes(a, b, span)
    else:
        yield "replace", i1, i2, j1, j2


def _word_changes(a: list[str], b: list[str], span: Opcode) -> Iterator[Opcode]:
    """``span`` compared word by word (difflib, no junk), as opcodes of ``a`` and ``b``."""
    _, i1, i2, j1, j2 = span
    matcher = difflib.SequenceMatcher(None, a[i1:i2], b[j1:j2], autojunk=False)
    for tag, x1, x2, y1, y2 in matcher.get_opcodes():
        yield tag, i1 + x1, i1 + x2, j1 + y1, j1 + y2


def _unit_changes(a: list[str], b: list[str], span: Opcode) -> Iterator[Opcode]:
    """The coarse half of ``_stretch_changes``: ``span`` compared unit by unit (``_units``), each changed
    stretch then word by word when small enough, else as replaced whole."""
    _, i1, i2, j1, j2 = span
    units_a, units_b = _units(a, i1, i2), _units(b, j1, j2)
    texts_a = ["".join(a[start:end]) for start, end in units_a]
    texts_b = ["".join(b[start:end]) for start, end in units_b]
    # autojunk: a unit that recurs (a repeated line) seeds no match, so the work stays near-linear.
    for tag, u1, u2, v1, v2 in difflib.SequenceMatcher(None, texts_a, texts_b).get_opcodes():
        words = (tag, *_words_of_units(units_a, u1, u2, i2), *_words_of_units(units_b, v1, v2, j2))
        if tag == "equal":
            yield words
        else:
            yield from _stretch_changes(a, b, words, coarse=False)


def _words_of_units(units: list[tuple[int, int]], first: int, last: int, end: int) -> tuple[int, int]:
    """The span of words of ``units[first:last]``; an empty span where ``units[first]`` starts (``end`` past
    the last unit)."""
    start = units[first][0] if first < len(units) else end
    return start, units[last - 1][1] if last > first else start


def _common_ends(a: list[str], b: list[str]) -> tuple[int, int]:
    """How many words ``a`` and ``b`` share at their head, and then at their tail."""
    limit = min(len(a), len(b))
    head = 0
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def word_opcodes(a: list[str], b: list[str]) -> list[Opcode]:
    """difflib-style opcodes of two lists of words, with bounded work: the common head and tail are set
    aside first, the rest is compared by ``_stretch_changes``. Neighbouring changes are merged into one."""
    head, tail = _common_ends(a, b)
    middle = ("replace", head, len(a) - tail, head, len(b) - tail)
    found: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    for tag, i1, i2, j1, j2 in _stretch_changes(a, b, middle, coarse=True):
        kind = "equal" if tag == "equal" else "replace"
        if found and found[-1][0] == kind:  # merge with the one before
            previous = found[-1]
            found[-1] = (kind, previous[1], i2, previous[3], j2)
        else:
            found.append((kind, i1, i2, j1, j2))
    if tail:
        found.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    return found


def _trailing_space(removed: str, added: str) -> str:
    """The whitespace both ends of a change share (a changed word keeps the space after it outside)."""
    common = 0
    while common < min(len(removed), len(added)) and removed[-1 - common] == added[-1 - common]:
        if not removed[-1 - common].isspace():
            break
        common += 1
    return removed[len(removed) - common :] if common else ""


def _cut(text: str) -> str:
    if len(text) <= MOST_CHANGED_CHARACTERS:
        return text
    return f"{text[:MOST_CHANGED_CHARACTERS]}… ({len(text) - MOST_CHANGED_CHARACTERS} more characters)"


def changed_words(old: str, new: str, context: int = 4) -> str:
    """The words that changed between two texts, each change as ``[-old-]{+new+}`` with up to ``context``
    words around it; unchanged stretches between changes are cut to ``…``. Words are compared without
    the whitespace after them, and the unchanged ones are shown with the new text's (a change of
    whitespace alone is told by ``whitespace_only``). Long texts are compared with bounded work
    (``word_opcodes``); after ``MOST_CHANGES`` changes the rest are counted."""
    before, after = _TOKENS.findall(old), _TOKENS.findall(new)
    opcodes = word_opcodes(_bare(before), _bare(after))
    shown = _shown_opcodes(opcodes)
    pieces = [
        _unchanged(after[j1:j2], context, position > 0, position < len(opcodes) - 1)
        if tag == "equal"
        else _one_change("".join(before[i1:i2]), "".join(after[j1:j2]))
        for position, (tag, i1, i2, j1, j2) in enumerate(opcodes[:shown])
    ]
    rest = sum(1 for op in opcodes[shown:] if op[0] != "equal")
    if rest:
        pieces.append(f"… ({rest} more changes)")
    return "".join(pieces)


def _bare(tokens: list[str]) -> list[str]:
    """The words as compared: without the whitespace after them (whitespace alone as one space)."""
    return [token.rstrip() or " " for token in tokens]


def _shown_opcodes(opcodes: list[Opcode]) -> int:
    """How many of ``opcodes`` are shown: those before the change after the ``MOST_CHANGES``-th."""
    changes = [position for position, opcode in enumerate(opcodes) if opcode[0] != "equal"]
    return changes[MOST_CHANGES] if len(changes) > MOST_CHANGES else len(opcodes)


def _unchanged(same: list[str], context: int, after_a_change: bool, before_a_change: bool) -> str:
    """An unchanged stretch of words: whole when short, else cut to ``…`` with up to ``context`` words
    kept on each side that touches a change."""
    if len(same) <= context * 2 + 1:
        return "".join(same)
    head = "".join(same[:context]) if after_a_change else ""
    tail = "".join(same[-context:]) if before_a_change else ""
    return f"{head}…{tail}"


def _one_change(removed: str, added: str) -> str:
    """One change as ``[-removed-]{+added+}``, each side cut (``_cut``), the whitespace both end with after it."""
    space = _trailing_space(removed, added)
    removed, added = removed[: len(removed) - len(space)], added[: len(added) - len(space)]
    shown_removed = f"[-{_cut(removed)}-]" if removed else ""
    shown_added = f"{{+{_cut(added)}+}}" if added else ""
    return f"{shown_removed}{shown_added}{space}"
