from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# pytester's in-process runs unload every module they import. The plugin imports its machinery when a test
# first opens a cassette: load it here, as a real run keeps it, so that every inner run shares one copy
# (one client patcher, one network guard) with the tests around it.
import vcr_transport._context  # noqa: F401
import vcr_transport._guard  # noqa: F401

pytest_plugins = ["pytester"]

sys.path.insert(0, os.path.dirname(__file__))

# The suite reads its fixtures from the repository (tests/fixtures/wire) and never the team's captures beside
# CI's checkout: a test that passes only where that folder happens to be proves nothing in a clone. Installed
# before any test module imports, so that a read of it anywhere in the run fails where it is made.
OUTSIDE_THE_CLONE = str(Path(__file__).resolve().parents[2] / "shared")


def _refuse_the_shared_captures(event: str, arguments: tuple[object, ...]) -> None:
    if event not in ("open", "os.listdir", "os.scandir") or not arguments:
        return
    path = arguments[0]
    if isinstance(path, str | bytes | os.PathLike):
        where = os.path.abspath(os.fsdecode(path))
        if where == OUTSIDE_THE_CLONE or where.startswith(OUTSIDE_THE_CLONE + os.sep):
            raise PermissionError(f"{where}: a test read the captures beside the checkout; use tests/fixtures/wire")


sys.addaudithook(_refuse_the_shared_captures)

from upstream import Upstream  # noqa: E402
from vendors import SDKS, VENDOR_ROUTES, Sdk  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _parse_cache_in_the_session_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The replay parse cache goes to the test session's temporary folder, not the user's ~/.cache."""
    folder = tmp_path_factory.mktemp("parse-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VCR_TRANSPORT_CACHE_DIR", str(folder))
        yield


@pytest.fixture(autouse=True)
def _not_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts outside CI, as on a developer's machine: ``CI`` changes what ``auto`` and a configured
    recording mode do, so a test that is about CI sets it itself."""
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    for prefix, reply in VENDOR_ROUTES.values():
        server.routes[prefix] = reply
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=SDKS, ids=lambda sdk: sdk.id)
def sdk(request: pytest.FixtureRequest) -> Sdk:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    return tmp_path / "cassette.jsonl"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester project as a user's suite: no mode in the environment, outside CI, warnings as errors. (A
    module that needs another project defines its own ``project``.)"""
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\n")
    return pytester
