"""What the pytest plugin costs per test: a suite of M small tests (two JSON calls each, through an httpx2 client
with an API key) replayed from their cassettes by the plugin (``@pytest.mark.vcr_transport``), against the same
suite run with ``-p no:vcr_transport``, where the client's MockTransport answers the calls (the floor). Both in
the same session, in alternate rounds, for M = 100 and 1,000, serially and under ``-n 2`` (pytest-xdist).

    python -m benchmarks.plugin_suite [--repeats N] [--sizes 100 1000] [--workers 0 2] [--json FILE]

For each row: the median CPU time (user + system, the child and its workers) and wall time of each side, their
ratio, and the CPU added per test in milliseconds; then, per side, the added CPU per test between the two sizes
(the slope: what one more test costs, without the first cassette's imports, which every process pays once).
Issue 38's goals: at most 1 ms of CPU over no plugin per test, a 1,000-test suite at most 1.3 times the
plugin-free run. Other plugins that would load either way are off on both sides (as in ``plugin_start.py``);
bytecode is written and used, as in a user's runs. It uses only the marker and ``--vcr-mode``, so the same
script measures a checkout before and after a change (put it first on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.plugin_start import run_once

PER_FILE = 50
TEST = """
@pytest.mark.vcr_transport
def test_{n}():
    with _client() as client:
        first = client.post("/v1/chat/completions", json=_ask("question {n}"))
        second = client.post("/v1/chat/completions", json=_ask("again {n}"))
    assert first.json()["choices"][0]["message"]["content"] == "re: question {n}"
    assert second.json()["choices"][0]["message"]["content"] == "re: again {n}"
"""
HEAD = """import json

import httpx2
import pytest


def _answer(request):
    content = json.loads(request.content)["messages"][-1]["content"]
    body = {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "re: " + content}}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}
    return httpx2.Response(200, json=body)


def _ask(content):
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def _client():
    return httpx2.Client(transport=httpx2.MockTransport(_answer), base_url="https://api.bench.test",
                         headers={"authorization": "Bearer sk-bench-0123456789abcdefghijklmnop"})
"""


def make_suite(folder: Path, tests: int) -> None:
    """``tests`` marked tests in files of ``PER_FILE``; the marker is declared for the run without the plugin."""
    (folder / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nmarkers = ["vcr_transport: a cassette"]\n', encoding="utf-8"
    )
    for start in range(0, tests, PER_FILE):
        body = "".join(TEST.format(n=n) for n in range(start, min(start + PER_FILE, tests)))
        (folder / f"test_suite_{start // PER_FILE}.py").write_text(HEAD + body, encoding="utf-8")


def measure(tests: int, workers: int, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        make_suite(folder, tests)
        parallel = ("-n", str(workers)) if workers else ()
        run_once(folder, "--vcr-mode=record")  # the cassettes, and the bytecode
        plugin = ("--vcr-mode=replay", *parallel)
        floor = ("-p", "no:vcr_transport", *parallel)
        run_once(folder, *plugin)
        run_once(folder, *floor)
        ours, base = [], []
        for _ in range(repeats):
            ours.append(run_once(folder, *plugin))
            base.append(run_once(folder, *floor))
    cpu, base_cpu = statistics.median(c for _, c in ours), statistics.median(c for _, c in base)
    wall, base_wall = statistics.median(w for w, _ in ours), statistics.median(w for w, _ in base)
    return {
        "tests": tests,
        "workers": workers,
        "without_plugin_cpu_s": round(base_cpu, 3),
        "with_plugin_cpu_s": round(cpu, 3),
        "cpu_ratio": round(cpu / base_cpu, 3),
        "wall_ratio": round(wall / base_wall, 3),
        "added_cpu_ms_per_test": round((cpu - base_cpu) * 1000 / tests, 3),
    }


def slopes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per number of workers, the CPU one more test adds with the plugin, between the smallest and largest size."""
    found = []
    for workers in sorted({row["workers"] for row in rows}):
        mine = sorted((row for row in rows if row["workers"] == workers), key=lambda row: row["tests"])
        if len(mine) < 2:
            continue
        small, large = mine[0], mine[-1]
        added = (large["with_plugin_cpu_s"] - large["without_plugin_cpu_s"]) - (
            small["with_plugin_cpu_s"] - small["without_plugin_cpu_s"]
        )
        found.append(
            {
                "workers": workers,
                "added_cpu_ms_per_test_slope": round(added * 1000 / (large["tests"] - small["tests"]), 3),
            }
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--workers", type=int, nargs="*", default=[0, 2])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for workers in args.workers:
        for tests in args.sizes:
            rows.append(measure(tests, workers, args.repeats))
            print(json.dumps(rows[-1]), flush=True)
    found = {"rows": rows, "slopes": slopes(rows)}
    print(json.dumps(found["slopes"]))
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
