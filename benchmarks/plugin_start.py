"""What the pytest plugin adds to a run that uses no cassette: the same small suite (no marker, no
``use_cassette``) run with the plugin and with ``-p no:vcr_transport``, alternately, in the same session.

    python -m benchmarks.plugin_start [--repeats N] [--tests N]

It reports the median wall time of each and their difference in milliseconds (issue 26's goal: under 15 ms),
plus the ratio, and the difference of the median CPU time (user + system) of the runs, which a busy machine
disturbs far less. Other plugins that would load either way (cassetter, hypothesis, randomly) are turned off on
both sides, so that the difference is ours alone. The runs write and use bytecode as a user's do, whatever
``PYTHONDONTWRITEBYTECODE`` says here (else every run would time compiling the plugin's source).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUIET = ("-q", "-p", "no:cacheprovider", "-p", "no:cassetter", "-p", "no:hypothesispytest", "-p", "no:randomly")


def make_suite(folder: Path, tests: int) -> None:
    (folder / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    body = "".join(f"def test_{n}():\n    assert {n} == {n}\n\n" for n in range(tests))
    (folder / "test_plain.py").write_text(body, encoding="utf-8")


# The environment of the runs: bytecode cached, as in a user's (the warm-up run writes it); not CI's (a run
# under CI refuses to record, which benchmarks.plugin_suite's first run does).
ENVIRONMENT = {name: value for name, value in os.environ.items() if name not in ("PYTHONDONTWRITEBYTECODE", "CI")}


def run_once(folder: Path, *extra: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run: the CPU time (user + system) of the child barely moves when
    other processes share the machine, the wall time does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", *QUIET, *extra], cwd=folder, check=True, capture_output=True, env=ENVIRONMENT
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(repeats: int, tests: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        make_suite(folder, tests)
        run_once(folder)  # warm the file cache and the bytecode
        run_once(folder, "-p", "no:vcr_transport")
        with_plugin, without = [], []
        for _ in range(repeats):
            with_plugin.append(run_once(folder))
            without.append(run_once(folder, "-p", "no:vcr_transport"))
    base, ours = statistics.median(w for w, _ in without), statistics.median(w for w, _ in with_plugin)
    base_cpu, ours_cpu = statistics.median(c for _, c in without), statistics.median(c for _, c in with_plugin)
    return {
        "without_plugin_ms": round(base * 1000, 1),
        "with_plugin_ms": round(ours * 1000, 1),
        "added_ms": round((ours - base) * 1000, 1),
        "ratio": round(ours / base, 3),
        "added_cpu_ms": round((ours_cpu - base_cpu) * 1000, 1),
        "without_plugin_cpu_ms": round(base_cpu * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--tests", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps(measure(args.repeats, args.tests), indent=1))


if __name__ == "__main__":
    main()
