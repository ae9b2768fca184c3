"""What a call says, read as a conversation: the request's messages and tools, the reply's text and tool
calls, a stream's text and tool calls reassembled from its events. For people reading cassettes (the call
view, ``_view``); matching and replay never use it. Works on parsed JSON and parsed SSE events; no I/O.

Protocols understood: openai Chat Completions (``messages``, ``choices[].delta``), the openai Responses API
(``input``, ``response.output_text.delta``), anthropic Messages (``messages``, ``text_delta``,
``input_json_delta``) and Gemini (``contents``, ``candidates[].content.parts``); any vendor's ``error``
object gives its message. Anything else gives no messages and no reply text; the views still show the raw
body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..format._format import decode_json
from ..format._sse import decode_events

__all__ = [
    "Message",
    "Reply",
    "SseEvent",
    "ToolCall",
    "body_reply",
    "call_label",
    "parse_sse",
    "request_label",
    "request_messages",
    "request_model",
    "request_tools",
    "stream_reply",
]


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
    """What a response says: its text and its tool calls, a stream's joined from its events; the model that
    answered and the tokens it counted (None when the response doesn't say)."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None


# --- the request ----------------------------------------------------------------------------------------

_SYSTEM_KEYS = ("system", "instructions", "systemInstruction", "system_instruction")


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value is not None else ""


def _is_tool_call_part(part: dict[str, Any]) -> bool:
    return str(part.get("type", "")).endswith(("tool_use", "function_call")) or "functionCall" in part


def _part_text(part: Any) -> str:
    """The text of one part of a message content; "" for a tool call (shown as one) and an empty part."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict) or not part:
        return ""
    if isinstance(part.get("text"), str):
        return str(part["text"])
    if part.get("type") == "tool_result" or "functionResponse" in part:
        inner = part.get("content", part.get("functionResponse"))
        return json.dumps(inner, ensure_ascii=False) if isinstance(inner, dict) else _text_of(inner)
    if _is_tool_call_part(part):
        return ""
    kind = part.get("type")
    return f"[{kind}]" if isinstance(kind, str) else f"[{next(iter(part))}]"


def _text_of(content: Any) -> str:
    """The text of a message content in any vendor's shape: a string, a part, or a list of parts; another
    value as its JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False)
    return "\n".join(piece for piece in map(_part_text, content) if piece)


def _gemini_call(function: dict[str, Any]) -> ToolCall:
    return ToolCall(str(function.get("name", "")), _arguments(function.get("args")))


def _chat_tool_call(call: dict[str, Any]) -> ToolCall:
    function = call.get("function") or {}
    return ToolCall(str(function.get("name", "")), _arguments(function.get("arguments")))


def _part_tool_call(part: Any) -> ToolCall | None:
    """The tool call a content part makes: anthropic's ``*tool_use`` blocks, Gemini's ``functionCall``."""
    if not isinstance(part, dict):
        return None
    if str(part.get("type", "")).endswith("tool_use"):  # tool_use, server_tool_use, mcp_tool_use
        return ToolCall(str(part.get("name", "")), _arguments(part.get("input")))
    if isinstance(part.get("functionCall"), dict):
        return _gemini_call(part["functionCall"])
    return None


def _tool_calls_of(message: dict[str, Any]) -> list[ToolCall]:
    """The tool calls of one message, any vendor's shape: openai's ``tool_calls``, or among its parts."""
    calls = [_chat_tool_call(call) for call in message.get("tool_calls") or [] if isinstance(call, dict)]
    parts = message.get("content") if isinstance(message.get("content"), list) else message.get("parts")
    if isinstance(parts, list):
        calls += [call for call in map(_part_tool_call, parts) if call is not None]
    return calls


def _input_message(item: Any) -> Message | None:
    """One item of a request's messages (``messages``, ``contents`` or ``input``) as a message."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind == "function_call":  # a Responses API input item
        return Message("assistant", "", [ToolCall(str(item.get("name", "")), _arguments(item.get("arguments")))])
    if kind == "function_call_output":
        return Message("tool", _text_of(item.get("output")))
    content = item.get("parts") if "parts" in item else item.get("content")
    return Message(str(item.get("role", kind or "user")), _text_of(content), _tool_calls_of(item))


def request_messages(body: Any) -> list[Message]:
    """The messages a request sends (system instructions first), in any vendor's shape; [] for others."""
    if not isinstance(body, dict):
        return []
    messages = [
        Message("system", _text_of(system.get("parts") if isinstance(system, dict) else system))
        for system in (body.get(key) for key in _SYSTEM_KEYS)
        if system
    ]
    items = body.get("messages", body.get("contents", body.get("input")))
    if isinstance(items, str):
        return [*messages, Message("user", items)]
    if isinstance(items, list):
        messages += [message for message in map(_input_message, items) if message is not None]
    return messages


_GEMINI_MODEL = re.compile(r"/models/([^/:?]+)")


def request_label(url: str, body: Any, words: int = 6) -> str:
    """What tells one LLM request from another when they all go to the same URL: the model and the first
    ``words`` words of the last user message (``gpt-4o-mini "tell me about cats"``); "" when the body says
    neither (not an LLM request)."""
    model = body.get("model") if isinstance(body, dict) else None
    if not isinstance(model, str) or not model:
        found = _GEMINI_MODEL.search(url)
        model = found.group(1) if found else ""
    said = _said(request_messages(body), ("user",))
    parts = [model] if model else []
    if said:
        parts.append(_opening(said[-1], words))
    return " ".join(parts)


def _said(messages: list[Message], roles: tuple[str, ...]) -> list[str]:
    """The texts of the messages of these roles that say something, in order."""
    return [message.text for message in messages if message.role in roles and message.text]


def _opening(text: str, words: int, width: int = 0) -> str:
    """The first ``words`` words of ``text`` quoted as JSON, `` ...`` after them when it says more, cut to
    ``width`` characters (0: not cut) after a whole word where one fits; the text is split no further than
    those words."""
    found = text.split(maxsplit=words)
    shown = " ".join(found[:words]) + (" ..." if len(found) > words else "")
    if width and len(shown) > width:
        cut = shown[: max(width - 4, 1)]
        whole = shown[len(cut)] == " " or " " not in cut
        shown = (cut if whole else cut.rsplit(" ", 1)[0]) + " ..."
    return json.dumps(shown, ensure_ascii=False)


LABEL_TOOLS = 3  # tool calls a label names; more are counted


def call_label(messages: list[Message], reply: Reply, width: int = 60) -> str:
    """What tells apart calls that share a URL and a model (a triage agent's and the agent it handed off
    to): the first words of the system prompt, else of the last user message, and the tools the reply calls
    (``"You are the triage agent. ..." -> transfer_to_weather_agent``), in about ``width`` characters (the
    tools' names first, cut to half of it); "" when the call says none of these."""
    said = _said(messages, ("system", "developer"))[:1] or _said(messages, ("user",))[-1:]
    names = [call.name for call in reply.tool_calls[:LABEL_TOOLS]]
    more = len(reply.tool_calls) - len(names)
    tools = ", ".join(names) + (f" +{more} more" if more > 0 else "")
    tools = tools if len(tools) <= width // 2 else tools[: width // 2 - 3] + "..."
    parts = [_opening(said[0], width, width - len(tools)) if said else "", f"-> {tools}" if tools else ""]
    return " ".join(part for part in parts if part)


def _tool_names(tool: Any) -> list[str]:
    if not isinstance(tool, dict):
        return []
    declarations = tool.get("functionDeclarations", tool.get("function_declarations"))
    if isinstance(declarations, list):  # gemini
        return [str(d.get("name", "")) for d in declarations if isinstance(d, dict)]
    if isinstance(tool.get("function"), dict):  # openai chat
        return [str(tool["function"].get("name", ""))]
    for key in ("name", "type"):  # anthropic and the Responses API by name; built-in tools by type
        if key in tool:
            return [str(tool[key])]
    return [str(next(iter(tool)))] if tool else []


_MODEL_IN_PATH = re.compile(r"/models/([^/:]+)")  # gemini: .../models/gemini-2.5-flash:generateContent


def request_model(body: Any, url: str = "") -> str:
    """The model a request asks for: its body's ``model``, else (Gemini) the one in its URL; "" for none."""
    if isinstance(body, dict) and isinstance(body.get("model"), str):
        return str(body["model"])
    found = _MODEL_IN_PATH.search(url)
    return found.group(1) if found else ""


def request_tools(body: Any) -> list[str]:
    """The names of the tools a request offers, in any vendor's shape."""
    if not isinstance(body, dict) or not isinstance(body.get("tools"), list):
        return []
    return [name for tool in body["tools"] for name in _tool_names(tool)]


# --- the reply ------------------------------------------------------------------------------------------


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
    """A reply's text and tool calls, gathered from JSON pieces (a stream's events, or one whole body) by
    the first of ``_PROTOCOLS`` that knows each piece's shape."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[ToolCall] = []
        self._by_key: dict[Any, ToolCall] = {}
        self.model = ""
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def call(self, key: Any, name: str) -> ToolCall:
        """The tool call a stream builds under ``key`` (its choice and position, block index or item id),
        started the first time the key is seen; a name that comes later fills in a missing one."""
        if key not in self._by_key:
            self._by_key[key] = ToolCall(name)
            self.calls.append(self._by_key[key])
        elif name and not self._by_key[key].name:
            self._by_key[key].name = name
        return self._by_key[key]

    def has_call(self, key: Any) -> bool:
        return key in self._by_key

    def add(self, piece: Any) -> None:
        if isinstance(piece, list):  # gemini's non-SSE stream: a JSON array of responses
            for item in piece:
                self.add(item)
        elif isinstance(piece, dict):
            self._usage(piece)
            for read in _PROTOCOLS:
                if read(self, piece):
                    return

    def _usage(self, piece: dict[str, Any]) -> None:
        """The model and token counts a piece carries, at its top or in its ``message`` (anthropic's
        message_start) or ``response`` (the Responses API's events); a later count replaces an earlier one
        (anthropic's message_delta carries the running output count)."""
        for holder in (piece, piece.get("message"), piece.get("response")):
            if not isinstance(holder, dict):
                continue
            model = holder.get("model", holder.get("modelVersion"))
            if isinstance(model, str) and model:
                self.model = model
            usage = holder.get("usage", holder.get("usageMetadata"))
            if isinstance(usage, dict):
                self.input_tokens = _count(usage, _INPUT_TOKENS, self.input_tokens)
                self.output_tokens = _count(usage, _OUTPUT_TOKENS, self.output_tokens)

    def reply(self) -> Reply:
        return Reply("".join(self.text), self.calls, self.model, self.input_tokens, self.output_tokens)


_INPUT_TOKENS = ("prompt_tokens", "input_tokens", "promptTokenCount")  # chat; anthropic and Responses; gemini
_OUTPUT_TOKENS = ("completion_tokens", "output_tokens", "candidatesTokenCount")


def _count(usage: dict[str, Any], names: tuple[str, ...], before: int | None) -> int | None:
    for name in names:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return before


# Each reader takes one JSON object and says whether it was of its protocol's shape.


def _chat_choice(into: _Assembler, choice: dict[str, Any]) -> None:
    part = choice.get("delta") or choice.get("message") or {}
    if isinstance(part.get("content"), str):
        into.text.append(part["content"])
    for position, call in enumerate(part.get("tool_calls") or []):
        function = call.get("function") or {}
        found = into.call(("chat", choice.get("index", 0), call.get("index", position)), function.get("name") or "")
        found.arguments += _arguments(function.get("arguments"))


def _openai_chat(into: _Assembler, piece: dict[str, Any]) -> bool:
    """Chat Completions, a whole answer (``choices[].message``) or a stream chunk (``choices[].delta``)."""
    if not isinstance(piece.get("choices"), list):
        return False
    for choice in piece["choices"]:
        if isinstance(choice, dict):
            _chat_choice(into, choice)
    return True


def _gemini_part(into: _Assembler, part: Any) -> None:
    if not isinstance(part, dict):
        return
    if isinstance(part.get("text"), str) and not part.get("thought"):
        into.text.append(part["text"])
    elif isinstance(part.get("functionCall"), dict):
        into.calls.append(_gemini_call(part["functionCall"]))


def _gemini(into: _Assembler, piece: dict[str, Any]) -> bool:
    """Gemini, whole or streamed: ``candidates[].content.parts``, thoughts left out."""
    if not isinstance(piece.get("candidates"), list):
        return False
    for candidate in piece["candidates"]:
        for part in ((candidate or {}).get("content") or {}).get("parts") or []:
            _gemini_part(into, part)
    return True


def _anthropic_block_start(into: _Assembler, piece: dict[str, Any]) -> bool:
    block = piece.get("content_block") or {}
    if str(block.get("type", "")).endswith("tool_use"):
        into.call(("anthropic", piece.get("index")), str(block.get("name", "")))
    elif isinstance(block.get("text"), str):
        into.text.append(block["text"])
    return True


def _anthropic_block_delta(into: _Assembler, piece: dict[str, Any]) -> bool:
    delta = piece.get("delta") or {}
    key = ("anthropic", piece.get("index"))
    if delta.get("type") == "text_delta":
        into.text.append(str(delta.get("text", "")))
    elif delta.get("type") == "input_json_delta" and into.has_call(key):
        into.call(key, "").arguments += str(delta.get("partial_json", ""))
    return True


def _anthropic_message(into: _Assembler, piece: dict[str, Any]) -> bool:
    """An anthropic answer, whole: its text blocks and tool-use blocks."""
    if not isinstance(piece.get("content"), list):
        return False
    for block in piece["content"]:
        if isinstance(block, dict) and block.get("type") == "text":
            into.text.append(str(block.get("text", "")))
    into.calls += _tool_calls_of(piece)
    return True


def _responses_text_delta(into: _Assembler, piece: dict[str, Any]) -> bool:
    into.text.append(str(piece.get("delta", "")))
    return True


def _responses_item_added(into: _Assembler, piece: dict[str, Any]) -> bool:
    item = piece.get("item") or {}
    if item.get("type") != "function_call":
        return False
    into.call(("responses", item.get("id") or piece.get("output_index")), str(item.get("name", "")))
    return True


def _responses_arguments_delta(into: _Assembler, piece: dict[str, Any]) -> bool:
    key = ("responses", piece.get("item_id") or piece.get("output_index"))
    into.call(key, "").arguments += str(piece.get("delta", ""))
    return True


_EVENTS: dict[str, Callable[[_Assembler, dict[str, Any]], bool]] = {
    "content_block_start": _anthropic_block_start,  # anthropic stream events
    "content_block_delta": _anthropic_block_delta,
    "message": _anthropic_message,  # anthropic, whole
    "response.output_text.delta": _responses_text_delta,  # Responses API stream events
    "response.output_item.added": _responses_item_added,
    "response.function_call_arguments.delta": _responses_arguments_delta,
}


def _typed_event(into: _Assembler, piece: dict[str, Any]) -> bool:
    """An anthropic or Responses API piece, by its ``type``."""
    read = _EVENTS.get(piece["type"]) if isinstance(piece.get("type"), str) else None
    return read is not None and read(into, piece)


def _responses_item(into: _Assembler, item: dict[str, Any]) -> None:
    if item.get("type") == "message":
        for part in item.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "output_text":
                into.text.append(str(part.get("text", "")))
    elif item.get("type") == "function_call":
        into.calls.append(ToolCall(str(item.get("name", "")), _arguments(item.get("arguments"))))


def _responses_whole(into: _Assembler, piece: dict[str, Any]) -> bool:
    """A Responses API answer, whole: its ``output_text`` parts and ``function_call`` items."""
    if piece.get("object") != "response" or not isinstance(piece.get("output"), list):
        return False
    for item in piece["output"]:
        if isinstance(item, dict):
            _responses_item(into, item)
    return True


def _error(into: _Assembler, piece: dict[str, Any]) -> bool:
    """Any vendor's error object, as a line of text."""
    if not isinstance(piece.get("error"), dict):
        return False
    into.text.append(f"error: {piece['error'].get('message', '')}")
    return True


_PROTOCOLS: tuple[Callable[[_Assembler, dict[str, Any]], bool], ...] = (
    _openai_chat,
    _gemini,
    _typed_event,
    _responses_whole,
    _error,
)


def stream_reply(events: Iterable[SseEvent]) -> Reply:
    """The reply a stream's events make, joined; an event whose data is not JSON adds nothing."""
    assembler = _Assembler()
    for event in events:
        try:
            assembler.add(decode_json(event.data))
        except ValueError:
            continue
    return assembler.reply()


def body_reply(body: Any) -> Reply:
    """The reply a whole body (parsed JSON) makes."""
    assembler = _Assembler()
    assembler.add(body)
    return assembler.reply()
