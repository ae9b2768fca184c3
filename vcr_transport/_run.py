"""The pytest run in progress, as every entry point sees it: the plugin publishes its run here for the run's
whole length (``published_run``); ``use_cassette()``, ``transport()`` and ``async_transport()`` read its
``--vcr-mode`` and tell it of every cassette they open and close (for the usage ledger and the end-of-run
summary), and where a project keeps that ledger (``ledger_path``: the plugin looks for it as every run starts,
without loading ``_ledger``). A leaf: the plugin loads it in every run, and it imports nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["PytestRun", "current_run", "ledger_path", "published_run"]


def ledger_path(root: Path) -> Path:
    """The usage ledger of the project whose pytest rootdir is ``root`` (``_ledger``)."""
    return root / ".vcr_transport" / "ledger.json"


class PytestRun:
    """A pytest run in progress: its ``--vcr-mode`` (None when not given), its rootdir (``root``: the project
    no symlink may lead a write out of, see ``_write_paths``), and what it is told of cassettes. The plugin
    subclasses it; the methods here do nothing."""

    def __init__(self, vcr_mode: str | None, root: Path | None = None) -> None:
        self.vcr_mode = vcr_mode
        self.root = root

    def cassette_opened(self, path: Path, mode: str, owner: str = "") -> None:
        """A cassette was opened in ``mode`` (concrete) through any entry point; ``owner``: for the test
        of that name in a cassette several tests share (``shared_as``)."""

    def cassette_closed(self, path: Path, outcome: str) -> None:
        """A cassette was closed: ``outcome`` is what ``CassetteSession.outcome()`` says."""

    def cassette_checked(self, path: Path, compared: int, not_compared: list[str]) -> None:
        """A cassette opened in mode check was closed: ``compared`` live answers were compared with the
        recorded calls their requests stand for; ``not_compared`` says, per request, why its answer was not."""

    def cassette_stale(self, path: Path, age_days: float, max_age: float) -> None:
        """A replayed cassette was recorded more than ``max_age`` days ago (``on_expiry`` warn or
        record-on-miss): the run says so once, at its end."""


# The pytest run in progress, if any. Set by the plugin only.
_runs: list[PytestRun] = []


@contextmanager
def published_run(run: PytestRun) -> Iterator[None]:
    """The pytest plugin's run, in force for every cassette opened until it ends."""
    _runs.append(run)
    try:
        yield
    finally:
        _runs.remove(run)


def current_run() -> PytestRun | None:
    return _runs[-1] if _runs else None
