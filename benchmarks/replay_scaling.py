"""Replay as agents grow it, each figure against the floor (httpx2's MockTransport serving the same bytes) in the
same run, and cassetter where it can run the workload:

- N calls made at once (an ``asyncio.gather``, recorded as one group of overlapping calls), replayed with the
  requests arriving in recorded, shuffled and reversed order (N = 10, 100, 1,000);
- a conversation of many turns, each request carrying the whole history: time per call, the cassette's load,
  and the peak memory of its replay (a child process) against the file's size;
- a cassette of binary answers (audio, 1 MB each) of about 100 MB.

    python -m benchmarks.replay_scaling [--quick] [--json FILE] [--part conversation] [--turns N]

It uses only what every version of vcr_transport has (the transports), so the same script measures a
checkout before and after a change (put it first on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2

import vcr_transport

BASE = "http://bench.test"
ORDERS = ("recorded", "shuffled", "reversed")


def _document(number: int) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": f"summarise document {number}: " + "text " * 40}]}


def _answer(request: httpx2.Request) -> httpx2.Response:
    text = json.loads(request.content)["messages"][-1]["content"][:40]
    return httpx2.Response(200, json={"choices": [{"message": {"role": "assistant", "content": "re: " + text}}]})


async def _answer_later(request: httpx2.Request) -> httpx2.Response:
    await asyncio.sleep(0.001)  # every call of the gather starts before the first ends: one group
    return _answer(request)


def _ordered(count: int, order: str) -> list[int]:
    numbers = list(range(count))
    if order == "reversed":
        numbers.reverse()
    elif order == "shuffled":
        random.Random(38).shuffle(numbers)
    return numbers


async def _gather(transport: Any, numbers: list[int], base_url: str = BASE) -> int:
    async with httpx2.AsyncClient(transport=transport, base_url=base_url, timeout=30) as client:
        answers = await asyncio.gather(*(client.post("/v1/chat", json=_document(n)) for n in numbers))
    return sum(1 for answer in answers if answer.status_code == 200)


def _seconds(function: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


class _Server:
    """``_answer`` over loopback HTTP, for a rival to record (it intercepts httpx2's own transport)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                answer = _answer(httpx2.Request("POST", BASE, content=body)).content
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _cassetter_replay(folder: Path, count: int) -> Callable[[list[int]], int] | None:
    """cassetter's replay of the gather (through its interception of httpx2's own transport; recorded one call
    after the other, which it replays in any order), or None when it isn't installed."""
    if importlib.util.find_spec("cassetter") is None:
        return None
    import cassetter

    path = folder / f"gather-{count}.yaml"

    def send(url: str, numbers: list[int], record: bool) -> int:
        with cassetter.use_cassette(path, record_mode="all" if record else "none", intercept=["httpx2"]):
            if not record:
                return asyncio.run(_gather(httpx2.AsyncHTTPTransport(), numbers, url))
            with httpx2.Client(base_url=url, timeout=30) as client:  # one at a time: the server takes a few at once
                return sum(client.post("/v1/chat", json=_document(n)).status_code == 200 for n in numbers)

    server = _Server()
    try:
        send(server.url, list(range(count)), record=True)
    finally:
        server.close()
    return lambda numbers: send(server.url, numbers, record=False)


def bench_gather(folder: Path, sizes: tuple[int, ...], repeats: int) -> list[dict[str, Any]]:
    """Per call, in µs: the gather of N calls replayed with its requests in each order, against the floor;
    cassetter's replay of the same calls in the same orders beside it."""
    rows = []
    for count in sizes:
        rival = _cassetter_replay(folder, count)
        path = folder / f"gather-{count}.jsonl"
        recorder = vcr_transport.AsyncRecordingTransport(httpx2.MockTransport(_answer_later), path)
        asyncio.run(_gather(recorder, list(range(count))))
        asyncio.run(_gather(vcr_transport.ReplayTransport(path), list(range(count))))  # warm: imports, first uses
        floor = _seconds(lambda c=count: asyncio.run(_gather(httpx2.MockTransport(_answer), list(range(c)))), repeats)
        for order in ORDERS:
            numbers = _ordered(count, order)
            replayed: list[int] = []
            seconds = _seconds(
                lambda n=numbers, p=path, r=replayed: r.append(
                    asyncio.run(_gather(vcr_transport.ReplayTransport(p), n))
                ),
                repeats,
            )
            assert replayed[-1] == count, f"every call replayed ({replayed[-1]} of {count})"
            row = {
                "name": f"{count:,} at once, {order}",
                "calls": count,
                "order": order,
                "per_call_us": seconds / count * 1e6,
                "floor_per_call_us": floor / count * 1e6,
                "ratio": seconds / floor,
            }
            if rival is not None:
                row["cassetter_per_call_us"] = _seconds(lambda n=numbers, r=rival: r(n), repeats) / count * 1e6
            rows.append(row)
    recorded = {row["calls"]: row["per_call_us"] for row in rows if row["order"] == "recorded"}
    for row in rows:
        row["vs_recorded"] = row["per_call_us"] / recorded[row["calls"]]
    return rows


def _conversation(turns: int, words: int) -> list[dict[str, Any]]:
    """The request of each turn: the whole history so far, then the user's next message."""
    history: list[dict[str, str]] = []
    requests = []
    for turn in range(turns):
        history.append({"role": "user", "content": f"turn {turn}: " + "word " * words})
        requests.append({"model": "m", "messages": list(history)})
        history.append({"role": "assistant", "content": f"answer {turn}: " + "word " * words})
    return requests


def _converse(transport: Any, requests: list[dict[str, Any]]) -> int:
    with httpx2.Client(transport=transport, base_url=BASE) as client:
        return sum(client.post("/v1/chat", json=body).status_code == 200 for body in requests)


MEMORY_CHILD = r"""
import importlib.util, json, sys, time
import httpx2, vcr_transport
spec = importlib.util.spec_from_file_location("replay_scaling", sys.argv[4])  # this file, wherever it is
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
path, turns, words = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
requests = bench._conversation(turns, words)
def rss_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1e3
# The library's code first (the imports a first replay makes): what is measured is what the replay holds.
bench._converse(vcr_transport.ReplayTransport(sys.argv[5], parse_cache=False), bench._conversation(3, words))
before = rss_mb()
started = time.perf_counter()
transport = vcr_transport.ReplayTransport(path, parse_cache=False)
loaded = time.perf_counter() - started
replayed = bench._converse(transport, requests)
print(json.dumps({"replayed": replayed, "load_s": loaded, "growth_mb": rss_mb() - before}))
"""


def bench_conversation(folder: Path, turns: int, repeats: int, words: int = 10) -> list[dict[str, Any]]:
    """A conversation of ``turns`` turns: per call against the floor, load, and peak memory (a child process,
    after a 3-turn replay has loaded the library's code) against the file's size."""
    requests = _conversation(turns, words)
    path, small = folder / f"conversation-{turns}.jsonl", folder / "conversation-3.jsonl"
    _converse(vcr_transport.RecordingTransport(httpx2.MockTransport(_answer), path), requests)
    _converse(vcr_transport.RecordingTransport(httpx2.MockTransport(_answer), small), _conversation(3, words))
    floor = _seconds(lambda: _converse(httpx2.MockTransport(_answer), requests), repeats)
    seconds = _seconds(lambda: _converse(vcr_transport.ReplayTransport(path, parse_cache=False), requests), repeats)
    load = _seconds(lambda: vcr_transport.ReplayTransport(path, parse_cache=False), repeats)
    child = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, str(path), str(turns), str(words), __file__, str(small)],
        capture_output=True,
        text=True,
        check=True,
    )
    measured = json.loads(child.stdout)
    assert measured["replayed"] == turns
    size_mb = path.stat().st_size / 1e6
    return [
        {
            "name": f"{turns:,}-turn conversation, {size_mb:.0f} MB",
            "calls": turns,
            "per_call_us": seconds / turns * 1e6,
            "floor_per_call_us": floor / turns * 1e6,
            "ratio": seconds / floor,
            "open_s": load,
            "growth_mb": measured["growth_mb"],
            "cassette_mb": size_mb,
            "memory_ratio": measured["growth_mb"] / size_mb,
        }
    ]


@functools.cache
def _sound(number: int) -> bytes:
    """1 MB as compressed audio looks: no text (the cassette holds it as base64)."""
    return random.Random(number).randbytes(1_000_000)


def _audio(request: httpx2.Request) -> httpx2.Response:
    sound = _sound(int(request.url.path.rsplit("/", 1)[-1]))
    return httpx2.Response(200, headers={"content-type": "audio/mpeg"}, content=sound)


def _speak(transport: Any, count: int) -> int:
    with httpx2.Client(transport=transport, base_url=BASE) as client:
        return sum(len(client.post(f"/v1/audio/speech/{n}", json={"input": f"line {n}"}).content) for n in range(count))


def bench_binary(folder: Path, megabytes: int, repeats: int) -> list[dict[str, Any]]:
    """A cassette of ``megabytes`` binary answers of 1 MB: replay against the floor, and its speed."""
    path = folder / "audio.jsonl"
    _speak(vcr_transport.RecordingTransport(httpx2.MockTransport(_audio), path), megabytes)
    floor = _seconds(lambda: _speak(httpx2.MockTransport(_audio), megabytes), repeats)
    seconds = _seconds(lambda: _speak(vcr_transport.ReplayTransport(path, parse_cache=False), megabytes), repeats)
    size_mb = path.stat().st_size / 1e6
    return [
        {
            "name": f"{megabytes} binary answers of 1 MB, {size_mb:.0f} MB cassette",
            "seconds": seconds,
            "floor_seconds": floor,
            "ratio": seconds / floor,
            "mb_per_s": megabytes / seconds,
            "cassette_mb": size_mb,
        }
    ]


PARTS = ("gather", "conversation", "binary")


def measure(
    folder: Path, quick: bool, parts: tuple[str, ...] = PARTS, turns: int | None = None
) -> dict[str, list[dict[str, Any]]]:
    repeats = 3 if quick else 5
    benches: dict[str, Callable[[], list[dict[str, Any]]]] = {
        "gather": lambda: bench_gather(folder, (10, 100, 1000), repeats),
        "conversation": lambda: bench_conversation(folder, turns or (300 if quick else 1000), 3),
        "binary": lambda: bench_binary(folder, 100, 3),
    }
    return {part: benches[part]() for part in parts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, a 300-turn conversation")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--part", choices=PARTS, action="append", help="only this part (repeatable)")
    parser.add_argument("--turns", type=int, default=None, help="the conversation's turns (default 1,000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        results = measure(Path(temporary), args.quick, tuple(args.part or PARTS), args.turns)
    for name, rows in results.items():
        print(name)
        for row in rows:
            print("  " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
