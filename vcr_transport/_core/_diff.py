"""Two cassettes compared call by call, and a changed text shown as its changed words. No I/O.

A response is compared as a reader sees it: status, outcome, headers (not those that change on every
answer: ``VOLATILE_RESPONSE_HEADERS``, the date, the length, request ids, timings, rate-limit counters),
and the body with its content-encoding undone: JSON parsed; a stream as its reassembled text (the vendor's
deltas joined) plus its event boundaries (one entry per event), so a changed word shows once, in the text,
and a changed chunking shows in the events.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._format import Cassette
from ._matching import RequestMatcher, is_volatile_response_header, iter_differences
from ._view import NOT_JSON, CallView, call_view

__all__ = [
    "CallDifference",
    "ComparedCall",
    "FieldDifference",
    "cassette_differences",
    "changed_words",
    "compared_calls",
]

FieldDifference = tuple[str, Any, Any]  # (field path, value in a, value in b)
CallDifference = tuple[int, str, Any, Any]  # (call index, field path, value in a, value in b)

_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


@dataclass
class ComparedCall:
    """The calls at one index of two cassettes, and how they differ: (field path, value in a, value in b).
    Where one cassette has no call at that index, its view is None and the one difference is
    ``call_index``: how many calls it has, against ``"present"``."""

    index: int
    a: CallView | None
    b: CallView | None
    differences: list[FieldDifference]


def _stream_fields(view: CallView) -> dict[str, Any]:
    """A stream as its reassembled text and its events: by name and length where the text says what they
    do (the boundaries, not the words: those are in the text), whole where there is no text."""
    events = view.readable_stream or []
    if not view.reply.text:  # not a vendor stream we reassemble: compare the events themselves
        return {"text": "", "events": [event.raw for event in events]}
    return {"text": view.reply.text, "events": [f"{event.name or 'data'} ({len(event.raw)} chars)" for event in events]}


def _response_fields(view: CallView) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "status": view.status,
        "outcome": view.outcome,
        "headers": {k.lower(): v for k, v in view.response_headers if not is_volatile_response_header(k.lower())},
    }
    if view.stream is not None:
        return fields | _stream_fields(view)
    return fields | {"body": view.text if view.json is NOT_JSON else view.json}


def _differences(matcher: RequestMatcher, a: CallView, b: CallView) -> Iterator[FieldDifference]:
    """The request as matching sees it, then the response as this module's docstring says."""
    ra = matcher.comparable(a.method, a.url, a.request_headers, a.request_body)
    rb = matcher.comparable(b.method, b.url, b.request_headers, b.request_body)
    for section in ("method", "url", "headers", "body"):
        yield from iter_differences(ra[section], rb[section], section)
    yield from iter_differences(_response_fields(a), _response_fields(b), "response")


def compared_calls(a: Cassette, b: Cassette) -> Iterator[ComparedCall]:
    """Two cassettes compared call by call, each call viewed once (``call_view``)."""
    matcher = RequestMatcher()
    for index in range(max(len(a.calls), len(b.calls))):
        va = call_view(a.calls[index]) if index < len(a.calls) else None
        vb = call_view(b.calls[index]) if index < len(b.calls) else None
        if va is None or vb is None:
            left = f"{len(a.calls)} calls" if va is None else "present"
            right = f"{len(b.calls)} calls" if vb is None else "present"
            yield ComparedCall(index, va, vb, [("call_index", left, right)])
        else:
            yield ComparedCall(index, va, vb, list(_differences(matcher, va, vb)))


def cassette_differences(a: Cassette, b: Cassette) -> Iterator[CallDifference]:
    """Every difference between two cassettes as (call index, field path, value in a, value in b), call by
    call (see ``compared_calls``)."""
    for compared in compared_calls(a, b):
        for path, left, right in compared.differences:
            yield compared.index, path, left, right


def changed_words(old: str, new: str, context: int = 4) -> str:
    """The words that changed between two texts, each change as ``[-old-]{+new+}`` with up to ``context``
    words around it; unchanged stretches between changes are cut to ``…``."""
    before, after = _WORDS.findall(old), _WORDS.findall(new)
    pieces: list[str] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    opcodes = matcher.get_opcodes()
    for position, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            same = before[i1:i2]
            words = [w for w in same if not w.isspace()]
            keep = context * 2  # a word and the space after it
            if len(same) <= keep * 2 + 1:
                pieces.append("".join(same))
                continue
            head = "".join(same[:keep]) if position > 0 else ""
            tail = "".join(same[-keep:]) if position < len(opcodes) - 1 else ""
            if words:
                pieces.append(f"{head}…{tail}")
            continue
        removed, added = "".join(before[i1:i2]), "".join(after[j1:j2])
        if removed:
            pieces.append(f"[-{removed}-]")
        if added:
            pieces.append(f"{{+{added}+}}")
    return "".join(pieces)
