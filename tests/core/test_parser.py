"""The parser (``_parser``), with no file system: what a line may say (an early stop only on a call closed
early), and its long lines and foreign files: a line past HELD_LINE_BYTES is measured,
not held, and read again from its source; whatever the block boundaries, the cassette read is the one read
from memory. A BOM, a merge-conflict marker or an LFS pointer is named as what it is."""

from __future__ import annotations

import json
import random

import pytest

from vcr_transport import CassetteError
from vcr_transport._core.format import _format, _parser
from vcr_transport._core.format._format import Cassette, encode_line, foreign_file, header_line, problems


class Source:
    """Bytes read at offsets, counting what was read again."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.reads: list[tuple[int, int]] = []

    def read(self, start: int, end: int) -> bytes:
        self.reads.append((start, end))
        return self.data[start:end]


def cassette_bytes(sizes: list[int]) -> bytes:
    lines = [encode_line(header_line())]
    lines.append(
        encode_line(
            {
                "type": "request",
                "call_index": 0,
                "method": "POST",
                "url": "https://a.test/",
                "headers": [],
                "body": {"text": "r" * sizes[0]},
            }
        )
    )
    lines.append(encode_line({"type": "response", "call_index": 0, "status": 200, "headers": []}))
    for number, size in enumerate(sizes[1:]):
        lines.append(
            encode_line({"type": "event", "call_index": 0, "event_index": number, "t": 0.0, "text": "e" * size})
        )
    lines.append(
        encode_line({"type": "call_end", "call_index": 0, "event_count": len(sizes) - 1, "outcome": "complete"})
    )
    return b"".join(lines)


def blocks(data: bytes, chooser: random.Random) -> list[bytes]:
    out, start = [], 0
    while start < len(data):
        size = chooser.choice([1, 7, 64, 500, 4096])
        out.append(data[start : start + size])
        start += size
    return out


@pytest.mark.parametrize("seed", range(20))
def test_whatever_the_blocks_long_lines_read_back_as_from_memory(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parser, "HELD_LINE_BYTES", 256)
    chooser = random.Random(seed)
    data = cassette_bytes([chooser.choice([0, 10, 300, 2000]) for _ in range(6)])
    source = Source(data)
    parser = _format.Parser("long.jsonl", "outline")
    outline = parser.read(blocks(data, chooser), source)
    whole = Cassette.parse(data, "long.jsonl")
    assert [(c.index, c.status, c.outcome, c.event_total, c.size) for c in outline.calls] == [
        (c.index, c.status, c.outcome, c.event_total, c.size) for c in whole.calls
    ]
    assert all(end - start > 256 for start, end in source.reads), "only lines past what is held are read again"
    assert [finding for finding in problems("long.jsonl", blocks(data, chooser), source)] == []


@pytest.mark.parametrize("seed", range(20))
def test_a_cassette_held_in_memory_reads_the_same_whatever_the_blocks(seed: int) -> None:
    """A cassette held in memory is read block by block (the whole file is never held beside its calls): a
    line cut by a block's end is joined to its rest alone; the calls, chunks and bodies are those of the whole."""
    chooser = random.Random(seed)
    data = cassette_bytes([chooser.choice([0, 10, 300, 2000]) for _ in range(6)])
    held = _format.load_held("held.jsonl", blocks(data, chooser), Source(data))
    whole = Cassette.parse(data, "held.jsonl")
    assert held.header == whole.header
    assert [(c.index, c.body, c.events, c.outcome, c.size) for c in held.calls] == [
        (c.index, c.body, c.events, c.outcome, c.size) for c in whole.calls
    ]


def test_a_line_past_the_limit_is_named_without_being_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parser, "HELD_LINE_BYTES", 100)
    monkeypatch.setattr(_parser, "MAX_LINE_BYTES", 1000)
    data = encode_line(header_line()) + b'{"type": "event", "text": "' + b"x" * 5000 + b'"}\n'
    source = Source(data)
    parser = _format.Parser("long.jsonl", "outline")
    with pytest.raises(CassetteError, match="line 2 is longer than 1,000 bytes") as raised:
        for run in parser.runs(blocks(data, random.Random(1)), source):
            parser.take(run)
    assert raised.value.line == 2 and "restore it from version control" in raised.value.fix
    assert source.reads == [], "a line past the limit is never read again"


@pytest.mark.parametrize(
    ("first", "number", "said"),
    [
        (b"\xef\xbb\xbf{}\n", 1, "byte order mark"),
        (b"<<<<<<< HEAD\n", 3, "merge-conflict marker ('<<<<<<< HEAD')"),
        (b"=======\n", 4, "merge-conflict marker ('=======')"),
        (b">>>>>>> 1a2b3c (other)\n", 9, "merge-conflict marker"),
        (b"version https://git-lfs.github.com/spec/v1\n", 1, "Git LFS pointer"),
    ],
)
def test_foreign_files_are_named(first: bytes, number: int, said: str) -> None:
    error = foreign_file("c.jsonl", number, first)
    assert error is not None and said in error.problem and error.line == number
    assert foreign_file("c.jsonl", 2, b'{"type": "event"}\n') is None
    assert foreign_file("c.jsonl", 2, b"\xef\xbb\xbf{}\n") is None, "a BOM is a BOM only at the start"
    assert foreign_file("c.jsonl", 2, b"version https://git-lfs.github.com/spec/v1\n") is None


def test_the_format_refuses_an_early_stop_on_a_call_that_did_not_stop_early() -> None:
    lines = [
        {"type": "header", "format_version": 1},
        {"type": "request", "call_index": 0, "method": "GET", "url": "https://x.test/", "headers": []},
        {"type": "response", "call_index": 0, "status": 200, "headers": []},
        {"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "complete", "early_stop": "intended"},
    ]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    with pytest.raises(CassetteError) as caught:
        _format.Parser("c.jsonl", "outline").read([data])
    assert caught.value.line == 4
    assert "'early_stop' is there only when the outcome is 'closed_early'" in caught.value.problem
