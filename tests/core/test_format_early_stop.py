"""The cassette format's mark of an intended early stop (``"early_stop": "intended"`` on a call_end)."""

from __future__ import annotations

import json

import pytest

from vcr_transport._core.format._format import Parser, call_end_line


def test_the_format_refuses_an_early_stop_on_a_call_that_did_not_stop_early() -> None:
    from vcr_transport._exceptions import CassetteError

    lines = [
        {"type": "header", "format_version": 1},
        {"type": "request", "call_index": 0, "method": "GET", "url": "https://x.test/", "headers": []},
        {"type": "response", "call_index": 0, "status": 200, "headers": []},
        {"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "complete", "early_stop": "intended"},
    ]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    with pytest.raises(CassetteError) as caught:
        Parser("c.jsonl", "outline").read([data])
    assert caught.value.line == 4
    assert "'early_stop' is there only when the outcome is 'closed_early'" in caught.value.problem


def test_only_a_call_closed_early_is_marked_intended() -> None:
    assert call_end_line(3, 2, "closed_early", early_stop_ok=True)["early_stop"] == "intended"
    assert "early_stop" not in call_end_line(3, 2, "complete", early_stop_ok=True)
    assert "early_stop" not in call_end_line(3, 2, "error", ("ReadError", "cut"), early_stop_ok=True)
    assert "early_stop" not in call_end_line(3, 2, "closed_early")


def test_an_intended_early_stop_reads_back_and_is_no_finding() -> None:
    from vcr_transport._core.format._format import problems

    lines = [
        {"type": "header", "format_version": 1},
        {"type": "request", "call_index": 0, "method": "GET", "url": "https://x.test/", "headers": []},
        {"type": "response", "call_index": 0, "status": 200, "headers": []},
        call_end_line(0, 0, "closed_early", early_stop_ok=True),
        {"type": "request", "call_index": 1, "method": "GET", "url": "https://x.test/", "headers": []},
        {"type": "response", "call_index": 1, "status": 200, "headers": []},
        call_end_line(1, 0, "closed_early"),
    ]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    calls = Parser("c.jsonl", "outline").read([data]).calls
    assert [(call.early_stop, call.stopped_on_purpose) for call in calls] == [("intended", True), ("", False)]
    found = list(problems("c.jsonl", [data]))
    assert [(f.call, f.outcome, f.incomplete, f.problem) for f in found] == [
        (1, "closed_early", True, "call 1 (GET https://x.test/) ended closed_early")
    ]
