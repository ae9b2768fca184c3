"""The usage ledger: which cassettes the last pytest run used, and whether that run was complete, for
``vcr-transport prune``.

It is one JSON file, ``.vcr_transport/ledger.json`` under the pytest rootdir. The folder ignores itself, as
``.pytest_cache/`` does: it holds a ``.gitignore`` of ``*`` and a ``CACHEDIR.TAG``, so it never reaches git or
a backup. The plugin's main process writes it twice: when the run starts (``complete: false``, so a run
that dies leaves an incomplete ledger rather than an older run's), and when it finishes, with every cassette
opened through any entry point (the marker, ``use_cassette()``, ``transport()``), every cassette a collected
test's marker names, the node ids of the tests that named or opened each (``owners``: what a shared
cassette's calls still belong to), the run's command line, and whether the run was complete, with why not: a
run is complete only if it collected the whole suite (no module that failed to collect or was skipped at
collection, no ``--ignore``, ``collect_ignore``, ``--deselect``, ``-k``, ``-m``, ``--lf``, no test id, file or
folder narrower than the test paths), and did not stop early or lose a worker. Under xdist the controller
writes it, from what its workers saw.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ._run import ledger_path

__all__ = ["Ledger", "LedgerProblem", "ledger_path", "new_ledger", "read_ledger", "write_ledger"]

LEDGER_VERSION = 1


class LedgerProblem(Exception):
    """The ledger is missing or unreadable; the message says what to do."""


class Ledger:
    """One run's ledger: its id, when it started, its command line, whether it was complete (and why not), the
    cassettes it used and the tests that used each. (A plain class: the plugin imports this module in every
    run.)"""

    def __init__(
        self,
        run: str,
        started: str,
        command: str = "",
        complete: bool = False,
        why_incomplete: str = "the run has not finished",
        cassettes: set[Path] | None = None,
        owners: dict[Path, set[str]] | None = None,
        files: set[str] | None = None,
    ) -> None:
        self.run = run
        self.started = started
        self.command = command
        self.complete = complete
        self.why_incomplete = why_incomplete
        self.cassettes: set[Path] = set() if cassettes is None else cassettes
        # The tests that claimed (by their marker) or opened each cassette, by node id; None: a ledger
        # written before they were kept, which can't tell which tests a shared cassette still has.
        self.owners: dict[Path, set[str]] | None = owners
        self.files: set[str] = set() if files is None else files  # the test files collected, as node ids say


def write_ledger(root: Path, ledger: Ledger) -> None:
    """Replace the ledger whole (a private temporary file moved over it), where ``_write_paths.write_target``
    allows: a ``.vcr_transport`` or ``ledger.json`` that is a link leading out of the project raises
    RefusedWrite; a read-only project raises OSError (the plugin says so in one line and goes on)."""
    import json
    import tempfile

    from ._write_paths import write_target  # lazily: a run that writes no ledger never needs it

    path = write_target(ledger_path(root), root=root)
    _make_state_folder(path.parent)
    resolved_root = root.resolve()
    document: dict[str, Any] = {
        "ledger_version": LEDGER_VERSION,
        "run": ledger.run,
        "started": ledger.started,
        "command": ledger.command,
        "complete": ledger.complete,
        "why_incomplete": "" if ledger.complete else ledger.why_incomplete,
        "cassettes": sorted(_relative(resolved_root, p) for p in ledger.cassettes),
        "owners": {_relative(resolved_root, p): sorted(t) for p, t in sorted((ledger.owners or {}).items())},
        "files": sorted(ledger.files),
    }
    descriptor, temporary = tempfile.mkstemp(prefix=".ledger.", suffix=".partial", dir=path.parent)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(document, file, indent=1)
        file.write("\n")
    os.replace(temporary, path)


# What pytest writes into .pytest_cache/, for the same reasons (https://bford.info/cachedir/).
GITIGNORE = "# Created by vcr_transport automatically.\n*\n"
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by vcr_transport.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/spec.html\n"
)


def _make_state_folder(folder: Path) -> None:
    """The plugin's state folder, ignoring itself: a ``.gitignore`` of ``*`` and a ``CACHEDIR.TAG``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in ((".gitignore", GITIGNORE), ("CACHEDIR.TAG", CACHEDIR_TAG)):
        try:  # created only where nothing is, not even a link (O_EXCL): never written through one
            descriptor = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)


def new_ledger(run: str, *, command: str = "", started: float | None = None) -> Ledger:
    """A run's ledger, started now or at ``started`` (seconds since the epoch)."""
    import datetime

    moment = (
        datetime.datetime.now(datetime.UTC)
        if started is None
        else datetime.datetime.fromtimestamp(started, datetime.UTC)
    )
    return Ledger(run, moment.isoformat(timespec="seconds"), command)


def read_ledger(root: Path) -> Ledger:
    import json

    path = ledger_path(root)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LedgerProblem(
            f"no usage ledger at {path}: run the test suite once with the pytest plugin, or use --older-than DAYS"
        ) from None
    except (OSError, ValueError) as error:
        raise LedgerProblem(f"{path} can't be read ({error}): run the whole test suite again") from None
    if not isinstance(document, dict) or document.get("ledger_version") != LEDGER_VERSION:
        raise LedgerProblem(f"{path} is not a ledger this version writes: run the whole test suite again")
    return Ledger(
        str(document["run"]),
        str(document["started"]),
        str(document.get("command", "")),
        bool(document["complete"]),
        str(document.get("why_incomplete", "")),
        {(root / name).resolve() for name in document["cassettes"]},
        _owners(root, document.get("owners")),
        {str(name) for name in document.get("files", ())},
    )


def _owners(root: Path, found: Any) -> dict[Path, set[str]] | None:
    if not isinstance(found, dict):
        return None
    return {(root / name).resolve(): {str(test) for test in tests} for name, tests in found.items()}


def _relative(resolved_root: Path, path: Path) -> str:
    """``path`` as the ledger names it: relative to the project (``resolved_root``, resolved), else absolute.
    The run's paths are resolved already (``PluginRun.resolved``): one is resolved again only when relative."""
    resolved = path if path.is_absolute() else path.resolve()
    try:
        return str(resolved.relative_to(resolved_root))
    except ValueError:
        return str(resolved)
