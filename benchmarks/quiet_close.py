"""What a quiet re-record costs when the recording is closed: the same calls recorded into a fresh path,
then again over that cassette (every call the same: the file is left as it was), then again with one
call's prompt changed (the old lines of the others are copied into the new file).

    python -m benchmarks.quiet_close [--calls N] [--events N]

Calls go straight into a ``CassetteRecorder`` (no HTTP): the figures are the cost of ``close()`` alone,
the comparison included, next to the time the recording itself took.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from vcr_transport import CassetteRecorder

URL = "https://api.openai.com/v1/chat/completions"
CHUNK = b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"delta":{"content":" word"}}]}\n\n'


def record(path: Path, calls: int, events: int, changed: int = -1) -> tuple[float, float, bool]:
    """(seconds recording, seconds closing, whether the cassette was left unchanged)."""
    started = time.perf_counter()
    recorder = CassetteRecorder(path)
    for index in range(calls):
        prompt = b"changed" if index == changed else b"prompt %d" % index
        call = recorder.start(
            "POST",
            URL,
            [("content-type", "application/json"), ("user-agent", f"bench/{time.perf_counter()}")],
            b'{"messages":[{"role":"user","content":"%s"}],"stream":true}' % prompt,
        )
        call.response(200, [("content-type", "text/event-stream"), ("date", time.ctime())], "HTTP/1.1")
        for _ in range(events):
            call.chunk(CHUNK)
        call.end("complete")
    closing = time.perf_counter()
    recorder.close()
    return closing - started, time.perf_counter() - closing, recorder.unchanged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--events", type=int, default=100)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "quiet.jsonl"
        for label, changed in (("first recording", -1), ("same again", -1), ("one call changed", 0)):
            recording, closing, unchanged = record(
                path, arguments.calls, arguments.events, arguments.calls // 2 if changed == 0 else -1
            )
            size = os.path.getsize(path) // 1024
            print(
                f"{label:18} record {recording:6.2f} s  close {closing:6.3f} s  unchanged={unchanged!s:5}  {size} KiB"
            )


if __name__ == "__main__":
    main()
