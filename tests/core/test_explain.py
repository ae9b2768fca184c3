"""``_core/engine/_explain.py``: what a mismatch's explanation says about volatile values and reordered lists."""

from __future__ import annotations

import re

import pytest

from vcr_transport._core.engine._explain import VOLATILE_SHAPES, reordered_lists, volatile_suggestion


@pytest.mark.parametrize(
    ("recorded", "incoming", "what"),
    [
        ("0b8e4a5c-1f2d-4e6a-9b7c-3d2e1f0a9b8c", "9f1e2d3c-4b5a-4c6d-8e7f-0a1b2c3d4e5f", "a UUID"),
        ("2026-12-05T06:11:20Z", "2026-12-06T07:00:01Z", "an ISO timestamp"),
        ("Sat, 05 Dec 2026 06:11:20 GMT", "Sun, 06 Dec 2026 07:00:01 GMT", "a timestamp"),
        ("06:11:20", "07:00:01", "a time of day"),
        ("/tmp/pytest-of-root/abc", "/tmp/pytest-of-root/xyz", "a temporary path"),
        ("a1b2c3d4e5f60718", "0f9e8d7c6b5a4321", "a hex id"),
    ],
)
def test_a_whole_volatile_value_is_named_with_the_option_that_skips_it(recorded: str, incoming: str, what: str) -> None:
    said = volatile_suggestion("body.metadata.at", recorded, incoming)
    assert said == (
        f"body.metadata.at looks like {what}, different on every run: to replay it, pass "
        'ignore_fields=["body.metadata.at"]'
    )


def test_a_volatile_value_inside_text_gets_the_pattern_that_replays_it() -> None:
    said = volatile_suggestion("body.messages[0].content", "run at 06:11:20 today", "run at 07:00:01 today")
    pattern = dict((what, pattern) for what, pattern, _ in VOLATILE_SHAPES)["a time of day"]
    assert said == (
        "body.messages[0].content holds a time of day that differs from run to run: to replay it, pass "
        f'normalize_patterns=[(r"{pattern}", "<time>")]'
    )
    # The pattern the suggestion quotes does replay it: both sides become the same text.
    assert re.sub(pattern, "<time>", "run at 06:11:20 today") == re.sub(pattern, "<time>", "run at 07:00:01 today")


def test_epoch_numbers_headers_and_other_sections_get_their_own_option() -> None:
    assert "ignore_fields=" in volatile_suggestion("body.ts", 1764915080, 1764915999)
    assert "ignore_fields=" in volatile_suggestion("body.ts", 1764915080123, 1764915999456)
    assert volatile_suggestion("headers.x-run", "06:11:20", "07:00:01").endswith('ignore_headers=["x-run"]')
    assert "normalize_with=" in volatile_suggestion("url.query.t", "06:11:20", "07:00:01")


@pytest.mark.parametrize(
    ("recorded", "incoming"),
    [("echo:hi", "echo:bye"), (1, 2), (True, 1764915080), ("06:11:20", 5), (999, 1000)],
)
def test_values_that_do_not_look_volatile_get_no_suggestion(recorded: object, incoming: object) -> None:
    assert volatile_suggestion("body.x", recorded, incoming) == ""


def test_a_list_holding_the_same_items_in_another_order_is_found_outermost_first() -> None:
    recorded = {"body": {"tools": [{"name": "a"}, {"name": "b"}], "messages": [{"content": ["x", "y"]}]}}
    incoming = {"body": {"tools": [{"name": "b"}, {"name": "a"}], "messages": [{"content": ["y", "x"]}]}}
    paths = ["body.tools[0].name", "body.tools[1].name", "body.messages[0].content[0]"]
    assert reordered_lists(recorded, incoming, paths) == ["body.tools", "body.messages[0].content"]


def test_a_list_with_other_items_or_another_length_is_not_reordered() -> None:
    recorded = {"body": {"tools": [{"name": "a"}, {"name": "b"}]}}
    assert reordered_lists(recorded, {"body": {"tools": [{"name": "a"}, {"name": "c"}]}}, ["body.tools[1]"]) == []
    assert reordered_lists(recorded, {"body": {"tools": [{"name": "a"}]}}, ["body.tools[1]"]) == []
    assert reordered_lists(recorded, {"body": {}}, ["body.tools[0]"]) == []
