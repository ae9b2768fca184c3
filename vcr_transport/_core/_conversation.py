"""A recorded call read as a conversation: the request's messages and tools, the response's text and tool
calls, a stream reassembled per vendor protocol. For people reading cassettes; matching and replay never use
it. No I/O.

Protocols understood: openai Chat Completions (``messages``, ``choices[].delta.content``), the openai
Responses API (``input``, ``response.output_text.delta``), anthropic Messages (``messages``, ``text_delta``,
``input_json_delta``) and Gemini (``contents``, ``candidates[].content.parts``). Anything else gives no
messages and no reply text; the raw body is still shown by the views.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ._bodies import content_type_of, decoded_body
from ._format import RecordedCall
from ._sse import decode_events

__all__ = ["Message", "Reply", "SseEvent", "ToolCall", "parse_sse", "reply_of", "request_messages", "request_tools"]


@dataclass
class ToolCall:
    name: str
    arguments: str = ""


@dataclass
class Message:
    role: str
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class SseEvent:
    name: str  # the ``event:`` field, "" when absent
    data: str  # the ``data:`` lines joined by newlines
    raw: str  # the event's lines as they came, joined by `` | ``


@dataclass
class Reply:
    """What a response says: its text, its tool calls, and for a stream its events."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    stream: list[SseEvent] | None = None
    body: Any = None  # the parsed JSON body, or the body as text, or None for a stream or no body
    binary: bool = False  # the body is not text (shown by its size only)


def _text_of(content: Any) -> str:
    """The text of a message content in any vendor's shape: a string, or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False)
    pieces: list[str] = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif part.get("type") == "tool_result" or "functionResponse" in part:
                inner = part.get("content", part.get("functionResponse"))
                pieces.append(_text_of(inner) if not isinstance(inner, dict) else json.dumps(inner, ensure_ascii=False))
            elif str(part.get("type", "")).endswith(("tool_use", "function_call")) or "functionCall" in part:
                continue  # shown as a tool call
            elif isinstance(part.get("type"), str):
                pieces.append(f"[{part['type']}]")
            elif part:
                pieces.append(f"[{next(iter(part))}]")
    return "\n".join(piece for piece in pieces if piece)


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value is not None else ""


def _tool_calls_of(obj: dict[str, Any]) -> list[ToolCall]:
    """Tool calls in a message or content list, any vendor's shape."""
    calls: list[ToolCall] = []
    for call in obj.get("tool_calls") or []:  # openai chat
        if isinstance(call, dict):
            function = call.get("function") or {}
            calls.append(ToolCall(str(function.get("name", "")), _arguments(function.get("arguments"))))
    parts = obj.get("content") if isinstance(obj.get("content"), list) else obj.get("parts")
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if str(part.get("type", "")).endswith("tool_use"):  # anthropic: tool_use, server_tool_use, mcp_tool_use
            calls.append(ToolCall(str(part.get("name", "")), _arguments(part.get("input"))))
        elif isinstance(part.get("functionCall"), dict):  # gemini
            calls.append(
                ToolCall(str(part["functionCall"].get("name", "")), _arguments(part["functionCall"].get("args")))
            )
    return calls


def request_messages(body: Any) -> list[Message]:
    """The messages a request sends (system instructions first), in any vendor's shape; [] for others."""
    if not isinstance(body, dict):
        return []
    messages: list[Message] = []
    for key in ("system", "instructions", "systemInstruction", "system_instruction"):
        if key in body and body[key]:
            system = body[key]
            messages.append(Message("system", _text_of(system.get("parts") if isinstance(system, dict) else system)))
    items = body.get("messages", body.get("contents", body.get("input")))
    if isinstance(items, str):
        return [*messages, Message("user", items)]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":  # Responses API input item
            messages.append(
                Message("assistant", "", [ToolCall(str(item.get("name", "")), _arguments(item.get("arguments")))])
            )
            continue
        if kind == "function_call_output":
            messages.append(Message("tool", _text_of(item.get("output"))))
            continue
        role = str(item.get("role", kind or "user"))
        content = item.get("parts") if "parts" in item else item.get("content")
        messages.append(Message(role, _text_of(content), _tool_calls_of(item)))
    return messages


def request_tools(body: Any) -> list[str]:
    """The names of the tools a request offers, in any vendor's shape."""
    if not isinstance(body, dict) or not isinstance(body.get("tools"), list):
        return []
    names: list[str] = []
    for tool in body["tools"]:
        if not isinstance(tool, dict):
            continue
        declarations = tool.get("functionDeclarations", tool.get("function_declarations"))
        if isinstance(declarations, list):  # gemini
            names += [str(d.get("name", "")) for d in declarations if isinstance(d, dict)]
        elif isinstance(tool.get("function"), dict):  # openai chat
            names.append(str(tool["function"].get("name", "")))
        elif "name" in tool:  # anthropic, Responses API
            names.append(str(tool["name"]))
        elif "type" in tool:
            names.append(str(tool["type"]))
        elif tool:
            names.append(str(next(iter(tool))))
    return names


def parse_sse(text: str) -> list[SseEvent]:
    """Server-sent-event text as events (by the one SSE decoder, ``_sse``), the one it ends in the middle of
    and those without data included, so that the view shows every line."""

    def decoded(field: bytes) -> str:
        return field.decode("utf-8", "surrogatepass")

    return [
        SseEvent(decoded(event.type), decoded(event.data), " | ".join(map(decoded, event.lines)))
        for event in decode_events(text.encode("utf-8", "surrogatepass"))
    ]


class _Assembler:
    """Text and tool calls gathered from parsed JSON pieces: stream events, or whole bodies."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[ToolCall] = []
        self._by_key: dict[Any, ToolCall] = {}

    def call(self, key: Any, name: str) -> ToolCall:
        if key not in self._by_key:
            self._by_key[key] = ToolCall(name)
            self.calls.append(self._by_key[key])
        elif name and not self._by_key[key].name:
            self._by_key[key].name = name
        return self._by_key[key]

    def add_event(self, obj: Any) -> None:  # noqa: C901 - one branch per vendor shape, flat on purpose
        if isinstance(obj, list):  # gemini's non-SSE stream: a JSON array of responses
            for item in obj:
                self.add_event(item)
            return
        if not isinstance(obj, dict):
            return
        kind = obj.get("type")
        if isinstance(obj.get("choices"), list):  # openai chat, whole or chunk
            for choice in obj["choices"]:
                if not isinstance(choice, dict):
                    continue
                part = choice.get("delta") or choice.get("message") or {}
                if isinstance(part.get("content"), str):
                    self.text.append(part["content"])
                for position, call in enumerate(part.get("tool_calls") or []):
                    function = call.get("function") or {}
                    found = self.call(
                        ("chat", choice.get("index", 0), call.get("index", position)), function.get("name") or ""
                    )
                    found.arguments += _arguments(function.get("arguments"))
        elif isinstance(obj.get("candidates"), list):  # gemini
            for candidate in obj["candidates"]:
                parts = ((candidate or {}).get("content") or {}).get("parts") or []
                for part in parts:
                    if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
                        self.text.append(part["text"])
                    elif isinstance(part, dict) and isinstance(part.get("functionCall"), dict):
                        function = part["functionCall"]
                        self.calls.append(ToolCall(str(function.get("name", "")), _arguments(function.get("args"))))
        elif kind == "content_block_start":  # anthropic stream
            block = obj.get("content_block") or {}
            if str(block.get("type", "")).endswith("tool_use"):
                self.call(("anthropic", obj.get("index")), str(block.get("name", "")))
            elif isinstance(block.get("text"), str):
                self.text.append(block["text"])
        elif kind == "content_block_delta":
            delta = obj.get("delta") or {}
            if delta.get("type") == "text_delta":
                self.text.append(str(delta.get("text", "")))
            elif delta.get("type") == "input_json_delta" and ("anthropic", obj.get("index")) in self._by_key:
                self._by_key[("anthropic", obj.get("index"))].arguments += str(delta.get("partial_json", ""))
        elif kind == "message" and isinstance(obj.get("content"), list):  # anthropic, whole
            for block in obj["content"]:
                if isinstance(block, dict) and block.get("type") == "text":
                    self.text.append(str(block.get("text", "")))
            self.calls += _tool_calls_of(obj)
        elif kind == "response.output_text.delta":  # Responses API stream
            self.text.append(str(obj.get("delta", "")))
        elif kind == "response.output_item.added" and (obj.get("item") or {}).get("type") == "function_call":
            item = obj["item"]
            self.call(("responses", item.get("id") or obj.get("output_index")), str(item.get("name", "")))
        elif kind == "response.function_call_arguments.delta":
            key = ("responses", obj.get("item_id") or obj.get("output_index"))
            self.call(key, "").arguments += str(obj.get("delta", ""))
        elif obj.get("object") == "response" and isinstance(obj.get("output"), list):  # Responses API, whole
            for item in obj["output"]:
                if not isinstance(item, dict):
                    continue
                if item.get("type") == "message":
                    for part in item.get("content") or []:
                        if isinstance(part, dict) and part.get("type") == "output_text":
                            self.text.append(str(part.get("text", "")))
                elif item.get("type") == "function_call":
                    self.calls.append(ToolCall(str(item.get("name", "")), _arguments(item.get("arguments"))))
        elif isinstance(obj.get("error"), dict):
            self.text.append(f"error: {obj['error'].get('message', '')}")


def reply_of(call: RecordedCall) -> Reply:
    """The response of a recorded call as a reader wants it: content-encoding undone, a stream reassembled."""
    if call.status is None:
        return Reply()
    data = decoded_body(call.events, call.response_headers)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Reply(binary=True, body=f"[{len(data)} bytes of binary data]")
    assembler = _Assembler()
    if "event-stream" in content_type_of(call.response_headers):
        events = parse_sse(text)
        for event in events:
            try:
                assembler.add_event(json.loads(event.data))
            except ValueError:
                continue
        return Reply("".join(assembler.text), assembler.calls, events)
    try:
        body: Any = json.loads(text) if text.strip() else None
    except ValueError:
        return Reply(body=text)
    assembler.add_event(body)
    return Reply("".join(assembler.text), assembler.calls, None, body)
