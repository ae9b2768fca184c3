"""Matching by index: a key never parts a request from a call the full comparison matches (placeholders,
match_on, key order), what has no key is compared with everything, and the index gives calls in call order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vcr_transport._core.engine._index import CallIndex, RequestKeys, call_key
from vcr_transport._core.engine._matching import RequestMatcher
from vcr_transport._core.rules._redaction import PLACEHOLDER

_leaves = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["a", "b", PLACEHOLDER, ""]))
_json = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.sampled_from(["k", "m", "n"]), children, max_size=3)
    ),
    max_leaves=12,
)


def _fields(body: Any, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    url = {"scheme": "https", "host": "api.test", "path": "/v1", "query": {}}
    return {"method": "POST", "url": url, "headers": headers or {"x-api-key": PLACEHOLDER}, "body": body}


def _replaced(value: Any, draw: st.DrawFn) -> Any:
    """``value`` with each placeholder made some string or (in a dict) left out, as a request the replay
    has not learned the secret of sends it."""
    if isinstance(value, dict):
        kept = {}
        for key, child in value.items():
            if child == PLACEHOLDER and draw(st.booleans()):
                continue  # a recorded placeholder matches a missing field
            kept[key] = _replaced(child, draw)
        return kept
    if isinstance(value, list):
        return [_replaced(child, draw) for child in value]
    return draw(st.sampled_from(["sk-live", PLACEHOLDER, "x"])) if value == PLACEHOLDER else value


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    recorded = draw(_json)
    incoming = draw(st.one_of(st.just(_replaced(recorded, draw)), _json))
    return _fields(recorded), _fields(incoming, {"x-api-key": draw(st.sampled_from(["sk-live", PLACEHOLDER]))})


@settings(max_examples=400, deadline=None)
@given(_pairs(), st.booleans())
def test_a_request_the_comparison_matches_has_the_calls_key(pair: tuple[Any, Any], match_on: bool) -> None:
    recorded, incoming = pair
    matcher = RequestMatcher(match_on=("method", "path", "body", "headers") if match_on else None)
    mask, key = call_key(recorded, matcher.keyed_sections)
    request = RequestKeys(incoming, matcher.keyed_sections)
    if matcher.difference(recorded, incoming) is None:
        assert key is None or request.key(mask) in (None, key)
    index = CallIndex(lambda _: (mask, key), [0, 1])
    if matcher.difference(recorded, incoming) is None:
        assert 0 in index.candidates(request), "the index finds every call the comparison matches"


def test_dicts_in_another_key_order_have_one_key() -> None:
    sections = RequestMatcher().keyed_sections
    one = _fields({"a": 1, "b": [{"x": 1, "y": 2}]})
    other = _fields({"b": [{"y": 2, "x": 1}], "a": 1})
    mask, key = call_key(one, sections)
    assert key is not None and RequestKeys(other, sections).key(mask) == key


def test_a_recorded_placeholder_takes_any_string_and_a_missing_field_but_nothing_else() -> None:
    sections = RequestMatcher().keyed_sections
    mask, key = call_key(_fields({"token": PLACEHOLDER, "q": 1}), sections)
    assert mask == (("body", ("token",)), ("headers", ("x-api-key",)))
    assert RequestKeys(_fields({"token": "abc", "q": 1}), sections).key(mask) == key
    assert RequestKeys(_fields({"q": 1}), sections).key(mask) == key
    assert RequestKeys(_fields({"token": 5, "q": 1}), sections).key(mask) != key
    assert RequestKeys(_fields({"token": "abc", "q": 2}), sections).key(mask) != key


def test_what_has_no_key_is_compared_with_every_call() -> None:
    sections = RequestMatcher().keyed_sections
    assert call_key(_fields({1: "a number as a key"}), sections) == ((), None)  # a normaliser made it
    deep: Any = "leaf"
    for _ in range(100_000):
        deep = [deep]
    assert call_key(_fields(deep), sections)[1] is None, "nesting deeper than the encoder goes: no key, no crash"
    keys = {0: call_key(_fields({"q": 0}), sections), 1: call_key(_fields({"q": 1}), sections), 2: ((), None)}
    index = CallIndex(keys.__getitem__, [2, 0, 1])
    assert list(index.candidates(RequestKeys(_fields({"q": 1}), sections))) == [1, 2]
    assert list(index.candidates(RequestKeys(_fields({3: 1}), sections))) == [0, 1, 2]


def test_the_index_gives_calls_in_call_order_and_forgets_the_ones_taken_out() -> None:
    sections = RequestMatcher().keyed_sections
    same = call_key(_fields({"q": "same"}), sections)
    asked: list[int] = []

    def key_of(index: int) -> Any:
        asked.append(index)
        return same

    index = CallIndex(key_of, [3])
    request = RequestKeys(_fields({"q": "same"}), sections)
    assert list(index.candidates(request)) == [3] and asked == [], "one call needs no key"
    for call in (1, 5, 0):
        index.add(call)
    assert list(index.candidates(request)) == [0, 1, 3, 5]
    assert list(index.candidates(request, reverse=True)) == [5, 3, 1, 0]
    index.discard(1)
    index.discard(7)  # not there: nothing happens
    index.add(2)
    assert list(index.candidates(request)) == [0, 2, 3, 5] == index.calls()
