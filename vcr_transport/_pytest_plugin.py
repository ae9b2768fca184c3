"""The pytest plugin, registered through the ``pytest11`` entry point.

Loading it patches nothing, reads no environment variable, opens no file and imports none of the machinery
(options, sessions, recording, replay, the network guard): this module is thin, hooks and fixtures that hand
their work to the modules behind them when it comes. What it registers (``--vcr-mode``, the ini settings,
pytest-recording's options) comes from the generated ``_registration.py``; the run's bookkeeping
(``_pytest_run.py``: the ledger, the summary) is loaded when the run is configured; a test's cassette
(``_pytest_cassette.py``) and the compatibility mode (``_compat.py``) when a test uses one, and the machinery by
the first cassette (a test marked ``@pytest.mark.vcr_transport`` or asking for ``vcr_cassette``, or any other
entry point); a run that uses no cassette pays for little more than registering them. (The
names differ from pytest-recording's and cassetter's ``vcr`` so that both can be installed during a
migration.)

- ``vcr_cassette``: runs the test inside ``use_cassette``; the cassette is ``cassettes/<module>/<test>.jsonl``
  beside the test file unless the marker names a path (a relative one is relative to the test file's folder).
  It opens (``_vcr_transport_cassette``, autouse) after the wider fixtures and before the test's function-scoped
  ones, whether the marker or an argument asked for it; asked for with ``request.getfixturevalue``, there.
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

import importlib.machinery
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from ._pytest_keys import CASSETTE, MARKER, RUN, compat_active
from ._registration import COMPAT_FLAGS, COMPAT_INI, COMPAT_OWNERS, COMPAT_VALUE, INI_OPTIONS, MODES

if TYPE_CHECKING:  # imported by the first test that opens a cassette, not when the plugin loads
    from ._context import use_cassette

# The hooks and the fixtures are found by pytest by name; a test's cassette is ``_pytest_cassette``'s.
__all__ = ["MARKER", "vcr_cassette", "wants_cassette"]


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
    parser.addini(COMPAT_INI, f"'{COMPAT_VALUE}' serves a pytest-recording suite with vcr_transport", default="")
    if _compat_owner(pluginmanager) is None:  # else the plugin that owns them registers them, and reads them
        for flag, dest, action, choices, help_text in COMPAT_FLAGS:
            default = False if action == "store_true" else None
            extra: dict[str, Any] = {"choices": list(choices)} if choices else {}
            group.addoption(flag, dest=dest, action=action, default=default, help=help_text, **extra)


def _compat_owner(pluginmanager: pytest.PytestPluginManager) -> str | None:
    """The installed plugin that will serve pytest-recording's options and marker (one not blocked with
    ``-p no:NAME``), if any."""
    for owner, package, plugin in COMPAT_OWNERS:
        if not pluginmanager.is_blocked(plugin) and _installed(package):
            return owner
    return None


_FOUND: dict[str, bool] = {}


def _installed(package: str) -> bool:
    """Whether a top-level package can be imported, looked up on ``sys.path`` once per process (past the
    import hooks: under pytest, the assertion rewriter's makes each look-up cost milliseconds)."""
    if package not in _FOUND:
        _FOUND[package] = importlib.machinery.PathFinder.find_spec(package) is not None
    return _FOUND[package]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "vcr_transport(path=None, mode=None, unplayed=None, **options): run the test inside a vcr_transport cassette",
    )
    from . import _pytest_run

    _pytest_run.configure(config)
    owner = _compat_owner(config.pluginmanager)
    given = owner is None and any(config.getoption(dest, None) for _, dest, *_ in COMPAT_FLAGS)
    if given or str(config.getini(COMPAT_INI)).strip():
        from ._compat import configure_compat

        configure_compat(config, owner)


def pytest_sessionstart(session: pytest.Session) -> None:
    from . import _pytest_run

    _pytest_run.session_started(session)


def pytest_deselected(items: list[pytest.Item]) -> None:
    from . import _pytest_run

    _pytest_run.deselected(items)


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect: every test naming a path makes it shared
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    from . import _pytest_run

    _pytest_run.claim_cassettes(config, items)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    # The run is published for its whole length, so every entry point sees --vcr-mode and reports the
    # cassettes it opens: the marker, use_cassette(), transport() and async_transport().
    from ._run import published_run

    with published_run(session.config.stash[RUN]):
        return (yield)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from . import _pytest_run

    _pytest_run.session_finished(session, exitstatus)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    from . import _pytest_run

    _pytest_run.terminal_summary(terminalreporter, config)


class _Running(threading.local):
    """The tests running now in this thread, innermost last (a pytester run in the process nests one). The
    autouse fixture takes its test from here rather than from ``request``, whose fixture definition pytest builds
    anew (with the signature of a function) each time a fixture asks for it: that was half of what the fixture
    cost every test."""

    def __init__(self) -> None:
        self.items: list[pytest.Item] = []

    def test(self) -> pytest.Item:
        if not self.items:
            raise RuntimeError(
                "vcr_transport's cassette fixture ran outside pytest's pytest_runtest_protocol hook, so it can't "
                "tell which test it serves: a plugin runs tests without that hook; use use_cassette() in the test"
            )
        return self.items[-1]


_RUNNING = _Running()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Any:
    # The test running now, which the summary names for a stale cassette it replayed (any entry point).
    run = item.config.stash[RUN]
    run.current_test = item.nodeid
    _RUNNING.items.append(item)
    try:
        return (yield)
    finally:
        _RUNNING.items.pop()
        run.current_test = ""
        if CASSETTE in item.stash:  # pytest keeps every item until the session ends; its cassette goes now
            del item.stash[CASSETTE]


@pytest.fixture
def vcr_cassette(request: pytest.FixtureRequest, _vcr_transport_cassette: use_cassette | None) -> use_cassette:
    """The test's cassette, open for the whole test. Fails the test on an unplayed call by default;
    ``vcr_cassette.requests`` lists the recorded requests with their play counts."""
    if _vcr_transport_cassette is not None:
        return _vcr_transport_cassette
    hosts: list[str] = []  # asked for with ``request.getfixturevalue``: opened now
    if compat_active(request.config):
        from ._compat import guard_hosts

        hosts = guard_hosts(request)
    return _opened(request.node, hosts)


@pytest.fixture(autouse=True)
def _vcr_transport_cassette() -> use_cassette | None:
    # A marked test's cassette, or that of a test that asks for ``vcr_cassette``: opened before its other
    # function-scoped fixtures and closed after them. A plain function, so that a test without one has nothing to
    # tear down; the only fixture of ours a marked test runs. (The compatibility mode replaces it with one that
    # also lets pytest-recording's allowed hosts through: ``RecordingCompat``.)
    item = _RUNNING.test()
    return _opened(item) if wants_cassette(item) else None


def wants_cassette(item: pytest.Item) -> bool:
    """Whether the test is marked or asks for ``vcr_cassette``."""
    return item.get_closest_marker(MARKER) is not None or "vcr_cassette" in getattr(item, "fixturenames", ())


def _opened(item: pytest.Item, allowed_hosts: Sequence[str] = ()) -> use_cassette:
    from ._pytest_cassette import entered_cassette  # lazily: the first test with a cassette loads it

    return entered_cassette(item, allowed_hosts)
