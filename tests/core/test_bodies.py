"""Recorded bodies decoded within a bound (``_core._bodies``): a decompression bomb (gzip of zeros, concatenated
or nested members, deflate, brotli) stops at ``MAX_DECODED_BYTES`` (and ``MAX_RATIO`` times its size) in memory
and time, and what is under the bound decodes as before."""

from __future__ import annotations

import functools
import gzip
import json
import tracemalloc
import zlib
from collections.abc import Callable

import pytest

from vcr_transport._core.format import _bodies
from vcr_transport._core.format._bodies import (
    MAX_DECODED_BYTES,
    DecodedTooLarge,
    decode_stacked,
    decoded_body,
    stored_body,
)
from vcr_transport._core.rules._redaction import Redactor
from vcr_transport._core.rules._stream import EncodedBodyRedactor

brotli = pytest.importorskip("brotli")

MiB = 1024 * 1024
MEMBER = 64 * MiB  # one gzip member of zeros: 64 MiB declared in 65 KB


@functools.cache
def gzip_member(size: int = MEMBER) -> bytes:
    """A gzip member of ``size`` zero bytes, compressed without holding them."""
    return _zeros(zlib.compressobj(9, zlib.DEFLATED, 31), size)


def _zeros(compressor: zlib._Compress, size: int) -> bytes:
    zero = b"\0" * MiB
    return b"".join(compressor.compress(zero) for _ in range(size // MiB)) + compressor.flush()


def gzip_bomb(declared: int) -> bytes:
    """Concatenated gzip members declaring ``declared`` bytes (every member counts: they decode to one body)."""
    return gzip_member() * (declared // MEMBER)


def _peak(run: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        run()
    except DecodedTooLarge:
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_a_10_gb_gzip_bomb_stops_at_the_bound_in_bounded_memory() -> None:
    bomb = gzip_bomb(10 * 1024 * MiB)  # 10 MB stored
    with pytest.raises(DecodedTooLarge, match=f"gzip body decodes past {MAX_DECODED_BYTES:,} bytes"):
        decode_stacked(bomb, ["gzip"])
    peak = _peak(lambda: decoded_body([bomb], [("content-encoding", "gzip")]))
    assert peak < 2 * MAX_DECODED_BYTES, f"{peak:,} bytes held for a bound of {MAX_DECODED_BYTES:,}"


def _deflate(data: bytes, wbits: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return compressor.compress(data) + compressor.flush()


BOMBS: dict[str, tuple[list[str], Callable[[int], bytes]]] = {
    "gzip, concatenated members": (["gzip"], lambda size: gzip_member(size // 4) * 4),
    "gzip in gzip": (["gzip", "gzip"], lambda size: gzip.compress(gzip_member(size), mtime=0)),
    "deflate": (["deflate"], lambda size: _zeros(zlib.compressobj(9), size)),
    "raw deflate": (["deflate"], lambda size: _zeros(zlib.compressobj(9, zlib.DEFLATED, -15), size)),
    "br": (["br"], lambda size: brotli.compress(b"\0" * size)),
    "br of gzip": (["gzip", "br"], lambda size: brotli.compress(gzip_member(size))),
}


@pytest.mark.parametrize("name", BOMBS)
def test_every_encoding_stops_past_the_limit_and_decodes_what_is_under_it(name: str) -> None:
    encodings, bomb = BOMBS[name]
    declared = 8 * MiB
    data = bomb(declared)
    assert decode_stacked(data, encodings, limit=2 * declared) == b"\0" * declared
    with pytest.raises(DecodedTooLarge, match=f"{', '.join(encodings)} body decodes past {declared // 2:,} bytes"):
        decode_stacked(data, encodings, limit=declared // 2)
    peak = _peak(lambda: decode_stacked(data, encodings, limit=declared // 2))
    assert peak < declared, f"{peak:,} bytes held to decode at most {declared // 2:,}"


def test_a_brotli_bomb_of_2_kb_stops_at_max_ratio_times_its_size() -> None:
    bomb = brotli.compress(b"\0" * (256 * MiB), quality=5)
    assert len(bomb) < 4096
    with pytest.raises(DecodedTooLarge, match=f"br body decodes past {_bodies.MAX_RATIO * len(bomb):,} bytes"):
        decode_stacked(bomb, ["br"])
    assert _peak(lambda: decode_stacked(bomb, ["br"])) < 2 * _bodies.MAX_RATIO * len(bomb) + MiB


def test_no_gzip_or_deflate_body_passes_the_ratio() -> None:
    """MAX_RATIO is deflate's highest ratio: zeros, the most compressible body, decode whole."""
    for size in (0, 1, 1000, 3 * MiB):
        body = b"\0" * size
        assert decode_stacked(gzip.compress(body, mtime=0), ["gzip"]) == body
        assert decode_stacked(zlib.compress(body, 9), ["deflate"]) == body
        assert decode_stacked(_deflate(body, -15), ["deflate"]) == body


def test_bodies_under_the_bound_decode_as_before() -> None:
    text = json.dumps([{"n": n, "word": f"w{n * 7919 % 10007}"} for n in range(5000)]).encode()
    member = gzip.compress(text, mtime=0)
    assert decode_stacked(member + member, ["gzip"]) == text + text, "every member"
    cut = decode_stacked(member[:-8], ["gzip"])
    assert cut is not None and text.startswith(cut), "a body cut short gives what it holds"
    assert decode_stacked(member + b"junk", ["gzip"]) is None
    assert decode_stacked(brotli.compress(text), ["br"]) == text
    assert decode_stacked(brotli.compress(text)[:-2], ["br"]) is None, "brotli cut short: can't be decoded"
    assert decode_stacked(text, ["compress"]) is None, "an encoding this Python can't undo"
    assert decoded_body([member[:10], member[10:]], [("Content-Encoding", "gzip")]) == (text, "")
    assert decoded_body([b"not gzip"], [("Content-Encoding", "gzip")]) == (b"not gzip", "")


def test_the_view_of_a_bomb_is_its_stored_bytes_with_a_note() -> None:
    bomb = gzip_bomb(5 * MEMBER)
    body, note = decoded_body([bomb[:100], bomb[100:]], [("content-encoding", "gzip")])
    assert body == bomb
    assert note == f"gzip body decodes past {MAX_DECODED_BYTES:,} bytes: shown encoded, as stored"


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(_bodies, "MAX_DECODED_BYTES", 2 * MiB)
    return 2 * MiB


def test_a_request_body_past_the_bound_is_not_stored(small_bound: int) -> None:
    secret = b'{"api_key": "sk-proj-' + b"A" * 40 + b'"}'
    body = gzip.compress(secret + b" " * (4 * MiB), mtime=0)
    stored = stored_body(body, "application/json", Redactor(), encoding="gzip")
    assert stored == {"text": f"[gzip body decodes past {small_bound:,} bytes: not stored]"}
    assert stored_body(body, "application/json", Redactor(), encoding="gzip") == stored, "the same at replay"


def test_a_response_past_the_bound_is_refused_by_the_recorder_and_one_under_it_redacted(small_bound: int) -> None:
    secret = b"sk-proj-" + b"A" * 40
    under = gzip.compress(b"key " + secret + b"\n" + b" " * MiB, mtime=0)
    redacting = EncodedBodyRedactor(Redactor(), "gzip")
    written = b"".join(chunk for chunk, _ in [*redacting.feed(under, 0), *redacting.finish()])
    assert secret not in gzip.decompress(written)
    over = gzip.compress(b"key " + secret + b"\n" + b" " * (3 * MiB), mtime=0)
    redacting = EncodedBodyRedactor(Redactor(), "gzip")
    assert redacting.feed(over, 0) == [], "held: nothing of it is written before it is searched"
    with pytest.raises(DecodedTooLarge):
        redacting.finish()
