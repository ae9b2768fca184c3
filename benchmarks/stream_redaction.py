"""Stream redaction throughput: a plain openai-style SSE stream (20,000 delta events, no secret) cut in
network chunks of 1,400 bytes, handed to StreamRedactor.feed_many in batches of about 32 KiB, as the
recorder does. Prints MB/s of CPU time (time.process_time, best of 5).

    python -m benchmarks.stream_redaction [module]   # module defaults to vcr_transport._core.rules._stream
"""

from __future__ import annotations

import importlib
import json
import sys
import time

from vcr_transport._core.rules._redaction import Redactor


def sse_stream(events: int = 20_000) -> list[bytes]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}

    def event(i: int) -> bytes:
        choice = {"index": 0, "delta": {"content": f" word{i}"}, "finish_reason": None}
        return b"data: " + json.dumps({**base, "choices": [choice]}).encode() + b"\n\n"

    body = b"".join(event(i) for i in range(events))
    return [body[i : i + 1400] for i in range(0, len(body), 1400)]


def batches(chunks: list[bytes], size: int = 32 * 1024) -> list[list[tuple[bytes, None]]]:
    """The chunks in batches closed by the chunk that brings them to ``size`` bytes (the recorder's)."""
    found: list[list[tuple[bytes, None]]] = [[]]
    held = 0
    for chunk in chunks:
        found[-1].append((chunk, None))
        held += len(chunk)
        if held >= size:
            found.append([])
            held = 0
    return found


def main() -> None:
    module = importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "vcr_transport._core.rules._stream")
    chunks = sse_stream()
    size = sum(map(len, chunks))
    best = float("inf")
    for _ in range(5):
        redactor = module.StreamRedactor(Redactor())
        *taken, last = batches(chunks)
        start = time.process_time()
        out = [piece for batch in taken for piece in redactor.feed_many(batch)]
        out += redactor.finish(last)
        best = min(best, time.process_time() - start)
        assert b"".join(piece for piece, _ in out) == b"".join(chunks)
    print(f"{module.__name__}: {size / 1e6:.1f} MB in {len(chunks)} chunks, {size / 1e6 / best:.1f} MB/s")


if __name__ == "__main__":
    main()
