"""What recording costs per call, in CPU time (steadier than wall time on a shared machine): 500 JSON calls
through ``RecordingTransport`` against the floor transport of ``benchmarks.run``, each repeat into a new
cassette, with the small request bodies of ``benchmarks.run`` and with SDK-sized ones (2.5 KB); then the
close of a re-record over an existing cassette (every call the same: the quiet comparison, the file left as
it was), for those JSON calls and for 50 SSE calls of 400 chunks.

    python -m benchmarks.record_per_call [--repeats N]

To compare two trees, run it with ``PYTHONPATH`` pointing at each in turn (the benchmark code is taken from
this file's tree, the library from whichever ``vcr_transport`` is imported).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

import vcr_transport
from benchmarks.run import Call, drive_raw, floor_transport, send_all, workload

BASE = "https://bench.test"


def cpu_seconds(function: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.process_time()
        function()
        times.append(time.process_time() - started)
    return statistics.median(times)


_FRESH = itertools.count()  # every recording into a new cassette, also across rows (else a re-record)


def overhead_seconds(
    folder: Path, calls: list[Call], repeats: int, drive: Callable[[Any, str, list[Call]], int] = drive_raw
) -> float:
    """CPU seconds that recording ``calls`` (into a new cassette) takes beyond the floor transport alone."""
    floor = cpu_seconds(lambda: drive(floor_transport(calls), BASE, calls), repeats)
    recording = cpu_seconds(
        lambda: drive(
            vcr_transport.RecordingTransport(floor_transport(calls), folder / f"fresh-{next(_FRESH)}.jsonl"),
            BASE,
            calls,
        ),
        repeats,
    )
    return recording - floor


def per_call_us(
    folder: Path, calls: list[Call], repeats: int, drive: Callable[[Any, str, list[Call]], int] = drive_raw
) -> float:
    return overhead_seconds(folder, calls, repeats, drive) / len(calls) * 1e6


PROMPT = "hello world " * 200  # with the rest of the request, an openai-shaped body of about 2.5 KB


def drive_long_requests(transport: Any, base_url: str, calls: list[Call]) -> int:
    """``drive_raw`` with request bodies shaped like an SDK's chat request: a model, a temperature, a
    message of 2.4 KB."""
    received = 0
    with httpx2.Client(transport=transport) as client:
        for call in calls:
            body = {
                "kind": call.kind,
                "n": call.number,
                "model": "gpt-4o",
                "temperature": 0.7,
                "messages": [{"role": "user", "content": PROMPT}],
            }
            with client.stream("POST", base_url + call.path, json=body) as response:
                for _ in response.iter_bytes():
                    received += 1
    return received


def rerecord_close_ms(path: Path, calls: list[Call], repeats: int) -> tuple[float, float]:
    """(median CPU ms of close(), cassette MB) recording ``calls`` again over ``path``."""
    times = []
    for _ in range(repeats + 1):  # the first records the cassette
        transport = vcr_transport.RecordingTransport(floor_transport(calls), path)
        client = httpx2.Client(transport=transport)
        send_all(client, BASE, calls)
        started = time.process_time()
        client.close()
        times.append(time.process_time() - started)
    return statistics.median(times[1:]) * 1e3, path.stat().st_size / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    json_calls = workload(json_calls=500, sse_calls=0)
    sse_calls = workload(json_calls=0, sse_calls=50, chunks=400)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        overhead = per_call_us(folder, json_calls, repeats)
        long_requests = per_call_us(folder, json_calls, repeats, drive_long_requests)
        json_close, json_mb = rerecord_close_ms(folder / "json.jsonl", json_calls, repeats)
        sse_close, sse_mb = rerecord_close_ms(folder / "sse.jsonl", sse_calls, repeats)
    print(f"{Path(vcr_transport.__file__).parent.parent}")
    print(f"  recording overhead, 500 JSON calls into a new cassette: {overhead:.1f} us per call (CPU)")
    print(f"  the same with 2.5 KB request bodies (an SDK's chat request): {long_requests:.1f} us per call (CPU)")
    print(f"  re-record close, 500 JSON calls, {json_mb:.2f} MB: {json_close:.1f} ms (CPU)")
    print(f"  re-record close, 50 SSE calls of 400 chunks, {sse_mb:.2f} MB: {sse_close:.1f} ms (CPU)")


if __name__ == "__main__":
    main()
