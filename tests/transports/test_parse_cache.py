"""The parse cache is only ever a shortcut: an entry is used for the exact bytes it was made from, by the same
vcr_transport, undamaged; otherwise the cassette is parsed (and refused) as if there were no cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

import vcr_transport
import vcr_transport._version
from vcr_transport import _parse_cache, _storage
from vcr_transport._core.format import _format

CHUNKS = [b'data: {"n": %d, "text": "%s"}\n\n' % (n, b"x" * 4000) for n in range(80)]  # over MIN_BYTES


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("VCR_TRANSPORT_CACHE_DIR", str(folder))
    monkeypatch.delenv("VCR_TRANSPORT_PARSE_CACHE", raising=False)
    return folder


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each path the strict parser read (whole, or block by block when the cache is not asked)."""
    seen: list[str] = []
    original = _format.Cassette.parse.__func__  # type: ignore[attr-defined]
    held = _storage.load_held

    def counting(cls: type[_format.Cassette], data: bytes, path: str) -> _format.Cassette:
        seen.append(path)
        return original(cls, data, path)  # type: ignore[no-any-return]

    def counting_held(path: str, *arguments: Any) -> _format.Cassette:
        seen.append(path)
        return held(path, *arguments)

    monkeypatch.setattr(_format.Cassette, "parse", classmethod(counting))
    monkeypatch.setattr(_storage, "load_held", counting_held)
    return seen


class _Chunks(httpx2.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks


def _record(path: Path, chunks: list[bytes]) -> None:
    upstream = httpx2.MockTransport(
        lambda request: httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=_Chunks(chunks))
    )
    with httpx2.Client(transport=vcr_transport.RecordingTransport(upstream, path)) as client:
        with client.stream("POST", "https://api.test/v1/stream", json={"q": 1}) as response:
            assert list(response.iter_bytes()) == chunks


def _replay(path: Path, **options: object) -> list[bytes]:
    with httpx2.Client(transport=vcr_transport.ReplayTransport(path, **options)) as client:
        with client.stream("POST", "https://api.test/v1/stream", json={"q": 1}) as response:
            return list(response.iter_raw())


def _cached(path: Path) -> None:
    """Open the cassette twice: the first open marks its bytes seen, the second writes their entry."""
    assert _replay(path) == _replay(path)


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.marshal")) if folder.exists() else []


def test_a_second_replay_of_the_same_bytes_skips_the_parser(cassette: Path, cache_dir: Path, parses: list[str]) -> None:
    _record(cassette, CHUNKS)
    assert _replay(cassette) == CHUNKS
    assert parses == [str(cassette)]
    assert _entries(cache_dir) == [], "opened once (a fresh CI run): no entry is written, only a marker"
    assert _replay(cassette) == CHUNKS
    assert parses == [str(cassette)] * 2 and len(_entries(cache_dir)) == 1, "the second open writes the entry"
    assert _replay(cassette) == CHUNKS
    assert parses == [str(cassette)] * 2  # the entry answered


def test_an_entry_holds_the_request_bodies_as_the_parser_does(cassette: Path, cache_dir: Path) -> None:
    """As their bytes, decoded when asked for: a cassette from the cache takes no more memory than one parsed."""
    _record(cassette, CHUNKS)
    _cached(cassette)
    data = cassette.read_bytes()
    parsed, cached = _format.Cassette.parse(data, str(cassette)), _parse_cache.load_or_parse(data, str(cassette))
    assert len(_entries(cache_dir)) == 1 and cached.calls == parsed.calls
    assert [_format.held_body(call) for call in cached.calls] == [b'{"q":1}']
    assert cached.calls[0].body == {"json": {"q": 1}}


def test_an_edited_file_with_the_same_size_and_mtime_is_parsed_again(
    cassette: Path, cache_dir: Path, parses: list[str]
) -> None:
    _record(cassette, CHUNKS)
    _replay(cassette)
    status = cassette.stat()
    changed = [chunk.replace(b'"n": 1,', b'"n": 7,') for chunk in CHUNKS]
    data = cassette.read_bytes()
    edited = data.replace(b'\\"n\\": 1,', b'\\"n\\": 7,')
    assert edited != data and len(edited) == len(data)
    cassette.write_bytes(edited)
    os.utime(cassette, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert _replay(cassette) == changed
    assert len(parses) == 2


def test_a_file_the_parser_refuses_is_refused_although_an_entry_was_made_for_its_path(
    cassette: Path, cache_dir: Path
) -> None:
    _record(cassette, CHUNKS)
    _cached(cassette)
    cassette.write_bytes(cassette.read_bytes().replace(b'"event_count":80', b'"event_count":81'))
    with pytest.raises(vcr_transport.CassetteError, match="event_count 81"):
        vcr_transport.ReplayTransport(cassette)


def test_a_damaged_entry_is_not_trusted_and_is_rewritten(cassette: Path, cache_dir: Path, parses: list[str]) -> None:
    _record(cassette, CHUNKS)
    _cached(cassette)
    (entry,) = _entries(cache_dir)
    blob = bytearray(entry.read_bytes())
    position = blob.rindex(b"xxxx")
    blob[position] = ord("y")  # still loadable by marshal: only the checksum tells
    entry.write_bytes(bytes(blob))
    assert _replay(cassette) == CHUNKS
    assert len(parses) == 3
    entry.write_bytes(b"\x00\x00\x00\x05garbage")
    assert _replay(cassette) == CHUNKS
    assert len(parses) == 4
    assert _replay(cassette) == CHUNKS
    assert len(parses) == 4  # the rewritten entry answers


def test_an_entry_written_by_another_version_is_not_trusted(
    cassette: Path, cache_dir: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(cassette, CHUNKS)
    _cached(cassette)
    monkeypatch.setattr(vcr_transport._version, "__version__", "999.0")
    assert _replay(cassette) == CHUNKS
    assert len(parses) == 3


def test_turned_off_it_is_neither_written_nor_read(
    cassette: Path, cache_dir: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(cassette, CHUNKS)
    assert _replay(cassette, parse_cache=False) == CHUNKS
    assert _entries(cache_dir) == []
    _cached(cassette)  # written
    assert len(_entries(cache_dir)) == 1
    assert _replay(cassette, parse_cache=False) == CHUNKS
    assert len(parses) == 4  # ... but not read
    monkeypatch.setenv("VCR_TRANSPORT_PARSE_CACHE", "0")
    assert _replay(cassette) == CHUNKS
    assert len(parses) == 5


def test_small_cassettes_are_not_cached(cassette: Path, cache_dir: Path) -> None:
    _record(cassette, CHUNKS[:2])
    assert cassette.stat().st_size < _parse_cache.MIN_BYTES
    assert _replay(cassette) == CHUNKS[:2]
    assert _entries(cache_dir) == []


# --- attacks: parallel writers, a swapped entry, a folder that is a file ----------------------------------


_LOADS_ONCE = """
    import sys
    from vcr_transport._storage import read_cassette
    calls = read_cassette(sys.argv[1], cache=True).calls
    print(len(calls), sum(len(b"".join(call.chunks)) for call in calls), flush=True)
"""


@pytest.mark.slow
def test_the_parse_cache_survives_parallel_writers_a_swapped_entry_and_a_folder_that_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_parse_cache import CHUNKS, _entries, _record, _replay

    from vcr_transport import _parse_cache
    from vcr_transport._core.format import _format

    folder = tmp_path / "cache"
    monkeypatch.setenv("VCR_TRANSPORT_CACHE_DIR", str(folder))
    monkeypatch.delenv("VCR_TRANSPORT_PARSE_CACHE", raising=False)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    _record(first, CHUNKS)
    _record(second, CHUNKS[::-1])
    _replay(first)  # its bytes marked seen: each child's open then writes the entry, racing the others
    children = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_LOADS_ONCE), str(first)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(vcr_transport.__file__).parent.parent)},
        )
        for _ in range(4)
    ]
    outputs = {child.communicate(timeout=60)[0] for child in children}
    assert outputs == {f"1 {sum(map(len, CHUNKS))}\n"} and all(child.returncode == 0 for child in children)
    [entry] = _entries(folder)
    assert not [p for p in folder.iterdir() if p.suffix == ".tmp"], "every writer renamed its temporary file"
    parses: list[str] = []
    original = _format.Cassette.parse.__func__  # type: ignore[attr-defined]

    def counting(cls: type[_format.Cassette], data: bytes, path: str) -> _format.Cassette:
        parses.append(path)
        return original(cls, data, path)  # type: ignore[no-any-return]

    monkeypatch.setattr(_format.Cassette, "parse", classmethod(counting))
    assert _replay(first) == CHUNKS and parses == [], "the entry the racing writers left is whole"
    # The first cassette's entry put where the second's is looked for: never used for the other bytes.
    _parse_cache.entry_path(str(second)).write_bytes(entry.read_bytes())
    assert _replay(second) == CHUNKS[::-1] and parses == [str(second)]
    # A cache folder that is a file: every open parses, none fails.
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.write_bytes(b"not a folder")
    assert _replay(first) == CHUNKS and _replay(first) == CHUNKS
    assert parses == [str(second), str(first), str(first)]
    assert folder.read_bytes() == b"not a folder"
