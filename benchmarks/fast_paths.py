"""The fast paths kept after the one-path-per-behaviour redesign, each timed against its own slow path in the
same run, per chunk and as a share of a call through an SDK. Today there is one: ``StreamRedactor``'s
pass-through of a batch no rule could change (``_take_in``: ``_clear`` then ``_pass_through``), beside the
chunk-at-a-time path (``_feed_one``), on the plain openai-style stream of ``benchmarks.stream_redaction``.

    python -m benchmarks.fast_paths [--repeats N]

Prints CPU microseconds per chunk with the fast path and with it switched off (every batch taken a chunk at a
time), and what the difference is worth for a streamed call of 200 chunks.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from benchmarks.stream_redaction import batches, sse_stream
from vcr_transport._core.rules._redaction import Redactor
from vcr_transport._core.rules._stream import StreamRedactor


def _run(chunks: list[bytes], fast: bool) -> float:
    redactor = StreamRedactor(Redactor())
    if not fast:
        redactor._clear = lambda batch: False  # type: ignore[method-assign]  # every batch a chunk at a time
    *taken, last = batches(chunks)
    start = time.process_time()
    out: list[tuple[bytes, Any]] = [piece for batch in taken for piece in redactor.feed_many(batch)]
    out += redactor.finish(last)
    elapsed = time.process_time() - start
    assert b"".join(piece for piece, _ in out) == b"".join(chunks), "both paths give the cassette the same bytes"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    chunks = sse_stream()
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeats):  # in turns, so that load on the machine falls on both alike
        for fast in (True, False):
            times[fast].append(_run(chunks, fast))
    per_chunk = {fast: statistics.median(found) / len(chunks) * 1e6 for fast, found in times.items()}
    saved = per_chunk[False] - per_chunk[True]
    print(f"StreamRedactor, {len(chunks)} chunks of 1,400 bytes (openai SSE, no secret), CPU us per chunk:")
    print(f"  pass-through on   {per_chunk[True]:7.2f}")
    print(f"  pass-through off  {per_chunk[False]:7.2f}")
    print(f"  saved             {saved:7.2f} us a chunk, {saved * 200 / 1000:.2f} ms for a streamed call of 200 chunks")


if __name__ == "__main__":
    main()
