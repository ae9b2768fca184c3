"""``_core/_memo.py``: the one memo helper, its bound and its generations; the lazy patterns."""

from __future__ import annotations

import re
import threading

import pytest

from vcr_transport._core._memo import Memo, lazy_pattern


def test_a_value_is_worked_out_once_per_key() -> None:
    memo: Memo[str, int] = Memo()
    calls: list[str] = []

    def compute(key: str) -> int:
        calls.append(key)
        return len(key)

    assert [memo.get(key, lambda key=key: compute(key)) for key in ("a", "bb", "a", "bb")] == [1, 2, 1, 2]
    assert calls == ["a", "bb"] and len(memo) == 2


def test_past_its_size_the_memo_forgets_everything_at_once() -> None:
    memo: Memo[int, int] = Memo(size=3)
    for key in range(3):
        memo.get(key, lambda key=key: key)
    assert len(memo) == 3
    memo.get(3, lambda: 3)
    assert len(memo) == 1  # cleared, then the new value kept
    assert memo.get(0, lambda: -1) == -1  # worked out again


def test_another_generation_starts_afresh() -> None:
    memo: Memo[str, str] = Memo()
    first, second = ("a",), ("a", "b")
    assert memo.get("k", lambda: "first", first) == "first"
    assert memo.get("k", lambda: "again", first) == "first"
    assert memo.get("k", lambda: "second", second) == "second"
    # By identity, not equality: an equal generation that is another object is another generation.
    assert memo.get("k", lambda: "equal", tuple(["a", "b"])) == "equal"


def test_clear_forgets_values_and_generation() -> None:
    memo: Memo[str, int] = Memo()
    generation = object()
    memo.get("k", lambda: 1, generation)
    memo.clear()
    assert len(memo) == 0
    assert memo.get("k", lambda: 2, generation) == 2


def test_threads_sharing_a_memo_each_get_a_correct_value() -> None:
    memo: Memo[int, int] = Memo(size=50)
    wrong: list[tuple[int, int]] = []

    def work(offset: int) -> None:
        for index in range(2000):
            key = (index + offset) % 80
            value = memo.get(key, lambda key=key: key * key)
            if value != key * key:
                wrong.append((key, value))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert wrong == []


def test_a_lazy_pattern_compiles_on_its_first_use_once_and_acts_as_the_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled: list[object] = []
    real = re.compile
    monkeypatch.setattr(re, "compile", lambda *source: compiled.append(source) or real(*source))
    words, raw = lazy_pattern(r"(?P<word>[a-z]+)", re.IGNORECASE), lazy_pattern(rb"\d+")
    assert compiled == []
    assert words.sub("-", "ab 12 Cd") == "- 12 -" and [m["word"] for m in words.finditer("x Y")] == ["x", "Y"]
    assert words.fullmatch("ab") is not None and words.search("12") is None and words.match("1a") is None
    assert words.split("1a2") == ["1", "a", "2"] and words.groupindex == {"word": 1} and words.groups == 1
    assert words.pattern == "(?P<word>[a-z]+)" and words.flags & re.IGNORECASE
    assert raw.findall(b"a1b22") == [b"1", b"22"] and raw.subn(b"#", b"1a2") == (b"#a#", 2)
    assert compiled == [("(?P<word>[a-z]+)", re.IGNORECASE), (rb"\d+", 0)]  # once each, whatever was used
    assert not hasattr(lazy_pattern("x"), "__deepcopy__") and "lazy_pattern('x', 0)" == repr(lazy_pattern("x"))
