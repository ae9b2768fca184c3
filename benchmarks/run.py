"""Benchmarks, side by side in one run: python -m benchmarks.run [--quick] [--json PATH]

Every figure is a median over repeats, reported as a ratio against a baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2

import vcr_transport

Call = tuple[str, int, list[bytes]]


def workload(json_calls: int = 100, sse_calls: int = 100, chunks: int = 200) -> list[Call]:
    """100 JSON calls and 100 SSE calls of 200 chunks each: about a 4 MB cassette."""
    calls: list[Call] = []
    for i in range(json_calls):
        body = {"id": f"chatcmpl-{i}", "choices": [{"message": {"role": "assistant", "content": "word " * 150}}]}
        calls.append(("json", i, [json.dumps(body).encode()]))
    for i in range(sse_calls):
        events = [
            (
                "data: " + json.dumps({"id": f"c{i}", "choices": [{"delta": {"content": f"tok{j} " * 12}}]}) + "\n\n"
            ).encode()
            for j in range(chunks)
        ]
        calls.append(("sse", i, events))
    return calls


class ChunkStream(httpx2.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks


def serving(calls: list[Call]) -> httpx2.MockTransport:
    """The floor: httpx2's own MockTransport serving the same bytes, chunk for chunk."""
    by_key = {(kind, i): chunks for kind, i, chunks in calls}

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        kind = body["kind"]
        content_type = "text/event-stream" if kind == "sse" else "application/json"
        return httpx2.Response(
            200, headers={"content-type": content_type}, stream=ChunkStream(by_key[(kind, body["i"])])
        )

    return httpx2.MockTransport(handler)


def drive(transport: Any, calls: list[Call]) -> int:
    """Send every call through an httpx2 client and read every chunk; returns the chunk count."""
    received = 0
    with httpx2.Client(transport=transport) as client:
        for kind, i, _ in calls:
            with client.stream("POST", f"https://api.bench.test/v1/{kind}", json={"i": i, "kind": kind}) as response:
                for _ in response.iter_raw():
                    received += 1
    return received


def median_time(function: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def bench_replay(calls: list[Call], folder: Path, repeats: int) -> list[dict[str, Any]]:
    cassette = folder / "workload.jsonl"
    drive(vcr_transport.RecordingTransport(serving(calls), cassette), calls)
    rows = []
    floor, floor_chunks = median_time(lambda: drive(serving(calls), calls), repeats)
    rows.append({"name": "floor: httpx2.MockTransport", "seconds": floor, "ratio": 1.0, "chunks": floor_chunks})
    ours, chunks = median_time(lambda: drive(vcr_transport.ReplayTransport(cassette), calls), repeats)
    rows.append({"name": "vcr_transport (load included)", "seconds": ours, "ratio": ours / floor, "chunks": chunks})
    rows.append({"name": "cassette size (MB)", "seconds": cassette.stat().st_size / 1e6, "ratio": None, "chunks": None})
    return rows


class _Slow(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    chunks = 20
    gap = 0.05

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for n in range(self.chunks):
            if n:
                time.sleep(self.gap)
            event = f'data: {{"n": {n}}}\n\n'.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def first_byte(transport: Any, url: str) -> tuple[float, float, int]:
    with httpx2.Client(transport=transport) as client:
        started = time.perf_counter()
        with client.stream("GET", url) as response:
            first = None
            count = 0
            for _ in response.iter_raw():
                count += 1
                if first is None:
                    first = time.perf_counter() - started
        return first or 0.0, time.perf_counter() - started, count


def bench_first_byte(folder: Path, repeats: int) -> list[dict[str, Any]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/stream"
    try:
        live = [first_byte(httpx2.HTTPTransport(), url) for _ in range(repeats)]
        recorded = [
            first_byte(vcr_transport.RecordingTransport(httpx2.HTTPTransport(), folder / "slow.jsonl"), url)
            for _ in range(repeats)
        ]
    finally:
        server.shutdown()
    replayed = first_byte(vcr_transport.ReplayTransport(folder / "slow.jsonl"), url)
    live_first = statistics.median(r[0] for r in live)
    rec_first = statistics.median(r[0] for r in recorded)
    return [
        {
            "name": "live: time to first byte (ms)",
            "seconds": live_first * 1000,
            "total": statistics.median(r[1] for r in live),
            "chunks": live[0][2],
        },
        {
            "name": "recording: time to first byte (ms)",
            "seconds": rec_first * 1000,
            "total": statistics.median(r[1] for r in recorded),
            "chunks": recorded[0][2],
            "over_live_ms": (rec_first - live_first) * 1000,
        },
        {"name": "replay: chunks delivered", "seconds": None, "total": replayed[1], "chunks": replayed[2]},
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/latest.json"))
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        results["replay"] = bench_replay(workload(), folder, repeats)
        results["first_byte"] = bench_first_byte(folder, max(3, repeats // 2))
    print("1. replay, 100 JSON + 100 SSE calls of 200 chunks")
    for row in results["replay"]:
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] else ""
        print(f"   {row['name']:<34} {row['seconds']:>9.4f}  {ratio:>7}  chunks={row['chunks']}")
    print("3. stream of 20 chunks 50 ms apart over loopback")
    for row in results["first_byte"]:
        first = f"{row['seconds']:.2f} ms" if row["seconds"] is not None else ""
        print(f"   {row['name']:<38} {first:>10}  total={row['total']:.3f}s  chunks={row['chunks']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))
    print(f"results written to {args.json}")


if __name__ == "__main__":
    main()
