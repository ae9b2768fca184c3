"""The benchmark harness still runs and still compares like with like (no timing is asserted here)."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx2
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import run  # noqa: E402


def test_replay_bench_counts_every_chunk_for_the_floor_and_for_us(tmp_path: Path) -> None:
    calls = run.workload(json_calls=2, sse_calls=2, chunks=5)
    rows = {row["name"].split()[0] + row["name"].split()[-1]: row
            for row in run.bench_replay(tmp_path, calls, 1, run.drive_raw, "smoke")}  # fmt: skip
    assert rows["floor:httpx2.MockTransport"]["count"] == 2 + 2 * 5
    assert rows["vcr_transportcold"]["count"] == rows["vcr_transportwarm"]["count"] == 2 + 2 * 5
    assert rows["vcr_transportwarm"]["ratio"] > 0


def test_goals_are_judged_from_the_results() -> None:
    results = {
        "replay_raw": [
            {"name": "floor", "count": 10, "seconds": 1.0},
            {"name": "vcr_transport 0 cold", "ratio": 1.5, "count": 10, "seconds": 1.5},
            {"name": "vcr_transport 0 warm", "ratio": 1.3, "count": 10, "seconds": 1.3},
            {"name": "cassetter 1", "ratio": 1.4, "count": 10, "seconds": 1.4},
        ],
        "first_byte": [
            {"name": "live (no recorder)", "chunks": 20},
            {"name": "vcr_transport", "over_live_ms": 0.5, "replayed_chunks": 20},
        ],
        "memory": [
            {"name": "record", "growth_mb": 40.0},
            {"name": "replay", "growth_mb": 1.0},
            {"name": "cassette size", "cassette_mb": 100.0},
        ],
        "memory_held": [{"name": "replay", "growth_mb": 30.0}, {"name": "cassette size", "cassette_mb": 25.0}],
        "scaling": [{"per_call_us": 100.0}, {"per_call_us": 120.0}, {"name": "big", "open_s": 0.7}],
        "million_lines": [{"name": "open", "seconds": 2.5, "cpu_seconds": 1.5}, {"name": "verify", "growth_mb": 9.0}],
        "record_overhead": [
            {"name": "recording them", "overhead_us_per_call": 40.0},
            {"name": "recording", "overhead_us_per_chunk": 5.0},
        ],
        "imports": [{"name": "then import vcr_transport", "ms": 3.0}, {"name": "... and use its transports", "ms": 60}],
        "gather": [
            {"calls": 10, "order": "recorded", "per_call_us": 500.0, "vs_recorded": 1.0},
            {"calls": 10, "order": "shuffled", "per_call_us": 5000.0, "vs_recorded": 10.0},
            {"calls": 10, "order": "reversed", "per_call_us": 5000.0, "vs_recorded": 10.0},
            {"calls": 1000, "order": "recorded", "per_call_us": 500.0, "vs_recorded": 1.0},
            {"calls": 1000, "order": "shuffled", "per_call_us": 600.0, "vs_recorded": 1.2},
            {"calls": 1000, "order": "reversed", "per_call_us": 1100.0, "vs_recorded": 2.2},
        ],
        "conversation": [
            {"name": "talk", "ratio": 2.4, "memory_ratio": 2.5, "growth_mb": 25.0, "open_s": 0.5},
        ],
        "plugin_suite": [
            {"tests": 100, "workers": 0, "added_cpu_ms_per_test": 3.0, "cpu_ratio": 1.1},
            {"tests": 1000, "workers": 0, "added_cpu_ms_per_test": 0.9, "cpu_ratio": 1.2},
            {"tests": 1000, "workers": 2, "added_cpu_ms_per_test": 0.95, "cpu_ratio": 1.25},
        ],
        "plugin_start": [{"name": "20 plain tests", "added_cpu_ms": 9.0}],
    }
    met = [goal["met"] for goal in run.goals(results, big_stream_mb=1024)]
    # cold behind cassetter, warm over 1.2x, chunks all there, 5 us a chunk, 40 us a call, first byte, import,
    # replay memory, the 1,000,000-line open in 2.5 s, flat per-call cost; the largest gather reversed at 2.2x
    # its recorded order (the smaller one doesn't count), the conversation's memory 2.5x its file; the plugin
    # within 1 ms a test and 1.3x a suite at 1,000 tests (the 100-test suite's 3 ms doesn't count), its start 9 ms
    assert met == [False, False, True, False, True, True, True, True, False, True, False, False, True, True, True]


@pytest.mark.slow
def test_plugin_start_compares_the_same_suite_with_and_without_the_plugin() -> None:
    from benchmarks import plugin_start

    figures = plugin_start.measure(repeats=1, tests=2)
    assert set(figures) == {
        "without_plugin_ms", "with_plugin_ms", "added_ms", "ratio", "added_cpu_ms", "without_plugin_cpu_ms"
    }  # fmt: skip
    assert abs(figures["added_ms"] - (figures["with_plugin_ms"] - figures["without_plugin_ms"])) <= 0.11


def test_replay_scaling_replays_every_call_in_every_order_and_renders(tmp_path: Path) -> None:
    from benchmarks import readme_table, replay_scaling

    gather = replay_scaling.bench_gather(tmp_path, (5,), 1)  # asserts every call replayed, in each order
    assert [row["order"] for row in gather] == ["recorded", "shuffled", "reversed"]
    assert all(row["floor_per_call_us"] > 0 and row["vs_recorded"] > 0 for row in gather)
    talk = replay_scaling.bench_conversation(tmp_path, 4, 1)
    assert talk[0]["calls"] == 4 and talk[0]["growth_mb"] >= 0 and talk[0]["cassette_mb"] > 0
    audio = replay_scaling.bench_binary(tmp_path, 2, 1)
    assert 2 < audio[0]["cassette_mb"] < 3, "two answers of 1 MB, as base64"
    table = readme_table._scaling(
        {"versions": {"cassetter": "0"}, "gather": gather, "conversation": talk, "binary": audio}
    )
    assert len(table) == 2 + 3 + 1 + 1 and "5 at once, reversed" in table[4]


@pytest.mark.slow
def test_plugin_rows_measure_the_same_suite_with_and_without_the_plugin_and_render(tmp_path: Path) -> None:
    from benchmarks import plugin_suite, readme_table

    rows = [plugin_suite.measure(tests, 0, 1) for tests in (2, 4)]  # records, then replays them, both sides
    assert all(row["with_plugin_cpu_s"] > 0 and row["without_plugin_cpu_s"] > 0 for row in rows)
    table = readme_table._plugin({"plugin_suite": rows, "plugin_start": [{"name": "2 tests", "added_cpu_ms": 1.0}]})
    assert len(table) == 2 + 2 + 1 and table[0] == "| the pytest plugin | serially |"
    assert table[3].startswith("| 4 two-call tests replayed") and table[4].endswith("| 1.0 ms of CPU (median) |")
    counted = {"name": "2 tests", "added_cpu_ms": -2.0, "added_instructions": 51_500_000}
    counted["added_ms_by_instructions"] = 12.1
    assert readme_table._plugin({"plugin_suite": rows, "plugin_start": [counted]})[4].endswith(
        "| 51.5 M instructions, 12.1 ms |"
    )
    start_goal = run._plugin_goals({"plugin_suite": rows, "plugin_start": [counted]})[2]
    assert start_goal["met"] is False, "judged on the instructions when they were counted, not the CPU median"


def test_learned_values_compares_new_secrets_with_one_repeated() -> None:
    from benchmarks import learned_values

    row = learned_values.measure(40)
    assert row["texts"] == 40 and row["distinct_s"] > 0 and row["same_secret_s"] > 0
    assert row["ratio"] > 0 and row["distinct_us_per_text"] > 0
    assert learned_values._texts(3, True) != learned_values._texts(3, False)


def test_design_floor_serves_every_chunk_from_the_minimal_replayer(tmp_path: Path) -> None:
    from benchmarks import design_floor

    rows = design_floor.replay_floor(tmp_path, repeats=1, calls=2, chunks=5)  # raises when the counts differ
    assert [row["name"] for row in rows] == [
        "floor: httpx2.MockTransport",
        "minimal replayer of the format",
        "vcr_transport cold",
        "vcr_transport warm",
        "the lines decoded alone",
    ]
    calls = run.workload(json_calls=2, sse_calls=2, chunks=5)
    transport = design_floor.minimal_transport(tmp_path / "bench.jsonl")
    with httpx2.Client(transport=transport) as client:
        bodies = [client.post(design_floor.BASE_URL + call.path, json={"kind": call.kind, "n": call.number}).content
                  for call in calls]  # fmt: skip
    assert bodies == [b"".join(call.chunks) for call in calls]
