"""The line schemas' bounds (``_schema``): JSON nested deeper than MAX_NESTING is refused by ``decode_json``,
and the nesting bound read from the bytes (``nests_deeper``) agrees with the walk (``_too_deep``)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from vcr_transport._core.format import _schema
from vcr_transport._core.format._schema import MAX_NESTING, decode_json


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def test_decode_json_reads_the_limit_and_refuses_one_level_more() -> None:
    limit = MAX_NESTING
    assert decode_json(_nested(limit)) is not None
    assert decode_json(("[" * limit + "]" * limit).encode()) is not None
    for text in (_nested(limit + 1), "[" * (limit + 1) + "]" * (limit + 1), b"[" * 100_000 + b"]" * 100_000):
        with pytest.raises(ValueError, match="nested deeper"):
            decode_json(text)


def _depth(value: Any) -> int:
    """How deep containers nest in ``value`` (a container is 1), by recursion: the reference for shallow values."""
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        return 0
    return 1 + max((_depth(child) for child in value), default=0)


@pytest.mark.parametrize("depth", [1, 2, *range(MAX_NESTING - 4, MAX_NESTING + 2), 5_000])
def test_the_nesting_bound_counts_every_branch_and_no_more(depth: int) -> None:
    shuffler = random.Random(depth)
    deep: Any = "leaf"
    for level in range(depth):
        siblings: list[Any] = [{"k": "v"}, [1, [2]], "text"][: shuffler.randrange(4)]
        deep = {"a": deep, "b": siblings} if level % 2 else [*siblings, deep]
    wide = [{"history": [{"role": "user", "content": "x"}] * 50}, deep]  # the deep branch last, after a wide one
    # The reference recursion can't go 5,000 deep: there, the bound is known to be passed.
    expected = _depth(wide) > MAX_NESTING if depth < 500 else True
    assert _schema._too_deep(wide) is expected
    assert _schema._too_deep("text") is _schema._too_deep([]) is False


@pytest.mark.parametrize("depth", [1, 2, *range(MAX_NESTING - 4, MAX_NESTING + 2), 5_000])
def test_the_bound_read_from_the_bytes_agrees_with_the_walk(depth: int) -> None:
    """A request body's nesting is bounded on its bytes (``nests_deeper``), never walked: the same answer as the
    walk, brackets and quotes inside strings (escaped or not) not counted."""
    shuffler = random.Random(depth)
    deep: Any = "leaf [[{{"
    for level in range(depth):
        siblings: list[Any] = [{"k": 'v"]]}'}, [1, ["\\"]], "[" * 150][: shuffler.randrange(4)]
        deep = {"a[": deep, "b": siblings} if level % 2 else [*siblings, deep]
    wide = [{"history": [{"role": "user", "content": "x{"}] * 50}, deep]
    expected = _depth(wide) > MAX_NESTING if depth < 500 else True
    text = json.dumps(wide) if depth < 500 else "[" * depth + "]" * depth
    assert _schema.nests_deeper(text.encode()) is expected
    assert _schema.nests_deeper(b'"[[[[' + b"[" * 200 + b'"') is _schema.nests_deeper(b"[1, {}]") is False
    for inner, deeper in ((99, False), (100, True)):  # a string holding a bracket next to an empty one
        document = b'{"k": "[", "j": "", "x": ' + b"[" * inner + b"]" * inner + b', "y": "]]"}'
        assert _schema.nests_deeper(document) is deeper
