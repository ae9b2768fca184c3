"""The usage ledger: which cassettes the tests of the last run used, for ``vcr-transport prune``.

The pytest plugin appends to ``.vcr_transport/ledger/<worker>.jsonl`` under the rootdir; each worker of
a pytest-xdist run has its own file. A file starts with ``{"run": id, "started": time}``; a new run
starts the file afresh.
"""

from __future__ import annotations

import datetime
import json
import os
import threading
import uuid
from pathlib import Path

__all__ = ["last_run_cassettes", "note_use"]

_lock = threading.Lock()
_process_run: list[str] = []
_noted: set[tuple[str, str]] = set()


def ledger_folder(root: Path) -> Path:
    return root / ".vcr_transport" / "ledger"


def _run_and_worker() -> tuple[str, str]:
    if not _process_run:
        _process_run.append(uuid.uuid4().hex)
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or _process_run[0]
    worker = os.environ.get("PYTEST_XDIST_WORKER") or "main"
    return run, worker


def note_use(root: Path, cassette: Path) -> None:
    run, worker = _run_and_worker()
    try:
        name = str(cassette.resolve().relative_to(root.resolve()))
    except ValueError:
        name = str(cassette.resolve())
    with _lock:
        if (run, name) in _noted:
            return
        path = ledger_folder(root) / f"{worker}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not any(key[0] == run for key in _noted)
        if fresh and path.exists():
            try:
                first = json.loads(path.read_text().split("\n", 1)[0])
                fresh = first.get("run") != run
            except (ValueError, OSError):
                pass
        _noted.add((run, name))
        with path.open("w" if fresh else "a", encoding="utf-8") as ledger:
            if fresh:
                started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
                ledger.write(json.dumps({"run": run, "started": started}) + "\n")
            ledger.write(json.dumps({"cassette": name}) + "\n")


def last_run_cassettes(root: Path) -> tuple[str | None, set[Path]]:
    """The newest run's id and the cassettes it used (absolute paths); (None, set()) with no ledger."""
    runs: dict[str, tuple[str, set[Path]]] = {}
    folder = ledger_folder(root)
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if not lines or "run" not in lines[0]:
            continue
        run, started = lines[0]["run"], lines[0].get("started", "")
        _, used = runs.setdefault(run, (started, set()))
        runs[run] = (min(started, runs[run][0]), used)
        used.update((root / line["cassette"]).resolve() for line in lines[1:] if "cassette" in line)
    if not runs:
        return None, set()
    newest = max(runs, key=lambda r: runs[r][0])
    return newest, runs[newest][1]
