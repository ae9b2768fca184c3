"""How long a cassette takes to open, and how much memory ``verify`` needs, on two cassettes:

- the acceptance workload of ``benchmarks.run`` (100 JSON + 100 SSE calls of 200 chunks), recorded through
  ``RecordingTransport`` over ``httpx2.MockTransport``;
- a 1,000,000-line cassette (1,000 streamed calls of 997 short SSE chunks, about 70 MB).

    python -m benchmarks.load_time [--repeats N] [--folder DIR]

It uses only what every version of vcr_transport has (``RecordingTransport``, ``_storage.read_cassette``,
``_cli.main``), so the same script measures a checkout before and after a change (put it first on
PYTHONPATH). For the 1,000,000-line cassette it also reports how often the process was preempted while runnable
(involuntary context switches), waited (voluntary ones: I/O, locks) and read blocks from disk: wall time well
beyond CPU time with many preemptions and no waits is a machine short of cores, not the reader waiting for
anything. Peak memory of ``verify`` is measured in a child process (``ru_maxrss``), beyond what the
interpreter held after importing vcr_transport (VmHWM).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

import vcr_transport
from benchmarks.run import workload
from vcr_transport._storage import read_cassette

CALLS = 1000
EVENTS_PER_CALL = 997  # + request, response, call_end: 1,000 lines a call


def write_workload_cassette(path: Path) -> None:
    calls = {f"/v1/{c.kind}/{c.number}": c for c in workload()}

    def handler(request: httpx2.Request) -> httpx2.Response:
        call = calls[request.url.path]
        return httpx2.Response(200, headers={"content-type": call.content_type}, content=iter(call.chunks))

    transport = vcr_transport.RecordingTransport(httpx2.MockTransport(handler), path)
    with httpx2.Client(transport=transport, base_url="http://bench.test") as client:
        for route in calls:
            with client.stream("POST", route, json={"prompt": route}) as response:
                for _ in response.iter_raw():
                    pass


def write_million_line_cassette(path: Path) -> int:
    """1,000,000 lines after the header, written as format version 1 spells them."""
    with path.open("w", encoding="utf-8") as file:
        file.write('{"type":"header","format_version":1}\n')
        for call in range(CALLS):
            file.write(
                json.dumps(
                    {
                        "type": "request",
                        "call_index": call,
                        "method": "POST",
                        "url": "https://api.test/v1/chat/completions",
                        "headers": [["content-type", "application/json"]],
                        "body": {"json": {"messages": [{"role": "user", "content": f"prompt {call}"}]}},
                    },
                    separators=(",", ":"),
                )
                + "\n"
            )
            file.write(
                f'{{"type":"response","call_index":{call},"status":200,'
                '"headers":[["content-type","text/event-stream"]],"http_version":"HTTP/1.1"}\n'
            )
            for event in range(EVENTS_PER_CALL):
                chunk = json.dumps(f"data: tok{event}\n\n")
                offset = f"0.00{event % 10}"
                file.write(
                    f'{{"type":"event","call_index":{call},"event_index":{event},"t":{offset},"text":{chunk}}}\n'
                )
            file.write(
                f'{{"type":"call_end","call_index":{call},"event_count":{EVENTS_PER_CALL},"outcome":"complete"}}\n'
            )
    return 1 + CALLS * (EVENTS_PER_CALL + 3)


def open_seconds(path: Path, repeats: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of ``read_cassette``: on a shared machine the CPU time is the steadier one."""
    return open_measures(path, repeats)[:2]


def open_measures(path: Path, repeats: int) -> tuple[float, float, float, float, float]:
    """Medians of (wall s, CPU s, involuntary context switches, voluntary ones, blocks read) of
    ``read_cassette``. Where wall time goes beyond CPU time: waiting for a core (involuntary switches: the
    process was runnable and preempted) or waiting for I/O (voluntary switches, blocks read)."""
    rows = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_SELF)
        started, started_cpu = time.perf_counter(), time.process_time()
        cassette = read_cassette(path)
        wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
        after = resource.getrusage(resource.RUSAGE_SELF)
        rows.append((wall, cpu, after.ru_nivcsw - before.ru_nivcsw, after.ru_nvcsw - before.ru_nvcsw,
                     after.ru_inblock - before.ru_inblock))  # fmt: skip
        del cassette
    wall_s, cpu_s, involuntary, voluntary, blocks = (statistics.median(column) for column in zip(*rows, strict=True))
    return wall_s, cpu_s, involuntary, voluntary, blocks


VERIFY_CHILD = r"""
import contextlib, io, sys
import vcr_transport._tools._cli as cli
def high_water_kb():  # VmHWM: this process's peak RSS (ru_maxrss would carry the parent's over the fork)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
before = high_water_kb()
with contextlib.redirect_stdout(io.StringIO()):
    code = cli.main(["verify", sys.argv[1]])
print(code, before, high_water_kb())
"""


def verify_memory_mb(path: Path) -> tuple[int, float, float]:
    """(exit code, peak RSS after importing vcr_transport in MB, peak RSS growth of verify in MB)."""
    child = subprocess.run(
        [sys.executable, "-c", VERIFY_CHILD, str(path)], capture_output=True, text=True, check=True, timeout=600
    )
    code, before, peak = child.stdout.split()
    return int(code), int(before) / 1024, (int(peak) - int(before)) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--folder", help="where the cassettes go (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(args.folder or temporary)
        folder.mkdir(parents=True, exist_ok=True)
        acceptance = folder / "acceptance.jsonl"
        million = folder / "million.jsonl"
        write_workload_cassette(acceptance)
        lines = write_million_line_cassette(million)
        results = {
            "vcr_transport": vcr_transport.__file__,
            "acceptance_mb": acceptance.stat().st_size / 1e6,
            "acceptance_open_s (wall, cpu)": open_seconds(acceptance, args.repeats),
            "million_lines": lines,
            "million_mb": million.stat().st_size / 1e6,
            "million_open (wall s, cpu s, preempted, waits, blocks)": open_measures(million, args.repeats),
        }
        code, imported_mb, growth_mb = verify_memory_mb(million)
        results.update(verify_exit=code, verify_import_rss_mb=imported_mb, verify_peak_growth_mb=growth_mb)
    for name, value in results.items():
        shown = ", ".join(f"{v:.3f}" for v in value) if isinstance(value, tuple) else value
        print(f"{name:55} {value:.3f}" if isinstance(value, float) else f"{name:55} {shown}")


if __name__ == "__main__":
    main()
