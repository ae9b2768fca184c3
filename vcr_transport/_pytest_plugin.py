"""The pytest plugin, registered through the ``pytest11`` entry point.

Loading it patches nothing, reads no environment variable, opens no file and imports none of the machinery
(options, sessions, recording, replay, the network guard): what it registers (``--vcr-mode``, the ini
settings) comes from the generated ``_core/engine/_registration.py``, and the rest is imported by the first
cassette (the ``vcr_cassette`` fixture, which the ``@pytest.mark.vcr_transport`` marker requests for a test,
or any other entry point); a run that uses no cassette pays for little more than registering them. (The
names differ from pytest-recording's and cassetter's ``vcr`` so that both can be installed during a
migration.)

- ``vcr_cassette``: runs the test inside ``use_cassette``; the cassette is ``cassettes/<module>/<test>.jsonl``
  beside the test file unless the marker names a path (a relative one is relative to the test file's folder).
- ``@pytest.mark.vcr_transport(path=None, mode=None, unplayed=None, **options)``: options as ``use_cassette``.
- ``--vcr-mode``: the mode for the run (below an explicit ``mode=``, above ``VCR_TRANSPORT_MODE``).
- The ini settings are those of the options that declare one (``Knob.ini`` in ``_core/engine/_options.py``), read by
  ``run_option``: the marker's argument wins, then the ini, then ``[tool.vcr_transport]``, then the default.
- ini ``vcr_unplayed``: ``error`` (default; ``ignore`` in the compatibility mode), ``warn``, ``ignore`` or
  ``partial`` (an error only when the test played some of the calls) for recorded calls no request asked for.
  Only a test whose body ran and passed is checked (not one skipped or failed in setup). In replay, a missing
  cassette fails a test at its first request; a test that makes none passes.
- ini ``vcr_caught_mismatch``: ``raise`` (default; ``ignore`` in the compatibility mode) or ``ignore``, for a
  replay mismatch the code under test caught: raised again at teardown, or left to the test (the option
  ``caught_mismatch``; the marker's argument wins, ``[tool.vcr_transport]`` comes below the ini).
- A cassette path several tests name (``path="cassettes/shared.jsonl"``), or whose header says ``"shared": true``,
  is shared: each test's calls carry its node id (the option ``shared_as``), a test replays its own calls
  alone (all of them when it has none: one test records, others replay), and its recording replaces only
  its own calls at commit, under a folder lock (xdist-safe).
- ``vcr_cassette.requests``: the recorded requests with their ``play_count`` (like vcrpy's ``vcr.requests``).
- ini ``vcr_transport_compat = pytest-recording``: serve a pytest-recording suite unchanged (``_compat.py``).
- ini ``vcr_transport_max_age`` (days) and ``vcr_transport_on_expiry`` (``warn``, ``fail``, ``record-on-miss``):
  a replayed cassette older than that is named once in the summary with the command that re-records it, fails
  its test, or records from its first miss (the session decides; never under ``CI``).
- The run publishes ``--vcr-mode`` to every entry point, keeps the usage ledger (``_ledger.py``; complete
  only if the run collected the whole suite, which under xdist the controller decides from what its
  workers report) and ends
  with a summary of what became of the cassettes. A failure the cassette explains (a mismatch, a refused
  request, unplayed calls) is reported in a few lines by ``_pytest_reports.py`` (``--tb=long`` and ``-vv``
  show the whole traceback). A passed test's cassette is checked when its body ends (``pytest_runtest_call``),
  so what it missed fails the test rather than its teardown.
- In replay, the test can't reach the network: every in-process route beyond loopback (connect, UDP, DNS,
  asyncio, uvloop, the C socket class, DNS to port 53 and loopback proxies) raises NetworkBlockedError; see
  ``_guard.py``. Subprocesses are not covered. ``block_network`` (marker, ``--vcr-block-network``, ini
  ``vcr_block_network``, pyproject): ``False`` turns it off, ``"session"`` keeps a guard on between and after
  replayed tests until the process ends (it is never stopped: an in-process pytester run with it leaves the
  outer process guarded). ``allowed_hosts`` (marker, ini ``vcr_allowed_hosts``, pyproject) let hosts through.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import shlex
import threading
from collections import Counter
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._compat import add_compat_options, claimed_cassette, compat_active, configure_compat, guard_hosts
from ._config import SKIPPED_FOLDERS, PytestRun, cassette_folders, find_pyproject, published_run, read_settings
from ._core.engine._registration import INI_OPTIONS, MODES
from ._exceptions import VcrTransportError

if TYPE_CHECKING:  # imported by the first test that opens a cassette, not when the plugin loads
    from ._context import use_cassette
    from ._ledger import Ledger

__all__ = [
    "MARKER",
    "cassette_name",
    "default_cassette_path",
    "marker_cassette_path",
    "open_test_cassette",
    "run_option",
    "with_run_options",
]

MARKER = "vcr_transport"
# The options that a pytest ini setting sets for the whole run (below the marker, above pyproject), from the
# generated ``_registration`` so that loading the plugin imports no option (``Options`` is imported on first use).
RUN_OPTIONS = tuple(name for name, *_ in INI_OPTIONS)
# Of those, the lists: the ini's items are added to the marker's.
LIST_RUN_OPTIONS = tuple(name for name, _, _, kind, _ in INI_OPTIONS if kind == "args")
# The command-line options that set a run-wide option (above the ini, below the marker).
RUN_FLAGS = {"block_network": "vcr_block_network"}
MAX_NAME = 100


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("vcr_transport", "record and replay HTTP traffic with vcr_transport")
    group.addoption(
        "--vcr-mode",
        choices=MODES,
        default=None,
        help="cassette mode for this run: " + ", ".join(MODES) + " (default: VCR_TRANSPORT_MODE, pyproject, auto)",
    )
    group.addoption(
        "--vcr-block-network",
        choices=next(choices for name, _, _, _, choices in INI_OPTIONS if name == "block_network"),
        default=None,
        help="the network guard of replayed tests: true (the default), false, or session (from the first "
        "replayed test on, until the process ends: threads and atexit hooks too)",
    )
    for _, ini, help_text, kind, _ in INI_OPTIONS:
        if kind == "args":
            parser.addini(ini, help_text, type="args")
        else:
            parser.addini(ini, help_text, default="")
    add_compat_options(parser, pluginmanager)


class _PluginRun(PytestRun):
    """This process's part of the run: every cassette opened, through any entry point, and what became of
    each (for the ledger and the summary)."""

    def __init__(self, vcr_mode: str | None, root: Path | None = None) -> None:
        super().__init__(vcr_mode, root)
        self._lock = threading.Lock()
        self.used: set[Path] = set()
        self.owners: dict[Path, set[str]] = {}  # the tests that claimed or opened each cassette, by node id
        self.files: set[str] = set()  # the test files collected, as node ids name them
        self.outcomes: dict[Path, str] = {}
        self.stale: dict[Path, tuple[float, float, str]] = {}  # (age in days, max_age, the test that replayed it)
        self.compared = 0  # mode check: live answers compared with the recorded calls their requests stand for
        self.not_compared: list[tuple[Path, str]] = []  # mode check: (cassette, which request and why)
        self.current_test = ""

    def cassette_opened(self, path: Path, mode: str, owner: str = "") -> None:
        with self._lock:
            resolved = path.resolve()
            self.used.add(resolved)
            if owner:
                self.owners.setdefault(resolved, set()).add(owner)

    def cassette_closed(self, path: Path, outcome: str) -> None:
        with self._lock:
            self.outcomes[path.resolve()] = outcome

    def cassette_checked(self, path: Path, compared: int, not_compared: list[str]) -> None:
        with self._lock:
            self.compared += compared
            self.not_compared += [(path.resolve(), why) for why in not_compared]

    def cassette_stale(self, path: Path, age_days: float, max_age: float) -> None:
        with self._lock:
            from ._test_ids import without_credentials

            test = without_credentials(self.current_test)
            self.stale.setdefault(path.resolve(), (age_days, max_age, test))

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


_RUN = pytest.StashKey[_PluginRun]()
_LEDGER: pytest.StashKey[Ledger] = pytest.StashKey()
_LEDGER_UNWRITTEN = pytest.StashKey[str]()  # why the ledger could not be written (a read-only project): said once
# Why the run is partial: what it could not collect or was told to leave out, an early stop, a crashed worker.
# Each process notes what it sees (an xdist worker collects, deselects and skips modules); a worker's notes
# reach the controller with its results, and the controller, which writes the ledger, decides.
_INCOMPLETE = pytest.StashKey[list[str]]()
_CALL_FAILURE = pytest.StashKey[BaseException]()  # what failed the test: its recording is not saved
_CASSETTE = pytest.StashKey["use_cassette"]()
_CHECKED_AT_END = pytest.StashKey[bool]()  # the test's body passed; the cassette's check at its end failed it
_SESSION_GUARD = pytest.StashKey[Any]()  # block_network="session": the guard between and after replayed tests
_WORKER_DATA = "vcr_transport_run"
_WORKER_INCOMPLETE = "vcr_transport_incomplete"
_SHARED = pytest.StashKey[set[Path]]()  # the cassette paths that several collected tests name


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _note_incomplete(config: pytest.Config, why: str) -> None:
    config.stash[_INCOMPLETE].append(why)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "vcr_transport(path=None, mode=None, unplayed=None, **options): run the test inside a vcr_transport cassette",
    )
    try:  # an unknown key in [tool.vcr_transport] (a typo: redact_name) stops the run before it starts
        read_settings(find_pyproject())
    except VcrTransportError as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[_RUN] = _PluginRun(config.getoption("vcr_mode"), config.rootpath)
    configure_compat(config)
    config.stash[_INCOMPLETE] = []
    config.pluginmanager.register(_CollectionWatcher(config), "vcr_transport_collection")
    if config.pluginmanager.hasplugin("xdist") and not _is_worker(config):
        config.pluginmanager.register(_XdistController(config), "vcr_transport_xdist")


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
    for given in config.getoption("ignore", None) or ():
        if path == Path(os.path.abspath(given)):
            return f"--ignore={given}"
    for pattern in config.getoption("ignore_glob", None) or ():
        if fnmatch.fnmatch(str(path), os.path.abspath(pattern)):
            return f"--ignore-glob={pattern}"
    for plugin in config.pluginmanager.get_plugins():
        file = getattr(plugin, "__file__", None)
        if not isinstance(file, str) or Path(file).name != "conftest.py":
            continue
        folder = Path(file).parent
        if folder not in path.parents:
            continue
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
        self.config.stash[_RUN].absorb(output[_WORKER_DATA])
        self.config.stash[_INCOMPLETE].extend(output.get(_WORKER_INCOMPLETE, ()))


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if _is_worker(config):
        return
    for why in (_part_of_suite(config), _last_failed_only(config)):
        if why:
            _note_incomplete(config, why)
    from ._ledger import ledger_path, new_ledger  # lazily: a run with no ledger never needs it

    ledger = new_ledger(os.urandom(16).hex(), command=_command(config))
    config.stash[_LEDGER] = ledger
    if ledger_path(config.rootpath).exists():
        _write_ledger(config, ledger)  # a run that dies leaves "incomplete", not an older run


def _write_ledger(config: pytest.Config, ledger: Ledger) -> None:
    """Write the ledger, unless it could not be written before in this run. A project where it can't be (a
    read-only checkout, a ``.vcr_transport`` linked out of the project) is no reason to stop a run that
    needs it for nothing but ``prune``: the summary says why in one line (as pytest's cache does)."""
    from ._exceptions import RefusedWrite
    from ._ledger import ledger_path, write_ledger

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


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        config = items[0].config
        _note_incomplete(config, f"{len(items)} test(s) were deselected ({_selection(config)})")


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


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect: every test naming a path makes it shared
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    run = config.stash[_RUN]
    claims: Counter[Path] = Counter()
    run.files.update(item.nodeid.split("::", 1)[0] for item in items)
    for item in items:  # a marked test claims its cassette even when it is skipped
        marker = item.get_closest_marker(MARKER)
        if marker is not None:
            path = marker_cassette_path(item, marker.kwargs.get("path"))
            run.cassette_opened(path, "claimed", written_test_id(item))
            claims[path.resolve()] += 1
        compat_claim = claimed_cassette(item) if compat_active(config) else None
        if compat_claim is not None:  # a pytest-recording test's cassette, its own (never shared)
            run.cassette_opened(compat_claim, "claimed", written_test_id(item))
    config.stash[_SHARED] = {path for path, count in claims.items() if count > 1}


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    # The run is published for its whole length, so every entry point sees --vcr-mode and reports the
    # cassettes it opens: the marker, use_cassette(), transport() and async_transport().
    with published_run(session.config.stash[_RUN]):
        return (yield)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    run = config.stash[_RUN]
    incomplete = config.stash[_INCOMPLETE]
    if session.shouldstop or session.shouldfail:
        incomplete.append(f"the run stopped early ({session.shouldstop or session.shouldfail})")
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        incomplete.append("the run was interrupted")
    if config.option.collectonly:
        incomplete.append("--collect-only ran no test")
    if _is_worker(config):
        config.workeroutput[_WORKER_DATA] = run.as_data()  # type: ignore[attr-defined]
        config.workeroutput[_WORKER_INCOMPLETE] = list(incomplete)  # type: ignore[attr-defined]
        return
    ledger = config.stash.get(_LEDGER, None)
    if ledger is None:
        return
    from ._ledger import ledger_path

    if not (run.used or ledger_path(config.rootpath).exists()):
        return  # a run that opened no cassette in a project with no ledger writes none
    ledger.cassettes = set(run.used)
    ledger.owners = {path: set(owners) for path, owners in run.owners.items()}
    ledger.files = set(run.files)
    ledger.complete = not incomplete
    ledger.why_incomplete = "; ".join(dict.fromkeys(incomplete))
    _write_ledger(config, ledger)


# What the end-of-run summary says of the cassettes of each outcome, in its order.
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


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _is_worker(config):
        return
    _say_ledger_unwritten(terminalreporter, config)
    run = config.stash[_RUN]
    counts = Counter(outcome for outcome in run.outcomes.values() if outcome not in ("off", "not needed"))
    if (not counts and not run.used) or config.option.no_summary:
        return
    parts = [phrase.format(counts[outcome]) for outcome, phrase in _SUMMARY if counts[outcome]]
    parts += _never_used(config, run)
    terminalreporter.write_sep("-", "vcr_transport")
    terminalreporter.write_line("cassettes: " + (", ".join(parts) or "none opened"))
    for line in [*_check_lines(config, run), *_stale_lines(config, run)]:
        terminalreporter.write_line(line)


def _say_ledger_unwritten(terminalreporter: Any, config: pytest.Config) -> None:
    """The one line saying the ledger could not be written this run, and why (``_write_ledger``)."""
    if _LEDGER_UNWRITTEN in config.stash:
        terminalreporter.write_line(
            f"vcr_transport: the usage ledger was not written ({config.stash[_LEDGER_UNWRITTEN]}); "
            "prune needs a run that wrote it"
        )


def _check_lines(config: pytest.Config, run: _PluginRun) -> list[str]:
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


def _stale_lines(config: pytest.Config, run: _PluginRun) -> list[str]:
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


def _never_used(config: pytest.Config, run: _PluginRun) -> list[str]:
    """The summary's part on the project's cassettes that no test opened (not counted in a partial run)."""
    if config.stash[_INCOMPLETE]:
        return ["never used: not counted in a partial run"]
    known = {p.resolve() for folder in cassette_folders(config.rootpath) for p in folder.rglob("*.jsonl")}
    unused = known - run.used
    return [f"{len(unused)} never used ('vcr-transport prune' lists them)"] if unused else []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Any:
    # The test running now, which the summary names for a stale cassette it replayed (any entry point).
    run = item.config.stash[_RUN]
    run.current_test = item.nodeid
    try:
        return (yield)
    finally:
        run.current_test = ""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    # A test whose body passed is checked here, so that what its cassette missed (a mismatch the code caught,
    # unplayed calls, a refused request the SDK swallowed) fails the test, rather than erroring its teardown.
    result = yield
    cassette = item.stash.get(_CASSETTE, None)
    if cassette is not None:
        try:
            cassette.check()
        except BaseException:
            item.stash[_CHECKED_AT_END] = True
            raise
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    _hint_missing_key(item, call)
    report = yield
    _hide_our_values(report, call)
    # A test that failed, xfailed or skipped once its body started did not finish: its recording is not saved.
    if report.when == "call" and call.excinfo is not None and (report.failed or report.skipped):
        item.stash[_CALL_FAILURE] = call.excinfo.value
    if report.when == "call" and report.failed:
        cassette = item.stash.get(_CASSETTE, None)
        if cassette is not None and cassette.session is not None and call.excinfo is not None:
            _report_failure(item, call.excinfo, cassette, report)
    return report


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _through_our_frames(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    """Whether the exception (or one it was raised from) passed through this package's code."""
    import traceback

    seen: set[int] = set()
    error = excinfo.value if excinfo is not None else None
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if any(
            os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE)
            for frame, _ in traceback.walk_tb(error.__traceback__)
        ):
            return True
        error = error.__cause__ or error.__context__
    return False


def _hide_our_values(report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
    """A failure that passed through our frames shows none of their values: they hold the request as sent."""
    if report.failed and _through_our_frames(call.excinfo):
        from ._pytest_reports import hide_our_values

        hide_our_values(report)


def _hint_missing_key(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A marked test that failed with an SDK's missing-key error: a note that replay needs none (before the
    report is made, so that it shows)."""
    if call.excinfo is not None and item.get_closest_marker(MARKER) is not None:
        from ._stand_in_keys import add_missing_key_hint

        add_missing_key_hint(call.excinfo.value)


def _report_failure(item: pytest.Item, excinfo: Any, cassette: use_cassette, report: pytest.TestReport) -> None:
    """Our short report when the cassette explains the failure (``_pytest_reports``); with the whole traceback
    asked for, pytest's, plus the mismatch when the SDK swallowed it."""
    from ._pytest_reports import cassette_report, full_traceback_wanted, raised_mismatch

    if not full_traceback_wanted(item.config):
        short = cassette_report(item, excinfo, cassette, at_end=item.stash.get(_CHECKED_AT_END, False))
        if short is not None:
            report.longrepr = short
        return
    mismatch = cassette.session.first_mismatch if cassette.session is not None else None
    raised = raised_mismatch(excinfo.value)
    if mismatch is not None and raised is None:
        report.sections.append(("vcr_transport: replay mismatch", str(mismatch)))
    shown = raised or mismatch
    if shown is not None and item.config.get_verbosity() >= 2:
        report.sections.append(("vcr_transport: the differing values, whole", shown.full_values()))


def cassette_name(node_name: str) -> str:
    """A file name from a test name: parametrize ids sanitized, long names shortened stably."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", node_name).strip("_.") or "test"
    if len(name) > MAX_NAME:
        import hashlib

        digest = hashlib.sha1(node_name.encode()).hexdigest()[:10]
        name = f"{name[: MAX_NAME - 11]}-{digest}"
    return name


def default_cassette_path(node: pytest.Item) -> Path:
    """``cassettes/<module>/<test name>.jsonl`` beside the test file, named by the test's id without the
    credentials its parameters may carry (``_test_ids``); a cassette of the older name holding one is read
    while the new one is missing."""
    from ._test_ids import found_cassette, without_credentials

    module = Path(str(node.path))
    folder = module.parent / "cassettes" / module.stem

    def named(node_id: str) -> Path:
        return folder / (".".join(cassette_name(n) for n in node_id.split("::")[1:]) + ".jsonl")

    return found_cassette(named(without_credentials(node.nodeid)), named(node.nodeid))


def written_test_id(node: pytest.Item) -> str:
    """The test's node id as we write it (a shared cassette's owner, the ledger's): without the credentials
    its parameters may carry (``_test_ids``)."""
    from ._test_ids import without_credentials

    return without_credentials(node.nodeid)


def marker_cassette_path(node: pytest.Item, path: object) -> Path:
    """The marker's ``path``, relative to the test file's folder like the default; else the default."""
    if not path:
        return default_cassette_path(node)
    given = Path(str(path))
    return given if given.is_absolute() else Path(str(node.path)).parent / given


def run_option(config: pytest.Config, name: str, given: object = None) -> Any:
    """A run-wide option (``RUN_OPTIONS``) for a test's cassette: the marker's (``given``), else its command-line
    option's (``RUN_FLAGS``), else its ini setting's (text, read as the option takes it: ``vcr_transport_max_age
    = 30`` is 30.0 days), else the compatibility mode's default (unless ``[tool.vcr_transport]`` sets one it may
    carry); None leaves it to ``use_cassette`` (pyproject, then the option's default). A list option is the ini's
    items and then the marker's. A value the option does not take is a UsageError naming where it came from."""
    from ._core.engine._options import Options  # lazily, as every option: loading the plugin imports none

    knob = Options.knob(name)
    if name in LIST_RUN_OPTIONS:
        if given is not None and not isinstance(given, list | tuple):
            return given  # not a list: Options refuses it, naming the option
        return [*config.getini(knob.ini), *(given or ())] or None
    if given is not None and given != "":
        if isinstance(given, str) and knob.choices and given not in knob.choices:
            where = f"@pytest.mark.{MARKER}({name}=...)"
            raise pytest.UsageError(f"{where} must be one of {', '.join(knob.choices)}, not {given!r}")
        return given  # the other kinds (True or False, a number) are checked with the marker's other arguments
    flag = RUN_FLAGS.get(name)
    flagged = config.getoption(flag, None) if flag else None
    if flagged:
        return str(flagged)  # one of the option's choices: the command line's parser checked it
    text = str(config.getini(knob.ini)).strip()
    if text:
        try:
            return knob.from_text(text, f"the ini {knob.ini}")
        except ValueError as error:
            raise pytest.UsageError(str(error)) from None
    if compat_active(config) and knob.has_compat_default:
        if not (knob.pyproject and name in read_settings(find_pyproject())):
            return knob.compat
    return None


def with_run_options(config: pytest.Config, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A test's cassette arguments with the run-wide options resolved (``run_option``)."""
    resolved = dict(arguments)
    for name in RUN_OPTIONS:
        value = run_option(config, name, resolved.pop(name, None))
        if value is not None:
            resolved[name] = value
    return resolved


def _run_allowed_hosts(config: pytest.Config) -> list[str]:
    """The allowed hosts of the run, not of one test: ``[tool.vcr_transport]``'s, then the ini's."""
    from ._core.engine._options import Options

    settings = read_settings(find_pyproject())
    return [*settings.get("allowed_hosts", ()), *config.getini(Options.knob("allowed_hosts").ini)]


@contextlib.contextmanager
def open_test_cassette(
    request: pytest.FixtureRequest, path: Path, arguments: Mapping[str, Any]
) -> Iterator[use_cassette]:
    """The test's cassette, open while the test runs, guarded in replay (``block_network``; with ``"session"``
    the guard also holds between and after replayed tests, until the process ends). At teardown, unplayed
    calls are checked only when the test's body ran and passed; a missing cassette no request asked for is not
    an error."""
    from ._context import use_cassette  # lazily: the first test with a cassette loads the machinery

    arguments = {"missing_ok_unused": True, **arguments}
    if "block_network" not in arguments and "block_network" not in read_settings(find_pyproject()):
        arguments["block_network"] = True  # the plugin's default: a replayed test is guarded
    cassette = use_cassette(path, **arguments)
    cassette.__enter__()
    request.node.stash[_CASSETTE] = cassette
    config = request.config
    session_guard = config.stash.get(_SESSION_GUARD, None)
    if session_guard is not None and session_guard.active:
        session_guard.stop()  # the test's own guard (started above) covers it, or the test needs the network
    try:
        yield cassette
    finally:
        session = cassette.session
        if (
            session_guard is None
            and session is not None
            and session.options.block_network == "session"
            and cassette.guarded
        ):
            from ._guard import NetworkGuard

            session_guard = NetworkGuard(_run_allowed_hosts(config), reason="--vcr-block-network=session")
            config.stash[_SESSION_GUARD] = session_guard
        if session_guard is not None:
            session_guard.start()  # before the test's guard stops: no gap; never stopped after the last test
        cassette.close(check=False, failure=request.node.stash.get(_CALL_FAILURE, None))


@pytest.fixture
def vcr_cassette(request: pytest.FixtureRequest) -> Iterator[use_cassette]:
    """The test's cassette, open for the whole test. Fails the test on an unplayed call by default;
    ``vcr_cassette.requests`` lists the recorded requests with their play counts."""
    marker = request.node.get_closest_marker(MARKER)
    arguments = dict(marker.kwargs) if marker else {}
    from ._core.engine._options import Options

    valid = frozenset({"path", *Options.names("marker")})
    unknown = set(arguments) - valid
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER} got unknown argument(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(valid))}"
        )
    path = marker_cassette_path(request.node, arguments.pop("path", None))
    arguments = with_run_options(request.config, arguments)
    if _shared(request.config, path):  # each test's calls are its own (``shared_as``)
        arguments["shared_as"] = written_test_id(request.node)
    if compat_active(request.config):  # pytest-recording's allowed hosts pass every guard, a cassette's too
        arguments["allowed_hosts"] = [*arguments.get("allowed_hosts", ()), *guard_hosts(request)]
    with open_test_cassette(request, path, arguments) as cassette:
        yield cassette


def _shared(config: pytest.Config, path: Path) -> bool:
    """Whether several tests share the cassette at ``path``: several collected tests name it, or it says so
    (its header, once a shared recording was committed: a run of one of its tests)."""
    from ._storage import is_shared  # lazily, as the rest of the machinery

    return path.resolve() in config.stash.get(_SHARED, set()) or is_shared(path)


@pytest.fixture(autouse=True)
def _vcr_transport_marker(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker(MARKER) is not None:
        request.getfixturevalue("vcr_cassette")
