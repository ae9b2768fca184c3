"""Quiet re-records: a call recorded again with the same request and response keeps its old lines byte for
byte, and a re-record that changed nothing leaves the file exactly as it was."""

from __future__ import annotations

import http.server
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from upstream import Received, Reply, Upstream
from vendors import SDKS, VENDOR_ROUTES, Sdk, anthropic_reply, gemini_reply, openai_reply

import vcr_transport
from vcr_transport import _storage
from vcr_transport._core.engine._quiet import QuietComparison, merged_lines
from vcr_transport._core.format._format import (
    Cassette,
    call_end_line,
    encode_line,
    event_lines,
    header_line,
    line_place,
    overlap_groups,
    request_line,
    response_line,
)
from vcr_transport._storage import read_cassette

# openai sync and async (streaming in the steps), anthropic, google-genai.
QUIET_SDKS = [
    next(s for s in SDKS if s.name == name and s.library is httpx2 and s.side == side)
    for name, side in (("openai", "sync"), ("openai", "async"), ("anthropic", "sync"), ("genai", "async"))
]
OPENAI = QUIET_SDKS[0]
STEPS = [("chat", ["one"]), ("stream", ["two"]), ("chat", ["three"])]
REPLIES = {"openai": openai_reply, "anthropic": anthropic_reply, "genai": gemini_reply}


def record(sdk: Sdk, upstream: Upstream, cassette: Path, steps: list[Any], mode: str = "record", **options: Any) -> Any:
    """Run ``steps`` through ``sdk`` on a cassette in ``mode``; the session, to see what became of it."""
    factory = vcr_transport.async_transport if sdk.is_async else vcr_transport.transport
    transport = factory(cassette, mode=mode, **options)
    sdk.run(transport, upstream.url, steps)
    return transport.session


def lines_by_call(path: Path) -> dict[int, list[bytes]]:
    """The raw lines of each call, in file order (the header left out)."""
    calls: dict[int, list[bytes]] = {}
    for line in path.read_bytes().split(b"\n")[1:]:
        if line:
            calls.setdefault(json.loads(line)["call_index"], []).append(line)
    return calls


def header(response_line: dict[str, Any], name: str) -> str:
    return next(value for key, value in response_line["headers"] if key.lower() == name)


def varying(reply: Callable[..., Reply], splits: list[str | int]) -> Callable[[Received], Reply]:
    """``reply`` with what changes on every real request: a new request id and processing time, and the
    chunks split differently each run (``splits`` in turn)."""
    served = itertools.count()

    def route(received: Received) -> Reply:
        number = next(served)
        answer = reply(received, split=splits[number % len(splits)])
        answer.headers += [("x-request-id", f"req_{number}"), ("openai-processing-ms", str(100 + number))]
        return answer

    return route


@pytest.mark.parametrize("sdk", QUIET_SDKS, ids=lambda sdk: sdk.id)
def test_recording_the_same_again_leaves_the_file_untouched(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    record(sdk, upstream, cassette, STEPS)
    before = cassette.read_bytes()
    served = len(upstream.received)
    session = record(sdk, upstream, cassette, STEPS)
    assert len(upstream.received) == served + len(STEPS), "the re-record went to the upstream"
    assert session.outcome() == "recorded unchanged" and session._recorder.unchanged
    assert cassette.read_bytes() == before
    assert not list(cassette.parent.glob(".*.partial")), "no temporary file is left behind"


@pytest.mark.parametrize("sdk", QUIET_SDKS, ids=lambda sdk: sdk.id)
def test_a_changed_prompt_changes_only_that_calls_lines(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    record(sdk, upstream, cassette, STEPS)
    before = lines_by_call(cassette)
    header = cassette.read_bytes().split(b"\n")[0]
    session = record(sdk, upstream, cassette, [STEPS[0], ("stream", ["TWO"]), STEPS[2]])
    after = lines_by_call(cassette)
    assert not session._recorder.unchanged
    assert after[0] == before[0] and after[2] == before[2], "the calls that are the same keep their lines"
    assert after[1][0] != before[1][0] and b"TWO" in after[1][0]
    assert b"TWO" in b"".join(after[1][2:]), "the changed call's events are the new ones"
    lines = cassette.read_bytes().split(b"\n")
    assert lines[1 : 1 + len(after[0])] == before[0], "and their place in the file"
    assert json.loads(lines[0])["created"] >= json.loads(header)["created"]
    upstream.stop()
    steps = [STEPS[0], ("stream", ["TWO"]), STEPS[2]]
    replayed = sdk.run(vcr_transport.transport(cassette, mode="replay"), upstream.url, steps)
    assert "".join(replayed[1]).startswith("echo:TWO")


def test_a_response_that_differs_in_date_ids_timing_and_chunking_only_is_the_same(
    upstream: Upstream, cassette: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dates = iter(f"Mon, 01 Jan 2024 00:00:{second:02d} GMT" for second in range(60))
    monkeypatch.setattr(http.server.BaseHTTPRequestHandler, "date_time_string", lambda self, t=None: next(dates))
    upstream.routes[VENDOR_ROUTES["openai"][0]] = varying(openai_reply, ["events", 7, 13, 5])
    record(OPENAI, upstream, cassette, STEPS)
    before = cassette.read_bytes()
    session = record(OPENAI, upstream, cassette, STEPS)
    assert session._recorder.unchanged and cassette.read_bytes() == before
    # The same traffic once more, recorded fresh: it really did differ in all of those.
    fresh = tmp_path / "fresh.jsonl"
    record(OPENAI, upstream, fresh, STEPS)
    old, new = lines_by_call(cassette), lines_by_call(fresh)
    for index in (0, 1):
        old_response, new_response = json.loads(old[index][1]), json.loads(new[index][1])
        for name in ("date", "x-request-id", "openai-processing-ms"):
            assert header(old_response, name) != header(new_response, name)
    assert len(old[1]) != len(new[1]), "the stream came in different chunks"


def test_a_changed_response_body_changes_that_call(upstream: Upstream, cassette: Path) -> None:
    changed = {"on": False}

    def reply(received: Received) -> Reply:
        answer = openai_reply(received)
        if changed["on"] and received.json()["messages"][-1]["content"] == "three":
            answer.chunks = [chunk.replace(b"echo:", b"ECHO:") for chunk in answer.chunks]
        return answer

    upstream.routes[VENDOR_ROUTES["openai"][0]] = reply
    record(OPENAI, upstream, cassette, STEPS)
    before = lines_by_call(cassette)
    changed["on"] = True
    record(OPENAI, upstream, cassette, STEPS)
    after = lines_by_call(cassette)
    assert after[0] == before[0] and after[1] == before[1]
    assert after[2] != before[2] and b"ECHO:three" in b"".join(after[2])


def test_a_changed_status_or_outcome_is_not_the_same(upstream: Upstream, cassette: Path) -> None:
    prefix = VENDOR_ROUTES["openai"][0]
    upstream.routes[prefix] = [Reply.json({"ok": 1}), Reply.json({"ok": 1}, status=201)]
    record(OPENAI, upstream, cassette, [("post", ["/chat/completions", "{}"])])
    before = lines_by_call(cassette)
    record(OPENAI, upstream, cassette, [("post", ["/chat/completions", "{}"])])
    after = lines_by_call(cassette)
    assert json.loads(after[0][1])["status"] == 201 and after[0][1] != before[0][1]


def test_record_on_miss_keeps_the_calls_after_the_miss_that_came_back_the_same(
    upstream: Upstream, cassette: Path
) -> None:
    steps = [("chat", ["one"]), ("chat", ["two"]), ("chat", ["three"])]
    record(OPENAI, upstream, cassette, steps)
    before = lines_by_call(cassette)
    served = len(upstream.received)
    record(OPENAI, upstream, cassette, [steps[0], ("chat", ["TWO"]), steps[2]], mode="record-on-miss")
    assert len(upstream.received) == served + 2, "the miss and the call after it were recorded"
    after = lines_by_call(cassette)
    assert after[0] == before[0], "replayed before the miss: byte-identical"
    assert after[1] != before[1]
    assert after[2] == before[2], "recorded again after the miss, the same: byte-identical"


def test_fewer_or_more_calls_rewrite_the_header_and_keep_the_same_calls(upstream: Upstream, cassette: Path) -> None:
    steps = [("chat", ["one"]), ("chat", ["two"]), ("chat", ["three"])]
    record(OPENAI, upstream, cassette, steps)
    before = lines_by_call(cassette)
    assert not record(OPENAI, upstream, cassette, steps[:2])._recorder.unchanged
    assert lines_by_call(cassette) == {0: before[0], 1: before[1]}
    header = cassette.read_bytes().split(b"\n")[0]
    assert not record(OPENAI, upstream, cassette, steps)._recorder.unchanged
    after = lines_by_call(cassette)
    assert after[0] == before[0] and after[1] == before[1] and len(after) == 3
    assert cassette.read_bytes().split(b"\n")[0] != header or b'"created"' in header


def test_an_old_call_holding_what_the_new_rules_redact_is_recorded_anew(upstream: Upstream, cassette: Path) -> None:
    upstream.routes[VENDOR_ROUTES["openai"][0]] = varying(openai_reply, ["events"])
    record(OPENAI, upstream, cassette, STEPS)
    assert b"req_0" in cassette.read_bytes()
    # x-request-id is not compared; a rule added since says its values are secrets.
    record(OPENAI, upstream, cassette, STEPS, redact_patterns=[r"req_\d+"])
    data = cassette.read_bytes()
    assert b"req_" not in data, "no old line kept a value the new rules remove"
    assert all(b"[secret removed]" in lines[1] for lines in lines_by_call(cassette).values())


@pytest.mark.parametrize(
    "damage",
    [
        (b'"type":"response","call_index":0', b'"type":"nonsense","call_index":0'),  # an unknown line
        (b'"call_index":1,"event_index":1,', b'"call_index":1,"event_index":5,'),  # events out of order
    ],
    ids=["unreadable-line", "events-out-of-order"],
)
def test_an_old_cassette_that_cant_be_read_is_replaced_whole(
    upstream: Upstream, cassette: Path, damage: tuple[bytes, bytes]
) -> None:
    record(OPENAI, upstream, cassette, STEPS)
    damaged = cassette.read_bytes().replace(*damage)
    assert damaged != cassette.read_bytes()
    cassette.write_bytes(damaged)
    session = record(OPENAI, upstream, cassette, STEPS)
    assert not session._recorder.unchanged
    assert [call.complete for call in read_cassette(cassette).calls] == [True] * 3, "a valid cassette again"


# --- the core, on hand-built files ------------------------------------------------------------------------


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, start: int, end: int) -> bytes:
        return self.data[start:end]


def _file(calls: list[tuple[int, str, list[bytes]]], order: list[tuple[int, str]], created: str) -> bytes:
    """Two calls whose lines interleave as concurrent calls' do: ``order`` says which line comes next."""
    built: dict[int, list[bytes]] = {}
    for index, prompt, chunks in calls:
        url = "https://api.openai.com/v1/chat/completions"
        lines = [encode_line(request_line(index, "POST", url, [("user-agent", prompt)], {"json": {"p": prompt}}))]
        lines.append(encode_line(response_line(index, 200, [("date", created), ("content-type", "text/plain")])))
        lines += [event_lines(index, number, [(chunk, 10**8 * number)], 0) for number, chunk in enumerate(chunks)]
        lines.append(encode_line(call_end_line(index, len(chunks), "complete")))
        built[index] = lines
    out = [encode_line(header_line(created=created))]
    taken = dict.fromkeys(built, 0)
    for index, _ in order:
        out.append(built[index][taken[index]])
        taken[index] += 1
    return b"".join(out)


def test_interleaved_calls_keep_their_old_lines_and_stay_a_valid_cassette() -> None:
    order = [(0, "request"), (1, "request"), (0, "response"), (1, "response")]
    order += [(0, "event"), (1, "event"), (0, "event"), (0, "call_end"), (1, "call_end")]
    old = _file([(0, "a", [b"he", b"llo"]), (1, "b", [b"x"])], order, "then")
    # Call 0: other chunking, another date and user-agent (not compared); call 1: another body.
    new = _file([(0, "a", [b"h", b"ello"]), (1, "b", [b"y"])], order, "now")
    new = new.replace(b'"user-agent","a"', b'"user-agent","a/2"')
    quiet = QuietComparison()
    old_prints, new_prints = quiet.prints("old", [old], old=True), quiet.prints("new", [new], old=False)
    assert old_prints is not None and new_prints is not None
    plan = quiet.plan(old_prints, new_prints)
    assert not plan.unchanged and set(plan.kept) == {0}
    merged = b"".join(merged_lines("new", [new[:100], new[100:]], plan, _Bytes(old)))
    cassette = Cassette.parse(merged, "merged")
    assert [call.chunks for call in cassette.calls] == [[b"he", b"llo"], [b"y"]]
    old_call_0 = [line for line in old.split(b"\n") if b'"call_index":0' in line]
    assert [line for line in merged.split(b"\n") if b'"call_index":0' in line] == old_call_0
    assert merged.split(b"\n")[0] == new.split(b"\n")[0], "a file that changed gets the new header"
    # The kept call's call_end stands where the new one does: the two calls still overlapped.
    places = [line_place(line) for line in merged.split(b"\n")[1:] if line]
    assert places.index(("call_end", 0)) > places.index(("request", 1))
    assert overlap_groups(cassette.calls) == [0, 0]
    # The same file again: unchanged, whatever the header says.
    again = quiet.prints("again", [old.replace(b'"created":"then"', b'"created":"later"')], old=False)
    assert again is not None and quiet.plan(old_prints, again).unchanged


def _seen(prints: Any) -> dict[int, tuple[bytes, bytes, bool, list[tuple[int, int]]]]:
    return {index: (call.digest, call.request, call.clean, call.spans) for index, call in prints.calls.items()}


def test_an_old_files_spans_dont_depend_on_how_its_blocks_are_cut() -> None:
    order = [(0, "request"), (1, "request"), (0, "response"), (1, "response")]
    order += [(0, "event"), (0, "event"), (1, "event"), (0, "event"), (0, "call_end"), (1, "call_end")]
    old = _file([(0, "a", [b"he", b"ll", b"o"]), (1, "b", [b"x"])], order, "then")
    quiet = QuietComparison()
    whole = quiet.prints("old", [old], old=True)
    assert whole is not None
    for cut in range(1, len(old), 7):
        cut_up = quiet.prints("old", [old[:cut], old[cut:]], old=True)
        assert cut_up is not None and _seen(cut_up) == _seen(whole)
    assert b"".join(old[start:end] for start, end in whole.calls[0].spans) == b"".join(
        line + b"\n" for line in old.split(b"\n") if b'"call_index":0' in line
    ), "the spans hold call 0's lines, and nothing else"


def test_a_re_record_that_kept_no_call_is_read_once(tmp_path: Path, monkeypatch: Any) -> None:
    """Every call changed: the recording is the new file as written, which the comparison has just read
    whole with the strict parser; it is not read back again. A file merged with old lines is."""
    path = tmp_path / "c.jsonl"

    def record_calls(prompts: list[str]) -> None:
        recorder = vcr_transport.CassetteRecorder(path)
        for prompt in prompts:
            call = recorder.start(
                "POST", "https://api.test/v1", [("content-type", "application/json")], b'{"q":"%s"}' % prompt.encode()
            )
            call.response(200, [("content-type", "text/plain")], "HTTP/1.1")
            call.chunk(b"answer to " + prompt.encode())
            call.end("complete")
        recorder.close()

    record_calls(["a", "b"])
    read_back: list[Path] = []
    unreadable = _storage._unreadable
    monkeypatch.setattr(_storage, "_unreadable", lambda file: read_back.append(file) or unreadable(file))
    record_calls(["c", "d"])
    assert read_back == []
    assert [call.body for call in read_cassette(path).calls] == [{"json": {"q": "c"}}, {"json": {"q": "d"}}]
    record_calls(["c", "e"])
    assert len(read_back) == 1, "a file holding old lines is read back"


def test_a_damaged_old_file_has_no_prints() -> None:
    good = _file([(0, "a", [b"x"])], [(0, "request"), (0, "response"), (0, "event"), (0, "call_end")], "t")
    quiet = QuietComparison()
    assert quiet.prints("good", [good], old=True) is not None
    assert quiet.prints("cut", [good[:-1]], old=True) is None, "a last line cut off"
    assert quiet.prints("no end", [good[: good.rindex(b'{"type":"call_end"')]], old=True) is None
    assert quiet.prints("header", [good.replace(b'"format_version":1', b'"format_version":9')], old=True) is None
