"""The pytest plugin's failure reports: short, ours, whatever the SDK made of the error.

Imported by the plugin when a test with a cassette fails, never when it loads. A test whose cassette saw a
replay mismatch, refused a request (a missing cassette, a recording refused under ``CI``) or left recorded
calls unplayed fails with at most 15 lines:

- what happened first (the mismatch line, the missing cassette, the unplayed calls told apart by model and
  first words), the test's own line, and the exception the test got, named in one line;
- the cheapest fix: the test's node id with ``--vcr-mode=record-on-miss`` (``--lf`` for every test that
  failed), ``--vcr-mode=record`` only as the way to start over;
- the short summary line (``FAILED test_x.py::test_chat - field body.prompt: ...``) names the field.

``--tb=long``, ``--tb=native`` and ``-vv`` keep pytest's whole traceback; ``--tb=line`` gives the summary line.

Whatever the report, the arguments and locals of our own frames are not shown (``hide_our_values``): they hold
the request as the client sent it, its key and body unredacted, and ``-l`` or a long traceback would print
them into the CI log. The frames, their lines and the exception stay.
"""

from __future__ import annotations

import shlex
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from _pytest._code.code import (
    ExceptionChainRepr,
    ExceptionInfo,
    ReprEntry,
    ReprExceptionInfo,
    ReprFileLocation,
    ReprFuncArgs,
    ReprLocals,
    ReprTraceback,
)

from ._display import side_by_side, visible
from ._exceptions import CassetteError, ReplayMismatch, ShapeDriftError, UnplayedCallsError

if TYPE_CHECKING:
    from ._context import use_cassette
    from ._session import CassetteSession

__all__ = [
    "cassette_report",
    "full_traceback_wanted",
    "hide_our_values",
    "hide_values_of_our_frames",
    "raised_mismatch",
]

MAX_UNPLAYED_SHOWN = 4
MAX_LINES = 15  # of a short report
ONE_LINE = 72  # characters of the exception the test got: its line stays within 100
# The lines a fix starts with: the exception the test got goes before them, so that the fix stays last.
_FIX_STARTS = (
    "if the change is intended",
    "re-record it",
    "the marker's mode=",
    "record it where",
    "to record on purpose",
    "fix:",
    "the test made fewer",
    "the API changed",
)


def full_traceback_wanted(config: pytest.Config) -> bool:
    """``--tb=long``, ``--tb=native`` or ``-vv``: pytest's own report, whole."""
    return config.getoption("tbstyle", "auto") in ("long", "native") or config.get_verbosity() >= 2


def raised_mismatch(error: BaseException | None) -> ReplayMismatch | None:
    """The ReplayMismatch a test failed with, itself or as the cause or context of what the SDK raised."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, ReplayMismatch):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


def _raised(error: BaseException | None, kind: type[BaseException]) -> BaseException | None:
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, kind):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


def cassette_report(
    item: pytest.Item, excinfo: ExceptionInfo[BaseException], cassette: use_cassette, *, at_end: bool = False
) -> ReprExceptionInfo | None:
    """Our report of a failed test, when its cassette explains the failure; None leaves pytest's. ``at_end``:
    the test's body passed, and the cassette's check when it ended raised."""
    error = excinfo.value
    explained = None if cassette.session is None else _explained(item, error, cassette.session, at_end)
    if explained is None:
        return None
    reported, lines, crash = explained
    if error is not reported:  # before the fix, which stays last
        at = next((i for i, line in enumerate(lines) if line.startswith(_FIX_STARTS)), len(lines))
        lines.insert(at, f"(the test failed with {_one_line(error)})")
    hidden = len(excinfo.traceback) - (1 if _raised_in_test(item, excinfo) else 0)
    if hidden > 0 and not isinstance(error, UnplayedCallsError | ShapeDriftError):
        lines.append(f"hidden: {hidden} frames of the SDK and vcr_transport; --tb=long shows them")
    return _repr(item, excinfo, lines, crash)


def _explained(
    item: pytest.Item, error: BaseException, session: CassetteSession, at_end: bool
) -> tuple[BaseException, list[str], str] | None:
    """What the cassette explains the failure with (the error itself, the mismatch the session saw, or the
    cassette that broke), the report's lines and its crash line; None when the cassette does not explain it."""
    if isinstance(error, UnplayedCallsError):
        return (error, *_unplayed(item, error))
    if isinstance(error, ShapeDriftError):
        return (error, *_drifted(item, error))
    mismatch = raised_mismatch(error) or session.first_mismatch
    if mismatch is not None:
        lines, crash = _mismatch(item, mismatch, session.source)
        if error is mismatch and at_end:
            lines.append("(the code under test caught it and went on; caught_mismatch='ignore' lets it)")
        return mismatch, lines, crash
    broken = session.broken
    if broken is not None and (session.refused or _raised(error, CassetteError) is broken):
        return (broken, *_refused(item, broken, session.source))
    return None


def _one_line(error: BaseException) -> str:
    cls = type(error)
    top = cls.__module__.split(".")[0]
    module = sys.modules.get(top)
    name = cls.__qualname__
    if top != "builtins":
        name = f"{top}.{name}" if getattr(module, name, None) is cls else f"{cls.__module__}.{name}"
    message = str(error).splitlines()[0] if str(error) else ""
    return shorten_text(f"{name}: {message}" if message else name, ONE_LINE)


def shorten_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _node(item: pytest.Item) -> str:
    """The test's node id for a command line; a test whose parameters hold a credential as its function's
    id (``path::test``, every parameter: the command must not print the key)."""
    from ._test_ids import without_credentials

    node = item.nodeid if without_credentials(item.nodeid) == item.nodeid else item.nodeid.split("[", 1)[0]
    return shlex.quote(node) if any(c in node for c in " []()'\"$") else f'"{node}"'


def _relative(item: pytest.Item, path: str | Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(item.config.rootpath.resolve()))
    except ValueError:
        return str(path)


def _marker_pins_mode(source: str) -> bool:
    return source == "argument"


def _record_on_miss_hint(item: pytest.Item, source: str, what: str) -> list[str]:
    """The cheapest fix: this test alone, from the call that changed; ``--lf`` for every failed test."""
    if _marker_pins_mode(source):
        return [
            f"the marker's mode= wins over --vcr-mode: to {what}, set mode='record-on-miss' in it, run",
            f"    pytest {_node(item)}",
            "and set it back",
        ]
    return [
        f"if the change is intended, {what}:",
        f"    pytest --vcr-mode=record-on-miss {_node(item)}",
        "(--lf instead of the test id: every test that failed; --vcr-mode=record starts over)",
    ]


def _mismatch(item: pytest.Item, mismatch: ReplayMismatch, source: str) -> tuple[list[str], str]:
    lines = []
    for line in str(mismatch).splitlines():
        if line.startswith("to re-record:"):
            continue
        if line.startswith("cassette: "):
            line = "cassette: " + _relative(item, line.removeprefix("cassette: "))
        lines.append(line)
    lines += _record_on_miss_hint(item, source, f"re-record this test from call {mismatch.call_index} on")
    recorded, incoming = side_by_side(mismatch.recorded, mismatch.incoming, 40)
    crash = (
        f"field {mismatch.field_path}: recorded {recorded}, incoming {incoming} (replay mismatch at call "
        f"{mismatch.call_index})"
    )
    return _fitted(lines, len(mismatch.differences)), crash


def _fitted(lines: list[str], differences: int) -> list[str]:
    """The lines of a mismatch within ``MAX_LINES`` (two kept free for the exception the test got and the
    hidden frames): the list of differing fields cut short first, the rest whole."""
    listed = [i for i, line in enumerate(lines) if line.startswith("  ") and i and not line.startswith("    ")]
    room = MAX_LINES - 2 - (len(lines) - len(listed))
    if len(listed) <= room or not listed:
        return lines
    keep = max(1, room - 1)
    cut = listed[keep:]
    shown = lines[: cut[0]] + lines[cut[-1] + 1 :]
    more = differences - keep
    shown.insert(cut[0], f"  and {more} more (-vv shows them all, whole)")
    return shown


def _refused(item: pytest.Item, broken: CassetteError, source: str) -> tuple[list[str], str]:
    where = _relative(item, broken.path)
    lines = [f"cassette {where}: {broken.problem}"]
    if broken.problem == "no such cassette" or broken.problem.startswith("no such cassette,"):
        if _marker_pins_mode(source):
            lines.append(f"fix: {broken.fix}")
        else:
            lines += [
                "record it where the real API is reachable, then commit it:",
                f"    pytest --vcr-mode=record-on-miss {_node(item)}",
            ]
    elif broken.problem.startswith("stale cassette"):
        lines += [
            "re-record it against the real API (or raise max_age):",
            f"    pytest --vcr-mode=record {_node(item)}",
        ]
        # The summary line: the age before the path, which the terminal's width may cut.
        return lines, f"{broken.problem.partition(' (')[0]}: {where}"
    elif broken.problem.endswith("never records when CI is set"):
        lines += [
            "to record on purpose, choose it for the run (it wins over the configuration):",
            f"    pytest --vcr-mode=record {_node(item)}",
        ]
    elif broken.fix:
        lines.append(f"fix: {broken.fix}")
    return lines, f"cassette {where}: {broken.problem}"


def _unplayed(item: pytest.Item, error: UnplayedCallsError) -> tuple[list[str], str]:
    where = _relative(item, error.cassette)
    lines = [f"{len(error.unplayed)} recorded call(s) were never played from {where}:"]
    described = []
    for index, method, url in error.unplayed:
        label = error.labels.get(index) or f"{method} {url}"
        described.append(f"call {index}: {label}")
    lines += [f"  {text}" for text in described[:MAX_UNPLAYED_SHOWN]]
    if len(described) > MAX_UNPLAYED_SHOWN:
        lines.append(f"  ... and {len(described) - MAX_UNPLAYED_SHOWN} more ('vcr-transport show {where}')")
    lines += [
        "the test made fewer requests than were recorded; if that is intended, re-record it:",
        f"    pytest --vcr-mode=record {_node(item)}",
        "(or let it pass: @pytest.mark.vcr_transport(unplayed='ignore'))",
    ]
    return lines, f"{len(error.unplayed)} recorded call(s) never played: {described[0]}"


def _drifted(item: pytest.Item, error: ShapeDriftError) -> tuple[list[str], str]:
    """Mode check: the calls whose live answer changed shape, each with its field paths (cut to fit), then
    the requests not compared."""
    where = _relative(item, error.cassette)
    lines = [f"{len(error.calls)} live answer(s) differ in shape from cassette {where}:"]
    room = MAX_LINES - 4
    for index, method, url, changes in error.calls:
        if len(lines) >= room:
            lines.append("  ... (all of them: vcr-transport drift " + where + ")")
            break
        lines.append(f"  call {index} ({method} {url}):")
        for shown, (path, recorded, live) in enumerate(changes):
            if len(lines) >= room:
                lines.append(f"    and {len(changes) - shown} more")
                break
            lines.append(f"    {path}: recorded {recorded}, live {live}")
    lines += error.not_compared_lines(limit=max(1, room - len(lines)))
    lines += [
        "the API changed under the cassette; if the new shape is intended, re-record this test:",
        f"    pytest --vcr-mode=record {_node(item)}",
    ]
    index, _, _, changes = error.calls[0]
    first = f"{changes[0][0]}: recorded {changes[0][1]}, live {changes[0][2]}"
    return lines, shorten_text(f"shape changed at call {index}, {first}", 90)


def _raised_in_test(item: pytest.Item, excinfo: ExceptionInfo[BaseException]) -> bool:
    return any(str(entry.path) == str(item.path) for entry in excinfo.traceback)


def _repr(
    item: pytest.Item, excinfo: ExceptionInfo[BaseException], lines: list[str], crash_message: str
) -> ReprExceptionInfo:
    """A report whose one entry is the test's own line (or, when the test's code was done, its ``def``); its
    lines ``visible``, as they quote the cassette (its path, URLs, values) and the test's node id."""
    own = [entry for entry in excinfo.traceback if str(entry.path) == str(item.path)]
    kind = type(_raised(excinfo.value, ReplayMismatch) or excinfo.value).__name__
    if own:
        path, lineno, source = str(own[-1].path), own[-1].lineno + 1, [f">   {own[-1].statement}".rstrip()]
    else:
        path_, lineno_, _ = item.reportinfo()
        path, lineno, source = str(path_), (lineno_ or 0) + 1, []
        kind = "at the end of the test"
    crash = ReprFileLocation(path, lineno, visible(crash_message))
    if item.config.getoption("tbstyle", "auto") == "line":  # pytest prints the crash line alone
        return ReprExceptionInfo(reprtraceback=ReprTraceback([], None, "line"), reprcrash=crash)
    location = ReprFileLocation(path, lineno, kind)
    entry = ReprEntry([*source, *(f"E   {visible(line)}" for line in lines)], None, None, location, "short")
    return ReprExceptionInfo(reprtraceback=ReprTraceback([entry], None, "short"), reprcrash=crash)


_PACKAGE = Path(__file__).resolve().parent
HIDDEN = "(not shown: vcr_transport's frames hold the request as sent, credentials and all)"
HIDDEN_VALUE = "(not shown)"


def _ours(filename: str) -> bool:
    return Path(filename).resolve().is_relative_to(_PACKAGE)


def hide_our_values(report: pytest.TestReport) -> None:
    """Put ``HIDDEN`` for the arguments and locals pytest shows of this package's frames in ``report``
    (``-l``, a long traceback), in each exception of a chain."""
    longrepr = report.longrepr
    if isinstance(longrepr, ExceptionChainRepr):
        tracebacks = [reprtraceback for reprtraceback, _, _ in longrepr.chain]
    elif isinstance(longrepr, ReprExceptionInfo):
        tracebacks = [longrepr.reprtraceback]
    else:
        return
    for entry in (entry for reprtraceback in tracebacks for entry in reprtraceback.reprentries):
        if isinstance(entry, ReprEntry) and entry.reprfileloc is not None and _ours(entry.reprfileloc.path):
            _hide_values(entry)


def _hide_values(entry: ReprEntry) -> None:
    if entry.reprfuncargs is not None:
        entry.reprfuncargs = ReprFuncArgs([(name, HIDDEN_VALUE) for name, _ in entry.reprfuncargs.args])
    if entry.reprlocals is not None:
        entry.reprlocals = ReprLocals([HIDDEN])


def _through_our_frames(error: BaseException | None) -> bool:
    """Whether the exception (or one it was raised from) passed through this package's code."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if any(_ours(frame.f_code.co_filename) for frame, _ in traceback.walk_tb(error.__traceback__)):
            return True
        error = error.__cause__ or error.__context__
    return False


def hide_values_of_our_frames(report: pytest.TestReport, error: BaseException) -> None:
    """A failure that passed through our frames shows none of their values: they hold the request as sent."""
    if _through_our_frames(error):
        hide_our_values(report)
