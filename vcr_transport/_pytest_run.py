"""The pytest run's bookkeeping, for the usage ledger and the end-of-run summary: every cassette opened through
any entry point and what became of it (``PluginRun``, published for the run's length), the tests that claimed
each, and whether the run collected the whole suite (what the collection left out, a selection, an early stop, a
crashed xdist worker: ``_CollectionWatcher``, ``_XdistController``). The thin plugin (``_pytest_plugin``) loads
it when the run is configured; it imports the ledger (``_ledger``, a leaf) only to write one (at the start, to
mark the run started in a ledger that exists, and at the end), the test ids' redaction (``_test_ids``) only for a
test that names a cassette, and nothing of the machinery. The run's first cassette (a marked test collected, or
one opened through any entry point) registers the hooks around each test's body and reports
(``_pytest_cassette.CassetteHooks``): a run that uses none never calls them.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._pytest_keys import MARKER, RUN, SHARED, compat_active
from ._run import PytestRun, ledger_path

if TYPE_CHECKING:
    from ._ledger import Ledger

__all__ = [
    "PluginRun",
    "claim_cassettes",
    "configure",
    "deselected",
    "session_finished",
    "session_started",
    "terminal_summary",
]

_LEDGER_UNWRITTEN = pytest.StashKey[str]()  # why the ledger could not be written (a read-only project): said once
# Why the run is partial: what it could not collect or was told to leave out, an early stop, a crashed worker.
# Each process notes what it sees (an xdist worker collects, deselects and skips modules); a worker's notes
# reach the controller with its results, and the controller, which writes the ledger, decides.
_INCOMPLETE = pytest.StashKey[list[str]]()
# When the run started and its id: the ledger is made from them when the run writes one (``_ledger``).
_STARTED = pytest.StashKey[tuple[str, float]]()
_WORKER_DATA = "vcr_transport_run"
_WORKER_INCOMPLETE = "vcr_transport_incomplete"


def configure(config: pytest.Config) -> None:
    """The run's bookkeeping, once the project's settings are known to be valid: an unknown key in
    ``[tool.vcr_transport]`` (a typo: ``redact_name``) stops the run before it starts."""
    from ._config import find_pyproject, read_settings

    try:
        read_settings(find_pyproject())
    except Exception as error:  # the exception tree is loaded by a wrong setting only
        from ._exceptions import VcrTransportError

        if isinstance(error, VcrTransportError):
            raise pytest.UsageError(str(error)) from None
        raise
    config.stash[RUN] = PluginRun(config.getoption("vcr_mode"), config.rootpath, partial(_cassettes_used, config))
    config.stash[_INCOMPLETE] = []
    config.pluginmanager.register(_CollectionWatcher(config), "vcr_transport_collection")
    if _distributes(config) and not _is_worker(config):
        config.pluginmanager.register(_XdistController(config), "vcr_transport_xdist")


def _cassettes_used(config: pytest.Config) -> None:
    from ._pytest_cassette import CassetteHooks

    config.pluginmanager.register(CassetteHooks(), "vcr_transport_cassettes")


class PluginRun(PytestRun):
    """This process's part of the run: every cassette opened, through any entry point, and what became of
    each (for the ledger and the summary)."""

    def __init__(
        self, vcr_mode: str | None, root: Path | None = None, first_cassette: Callable[[], object] | None = None
    ) -> None:
        super().__init__(vcr_mode, root)
        self._lock = threading.Lock()
        self._first_cassette: Callable[[], object] | None = first_cassette  # called once, as the first is opened
        self.used: set[Path] = set()
        self.owners: dict[Path, set[str]] = {}  # the tests that claimed or opened each cassette, by node id
        self.files: set[str] = set()  # the test files collected, as node ids name them
        self.outcomes: dict[Path, str] = {}
        self.stale: dict[Path, tuple[float, float, str]] = {}  # (age in days, max_age, the test that replayed it)
        self.compared = 0  # mode check: live answers compared with the recorded calls their requests stand for
        self.not_compared: list[tuple[Path, str]] = []  # mode check: (cassette, which request and why)
        self.current_test = ""
        self._folders: dict[Path, Path] = {}  # an absolute folder of cassettes, resolved (``resolved``)
        self._files: dict[str, Path] = {}  # a cassette not a link, resolved (``resolved``), by its path as given

    def resolved(self, path: Path) -> Path:
        """``path.resolve()``, each absolute folder resolved once in the run (every test of a module has its
        cassette in the same one): the file itself is resolved only when it is a link. A cassette found no link
        is remembered (each is asked for at collection, as it opens and as it closes)."""
        key = str(path)
        known = self._files.get(key)
        if known is not None:
            return known
        folder, name = path.parent, path.name
        if not path.is_absolute() or name in ("", ".", "..") or path.is_symlink():
            return path.resolve()
        found = self._folders.get(folder)
        if found is None:
            found = self._folders[folder] = folder.resolve()
        resolved = self._files[key] = found / name
        return resolved

    def cassette_opened(self, path: Path, mode: str, owner: str = "") -> None:
        resolved = self.resolved(path)
        with self._lock:
            if self._first_cassette is not None:
                first, self._first_cassette = self._first_cassette, None
                first()
            self.used.add(resolved)
            if owner:
                self.owners.setdefault(resolved, set()).add(owner)

    def cassette_closed(self, path: Path, outcome: str) -> None:
        resolved = self.resolved(path)
        with self._lock:
            self.outcomes[resolved] = outcome

    def cassette_checked(self, path: Path, compared: int, not_compared: list[str]) -> None:
        resolved = self.resolved(path)
        with self._lock:
            self.compared += compared
            self.not_compared += [(resolved, why) for why in not_compared]

    def cassette_stale(self, path: Path, age_days: float, max_age: float) -> None:
        resolved = self.resolved(path)
        with self._lock:
            from ._test_ids import without_credentials

            self.stale.setdefault(resolved, (age_days, max_age, without_credentials(self.current_test)))

    def as_data(self) -> dict[str, Any]:
        return {
            "used": sorted(map(str, self.used)),
            "owners": {str(k): sorted(v) for k, v in self.owners.items()},
            "files": sorted(self.files),
            "outcomes": {str(k): v for k, v in self.outcomes.items()},
            "stale": {str(k): list(v) for k, v in self.stale.items()},
            "compared": self.compared,
            "not_compared": [[str(path), why] for path, why in self.not_compared],
        }

    def absorb(self, data: dict[str, Any]) -> None:
        with self._lock:
            self.used.update(Path(p) for p in data["used"])
            for path, owners in data.get("owners", {}).items():
                self.owners.setdefault(Path(path), set()).update(owners)
            self.files.update(data.get("files", ()))
            self.outcomes.update({Path(k): v for k, v in data["outcomes"].items()})
            for path, (age, max_age, test) in data.get("stale", {}).items():
                self.stale.setdefault(Path(path), (age, max_age, test))
            self.compared += data.get("compared", 0)
            self.not_compared += [(Path(path), why) for path, why in data.get("not_compared", ())]


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _distributes(config: pytest.Config) -> bool:
    """Whether xdist sends this run's tests to workers (``-n 2``, ``--dist``, ``--tx``): xdist's own test, on
    its options (an installed xdist with ``-n 0``, or none, leaves the run in this process)."""
    return config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))


def _note_incomplete(config: pytest.Config, why: str) -> None:
    config.stash[_INCOMPLETE].append(why)


class _CollectionWatcher:
    """What the collection left out makes the run partial: a module that failed to collect or was skipped while
    collected (``pytest.importorskip`` at module level), a path ``--ignore``, ``--ignore-glob`` or a conftest's
    ``collect_ignore`` / ``collect_ignore_glob`` left out that could hold tests. (A collect report carries no
    config, so the hooks live on an object that holds it; under xdist these run on the workers, which collect.)"""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            _note_incomplete(self.config, f"{report.nodeid or 'the collection'} failed to collect")
        elif report.skipped and report.nodeid:
            _note_incomplete(self.config, f"{report.nodeid} was skipped at collection ({_skip_reason(report)})")

    @pytest.hookimpl(wrapper=True)
    def pytest_ignore_collect(self, collection_path: Path) -> Generator[None, bool | None, bool | None]:
        ignored = yield
        if ignored:
            how = _why_left_out(self.config, collection_path)
            if how and _could_hold_tests(self.config, collection_path):
                _note_incomplete(self.config, f"{_shown(self.config, collection_path)} was left out ({how})")
        return ignored


def _skip_reason(report: pytest.CollectReport) -> str:
    """The message of a collection-time skip: ``Skipped: could not import 'anthropic'...`` without the prefix."""
    longrepr = report.longrepr
    text = str(longrepr[2]) if isinstance(longrepr, tuple | list) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ").splitlines()[0] if text.strip() else "skipped"


def _why_left_out(config: pytest.Config, path: Path) -> str:
    """Which setting left ``path`` out of the collection ("" for pytest's own: ``__pycache__``, virtualenvs,
    ``norecursedirs``, which hold no tests of the suite)."""
    by_options = _left_out_by_options(config, path)
    if by_options:
        return by_options
    plugins = config.pluginmanager.get_plugins()
    return next((why for plugin in plugins if (why := _left_out_by_conftest(config, path, plugin))), "")


def _left_out_by_options(config: pytest.Config, path: Path) -> str:
    """The ``--ignore`` or ``--ignore-glob`` that left ``path`` out, if one did."""
    for given in config.getoption("ignore", None) or ():
        if path == Path(os.path.abspath(given)):
            return f"--ignore={given}"
    for pattern in config.getoption("ignore_glob", None) or ():
        if fnmatch.fnmatch(str(path), os.path.abspath(pattern)):
            return f"--ignore-glob={pattern}"
    return ""


def _left_out_by_conftest(config: pytest.Config, path: Path, plugin: object) -> str:
    """The ``collect_ignore`` or ``collect_ignore_glob`` of ``plugin`` that left ``path`` out, when ``plugin``
    is a conftest.py in a folder above ``path``."""
    file = getattr(plugin, "__file__", None)
    if not isinstance(file, str) or Path(file).name != "conftest.py" or Path(file).parent not in path.parents:
        return ""
    folder = Path(file).parent
    for name in getattr(plugin, "collect_ignore", None) or ():
        if path == Path(os.path.abspath(folder / name)):
            return f"collect_ignore in {_shown(config, Path(file))}"
    for pattern in getattr(plugin, "collect_ignore_glob", None) or ():
        if fnmatch.fnmatch(str(path), os.path.abspath(folder / pattern)):
            return f"collect_ignore_glob in {_shown(config, Path(file))}"
    return ""


def _could_hold_tests(config: pytest.Config, path: Path) -> bool:
    """Whether a path left out is a test module (``python_files``) or a folder holding one: ``collect_ignore =
    ["setup.py"]`` leaves out no test."""
    return _tests_outside(config, path, []) if path.is_dir() else _is_test_module(config, path.name)


def _is_test_module(config: pytest.Config, name: str) -> bool:
    return name.endswith(".py") and any(fnmatch.fnmatch(name, pattern) for pattern in config.getini("python_files"))


def _shown(config: pytest.Config, path: Path) -> str:
    """A path as the messages show it: relative to the rootdir where it can be."""
    try:
        return str(path.relative_to(config.rootpath))
    except ValueError:
        return str(path)


class _XdistController:
    """xdist's controller: gathers what each worker's run saw, and why it was partial; a worker that crashed
    makes the run partial."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {})
        if error is not None or _WORKER_DATA not in output:
            _note_incomplete(self.config, f"a worker ({getattr(node, 'gateway', node)}) crashed")
            return
        self.config.stash[RUN].absorb(output[_WORKER_DATA])
        self.config.stash[_INCOMPLETE].extend(output.get(_WORKER_INCOMPLETE, ()))


def _write_ledger(config: pytest.Config, ledger: Ledger) -> None:
    """Write the ledger, unless it could not be written before in this run. A project where it can't be (a
    read-only checkout, a ``.vcr_transport`` linked out of the project) is no reason to stop a run that
    needs it for nothing but ``prune``: the summary says why in one line (as pytest's cache does)."""
    from ._exceptions import RefusedWrite
    from ._ledger import write_ledger

    if _LEDGER_UNWRITTEN in config.stash:
        return
    try:
        write_ledger(config.rootpath, ledger)
    except RefusedWrite as refused:
        config.stash[_LEDGER_UNWRITTEN] = str(refused).splitlines()[0]
    except OSError as error:
        config.stash[_LEDGER_UNWRITTEN] = f"{ledger_path(config.rootpath)}: {error.strerror or error}"


def _command(config: pytest.Config) -> str:
    """The run's command line, as the ledger and ``prune`` name it."""
    return shlex.join(["pytest", *config.invocation_params.args])


def _part_of_suite(config: pytest.Config) -> str:
    """Why the command line collected only part of the suite ("" when it named all of it): a test id, a file,
    a folder below the test paths (``testpaths``, else the rootdir), or a start in a subfolder with no path."""
    source = config.args_source
    if source == pytest.Config.ArgsSource.TESTPATHS:
        return ""
    roots = _suite_roots(config)
    given: list[Path] = []
    for argument in config.args:
        if "::" in argument:
            return f"the run was given {argument}, one test of the suite"
        path = Path(argument)
        given.append((path if path.is_absolute() else config.invocation_params.dir / path).resolve())
    uncovered = [root for root in roots if not any(p == root or p in root.parents for p in given)]
    if not any(_tests_outside(config, root, given) for root in uncovered):
        return ""  # what the paths leave out holds no test module (the suite is all in the folder given)
    suite = ", ".join(_shown(config, root) or "." for root in roots)
    if source == pytest.Config.ArgsSource.INVOCATION_DIR:
        where = _shown(config, config.invocation_params.dir.resolve())
        return (
            f"the run started in {where} with no test path given, so it collected only that folder of the suite "
            f"({suite})"
        )
    return f"the run was given {' '.join(config.args)}, only part of the suite ({suite})"


def _tests_outside(config: pytest.Config, root: Path, given: list[Path]) -> bool:
    """Whether ``root`` holds a test module (``python_files``) outside the paths ``given``, in a folder pytest
    would collect (not ``norecursedirs``, virtualenvs or caches). Walked only for a run given part of a root."""
    from ._config import SKIPPED_FOLDERS

    skipped = config.getini("norecursedirs")
    inside = set(given)
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [
            name
            for name in subfolders
            if name not in SKIPPED_FOLDERS
            and not any(fnmatch.fnmatch(name, pattern) for pattern in skipped)
            and Path(folder, name) not in inside
        ]
        if any(_is_test_module(config, name) and Path(folder, name) not in inside for name in files):
            return True
    return False


def _suite_roots(config: pytest.Config) -> list[Path]:
    """Where the whole suite is: the ``testpaths`` (globs expanded), else the rootdir."""
    root = config.rootpath.resolve()
    found = [path.resolve() for entry in config.getini("testpaths") for path in sorted(root.glob(entry))]
    return [path for path in found if path.exists()] or [root]


def _last_failed_only(config: pytest.Config) -> str:
    """``--lf`` with failures on record runs only those (and skips the files without any, unreported)."""
    cache = getattr(config, "cache", None)
    if config.getoption("lf", False) and cache is not None and cache.get("cache/lastfailed", {}):
        return "--lf ran only the tests that failed last time"
    return ""


def _selection(config: pytest.Config) -> str:
    """The options that deselect tests, as given."""
    given = [
        *([f"-k {shlex.quote(config.option.keyword)}"] if getattr(config.option, "keyword", "") else []),
        *([f"-m {shlex.quote(config.option.markexpr)}"] if getattr(config.option, "markexpr", "") else []),
        *(f"--deselect {item}" for item in config.getoption("deselect", None) or ()),
        *(["--lf"] if config.getoption("lf", False) else []),
        *(["--sw"] if config.getoption("stepwise", False) else []),
    ]
    return ", ".join(given) or "by a plugin"


_SUMMARY = (
    ("replayed", "{} replayed"),
    ("recorded", "{} recorded"),
    ("re-recorded", "{} re-recorded"),
    ("recorded unchanged", "{} recorded unchanged"),
    ("failed, not saved", "{} not saved as the test failed (keep_failures=True keeps them)"),
    ("not saved", "{} not saved (no call, or calls a cassette shouldn't keep; keep_failures=True keeps those)"),
    ("mismatched", "{} with a replay mismatch"),
    ("checked", "{} checked live, same shape"),
    ("shape changed", "{} with a changed shape (mode check)"),
    ("unplayed", "{} left with unplayed calls"),
    ("unplayed, not checked", "{} with unplayed calls, which are not checked (vcr_unplayed = ignore)"),
    ("missing", "{} missing"),
    ("refused", "{} not recorded under CI"),
    ("unreadable", "{} unreadable"),
    ("stale", "{} failed as stale (older than max_age)"),
)
MAX_STALE_SHOWN = 5
MAX_NOT_COMPARED_SHOWN = 5


def terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """What became of the run's cassettes, in one line, and what mode check and ``max_age`` found."""
    if _is_worker(config):
        return
    _say_ledger_unwritten(terminalreporter, config)
    run = config.stash[RUN]
    counts = Counter(outcome for outcome in run.outcomes.values() if outcome not in ("off", "not needed"))
    if (not counts and not run.used) or config.option.no_summary:
        return
    terminalreporter.write_sep("-", "vcr_transport")
    terminalreporter.write_line("cassettes: " + (", ".join(_outcome_phrases(config, run, counts)) or "none opened"))
    for line in [*_check_lines(config, run), *_stale_lines(config, run)]:
        terminalreporter.write_line(line)


def _outcome_phrases(config: pytest.Config, run: PluginRun, counts: Counter[str]) -> list[str]:
    """What became of the run's cassettes, a phrase per outcome seen, then the cassettes never used."""
    return [phrase.format(counts[outcome]) for outcome, phrase in _SUMMARY if counts[outcome]] + _never_used(
        config, run
    )


def _say_ledger_unwritten(terminalreporter: Any, config: pytest.Config) -> None:
    """The one line saying the ledger could not be written this run, and why (``_write_ledger``)."""
    if _LEDGER_UNWRITTEN in config.stash:
        terminalreporter.write_line(
            f"vcr_transport: the usage ledger was not written ({config.stash[_LEDGER_UNWRITTEN]}); "
            "prune needs a run that wrote it"
        )


def _check_lines(config: pytest.Config, run: PluginRun) -> list[str]:
    """Mode check: how many live answers were compared, and which requests' answers were not (and why)."""
    if not (run.compared or run.not_compared):
        return []
    from ._display import visible  # each why quotes a URL and may quote a cassette's field name

    line = f"live answers (mode check): {run.compared} compared with their recorded calls"
    if not run.not_compared:
        return [line]
    lines = [f"{line}, {len(run.not_compared)} not compared (not drift):"]
    for path, why in run.not_compared[:MAX_NOT_COMPARED_SHOWN]:
        lines.append(visible(f"  {_shown(config, path)}: {why}"))
    if len(run.not_compared) > MAX_NOT_COMPARED_SHOWN:
        lines.append(f"  ... and {len(run.not_compared) - MAX_NOT_COMPARED_SHOWN} more")
    return lines


def _stale_lines(config: pytest.Config, run: PluginRun) -> list[str]:
    """The run's stale cassettes (older than ``max_age``, replayed all the same), each once, and the command
    that re-records them: the tests that replayed them, in record mode. One re-recorded on a miss is fresh."""
    stale = sorted(
        (path, found) for path, found in run.stale.items() if run.outcomes.get(path) not in ("re-recorded", "stale")
    )
    if not stale:
        return []
    lines = [f"{len(stale)} stale (recorded more than max_age days ago), replayed all the same:"]
    for path, (age, max_age, _) in stale[:MAX_STALE_SHOWN]:
        lines.append(f"  {_shown(config, path)}: {int(age)} days old (max_age {max_age:g})")
    if len(stale) > MAX_STALE_SHOWN:
        lines.append(f"  ... and {len(stale) - MAX_STALE_SHOWN} more")
    tests = dict.fromkeys(test for _, (_, _, test) in stale if test)
    if tests:
        lines.append("re-record them: " + shlex.join(["pytest", "--vcr-mode=record", *tests]))
    return lines


def _never_used(config: pytest.Config, run: PluginRun) -> list[str]:
    """The summary's part on the project's cassettes that no test opened (not counted in a partial run)."""
    if config.stash[_INCOMPLETE]:
        return ["never used: not counted in a partial run"]
    from ._config import cassette_folders

    known = {run.resolved(p) for folder in cassette_folders(config.rootpath) for p in folder.rglob("*.jsonl")}
    unused = known - run.used
    return [f"{len(unused)} never used ('vcr-transport prune' lists them)"] if unused else []


def session_started(session: pytest.Session) -> None:
    """The run's id and start; a project with a ledger has it rewritten now (``complete: false``), so that a run
    that dies leaves "incomplete", not an older run. Why the run is partial is worked out when it ends, and only
    for a run that writes a ledger (``--lf`` now: its failures on record are rewritten as the run ends)."""
    config = session.config
    if _is_worker(config):
        return
    why = _last_failed_only(config)
    if why:
        _note_incomplete(config, why)
    config.stash[_STARTED] = (os.urandom(16).hex(), time.time())
    if _ledger_file(config).exists():
        _write_ledger(config, _new_ledger(config))


def _ledger_file(config: pytest.Config) -> Path:
    return ledger_path(config.rootpath)


def _new_ledger(config: pytest.Config) -> Ledger:
    from ._ledger import new_ledger

    run_id, started = config.stash[_STARTED]
    return new_ledger(run_id, command=_command(config), started=started)


def deselected(items: list[pytest.Item]) -> None:
    if items:
        config = items[0].config
        _note_incomplete(config, f"{len(items)} test(s) were deselected ({_selection(config)})")


def claim_cassettes(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every collected test's cassette, claimed for the ledger even when the test is skipped (``prune`` keeps
    it); a path several marked tests name is shared."""
    run = config.stash[RUN]
    claims: Counter[Path] = Counter()
    run.files.update(item.nodeid.split("::", 1)[0] for item in items)
    compat = compat_active(config)
    for item in items:
        marker = item.get_closest_marker(MARKER)
        if marker is not None:
            from ._pytest_cassette import marker_cassette_path
            from ._test_ids import without_credentials

            path = marker_cassette_path(item, marker.kwargs.get("path"))
            run.cassette_opened(path, "claimed", without_credentials(item.nodeid))
            claims[run.resolved(path)] += 1
        if compat:
            _claim_compat(run, item)
    config.stash[SHARED] = {path for path, count in claims.items() if count > 1}


def _claim_compat(run: PluginRun, item: pytest.Item) -> None:
    """A pytest-recording test's cassette, its own (never shared)."""
    from ._compat import claimed_cassette
    from ._test_ids import without_credentials

    claimed = claimed_cassette(item)
    if claimed is not None:
        run.cassette_opened(claimed, "claimed", without_credentials(item.nodeid))


def session_finished(session: pytest.Session, exitstatus: int) -> None:
    """What the run saw, to the controller (a worker) or into the ledger (the controller, or a run without
    xdist)."""
    config = session.config
    run = config.stash[RUN]
    incomplete = config.stash[_INCOMPLETE]
    incomplete += _stopped(session, exitstatus)
    if _is_worker(config):
        config.workeroutput[_WORKER_DATA] = run.as_data()  # type: ignore[attr-defined]
        config.workeroutput[_WORKER_INCOMPLETE] = list(incomplete)  # type: ignore[attr-defined]
        return
    if _STARTED not in config.stash or not (run.used or _ledger_file(config).exists()):
        return  # a run that opened no cassette in a project with no ledger writes none
    ledger = _new_ledger(config)
    ledger.cassettes = set(run.used)
    ledger.owners = {path: set(owners) for path, owners in run.owners.items()}
    ledger.files = set(run.files)
    part = _part_of_suite(config)
    if part:
        incomplete.insert(0, part)  # first, as the command line is (the summary's never-used count reads it)
    ledger.complete = not incomplete
    ledger.why_incomplete = "; ".join(dict.fromkeys(incomplete))
    _write_ledger(config, ledger)


def _stopped(session: pytest.Session, exitstatus: int) -> list[str]:
    """Why the run ended before its end: stopped early, interrupted, or collected only."""
    found = []
    if session.shouldstop or session.shouldfail:
        found.append(f"the run stopped early ({session.shouldstop or session.shouldfail})")
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        found.append("the run was interrupted")
    if session.config.option.collectonly:
        found.append("--collect-only ran no test")
    return found
