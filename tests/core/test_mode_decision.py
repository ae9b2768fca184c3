"""The mode decision (``_core/engine/_modes.py``) for mode ``check``: every request goes live and is checked, a
passthrough request goes live unchecked, an unreadable cassette refuses, and CI never refuses it (it records
nothing). The host and path globs of the passthrough rules and ``ignore_hosts`` match as fnmatch's."""

from __future__ import annotations

import fnmatch
import itertools

import pytest

from vcr_transport._core.engine import _modes
from vcr_transport._core.engine._modes import MODES, Decision, Step, concrete_mode


def test_check_is_a_mode_that_forwards_and_checks_every_request() -> None:
    assert "check" in MODES
    decision = Decision("check", readable=True, exists=True, passthrough=["logs.example.test/*"])
    assert decision.step_for("https://api.openai.com/v1/chat/completions") is Step.CHECK
    assert decision.step_for("https://logs.example.test/ingest") is Step.PASS_THROUGH  # live, unchecked
    assert not decision.records_at_start
    missing = Decision("check", readable=False, exists=False)
    assert missing.step_for("https://api.openai.com/v1/chat/completions") is Step.REFUSE


def test_check_is_allowed_under_ci_wherever_it_came_from() -> None:
    for configured in ("", "environment VCR_TRANSPORT_MODE", "pyproject.toml [tool.vcr_transport]"):
        assert concrete_mode("check", "c.jsonl", exists=True, ci=True, how_to_record="", configured=configured) == (
            "check"
        )


def test_a_decision_needs_a_concrete_mode_and_a_known_passthrough_answer() -> None:
    for mode in ("auto", "replay-ish"):
        with pytest.raises(ValueError, match=rf"^a decision needs a concrete mode, not '{mode}'$"):
            Decision(mode, readable=True, exists=True)
    with pytest.raises(ValueError, match=r"^passthrough_replay must be one of \('empty', 'block'\), not 'drop'$"):
        Decision("replay", readable=True, exists=True, passthrough_replay="drop")


def test_a_decision_records_from_the_start_only_with_nothing_to_replay_first() -> None:
    assert Decision("record", readable=True, exists=True).records_at_start
    assert Decision("record-on-miss", readable=True, exists=False).recording
    assert not Decision("record-on-miss", readable=True, exists=True).recording
    assert not Decision("record-on-miss", readable=False, exists=False).recording
    assert not Decision("replay", readable=True, exists=False).recording
    # Appending (serve's record-on-miss) needs a cassette to replay from.
    assert Decision("record-on-miss", readable=True, exists=True, appending=True).appending
    assert not Decision("record-on-miss", readable=True, exists=False, appending=True).appending
    assert not Decision("record-on-miss", readable=False, exists=True, appending=True).appending
    assert not Decision("replay", readable=True, exists=True, appending=True).appending


def test_the_rules_globs_match_as_fnmatchcase() -> None:
    """``_glob_matches`` finds a ``*``-only glob's pieces without compiling it: it agrees with fnmatch."""
    globs = [
        *_modes.TELEMETRY_PASSTHROUGH, *(rule.split("/", 1)[0] for rule in _modes.TELEMETRY_PASSTHROUGH),
        "", "*", "**", "a*", "*a", "*a*", "a*a", "a*b*a", "ab*ba", "*.x.*", "a**b", "/v1/*", "/*", "?", "a?c",
        "[ab]*", "[!a]", "*[*]", "a\\*", "a*\n",
    ]  # fmt: skip
    names = [
        "", "a", "aa", "aba", "abba", "ab", "ba", "abcba", "abab", "a.x.b", ".x.", "x.x", "*", "a*", "/v1/", "/",
        "/v1/traces/ingest", "api.openai.com", "eu.smith.langchain.com", "smith.langchain.com", "logfire-.pydantic.dev",
        "logfire-us.pydantic.dev", "logfire-api.pydantic.dev", "a\nb\n", "A", "a\\b",
    ]  # fmt: skip
    for name, glob in itertools.product(names, globs):
        assert _modes._glob_matches(name, glob) == fnmatch.fnmatchcase(name, glob), (name, glob)
