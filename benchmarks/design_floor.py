"""What the cassette format itself costs, whatever replays it: the least a replayer of this format can do, beside
the floor and vcr_transport, in one run. It tells a goal the design can reach from one only a new format can.

    python -m benchmarks.design_floor [--repeats N] [--plugin-tests N]

Replay (the bar's workload: 20 JSON + 20 SSE calls of 200 chunks through raw httpx2, CPU time, medians of
interleaved rounds): the floor (httpx2's MockTransport serving the bytes), a *minimal replayer* (every line of
the cassette decoded by msgspec, the calls indexed by method, URL and body, the recorded chunks served; no
validation, redaction, matching rules, mismatch reports or timing), vcr_transport cold (parsed each time) and
warm (the parse cache), and the decoding of the cassette's lines alone (``LINE_DECODER`` over each line: the part
of a cold load no replayer of this format avoids).

With ``--plugin-tests N``, the same for the pytest plugin (``benchmarks.plugin_suite``'s suite of N tests of two
calls): no plugin, a *minimal plugin* (a conftest whose autouse fixture serves a marked test's cassette the same
minimal way), and ours.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import msgspec

import vcr_transport
from benchmarks.plugin_start import run_once
from benchmarks.plugin_suite import make_suite
from benchmarks.run import drive_raw, floor_transport, workload
from vcr_transport._core.format._schema import LINE_DECODER

BASE_URL = "https://bench.test"
_DECODE = msgspec.json.Decoder().decode


class _Chunks(httpx2.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks


def _request_key(method: str, url: str, body: object) -> tuple[str, str, str]:
    return method, url, json.dumps(body, sort_keys=True)


def minimal_transport(path: Path) -> httpx2.MockTransport:
    """The least a replayer of the format does: each line decoded, the calls indexed, the chunks served."""
    calls: dict[tuple[str, str, str], list[int]] = {}
    responses: dict[int, dict[str, Any]] = {}
    chunks: dict[int, list[bytes]] = {}
    for line in path.read_bytes().splitlines():
        obj = _DECODE(line)
        if obj["type"] == "event":
            chunks[obj["call_index"]].append(obj["text"].encode())
        elif obj["type"] == "request":
            body = (obj.get("body") or {}).get("json")
            calls.setdefault(_request_key(obj["method"], obj["url"], body), []).append(obj["call_index"])
            chunks[obj["call_index"]] = []
        elif obj["type"] == "response":
            responses[obj["call_index"]] = obj

    def answer(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else None
        index = calls[_request_key(request.method, str(request.url), body)].pop(0)
        response = responses[index]
        return httpx2.Response(response["status"], headers=response["headers"], stream=_Chunks(chunks[index]))

    return httpx2.MockTransport(answer)


def _cpu_medians(work: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """The median CPU seconds of each piece of work, in interleaved rounds (after one round unmeasured)."""
    times: dict[str, list[float]] = {name: [] for name in work}
    for round_number in range(repeats + 1):
        for name, function in work.items():
            started = time.process_time()
            function()
            if round_number:
                times[name].append(time.process_time() - started)
    return {name: statistics.median(found) for name, found in times.items()}


def replay_floor(folder: Path, repeats: int, calls: int = 20, chunks: int = 200) -> list[dict[str, Any]]:
    work_calls = workload(json_calls=calls, sse_calls=calls, chunks=chunks)
    path = folder / "bench.jsonl"
    drive_raw(vcr_transport.RecordingTransport(floor_transport(work_calls), path), BASE_URL, work_calls)
    lines = path.read_bytes().splitlines()
    counts: dict[str, int] = {}

    def counted(name: str, transport: Callable[[], Any]) -> Callable[[], object]:
        def drive() -> None:
            counts[name] = drive_raw(transport(), BASE_URL, work_calls)

        return drive

    medians = _cpu_medians(
        {
            "floor: httpx2.MockTransport": counted("floor", lambda: floor_transport(work_calls)),
            "minimal replayer of the format": counted("minimal", lambda: minimal_transport(path)),
            "vcr_transport cold": counted("cold", lambda: vcr_transport.ReplayTransport(path, parse_cache=False)),
            "vcr_transport warm": counted("warm", lambda: vcr_transport.ReplayTransport(path, parse_cache=True)),
            "the lines decoded alone": lambda: list(map(LINE_DECODER.decode, lines)),
        },
        repeats,
    )
    if len(set(counts.values())) != 1:
        raise SystemExit(f"the replayers served different numbers of chunks: {counts}")
    floor = medians["floor: httpx2.MockTransport"]
    return [{"name": name, "cpu_ms": round(seconds * 1000, 3), "ratio": round(seconds / floor, 3)}
            for name, seconds in medians.items()]  # fmt: skip


MINIMAL_PLUGIN = """
from pathlib import Path

import pytest

from benchmarks.design_floor import minimal_transport


@pytest.fixture(autouse=True)
def _minimal_cassette(request):
    item = request.node
    if item.get_closest_marker("vcr_transport") is None:
        yield
        return
    import httpx2

    # the method vcr_transport's own patch replaces (``_http.transport_choice``)
    module = Path(str(item.path))
    transport = minimal_transport(module.parent / "cassettes" / module.stem / (item.name + ".jsonl"))
    original = httpx2.Client._transport_for_url
    httpx2.Client._transport_for_url = lambda self, url: transport
    try:
        yield
    finally:
        httpx2.Client._transport_for_url = original
"""


def plugin_floor(folder: Path, tests: int, repeats: int) -> list[dict[str, Any]]:
    """The plugin suite without a plugin, with the minimal one, and with ours (CPU of the whole run)."""
    ours, minimal = folder / "ours", folder / "minimal"
    ours.mkdir()
    make_suite(ours, tests)
    run_once(ours, "--vcr-mode=record")
    shutil.copytree(ours, minimal)
    (minimal / "conftest.py").write_text(MINIMAL_PLUGIN, encoding="utf-8")
    sides = {
        "no plugin (the client's MockTransport answers)": (ours, ("-p", "no:vcr_transport")),
        "minimal plugin replaying the format": (minimal, ("-p", "no:vcr_transport")),
        "vcr_transport": (ours, ("--vcr-mode=replay",)),
    }
    found: dict[str, list[float]] = {name: [] for name in sides}
    for round_number in range(repeats + 1):
        for name, (where, extra) in sides.items():
            cpu = run_once(where, *extra)[1]
            if round_number:
                found[name].append(cpu)
    base = statistics.median(next(iter(found.values())))
    return [
        {"name": name, "tests": tests, "cpu_s": round(statistics.median(cpu), 3),
         "ratio": round(statistics.median(cpu) / base, 3)}
        for name, cpu in found.items()
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--plugin-tests", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        for row in replay_floor(Path(name), args.repeats):
            print(json.dumps(row))
    if args.plugin_tests:
        with tempfile.TemporaryDirectory() as name:
            for row in plugin_floor(Path(name), args.plugin_tests, max(3, args.repeats // 3)):
                print(json.dumps(row))


if __name__ == "__main__":
    main()
