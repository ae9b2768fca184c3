"""The three ways a cassette is read (held in memory, lazily from the file, as an outline) keep the same calls,
and the replay engine gives the fields the matcher gives."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import call_lines, jsonl

from vcr_transport import CassetteError
from vcr_transport._core.engine._engine import ReplayEngine
from vcr_transport._core.engine._matching import RequestMatcher
from vcr_transport._core.engine._options import Options
from vcr_transport._core.format import _format
from vcr_transport._core.format._format import (
    Cassette,
    call_end_line,
    encode_line,
    event_lines,
    header_line,
    request_line,
    response_line,
)
from vcr_transport._storage import drop_owners, read_cassette, read_outline

# Two streams recorded at once (their events interleaved), with chunks that are not UTF-8 on their own.
STREAMS = {
    0: [b"data: one\n\n", "data: é\n\n".encode()[:7], "data: é\n\n".encode()[7:], b"data: [DONE]\n\n"],
    1: [b"\xff\xfe raw", b"data: two\n\n", b"tail"],
}


def _interleaved_lines() -> list[str]:
    lines = [encode_line(header_line()).decode()]
    for index in STREAMS:
        lines.append(encode_line(request_line(index, "POST", f"https://api.test/v1/s/{index}", [], None)).decode())
        lines.append(encode_line(response_line(index, 200, [("content-type", "text/event-stream")])).decode())
    positions = dict.fromkeys(STREAMS, 0)
    while any(positions[i] < len(chunks) for i, chunks in STREAMS.items()):
        for index, chunks in STREAMS.items():
            if positions[index] < len(chunks):
                event = [(chunks[positions[index]], 1_000_000 * positions[index])]  # 1 ms apart
                lines.append(event_lines(index, positions[index], event, 0).decode())
                positions[index] += 1
    lines += [encode_line(call_end_line(index, len(chunks), "complete")).decode() for index, chunks in STREAMS.items()]
    return lines


def _summary(cassette: Cassette, chunks: bool = True) -> list[tuple[Any, ...]]:
    return [
        (call.index, call.event_total, call.size, call.outcome, list(call.events) if chunks else None,
         list(call.offsets) if chunks else None)
        for call in cassette.calls
    ]  # fmt: skip


def test_interleaved_streams_load_the_same_in_memory_lazily_and_as_an_outline(cassette: Path) -> None:
    cassette.write_text("".join(_interleaved_lines()))
    in_memory = read_cassette(cassette)
    lazy = read_cassette(cassette, lazy=True)
    assert lazy.calls[0].lazy is not None and in_memory.calls[0].lazy is None
    assert [list(call.events) for call in in_memory.calls] == [STREAMS[0], STREAMS[1]]
    assert _summary(lazy) == _summary(in_memory)
    assert [call.size for call in in_memory.calls] == [sum(map(len, STREAMS[i])) for i in STREAMS]
    outline = read_outline(cassette)
    assert [(c.index, c.event_total, c.outcome) for c in outline.calls] == [(0, 4, "complete"), (1, 3, "complete")]


@pytest.mark.parametrize("lazy", [False, True])
def test_an_event_out_of_order_between_interleaved_ones_names_its_line_and_the_expected_index(
    cassette: Path, lazy: bool
) -> None:
    lines = _interleaved_lines()
    # Line 9 is call 1's third event (event_index 1 after call 0's events 0 and 1): say it is 2.
    target = json.loads(lines[8])
    assert (target["type"], target["call_index"], target["event_index"]) == ("event", 1, 1)
    target["event_index"] = 2
    lines[8] = json.dumps(target, separators=(",", ":")) + "\n"
    cassette.write_text("".join(lines))
    with pytest.raises(CassetteError) as raised:
        read_cassette(cassette, lazy=lazy)
    assert raised.value.line == 9
    assert "event_index 2 of call 1, expected 1" in str(raised.value)


def test_bad_base64_in_an_event_is_refused_with_its_line(cassette: Path) -> None:
    lines = _interleaved_lines()
    target = json.loads(lines[7])
    assert "base64" in target  # call 1's first chunk is not UTF-8
    target["base64"] = "not*base64"
    lines[7] = json.dumps(target, separators=(",", ":")) + "\n"
    cassette.write_text("".join(lines))
    with pytest.raises(CassetteError) as raised:
        Cassette.parse(cassette.read_bytes(), str(cassette))
    assert raised.value.line == 8 and "not valid base64" in str(raised.value)
    assert base64.b64encode(STREAMS[1][0]).decode() != target["base64"]


HEADERS = [("content-type", "application/json"), ("authorization", "Bearer sk-abcdefghijklmnopqrstuvwxyz0123")]


@pytest.mark.parametrize("options", [{}, {"compare_headers": ["content-length"]}, {"match_on": ["method", "path"]}])
def test_the_engine_gives_the_fields_the_matcher_gives_for_every_url_and_content_length(
    options: dict[str, Any],
) -> None:
    """Headers are made comparable once and shared by every URL; content-length is left out of that only
    while it is not compared."""
    chosen = Options.from_arguments(options, where="test")
    engine = ReplayEngine(Cassette("c.jsonl", {}, []), chosen.matcher(), chosen.redactor())
    reference = RequestMatcher(**options)
    redactor = chosen.redactor()
    for number, length in enumerate(["10", "11", "12", "13"]):
        url = f"https://api.test/v1/items/{number % 2}?page={number % 2}"  # each URL twice, lengths differ
        headers = [*HEADERS, ("content-length", length)]
        body = json.dumps({"n": number}).encode()
        fields = engine.incoming_fields("POST", url, headers, body)
        redacted = redactor.redact_headers(headers)
        expected = reference.comparable("POST", url, redacted, {"json": {"n": number}})
        assert fields == expected
        if "compare_headers" in options:
            assert fields["headers"]["content-length"] == length
        assert "sk-abcdefghijklmnopqrstuvwxyz0123" not in json.dumps(fields)


@pytest.mark.parametrize("run_bytes", [1, 40, 97, 250])
def test_a_cassette_parsed_in_runs_of_lines_loads_as_it_does_whole(cassette: Path, run_bytes: int) -> None:
    """A cassette read block by block is taken in runs of whole lines: cut anywhere, it loads the same calls,
    and a bad line still names its number."""
    lines = _interleaved_lines()
    data = "".join(lines).encode()
    whole = Cassette.parse(data, "c.jsonl")

    def blocks(data: bytes) -> list[bytes]:
        return [data[start : start + run_bytes] for start in range(0, len(data), run_bytes)]

    assert _summary(_format.Parser("c.jsonl", "memory").read(blocks(data))) == _summary(whole)
    bad = lines[:]
    bad[9] = bad[9].replace('"event_index":', '"event_index":"x","_":')
    with pytest.raises(CassetteError) as caught:
        _format.Parser("c.jsonl", "memory").read(blocks("".join(bad).encode()))
    assert caught.value.line == 10
    with pytest.raises(CassetteError, match="cut off") as cut:
        _format.Parser("c.jsonl", "memory").read(blocks(data[:-1]))
    assert cut.value.line == len(lines)


def test_dropping_owners_rewrites_a_symlinked_cassettes_target_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "real" / "shared.jsonl"
    target.parent.mkdir()
    target.write_bytes(
        jsonl(
            [
                {"type": "header", "format_version": 1, "shared": True},
                *call_lines(0, "https://a.test/a1", "t::a"),
                *call_lines(1, "https://a.test/b1", "t::b"),
            ]
        )
    )
    target.chmod(0o644)
    link = tmp_path / "shared.jsonl"
    link.symlink_to(target)
    assert drop_owners(link, {"t::b"}) == 1
    assert link.is_symlink() and os.stat(target).st_mode & 0o777 == 0o644
    assert [(c.owner, c.url[-2:]) for c in read_cassette(link).calls] == [("t::a", "a1")]
    assert drop_owners(link, {"t::a"}) == 0  # none would stay: the cassette is left whole
    assert sorted(p.name for p in target.parent.iterdir()) == ["shared.jsonl"]  # no partial left behind
