"""Two cassettes compared call by call, and a changed text shown as its changed words. No I/O.

A response is compared as a reader sees it: status, outcome, headers (not those that change on every
answer: ``VOLATILE_RESPONSE_HEADERS``, the date, the length, request ids, timings, rate-limit counters),
and the body with its content-encoding undone: JSON parsed; a stream as its reassembled text (the vendor's
deltas joined) plus its event boundaries (one entry per event), so a changed word shows once, in the text,
and a changed chunking shows in the events.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from typing import Any

from ._bodies import content_type_of, decoded_body
from ._conversation import reply_of
from ._format import Cassette, RecordedCall
from ._matching import RequestMatcher, is_volatile_response_header, iter_differences

__all__ = ["cassette_differences", "changed_words"]

_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


def _response_fields(call: RecordedCall) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "status": call.status,
        "outcome": call.outcome,
        "headers": {k.lower(): v for k, v in call.response_headers if not is_volatile_response_header(k.lower())},
    }
    if "event-stream" in content_type_of(call.response_headers):
        reply = reply_of(call)
        events = reply.stream or []
        fields["text"] = reply.text
        # Each event by its name and length: the boundaries, not the words (those are in the text).
        fields["events"] = [f"{event.name or 'data'} ({len(event.raw)} chars)" for event in events]
        if not reply.text:  # not a vendor stream we reassemble: compare the events themselves
            fields["events"] = [event.raw for event in events]
        return fields
    body = decoded_body(call.events, call.response_headers).decode("utf-8", "replace")
    try:
        fields["body"] = json.loads(body)
    except ValueError:
        fields["body"] = body
    return fields


def cassette_differences(a: Cassette, b: Cassette) -> Iterator[tuple[int, str, Any, Any]]:
    """Every difference between two cassettes as (call index, field path, value in a, value in b), call by
    call: the request as matching sees it, then the response as this module's docstring says."""
    matcher = RequestMatcher()
    for index in range(max(len(a.calls), len(b.calls))):
        if index >= len(a.calls) or index >= len(b.calls):
            left = f"{len(a.calls)} calls" if index >= len(a.calls) else "present"
            right = f"{len(b.calls)} calls" if index >= len(b.calls) else "present"
            yield index, "call_index", left, right
            continue
        ca, cb = a.calls[index], b.calls[index]
        ra = matcher.comparable(ca.method, ca.url, ca.request_headers, ca.body)
        rb = matcher.comparable(cb.method, cb.url, cb.request_headers, cb.body)
        for section in ("method", "url", "headers", "body"):
            for path, left, right in iter_differences(ra[section], rb[section], section):
                yield index, path, left, right
        for path, left, right in iter_differences(_response_fields(ca), _response_fields(cb), "response"):
            yield index, path, left, right


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
