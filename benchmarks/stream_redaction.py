"""Stream redaction throughput: a plain openai-style SSE stream (20,000 delta events, no secret) fed in
its network chunks through StreamRedactor, as the recorder does. Prints MB/s of CPU time
(time.process_time, best of 5).

    python -m benchmarks.stream_redaction [module]   # module defaults to vcr_transport._core._stream_redaction
"""

from __future__ import annotations

import importlib
import json
import sys
import time

from vcr_transport._core._redaction import Redactor


def sse_stream(events: int = 20_000) -> list[bytes]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}

    def event(i: int) -> bytes:
        choice = {"index": 0, "delta": {"content": f" word{i}"}, "finish_reason": None}
        return b"data: " + json.dumps({**base, "choices": [choice]}).encode() + b"\n\n"

    body = b"".join(event(i) for i in range(events))
    return [body[i : i + 1400] for i in range(0, len(body), 1400)]


def main() -> None:
    module = importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "vcr_transport._core._stream_redaction")
    chunks = sse_stream()
    size = sum(map(len, chunks))
    best = float("inf")
    for _ in range(5):
        redactor = module.StreamRedactor(Redactor())
        start = time.process_time()
        out = [piece for chunk in chunks for piece in redactor.feed(chunk, None)]
        out += redactor.finish()
        best = min(best, time.process_time() - start)
        assert b"".join(piece for piece, _ in out) == b"".join(chunks)
    print(f"{module.__name__}: {size / 1e6:.1f} MB in {len(chunks)} chunks, {size / 1e6 / best:.1f} MB/s")


if __name__ == "__main__":
    main()
