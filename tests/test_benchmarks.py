"""The benchmark harness still runs and still compares like with like (no timing is asserted here)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import run  # noqa: E402


def test_replay_bench_counts_every_chunk_for_the_floor_and_for_us(tmp_path: Path) -> None:
    calls = run.workload(json_calls=2, sse_calls=2, chunks=5)
    rows = {row["name"].split()[0]: row for row in run.bench_replay(tmp_path, calls, 1, run.drive_raw, "smoke")}
    assert rows["floor:"]["count"] == rows["vcr_transport"]["count"] == 2 + 2 * 5
    assert rows["vcr_transport"]["ratio"] > 0


def test_goals_are_judged_from_the_results() -> None:
    results = {
        "replay_raw": [{"name": "floor", "count": 10}, {"name": "vcr_transport 0", "ratio": 1.2, "count": 10}],
        "first_byte": [
            {"name": "live (no recorder)", "chunks": 20},
            {"name": "vcr_transport", "over_live_ms": 0.5, "replayed_chunks": 20},
        ],
        "memory": [{"name": "record", "growth_mb": 40.0}, {"name": "replay", "growth_mb": 1.0}],
        "scaling": [{"per_call_us": 100.0}, {"per_call_us": 120.0}, {"name": "big", "open_s": 0.7}],
    }
    met = {goal["goal"].split()[0]: goal["met"] for goal in run.goals(results, big_stream_mb=1024)}
    assert met == {"replay": True, "time": True, "every": True, "memory": False, "opening": False, "per-call": True}
