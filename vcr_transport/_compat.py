"""The pytest-recording compatibility mode: a pytest-recording suite served by vcr_transport unchanged.

Opt in with the ini setting ``vcr_transport_compat = pytest-recording``; it is active only when
pytest-recording is not installed and cassetter's plugin is not loaded (each claims ``@pytest.mark.vcr``). Then:

- ``@pytest.mark.vcr`` opens the test's cassette, named as pytest-recording names it,
  ``<vcr_cassette_dir>/<default_cassette_name>.jsonl`` (``cassettes/<module>/<test name>.jsonl``, the
  parametrize id kept with its brackets, a class as ``Class.test``); a marker argument names another file in
  that folder (its ``.yaml`` read as ``.jsonl``).
- ``--record-mode`` none/once/new_episodes/all/rewrite maps to replay/auto/record-on-miss/record/record; without
  it the mode is replay (pytest-recording's ``none``) unless ``--vcr-mode`` or ``VCR_TRANSPORT_MODE`` says.
- The ``vcr_config`` fixture's (and the marker's) ``match_on`` becomes ours (an explicit one beats a cassette's
  header); ``ignore_hosts`` and ``ignore_localhost`` become ``ignore_hosts`` (those requests go on to the
  client's own transport, unrecorded); ``filter_headers`` and ``filter_query_parameters`` names become
  redacted names. The rest of vcrpy's configuration (serializers, hooks, decode_compressed_response...) has
  no meaning here and is ignored.
- The ``vcr`` fixture is the open cassette seen as vcrpy's ``Cassette``: ``requests`` (each with
  ``play_count``), ``play_count``, ``play_counts``, ``all_played``, ``len()`` and ``record_mode``.
- A conftest's ``pytest_recording_configure(config, vcr)`` hook is accepted and not called: it configures
  vcrpy (serializers, matchers, hooks), which doesn't serve the suite here.
"""

from __future__ import annotations

import collections
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ._core._matching import MATCH_ON_NAMES
from ._session import CassetteRequest

__all__ = [
    "COMPAT_VALUE",
    "RECORD_MODES",
    "VcrpyCassette",
    "add_compat_options",
    "compat_active",
    "configure_compat",
]

COMPAT_INI = "vcr_transport_compat"
COMPAT_VALUE = "pytest-recording"
# pytest-recording's --record-mode (vcrpy's record modes) as our modes.
RECORD_MODES = {
    "none": "replay",
    "once": "auto",
    "new_episodes": "record-on-miss",
    "all": "record",
    "rewrite": "record",
}
_ACTIVE = pytest.StashKey[bool]()
# The hosts vcrpy's ignore_localhost names.
VCRPY_LOCALHOST = ["localhost", "0.0.0.0", "127.0.0.1"]


class _RecordingHookspec:
    """pytest-recording's hook, declared so that a conftest implementing it loads (pytest refuses a
    conftest with an unknown ``pytest_`` hook); it is never called."""

    @pytest.hookspec
    def pytest_recording_configure(self, config: pytest.Config, vcr: Any) -> None:
        """pytest-recording's: configure the vcrpy ``VCR`` object."""


def _pytest_recording_installed() -> bool:
    return importlib.util.find_spec("pytest_recording") is not None


def add_compat_options(parser: pytest.Parser) -> None:
    """The ini switch, and ``--record-mode`` unless a plugin that owns that option is installed
    (pytest-recording, cassetter); then theirs is read."""
    parser.addini(COMPAT_INI, f"'{COMPAT_VALUE}' serves a pytest-recording suite with vcr_transport", default="")
    if not any(importlib.util.find_spec(name) is not None for name in ("pytest_recording", "cassetter")):
        parser.getgroup("vcr_transport").addoption(
            "--record-mode",
            choices=sorted(RECORD_MODES),
            default=None,
            help=f"with {COMPAT_INI} = {COMPAT_VALUE}: pytest-recording's record mode, mapped to a vcr_transport mode",
        )


def compat_active(config: pytest.Config) -> bool:
    return config.stash.get(_ACTIVE, False)


def configure_compat(config: pytest.Config) -> None:
    """Turn the mode on when the ini asks for it and pytest-recording is absent; a wrong value is refused."""
    wanted = str(config.getini(COMPAT_INI)).strip()
    if not wanted:
        return
    if wanted != COMPAT_VALUE:
        raise pytest.UsageError(f"{COMPAT_INI} must be {COMPAT_VALUE!r} (or unset), not {wanted!r}")
    owner = "pytest-recording" if _pytest_recording_installed() else None
    if owner is None and config.pluginmanager.hasplugin("cassetter"):
        owner = "cassetter"
    if owner is not None:
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                f"{COMPAT_INI} = {COMPAT_VALUE} is off: {owner} is installed and serves @pytest.mark.vcr; "
                f"uninstall it (or run with -p no:{owner.replace('pytest-', '')}) to let vcr_transport serve the suite"
            ),
            stacklevel=2,
        )
        return
    config.stash[_ACTIVE] = True
    config.pluginmanager.add_hookspecs(_RecordingHookspec)
    config.addinivalue_line("markers", "vcr(*cassettes, **config): run the test inside its cassette (compat mode)")
    config.pluginmanager.register(RecordingCompat(), "vcr_transport_pytest_recording")


def cassette_stem(node: pytest.Item) -> str:
    """pytest-recording's default cassette name: the test name (with its parametrize id), after its class."""
    cls = getattr(node, "cls", None)
    name = f"{cls.__name__}.{node.name}" if cls is not None else node.name
    for forbidden in "<>?%*:|\"'/\\":
        name = name.replace(forbidden, "-")
    return name


def options_from_vcr_config(config: dict[str, Any], where: str) -> dict[str, Any]:
    """Our options from a vcr_config: match_on kept (``raw_body`` is ``body``), ignored hosts (and
    ``ignore_localhost``) kept out of the cassette, filtered names redacted."""
    options: dict[str, Any] = {}
    if "match_on" in config:
        names = ["body" if name == "raw_body" else name for name in config["match_on"]]
        unknown = [name for name in names if name not in MATCH_ON_NAMES]
        if unknown:
            raise pytest.UsageError(
                f"{where}: match_on has {', '.join(map(repr, unknown))}, which vcr_transport can't match on; "
                f"valid: {', '.join(MATCH_ON_NAMES)}"
            )
        options["match_on"] = tuple(dict.fromkeys(names))
    hosts = [str(host) for host in config.get("ignore_hosts", ())]
    if config.get("ignore_localhost"):
        hosts += VCRPY_LOCALHOST
    if hosts:
        options["ignore_hosts"] = tuple(dict.fromkeys(hosts))
    redacted = [
        entry[0] if isinstance(entry, tuple | list) else entry
        for key in ("filter_headers", "filter_query_parameters", "filter_post_data_parameters")
        for entry in config.get(key, ())
    ]
    if redacted:
        options["redact_names"] = tuple(str(name).lower() for name in redacted)
    return options


def given_record_mode(config: pytest.Config, vcr_config: dict[str, Any]) -> str | None:
    """pytest-recording's record mode, from ``--record-mode`` or the vcr_config, when one is given."""
    given = config.getoption("record_mode", None) or vcr_config.get("record_mode")
    if given is None:
        return None
    if str(given) not in RECORD_MODES:
        raise pytest.UsageError(f"record_mode {given!r} is not one of {', '.join(sorted(RECORD_MODES))}")
    return str(given)


def compat_mode(config: pytest.Config, vcr_config: dict[str, Any]) -> str | None:
    given = given_record_mode(config, vcr_config)
    if given is not None:
        return RECORD_MODES[given]
    if config.getoption("vcr_mode", None) or os.environ.get("VCR_TRANSPORT_MODE"):
        return None  # our own resolution decides
    return "replay"  # pytest-recording's default, none


# Our concrete modes as vcrpy record modes, for ``vcr.record_mode`` when no record mode was given.
_VCRPY_RECORD_MODES = {"replay": "none", "record": "all", "record-on-miss": "new_episodes"}


class VcrpyCassette:
    """The open cassette as vcrpy's ``Cassette`` shows itself to a test (the ``vcr`` fixture): the recorded
    requests with their play counts, and the record mode as vcrpy names it. Every other public attribute is
    the ``use_cassette`` block's."""

    def __init__(self, cassette: Any, record_mode: str | None) -> None:
        self._cassette = cassette
        self._record_mode = record_mode

    @property
    def requests(self) -> list[CassetteRequest]:
        return list(self._cassette.requests)

    @property
    def play_count(self) -> int:
        return int(self._cassette.play_count)

    @property
    def play_counts(self) -> collections.Counter[int]:
        """How often each request was played, by its index in ``requests`` (vcrpy's Counter)."""
        return collections.Counter({index: r.play_count for index, r in enumerate(self.requests) if r.play_count})

    @property
    def all_played(self) -> bool:
        return bool(self._cassette.all_played)

    @property
    def record_mode(self) -> str:
        """vcrpy's record mode: the one given, else the mode in force as vcrpy names it (``none`` for replay)."""
        return self._record_mode or _VCRPY_RECORD_MODES.get(self._cassette.mode, "once")

    def __len__(self) -> int:
        return len(self.requests)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._cassette, name)


class RecordingCompat:
    """pytest-recording's fixtures, registered as a plugin when the mode is on."""

    @pytest.fixture
    def vcr_config(self) -> dict[str, Any]:
        """The project's vcrpy configuration (a conftest overrides this empty one)."""
        return {}

    @pytest.fixture
    def vcr_cassette_dir(self, request: pytest.FixtureRequest) -> str:
        """``cassettes/<module>`` beside the test module, as pytest-recording has it."""
        module = Path(str(request.node.path))
        return str(module.parent / "cassettes" / module.stem)

    @pytest.fixture
    def default_cassette_name(self, request: pytest.FixtureRequest) -> str:
        return cassette_stem(request.node)

    @pytest.fixture
    def vcr(self, request: pytest.FixtureRequest) -> Iterator[VcrpyCassette]:
        """The test's cassette, open for the test, as vcrpy's ``Cassette`` shows itself."""
        from ._pytest_plugin import open_test_cassette, unplayed_action

        marker = request.node.get_closest_marker("vcr")
        config = {**request.getfixturevalue("vcr_config"), **(marker.kwargs if marker else {})}
        folder = Path(request.getfixturevalue("vcr_cassette_dir"))
        stem = request.getfixturevalue("default_cassette_name")
        if marker is not None and marker.args:
            stem = str(marker.args[0]).removesuffix(".yaml").removesuffix(".yml")
        options = options_from_vcr_config(config, f"vcr_config of {request.node.nodeid}")
        with open_test_cassette(
            request,
            folder / f"{stem}.jsonl",
            mode=compat_mode(request.config, config),
            unplayed=unplayed_action(request.config),
            **options,
        ) as cassette:
            yield VcrpyCassette(cassette, given_record_mode(request.config, config))

    @pytest.fixture(autouse=True)
    def _vcr_transport_vcr_marker(self, request: pytest.FixtureRequest) -> None:
        if request.node.get_closest_marker("vcr") is not None:
            request.getfixturevalue("vcr")
