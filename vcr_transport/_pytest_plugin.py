"""The pytest plugin, registered through the ``pytest11`` entry point.

Loading it patches nothing, reads no environment variable and opens no file: all of that happens in the
``vcr_cassette`` fixture, which the ``@pytest.mark.vcr_transport`` marker requests for a test. (The names
differ from pytest-recording's and cassetter's ``vcr`` so that both can be installed during a migration.)

- ``vcr_cassette``: runs the test inside ``use_cassette``; the cassette is ``cassettes/<module>/<test>.jsonl``
  beside the test file unless the marker names a path.
- ``@pytest.mark.vcr_transport(path=None, mode=None, unplayed=None, **options)``: options as ``use_cassette``.
- ``--vcr-mode``: the mode for the run (below an explicit ``mode=``, above ``VCR_TRANSPORT_MODE``).
- ini ``vcr_unplayed``: ``error`` (default), ``warn`` or ``ignore`` for recorded calls no request asked for.
- In replay, the test can't reach the network: connecting anywhere but loopback raises NetworkBlockedError.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ._config import MODES
from ._context import UNPLAYED_ACTIONS, use_cassette
from ._exceptions import NetworkBlockedError
from ._ledger import note_use
from ._session import REPLAY_OPTIONS

MARKER = "vcr_transport"
MARKER_KWARGS = frozenset({"path", "mode", "unplayed"}) | REPLAY_OPTIONS
MAX_NAME = 100


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vcr_transport", "record and replay HTTP traffic with vcr_transport")
    group.addoption(
        "--vcr-mode",
        choices=MODES,
        default=None,
        help="cassette mode for this run: " + ", ".join(MODES) + " (default: VCR_TRANSPORT_MODE, pyproject, auto)",
    )
    parser.addini("vcr_unplayed", "what unplayed recorded calls do: error, warn or ignore", default="error")


_CALL_FAILED = pytest.StashKey[bool]()
_CALL_FAILURE = pytest.StashKey[BaseException]()  # what failed the test: its recording is not saved
_CASSETTE = pytest.StashKey[use_cassette]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[_CALL_FAILED] = True
        if call.excinfo is not None:
            item.stash[_CALL_FAILURE] = call.excinfo.value
        cassette = item.stash.get(_CASSETTE, None)
        mismatch = cassette.session.first_mismatch if cassette and cassette.session else None
        if mismatch is not None and mismatch.headline not in str(report.longrepr):
            # The SDK swallowed the mismatch and the test failed on what followed: say what changed.
            report.sections.append(("vcr_transport: replay mismatch", str(mismatch)))
    return report


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "vcr_transport(path=None, mode=None, unplayed=None, **options): run the test inside a vcr_transport cassette",
    )


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


def _loopback(host: object) -> bool:
    if not isinstance(host, str | bytes):
        return True  # AF_UNIX paths and the like are local
    text = host.decode() if isinstance(host, bytes) else host
    if text in ("localhost", "") or text.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(text.split("%")[0]).is_loopback
    except ValueError:
        return False


def _block(host: object, port: object) -> NetworkBlockedError:
    return NetworkBlockedError(
        f"replay mode: a connection to {host!r}:{port} was blocked; only loopback is reachable while replaying. "
        "A request that reaches the network was not recorded: re-record with --vcr-mode=record"
    )


@pytest.fixture
def _vcr_network_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if not _loopback(host):
            raise _block(host, port)
        return real_getaddrinfo(host, port, *args, **kwargs)

    def connect(sock: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and not _loopback(address[0]):
            raise _block(address[0], address[1])
        return real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and not _loopback(address[0]):
            raise _block(address[0], address[1])
        return real_connect_ex(sock, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


@pytest.fixture
def vcr_cassette(request: pytest.FixtureRequest) -> Iterator[use_cassette]:
    """The test's cassette, open for the whole test. Fails the test on an unplayed call by default."""
    marker = request.node.get_closest_marker(MARKER)
    kwargs = dict(marker.kwargs) if marker else {}
    unknown = set(kwargs) - MARKER_KWARGS
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER} got unknown argument(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(MARKER_KWARGS))}"
        )
    path = Path(kwargs.pop("path", None) or default_cassette_path(request.node))
    unplayed = kwargs.pop("unplayed", None) or request.config.getini("vcr_unplayed")
    if unplayed not in UNPLAYED_ACTIONS:
        raise pytest.UsageError(f"vcr_unplayed must be one of {', '.join(UNPLAYED_ACTIONS)}, not {unplayed!r}")
    cassette = use_cassette(
        path,
        mode=kwargs.pop("mode", None),
        unplayed=unplayed,
        pytest_option=request.config.getoption("vcr_mode"),
        **kwargs,
    )
    cassette.__enter__()
    request.node.stash[_CASSETTE] = cassette
    try:
        if cassette.mode == "replay":
            request.getfixturevalue("_vcr_network_guard")
        note_use(request.config.rootpath, path)
        yield cassette
    finally:
        # A test that failed already said what went wrong; its unplayed calls are expected.
        cassette.close(
            check=not request.node.stash.get(_CALL_FAILED, False), failure=request.node.stash.get(_CALL_FAILURE, None)
        )


@pytest.fixture(autouse=True)
def _vcr_transport_marker(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker(MARKER) is not None:
        request.getfixturevalue("vcr_cassette")
