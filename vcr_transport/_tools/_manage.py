"""The work of the management commands, on the files: finding a project's cassettes, the project's status, a
cassette's summary (``list``), what ``verify`` reports, the secrets ``scan`` finds, what ``delete`` and
``prune`` may remove and removing it, and converting vcrpy cassettes (``import``). Never the network. The CLI
prints what these return (``_render``).

Every path these report is shown as the user would type it (``shown_path``): relative to the working folder
when inside it, in the text and in ``--json`` alike.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._config import SKIPPED_FOLDERS, cassette_folders, resolve_mode
from .._core.format._format import MAX_NESTING, Finding
from .._core.rules._redaction import Redactor
from .._core.rules._scan import scan_document, scan_name
from .._display import visible
from .._exceptions import CassetteError, RedactionLimitError
from .._ledger import Ledger, LedgerProblem, read_ledger
from .._storage import (
    cassette_target,
    check_cassette,
    drop_owners,
    is_shared,
    not_a_cassette,
    read_cassette,
    read_outline,
)
from .._test_ids import without_credentials
from .._write_paths import enclosing_project, replace_file
from ._vcrpy import ImportProblem, NotACassette, import_vcrpy, plan_imports

__all__ = [
    "CassetteSummary",
    "ImportOutcome",
    "Problem",
    "ProjectStatus",
    "Removal",
    "ScanReport",
    "SecretFound",
    "UsageProblem",
    "Verification",
    "calls_of_removed_tests",
    "cassette_summary",
    "check_deletable",
    "find_cassettes",
    "git_setup",
    "import_files",
    "project_status",
    "prune_reasons",
    "remove_cassettes",
    "scan",
    "shown_path",
    "split_cassettes",
    "verify",
]


class UsageProblem(Exception):
    """A command that can't be carried out as given (a path that isn't there, a file that is no cassette, a
    partial test run to prune by...); the message says what to do."""


def shown_path(path: str | Path) -> str:
    """A path as the user would type it: relative to the working folder when inside it, else as it is."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


_FIELD = re.compile(r"\bfield '([^']+)'")


@dataclass
class Problem:
    """Something a command found wrong, as ``--json`` gives it: ``{path, line, field, message, fix}`` (the
    line and field are null when unknown; the fix is "" when there is none to give)."""

    path: str
    line: int | None
    message: str
    fix: str = ""
    field: str | None = None

    @classmethod
    def of(cls, finding: Finding | CassetteError) -> Problem:
        """A cassette's problem (``verify``'s findings, a CassetteError), its field read from the message."""
        message = finding.problem
        named = _FIELD.search(message)
        return cls(shown_path(finding.path), finding.line, message, finding.fix, named[1] if named else None)

    def __str__(self) -> str:
        """The problem as text to show: its path and message ``visible`` (they may come from the cassette)."""
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return visible(f"{where}: {self.message}") + (f"\n  fix: {visible(self.fix)}" if self.fix else "")

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "field": self.field, "message": self.message, "fix": self.fix}


def _named_files(
    paths: Sequence[str | Path], in_folder: Callable[[Path], Iterable[Path]], named: Callable[[Path], bool]
) -> list[Path]:
    """The paths named that are files (``named``), and the files ``in_folder`` finds under the folders named
    (not in virtualenvs, caches, .git), sorted; a UsageProblem for a path that is neither."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files += sorted(p for p in in_folder(path) if not SKIPPED_FOLDERS & set(p.parts))
        elif named(path):
            files.append(path)
        else:
            raise UsageProblem(f"{path}: no such file or folder")
    return files


def _cassettes_in(paths: Sequence[str | Path]) -> list[Path]:
    """The ``*.jsonl`` files named, and those under the folders named (not in virtualenvs, caches, .git)."""
    return _named_files(paths, lambda folder: folder.rglob("*.jsonl"), Path.exists)


def find_cassettes(named: Sequence[str | Path]) -> list[Path]:
    """The cassettes ``named`` (files, and those in folders: ``_cassettes_in``), or without a name those of
    the project the working folder is in (its ``cassette_dir``, else its folders named ``cassettes``)."""
    return _cassettes_in(named) if named else _cassettes_in(cassette_folders(enclosing_project()))


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
            "cassette_dirs": [shown_path(f) for f in self.folders],
            "cassettes": self.cassettes,
            "broken": self.broken,
            "calls": self.calls,
        }


def project_status(mode: str | None) -> ProjectStatus:
    """``status``: the mode ``mode`` (an explicit one, or None) resolves to, and the project's cassettes."""
    resolved = resolve_mode(mode)
    root = enclosing_project()
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
    problem: Problem | None = None
    format_version: Any = None
    calls: int = 0
    hosts: list[str] = field(default_factory=list)
    incomplete_calls: list[int] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        if self.problem is not None:
            return {
                "path": shown_path(self.path),
                "size": self.size,
                "readable": False,
                "problem": self.problem.as_json(),
            }
        return {
            "path": shown_path(self.path),
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
        return CassetteSummary(path, path.stat().st_size, problem=Problem.of(error))
    return CassetteSummary(
        path,
        path.stat().st_size,
        format_version=cassette.header.get("format_version"),
        calls=len(cassette.calls),
        hosts=sorted({urlsplit(call.url).netloc for call in cassette.calls}),
        incomplete_calls=[call.index for call in cassette.calls if not call.complete and not call.stopped_on_purpose],
    )


# --- verify ---------------------------------------------------------------------------------------------


@dataclass
class Verification:
    """What ``verify`` found: problems (each a cassette's line and what is wrong) and notes on calls that
    were recorded incomplete (problems too when ``strict``)."""

    cassettes: int
    problems: list[Problem]
    notes: list[Problem]
    with_problems: int  # cassettes with at least one problem

    def as_json(self) -> dict[str, Any]:
        return {
            "cassettes": self.cassettes,
            "problems": [problem.as_json() for problem in self.problems],
            "incomplete": [note.as_json() for note in self.notes],
        }


# A call ``verify --allow-early-stop`` lets end closed_early: a cassette (a path or a glob) and one call of it
# (None: any).
EarlyStopAllowance = tuple[str, int | None]


def early_stop_allowance(text: str) -> EarlyStopAllowance:
    """``CASSETTE[:CALL]`` as ``verify --allow-early-stop`` takes it: a cassette path or glob, and a call index."""
    cassette, _, call = text.rpartition(":")
    if cassette and call.isdigit():
        return cassette, int(call)
    return text, None


def _names(pattern: str, path: Path) -> bool:
    """Whether ``pattern`` (a path, or a glob of paths as typed from the working folder) names ``path``."""
    if Path(pattern).resolve() == path.resolve():
        return True
    return fnmatch.fnmatchcase(shown_path(path), pattern) or fnmatch.fnmatchcase(str(path), pattern)


def _findings(
    path: Path, strict: bool, allowed: Sequence[EarlyStopAllowance] = ()
) -> tuple[list[Problem], list[Problem]]:
    """(problems, notes) of one cassette: a call recorded incomplete is a note, or with ``strict`` a problem. A
    call recorded as an intended early stop is neither (``_format.problems``), nor one ``allowed`` names that
    ended closed_early (an error stays one)."""
    findings = [finding for finding in check_cassette(path) if not _allowed_early_stop(finding, path, allowed)]
    if strict:
        return [Problem.of(f) for f in findings], []
    return [Problem.of(f) for f in findings if not f.incomplete], [Problem.of(f) for f in findings if f.incomplete]


def _allowed_early_stop(finding: Finding, path: Path, allowed: Sequence[EarlyStopAllowance]) -> bool:
    """Whether ``finding`` is a call of ``path`` that ended closed_early and one of ``allowed`` names."""
    return finding.outcome == "closed_early" and any(
        (call is None or call == finding.call) and _names(pattern, path) for pattern, call in allowed
    )


def verify(
    named: Sequence[str],
    *,
    strict: bool,
    progress: Callable[[int, int], None] | None = None,
    allow_early_stop: Sequence[str] = (),
) -> Verification:
    """``verify`` of the cassettes ``named`` (files and folders), or of the project's when none is named. A
    named folder without a cassette is a problem. ``progress(done, total)`` is called after each cassette.
    ``allow_early_stop``: ``CASSETTE[:CALL]``s whose calls may end closed_early (``early_stop_allowance``); one
    that names no cassette verified is a UsageProblem (a typo would let nothing through, silently)."""
    paths = find_cassettes(named)
    allowed = _allowances(allow_early_stop, paths)
    problems: list[Problem] = []
    notes: list[Problem] = []
    with_problems = 0
    for done, path in enumerate(paths, start=1):
        found, incomplete = _findings(path, strict, allowed)
        problems += found
        notes += incomplete
        with_problems += bool(found)
        if progress is not None:
            progress(done, len(paths))
    problems += [Problem(shown_path(folder), None, "no cassette (*.jsonl) in this folder") for folder in _empty(named)]
    return Verification(len(paths), problems, notes, with_problems)


def _allowances(allow_early_stop: Sequence[str], paths: Sequence[Path]) -> list[EarlyStopAllowance]:
    """Each ``--allow-early-stop`` read; a UsageProblem for one that names none of ``paths``."""
    allowed = [early_stop_allowance(text) for text in allow_early_stop]
    for text, (pattern, _) in zip(allow_early_stop, allowed, strict=True):
        if not any(_names(pattern, path) for path in paths):
            raise UsageProblem(f"--allow-early-stop {text}: names none of the {len(paths)} cassette(s) verified")
    return allowed


def _empty(named: Sequence[str]) -> list[str]:
    """The folders named that hold no cassette."""
    return [p for p in named if Path(p).is_dir() and not _cassettes_in([p])]


# --- scan -----------------------------------------------------------------------------------------------


def _masked(secret: str) -> str:
    """A secret as ``scan`` reports it: its first four characters and its length."""
    secret = secret.strip().strip('"')
    return (secret[:4] + "…" + f"({len(secret)} chars)") if len(secret) > 4 else "…"


def _depth(line: str) -> int:
    """How deeply the JSON arrays and objects of a line nest (brackets inside strings not counted)."""
    depth = deepest = 0
    in_string = escaped = False
    for character in line:
        if in_string:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == '"':
                in_string = False
        elif character == '"':
            in_string = True
        elif character in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif character in "]}":
            depth -= 1
    return deepest


def _too_deep(lines: list[str]) -> list[int]:
    """The numbers of the lines that nest deeper than a cassette line may (``MAX_NESTING``)."""
    return [
        number
        for number, line in enumerate(lines, start=1)
        if line.count("[") + line.count("{") > MAX_NESTING and _depth(line) > MAX_NESTING
    ]


NESTED_TOO_DEEP = "nested too deep to scan as JSON; its text was searched, its JSON values were not"
_DEEP_FIX = f"no cassette line nests deeper than {MAX_NESTING} levels: the file is damaged or not a cassette"


_BOMB_FIX = (
    "the recorder never writes a body it can't search: the file is damaged or hostile; re-record the call, "
    "or delete the cassette"
)


def _scan_file(path: Path, redactor: Redactor) -> tuple[list[tuple[int, str]], list[Problem]]:
    """(line, masked secret) for every secret in a file, by the redaction engine (``_core._scan``), and the
    lines that could not be scanned whole; nothing for a file that can't be read. A line nested too deep for
    the engine's JSON reading (it raises RecursionError) is searched as text and reported as a problem."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return [], []
    unsearched: list[tuple[int, str, str]] = []
    try:
        found = [(number, _masked(secret)) for number, secret in scan_document(redactor, text, unsearched)]
        return found, [
            Problem(shown_path(path), number, why, fix or _BOMB_FIX) for number, why, fix in dict.fromkeys(unsearched)
        ]
    except RecursionError:
        pass
    lines = text.splitlines(keepends=True)  # numbered as scan_document numbers them
    deep = _too_deep(lines)
    for number in deep:  # a line that does not start with "{" is searched as text, not read as JSON
        lines[number - 1] = " " + lines[number - 1]
    problems = [Problem(shown_path(path), number, NESTED_TOO_DEEP, _DEEP_FIX) for number in deep]
    try:
        found = [(number, _masked(secret)) for number, secret in scan_document(redactor, "".join(lines))]
    except RecursionError:  # deep somewhere this search can't tell: the file as a whole
        return [], [Problem(shown_path(path), None, "nested too deep to scan", _DEEP_FIX)]
    return found, problems


def _scan_name(path: Path, redactor: Redactor) -> tuple[list[tuple[int, str]], list[Problem]]:
    """(0, masked secret) for each secret in the file's name, or the problem that it was not searched."""
    try:
        return [(0, _masked(secret)) for secret in scan_name(redactor, path.name)], []
    except RedactionLimitError as error:
        return [], [Problem(shown_path(path), None, f"{error}: its name was not searched", RedactionLimitError.FIX)]


@dataclass
class SecretFound:
    path: Path
    line: int  # 0: in the file's name
    secret: str  # masked: its first four characters and its length

    def as_json(self) -> dict[str, Any]:
        problem = Problem(
            shown_path(self.path),
            self.line,
            f"secret-shaped value {self.secret}",
            "remove it (or re-record with the name added to redaction) and rotate the credential",
        )
        return problem.as_json() | {"secret": self.secret}


@dataclass
class ScanReport:
    files: list[Path]  # every file scanned
    hits: list[SecretFound]
    problems: list[Problem] = field(default_factory=list)  # lines that could not be scanned whole


def _files_in(named: Sequence[str]) -> list[Path]:
    """The files named, and every file under the folders named (not in virtualenvs, caches, .git)."""
    return _named_files(named, lambda folder: (p for p in folder.rglob("*") if p.is_file()), Path.is_file)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def scan(
    named: Sequence[str],
    names: Sequence[str],
    patterns: Sequence[str],
    progress: Callable[[int, int, int, int], None] | None = None,
) -> ScanReport:
    """``scan`` of the files named and every file under the folders named, with the redaction rules plus
    the secret ``names`` and regex ``patterns`` given. ``progress(files done, files, bytes done, bytes)`` is
    called after each file."""
    redactor = Redactor(names, patterns)
    files = _files_in(named)
    sizes = [_size(path) for path in files]
    total, done = sum(sizes), 0
    report = ScanReport(files, [])
    for number, (path, size) in enumerate(zip(files, sizes, strict=True), start=1):
        in_name, name_problems = _scan_name(path, redactor)
        found, problems = _scan_file(path, redactor)
        report.hits += [SecretFound(path, line, secret) for line, secret in [*in_name, *found]]
        report.problems += [*name_problems, *problems]
        done += size
        if progress is not None:
            progress(number, len(files), done, total)
    return report


# --- delete and prune -----------------------------------------------------------------------------------


def check_deletable(paths: Sequence[Path]) -> None:
    """Refuses (``UsageProblem``) unless every path is a cassette: delete and prune remove nothing else."""
    refused = {path: problem for path in paths if (problem := not_a_cassette(path) or _leads_out(path))}
    if refused:
        raise UsageProblem(
            "refused, nothing was deleted: "
            + "; ".join(f"{path} is not a cassette ({problem})" for path, problem in refused.items())
            + ". delete and prune only remove vcr_transport cassettes (a file whose first line is a cassette header)"
        )


def _leads_out(path: Path) -> str | None:
    """Why removing ``path`` would remove a file out of the project through a folder link, or None."""
    try:
        cassette_target(path)
    except CassetteError as error:
        return error.problem
    return None


@dataclass
class Removal:
    """What ``delete`` or ``prune`` removed (``deleted``) or would remove (a dry run), each with why, and
    the files ``prune`` skipped as no cassettes."""

    deleted: bool
    removed: list[tuple[Path, str]]
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    # prune: the calls of tests the last run no longer had, in the shared cassettes it used, as (cassette,
    # {test: calls}); removed when ``deleted``, else what a real run would remove
    dropped_calls: list[tuple[Path, dict[str, int]]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "deleted": self.deleted,
            "cassettes": [{"path": shown_path(path), "why": why} for path, why in self.removed],
            "skipped": [{"path": shown_path(path), "why": why} for path, why in self.skipped],
            "calls_of_removed_tests": [
                {"path": shown_path(path), "test": test, "calls": calls}
                for path, tests in self.dropped_calls
                for test, calls in tests.items()
            ],
        }


def remove_cassettes(
    why: dict[Path, str],
    *,
    yes: bool,
    skipped: Sequence[tuple[Path, str]] = (),
    calls_of: dict[Path, dict[str, int]] | None = None,
) -> Removal:
    """Delete the cassettes ``why`` names (``yes``), or say which would be deleted; refused as a whole
    (``check_deletable``) unless every one is a cassette. ``calls_of``: the shared cassettes whose calls of
    these tests go too (``prune``)."""
    paths = list(why)
    check_deletable(paths)
    dropped = sorted((calls_of or {}).items())
    if yes:
        for path in paths:
            path.unlink()
        for path, tests in dropped:
            drop_owners(path, set(tests))
    return Removal(yes, [(path, why[path]) for path in paths], list(skipped), dropped)


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
        ledger = read_ledger(enclosing_project())
    except LedgerProblem as problem:
        raise UsageProblem(str(problem)) from None
    if not ledger.complete and not force:
        raise _partial_run(ledger)
    return {
        path: f"no test used it in the last run ({ledger.started})"
        for path in cassettes
        if path.resolve() not in ledger.cassettes
    }


def _partial_run(ledger: Ledger) -> UsageProblem:
    """Why ``prune`` refuses to go by a partial run of the suite."""
    return UsageProblem(
        f"the last test run ({ledger.command + ', ' if ledger.command else ''}started {ledger.started}) was "
        f"partial: {ledger.why_incomplete}. "
        "Its unused cassettes may belong to tests it did not run: run the whole suite, then prune "
        "(or add --force to prune by this run anyway)"
    )


def calls_of_removed_tests(cassettes: Sequence[Path], *, force: bool) -> dict[Path, dict[str, int]]:
    """The shared cassettes (``"shared": true``) the last run used that hold calls of tests that are gone:
    for each, {test: its calls}. A call's test (a pytest node id) is gone when the run collected its file
    and no test of that name named the cassette or opened it (renamed or removed), or when its file no
    longer exists; a test in a file the run did not collect (outside its test paths) stays, and so does
    an owner that is no node id (``shared_as``). Read from the ledger, as ``prune_reasons`` reads it (a
    partial run was refused there, unless ``force``); nothing for a ledger written before it kept the tests
    (run the suite again)."""
    root = enclosing_project()
    ledger = read_ledger(root)
    if ledger.owners is None or (not ledger.complete and not force):
        return {}
    found: dict[Path, dict[str, int]] = {}
    for path in cassettes:
        resolved = path.resolve()
        if resolved in ledger.cassettes and is_shared(path):
            gone = _calls_of_gone_tests(path, ledger.owners.get(resolved, set()), ledger, root)
            if gone:
                found[path] = gone
    return found


def _calls_of_gone_tests(path: Path, kept: set[str], ledger: Ledger, root: Path) -> dict[str, int]:
    """{test: its calls} of the tests gone (``_gone``) from a shared cassette; none when every call's test is
    gone (the whole cassette is ``prune``'s) or the cassette can't be read."""
    try:
        calls = read_outline(path).calls
    except CassetteError:
        return {}  # verify names what is wrong with it; prune changes no cassette it can't read
    gone = Counter(call.owner for call in calls if _gone(call.owner, kept, ledger, root))
    return dict(sorted(gone.items())) if gone and sum(gone.values()) < len(calls) else {}


def _gone(owner: str, kept: set[str], ledger: Ledger, root: Path) -> bool:
    """Whether a call's test is gone: a node id (``file::name``) the run did not keep, in a file it collected
    or one that no longer exists."""
    if not owner or owner in kept or "::" not in owner or without_credentials(owner) in kept:
        return False
    module = owner.split("::", 1)[0]
    return module in ledger.files or not (root / module).exists()


# --- import ---------------------------------------------------------------------------------------------


@dataclass
class ImportOutcome:
    """What became of one YAML file: converted (``calls``), skipped as no vcrpy cassette (``skipped``: why),
    or refused (``refused``: the CassetteError that says why)."""

    source: Path
    target: Path
    calls: int = 0
    skipped: str | None = None
    refused: CassetteError | None = None
    compat_only: dict[str, int] = field(default_factory=dict)  # calls by client: replayed in compat mode only
    unserved: dict[str, int] = field(default_factory=dict)  # calls by client: never replayed

    def as_json(self) -> dict[str, Any]:
        if self.refused is not None:
            return {
                "source": shown_path(self.source),
                "outcome": "refused",
                "problem": Problem.of(self.refused).as_json(),
            }
        if self.skipped is not None:
            return {"source": shown_path(self.source), "outcome": "skipped", "why": self.skipped}
        return {
            "source": shown_path(self.source),
            "outcome": "imported",
            "target": shown_path(self.target),
            "calls": self.calls,
            "compat_only_clients": self.compat_only,
            "unserved_clients": self.unserved,
        }


def import_files(
    files: Sequence[str], out: str | None, names: Sequence[str] = (), patterns: Sequence[str] = ()
) -> Iterator[ImportOutcome]:
    """Convert every YAML file named (folders: searched recursively), one outcome per file as it is done,
    redacting by the default rules plus the secret ``names`` and regex ``patterns`` given. A
    mistake of the command itself (a missing input, two inputs for one output, no PyYAML) is a UsageProblem,
    before anything is written."""
    try:
        plan = plan_imports(files, out)
    except ImportProblem as problem:
        raise UsageProblem(str(problem)) from None
    for source, target in plan:
        try:
            imported = import_vcrpy(source, target, Redactor(names, patterns))
            yield ImportOutcome(
                source, target, imported.calls, compat_only=imported.compat_only, unserved=imported.unserved
            )
        except ImportProblem as problem:
            raise UsageProblem(str(problem)) from None
        except NotACassette as other:
            yield ImportOutcome(source, target, skipped=str(other))
        except CassetteError as error:
            yield ImportOutcome(source, target, refused=error)


# --- git-setup ------------------------------------------------------------------------------------------

GIT_ATTRIBUTES_LINE = "**/cassettes/**/*.jsonl diff=vcr"


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False, timeout=60)
    except FileNotFoundError:
        raise UsageProblem("git is not installed (or not on PATH)") from None
    if done.returncode:
        raise UsageProblem(f"git {' '.join(args)}: {done.stderr.strip() or 'failed'}")
    return done.stdout.strip()


def git_setup(root: Path, python: str, *, dry_run: bool = False) -> list[str]:
    """Set up git's diff driver for cassettes in the clone ``root`` is in: the ``.gitattributes`` line, and
    ``diff.vcr.textconv`` as ``python``'s absolute path running ``-m vcr_transport show --textconv`` (so no
    virtualenv needs to be active). Not ``cachetextconv``: git keeps that cache in notes, which need a
    committer identity, and ``git diff`` fails where none is set (a CI container). What was done (or,
    ``dry_run``, what would be), one line each."""
    top = Path(_git(root, "rev-parse", "--show-toplevel"))
    command = f"{shlex.quote(str(Path(python).absolute()))} -m vcr_transport show --textconv"
    attributes = top / ".gitattributes"
    existing = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    would = "would " if dry_run else ""
    said: list[str] = []
    if GIT_ATTRIBUTES_LINE in (line.strip() for line in existing.splitlines()):
        said.append(f"{shown_path(attributes)} already has '{GIT_ATTRIBUTES_LINE}'")
    else:
        if not dry_run:
            separator = "\n" if existing and not existing.endswith("\n") else ""
            replace_file(attributes, (existing + separator + GIT_ATTRIBUTES_LINE + "\n").encode("utf-8"), root=top)
        said.append(f"{would}add '{GIT_ATTRIBUTES_LINE}' to {shown_path(attributes)}")
    if not dry_run:
        _git(top, "config", "diff.vcr.textconv", command)
    said.append(f"{would}set diff.vcr.textconv = {command} in this clone")
    said.append(
        "git diff and git log -p now show cassettes one field per line; git diff --no-textconv shows the raw lines"
    )
    said.append(
        "without this setting (another clone), git shows the raw JSONL lines; with a path that no longer runs "
        "(a removed virtualenv), git diff fails: run vcr-transport git-setup again"
    )
    return said
