"""Tests of ``vcr_transport._core.rules._stream``: ``StreamRedactor`` (a response redacted while it streams,
each chunk coming out once, in order, with its tag), ``carries_deltas``, ``redact_body`` and the redactors of
bodies searched whole (``EncodedBodyRedactor``, ``BinaryBodyRedactor``)."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from helpers import finishes_within

from vcr_transport import PLACEHOLDER, Redactor
from vcr_transport._core.rules._stream import (
    BinaryBodyRedactor,
    EncodedBodyRedactor,
    StreamRedactor,
    carries_deltas,
    redact_body,
)

KEY = "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hIj9kLm-AAAAAA"


def _anthropic_stream(pieces: list[str]) -> bytes:
    events = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}} for piece in pieces
    ]
    body = b"event: message_start\ndata: " + json.dumps({"type": "message_start"}).encode() + b"\n\n"
    body += b"".join(b"event: content_block_delta\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return body + b'event: message_stop\ndata: {"type": "message_stop"}\n\n'


def _run(stream: StreamRedactor, chunks: list[bytes]) -> list[tuple[bytes, Any]]:
    out: list[tuple[bytes, Any]] = []
    for index, chunk in enumerate(chunks):
        out += stream.feed(chunk, f"t{index}")
    return out + stream.finish()


def test_carries_deltas_by_content_type() -> None:
    assert carries_deltas("text/event-stream; charset=utf-8")
    assert carries_deltas("application/x-ndjson")
    assert not carries_deltas("application/json")
    assert not carries_deltas("text/plain")


def test_a_key_spread_over_anthropic_deltas_is_removed_and_every_chunk_keeps_its_tag() -> None:
    body = _anthropic_stream(["Here: ", KEY[:20], KEY[20:60], KEY[60:], " done"])
    chunks = [body[i : i + 50] for i in range(0, len(body), 50)]
    out = _run(StreamRedactor(Redactor()), chunks)
    assert [tag for _, tag in out] == [f"t{i}" for i in range(len(chunks))]
    joined = b"".join(chunk for chunk, _ in out)
    assert KEY[:20].encode() not in joined and KEY[20:60].encode() not in joined
    texts = [json.loads(line[6:])["delta"]["text"] for line in joined.split(b"\n") if b"text_delta" in line]
    assert "".join(texts) == f"Here: {PLACEHOLDER} done"


def test_with_deltas_off_a_key_spread_over_deltas_stays_spread() -> None:
    body = _anthropic_stream(["Here: ", KEY[:20], KEY[20:60], KEY[60:], " done"])
    out = _run(StreamRedactor(Redactor(), deltas=False), [body])
    assert b"".join(chunk for chunk, _ in out) == body  # no single line holds the key


def test_a_clean_stream_comes_out_byte_for_byte() -> None:
    body = _anthropic_stream(["The capital ", "of France ", "is Paris."])
    chunks = [body[i : i + 7] for i in range(0, len(body), 7)]
    out = _run(StreamRedactor(Redactor()), chunks)
    assert [chunk for chunk, _ in out] == chunks


def test_a_line_longer_than_max_line_is_cut_and_a_key_near_the_cut_still_goes() -> None:
    line = b"data: " + b"x" * 5000 + f" Bearer {KEY} ".encode() + b"y" * 5000 + b"\n\n"
    stream = StreamRedactor(Redactor(), max_line=4096, overlap=1024)
    out = _run(stream, [line[i : i + 512] for i in range(0, len(line), 512)])
    joined = b"".join(chunk for chunk, _ in out)
    assert KEY.encode() not in joined and PLACEHOLDER.encode() in joined
    assert joined.startswith(b"data: xxx") and joined.endswith(b"yyy\n\n")


def test_overlap_must_be_well_under_max_line() -> None:
    with pytest.raises(ValueError, match="overlap"):
        StreamRedactor(Redactor(), max_line=1024, overlap=1000)


def test_redact_body_and_an_encoded_body() -> None:
    body = _anthropic_stream(["key ", KEY[:40], KEY[40:]])
    redacted = redact_body(body, Redactor())
    assert KEY[:40].encode() not in redacted and PLACEHOLDER.encode() in redacted
    encoded = EncodedBodyRedactor(Redactor(), "gzip")
    packed = gzip.compress(body)
    out = encoded.feed(packed[:10], "a") + encoded.feed(packed[10:], "b") + encoded.finish()
    assert len(out) == 1 and out[0][1] == "a"
    assert gzip.decompress(out[0][0]) == redacted
    clean = EncodedBodyRedactor(Redactor(), "gzip")
    plain = gzip.compress(b'{"text": "hello"}')
    assert clean.feed(plain, "a") + clean.finish() == [(plain, "a")]  # nothing found: as it came


def test_a_body_that_is_not_what_its_encoding_says_is_searched_as_bytes() -> None:
    lying = EncodedBodyRedactor(Redactor(), "gzip")  # a plain body under ``content-encoding: gzip``
    out = lying.feed(f'{{"text": "key {KEY}"}}'.encode(), "a") + lying.finish()
    assert out == [(f'{{"text": "key {PLACEHOLDER}"}}'.encode(), "a")]


def test_a_binary_body_is_searched_as_bytes() -> None:
    pdf = b"%PDF-1.7\n\x00\x01\xff binary " + f"api_key={KEY}".encode() + b" \x00\x02 trailer"
    binary = BinaryBodyRedactor(Redactor())
    out = binary.feed(pdf[:16], 1) + binary.feed(pdf[16:], 2) + binary.finish()
    assert len(out) == 1 and out[0][1] == 1
    assert KEY.encode() not in out[0][0] and out[0][0].startswith(b"%PDF-1.7\n\x00\x01\xff")
    small = BinaryBodyRedactor(Redactor(), max_buffer=8)
    assert small.feed(pdf[:16], 1) == [(pdf[:16], 1)]  # past the buffer: written as it came


def test_a_long_line_fed_in_small_chunks_is_read_in_linear_time() -> None:
    """Each chunk was joined to the pending line and the whole searched again for what may redact, although the
    line already may: a long line in small chunks took quadratic time (200 KB in 8-byte chunks: 6 s; 1 MB:
    minutes). The chunks come out the same, each with its tag, the secret removed."""
    line = b"data: password=hunter2pass " + b"word " * 200_000 + b"\n\n"
    chunks = [line[i : i + 8] for i in range(0, len(line), 8)]
    out: list[tuple[bytes, Any]] = []
    finishes_within(60, lambda: out.extend(_run(StreamRedactor(Redactor(), max_line=1 << 21), chunks)))
    assert [tag for _, tag in out] == [f"t{i}" for i in range(len(chunks))]
    assert b"".join(chunk for chunk, _ in out) == line.replace(b"hunter2pass", PLACEHOLDER.encode())
