"""The pytest plugin, registered through the ``pytest11`` entry point.

Loading it patches nothing, reads no environment variable, opens no file and imports none of the machinery
(sessions, recording, replay, the network guard): all of that happens in the ``vcr_cassette`` fixture, which
the ``@pytest.mark.vcr_transport`` marker requests for a test. (The names differ from pytest-recording's and
cassetter's ``vcr`` so that both can be installed during a migration.)

- ``vcr_cassette``: runs the test inside ``use_cassette``; the cassette is ``cassettes/<module>/<test>.jsonl``
  beside the test file unless the marker names a path (a relative one is relative to the test file's folder).
- ``@pytest.mark.vcr_transport(path=None, mode=None, unplayed=None, **options)``: options as ``use_cassette``.
- ``--vcr-mode``: the mode for the run (below an explicit ``mode=``, above ``VCR_TRANSPORT_MODE``).
- The ini settings are those of the options that declare one (``Knob.ini`` in ``_core/_options.py``), read by
  ``run_option``: the marker's argument wins, then the ini, then ``[tool.vcr_transport]``, then the default.
- ini ``vcr_unplayed``: ``error`` (default; ``ignore`` in the compatibility mode), ``warn``, ``ignore`` or
  ``partial`` (an error only when the test played some of the calls) for recorded calls no request asked for.
  Only a test whose body ran and passed is checked (not one skipped or failed in setup). In replay, a missing
  cassette fails a test at its first request; a test that makes none passes.
- ini ``vcr_caught_mismatch``: ``raise`` (default; ``ignore`` in the compatibility mode) or ``ignore``, for a
  replay mismatch the code under test caught: raised again at teardown, or left to the test (the option
  ``caught_mismatch``; the marker's argument wins, ``[tool.vcr_transport]`` comes below the ini).
- ``vcr_cassette.requests``: the recorded requests with their ``play_count`` (like vcrpy's ``vcr.requests``).
- ini ``vcr_transport_compat = pytest-recording``: serve a pytest-recording suite unchanged (``_compat.py``).
- The run publishes ``--vcr-mode`` to every entry point, keeps the usage ledger (``_ledger.py``) and ends
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
import hashlib
import re
import threading
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._compat import add_compat_options, compat_active, configure_compat, guard_hosts
from ._config import PytestRun, cassette_folders, find_pyproject, published_run, read_settings
from ._core._modes import MODES
from ._core._options import Options
from ._exceptions import VcrTransportError
from ._ledger import Ledger, ledger_path, new_ledger, write_ledger

if TYPE_CHECKING:  # imported by the first test that opens a cassette, not when the plugin loads
    from ._context import use_cassette

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
MARKER_KWARGS = frozenset({"path", *Options.names("marker")})
# The options that a pytest ini setting sets for the whole run (below the marker, above pyproject).
RUN_OPTIONS = tuple(name for name in Options.names("marker") if Options.knob(name).ini)
# Of those, the lists: the ini's items are added to the marker's.
LIST_RUN_OPTIONS = tuple(name for name in RUN_OPTIONS if isinstance(getattr(Options(), name), tuple))
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
        choices=Options.knob("block_network").choices,
        default=None,
        help="the network guard of replayed tests: true (the default), false, or session (from the first "
        "replayed test on, until the process ends: threads and atexit hooks too)",
    )
    defaults = Options()
    for name in RUN_OPTIONS:
        knob = Options.knob(name)
        if name in LIST_RUN_OPTIONS:
            parser.addini(knob.ini, f"the option {name} for every test (added to the marker's)", type="args")
            continue
        compat = f"; {knob.compat} in the pytest-recording compatibility mode" if knob.has_compat_default else ""
        parser.addini(
            knob.ini,
            f"the option {name} for every test: {', '.join(knob.choices)} (default: {getattr(defaults, name)}{compat})",
            default="",
        )
    add_compat_options(parser, pluginmanager)


class _PluginRun(PytestRun):
    """This process's part of the run: every cassette opened, through any entry point, and what became of
    each (for the ledger and the summary)."""

    def __init__(self, vcr_mode: str | None) -> None:
        super().__init__(vcr_mode)
        self._lock = threading.Lock()
        self.used: set[Path] = set()
        self.outcomes: dict[Path, str] = {}

    def cassette_opened(self, path: Path, mode: str) -> None:
        with self._lock:
            self.used.add(path.resolve())

    def cassette_closed(self, path: Path, outcome: str) -> None:
        with self._lock:
            self.outcomes[path.resolve()] = outcome

    def as_data(self) -> dict[str, Any]:
        return {"used": sorted(map(str, self.used)), "outcomes": {str(k): v for k, v in self.outcomes.items()}}

    def absorb(self, data: dict[str, Any]) -> None:
        with self._lock:
            self.used.update(Path(p) for p in data["used"])
            self.outcomes.update({Path(k): v for k, v in data["outcomes"].items()})


_RUN = pytest.StashKey[_PluginRun]()
_LEDGER = pytest.StashKey[Ledger]()
_INCOMPLETE = pytest.StashKey[list[str]]()
_CALL_FAILURE = pytest.StashKey[BaseException]()  # what failed the test: its recording is not saved
_CASSETTE = pytest.StashKey["use_cassette"]()
_CHECKED_AT_END = pytest.StashKey[bool]()  # the test's body passed; the cassette's check at its end failed it
_SESSION_GUARD = pytest.StashKey[Any]()  # block_network="session": the guard between and after replayed tests
_WORKER_DATA = "vcr_transport_run"


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "vcr_transport(path=None, mode=None, unplayed=None, **options): run the test inside a vcr_transport cassette",
    )
    try:  # an unknown key in [tool.vcr_transport] (a typo: redact_name) stops the run before it starts
        read_settings(find_pyproject())
    except VcrTransportError as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[_RUN] = _PluginRun(config.getoption("vcr_mode"))
    configure_compat(config)
    config.stash[_INCOMPLETE] = []
    config.pluginmanager.register(_CollectionWatcher(config), "vcr_transport_collection")
    if config.pluginmanager.hasplugin("xdist") and not _is_worker(config):
        config.pluginmanager.register(_XdistController(config), "vcr_transport_xdist")


class _CollectionWatcher:
    """A module that failed to collect makes the run partial: its tests' cassettes went unused. (A collect
    report carries no config, so the hook lives on an object that holds it; under xdist the workers'
    reports reach the controller's hook too.)"""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.config.stash[_INCOMPLETE].append(f"{report.nodeid} failed to collect")


class _XdistController:
    """xdist's controller: gathers what each worker's run saw; a worker that crashed makes the run partial."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {})
        if error is not None or _WORKER_DATA not in output:
            self.config.stash[_INCOMPLETE].append(f"a worker ({getattr(node, 'gateway', node)}) crashed")
            return
        self.config.stash[_RUN].absorb(output[_WORKER_DATA])


def pytest_sessionstart(session: pytest.Session) -> None:
    if _is_worker(session.config):
        return
    ledger = new_ledger(uuid.uuid4().hex)
    session.config.stash[_LEDGER] = ledger
    if ledger_path(session.config.rootpath).exists():
        write_ledger(session.config.rootpath, ledger)  # a run that dies leaves "incomplete", not an older run


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        config = items[0].config
        config.stash[_INCOMPLETE].append(f"{len(items)} test(s) were deselected (-k, -m, --deselect, --lf)")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    run = config.stash[_RUN]
    for item in items:  # a marked test claims its cassette even when it is skipped
        marker = item.get_closest_marker(MARKER)
        if marker is not None:
            run.cassette_opened(marker_cassette_path(item, marker.kwargs.get("path")), "claimed")
    if config.args_source == pytest.Config.ArgsSource.ARGS and _selects_part(config):
        config.stash[_INCOMPLETE].append(f"the run was given {' '.join(config.args)}")


def _selects_part(config: pytest.Config) -> bool:
    """Whether the command line named part of the suite (files, test ids, folders below the test paths)."""
    roots = [config.rootpath, *(config.rootpath / p for p in config.getini("testpaths"))]
    for argument in config.args:
        if "::" in argument:
            return True
        path = Path(argument) if Path(argument).is_absolute() else config.invocation_params.dir / argument
        if path.resolve() not in {r.resolve() for r in roots}:
            return True
    return False


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    # The run is published for its whole length, so every entry point sees --vcr-mode and reports the
    # cassettes it opens: the marker, use_cassette(), transport() and async_transport().
    with published_run(session.config.stash[_RUN]):
        return (yield)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    run = config.stash[_RUN]
    if _is_worker(config):
        config.workeroutput[_WORKER_DATA] = run.as_data()  # type: ignore[attr-defined]
        return
    incomplete = config.stash[_INCOMPLETE]
    if session.shouldstop or session.shouldfail:
        incomplete.append(f"the run stopped early ({session.shouldstop or session.shouldfail})")
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        incomplete.append("the run was interrupted")
    ledger = config.stash.get(_LEDGER, None)
    if ledger is None or not (run.used or ledger_path(config.rootpath).exists()):
        return  # a run that opened no cassette in a project with no ledger writes none
    ledger.cassettes = set(run.used)
    ledger.complete = not incomplete
    ledger.why_incomplete = "; ".join(dict.fromkeys(incomplete))
    write_ledger(config.rootpath, ledger)


# What the end-of-run summary says of the cassettes of each outcome, in its order.
_SUMMARY = (
    ("replayed", "{} replayed"),
    ("recorded", "{} recorded"),
    ("re-recorded", "{} re-recorded"),
    ("recorded unchanged", "{} recorded unchanged"),
    ("not saved", "{} not saved"),
    ("mismatched", "{} with a replay mismatch"),
    ("unplayed", "{} left with unplayed calls"),
    ("missing", "{} missing"),
    ("refused", "{} not recorded under CI"),
    ("unreadable", "{} unreadable"),
)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _is_worker(config):
        return
    run = config.stash[_RUN]
    counts = Counter(outcome for outcome in run.outcomes.values() if outcome not in ("off", "not needed"))
    if (not counts and not run.used) or config.option.no_summary:
        return
    parts = [phrase.format(counts[outcome]) for outcome, phrase in _SUMMARY if counts[outcome]]
    parts += _never_used(config, run)
    terminalreporter.write_sep("-", "vcr_transport")
    terminalreporter.write_line("cassettes: " + (", ".join(parts) or "none opened"))


def _never_used(config: pytest.Config, run: _PluginRun) -> list[str]:
    """The summary's part on the project's cassettes that no test opened (not counted in a partial run)."""
    if config.stash[_INCOMPLETE]:
        return ["never used: not counted in a partial run"]
    known = {p.resolve() for folder in cassette_folders(config.rootpath) for p in folder.rglob("*.jsonl")}
    unused = known - run.used
    return [f"{len(unused)} never used ('vcr-transport prune' lists them)"] if unused else []


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
    report = yield
    # A test that failed, xfailed or skipped once its body started did not finish: its recording is not saved.
    if report.when == "call" and call.excinfo is not None and (report.failed or report.skipped):
        item.stash[_CALL_FAILURE] = call.excinfo.value
    if report.when == "call" and report.failed:
        cassette = item.stash.get(_CASSETTE, None)
        if cassette is not None and cassette.session is not None and call.excinfo is not None:
            _report_failure(item, call.excinfo, cassette, report)
    return report


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
        digest = hashlib.sha1(node_name.encode()).hexdigest()[:10]
        name = f"{name[: MAX_NAME - 11]}-{digest}"
    return name


def default_cassette_path(node: pytest.Item) -> Path:
    module = Path(str(node.path))
    parts = [cassette_name(n) for n in node.nodeid.split("::")[1:]]
    return module.parent / "cassettes" / module.stem / (".".join(parts) + ".jsonl")


def marker_cassette_path(node: pytest.Item, path: object) -> Path:
    """The marker's ``path``, relative to the test file's folder like the default; else the default."""
    if not path:
        return default_cassette_path(node)
    given = Path(str(path))
    return given if given.is_absolute() else Path(str(node.path)).parent / given


def run_option(config: pytest.Config, name: str, given: object = None) -> object:
    """A run-wide option (``RUN_OPTIONS``) for a test's cassette: the marker's (``given``), else its command-line
    option's (``RUN_FLAGS``), else its ini setting's, else the compatibility mode's default (unless
    ``[tool.vcr_transport]`` sets one it may carry); None leaves it to ``use_cassette`` (pyproject, then the
    option's default). A list option is the ini's items and then the marker's. A text value that is not one of
    the option's choices is a UsageError naming where it came from."""
    knob = Options.knob(name)
    if name in LIST_RUN_OPTIONS:
        if given is not None and not isinstance(given, list | tuple):
            return given  # not a list: Options refuses it, naming the option
        return [*config.getini(knob.ini), *(given or ())] or None
    if given is not None and not isinstance(given, str):
        return given  # True or False on the marker: Options checks it
    flag = RUN_FLAGS.get(name)
    value = given or (config.getoption(flag, None) if flag else None) or config.getini(knob.ini)
    if value:
        if value not in knob.choices:
            where = f"@pytest.mark.{MARKER}({name}=...)" if given else f"the ini {knob.ini}"
            raise pytest.UsageError(f"{where} must be one of {', '.join(knob.choices)}, not {value!r}")
        return str(value)
    if compat_active(config) and knob.has_compat_default:
        if not (knob.pyproject and name in read_settings(find_pyproject())):
            return str(knob.compat)
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
    unknown = set(arguments) - MARKER_KWARGS
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER} got unknown argument(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(MARKER_KWARGS))}"
        )
    path = marker_cassette_path(request.node, arguments.pop("path", None))
    arguments = with_run_options(request.config, arguments)
    if compat_active(request.config):  # pytest-recording's allowed hosts pass every guard, a cassette's too
        arguments["allowed_hosts"] = [*arguments.get("allowed_hosts", ()), *guard_hosts(request)]
    with open_test_cassette(request, path, arguments) as cassette:
        yield cassette


@pytest.fixture(autouse=True)
def _vcr_transport_marker(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker(MARKER) is not None:
        request.getfixturevalue("vcr_cassette")
