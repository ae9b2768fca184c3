"""An answer's shape (``_shape``), for drift and the mode check: field paths and their types, never values; a
stream by its event types; two shapes differ by the status, the media type and the paths that came, went or
changed types."""

from __future__ import annotations

import json
from typing import Any

from vcr_transport._core.format._format import RecordedCall
from vcr_transport._core.views._shape import Shape, answer_shape, compare_shapes, live_answer, shape_changes
from vcr_transport._core.views._view import call_view


def _recorded(body: bytes, content_type: str = "application/json", status: int = 200) -> RecordedCall:
    call = RecordedCall(0, "POST", "https://api.openai.com/v1/chat/completions", [], None, status, [])
    return live_answer(call, status, [("content-type", content_type)], [body])


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def test_a_json_answers_shape_is_its_paths_and_types_never_its_values() -> None:
    answer = {"choices": [{"message": {"content": "hi"}}, {"message": {"content": None}}], "usage": {"total": 3}}
    shape = answer_shape(call_view(_recorded(_json(answer), "application/json; charset=utf-8")))
    assert shape.status == 200 and shape.media_type == "application/json"
    assert shape.fields["body.choices[*].message.content"] == {"string", "null"}  # the union over elements
    assert shape.fields["body.usage.total"] == {"integer"}
    other = {"choices": [{"message": {"content": "bye, a longer text"}}], "usage": {"total": 90}}
    assert shape_changes(_recorded(_json(answer)), _recorded(_json({**other, "choices": other["choices"] * 2}))) == [
        change for change in shape_changes(_recorded(_json(answer)), _recorded(_json(other)))
    ]


def test_what_came_went_or_changed_type_is_named_in_path_order() -> None:
    before = _recorded(_json({"id": "a", "usage": {"total": 3}, "gone": 1}))
    after = _recorded(_json({"id": 7, "usage": {"total": 3}, "new": [1]}), "text/plain", 429)
    changes = [change.as_json() for change in shape_changes(before, after)]
    assert changes == [
        {"field_path": "status", "recorded": "200", "live": "429"},
        {"field_path": "content-type", "recorded": "application/json", "live": "text/plain"},
        {"field_path": "body.gone", "recorded": "integer", "live": "-"},
        {"field_path": "body.id", "recorded": "string", "live": "integer"},
        {"field_path": "body.new", "recorded": "-", "live": "array"},
        {"field_path": "body.new[*]", "recorded": "-", "live": "integer"},
    ]
    assert shape_changes(before, before) == []


def test_a_streams_shape_is_its_event_types_and_their_data() -> None:
    stream = (
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "delta": {"text": "hi"}}\n\n'
        b'data: {"object": "chat.completion.chunk", "n": 1.5}\n\n'
        b"data: [DONE]\n\n"
    )
    shape = answer_shape(call_view(_recorded(stream, "text/event-stream")))
    assert shape.fields["events[content_block_delta].delta.text"] == {"string"}
    assert shape.fields["events[chat.completion.chunk].n"] == {"number"}
    assert shape.fields["events[[DONE]]"] == {"text"}
    changed = stream.replace(b'"text": "hi"', b'"text": ["hi"]')
    changes = shape_changes(_recorded(stream, "text/event-stream"), _recorded(changed, "text/event-stream"))
    assert [(change.path, change.recorded, change.live) for change in changes] == [
        ("events[content_block_delta].delta.text", "string", "array"),
        ("events[content_block_delta].delta.text[*]", "-", "string"),
    ]


def test_a_body_that_is_not_json_is_text_or_binary() -> None:
    assert answer_shape(call_view(_recorded(b"plain", "text/plain"))).fields == {"body": {"text"}}
    assert answer_shape(call_view(_recorded(b"\xff\xfe\x00", "audio/mpeg"))).fields == {"body": {"binary"}}
    assert compare_shapes(Shape(None, ""), Shape(None, "")) == []
