"""A loopback fake vendor for the compatibility suite: openai (and Azure) chat completions and responses
(not streamed), anthropic messages
(and Bedrock's invoke with its binary eventstream, and Vertex's rawPredict), Gemini (and Vertex) generateContent,
streaming or not, with one tool call when tools are offered and no tool result came back yet. Every answer
echoes the first user prompt, so a changed prompt changes the answer. Standard library only (and
``tests/upstream.py``), so every compat virtualenv can import it."""

from __future__ import annotations

import base64
import json
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

# After site-packages: tests/agents.py (the main suite's tool-calling agents) must not hide openai-agents' ``agents``.
sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))

from upstream import Received, Reply, Upstream  # noqa: E402

__all__ = ["Received", "Reply", "Upstream", "eventstream_frame", "fake_vendor"]

TOOL_ARGS = {"a": 1, "b": 2}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    for part in content or []:
        if isinstance(part, dict) and part.get("type") in ("text", "input_text") and "text" in part:
            return str(part["text"])
    return ""


def first_prompt(body: dict[str, Any]) -> str:
    if "contents" in body:
        for content in body["contents"]:
            for part in content.get("parts", []):
                if "text" in part:
                    return str(part["text"])
        return ""
    messages = body.get("messages") or body.get("input") or []
    if isinstance(messages, str):
        return messages
    for message in messages:
        if message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def _sse(events: list[tuple[str | None, Any]], newline: str = "\n") -> list[bytes]:
    out = []
    for name, data in events:
        lines = ([f"event: {name}"] if name else []) + [f"data: {data if isinstance(data, str) else json.dumps(data)}"]
        out.append((newline.join(lines) + newline + newline).encode())
    return out


def _stream(chunks: list[bytes], content_type: str = "text/event-stream") -> Reply:
    return Reply(200, [("content-type", content_type)], chunks)


def openai_reply(body: dict[str, Any]) -> Reply:
    text = "echo:" + first_prompt(body)
    tool_results = any(m.get("role") == "tool" for m in body.get("messages", []))
    tools = body.get("tools") or []
    if tools and not tool_results and not body.get("stream"):
        name = tools[0]["function"]["name"]
        call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(TOOL_ARGS)}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": text}, "stop"
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    if not body.get("stream"):
        return Reply.json(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": body.get("model", "m"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
        )
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": body.get("model", "m")}
    events: list[tuple[str | None, Any]] = [
        (None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    ]
    for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
        events.append((None, {**base, "choices": [{"index": 0, "delta": {"content": piece}}]}))
    events.append((None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    events.append((None, {**base, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return _stream(_sse(events))


def responses_reply(body: dict[str, Any]) -> Reply:
    """openai's Responses API (``POST /v1/responses``, not streamed): a function call when tools are offered
    and no ``function_call_output`` came back yet, else a message whose ``output_text`` echoes the prompt."""
    items = body.get("input") if isinstance(body.get("input"), list) else []
    answered = any(item.get("type") == "function_call_output" for item in items)
    tools = [tool for tool in body.get("tools") or [] if tool.get("type") == "function"]
    if tools and not answered:
        output: dict[str, Any] = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": tools[0]["name"],
            "arguments": json.dumps(TOOL_ARGS),
            "status": "completed",
        }
    else:
        text = {"type": "output_text", "text": "echo:" + first_prompt(body), "annotations": []}
        output = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [text]}
    usage = {
        "input_tokens": 3,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 2,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 5,
    }
    return Reply.json(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "status": "completed",
            "model": body.get("model", "m"),
            "output": [output],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": body.get("tools") or [],
            "usage": usage,
        }
    )


def anthropic_events(body: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """The message and the stream events of an anthropic answer."""
    text = "echo:" + first_prompt(body)
    tool_results = any(
        isinstance(m.get("content"), list) and any(p.get("type") == "tool_result" for p in m["content"])
        for m in body.get("messages", [])
    )
    tools = body.get("tools") or []
    if tools and not tool_results:
        content: list[dict[str, Any]] = [
            {"type": "tool_use", "id": "toolu_1", "name": tools[0]["name"], "input": TOOL_ARGS}
        ]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": text}], "end_turn"
    usage = {"input_tokens": 3, "output_tokens": 2}
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "m"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[tuple[str, Any]] = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
    ]
    for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
        delta = {"type": "text_delta", "text": piece}
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return message, events


def eventstream_frame(payload: bytes, headers: dict[str, str]) -> bytes:
    """One AWS eventstream message: prelude (lengths, CRC), string headers, payload, message CRC."""
    encoded = b"".join(
        bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def anthropic_reply(body: dict[str, Any], *, bedrock_stream: bool = False, stream: bool | None = None) -> Reply:
    message, events = anthropic_events(body)
    if bedrock_stream:
        headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
        frames = [
            eventstream_frame(
                json.dumps({"bytes": base64.b64encode(json.dumps(data).encode()).decode()}).encode(), headers
            )
            for _, data in events
        ]
        return _stream(frames, "application/vnd.amazon.eventstream")
    if stream if stream is not None else body.get("stream"):
        return _stream(_sse(events))
    return Reply.json(message)


def gemini_reply(body: dict[str, Any], *, stream: bool) -> Reply:
    text = "echo:" + first_prompt(body)
    answered = any("functionResponse" in p for c in body.get("contents", []) for p in c.get("parts", []))
    declarations = [d for tool in body.get("tools") or [] for d in tool.get("functionDeclarations") or []]
    if declarations and not answered and not stream:
        parts: list[dict[str, Any]] = [{"functionCall": {"name": declarations[0]["name"], "args": TOOL_ARGS}}]
    else:
        parts = [{"text": text}]
    usage = {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}

    def candidate(content_parts: list[dict[str, Any]], finish: bool) -> dict[str, Any]:
        found: dict[str, Any] = {"content": {"role": "model", "parts": content_parts}, "index": 0}
        if finish:
            found["finishReason"] = "STOP"
        return {"candidates": [found], "usageMetadata": usage, "modelVersion": "m"}

    if not stream:
        return Reply.json(candidate(parts, True))
    halves = [text[: len(text) // 2], text[len(text) // 2 :]]
    events: list[tuple[str | None, Any]] = [(None, candidate([{"text": h}], i == 1)) for i, h in enumerate(halves)]
    return _stream(_sse(events, "\r\n"))


def route(received: Received) -> Reply:
    path = received.path.split("?")[0]
    if path.endswith("/traces/ingest"):
        return Reply(204, [], [b""], content_length=True)
    body = received.json() if received.body else {}
    if path.endswith("/chat/completions"):
        return openai_reply(body)
    if path.endswith("/responses"):
        return responses_reply(body)
    if path.endswith("/invoke-with-response-stream"):
        return anthropic_reply(body, bedrock_stream=True)
    if path.endswith(("/invoke", "/messages")):
        return anthropic_reply(body)
    if path.endswith((":rawPredict", ":streamRawPredict")):
        return anthropic_reply(body, stream=path.endswith(":streamRawPredict"))
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return gemini_reply(body, stream=path.endswith(":streamGenerateContent"))
    return Reply.json({"error": {"message": f"the fake vendor has no route for {path}"}}, status=404)


def fake_vendor() -> Upstream:
    server = Upstream()
    server.routes["/"] = route
    return server.start()
