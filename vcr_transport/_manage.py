"""The work of the management commands, on the files: finding a project's cassettes, the project's status, a
cassette's summary (``list``), what ``verify`` reports, the secrets ``scan`` finds, and what ``delete`` and
``prune`` may remove. Never the network. The CLI prints what these return (``_render``)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ._config import SKIPPED_FOLDERS, cassette_folders, find_pyproject, resolve_mode
from ._core._redaction import Redactor
from ._core._scan import scan_document
from ._exceptions import CassetteError
from ._ledger import LedgerProblem, read_ledger
from ._storage import check_cassette, not_a_cassette, read_cassette, read_outline

__all__ = [
    "CassetteSummary",
    "ProjectStatus",
    "ScanReport",
    "UsageProblem",
    "Verification",
    "cassette_summary",
    "check_deletable",
    "find_cassettes",
    "project_status",
    "prune_reasons",
    "scan",
    "split_cassettes",
    "verify",
]


class UsageProblem(Exception):
    """A command that can't be carried out as given (a path that isn't there, a file that is no cassette, a
    partial test run to prune by...); the message says what to do."""


def _project_root() -> Path:
    pyproject = find_pyproject()
    return pyproject.parent if pyproject else Path.cwd()


def _cassettes_in(paths: Sequence[str | Path]) -> list[Path]:
    """The ``*.jsonl`` files named, and those under the folders named (not in virtualenvs, caches, .git)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.jsonl") if not SKIPPED_FOLDERS & set(p.parts))
        elif path.exists():
            files.append(path)
        else:
            raise UsageProblem(f"{path}: no such file or folder")
    return files


def find_cassettes(named: Sequence[str | Path]) -> list[Path]:
    """The cassettes ``named`` (files, and those in folders: ``_cassettes_in``), or without a name those of
    the project the working folder is in (its ``cassette_dir``, else its folders named ``cassettes``)."""
    return _cassettes_in(named) if named else _cassettes_in(cassette_folders(_project_root()))


# --- status and list ------------------------------------------------------------------------------------


@dataclass
class ProjectStatus:
    """The mode in force and where it came from, and the project's cassettes."""

    mode: str
    source: str
    ci: bool
    root: Path
    folders: list[Path]
    cassettes: int
    broken: int  # cassettes that can't be read
    calls: int  # in the readable ones

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "source": self.source,
            "ci": self.ci,
            "cassette_dirs": [str(f) for f in self.folders],
            "cassettes": self.cassettes,
            "broken": self.broken,
            "calls": self.calls,
        }


def project_status(mode: str | None) -> ProjectStatus:
    """``status``: the mode ``mode`` (an explicit one, or None) resolves to, and the project's cassettes."""
    resolved = resolve_mode(mode)
    root = _project_root()
    folders = cassette_folders(root)
    paths = _cassettes_in(folders)
    broken = calls = 0
    for path in paths:
        try:
            calls += len(read_cassette(path).calls)
        except CassetteError:
            broken += 1
    return ProjectStatus(
        resolved.mode, resolved.source, bool(os.environ.get("CI")), root, folders, len(paths), broken, calls
    )


@dataclass
class CassetteSummary:
    """One cassette as ``list`` shows it. ``problem``: why it can't be read (None when it can)."""

    path: Path
    size: int
    problem: str | None = None
    format_version: Any = None
    calls: int = 0
    hosts: list[str] = field(default_factory=list)
    incomplete_calls: list[int] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        if self.problem is not None:
            return {"path": str(self.path), "size": self.size, "readable": False, "problem": self.problem}
        return {
            "path": str(self.path),
            "size": self.size,
            "readable": True,
            "format_version": self.format_version,
            "calls": self.calls,
            "hosts": self.hosts,
            "complete": not self.incomplete_calls,
            "incomplete_calls": self.incomplete_calls,
        }


def cassette_summary(path: Path) -> CassetteSummary:
    """The cassette at ``path`` read in outline (its calls without their chunks)."""
    try:
        cassette = read_outline(path)
    except CassetteError as error:
        return CassetteSummary(path, path.stat().st_size, problem=str(error))
    return CassetteSummary(
        path,
        path.stat().st_size,
        format_version=cassette.header.get("format_version"),
        calls=len(cassette.calls),
        hosts=sorted({urlsplit(call.url).netloc for call in cassette.calls}),
        incomplete_calls=[call.index for call in cassette.calls if not call.complete],
    )


# --- verify ---------------------------------------------------------------------------------------------


@dataclass
class Verification:
    """What ``verify`` found: problems (each a cassette's line and what is wrong) and notes on calls that
    were recorded incomplete (problems too when ``strict``)."""

    cassettes: int
    problems: list[str]
    notes: list[str]
    with_problems: int  # cassettes with at least one problem

    def as_json(self) -> dict[str, Any]:
        return {"cassettes": self.cassettes, "problems": self.problems, "incomplete": self.notes}


def _findings(path: Path, strict: bool) -> tuple[list[str], list[str]]:
    """(problems, notes) of one cassette: a call recorded incomplete is a note, or with ``strict`` a problem."""
    findings = list(check_cassette(path))
    if strict:
        return [str(f) for f in findings], []
    return [str(f) for f in findings if not f.incomplete], [str(f) for f in findings if f.incomplete]


def verify(named: Sequence[str], *, strict: bool) -> Verification:
    """``verify`` of the cassettes ``named`` (files and folders), or of the project's when none is named. A
    named folder without a cassette is a problem."""
    paths = find_cassettes(named)
    problems: list[str] = []
    notes: list[str] = []
    with_problems = 0
    for path in paths:
        found, incomplete = _findings(path, strict)
        problems += found
        notes += incomplete
        with_problems += bool(found)
    empty = [str(p) for p in named if Path(p).is_dir() and not _cassettes_in([p])]
    problems += [f"{folder}: no cassette (*.jsonl) in this folder" for folder in empty]
    return Verification(len(paths), problems, notes, with_problems)


# --- scan -----------------------------------------------------------------------------------------------


def _masked(secret: str) -> str:
    """A secret as ``scan`` reports it: its first four characters and its length."""
    secret = secret.strip().strip('"')
    return (secret[:4] + "…" + f"({len(secret)} chars)") if len(secret) > 4 else "…"


def _scan_file(path: Path, redactor: Redactor) -> Iterator[tuple[int, str]]:
    """(line, masked secret) for every secret in a file, by the redaction engine (``_core._scan``); nothing
    for a file that can't be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return
    for number, secret in scan_document(redactor, text):
        yield number, _masked(secret)


@dataclass
class ScanReport:
    files: list[Path]  # every file scanned
    hits: list[tuple[Path, int, str]]  # (file, line, masked secret)


def scan(named: Sequence[str], names: Sequence[str], patterns: Sequence[str]) -> ScanReport:
    """``scan`` of the files named and every file under the folders named, with the redaction rules plus
    the secret ``names`` and regex ``patterns`` given."""
    redactor = Redactor(names, patterns)
    files: list[Path] = []
    for raw in named:
        path = Path(raw)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file() and not SKIPPED_FOLDERS & set(p.parts))
        elif path.is_file():
            files.append(path)
        else:
            raise UsageProblem(f"{path}: no such file or folder")
    hits = [(path, number, secret) for path in files for number, secret in _scan_file(path, redactor)]
    return ScanReport(files, hits)


# --- delete and prune -----------------------------------------------------------------------------------


def check_deletable(paths: Sequence[Path]) -> None:
    """Refuses (``UsageProblem``) unless every path is a cassette: delete and prune remove nothing else."""
    refused = {path: problem for path in paths if (problem := not_a_cassette(path))}
    if refused:
        raise UsageProblem(
            "refused, nothing was deleted: "
            + "; ".join(f"{path} is not a cassette ({problem})" for path, problem in refused.items())
            + ". delete and prune only remove vcr_transport cassettes (a file whose first line is a cassette header)"
        )


def split_cassettes(paths: Sequence[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """(the paths that are cassettes, (path, why not) for the others)."""
    cassettes: list[Path] = []
    others: list[tuple[Path, str]] = []
    for path in paths:
        problem = not_a_cassette(path)
        if problem:
            others.append((path, problem))
        else:
            cassettes.append(path)
    return cassettes, others


def prune_reasons(cassettes: Sequence[Path], *, older_than: float | None, force: bool) -> dict[Path, str]:
    """The cassettes ``prune`` removes, each with why: not modified for ``older_than`` days, or (without
    it) used by no test in the last complete run of the suite, read from the ledger (``_ledger``). A partial
    last run is refused unless ``force``: its unused cassettes may belong to tests it did not run."""
    if older_than is not None:
        cutoff = time.time() - older_than * 86400
        return {path: f"older than {older_than:g} days" for path in cassettes if path.stat().st_mtime < cutoff}
    try:
        ledger = read_ledger(_project_root())
    except LedgerProblem as problem:
        raise UsageProblem(str(problem)) from None
    if not ledger.complete and not force:
        raise UsageProblem(
            f"the last test run (started {ledger.started}) was partial: {ledger.why_incomplete}. "
            "Its unused cassettes may belong to tests it did not run: run the whole suite, then prune "
            "(or add --force to prune by this run anyway)"
        )
    return {
        path: f"no test used it in the last run ({ledger.started})"
        for path in cassettes
        if path.resolve() not in ledger.cassettes
    }
