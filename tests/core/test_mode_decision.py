"""The mode decision (``_core/engine/_modes.py``) for mode ``check``: every request goes live and is checked, a
passthrough request goes live unchecked, an unreadable cassette refuses, and CI never refuses it (it records
nothing)."""

from __future__ import annotations

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
