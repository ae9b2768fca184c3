"""A recorded call as a reader sees it: the one model that ``show`` (its text and ``--json``), the git
textconv driver, the HTML page and ``diff`` render. No I/O.

``call_view`` reads a call once: the response body with its content-encodings undone, decoded as text,
parsed as JSON or split into server-sent events. The conversation (``_conversation``: the request's
messages and tools, the reply's text and tool calls) is read from these the first time a rendering asks for
it. Each rendering picks what it shows.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Final

from ..format._bodies import DecodeBudget, content_type_of, decoded_body
from ..format._format import RecordedCall, RecordedMessage, StoredBody, decode_json
from ._conversation import (
    Message,
    Reply,
    SseEvent,
    body_reply,
    parse_sse,
    request_messages,
    request_model,
    request_tools,
    stream_reply,
)
from ._review import Part, request_parts

__all__ = ["NOT_JSON", "CallView", "call_view"]


class _NotJson:
    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Final[Any] = _NotJson()  # ``CallView.json`` of a body that is no JSON document (or is a stream)


@dataclass
class CallView:
    """One recorded call, read once (``call_view``)."""

    index: int
    method: str
    url: str
    request_headers: list[tuple[str, str]]
    request_body: StoredBody  # as stored: {"json": value}, {"text": str}, {"base64": str}; None for none
    status: int | None  # None: no response came (error_class says why)
    http_version: str
    response_headers: list[tuple[str, str]]
    outcome: str | None
    error_class: str
    error_message: str
    chunk_count: int
    chunk_times: list[float]  # each chunk's arrival, in seconds after the request went out
    content_type: str  # of the response, lowercased; "" without one
    body: bytes  # the response body with its content-encodings undone; b"" without a response
    text: str  # the body decoded as UTF-8, any byte that is not UTF-8 replaced by U+FFFD
    binary: bool  # the body is not UTF-8 (``text`` is then not the body)
    stream: list[SseEvent] | None  # the events of a ``text/event-stream`` response; None for other bodies
    json: Any  # the body (``text``) parsed as JSON; NOT_JSON when it is no JSON document, and for a stream
    # A WebSocket session's messages, (from, text or bytes, t) in order, and how it closed (code, reason, by)
    websocket_messages: list[RecordedMessage] = dataclasses.field(default_factory=list)
    close: tuple[int | None, str, str | None] | None = None
    owner: str = ""  # the test that recorded it, in a cassette several tests share ("": none said)
    # Why ``body`` is the body as stored, still encoded: it decodes past MAX_DECODED_BYTES ("" otherwise). Such
    # a body is read as a binary one (no text, JSON or stream), and shown by its size with this note.
    note: str = ""

    def message_texts(self, width: int = 300) -> list[str]:
        """Each WebSocket message as one line: ``[i] +t from: text`` (binary as its size), cut to ``width``."""
        shown = []
        for number, (side, data, t) in enumerate(self.websocket_messages):
            text = data if isinstance(data, str) else f"binary, {len(data)} bytes"
            text = text if len(text) <= width else text[:width] + f"... ({len(text)} characters)"
            shown.append(f"[{number}] +{t:.3f}s {side}: {text}")
        return shown

    @property
    def closed(self) -> str:
        """How a WebSocket session closed, in words ("" for an HTTP call)."""
        if self.close is None:
            return ""
        code, reason, by = self.close
        if code is None:
            return "no closing handshake (the connection broke)"
        return f"{code}{f' {reason!r}' if reason else ''} by the {by}"

    # The conversation is read when a rendering first asks for it (``show`` never does).

    @functools.cached_property
    def messages(self) -> list[Message]:
        """What the request sends, read as a conversation (system instructions first)."""
        return request_messages(self.request_json)

    @functools.cached_property
    def tools(self) -> list[str]:
        """The names of the tools the request offers."""
        return request_tools(self.request_json)

    @functools.cached_property
    def reply(self) -> Reply:
        """What the response says: its text and tool calls, a stream's joined from its events. Nothing
        without a response or for a binary body."""
        if self.status is None or self.binary:
            return Reply()
        if self.stream is not None:
            return stream_reply(self.stream)
        return body_reply(self.json) if self.json is not NOT_JSON else Reply()

    @functools.cached_property
    def parts(self) -> list[Part] | None:
        """The parts of a multipart request body (``_review.request_parts``); None for other bodies."""
        return request_parts(self.request_body, self.request_headers)

    @property
    def model(self) -> str:
        """The model the request asks for, else the one the response names; "" when neither says."""
        return request_model(self.request_json, self.url) or self.reply.model

    @property
    def duration(self) -> float | None:
        """Seconds from the request to the last chunk; None without a chunk."""
        return self.chunk_times[-1] if self.chunk_times else None

    @property
    def request_json(self) -> Any:
        """The request's JSON body; None when it has none (or another kind of body)."""
        body = self.request_body
        return body["json"] if body is not None and "json" in body else None

    @property
    def error(self) -> str:
        """``ErrorClass: message``: why the call failed (when ``outcome`` is ``"error"``)."""
        return f"{self.error_class}: {self.error_message}"

    @property
    def readable_stream(self) -> list[SseEvent] | None:
        """The stream that the conversation views (textconv, the HTML page) list event by event: not a
        binary one, which they show by its size (``reply_body``)."""
        return None if self.binary else self.stream

    @property
    def reply_body(self) -> Any:
        """The body the conversation views show below the reply: a binary body as its size, a JSON body
        parsed, any other text as it is. None when there is none to show: no response, a blank body, JSON
        ``null``, or a readable stream (listed as its events instead)."""
        if self.status is None:
            return None
        if self.binary:
            return f"[{len(self.body)} bytes of binary data{f'; {self.note}' if self.note else ''}]"
        if self.stream is not None:
            return None
        if self.json is not NOT_JSON:
            return self.json
        return self.text if self.text.strip() else None


def _parsed(text: str) -> Any:
    try:
        return decode_json(text)
    except ValueError:
        return NOT_JSON


def call_view(call: RecordedCall, budget: DecodeBudget | None = None) -> CallView:
    """``call`` as a reader sees it: its body decoded and read once, for every rendering (within what ``budget``,
    the file's, has left)."""
    content_type = content_type_of(call.response_headers)
    body, note = decoded_body(call.events, call.response_headers, budget)
    try:
        text, binary = body.decode("utf-8"), bool(note)
    except UnicodeDecodeError:
        text, binary = body.decode("utf-8", "replace"), True
    stream = parse_sse(text) if "event-stream" in content_type and not note else None
    parsed = _parsed(text) if stream is None and not note else NOT_JSON
    return CallView(
        index=call.index,
        method=call.method,
        url=call.url,
        request_headers=call.request_headers,
        request_body=call.body,
        status=call.status,
        http_version=call.http_version,
        response_headers=call.response_headers,
        outcome=call.outcome,
        error_class=call.error_class,
        error_message=call.error_message,
        chunk_count=len(call.events),
        chunk_times=call.offsets,
        content_type=content_type,
        body=body,
        text=text,
        binary=binary,
        stream=stream,
        json=parsed,
        websocket_messages=call.messages,
        close=call.close,
        owner=call.owner,
        note=note,
    )
