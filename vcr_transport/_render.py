"""A cassette as plain text for reviewers: one line per field, made to be git's ``textconv`` driver, so a
re-recording shows up in ``git diff`` as the fields that changed. Timings are left out (they change on
every recording); everything else is shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ._core._conversation import Message, ToolCall, reply_of, request_messages, request_tools
from ._core._format import Cassette, RecordedCall

__all__ = ["textconv_lines"]


def _block(label: str, text: str, indent: str = "  ") -> Iterator[str]:
    """``label: text`` on one line, or ``label:`` then the text's lines indented below it."""
    lines = text.splitlines()
    if len(lines) <= 1:
        yield f"{indent}{label}: {text}"
        return
    yield f"{indent}{label}:"
    for line in lines:
        yield f"{indent}  | {line}"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def _tool_call(call: ToolCall) -> str:
    return f"{call.name}({call.arguments})"


def _message_lines(messages: list[Message], tools: list[str]) -> Iterator[str]:
    for number, message in enumerate(messages):
        if message.text:
            yield from _block(f"request.messages[{number}].{message.role}", message.text)
        for tool_call in message.tool_calls:
            yield f"  request.messages[{number}].{message.role}.tool_call: {_tool_call(tool_call)}"
    if tools:
        yield f"  request.tools: {', '.join(tools)}"


def call_lines(call: RecordedCall) -> Iterator[str]:
    yield f"call {call.index}: {call.method} {call.url}"
    for name, value in call.request_headers:
        yield f"  request.headers.{name.lower()}: {value}"
    body = call.body
    if body is not None and "json" in body:
        yield from _message_lines(request_messages(body["json"]), request_tools(body["json"]))
        yield from _block("request.body", _pretty(body["json"]))
    elif body is not None:
        kind, value = next(iter(body.items()))
        yield from _block(f"request.body.{kind}", str(value))
    if call.status is None:
        yield f"  error: {call.error_class}: {call.error_message}"
        return
    yield f"  response.status: {call.status} {call.http_version}"
    for name, value in call.response_headers:
        yield f"  response.headers.{name.lower()}: {value}"
    reply = reply_of(call)
    if reply.text:
        yield from _block("response.text", reply.text)
    for tool_call in reply.tool_calls:
        yield f"  response.tool_call: {_tool_call(tool_call)}"
    if reply.stream is not None:
        yield f"  response.stream: {len(reply.stream)} events in {len(call.events)} chunks"
        for number, event in enumerate(reply.stream):
            yield f"  response.stream[{number}]: {event.raw}"
    elif isinstance(reply.body, dict | list):
        yield from _block("response.body", _pretty(reply.body))
    elif reply.body is not None:
        yield from _block("response.body", str(reply.body))
    yield f"  outcome: {call.outcome}" + (
        f": {call.error_class}: {call.error_message}" if call.outcome == "error" else ""
    )


def textconv_lines(cassette: Cassette) -> Iterator[str]:
    """The whole cassette, one line per field, calls separated by a blank line."""
    yield f"cassette format v{cassette.header.get('format_version')}, {len(cassette.calls)} calls"
    for call in cassette.calls:
        yield ""
        yield from call_lines(call)
