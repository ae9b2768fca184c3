"""Benchmarks of vcr_transport side by side with vcrpy and cassetter, in one run.

    python -m benchmarks.run            # every measurement, medians of repeats; about two minutes
    python -m benchmarks.run --quick    # fewer repeats and a 100 MB stream instead of 1 GB

Every figure is a median over repeats. Times are reported as ratios against a baseline measured in the
same run (the floor: httpx2.MockTransport serving the same bytes). Results also go to JSON.
Rivals that aren't installed (pip install -e ".[dev]") are reported as missing.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2

import vcr_transport
from benchmarks import instructions, plugin_start, plugin_suite, replay_scaling


@dataclass
class Call:
    kind: str  # "json" or "sse"
    number: int
    chunks: list[bytes]

    @property
    def path(self) -> str:
        return f"/v1/{self.kind}/{self.number}"

    @property
    def content_type(self) -> str:
        return "text/event-stream" if self.kind == "sse" else "application/json"


def workload(json_calls: int = 100, sse_calls: int = 100, chunks: int = 200) -> list[Call]:
    """100 JSON calls and 100 SSE calls of 200 chunks each, openai-shaped: about a 4 MB cassette."""
    calls = []
    for i in range(json_calls):
        body = {
            "id": f"chatcmpl-{i}",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "word " * 150}, "finish_reason": "stop"}
            ],
        }
        calls.append(Call("json", i, [json.dumps(body).encode()]))
    for i in range(sse_calls):
        events = []
        for j in range(chunks):
            delta = {
                "id": f"c{i}",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": {"content": f"tok{j} " * 12}, "finish_reason": None}],
            }
            events.append(f"data: {json.dumps(delta)}\n\n".encode())
        events[-1] = b"data: [DONE]\n\n"
        calls.append(Call("sse", i, events))
    return calls


def _by_prompt(calls: list[Call]) -> dict[str, Call]:
    return {f"{c.kind}-{c.number}": c for c in calls}


def _lookup(calls: dict[str, Call], path: str, body: bytes) -> Call:
    if path.startswith("/v1/chat/completions"):
        return calls[json.loads(body)["messages"][0]["content"]]
    _, _, kind, number = path.split("/")[:4]
    return calls[f"{kind}-{number}"]


class WorkloadServer:
    """The workload over real loopback HTTP, each chunk written and flushed on its own (to record rivals)."""

    def __init__(self, calls: list[Call], gap: float = 0.0) -> None:
        table = _by_prompt(calls)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.do_POST()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                call = _lookup(table, self.path, self.rfile.read(length))
                self.send_response(200)
                self.send_header("content-type", call.content_type)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for n, chunk in enumerate(call.chunks):
                    if gap and n:
                        time.sleep(gap)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        class QuietServer(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that stops reading early (a recorder under test) is not news

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ChunkStream(httpx2.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks


def floor_transport(calls: list[Call]) -> httpx2.MockTransport:
    """httpx2's own MockTransport serving the same bytes, chunk for chunk."""
    table = _by_prompt(calls)

    def handler(request: httpx2.Request) -> httpx2.Response:
        call = _lookup(table, request.url.path, request.content)
        return httpx2.Response(200, headers={"content-type": call.content_type}, stream=ChunkStream(call.chunks))

    return httpx2.MockTransport(handler)


def drive_raw(transport: Any, base_url: str, calls: list[Call]) -> int:
    """Every call through one httpx2 client, every chunk read; returns the chunks received."""
    with httpx2.Client(transport=transport) as client:
        return send_all(client, base_url, calls)


def send_all(client: httpx2.Client, base_url: str, calls: list[Call]) -> int:
    """Every call through ``client``, every chunk read; returns the chunks received."""
    received = 0
    for call in calls:
        with client.stream("POST", base_url + call.path, json={"kind": call.kind, "n": call.number}) as response:
            for _ in response.iter_bytes():
                received += 1
    return received


def drive_openai(transport: Any, base_url: str, calls: list[Call]) -> int:
    """The same calls through the openai SDK, which parses every JSON body and SSE event."""
    import openai

    parsed = 0
    with httpx2.Client(transport=transport) as http:
        client = openai.OpenAI(api_key="sk-bench-0000000000000000000000", base_url=base_url + "/v1", http_client=http)
        for call in calls:
            messages = [{"role": "user", "content": f"{call.kind}-{call.number}"}]
            if call.kind == "sse":
                parsed += sum(1 for _ in client.chat.completions.create(model="m", messages=messages, stream=True))
            else:
                client.chat.completions.create(model="m", messages=messages)
                parsed += 1
    return parsed


def median_seconds(function: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


# --- the contestants ------------------------------------------------------------------------------------


class Contestant:
    """A record/replay library under test; the rivals intercept httpx2's own transport."""

    name = ""  # the package, as reported
    module = ""  # what it imports as
    suffix = "yaml"  # of its cassette files

    def available(self) -> bool:
        return importlib.util.find_spec(self.module) is not None

    def cassette(self, path: Path, record: bool) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def record(self, path: Path, run: Callable[[Any], Any]) -> None:
        with self.cassette(path, record=True):
            run(httpx2.HTTPTransport())

    def replay(self, path: Path, run: Callable[[Any], Any]) -> Any:
        with self.cassette(path, record=False):
            return run(httpx2.HTTPTransport())


class Ours(Contestant):
    name = module = "vcr_transport"
    suffix = "jsonl"

    def record(self, path: Path, run: Callable[[Any], Any]) -> None:
        run(vcr_transport.RecordingTransport(httpx2.HTTPTransport(), path))

    def replay(self, path: Path, run: Callable[[Any], Any]) -> Any:
        return run(vcr_transport.ReplayTransport(path, parse_cache=False))  # cold: parsed every time


class OursWarm(Ours):
    """Replay with the parse cache warm (the cassette was replayed twice before: a third run on one machine)."""

    def replay(self, path: Path, run: Callable[[Any], Any]) -> Any:
        return run(vcr_transport.ReplayTransport(path, parse_cache=True))


class Vcrpy(Contestant):
    name, module = "vcrpy", "vcr"

    def cassette(self, path: Path, record: bool) -> contextlib.AbstractContextManager[Any]:
        import vcr

        return vcr.VCR(record_mode="all" if record else "none").use_cassette(str(path))


class Cassetter(Contestant):
    name = module = "cassetter"

    def cassette(self, path: Path, record: bool) -> contextlib.AbstractContextManager[Any]:
        import cassetter

        return cassetter.use_cassette(path, record_mode="all" if record else "none", intercept=["httpx2"])


CONTESTANTS: list[Contestant] = [Ours(), Vcrpy(), Cassetter()]


def _version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"


# --- 1 and 2: replay of the workload --------------------------------------------------------------------


def _replay_row(name: str, seconds: float, floor: float, count: int, path: Path) -> dict[str, Any]:
    return {"name": name, "seconds": seconds, "ratio": seconds / floor, "count": count,
            "cassette_mb": path.stat().st_size / 1e6}  # fmt: skip


def bench_replay(
    folder: Path, calls: list[Call], repeats: int, drive: Callable[..., int], label: str
) -> list[dict[str, Any]]:
    server = WorkloadServer(calls)
    paths = {}
    try:
        for contestant in CONTESTANTS:
            if contestant.available():
                paths[contestant.name] = folder / f"{label}-{contestant.name}.{contestant.suffix}"
                contestant.record(paths[contestant.name], lambda t: drive(t, server.url, calls))
    finally:
        server.close()
    floor, floor_count = median_seconds(lambda: drive(floor_transport(calls), server.url, calls), repeats)
    rows = [{"name": "floor: httpx2.MockTransport", "seconds": floor, "ratio": 1.0, "count": floor_count}]
    for contestant in CONTESTANTS:
        if contestant.name not in paths:
            rows.append({"name": contestant.name, "missing": True})
            continue
        path = paths[contestant.name]
        seconds, count = median_seconds(
            lambda c=contestant, p=path: c.replay(p, lambda t: drive(t, server.url, calls)), repeats
        )
        if isinstance(contestant, Ours):
            version = f"{contestant.name} {_version(contestant.name)}"
            rows.append(_replay_row(f"{version} cold", seconds, floor, count, path))
            warm = OursWarm()
            for _ in range(2):  # the first open marks the bytes seen, the second writes the entry
                warm.replay(path, lambda t: drive(t, server.url, calls))
            seconds, count = median_seconds(
                lambda p=path, w=warm: w.replay(p, lambda t: drive(t, server.url, calls)), repeats
            )
            rows.append(_replay_row(f"{version} warm", seconds, floor, count, path))
            continue
        rows.append(
            {
                "name": f"{contestant.name} {_version(contestant.name)}",
                "seconds": seconds,
                "ratio": seconds / floor,
                "count": count,
                "cassette_mb": path.stat().st_size / 1e6,
            }
        )
    return rows


# --- 3: time to first byte while recording --------------------------------------------------------------


def _first_byte(transport: Any, url: str) -> tuple[float, float, int]:
    with httpx2.Client(transport=transport) as client:
        started = time.perf_counter()
        first, count = None, 0
        with client.stream("POST", url, json={}) as response:
            for _ in response.iter_bytes():
                count += 1
                if first is None:
                    first = time.perf_counter() - started
        return first or 0.0, time.perf_counter() - started, count


def bench_first_byte(folder: Path, repeats: int) -> list[dict[str, Any]]:
    stream = [Call("sse", 0, [f'data: {{"n": {n}}}\n\n'.encode() for n in range(20)])]
    server = WorkloadServer(stream, gap=0.05)
    url = server.url + stream[0].path
    rows: list[dict[str, Any]] = []
    try:
        live = [_first_byte(httpx2.HTTPTransport(), url) for _ in range(repeats)]
        live_first = statistics.median(r[0] for r in live)
        rows.append(
            {
                "name": "live (no recorder)",
                "first_ms": live_first * 1000,
                "total_s": statistics.median(r[1] for r in live),
                "chunks": live[0][2],
            }
        )
        for contestant in CONTESTANTS:
            if not contestant.available():
                rows.append({"name": contestant.name, "missing": True})
                continue
            results = []
            for attempt in range(repeats):
                path = folder / f"ttfb-{contestant.name}-{attempt}.{contestant.suffix}"
                holder: list[tuple[float, float, int]] = []
                contestant.record(path, lambda t, h=holder: h.append(_first_byte(t, url)))
                results.append(holder[0])
            first = statistics.median(r[0] for r in results)
            replayed: list[int] = []
            contestant.replay(path, lambda t, r=replayed: r.append(_first_byte(t, url)[2]))
            rows.append(
                {
                    "name": contestant.name,
                    "first_ms": first * 1000,
                    "over_live_ms": (first - live_first) * 1000,
                    "total_s": statistics.median(r[1] for r in results),
                    "chunks": results[0][2],
                    "replayed_chunks": replayed[0],
                }
            )
    finally:
        server.close()
    return rows


# --- 4: memory while recording and replaying a long stream ----------------------------------------------

MEMORY_CHILD = r"""
import json, os, sys, time
import httpx2, vcr_transport
mode, url, path = sys.argv[1], sys.argv[2], sys.argv[3]
page = os.sysconf("SC_PAGE_SIZE")
def rss_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * page / 1e6
with httpx2.Client() as warm:  # imports, pools: everything but the stream itself
    warm.post(url + "/warm", json={}).read()
before = peak = rss_mb()
started = time.perf_counter()
if mode == "live":
    transport = httpx2.HTTPTransport()
elif mode == "record":
    transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), path)
else:
    transport = vcr_transport.ReplayTransport(path)  # the cassette load counts
peak = max(peak, rss_mb())
total = 0
with httpx2.Client(transport=transport, timeout=None) as client:
    with client.stream("POST", url, json={}) as response:
        for count, chunk in enumerate(response.iter_raw()):
            total += len(chunk)
            if count % 64 == 0:
                peak = max(peak, rss_mb())
peak = max(peak, rss_mb())
seconds = time.perf_counter() - started
print(json.dumps({"bytes": total, "seconds": seconds, "rss_before_mb": before, "rss_peak_mb": peak}))
"""

BIG_STREAM_SERVER = r"""
import sys, json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
size = int(sys.argv[1])
line = b"data: " + json.dumps({"delta": "x" * 1000}).encode() + b"\n\n"
chunk = line * (65536 // len(line))
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        sent = 0
        first = self.path.endswith("/warm")
        while sent < (len(chunk) if first else size):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
        self.wfile.write(b"0\r\n\r\n")
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def bench_memory(folder: Path, size: int) -> list[dict[str, Any]]:
    server = subprocess.Popen([sys.executable, "-c", BIG_STREAM_SERVER, str(size)], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    path = folder / "big.jsonl"
    rows = []
    try:
        for mode in ("live", "record", "replay"):
            url = f"http://127.0.0.1:{port}/stream"
            child = subprocess.run(
                [sys.executable, "-c", MEMORY_CHILD, mode, url, str(path)], capture_output=True, text=True, check=True
            )
            result = json.loads(child.stdout)
            result["growth_mb"] = result["rss_peak_mb"] - result["rss_before_mb"]
            rows.append({"name": mode, **result})
    finally:
        server.terminate()
        server.wait()
    rows.append({"name": "cassette size", "cassette_mb": path.stat().st_size / 1e6})
    path.unlink()
    return rows


# --- 5: scaling -----------------------------------------------------------------------------------------


def _small_calls(count: int, body_size: int = 200) -> list[Call]:
    return [Call("json", i, [json.dumps({"n": i, "text": "y" * body_size}).encode()]) for i in range(count)]


def bench_scaling(folder: Path, repeats: int, quick: bool) -> list[dict[str, Any]]:
    rows = []
    for count in (10, 100, 1000) if quick else (10, 100, 1000, 10000):
        calls = _small_calls(count)
        path = folder / f"scale-{count}.jsonl"
        drive_raw(vcr_transport.RecordingTransport(floor_transport(calls), path), "https://bench.test", calls)
        opened, _ = median_seconds(lambda p=path: vcr_transport.ReplayTransport(p), repeats)
        total, _ = median_seconds(
            lambda p=path, c=calls: drive_raw(vcr_transport.ReplayTransport(p), "https://bench.test", c), repeats
        )
        floor, _ = median_seconds(lambda c=calls: drive_raw(floor_transport(c), "https://bench.test", c), repeats)
        rows.append(
            {
                "name": f"{count} calls",
                "per_call_us": (total - opened) / count * 1e6,
                "floor_per_call_us": floor / count * 1e6,
                "open_s": opened,
            }
        )
    # A 100 MB, 10,000-call cassette: open time and first-call time.
    calls = _small_calls(1000 if quick else 10000, body_size=(100_000_000 // 10000) - 60)
    path = folder / "big-10k.jsonl"
    drive_raw(vcr_transport.RecordingTransport(floor_transport(calls), path), "https://bench.test", calls)
    started = time.perf_counter()
    transport = vcr_transport.ReplayTransport(path)
    opened = time.perf_counter() - started
    started = time.perf_counter()
    drive_raw(transport, "https://bench.test", calls[:1])
    first = time.perf_counter() - started
    rows.append(
        {
            "name": f"{len(calls)}-call cassette of {path.stat().st_size / 1e6:.0f} MB",
            "open_s": opened,
            "first_call_s": first,
        }
    )
    path.unlink()
    return rows


# --- 6: recording overhead per chunk --------------------------------------------------------------------


def _rerecord_close(path: Path, calls: list[Call], repeats: int) -> tuple[float, float]:
    """(median seconds of ``close()``, cassette MB): the same calls recorded again over ``path``, so that
    closing compares them with the older cassette (quiet re-record: every call the same, the file kept).
    The first round records ``path`` when it is not there yet."""
    times = []
    if not path.exists():
        drive_raw(vcr_transport.RecordingTransport(floor_transport(calls), path), "https://bench.test", calls)
    for _ in range(repeats):
        transport = vcr_transport.RecordingTransport(floor_transport(calls), path)
        client = httpx2.Client(transport=transport)
        send_all(client, "https://bench.test", calls)
        started = time.perf_counter()
        client.close()  # closes the transport, which commits the recording
        times.append(time.perf_counter() - started)
        assert transport.recorder.unchanged, "the same calls recorded again leave the cassette as it was"
    return statistics.median(times), path.stat().st_size / 1e6


def bench_record_overhead(folder: Path, repeats: int) -> list[dict[str, Any]]:
    json_calls = workload(json_calls=500, sse_calls=0)
    passing_json, _ = median_seconds(
        lambda: drive_raw(floor_transport(json_calls), "https://bench.test", json_calls), repeats
    )
    fresh = iter(range(1_000_000))  # a new cassette each repeat: per call, no comparison with an older one
    recording_json, _ = median_seconds(
        lambda: drive_raw(
            vcr_transport.RecordingTransport(
                floor_transport(json_calls), folder / f"overhead-json-{next(fresh)}.jsonl"
            ),
            "https://bench.test",
            json_calls,
        ),
        repeats,
    )
    closing, cassette_mb = _rerecord_close(folder / "overhead-json-0.jsonl", json_calls, repeats)
    calls = workload(json_calls=0, sse_calls=50, chunks=400)
    chunks = sum(len(c.chunks) for c in calls)
    passing, _ = median_seconds(lambda: drive_raw(floor_transport(calls), "https://bench.test", calls), repeats)
    # A new cassette each repeat too: recording over the last one would add the quiet comparison of a
    # re-record to the chunks (reported apart, below).
    recording, _ = median_seconds(
        lambda: drive_raw(
            vcr_transport.RecordingTransport(floor_transport(calls), folder / f"overhead-sse-{next(fresh)}.jsonl"),
            "https://bench.test",
            calls,
        ),
        repeats,
    )
    stream_closing, stream_mb = _rerecord_close(folder / "overhead-sse-rerecord.jsonl", calls, repeats)
    return [
        {"name": "pass-through, 500 JSON calls", "seconds": passing_json, "calls": len(json_calls)},
        {
            "name": "recording them",
            "seconds": recording_json,
            "ratio": recording_json / passing_json,
            "overhead_us_per_call": (recording_json - passing_json) / len(json_calls) * 1e6,
        },
        {"name": "re-record close, same calls", "close_ms": closing * 1e3, "cassette_mb": cassette_mb},
        {"name": "pass-through", "seconds": passing, "chunks": chunks},
        {
            "name": "recording",
            "seconds": recording,
            "ratio": recording / passing,
            "overhead_us_per_chunk": (recording - passing) / chunks * 1e6,
        },
        {"name": "re-record close, same chunks", "close_ms": stream_closing * 1e3, "cassette_mb": stream_mb},
    ]


# --- 7: import time -------------------------------------------------------------------------------------

IMPORT_CHILD = r"""
import sys, time
started = time.perf_counter()
import httpx2
middle = time.perf_counter()
if sys.argv[1] != "httpx2":
    import vcr_transport
    if sys.argv[1] == "use":
        vcr_transport.ReplayTransport, vcr_transport.use_cassette
print(time.perf_counter() - middle if sys.argv[1] != "httpx2" else middle - started)
"""


def bench_import(repeats: int) -> list[dict[str, Any]]:
    """Fresh interpreters: httpx2 alone, then vcr_transport imported after it (and its names first used)."""

    def median_ms(what: str) -> float:
        runs = [
            float(subprocess.run([sys.executable, "-c", IMPORT_CHILD, what], capture_output=True, text=True,
                                 check=True).stdout)
            for _ in range(repeats)
        ]  # fmt: skip
        return statistics.median(runs) * 1000

    return [
        {"name": "import httpx2", "ms": median_ms("httpx2")},
        {"name": "then import vcr_transport", "ms": median_ms("import")},
        {"name": "... and use its transports", "ms": median_ms("use")},
    ]


# --- 8: a 1,000,000-line cassette ------------------------------------------------------------------------


def bench_million_lines(folder: Path, repeats: int) -> list[dict[str, Any]]:
    """Opening a 1,000,000-line (70 MB) cassette, wall and CPU, and the peak memory `verify` needs for it."""
    from benchmarks.load_time import open_seconds, verify_memory_mb, write_million_line_cassette

    path = folder / "million.jsonl"
    lines = write_million_line_cassette(path)
    wall, cpu = open_seconds(path, repeats)
    code, _, growth_mb = verify_memory_mb(path)
    size_mb = path.stat().st_size / 1e6
    path.unlink()
    return [
        {"name": f"open a {lines:,}-line, {size_mb:.0f} MB cassette", "seconds": wall, "cpu_seconds": cpu},
        {"name": f"verify (exit {code})", "growth_mb": growth_mb},
    ]


# --- report ---------------------------------------------------------------------------------------------


def goals(results: dict[str, Any], big_stream_mb: int) -> list[dict[str, Any]]:
    """The issue's goals, each with what this run measured (ratios against the floor of the same run)."""
    rows = {r["name"].split(" ")[0] + (" " + r["name"].split(" ")[-1] if "vcr_transport" in r["name"] else ""): r
            for r in results["replay_raw"]}  # fmt: skip
    cold, warm = rows["vcr_transport cold"], rows["vcr_transport warm"]
    rival = rows.get("cassetter")
    floor_chunks = results["replay_raw"][0]["count"]
    first = {r["name"]: r for r in results["first_byte"]}
    memory = {r["name"]: r for r in results["memory"]}
    held = {r["name"]: r for r in results["memory_held"]}
    per_call = [r["per_call_us"] for r in results["scaling"] if "per_call_us" in r]
    million = results["million_lines"][0]
    overhead = {r["name"]: r for r in results["record_overhead"]}
    imports = {r["name"]: r for r in results["imports"]}
    ahead = rival is None or rival.get("missing") or cold["seconds"] < rival["seconds"]
    return [
        {
            "goal": "cold replay (parse cache off), load included, at most 1.6x the floor and ahead of cassetter",
            "met": cold["ratio"] <= 1.6 and bool(ahead),
            "measured": f"{cold['ratio']:.2f}x"
            + (f"; cassetter {rival['ratio']:.2f}x" if rival and not rival.get("missing") else ""),
        },
        {
            "goal": "warm replay (parse cache), load included, at most 1.2x the floor",
            "met": warm["ratio"] <= 1.2,
            "measured": f"{warm['ratio']:.2f}x",
        },
        {
            "goal": "every chunk replayed",
            "met": cold["count"] == floor_chunks == warm["count"]
            and first["vcr_transport"]["replayed_chunks"] == first["live (no recorder)"]["chunks"],
            "measured": f"{cold['count']}/{floor_chunks} chunks cold, {warm['count']} warm; "
            f"{first['vcr_transport']['replayed_chunks']}/20 on the slow stream",
        },
        {
            "goal": "recording overhead at most 4 us per chunk",
            "met": overhead["recording"]["overhead_us_per_chunk"] <= 4,
            "measured": f"{overhead['recording']['overhead_us_per_chunk']:.1f} us (into a new cassette)"
            + (
                f"; re-record close {close['close_ms']:.0f} ms for {close['cassette_mb']:.1f} MB of chunks"
                if (close := overhead.get("re-record close, same chunks"))
                else ""
            ),
        },
        {
            "goal": "recording overhead at most 50 us per call",
            "met": overhead["recording them"]["overhead_us_per_call"] <= 50,
            "measured": f"{overhead['recording them']['overhead_us_per_call']:.0f} us (into a new cassette)"
            + (
                f"; re-record close {close['close_ms']:.0f} ms for a {close['cassette_mb']:.1f} MB cassette"
                if (close := overhead.get("re-record close, same calls"))
                else ""
            ),
        },
        {
            "goal": "time to first byte while recording at most live + 2 ms",
            "met": first["vcr_transport"]["over_live_ms"] <= 2,
            "measured": f"live + {first['vcr_transport']['over_live_ms']:.2f} ms",
        },
        {
            "goal": "import vcr_transport adds at most 15 ms beyond httpx2",
            "met": imports["then import vcr_transport"]["ms"] <= 15,
            "measured": f"{imports['then import vcr_transport']['ms']:.1f} ms "
            f"({imports['... and use its transports']['ms']:.1f} ms with its transports loaded)",
        },
        {
            "goal": "memory while replaying at most 2x the cassette size, streamed from the file and held in memory",
            "met": memory["replay"]["growth_mb"] <= 2 * memory["cassette size"]["cassette_mb"]
            and held["replay"]["growth_mb"] <= 2 * held["cassette size"]["cassette_mb"],
            "measured": f"{memory['replay']['growth_mb']:.1f} MB for a {memory['cassette size']['cassette_mb']:.0f} MB"
            f" cassette, {held['replay']['growth_mb']:.1f} MB for one of {held['cassette size']['cassette_mb']:.0f} MB"
            f" held in memory (recording {memory['record']['growth_mb']:.1f} MB)",
        },
        {
            "goal": "a 1,000,000-line cassette opens in under 2 s",
            "met": million["seconds"] < 2,
            "measured": f"{million['seconds']:.2f} s ({million['cpu_seconds']:.2f} s of CPU); "
            f"verify's memory grows {results['million_lines'][1]['growth_mb']:.0f} MB on it",
        },
        {
            "goal": "per-call replay cost flat as the cassette grows",
            "met": max(per_call) <= 1.5 * min(per_call),
            "measured": ", ".join(f"{v:.0f}" for v in per_call) + " us per call",
        },
        *_scaling_goals(results),
        *_plugin_goals(results),
    ]


def _scaling_goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 38's goals: any order of a gather costs what recorded order does; a long conversation."""
    largest = max(row["calls"] for row in results["gather"])
    gather = {row["order"]: row for row in results["gather"] if row["calls"] == largest}
    talk = results["conversation"][0]
    return [
        {
            "goal": f"a gather of {largest:,} shuffled or reversed: within 2x the recorded order's cost per call",
            "met": max(gather["shuffled"]["vs_recorded"], gather["reversed"]["vs_recorded"]) <= 2,
            "measured": f"{gather['shuffled']['vs_recorded']:.2f}x shuffled, {gather['reversed']['vs_recorded']:.2f}x "
            f"reversed ({gather['recorded']['per_call_us']:.0f} us a call in recorded order)",
        },
        {
            "goal": "a long conversation at most 2.5x the floor per call, its replay's memory at most 2x the file",
            "met": talk["ratio"] <= 2.5 and talk["memory_ratio"] <= 2,
            "measured": f"{talk['name']}: {talk['ratio']:.2f}x the floor, {talk['growth_mb']:.0f} MB "
            f"({talk['memory_ratio']:.1f}x the file), loaded in {talk['open_s']:.2f} s",
        },
    ]


def bench_plugin(repeats: int) -> dict[str, Any]:
    """The pytest plugin: two-call tests replayed with it against the same suite without it, 100 and 1,000 tests,
    serially and under ``-n 2`` (``benchmarks.plugin_suite``); and pytest's start with it installed and unused,
    20 plain tests (``benchmarks.plugin_start``). CPU time of the runs and their workers."""
    suite = [plugin_suite.measure(tests, workers, repeats) for workers in (0, 2) for tests in (100, 1000)]
    start: dict[str, Any] = {"name": "20 plain tests", **plugin_start.measure(repeats=max(11, 5 * repeats), tests=20)}
    if shutil.which("valgrind"):  # the instructions added, in ms at the rate of the plugin-free run's CPU time
        ours, base = instructions.plugin_start_counts()
        start["added_instructions"] = ours - base
        start["added_ms_by_instructions"] = round((ours - base) / base * start["without_plugin_cpu_ms"], 1)
    return {"plugin_suite": suite, "plugin_start": [start]}


def _plugin_goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 38's goals for the plugin: per test and per suite (the largest suite), and at start."""
    largest = max(row["tests"] for row in results["plugin_suite"])
    rows = {row["workers"]: row for row in results["plugin_suite"] if row["tests"] == largest}
    start = results["plugin_start"][0]

    def both(key: str, unit: str) -> str:
        return ", ".join(f"{rows[w][key]:.2f}{unit} {'serially' if not w else f'under -n {w}'}" for w in sorted(rows))

    return [
        {
            "goal": f"the plugin at most 1 ms of CPU a test over no plugin ({largest:,} two-call tests)",
            "met": max(row["added_cpu_ms_per_test"] for row in rows.values()) <= 1,
            "measured": both("added_cpu_ms_per_test", " ms"),
        },
        {
            "goal": f"a {largest:,}-test suite at most 1.3x the plugin-free run",
            "met": max(row["cpu_ratio"] for row in rows.values()) <= 1.3,
            "measured": both("cpu_ratio", "x"),
        },
        {
            "goal": "pytest's start with the plugin unused at most 10 ms over -p no:vcr_transport",
            "met": start.get("added_ms_by_instructions", start["added_cpu_ms"]) <= 10,
            "measured": _start_measured(start),
        },
    ]


def _start_measured(start: dict[str, Any]) -> str:
    """Pytest's start: the instructions the plugin adds (in ms at the plugin-free run's rate), when valgrind
    counted them, and the median CPU time it adds, which a shared machine moves by milliseconds."""
    cpu = f"{start['added_cpu_ms']:.1f} ms of CPU by the median of runs ({start['name']})"
    if "added_instructions" not in start:
        return cpu
    return f"{start['added_instructions'] / 1e6:.1f} M instructions, {start['added_ms_by_instructions']:.1f} ms; {cpu}"


REPLAY_COLUMNS = [("", "name", 36), ("seconds", "seconds", 10), ("x floor", "ratio", 9), ("chunks", "count", 8),
                  ("MB", "cassette_mb", 7)]  # fmt: skip
TABLES: list[tuple[str, str, list[tuple[str, str, int]]]] = [
    ("replay_raw", "1. replay: 100 JSON + 100 SSE calls of 200 chunks, raw httpx2", REPLAY_COLUMNS),
    ("replay_openai", "2. the same through the openai SDK (count = parsed results)", REPLAY_COLUMNS),
    ("first_byte", "3. recording a stream of 20 chunks 50 ms apart (loopback)",
     [("", "name", 22), ("first byte ms", "first_ms", 15), ("over live ms", "over_live_ms", 14),
      ("total s", "total_s", 9), ("chunks", "chunks", 8), ("replayed chunks", "replayed_chunks", 17)]),
    ("memory", "4. memory for one long stream (peak RSS growth, child process)",
     [("", "name", 16), ("MB streamed", "mb_streamed", 14), ("seconds", "seconds", 9),
      ("RSS growth MB", "growth_mb", 15), ("cassette MB", "cassette_mb", 13)]),
    ("memory_held", "4b. the same for a stream whose cassette is held in memory (under the lazy threshold)",
     [("", "name", 16), ("MB streamed", "mb_streamed", 14), ("seconds", "seconds", 9),
      ("RSS growth MB", "growth_mb", 15), ("cassette MB", "cassette_mb", 13)]),
    ("scaling", "5. scaling",
     [("", "name", 34), ("us per call", "per_call_us", 13), ("floor us", "floor_per_call_us", 10),
      ("open s", "open_s", 9), ("first call s", "first_call_s", 14)]),
    ("record_overhead", "6. recording overhead",
     [("", "name", 30), ("seconds", "seconds", 10), ("x pass", "ratio", 8),
      ("us per chunk", "overhead_us_per_chunk", 14), ("us per call", "overhead_us_per_call", 13),
      ("chunks", "chunks", 8), ("close ms", "close_ms", 10), ("MB", "cassette_mb", 7)]),
    ("imports", "7. import time (fresh interpreters, ms)", [("", "name", 30), ("ms", "ms", 8)]),
    ("million_lines", "8. a 1,000,000-line cassette",
     [("", "name", 34), ("seconds", "seconds", 10), ("CPU s", "cpu_seconds", 8), ("MB growth", "growth_mb", 11)]),
    ("gather", "9. N calls made at once, replayed in recorded, shuffled and reversed order",
     [("", "name", 26), ("us per call", "per_call_us", 13), ("floor us", "floor_per_call_us", 10),
      ("x floor", "ratio", 9), ("x recorded order", "vs_recorded", 18), ("cassetter us", "cassetter_per_call_us", 14)]),
    ("conversation", "10. a conversation, each request carrying the history",
     [("", "name", 34), ("us per call", "per_call_us", 13), ("floor us", "floor_per_call_us", 10),
      ("x floor", "ratio", 9), ("load s", "open_s", 8), ("RSS growth MB", "growth_mb", 15),
      ("x file", "memory_ratio", 8)]),
    ("binary", "11. binary answers",
     [("", "name", 44), ("seconds", "seconds", 9), ("floor s", "floor_seconds", 9), ("x floor", "ratio", 9),
      ("MB/s", "mb_per_s", 8)]),
    ("plugin_suite", "12. the pytest plugin: two-call tests replayed, against the same suite without it",
     [("tests", "tests", 7), ("workers", "workers", 9), ("CPU s without", "without_plugin_cpu_s", 15),
      ("CPU s with", "with_plugin_cpu_s", 12), ("x", "cpu_ratio", 7), ("ms per test", "added_cpu_ms_per_test", 13)]),
    ("plugin_start", "13. pytest's start with the plugin installed and unused",
     [("", "name", 16), ("ms without", "without_plugin_ms", 12), ("ms with", "with_plugin_ms", 9),
      ("CPU ms added", "added_cpu_ms", 14)]),
]  # fmt: skip


def _print_table(title: str, rows: list[dict[str, Any]], columns: list[tuple[str, str, int]]) -> None:
    print(f"\n{title}")
    print(
        "  "
        + "".join(f"{header:>{width}}" if i else f"{header:<{width}}" for i, (header, _, width) in enumerate(columns))
    )
    for row in rows:
        cells = []
        for i, (_, key, width) in enumerate(columns):
            value = row.get(key)
            if row.get("missing") and i:
                text = "not installed" if i == 1 else ""
            elif isinstance(value, float):
                text = f"{value:.3f}" if abs(value) < 1000 else f"{value:.0f}"
            else:
                text = "" if value is None else str(value)
            cells.append(f"{text:<{width}}" if i == 0 else f"{text:>{width}}")
        print("  " + "".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, a 100 MB stream, smaller scaling")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/latest.json"))
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg()[0],  # other work on the machine: read the ratios, not the seconds
        "versions": {
            name: _version(name) for name in ("vcr_transport", "httpx2", "vcrpy", "cassetter", "openai", "msgspec")
        },
    }
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        os.environ["VCR_TRANSPORT_CACHE_DIR"] = str(folder / "parse-cache")  # the warm rows' cache, thrown away
        calls = workload()
        results["replay_raw"] = bench_replay(folder, calls, repeats, drive_raw, "raw")
        results["replay_openai"] = bench_replay(folder, calls, max(3, repeats // 2), drive_openai, "openai")
        results["first_byte"] = bench_first_byte(folder, 3)
        results["memory"] = bench_memory(folder, (100 if args.quick else 1024) * 1024 * 1024)
        results["memory_held"] = bench_memory(folder, 24 * 1024 * 1024)  # under the lazy threshold: held
        results["scaling"] = bench_scaling(folder, 3, args.quick)
        results["record_overhead"] = bench_record_overhead(folder, repeats)
        results["imports"] = bench_import(5 if args.quick else 11)
        results["million_lines"] = bench_million_lines(folder, 3)
        results.update(replay_scaling.measure(folder, args.quick))  # gather, conversation, binary
        results.update(bench_plugin(repeats=3))  # the pytest plugin: per test, per suite, at start

    results["load_after"] = os.getloadavg()[0]
    for row in results["memory"] + results["memory_held"]:
        if "bytes" in row:
            row["mb_streamed"] = row["bytes"] / 1e6
    for key, title, columns in TABLES:
        _print_table(title, results[key], columns)
    results["goals"] = goals(results, big_stream_mb=100 if args.quick else 1024)
    print("\ngoals")
    for goal in results["goals"]:
        print(f"  {'met    ' if goal['met'] else 'NOT MET'}  {goal['goal']}: {goal['measured']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))
    print(f"\nresults written to {args.json}")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
