"""Cold replay with the parse cache switched off, switched on but empty (what every CI run meets), and warm:
the acceptance workload of ``benchmarks.run`` (100 JSON + 100 SSE calls of 200 chunks, a 7 MB cassette)
replayed through raw httpx2, load included, against the floor (httpx2's MockTransport serving the same
bytes). The rows are measured in turns; each "on, empty" repeat gets a new, empty cache folder.

    python -m benchmarks.cold_cache [--repeats N] [--load-only]

Medians of wall and CPU time. ``--load-only`` times opening the cassette alone (``read_cassette``: the only
part the rows differ in), with the minimum beside the median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import vcr_transport
from benchmarks.run import drive_raw, floor_transport, workload
from vcr_transport._storage import read_cassette

BASE = "http://bench.test"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--load-only", action="store_true")
    arguments = parser.parse_args()
    calls = workload()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        cassette = folder / "acceptance.jsonl"
        drive_raw(vcr_transport.RecordingTransport(floor_transport(calls), cassette), BASE, calls)
        fresh = iter(range(10**9))

        def cache_in(where: str) -> Callable[[], None]:
            return lambda: os.environ.__setitem__("VCR_TRANSPORT_CACHE_DIR", str(folder / where))

        def empty_cache() -> None:
            cache_in(f"empty-{next(fresh)}")()

        def replay(cache: bool) -> Callable[[], Any]:
            if arguments.load_only:
                return lambda: read_cassette(cassette, cache=cache)
            return lambda: drive_raw(vcr_transport.ReplayTransport(cassette, parse_cache=cache), BASE, calls)

        cases: list[tuple[str, Callable[[], None] | None, Callable[[], Any]]] = [
            ("parse cache off", None, replay(False)),
            ("parse cache on, empty", empty_cache, replay(True)),
            ("parse cache warm", cache_in("warm"), replay(True)),
        ]
        if not arguments.load_only:
            cases.insert(0, ("floor", None, lambda: drive_raw(floor_transport(calls), BASE, calls)))
        cache_in("warm")()
        for _ in range(2):  # the first open marks the bytes seen, the second writes the entry
            replay(True)()
        rows: dict[str, list[tuple[float, float]]] = {}
        for _ in range(arguments.repeats):
            for label, before, run in cases:
                if before is not None:
                    before()
                started, started_cpu = time.perf_counter(), time.process_time()
                run()
                rows.setdefault(label, []).append((time.perf_counter() - started, time.process_time() - started_cpu))
    print(f"{Path(vcr_transport.__file__).parent.parent}")
    floor = statistics.median(wall for wall, _ in rows["floor"]) if "floor" in rows else None
    for label, times in rows.items():
        wall = statistics.median(w for w, _ in times)
        cpu = statistics.median(c for _, c in times)
        ratio = f" ({wall / floor:.2f}x)" if floor else f" (min {min(w for w, _ in times) * 1e3:.1f})"
        print(f"  {label:24} {wall * 1e3:7.1f} ms wall{ratio}  {cpu * 1e3:7.1f} ms CPU")


if __name__ == "__main__":
    main()
