"""Cassette format v1, the face of the format package: what the rest of vcr_transport imports of the format. No
I/O: the shells hand in bytes and blocks of bytes. A change to the format touches this package alone, each
concern in its module: the line schema and its limits (``_schema``), the one encoder of each line type
(``_encode``), the one reader and the model it reads into (``_parser``), the lines copied whole for
record-on-miss and shared cassettes (``_shared``), and what ``verify`` finds (``_lint``).

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

from typing import TYPE_CHECKING, Any

from ._encode import (
    call_end_line,
    encode_line,
    encode_string,
    event_lines,
    header_age_days,
    header_line,
    message_line,
    request_line,
    response_line,
)
from ._parser import (
    Cassette,
    ChunkSource,
    Parser,
    RecordedCall,
    foreign_file,
    held_body,
    load_held,
    load_outline,
    load_streaming,
    overlap_groups,
    recorded_call,
)
from ._schema import (
    FORMAT_VERSION,
    HELD_LINE_BYTES,
    HTTP_VERSIONS,
    INTENDED,
    MAX_LINE_BYTES,
    MAX_NESTING,
    MAX_SECONDS,
    OUTCOMES,
    PLACEHOLDER,
    CallEndLine,
    CloseInfo,
    EventLine,
    HeaderLine,
    Line,
    MessageLine,
    RecordedMessage,
    RequestLine,
    ResponseLine,
    StoredBody,
    decode_json,
)
from ._shared import line_place, lines_before_call, lines_of_calls, merge_shared, without_owners

if TYPE_CHECKING:
    from ._lint import Finding, header_problem, problems

# What ``verify`` finds is imported when first asked for (PEP 562): reading a cassette to replay it never is.
_LINT = frozenset({"Finding", "header_problem", "problems"})


def __getattr__(name: str) -> Any:
    if name not in _LINT:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import _lint

    value = getattr(_lint, name)
    globals()[name] = value
    return value


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
    "encode_string",
    "encode_line",
    "event_lines",
    "foreign_file",
    "header_age_days",
    "header_line",
    "header_problem",
    "held_body",
    "line_place",
    "lines_before_call",
    "lines_of_calls",
    "load_held",
    "load_outline",
    "load_streaming",
    "merge_shared",
    "message_line",
    "overlap_groups",
    "problems",
    "recorded_call",
    "request_line",
    "response_line",
    "without_owners",
]
