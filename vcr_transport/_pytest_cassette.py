"""A test's cassette under the pytest plugin: where it is (``cassette_name``, ``default_cassette_path``,
``marker_cassette_path``), the run-wide options it takes from the command line and the ini (``run_option``,
``with_run_options``), whether several tests share it, and the block open while the test runs
(``open_test_cassette``), with what its end checks and reports. The thin plugin (``_pytest_plugin``) loads it when
a test uses a cassette (and the compatibility mode's ``vcr`` fixture, ``_compat``); it imports the machinery
(``_context``) when the first cassette opens.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._config import find_pyproject, read_settings
from ._pytest_keys import CALL_FAILURE, CASSETTE, CHECKED_AT_END, MARKER, RUN, SESSION_GUARD, SHARED, compat_active
from ._registration import INI_OPTIONS

if TYPE_CHECKING:
    from ._context import use_cassette
    from ._core.engine._options import Knob, Options

__all__ = [
    "CassetteHooks",
    "cassette_name",
    "check_at_end",
    "default_cassette_path",
    "entered_cassette",
    "hint_missing_key",
    "marked_cassette",
    "marker_cassette_path",
    "note_failure",
    "open_test_cassette",
    "run_option",
    "with_run_options",
]

# The options that a pytest ini setting sets for the whole run (below the marker, above pyproject), from the
# generated ``_registration`` (``Options`` is imported on first use).
RUN_OPTIONS = tuple(name for name, *_ in INI_OPTIONS)
# Of those, the lists: the ini's items are added to the marker's.
LIST_RUN_OPTIONS = tuple(name for name, _, _, kind, _ in INI_OPTIONS if kind == "args")
# The command-line options that set a run-wide option (above the ini, below the marker).
RUN_FLAGS = {"block_network": "vcr_block_network"}
MAX_NAME = 100
# A test's default cassette path, worked out once (at collection, for the ledger), when no older name could
# be read instead (``found_cassette``: a file's existence can change while the run goes on).
_DEFAULT_PATH = pytest.StashKey[Path]()
# The run-wide options the command line and the ini set (``_configured``), worked out once per run.
_CONFIGURED = pytest.StashKey[dict[str, Any]]()
# The options of the tests' cassettes, by their arguments (``_options``).
_OPTIONS = pytest.StashKey[dict[tuple[Any, ...], "Options"]]()
MAX_OPTIONS_KEPT = 256


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
    known = node.stash.get(_DEFAULT_PATH, None)
    if known is not None:
        return known
    from ._test_ids import found_cassette, without_credentials

    module = Path(str(node.path))
    folder = module.parent / "cassettes" / module.stem

    def named(node_id: str) -> Path:
        return folder / (".".join(cassette_name(n) for n in node_id.split("::")[1:]) + ".jsonl")

    written = without_credentials(node.nodeid)
    if written == node.nodeid:  # one name only
        path = node.stash[_DEFAULT_PATH] = named(written)
        return path
    return found_cassette(named(written), named(node.nodeid))


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


def _project_settings() -> dict[str, Any]:
    """``[tool.vcr_transport]`` of the project (read once while the file is unchanged, ``read_settings``)."""
    return read_settings(find_pyproject())


def run_option(config: pytest.Config, name: str, given: object = None) -> Any:
    """A run-wide option (``RUN_OPTIONS``) for a test's cassette: the marker's (``given``), else its command-line
    option's (``RUN_FLAGS``), else its ini setting's (text, read as the option takes it: ``vcr_transport_max_age
    = 30`` is 30.0 days), else the compatibility mode's default (unless ``[tool.vcr_transport]`` sets one it may
    carry); None leaves it to ``use_cassette`` (pyproject, then the option's default). A list option is the ini's
    items and then the marker's. A value the option does not take is a UsageError naming where it came from."""
    knob = _knob(name)
    if name in LIST_RUN_OPTIONS:
        if given is not None and not isinstance(given, list | tuple):
            return given  # not a list: Options refuses it, naming the option
        return [*config.getini(knob.ini), *(given or ())] or None
    if given is not None and given != "":
        return _given(name, knob, given)
    configured = config.stash.setdefault(_CONFIGURED, {})
    if name not in configured:  # not kept when it raised: every test using it says so
        configured[name] = _configured(config, name, knob)
    return configured[name]


@functools.cache
def _knob(name: str) -> Knob:
    from ._core.engine._options import Options  # lazily, as every option: loading the plugin imports none

    return Options.knob(name)


@functools.cache
def _marker_arguments() -> frozenset[str]:
    """What the marker takes: ``path`` and the options."""
    from ._core.engine._options import Options

    return frozenset({"path", *Options.names("marker")})


def _given(name: str, knob: Knob, given: object) -> object:
    """The marker's value; a text the option does not take is a UsageError (the other kinds, True or False, a
    number, are checked with the marker's other arguments)."""
    if isinstance(given, str) and knob.choices and given not in knob.choices:
        where = f"@pytest.mark.{MARKER}({name}=...)"
        raise pytest.UsageError(f"{where} must be one of {', '.join(knob.choices)}, not {given!r}")
    return given


def _configured(config: pytest.Config, name: str, knob: Knob) -> Any:
    """The option from the command line, else the ini, else the compatibility mode's default, else None."""
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
        if not (knob.pyproject and name in _project_settings()):
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
    return [*_project_settings().get("allowed_hosts", ()), *config.getini(_knob("allowed_hosts").ini)]


@contextlib.contextmanager
def open_test_cassette(item: pytest.Item, path: Path, arguments: Mapping[str, Any]) -> Iterator[use_cassette]:
    """The test's cassette, open while the test runs, guarded in replay (``block_network``; with ``"session"``
    the guard also holds between and after replayed tests, until the process ends). At teardown, unplayed
    calls are checked only when the test's body ran and passed; a missing cassette no request asked for is not
    an error."""
    from ._context import use_cassette  # lazily: the first test with a cassette loads the machinery

    arguments = {"missing_ok_unused": True, **arguments}
    if "block_network" not in arguments and "block_network" not in _project_settings():
        arguments["block_network"] = True  # the plugin's default: a replayed test is guarded
    config = item.config
    cassette = use_cassette(path, options=_options(config, arguments))
    cassette.__enter__()
    item.stash[CASSETTE] = cassette
    session_guard = config.stash.get(SESSION_GUARD, None)
    if session_guard is not None and session_guard.active:
        session_guard.stop()  # the test's own guard (started above) covers it, or the test needs the network
    try:
        yield cassette
    finally:
        _guard_after(config, cassette, session_guard)
        cassette.close(check=False, failure=item.stash.get(CALL_FAILURE, None))


def entered_cassette(item: pytest.Item, allowed_hosts: Sequence[str] = ()) -> use_cassette:
    """The test's cassette (``marked_cassette``), entered, and closed as the test's fixtures are torn down: after
    those set up after it, before those set up before it. ``allowed_hosts``: more hosts its guard lets through."""
    path, arguments = marked_cassette(item)
    if allowed_hosts:
        arguments["allowed_hosts"] = [*arguments.get("allowed_hosts", ()), *allowed_hosts]
    stack = contextlib.ExitStack()
    cassette = stack.enter_context(open_test_cassette(item, path, arguments))
    item.addfinalizer(stack.close)
    return cassette


def _options(config: pytest.Config, arguments: dict[str, Any]) -> Options:
    """The options of a test's cassette, as ``use_cassette(path, **arguments)`` makes them (the same errors),
    made once per run for each set of arguments: most tests of a suite give the same."""
    from ._core.engine._options import Options

    try:
        key = tuple(sorted((name, type(value), _hashable(value)) for name, value in arguments.items()))
        hash(key)
    except TypeError:  # a value that can't be a key (a dict): made for this test alone
        return Options.of(None, arguments, where="use_cassette()", entry="block")
    made = config.stash.setdefault(_OPTIONS, {})
    if key not in made:
        if len(made) >= MAX_OPTIONS_KEPT:
            made.clear()
        made[key] = Options.of(None, arguments, where="use_cassette()", entry="block")
    return made[key]


def _hashable(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


def _guard_after(config: pytest.Config, cassette: use_cassette, session_guard: Any) -> None:
    """``block_network="session"``: the guard between and after replayed tests, started (the first time, by the
    first guarded test) before the test's own guard stops: no gap; never stopped after the last test."""
    session = cassette.session
    if session_guard is None and session is not None and session.options.block_network == "session":
        if cassette.guarded:
            from ._guard import NetworkGuard

            session_guard = NetworkGuard(_run_allowed_hosts(config), reason="--vcr-block-network=session")
            config.stash[SESSION_GUARD] = session_guard
    if session_guard is not None:
        session_guard.start()


def marked_cassette(item: pytest.Item) -> tuple[Path, dict[str, Any]]:
    """The path and arguments of a marked test's cassette: the marker's arguments (checked), the run-wide
    options, and ``shared_as`` when several tests share the path."""
    marker = item.get_closest_marker(MARKER)
    arguments = dict(marker.kwargs) if marker else {}
    valid = _marker_arguments()
    unknown = set(arguments) - valid
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER} got unknown argument(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(valid))}"
        )
    path = marker_cassette_path(item, arguments.pop("path", None))
    arguments = with_run_options(item.config, arguments)
    if _shared(item.config, path):  # each test's calls are its own (``shared_as``)
        arguments["shared_as"] = written_test_id(item)
    return path, arguments


def _shared(config: pytest.Config, path: Path) -> bool:
    """Whether several tests share the cassette at ``path``: several collected tests name it, or it says so
    (its header, once a shared recording was committed: a run of one of its tests)."""
    from ._storage import is_shared  # lazily, as the rest of the machinery

    claimed = config.stash.get(SHARED, None)
    if claimed and config.stash[RUN].resolved(path) in claimed:
        return True
    return is_shared(path)


class CassetteHooks:
    """The hooks around a test's body and its reports, registered by the run's first cassette
    (``_pytest_run``)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        # A test whose body passed is checked here (``check_at_end``).
        result = yield
        cassette = item.stash.get(CASSETTE, None)
        if cassette is not None:
            check_at_end(item, cassette)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        if call.excinfo is None:
            return (yield)
        hint_missing_key(item, call.excinfo.value)
        report = yield
        note_failure(item, call, report)
        return report


def check_at_end(item: pytest.Item, cassette: use_cassette) -> None:
    """A test whose body passed is checked as its body ends, so that what its cassette missed (a mismatch the
    code caught, unplayed calls, a refused request the SDK swallowed) fails the test, rather than erroring its
    teardown."""
    try:
        cassette.check()
    except BaseException:
        item.stash[CHECKED_AT_END] = True
        raise


def hint_missing_key(item: pytest.Item, error: BaseException) -> None:
    """A marked test that failed with an SDK's missing-key error: a note that replay needs none (before the
    report is made, so that it shows)."""
    if item.get_closest_marker(MARKER) is not None:
        from ._stand_in_keys import add_missing_key_hint

        add_missing_key_hint(error)


def note_failure(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """A failure that passed through our frames shows none of their values (they hold the request as sent). A
    test that failed, xfailed or skipped once its body started did not finish: its recording is not saved. A
    failure its cassette explains is reported in a few lines."""
    if report.failed and call.excinfo is not None:
        from ._pytest_reports import hide_values_of_our_frames

        hide_values_of_our_frames(report, call.excinfo.value)
    if report.when != "call" or call.excinfo is None:
        return
    if report.failed or report.skipped:
        item.stash[CALL_FAILURE] = call.excinfo.value
    cassette = item.stash.get(CASSETTE, None)
    if report.failed and cassette is not None and cassette.session is not None:
        _report_failure(item, call.excinfo, cassette, report)


def _report_failure(item: pytest.Item, excinfo: Any, cassette: use_cassette, report: pytest.TestReport) -> None:
    """Our short report when the cassette explains the failure (``_pytest_reports``); with the whole traceback
    asked for, pytest's, plus the mismatch when the SDK swallowed it."""
    from ._pytest_reports import cassette_report, full_traceback_wanted, raised_mismatch

    if not full_traceback_wanted(item.config):
        short = cassette_report(item, excinfo, cassette, at_end=item.stash.get(CHECKED_AT_END, False))
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
