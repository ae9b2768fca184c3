"""The pytest-recording compatibility mode: a pytest-recording suite served by vcr_transport unchanged.

Opt in with the ini setting ``vcr_transport_compat = pytest-recording``; it is active only when neither
pytest-recording nor cassetter will load (uninstalled, or blocked with ``-p no:recording`` / ``-p no:cassetter``):
each claims ``@pytest.mark.vcr`` and ``--record-mode``. Then:

- ``@pytest.mark.vcr`` opens the test's cassette, named as pytest-recording names it,
  ``<vcr_cassette_dir>/<default_cassette_name>.jsonl`` (``cassettes/<module>/<test name>.jsonl``, the
  parametrize id kept with its brackets, a class as ``Class.test``); a marker argument names another file in
  that folder (its ``.yaml`` read as ``.jsonl``).
- pytest-recording's options, registered here when no plugin that owns them will load:
  ``--record-mode`` none/once/new_episodes/all/rewrite maps to replay/auto/record-on-miss/record/record; without
  it the mode is replay (pytest-recording's ``none``) unless ``--vcr-mode`` or ``VCR_TRANSPORT_MODE`` says.
  ``--block-network`` (and ``@pytest.mark.block_network``) turns the network guard (``_guard.py``) on for every
  test that has no cassette marker; a ``vcr`` (or ``vcr_transport``) test is guarded by its cassette, while it
  replays (never while it records). ``--allowed-hosts=host1,host2`` (or the marker's ``allowed_hosts=[...]``,
  or the ``vcr_config``'s ``allowed_hosts``, in that order) are regular expressions of hosts every guard lets
  through.
  ``--disable-recording`` opens each ``vcr`` test's cassette in the mode ``off``: no cassette is read or
  written and the test reaches the real network. Given without the compatibility mode, they are refused.
- Unplayed recorded calls are not checked (vcrpy never checks them; ini ``vcr_unplayed`` turns that on), and a
  replay mismatch the code under test caught is not raised again at teardown (ini ``vcr_caught_mismatch``).
- The ``vcr_config`` fixture's (and the marker's) ``match_on`` becomes ours (an explicit one beats a cassette's
  header); ``ignore_hosts`` and ``ignore_localhost`` become ``ignore_hosts`` (those requests go on to the
  client's own transport, unrecorded); ``filter_headers`` and ``filter_query_parameters`` names become
  redacted names; ``before_record_request`` becomes a normaliser (below). The rest of vcrpy's configuration
  (serializers, decode_compressed_response...) has no meaning here and is ignored.
- The ``vcr`` fixture is the open cassette seen as vcrpy's ``Cassette``: ``requests`` (each with
  ``play_count``), ``play_count``, ``play_counts``, ``all_played``, ``len()`` and ``record_mode``.
  pytest-recording's ``record_mode``, ``disable_recording`` and ``allowed_hosts`` fixtures are there too.
- A conftest's ``pytest_recording_configure(config, vcr)`` hook is called once, with a stand-in for vcrpy's
  ``VCR`` that keeps the custom matchers it registers (``register_matcher``) and accepts everything else
  (serializers, persisters), which has no meaning here.
- vcrpy's custom comparison maps onto the normalisers where it can: ``before_record_request`` becomes a
  ``normalize_with`` function applied to the recorded and the incoming request alike before they are
  compared (a request it drops, returning None, is compared as it is; what is recorded is not changed by it:
  ``redact_with`` does that). A registered custom matcher named in ``match_on`` compares two requests, which
  no normaliser can stand for: it is left out, the rest of ``match_on`` compared, and the run's summary says
  so in one line. One registered under a built-in name (pydantic-ai's ``host``) can't replace our comparison
  either: the field is compared plainly, and the summary's line points to ``normalize_patterns``, which
  stands for a matcher that ignores a region or project in a host or path.
- The calls vcrpy recorded from ``requests`` and urllib3 (vcrpy patches urllib3) replay from the test's
  cassette too: each ``vcr`` test is a user of ``_urllib3.URLLIB3_REPLAY`` while its cassette is open.
- A collected ``vcr`` test claims its cassette (``claimed_cassette``) even when it is skipped, so ``prune``
  keeps it.
"""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from ._pytest_keys import COMPAT_ACTIVE, compat_active
from ._registration import COMPAT_INI, ENVIRONMENT_VARIABLE

if TYPE_CHECKING:  # the machinery is imported by the first test that opens a cassette
    from ._context import use_cassette
    from ._session import CassetteRequest

__all__ = [
    "COMPAT_VALUE",
    "RECORD_MODES",
    "VCRPY_MATCH_ON",
    "VcrpyCassette",
    "allowed_hosts_of",
    "guard_hosts",
    "compat_active",
    "configure_compat",
    "VcrRegistrations",
    "before_record_request_normalizer",
    "claimed_cassette",
    "options_from_vcr_config",
]

COMPAT_VALUE = "pytest-recording"
# pytest-recording's --record-mode (vcrpy's record modes) as our modes.
RECORD_MODES = {
    "none": "replay",
    "once": "auto",
    "new_episodes": "record-on-miss",
    "all": "record",
    "rewrite": "record",
}
# The hosts vcrpy's ignore_localhost names.
VCRPY_LOCALHOST = ["localhost", "0.0.0.0", "127.0.0.1"]


class _RecordingHookspec:
    """pytest-recording's hook, declared so that a conftest implementing it loads (pytest refuses a
    conftest with an unknown ``pytest_`` hook); it is called once, with ``VcrRegistrations``."""

    @pytest.hookspec
    def pytest_recording_configure(self, config: pytest.Config, vcr: Any) -> None:
        """pytest-recording's: configure the vcrpy ``VCR`` object."""


# The plugins that own pytest-recording's options and marker: (the project, its package, the name pytest loads
# it by). ``_registration`` holds a copy (``COMPAT_OWNERS``), which the thin plugin reads.
OWNERS = (("pytest-recording", "pytest_recording", "recording"), ("cassetter", "cassetter", "cassetter"))
_PREFIX = f"with {COMPAT_INI} = {COMPAT_VALUE}: pytest-recording's"
# pytest-recording's options that this mode serves: (the flag, its dest, its argparse action, its choices, its
# help). The thin plugin registers them from ``_registration``'s copy (``COMPAT_FLAGS``) when no owner will load.
FLAGS: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (
    (
        "--record-mode",
        "record_mode",
        "store",
        tuple(sorted(RECORD_MODES)),
        f"{_PREFIX} record mode, mapped to a vcr_transport mode",
    ),
    (
        "--block-network",
        "block_network",
        "store_true",
        (),
        f"{_PREFIX}: block network access beyond loopback for tests, except a vcr test's cassette while it records",
    ),
    (
        "--allowed-hosts",
        "allowed_hosts",
        "store",
        (),
        f"{_PREFIX}: regular expressions of hosts the network guard lets through, separated by commas",
    ),
    (
        "--disable-recording",
        "disable_recording",
        "store_true",
        (),
        f"{_PREFIX}: vcr tests run with no cassette (mode off) and reach the real network",
    ),
)
BLOCK_NETWORK_ARGUMENTS = ("allowed_hosts",)
# The markers that give a test a cassette: its cassette guards it while it replays, and never while it records.
CASSETTE_MARKERS = ("vcr", "vcr_transport")


def configure_compat(config: pytest.Config, owner: str | None) -> None:
    """Turn the mode on when the ini asks for it and no plugin that owns pytest-recording's options will load
    (``owner``, which the thin plugin found); a wrong value, or those options given without the mode, are
    refused."""
    wanted = str(config.getini(COMPAT_INI)).strip()
    if not wanted:
        given = [flag for flag, dest, *_ in FLAGS if owner is None and config.getoption(dest, None)]
        if given:
            raise pytest.UsageError(
                f"{', '.join(given)}: pytest-recording's option(s), which vcr_transport serves in its compatibility "
                f"mode only; add '{COMPAT_INI} = {COMPAT_VALUE}' to the pytest configuration, or use --vcr-mode"
            )
        return
    if wanted != COMPAT_VALUE:
        raise pytest.UsageError(f"{COMPAT_INI} must be {COMPAT_VALUE!r} (or unset), not {wanted!r}")
    if owner is not None:
        plugin = next(name for project, _, name in OWNERS if project == owner)
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                f"{COMPAT_INI} = {COMPAT_VALUE} is off: {owner} is installed and serves @pytest.mark.vcr; "
                f"uninstall it (or run with -p no:{plugin}) to let vcr_transport serve the suite"
            ),
            stacklevel=2,
        )
        return
    config.stash[COMPAT_ACTIVE] = True
    config.pluginmanager.add_hookspecs(_RecordingHookspec)
    config.addinivalue_line("markers", "vcr(*cassettes, **config): run the test inside its cassette (compat mode)")
    config.addinivalue_line(
        "markers", "block_network(allowed_hosts=None): block network access beyond loopback for the test (compat mode)"
    )
    config.pluginmanager.register(RecordingCompat(), "vcr_transport_pytest_recording")


def cassette_stem(node: pytest.Item, folder: Path | None = None) -> str:
    """pytest-recording's default cassette name: the test name (with its parametrize id), after its class,
    without the credentials the id may carry (``_test_ids``); in ``folder``, the name pytest-recording gave
    it while a cassette of that name exists and none of the new one does."""
    from ._test_ids import found_cassette, without_credentials

    def stem(name: str) -> str:
        cls = getattr(node, "cls", None)
        name = f"{cls.__name__}.{name}" if cls is not None else name
        for forbidden in "<>?%*:|\"'/\\":
            name = name.replace(forbidden, "-")
        return name

    new = stem(without_credentials(node.nodeid).rsplit("::", 1)[-1])
    if folder is None:
        return new
    return found_cassette(folder / f"{new}.jsonl", folder / f"{stem(node.name)}.jsonl").name.removesuffix(".jsonl")


def marker_stem(marker: pytest.Mark | None, default: str) -> str:
    """The cassette's name the ``vcr`` marker gives (its first argument, a ``.yaml`` read as ``.jsonl``), else
    ``default``."""
    if marker is None or not marker.args:
        return default
    return str(marker.args[0]).removesuffix(".yaml").removesuffix(".yml")


def claimed_cassette(node: pytest.Item) -> Path | None:
    """The cassette a ``vcr`` test claims at collection, whether it runs or is skipped (``prune`` keeps it):
    pytest-recording's default folder, the marker's name or the test's. A conftest that overrides the
    ``vcr_cassette_dir`` or ``default_cassette_name`` fixture is only known once the test runs: such a test
    claims the cassette it opens."""
    marker = node.get_closest_marker("vcr")
    if marker is None:
        return None
    module = Path(str(node.path))
    folder = module.parent / "cassettes" / module.stem
    return folder / f"{marker_stem(marker, cassette_stem(node, folder))}.jsonl"


class VcrRegistrations:
    """What a conftest's ``pytest_recording_configure(config, vcr)`` registers on vcrpy's ``VCR``, as far as
    it means anything here: the custom matchers, by name. Every other call or setting is accepted and does
    nothing."""

    def __init__(self) -> None:
        self.matchers: dict[str, Callable[..., Any]] = {}

    def register_matcher(self, name: str, matcher: Callable[..., Any]) -> None:
        self.matchers[name] = matcher

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


def options_from_vcr_config(
    config: dict[str, Any], where: str, registered: VcrRegistrations | None = None, notes: set[str] | None = None
) -> dict[str, Any]:
    """Our options from a vcr_config: match_on kept (``raw_body`` is ``body``; a registered custom matcher
    left out, with a line in ``notes``), ignored hosts (and ``ignore_localhost``) kept out of the cassette,
    filtered names redacted, ``before_record_request`` a ``normalize_with`` function."""
    hook = config.get("before_record_request")
    found = {
        "match_on": _match_on_of(config, where, registered or VcrRegistrations(), set() if notes is None else notes),
        "ignore_hosts": _ignored_hosts_of(config),
        "redact_names": _filtered_names_of(config),
        "normalize_with": (before_record_request_normalizer(hook),) if callable(hook) else None,
    }
    return {name: value for name, value in found.items() if value is not None}


def before_record_request_normalizer(hook: Callable[[Any], Any]) -> Callable[[str, Any], Any]:
    """vcrpy's ``before_record_request`` as a ``normalize_with`` function: at the whole request (path ""), the
    comparable fields are shown to ``hook`` as a vcrpy request (method, uri, headers, body), and what it
    returns is compared: its method, the compared headers it kept (their values as it left them), its body
    (JSON parsed when it is JSON), its URL's path and query. A request it drops (None) is compared as it is."""

    def normalize(path: str, value: Any) -> Any:
        if path or not isinstance(value, dict):
            return value
        changed = hook(_vcrpy_request(value))
        return value if changed is None else _fields_of(changed, value)

    return normalize


def _vcrpy_request(fields: dict[str, Any]) -> Any:
    from urllib.parse import urlencode

    url = fields["url"]
    query = urlencode(url.get("query") or {}, doseq=True)
    uri = f"{url.get('scheme')}://{url.get('host')}{url.get('path') or '/'}" + (f"?{query}" if query else "")
    body = fields["body"]
    data = body.encode() if isinstance(body, str) else json.dumps(body).encode() if body is not None else b""
    return _Request(fields["method"] or "GET", uri, data, dict(fields["headers"]))


class _Request:
    """The parts of vcrpy's ``Request`` a ``before_record_request`` hook reads and writes (vcrpy need not be
    installed)."""

    def __init__(self, method: str, uri: str, body: bytes, headers: dict[str, str]) -> None:
        self.method = method
        self.uri = uri
        self.body = body
        self.headers = headers

    @property
    def url(self) -> str:
        return self.uri

    @property
    def path(self) -> str:
        return urlsplit(self.uri).path

    @property
    def host(self) -> str:
        return urlsplit(self.uri).hostname or ""


def _fields_of(request: Any, before: dict[str, Any]) -> dict[str, Any]:
    headers = {str(name).lower(): value for name, value in dict(request.headers).items()}
    compared = before["body"]
    return {
        **before,
        "method": str(request.method).upper() if before["method"] is not None else None,
        "url": _url_fields_of(request, before["url"]),
        "headers": {name: headers[name] for name in before["headers"] if name in headers},
        "body": None if compared is None else _body_of(request, json_expected=not isinstance(compared, str)),
    }


def _body_of(request: Any, *, json_expected: bool) -> Any:
    """A vcrpy request's body as text, read as JSON when the fields it is compared with hold JSON."""
    body: Any = request.body if request.body is not None else b""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if json_expected:
        try:
            body = json.loads(body) if body else ""
        except ValueError:
            pass
    return body


def _url_fields_of(request: Any, before: dict[str, Any]) -> dict[str, Any]:
    """The URL fields ``before`` holds, with a vcrpy request's path and (when compared) its query."""
    url = dict(before)
    parts = urlsplit(str(request.uri))
    url["path"] = parts.path or "/"
    if url.get("query") is not None:
        query: dict[str, Any] = {}
        for name, item in parse_qsl(parts.query, keep_blank_values=True):
            query.setdefault(name, []).append(item)
        url["query"] = {name: items[0] if len(items) == 1 else items for name, items in query.items()}
    return url


def _match_on_of(
    config: dict[str, Any], where: str, registered: VcrRegistrations, notes: set[str]
) -> tuple[str, ...] | None:
    from ._core.engine._matching import MATCH_ON_NAMES  # lazily: only a vcr test's cassette needs matching

    given = "match_on" in config
    names = _vcrpy_match_on(config)
    registered_names = [name for name in names if name in registered.matchers]
    _note_overridden([name for name in registered_names if name in MATCH_ON_NAMES], notes)
    if not given:
        return None
    names = _without_custom(names, [name for name in registered_names if name not in MATCH_ON_NAMES], notes)
    unknown = [name for name in names if name not in MATCH_ON_NAMES]
    if unknown:
        raise pytest.UsageError(
            f"{where}: match_on has {', '.join(map(repr, unknown))}, which vcr_transport can't match on; "
            f"valid: {', '.join(MATCH_ON_NAMES)}"
        )
    return tuple(dict.fromkeys(names))


# vcrpy's own default ``match_on``: an imported cassette keeps it (written into its header) until told
# otherwise; request bodies and headers are not compared.
VCRPY_MATCH_ON = ("method", "scheme", "host", "port", "path", "query")


def _vcrpy_match_on(config: dict[str, Any]) -> list[str]:
    """What vcrpy compares: the ``match_on`` given (``raw_body`` as ``body``), else vcrpy's default, which an
    imported cassette's header keeps."""
    return ["body" if name == "raw_body" else name for name in config.get("match_on", VCRPY_MATCH_ON)]


def _without_custom(names: list[str], custom: list[str], notes: set[str]) -> list[str]:
    """``names`` without the registered custom matchers named in ``match_on``, which compare two requests (no
    normaliser can stand for one); the note says so."""
    if custom:
        notes.add(
            f"vcr_transport can't apply vcrpy's custom matcher(s) {', '.join(map(repr, custom))} (a comparison of "
            "two requests): the rest of match_on is compared; a normalize_with function that makes both sides "
            "equal where they may differ stands for one"
        )
    return [name for name in names if name not in custom]


def _note_overridden(overridden: list[str], notes: set[str]) -> None:
    """A custom matcher registered under a built-in name (pydantic-ai's ``host``, ``path`` and ``method``, which
    ignore Bedrock and Vertex regions and projects) replaces vcrpy's own comparison, which can't be applied:
    the field is compared as vcr_transport compares it, and the note says what stands for the matcher."""
    if overridden:
        notes.add(
            f"vcr_transport can't apply the custom matcher(s) registered under vcrpy's built-in name(s) "
            f"{', '.join(map(repr, overridden))}: those fields are compared plainly; where a matcher ignored "
            "part of a value (a region or project in a host or path), normalize_patterns in "
            "[tool.vcr_transport] replaces it on both sides (see the vcrpy migration guide)"
        )


def _ignored_hosts_of(config: dict[str, Any]) -> tuple[str, ...] | None:
    hosts = [str(host) for host in config.get("ignore_hosts", ())]
    if config.get("ignore_localhost"):
        hosts += VCRPY_LOCALHOST
    return tuple(dict.fromkeys(hosts)) or None


def _filtered_names_of(config: dict[str, Any]) -> tuple[str, ...] | None:
    names = [
        entry[0] if isinstance(entry, tuple | list) else entry
        for key in ("filter_headers", "filter_query_parameters", "filter_post_data_parameters")
        for entry in config.get(key, ())
    ]
    return tuple(str(name).lower() for name in names) or None


def given_record_mode(config: pytest.Config, vcr_config: dict[str, Any]) -> str | None:
    """pytest-recording's record mode, from ``--record-mode`` or the vcr_config, when one is given."""
    given = config.getoption("record_mode", None) or vcr_config.get("record_mode")
    if given is None:
        return None
    if str(given) not in RECORD_MODES:
        raise pytest.UsageError(f"record_mode {given!r} is not one of {', '.join(sorted(RECORD_MODES))}")
    return str(given)


def allowed_hosts_of(request: pytest.FixtureRequest) -> list[str]:
    """pytest-recording's allowed hosts for a test, first found of: the ``block_network`` marker's
    ``allowed_hosts``, ``--allowed-hosts``, the ``vcr_config``'s ``allowed_hosts``; a text is split on commas.
    Each is a regular expression; one that does not compile is refused, naming where it came from."""
    marker = request.node.get_closest_marker("block_network")
    vcr_config = request.getfixturevalue("vcr_config")
    from_marker = marker.kwargs.get("allowed_hosts") if marker is not None else None
    for where, given in (
        (f"@pytest.mark.block_network(allowed_hosts=...) of {request.node.nodeid}", from_marker),
        ("--allowed-hosts", request.config.getoption("allowed_hosts", None)),
        (f"vcr_config['allowed_hosts'] of {request.node.nodeid}", vcr_config.get("allowed_hosts")),
    ):
        if given:
            return _host_patterns(where, given)
    return []


def _host_patterns(where: str, given: Any) -> list[str]:
    """Allowed hosts given as text (split on commas) or a list, each a regular expression that compiles and
    that RE2 takes (it runs in linear time); else a usage error naming ``where``."""
    items = given.split(",") if isinstance(given, str) else list(given)
    if not all(isinstance(item, str) for item in items):
        raise pytest.UsageError(f"{where}: allowed hosts are regular expressions (text), not {given!r}")
    hosts = [item.strip() for item in items if item.strip()]
    try:
        from ._core.engine._options import compile_patterns  # lazily: loading the plugin imports no option
        from ._core.rules._patterns import user_pattern

        compile_patterns(hosts, where)
        for host in hosts:
            user_pattern(host, where)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    return hosts


def guard_hosts(request: pytest.FixtureRequest) -> list[str]:
    """The ``allowed_hosts`` fixture's regular expressions as rules of the option ``allowed_hosts`` (``re:``)."""
    return [f"re:{pattern}" for pattern in request.getfixturevalue("allowed_hosts")]


def _check_block_network_marker(request: pytest.FixtureRequest) -> pytest.Mark | None:
    marker: pytest.Mark | None = request.node.get_closest_marker("block_network")
    if marker is not None and (marker.args or set(marker.kwargs) - set(BLOCK_NETWORK_ARGUMENTS)):
        raise pytest.UsageError(
            f"@pytest.mark.block_network of {request.node.nodeid} takes only the keyword argument "
            f"{', '.join(BLOCK_NETWORK_ARGUMENTS)}; got args {marker.args!r}, kwargs {marker.kwargs!r}"
        )
    return marker


def compat_mode(config: pytest.Config, vcr_config: dict[str, Any]) -> str | None:
    if config.getoption("disable_recording", False):
        return "off"  # pytest-recording's --disable-recording: no VCR at all, whatever the record mode
    given = given_record_mode(config, vcr_config)
    if given is not None:
        return RECORD_MODES[given]
    if config.getoption("vcr_mode", None) or os.environ.get(ENVIRONMENT_VARIABLE):
        return None  # our own resolution decides
    from ._core.engine._options import Options

    return str(Options.knob("mode").compat)  # replay: pytest-recording's default, none


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


_REGISTERED = pytest.StashKey[VcrRegistrations]()


def _registrations(config: pytest.Config) -> VcrRegistrations:
    """What the conftests' ``pytest_recording_configure`` hooks registered, called once per run."""
    registered = config.stash.get(_REGISTERED, None)
    if registered is None:
        registered = config.stash[_REGISTERED] = VcrRegistrations()
        config.hook.pytest_recording_configure(config=config, vcr=registered)
    return registered


class RecordingCompat:
    """pytest-recording's fixtures, registered as a plugin when the mode is on. ``notes``: what of the
    suite's vcrpy configuration can't be applied, said once at the end of the run."""

    def __init__(self) -> None:
        self.notes: set[str] = set()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for note in sorted(self.notes):
            terminalreporter.write_line(note)

    @pytest.fixture
    def vcr_config(self) -> dict[str, Any]:
        """The project's vcrpy configuration (a conftest overrides this empty one)."""
        return {}

    @pytest.fixture(scope="session")
    def record_mode(self, request: pytest.FixtureRequest) -> str:
        """pytest-recording's: ``--record-mode``, else ``none``."""
        return str(request.config.getoption("record_mode", None) or "none")

    @pytest.fixture(scope="session")
    def disable_recording(self, request: pytest.FixtureRequest) -> bool:
        """pytest-recording's: whether ``--disable-recording`` was given."""
        return bool(request.config.getoption("disable_recording", False))

    @pytest.fixture
    def allowed_hosts(self, request: pytest.FixtureRequest) -> list[str]:
        """The regular expressions of hosts the network guard lets through for this test."""
        return allowed_hosts_of(request)

    @pytest.fixture(autouse=True)
    def block_network(self, request: pytest.FixtureRequest) -> Iterator[None]:
        """pytest-recording's ``--block-network`` and ``@pytest.mark.block_network``: the network guard for a test
        with no cassette marker (a ``vcr`` or ``vcr_transport`` test's cassette guards it while it replays, and
        never while it records)."""
        marker = _check_block_network_marker(request)
        wanted = marker is not None or bool(request.config.getoption("block_network", False))
        if not wanted or any(request.node.get_closest_marker(name) is not None for name in CASSETTE_MARKERS):
            yield
            return
        from ._guard import NetworkGuard  # lazily: only a guarded test loads it

        reason = "@pytest.mark.block_network" if marker is not None else "--block-network"
        with NetworkGuard(guard_hosts(request), reason=reason):
            yield

    @pytest.fixture
    def vcr_cassette_dir(self, request: pytest.FixtureRequest) -> str:
        """``cassettes/<module>`` beside the test module, as pytest-recording has it."""
        module = Path(str(request.node.path))
        return str(module.parent / "cassettes" / module.stem)

    @pytest.fixture
    def default_cassette_name(self, request: pytest.FixtureRequest) -> str:
        return cassette_stem(request.node, Path(request.getfixturevalue("vcr_cassette_dir")))

    @pytest.fixture
    def vcr(self, request: pytest.FixtureRequest) -> Iterator[VcrpyCassette]:
        """The test's cassette, open for the test, as vcrpy's ``Cassette`` shows itself."""
        from ._pytest_cassette import open_test_cassette, with_run_options

        marker = request.node.get_closest_marker("vcr")
        config = {**request.getfixturevalue("vcr_config"), **(marker.kwargs if marker else {})}
        folder = Path(request.getfixturevalue("vcr_cassette_dir"))
        stem = marker_stem(marker, request.getfixturevalue("default_cassette_name"))
        options = options_from_vcr_config(
            config, f"vcr_config of {request.node.nodeid}", _registrations(request.config), self.notes
        )
        arguments = {
            "mode": compat_mode(request.config, config),
            "allowed_hosts": guard_hosts(request),
            **options,
        }
        arguments = with_run_options(request.config, arguments)
        from ._urllib3 import URLLIB3_REPLAY  # vcrpy records urllib3 (requests) calls: they replay here too

        with URLLIB3_REPLAY, open_test_cassette(request.node, folder / f"{stem}.jsonl", arguments) as cassette:
            yield VcrpyCassette(cassette, given_record_mode(request.config, config))

    @pytest.fixture(autouse=True)
    def _vcr_transport_cassette(self, request: pytest.FixtureRequest) -> use_cassette | None:
        """The plugin's fixture of the same name (which this one replaces), whose guard also lets this mode's
        allowed hosts through (the ``allowed_hosts`` fixture's, which a conftest may override)."""
        from ._pytest_cassette import entered_cassette
        from ._pytest_plugin import wants_cassette

        return entered_cassette(request.node, guard_hosts(request)) if wants_cassette(request.node) else None

    @pytest.fixture(autouse=True)
    def _vcr_transport_vcr_marker(self, request: pytest.FixtureRequest) -> None:
        if request.node.get_closest_marker("vcr") is not None:
            request.getfixturevalue("vcr")
