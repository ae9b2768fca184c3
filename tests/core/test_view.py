"""``_core/views/``: the call model every view renders (``_view.call_view``), the conversation read from it
(``_conversation``) and the answer's shape that ``drift`` compares (``_shape``), on calls the openai SDK made
and ``RecordingTransport`` recorded, at the vendor's host with its real headers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import httpx2
import openai
from real_wire import vendor_mock
from vendors import MODEL, sse

import vcr_transport
from vcr_transport._core.views._conversation import call_label, request_label
from vcr_transport._core.views._shape import answer_shape, compare_shapes, live_answer
from vcr_transport._core.views._view import NOT_JSON, call_view
from vcr_transport._storage import read_cassette

_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def _answer(request: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    body = json.loads(request.read())
    base = {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": MODEL}
    if not body.get("stream"):
        message = {"role": "assistant", "content": "Sunny in Paris."}
        reply = {**base, "object": "chat.completion", "choices": [{"index": 0, "message": message}]}
        return (
            200,
            [("content-type", "application/json"), ("content-encoding", "gzip")],
            gzip.compress(json.dumps(reply).encode()),
        )
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    events: list[tuple[str | None, Any]] = [
        (None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}),
        *(
            (
                None,
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": a}}]}}],
                },
            )
            for a in ('{"city"', ': "Paris"}')
        ),
        (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        (None, "[DONE]"),
    ]
    return 200, [("content-type", "text/event-stream")], sse(events)


def _recorded(tmp_path: Path) -> Path:
    path = tmp_path / "weather.jsonl"
    with vcr_transport.RecordingTransport(vendor_mock(httpx2, _answer), path) as transport:
        client = openai.OpenAI(api_key="sk-test", http_client=httpx2.Client(transport=transport), max_retries=0)
        messages: list[Any] = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
        ]
        stream = client.chat.completions.create(model=MODEL, messages=messages, tools=[_TOOL], stream=True)
        for _ in stream:
            pass
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "And now?"}])
    return path


def test_a_streamed_tool_call_and_a_gzipped_answer_as_the_views_read_them(tmp_path: Path) -> None:
    calls = read_cassette(_recorded(tmp_path)).calls
    streamed, plain = call_view(calls[0]), call_view(calls[1])

    assert streamed.method == "POST" and streamed.url == "https://api.openai.com/v1/chat/completions"
    assert streamed.status == 200 and streamed.content_type.startswith("text/event-stream")
    assert streamed.stream is not None and streamed.stream[-1].data == "[DONE]" and streamed.json is NOT_JSON
    assert [(m.role, m.text) for m in streamed.messages] == [("system", "Be brief."), ("user", "Weather in Paris?")]
    assert streamed.tools == ["get_weather"] and streamed.model == MODEL
    assert [(c.name, c.arguments) for c in streamed.reply.tool_calls] == [("get_weather", '{"city": "Paris"}')]
    assert "get_weather" in call_label(streamed.messages, streamed.reply)

    # The gzip the vendor sent is undone for the reader; the cassette keeps the bytes as they came.
    assert plain.json["choices"][0]["message"]["content"] == "Sunny in Paris." and not plain.binary
    assert plain.reply.text == "Sunny in Paris." and plain.stream is None
    assert request_label(plain.url, plain.request_json) == f'{MODEL} "And now?"'
    assert any(name.lower() == "set-cookie" for name, _ in plain.response_headers)  # the vendor's real headers


def test_the_answer_shape_names_what_changed_and_nothing_else(tmp_path: Path) -> None:
    recorded = read_cassette(_recorded(tmp_path)).calls[1]
    shape = answer_shape(call_view(recorded))
    assert shape.status == 200 and shape.media_type == "application/json"
    assert shape.fields["body.choices[*].message.content"] == {"string"}

    same = json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 2,
            "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Rain."}}],
        }
    ).encode()
    headers = [("content-type", "application/json")]
    assert compare_shapes(shape, answer_shape(call_view(live_answer(recorded, 200, headers, [same])))) == []

    changed = json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 2,
            "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None}}],
        }
    ).encode()
    changes = compare_shapes(shape, answer_shape(call_view(live_answer(recorded, 429, headers, [changed]))))
    assert [(c.path, c.recorded, c.live) for c in changes][:1] == [("status", "200", "429")]
    assert any(c.path == "body.choices[*].message.content" and c.live == "null" for c in changes)


def test_a_file_s_bodies_are_decoded_within_one_budget_in_all() -> None:
    """Each body decodes within its own bound; a view of the file decodes at most its budget in all, the rest
    shown as stored with the reason (a 4 MB file of 30 gzip bodies of 100 MB had a view hold 9 GB)."""
    from vcr_transport._core.format._bodies import DecodeBudget, decoded_body

    packed = gzip.compress(b"x" * 600)
    headers = [("content-encoding", "gzip")]
    budget = DecodeBudget(1000)
    first, second = decoded_body([packed], headers, budget), decoded_body([packed], headers, budget)
    assert first == (b"x" * 600, "") and budget.left == 400
    assert second.data == packed and second.note == "gzip body decodes past 400 bytes: shown encoded, as stored"
    assert decoded_body([b"plain"], [], budget) == (b"plain", "")  # nothing to decode: nothing spent
    assert decoded_body([packed], headers) == (b"x" * 600, ""), "without a budget, each body's own bound"
