"""The user's regular expressions run on RE2, in time linear in the text (``_core/rules/_patterns.py``):
``redact_patterns``, ``normalize_patterns`` and ``re:`` host rules; what RE2 can't run is refused where it is
given, naming the option, the pattern and the fix."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
from helpers import finishes_within

import vcr_transport
from vcr_transport._core.rules._hosts import parse_host_rules
from vcr_transport._core.rules._patterns import user_pattern

EVIL = r"(a+)+$x"  # Python's engine backtracks 2**n times on n a's and then a character that is not x


def test_a_backtracking_redact_pattern_records_a_live_answer_in_linear_time(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    answer = {"text": "a" * 64 + "!"}  # 2**64 steps for Python's engine

    def record() -> None:
        transport = vcr_transport.transport(
            cassette,
            mode="record",
            redact_patterns=[EVIL],
            inner=httpx2.MockTransport(lambda r: httpx2.Response(200, json=answer)),
        )
        with httpx2.Client(transport=transport) as client:
            assert client.post("https://api.example.test/v1/chat", json={"prompt": "a" * 64 + "?"}).json() == answer

    finishes_within(60, record)
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert any(line.get("type") == "response" for line in lines)


def test_normalize_patterns_and_host_rules_run_on_re2() -> None:
    options = vcr_transport.Options.from_arguments(
        {"normalize_patterns": [(EVIL, "X"), (r"(\d+)-(\d+)", r"\2-\1")]}, where="t"
    )
    normalizer = options.normalizer()
    finishes_within(60, lambda: normalizer({"body": {"k": "a" * 64 + "!"}}))
    assert normalizer({"body": {"k": "id 12-34"}}) == {"body": {"k": "id 34-12"}}, "Python's templates still work"
    (rule,) = parse_host_rules([r"re:(a+)+\.example\.test$"])
    finishes_within(60, lambda: rule.matches("a" * 64 + ".example.other", None))
    assert rule.matches("aaa.example.test", None)
    assert type(rule.pattern).__name__ == "_Linear"


@pytest.mark.parametrize(
    ("option", "value", "pattern"),
    [
        ("redact_patterns", [r"(?<=key=)\w+"], r"(?<=key=)\w+"),
        ("normalize_patterns", [(r"(a)\1", "x")], r"(a)\1"),
        ("redact_patterns", [re.compile(r"x # a comment", re.VERBOSE)], "x # a comment"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_when_given_with_the_fix(option: str, value: Any, pattern: str) -> None:
    with pytest.raises(ValueError, match=f"option {option}: pattern") as raised:
        vcr_transport.transport(Path("unused.jsonl"), mode="record", **{option: value})
    message = str(raised.value)
    assert repr(pattern) in message and "RE2" in message and "linear" in message
    if "VERBOSE" not in message:
        assert "redact_with, normalize_with" in message


def test_a_compiled_pattern_keeps_its_flags() -> None:
    compiled = user_pattern(re.compile(r"^secret\d+$", re.IGNORECASE | re.MULTILINE), "redact_patterns")
    assert compiled.sub("X", "a\nSECRET12\nb") == "a\nX\nb"


def test_a_host_rule_re2_cannot_run_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"host rule 're:\(\?!x\)\.\*'.*RE2"):
        parse_host_rules(["re:(?!x).*"])
