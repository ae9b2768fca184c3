"""Tests of ``vcr_transport._core.rules._known``: the values a redactor learns (``Known``, ``learn``), the
forms it writes them in, and ``holds``/``remove`` on the text a cassette line carries; ``is_structure`` and
``remove_escaped``."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest
from helpers import finishes_within

from vcr_transport import PLACEHOLDER
from vcr_transport._core.rules import _known
from vcr_transport._core.rules._known import (
    EMPTY,
    MAX_PROPAGATED_LENGTH,
    MIN_PROPAGATED_LENGTH,
    is_structure,
    remove_escaped,
)
from vcr_transport._core.rules._redaction import Redactor
from vcr_transport._exceptions import RedactionLimitError, VcrTransportError

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
HEADER = f"Bearer {KEY}"


def test_learning_a_bearer_header_learns_the_header_and_its_credential() -> None:
    known = EMPTY.learn((HEADER,))
    assert {HEADER, KEY} <= known.values
    assert known.learned == frozenset({HEADER})
    assert "Bearer" not in known.values
    assert list(known.forms) == sorted(known.forms, key=lambda form: (-len(form), form))  # longest first
    assert EMPTY.values == frozenset()  # never changed: learn gives a new one


def test_learning_a_value_twice_gives_the_same_object() -> None:
    known = EMPTY.learn((HEADER,))
    assert known.learn((HEADER,)) is known


def test_a_basic_header_yields_its_user_password_and_password() -> None:
    password = "s3cr3t-passw0rd-42"
    header = "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()
    known = EMPTY.learn((header,))
    assert {f"alice:{password}", password} <= known.values


def test_name_value_pairs_yield_their_values() -> None:
    known = EMPTY.learn(("session=Zx81mQp0rT5vW2yB; theme=dark; Path=/",))
    assert "Zx81mQp0rT5vW2yB" in known.values
    assert "dark" not in known.values  # shorter than MIN_PROPAGATED_LENGTH
    assert "/" not in known.values


def test_holds_finds_every_encoded_form_of_the_credential() -> None:
    known = EMPTY.learn((HEADER,))
    encoded = [
        KEY,
        base64.b64encode(KEY.encode()).decode(),
        base64.urlsafe_b64encode(b"x" + KEY.encode()).decode(),  # another alignment
        quote(HEADER, safe=""),
        json.dumps(HEADER)[1:-1],
    ]
    for form in encoded:
        line = json.dumps({"note": f"seen: {form} here"}).encode()
        assert known.holds(line), form
    assert not known.holds(b'{"model": "gpt-4o", "messages": []}')
    assert not EMPTY.holds(KEY.encode())


def test_holds_finds_a_form_written_with_json_escapes_in_a_line() -> None:
    path = "u/9Qx/Lk2Pz/Vb7M"  # a credential with slashes, which JSON may write as \/
    known = EMPTY.learn((f"Token {path}",))
    assert known.holds(json.dumps({"v": json.dumps(path)}).encode())


def test_remove_replaces_every_form_with_the_placeholder() -> None:
    known = EMPTY.learn((HEADER,))
    b64 = base64.b64encode(KEY.encode()).decode()
    text = f"auth={quote(KEY, safe='')} raw={KEY} b64={b64} header={HEADER}"
    removed = known.remove(text)
    assert KEY not in removed and b64 not in removed and "Ab3dEf6hIj9k" not in removed
    assert removed.count(PLACEHOLDER) == 4
    assert removed.startswith("auth=") and " raw=" in removed
    assert known.remove("nothing to see here") == "nothing to see here"


def test_structure_is_never_learned() -> None:
    for value in ("api.openai.com", "https://api.anthropic.com/v1/messages", "/v1/chat/completions"):
        assert is_structure(value), value
    for value in ("2024-05-13T10:11:12Z", "Mon, 13 May 2024 10:11:12 GMT", "1234567890", "-3.25"):
        assert is_structure(value), value
    for value in (KEY, "Zx81mQp0rT5vW2yB", "AKIAIOSFODNN7EXAMPLE"):
        assert not is_structure(value), value
    known = EMPTY.learn(("https://generativelanguage.googleapis.com/v1beta/models",))
    assert "https://generativelanguage.googleapis.com/v1beta/models" not in known.values
    assert known.forms == ()


def test_short_values_are_not_learned() -> None:
    short = "x" * (MIN_PROPAGATED_LENGTH - 1)
    assert EMPTY.learn((short,)).values == frozenset()
    assert EMPTY.learn(("x" * MIN_PROPAGATED_LENGTH,)).values == frozenset({"x" * MIN_PROPAGATED_LENGTH})


@pytest.mark.parametrize(
    "written", ["sk-a/b", "%73k-a%2Fb", "\\u0073k\\u002da\\/b", "s%6B-a%2fb", "%73%6b%2d%61%2f%62", "\\u0073%6B-a\\/b"]
)
def test_a_value_is_removed_in_any_mix_of_raw_percent_and_unicode_escapes(written: str) -> None:
    assert remove_escaped(f"x={written}&y=1 %", ["sk-a/b"]) == f"x={PLACEHOLDER}&y=1 %"


@pytest.mark.parametrize("written", ["sk-a-b", "SK-a/b", "\\u0053k-a/b", "%53k-a/b", "sk-a%2F", "%%73k-a/b"])
def test_only_the_value_itself_is_removed(written: str) -> None:
    text = f"x={written}"
    assert remove_escaped(text, ["sk-a/b"]) == text.replace("%73k-a/b", PLACEHOLDER)


def test_values_that_overlap_go_together_and_characters_outside_ascii_keep_their_places() -> None:
    values = ["q7Wx2Lm9Zr4T", "2Lm9Zr4TpK8v", "p\u00e4ssw\u00f6rd-\udcc3-9"]
    text = r"a %71%37Wx2Lm9Zr4TpK8v b \u00e9 p%C3%A4ssw\u00f6rd-%C3-9 \ud83d\ude00 c"
    assert remove_escaped(text, values) == f"a {PLACEHOLDER} b " + r"\u00e9 " + PLACEHOLDER + r" \ud83d\ude00 c"
    assert remove_escaped(text, []) == text


def test_many_escaped_values_are_removed_in_linear_time() -> None:
    values = [f"s3cr3t-value-{index:05d}" for index in range(20_000)]
    text = " ".join(value.replace("-", "%2D", 1) for value in values)
    results: list[str] = []
    finishes_within(60, lambda: results.append(remove_escaped(text, values)))
    assert results[0] == " ".join([PLACEHOLDER] * 20_000)


def test_many_values_are_learned_and_removed_in_linear_time() -> None:
    """Learning sorted every form again for each value, and removing searched the text once per form: a
    response with thousands of secrets took minutes."""
    values = [f"s3cr3t-value-{index:05d}" for index in range(20_000)]
    text = " ".join(values)
    results: list[object] = []
    finishes_within(60, lambda: results.append(EMPTY.learn(values).remove(text + " " + values[7])))
    assert results[0] == " ".join([PLACEHOLDER] * 20_001)


def test_the_longest_form_is_removed_where_forms_overlap_and_every_value_held_is_found() -> None:
    known = EMPTY.learn(("q7Wx2Lm9Zr4T", "q7Wx2Lm9Zr4TpK8v", "2Lm9Zr4TpK8vAb"))
    assert known.remove("a q7Wx2Lm9Zr4TpK8v b q7Wx2Lm9Zr4T") == f"a {PLACEHOLDER} b {PLACEHOLDER}"
    assert known.found_in("x q7Wx2Lm9Zr4TpK8vAb") == ["2Lm9Zr4TpK8vAb", "q7Wx2Lm9Zr4T", "q7Wx2Lm9Zr4TpK8v"]
    assert known.found_in("nothing here") == []
    assert EMPTY.remove("text") == "text" and EMPTY.found_in("text") == []


def test_a_long_learned_value_is_searched_for_in_linear_time() -> None:
    """The automaton the library picks for few patterns, a DFA, took quadratic time to build on a long one: a
    text of ``sk-sk-sk-...`` (a cassette chooses it) is learned whole, then searched for (4,000: 14 s)."""
    value = "sk-" * 20_000  # 60,000 characters: at most MAX_PROPAGATED_LENGTH
    known = EMPTY.learn((value,))
    results: list[object] = []
    finishes_within(
        60, lambda: results.extend([known.remove(value), known.holds(value.encode()), known.found_in(value)])
    )
    assert results == [PLACEHOLDER, True, [value]]


def _one_at_a_time(count: int) -> list[str]:
    return [f"Pw{index:06d}q7Wx2Lm9" for index in range(count)]


def test_values_learned_one_at_a_time_are_removed_in_linear_time() -> None:
    """Each value learned rebuilt the search of every value before it: a file whose lines each brought a new
    secret took time quadratic in their number (2,000 lines, 55 s). Learned one at a time, each followed by a
    removal (a scan's line), they settle in levels of halving size."""
    values = _one_at_a_time(20_000)
    outcome: list[str] = []

    def learn_and_remove() -> None:
        known = EMPTY
        for index, value in enumerate(values):
            known = known.learn((value,))
            outcome.append(known.remove(f"{values[index // 2]} and {value}"))
        outcome.append(known.remove(" ".join(values)))

    finishes_within(60, learn_and_remove)
    assert set(outcome[:-1]) == {f"{PLACEHOLDER} and {PLACEHOLDER}"}
    assert outcome[-1] == " ".join([PLACEHOLDER] * len(values))


def test_the_levels_of_values_learned_apart_answer_as_one() -> None:
    """Values learned apart sit in several levels; what they hold, where they are and what removing them leaves
    is as if they were learned together: the longest wins at a start whichever level holds it, and a value that
    one level's own match hid, when another level's match is taken first, is removed from what is left."""
    filler = [*_one_at_a_time(600), "BBBBCCCC", "CCCCDDDDEEEE"]
    later = ["q7Wx2Lm9Zr4T", "Zr4TpK8vAb12", "Lm9Zr4TpK8vAbCdEf", "q7Wx2Lm9Zr4TpK8vAb12x", "AAAABBBB"]
    apart = EMPTY.learn(filler)
    for value in later:
        apart = apart.learn((value,))
    together = EMPTY.learn([*filler, *later])
    assert len(apart.levels) > 1 and len(together.levels) == 1
    assert apart.values == together.values and apart.forms == together.forms
    texts = [
        "a q7Wx2Lm9Zr4TpK8vAb12x b",
        "x q7Wx2Lm9Zr4T y",
        "Zr4TpK8vAb12 and Pw000599q7Wx2Lm9",
        "q7Wx2Lm9Zr4TpK8vAbCdEf",
    ]
    for text in [*texts, "AAAABBBBCCCCDDDDEEEE"]:
        assert apart.remove(text) == together.remove(text)
        assert apart.found_in(text) == together.found_in(text)
        assert apart.holds(text.encode()) and together.holds(text.encode())
    assert apart.remove("AAAABBBBCCCCDDDDEEEE") == PLACEHOLDER * 2
    assert set(apart.learned_since(EMPTY.learn(filler))) == set(later)


def test_a_value_longer_than_max_propagated_length_is_removed_where_named_and_not_learned() -> None:
    """A megabyte under a secret name is data, not a key: learned, its searches took 380 bytes of memory per
    character (a 1 MB ``password`` in a planted file: 412 MB for ``scan``). It loses its place all the same."""
    long, short = "x" * MAX_PROPAGATED_LENGTH + "Q9", "Kq7Wx2Lm9Pq3"
    redactor = Redactor()
    assert redactor.redact_value({"password": long, "token": short}) == {"password": PLACEHOLDER, "token": PLACEHOLDER}
    assert redactor.redact_text(f"{short} and {long}") == f"{PLACEHOLDER} and {long}"
    assert EMPTY.learn([long[:MAX_PROPAGATED_LENGTH]]).remove(long) == PLACEHOLDER + "Q9"  # the longest learned


def test_a_redactor_refuses_to_learn_past_its_limit_and_keeps_what_it_knew(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forms a redactor remembers are bounded (``MAX_LEARNED_CHARACTERS``): past it, a clear error, not
    memory that grows with every line of a hostile file; what it had learned is still removed."""
    monkeypatch.setattr(_known, "MAX_LEARNED_CHARACTERS", 2_000)
    redactor = Redactor()
    values = _one_at_a_time(100)
    with pytest.raises(RedactionLimitError) as refused:
        for value in values:
            redactor.redact_text(f"password={value}")
    assert isinstance(refused.value, VcrTransportError)
    assert "2,000 characters" in str(refused.value) and "hostile" in refused.value.FIX
    learned = [value for value in values if redactor.redact_text(value) == PLACEHOLDER]
    assert 5 <= len(learned) < len(values)
    assert learned == values[: len(learned)]
    assert sum(level.characters for level in redactor._known.levels) <= 2_000
