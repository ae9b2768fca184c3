"""Instruction counts (valgrind's callgrind) of the table's main scenarios: a measure of CPU work that load on
the machine does not move, for comparing two checkouts on a busy machine. Each scenario runs in a fresh
interpreter twice under callgrind, once with its work and once without; both first make a call of the same
kind on a tiny workload (imports, lazy loading, a client's SSL context), so the difference is the
scenario's own calls. The floor (httpx2's MockTransport serving the same bytes) is
counted the same way, so that every figure is also a ratio against it.

    python -m benchmarks.instructions [--out FILE.json]      # from inside the checkout you measure

``first_use`` is what a process's first cassette costs (every xdist worker and CLI command pays it);
``plugin_start``, a pytest run of 20 plain tests with the plugin installed and unused, over the same run with
``-p no:vcr_transport``. Every count is of a second run, with the bytecode the first wrote, as a user's runs.

Needs valgrind (Debian: valgrind). PYTHONHASHSEED is fixed, so a run repeats its counts closely.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

BASE = "https://bench.test"

# name -> (what it does, its unit count for the per-unit figure, and the unit)
SCENARIOS: dict[str, tuple[str, int, str]] = {
    "floor_raw": ("httpx2.MockTransport, 20 JSON + 20 SSE calls of 200 chunks, raw httpx2", 40, "call"),
    "replay_cold_raw": ("replay of the same cassette, loaded (parse cache off)", 40, "call"),
    "replay_cold_cache_empty": ("the same, the parse cache on and empty (what CI meets)", 40, "call"),
    "replay_warm_raw": ("the same, the parse cache warm", 40, "call"),
    "cassetter_raw": ("cassetter replaying the same calls from its own cassette (when installed)", 40, "call"),
    "floor_openai": ("httpx2.MockTransport through the openai SDK, 20 + 20 calls", 40, "call"),
    "replay_openai": ("replay through the openai SDK, loaded (parse cache off)", 40, "call"),
    "record_chunks": ("recording 10 SSE calls of 400 chunks (the pass-through subtracted)", 4000, "chunk"),
    "record_calls": ("recording 200 JSON calls (the pass-through subtracted)", 200, "call"),
    "import": ("import vcr_transport after httpx2", 1, "import"),
    "first_use": ("the first cassette of a process: its imports and one replayed call, after httpx2", 1, "process"),
    "plugin_start": ("pytest on 20 plain tests, the plugin installed and unused, over -p no:vcr_transport", 1, "run"),
}
# The plugin-start runs: other plugins that would load either way are off (as in ``plugin_start.py``).
PYTEST_QUIET = ("-q", "-p", "no:cacheprovider", "-p", "no:cassetter", "-p", "no:hypothesispytest", "-p", "no:randomly")


def _first_use(work: bool, folder: str) -> None:
    """A process's first cassette (with ``work``): every import behind it, and one replayed call. Both runs
    make the client's own first call first."""
    from benchmarks.run import drive_raw, floor_transport, workload

    warm = workload(json_calls=1, sse_calls=1, chunks=2)
    drive_raw(floor_transport(warm), BASE, warm)
    if work:
        import vcr_transport

        drive_raw(vcr_transport.ReplayTransport(Path(folder) / "warm.jsonl", parse_cache=False), BASE, warm)


def _import(work: bool, folder: str) -> None:
    if work:
        import vcr_transport  # noqa: F401


# The scenarios that make their own calls (or none): name -> what runs them.
_OWN_CALLS: dict[str, Callable[[bool, str], None]] = {"first_use": _first_use, "import": _import}


def _child(scenario: str, work: bool, folder: str) -> None:
    """One scenario in this interpreter; with ``work`` false, only its setup. Both runs first make one call
    of the scenario's kind on a small workload (imports, lazy loading, the client's SSL context), so that
    the difference is the scenario's calls alone."""
    import httpx2  # noqa: F401

    if scenario in _OWN_CALLS:
        _OWN_CALLS[scenario](work, folder)
        return
    import vcr_transport
    from benchmarks.run import drive_openai, drive_raw, floor_transport, workload

    path = Path(folder) / "bench.jsonl"
    warm = workload(json_calls=1, sse_calls=1, chunks=2)
    if scenario.startswith("record"):
        calls = (
            workload(json_calls=0, sse_calls=10, chunks=400)
            if scenario == "record_chunks"
            else workload(json_calls=200, sse_calls=0)
        )
        drive_raw(floor_transport(warm), BASE, warm)
        drive_raw(vcr_transport.RecordingTransport(floor_transport(warm), Path(folder) / "warm-rec.jsonl"), BASE, warm)
        inner = floor_transport(calls)
        drive_raw(vcr_transport.RecordingTransport(inner, Path(folder) / "rec.jsonl") if work else inner, BASE, calls)
        return
    calls = workload(json_calls=20, sse_calls=20)
    drive = drive_openai if scenario.endswith("openai") else drive_raw
    if scenario.startswith("floor"):
        drive(floor_transport(warm), BASE, warm)
        if work:
            drive(floor_transport(calls), BASE, calls)
        return
    if scenario == "cassetter_raw":
        _cassetter(work, folder, calls, warm)
        return
    if scenario.endswith("openai"):
        path = Path(folder) / "bench-openai.jsonl"  # what the openai SDK sends, recorded through it
    if not path.exists():
        raise SystemExit("the cassette is recorded before the counted runs")
    cache = scenario not in ("replay_cold_raw", "replay_openai")
    warm_path = Path(folder) / ("warm-openai.jsonl" if scenario.endswith("openai") else "warm.jsonl")
    drive(vcr_transport.ReplayTransport(warm_path, parse_cache=False), BASE, warm)
    if work:
        drive(vcr_transport.ReplayTransport(path, parse_cache=cache), BASE, calls)


def _cassetter(work: bool, folder: str, calls: list[Any], warm: list[Any]) -> None:
    """cassetter's replay of ``calls`` from the cassette it recorded of them (``_record_cassetter``), after a
    replay of ``warm`` from its own: the rival's figure beside ours, counted the same way."""
    import cassetter
    import httpx2

    from benchmarks.run import drive_raw

    for name, which in (("warm", warm), ("bench", calls) if work else ("", [])):
        if name:
            url = (Path(folder) / f"{name}-cassetter.url").read_text()  # the recorded server's, which it matches
            with cassetter.use_cassette(
                Path(folder) / f"{name}-cassetter.yaml", record_mode="none", intercept=["httpx2"]
            ):
                drive_raw(httpx2.HTTPTransport(), url, which)


def _record_cassetter(folder: Path, calls: list[Any], warm: list[Any]) -> bool:
    """cassetter's cassettes of ``calls`` and ``warm``, recorded from a local server; False when it is not
    installed."""
    import importlib.util

    if importlib.util.find_spec("cassetter") is None:
        return False
    import cassetter
    import httpx2

    from benchmarks.run import WorkloadServer, drive_raw

    for name, which in (("bench", calls), ("warm", warm)):
        server = WorkloadServer(which)
        try:
            with cassetter.use_cassette(folder / f"{name}-cassetter.yaml", record_mode="all", intercept=["httpx2"]):
                drive_raw(httpx2.HTTPTransport(), server.url, which)
            (folder / f"{name}-cassetter.url").write_text(server.url)
        finally:
            server.close()
    return True


def _count(scenario: str, work: bool, folder: str, environment: dict[str, str]) -> int:
    if scenario == "plugin_start":
        suite = Path(folder) / "suite"
        command = [sys.executable, "-m", "pytest", *PYTEST_QUIET, *(() if work else ("-p", "no:vcr_transport"))]
        return _instructions(scenario, command, str(suite), environment)
    command = [
        sys.executable,
        "-m",
        "benchmarks.instructions",
        "--child",
        scenario,
        "--work" if work else "--setup",
        "--folder",
        folder,
    ]
    return _instructions(scenario, command, None, environment)


def _instructions(scenario: str, command: list[str], cwd: str | None, environment: dict[str, str]) -> int:
    """The instructions ``command`` runs, counted by callgrind, after one run outside it (which writes the
    bytecode, as a user's runs find it)."""
    subprocess.run(command, capture_output=True, env=environment, cwd=cwd, check=False)
    result = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        capture_output=True,
        text=True,
        env=environment,
        cwd=cwd,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"{scenario}: {result.stderr[-2000:]}")
    found = re.search(r"Collected : (\d+)", result.stderr)
    if found is None:
        raise SystemExit(f"{scenario}: no count in valgrind's output")
    return int(found.group(1))


def _environment(folder: Path) -> dict[str, str]:
    """The counted runs' environment, and the plugin-start suite in ``folder``: bytecode is written and used,
    as in a user's runs (in ``folder``, whatever ``PYTHONDONTWRITEBYTECODE`` says here)."""
    from benchmarks.plugin_start import make_suite

    (folder / "suite").mkdir()
    make_suite(folder / "suite", 20)
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    return environment | {"PYTHONHASHSEED": "0", "PYTHONPYCACHEPREFIX": str(folder / "bytecode")}


def plugin_start_counts() -> tuple[int, int]:
    """The instructions of pytest on the plugin-start suite (20 plain tests) with the plugin installed and unused,
    and with ``-p no:vcr_transport``: a figure a busy machine doesn't move, where CPU time moves by milliseconds."""
    with tempfile.TemporaryDirectory() as name:
        environment = _environment(Path(name))
        return _count("plugin_start", True, name, environment), _count("plugin_start", False, name, environment)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child")
    parser.add_argument("--work", action="store_true")
    parser.add_argument("--setup", action="store_true")
    parser.add_argument("--folder")
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.work, args.folder)
        return
    import vcr_transport
    from benchmarks.run import drive_openai, drive_raw, floor_transport, workload

    results: dict[str, Any] = {"checkout": str(Path(vcr_transport.__file__).parent.parent)}
    with tempfile.TemporaryDirectory() as folder:
        environment = _environment(Path(folder))
        calls = workload(json_calls=20, sse_calls=20)
        drive_raw(vcr_transport.RecordingTransport(floor_transport(calls), Path(folder) / "bench.jsonl"), BASE, calls)
        sdk = vcr_transport.RecordingTransport(floor_transport(calls), Path(folder) / "bench-openai.jsonl")
        drive_openai(sdk, BASE, calls)
        warm = workload(json_calls=1, sse_calls=1, chunks=2)
        drive_raw(vcr_transport.RecordingTransport(floor_transport(warm), Path(folder) / "warm.jsonl"), BASE, warm)
        warm_sdk = vcr_transport.RecordingTransport(floor_transport(warm), Path(folder) / "warm-openai.jsonl")
        drive_openai(warm_sdk, BASE, warm)
        rival = (not args.only or "cassetter_raw" in args.only) and _record_cassetter(Path(folder), calls, warm)
        for scenario, (title, units, unit) in SCENARIOS.items():
            if (args.only and scenario not in args.only) or (scenario == "cassetter_raw" and not rival):
                continue
            cache = Path(folder) / "cache"
            environment["VCR_TRANSPORT_CACHE_DIR"] = str(cache)
            if scenario == "replay_warm_raw":  # warm it first, outside the count: marked seen, then written
                for _ in range(2):
                    subprocess.run(
                        [
                            sys.executable,
                            "-m",
                            "benchmarks.instructions",
                            "--child",
                            "replay_cold_cache_empty",
                            "--work",
                            "--folder",
                            folder,
                        ],
                        env=environment,
                        check=True,
                    )
            elif cache.exists():
                subprocess.run(["rm", "-rf", str(cache)], check=True)
            total = _count(scenario, True, folder, environment)
            setup = _count(scenario, False, folder, environment)
            own = total - setup
            results[scenario] = {"title": title, "instructions": own, "per_unit": own / units, "unit": unit}
            print(f"{scenario:24} {own / 1e6:10.1f} M instructions, {own / units / 1e3:9.1f} k per {unit}  ({title})")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
