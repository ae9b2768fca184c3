"""A call read as a conversation (``_conversation``): each vendor's request gives its messages, system first;
a stream's events and the whole answer they make give the same reply; real exchanges read as what they say."""

from __future__ import annotations

import json
from typing import Any

import pytest
from real_wire import vendor_traffic

from vcr_transport._core.views._conversation import (
    Message,
    ToolCall,
    body_reply,
    parse_sse,
    request_label,
    request_messages,
    request_model,
    request_tools,
    stream_reply,
)

REQUESTS: dict[str, tuple[dict[str, Any], list[Message]]] = {
    "openai chat": (
        {
            "model": "gpt-4o",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        },
        [Message("system", "Be brief."), Message("user", "hi")],
    ),
    "anthropic": (
        {
            "model": "claude-sonnet-4-5",
            "system": "Be brief.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        },
        [Message("system", "Be brief."), Message("user", "hi")],
    ),
    "gemini": (
        {
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        },
        [Message("system", "Be brief."), Message("user", "hi")],
    ),
    "responses": (
        {"model": "gpt-5", "instructions": "Be brief.", "input": "hi"},
        [Message("system", "Be brief."), Message("user", "hi")],
    ),
}


@pytest.mark.parametrize("vendor", REQUESTS)
def test_each_vendors_request_gives_its_messages_system_first(vendor: str) -> None:
    body, expected = REQUESTS[vendor]
    assert request_messages(body) == expected
    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    label = request_label(url, body)
    assert label.endswith('"hi"') and label.split()[0] == (body.get("model") or "gemini-2.5-flash")
    assert request_model(body, url) == (body.get("model") or "gemini-2.5-flash")


def test_what_is_not_an_llm_request_gives_nothing() -> None:
    for body in (None, "text", [1, 2], {"query": "x"}):
        assert request_messages(body) == [] and request_label("https://a.test/", body) == ""
    assert request_tools({"tools": [{"type": "function", "function": {"name": "f"}}, {"name": "g"}]}) == ["f", "g"]


def _sse(events: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n" for name, data in events)


def _typed(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    """An anthropic event: its name, and its data with the same ``type``."""
    return kind, {"type": kind, **fields}


USAGE = {"input_tokens": 3, "output_tokens": 1}
TOOL_DELTA = [{"index": 0, "function": {"name": "f", "arguments": "{"}}]
GEMINI_PARTS = [{"text": " there"}, {"functionCall": {"name": "f", "args": {}}}]
# Per protocol: a whole answer, and the stream of events the vendor sends for the same answer.
ANSWERS: dict[str, tuple[dict[str, Any], str]] = {
    "openai chat": (
        {
            "model": "gpt-4o",
            "choices": [
                {"message": {"content": "Hello there", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}}
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        },
        _sse(
            [
                ("", {"model": "gpt-4o", "choices": [{"delta": {"content": "Hello"}}]}),
                ("", {"model": "gpt-4o", "choices": [{"delta": {"content": " there"}}]}),
                ("", {"choices": [{"delta": {"tool_calls": TOOL_DELTA}}]}),
                ("", {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}}]}),
                ("", {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}),
            ]
        )
        + "data: [DONE]\n\n",
    ),
    "anthropic": (
        {
            "type": "message",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Hello there"}, {"type": "tool_use", "name": "f", "input": {}}],
            "usage": {"input_tokens": 3, "output_tokens": 2},
        },
        _sse(
            [
                _typed("message_start", message={"model": "claude-sonnet-4-5", "usage": USAGE}),
                _typed("content_block_start", index=0, content_block={"type": "text", "text": ""}),
                _typed("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hello"}),
                _typed("content_block_delta", index=0, delta={"type": "text_delta", "text": " there"}),
                _typed("content_block_start", index=1, content_block={"type": "tool_use", "name": "f", "input": {}}),
                _typed("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": "{}"}),
                _typed("message_delta", usage={"output_tokens": 2}),
            ]
        ),
    ),
    "gemini": (
        {
            "modelVersion": "gemini-2.5-flash",
            "candidates": [{"content": {"parts": [{"text": "Hello"}, *GEMINI_PARTS]}}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
        },
        _sse(
            [
                ("", {"modelVersion": "gemini-2.5-flash", "candidates": [{"content": {"parts": [{"text": "Hello"}]}}]}),
                ("", {"candidates": [{"content": {"parts": GEMINI_PARTS}}],
                      "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}}),
            ]
        ),
    ),
}  # fmt: skip


@pytest.mark.parametrize("protocol", ANSWERS)
def test_a_stream_and_the_whole_answer_it_makes_say_the_same(protocol: str) -> None:
    whole, stream = ANSWERS[protocol]
    from_body, from_stream = body_reply(whole), stream_reply(parse_sse(stream))
    assert from_body.text == from_stream.text == "Hello there"
    assert [call.name for call in from_body.tool_calls] == [call.name for call in from_stream.tool_calls] == ["f"]
    assert from_body.model == from_stream.model != ""
    assert (
        (from_body.input_tokens, from_body.output_tokens)
        == (from_stream.input_tokens, from_stream.output_tokens)
        == (3, 2)
    )


def test_an_error_object_reads_as_its_message_and_other_bodies_as_nothing() -> None:
    assert body_reply({"error": {"message": "Rate limit", "type": "rate_limit"}}).text.endswith("Rate limit")
    assert body_reply({"id": 1}).text == "" and body_reply("plain").tool_calls == []
    assert stream_reply(parse_sse("data: not json\n\n")).text == ""


@pytest.mark.parametrize(
    ("name", "said", "tools"),
    [
        ("test_anthropic__test_anthropic_model_instructions#0", "The capital of France is Paris", []),
        ("test_google__test_google_model_stream#0", "The capital of France is Paris", []),
        ("test_openai__test_run_stream_sync_streams_real_model#0", "", ["get_capital"]),
        ("test_openai_responses__test_openai_responses_stream#1", "The capital of France is Paris", []),
    ],
)
def test_real_exchanges_read_as_what_they_say(name: str, said: str, tools: list[str]) -> None:
    [(_, exchange)] = [found for found in vendor_traffic(name[:-2]) if found[0] == name]
    body = exchange["response"]["body"]
    reply = stream_reply(parse_sse(body["text"])) if "text" in body else body_reply(body["json"])
    assert reply.text.startswith(said) and [call.name for call in reply.tool_calls] == tools
    assert "capital" in request_label(exchange["request"]["uri"], exchange["request"]["body"]["json"])


def test_tool_calls_in_a_request_are_the_assistants() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "tool_calls": [{"function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]},
            {"role": "tool", "content": "sunny"},
        ]
    }
    messages = request_messages(body)
    assert [message.role for message in messages] == ["user", "assistant", "tool"]
    assert messages[1].tool_calls == [ToolCall("weather", '{"city":"Oslo"}')] and messages[2].text == "sunny"
