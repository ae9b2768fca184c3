"""Findings (``_lint``): what verify and check report about a cassette that parses, and what a first line must
be for a file to count as a cassette."""

from __future__ import annotations

import json

from vcr_transport._core.format._encode import call_end_line
from vcr_transport._core.format._format import Parser, problems
from vcr_transport._core.format._lint import header_problem


def test_an_intended_early_stop_reads_back_and_is_no_finding() -> None:
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


def test_a_first_line_is_a_header_of_any_version_or_named_as_not_one() -> None:
    assert header_problem(b'{"type": "header", "format_version": 7}') is None
    for line in (b"", b"{broken", b"[]", b'{"type": "request"}', b'{"type": "header"}'):
        assert header_problem(line) == "its first line is not a cassette header", line
