"""What the pytest plugin's modules keep on pytest's config and items (``pytest.StashKey``), and the marker's
name: a leaf the thin plugin (``_pytest_plugin``), the run's bookkeeping (``_pytest_run``), a test's cassette
(``_pytest_cassette``) and the pytest-recording compatibility mode (``_compat``) share, so that none of them
imports another to reach it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ._context import use_cassette
    from ._pytest_run import PluginRun

__all__ = [
    "CALL_FAILURE",
    "CASSETTE",
    "CHECKED_AT_END",
    "COMPAT_ACTIVE",
    "MARKER",
    "RUN",
    "SESSION_GUARD",
    "SHARED",
    "compat_active",
]

MARKER = "vcr_transport"
RUN: pytest.StashKey[PluginRun] = pytest.StashKey()  # this process's part of the run (``_pytest_run.PluginRun``)
CASSETTE: pytest.StashKey[use_cassette] = pytest.StashKey()  # the test's open cassette
CALL_FAILURE = pytest.StashKey[BaseException]()  # what failed the test: its recording is not saved
CHECKED_AT_END = pytest.StashKey[bool]()  # the test's body passed; the cassette's check at its end failed it
SESSION_GUARD = pytest.StashKey[Any]()  # block_network="session": the guard between and after replayed tests
SHARED = pytest.StashKey[set[Path]]()  # the cassette paths that several collected tests name
COMPAT_ACTIVE = pytest.StashKey[bool]()  # the pytest-recording compatibility mode is on (``_compat``)


def compat_active(config: pytest.Config) -> bool:
    return config.stash.get(COMPAT_ACTIVE, False)
