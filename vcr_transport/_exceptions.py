"""The exceptions vcr_transport raises.

    VcrTransportError              every error of ours
     ├── CassetteError             a cassette can't be read: names the file, the line and what is wrong
     ├── ReplayMismatch            a request differs from the recorded one: names the call and the field
     ├── UnplayedCallsError        recorded calls that no request asked for
     ├── ShapeDriftError           mode check: live answers whose shape differs from the recorded calls'
     ├── RecordedError             replays a recorded failure whose class is neither httpx's nor a builtin
     ├── ModeError                 an unknown mode name (also a ValueError)
     ├── CassetteOwnerError        a request whose cassette can't be told (use_cassette, several open)
     ├── RefusedWrite              a write through a link that leads out of the project or to no cassette
     ├── RedactionLimitError       more distinct secrets than one redactor remembers (MAX_LEARNED_CHARACTERS)
     └── NetworkBlockedError       a route beyond loopback stopped by the network guard (replay); also a
                                   RuntimeError, as pytest-recording's "Network is disabled" is

    UnplayedCallsWarning           unplayed calls, when use_cassette(unplayed="warn")
    RecordingNotSavedWarning       a recording that did not replace the cassette, and why
    ShapeDriftWarning              mode check through transport(): a live answer whose shape changed
    CassetteExpiredWarning         a replayed cassette older than max_age (on_expiry="warn", outside pytest)

A recorded transport failure (``ConnectError``, ``ReadError``...) is re-raised on replay as the same class
of the caller's own HTTP library, not as one of these.
"""

from __future__ import annotations

from collections.abc import Sequence as _Sequence
from pathlib import Path as _Path
from typing import Any

__all__ = [
    "CassetteError",
    "CassetteExpiredWarning",
    "CassetteOwnerError",
    "ModeError",
    "NetworkBlockedError",
    "RecordedError",
    "RecordingNotSavedWarning",
    "RedactionLimitError",
    "RefusedWrite",
    "ReplayMismatch",
    "ShapeDriftError",
    "ShapeDriftWarning",
    "UnplayedCallsError",
    "UnplayedCallsWarning",
    "VcrTransportError",
]


class VcrTransportError(Exception):
    """Base class of every exception vcr_transport raises. Its message is ``visible``: a value from a
    cassette (a URL, a recorded body, a file name) shows its control and bidi characters escaped wherever the
    message is printed; the attributes hold the values as they are."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*(_shown(arg, newlines=True) if isinstance(arg, str) else arg for arg in args))


def _shown(text: str, *, newlines: bool = False) -> str:
    """``text`` ``visible``: a value from a cassette in one line of a message (``newlines``: a message)."""
    from ._display import visible  # here: importing the package loads this module alone

    return visible(text, newlines=newlines)


class CassetteError(VcrTransportError):
    """A cassette is missing, corrupt, cut off, of another format version, or of an unknown shape."""

    def __init__(self, path: str, line: int | None, problem: str, fix: str = "") -> None:
        self.path = path
        self.line = line
        self.problem = problem
        self.fix = fix
        where = f"{_shown(path)}:{line}" if line is not None else _shown(path)
        message = f"cassette {where}: {problem}"
        if fix:
            message += f"\n  fix: {fix}"
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Whole across processes (a multiprocessing worker's error reaches its parent pickled).
        return (type(self), (self.path, self.line, self.problem, self.fix))


class ReplayMismatch(VcrTransportError):
    """An incoming request differs from the recorded call it was compared with.

    The first line of the message is always
    ``replay mismatch at call N, field PATH: recorded R, incoming I``.
    Then, when more fields differ, each of them (at most ten, then how many more), what kind of difference
    it is and what would replay it (``notes``), and how to re-record. The values in the message are
    redacted and shortened (a long string as a window around its first differing character); the
    attributes hold them whole: ``recorded`` and ``incoming`` the first field's, ``differences`` every
    differing field as (path, recorded, incoming).
    """

    def __init__(
        self,
        call_index: int,
        field_path: str,
        recorded: Any,
        incoming: Any,
        *,
        cassette: str = "",
        event_index: int | None = None,
        detail: str = "",
        record_hint: str = "",
        differences: _Sequence[tuple[str, Any, Any]] = (),
        notes: _Sequence[str] = (),
        rerecord: bool = True,
    ) -> None:
        from ._display import side_by_side  # here: importing the package loads this module alone

        self.call_index = call_index
        self.field_path = field_path
        self.recorded = recorded
        self.incoming = incoming
        self.cassette = cassette
        self.event_index = event_index
        self.differences: list[tuple[str, Any, Any]] = list(differences) or [(field_path, recorded, incoming)]
        self.notes = list(notes)
        lines = [self.headline]
        if len(self.differences) > 1:
            lines.append(f"{len(self.differences)} fields differ from recorded call {call_index}:")
            for path, was, now in self.differences[:_SHOWN]:
                shown_was, shown_now = side_by_side(was, now)
                lines.append(f"  {_shown(path)}: recorded {shown_was}, incoming {shown_now}")
            if len(self.differences) > _SHOWN:
                lines.append(f"  and {len(self.differences) - _SHOWN} more (all of them: the exception's differences)")
        lines += self.notes
        if detail:
            lines.append(detail)
        if cassette:
            lines.append(f"cassette: {cassette}")
        if rerecord:
            how = record_hint or (
                "record it with RecordingTransport(inner, path), or build the transport with "
                "vcr_transport.transport(path) and set VCR_TRANSPORT_MODE=record"
            )
            lines.append(
                f"to re-record: {how}; the mode record-on-miss instead of record keeps the calls this run "
                "replayed and records from the first miss"
            )
        super().__init__("\n".join(lines))

    @property
    def headline(self) -> str:
        from ._display import side_by_side

        recorded, incoming = side_by_side(self.recorded, self.incoming)
        where = f"replay mismatch at call {self.call_index}, field {_shown(self.field_path)}"
        return f"{where}: recorded {recorded}, incoming {incoming}"

    def full_values(self) -> str:
        """Every differing field with its values whole, one field after another (what ``-vv`` shows)."""
        return "\n".join(
            f"{_shown(path)}:\n  recorded {was!r}\n  incoming {now!r}" for path, was, now in self.differences
        )


_SHOWN = 10  # the differing fields a message lists


class UnplayedCallsError(VcrTransportError):
    """Recorded calls that no request asked for, listed by index, method and URL, and by what tells LLM calls
    to one URL apart (``labels``: call index -> the model and the first words of the last user message)."""

    def __init__(
        self, cassette: str, unplayed: list[tuple[int, str, str]], labels: dict[int, str] | None = None
    ) -> None:
        self.cassette = cassette
        self.unplayed = unplayed
        self.labels = labels or {}
        lines = [f"{len(unplayed)} recorded call(s) were never played from {cassette}:"]
        for index, method, url in unplayed:
            label = self.labels.get(index)
            lines.append(_shown(f"  call {index}: {method} {url}" + (f" ({label})" if label else "")))
        lines.append("the code under test made fewer requests than were recorded; re-record if that is intended")
        super().__init__("\n".join(lines))


class ShapeDriftError(VcrTransportError):
    """Mode ``check``: live answers whose shape (status, content type, JSON structure and types, stream event
    types) differs from the recorded calls' they were compared with. ``calls``: (call index, method, URL,
    [(field path, recorded types, live types)...]). ``not_compared``: the requests of the same block whose
    answer was not compared, which are no drift but say how much the check saw: one line each, naming the
    request (its number from 0, method and URL) and why."""

    def __init__(
        self,
        cassette: str,
        calls: _Sequence[tuple[int, str, str, _Sequence[tuple[str, str, str]]]],
        record_hint: str = "",
        *,
        not_compared: _Sequence[str] = (),
    ) -> None:
        self.cassette = cassette
        self.calls = list(calls)
        self.not_compared = list(not_compared)
        lines = [f"{len(self.calls)} live answer(s) differ in shape from cassette {cassette}:"]
        for index, method, url, changes in self.calls:
            lines.append(_shown(f"  call {index} ({method} {url}): {len(changes)} field path(s) changed"))
            for path, recorded, live in changes[:_SHOWN]:
                lines.append(_shown(f"    {path}: recorded {recorded}, live {live}"))
            if len(changes) > _SHOWN:
                lines.append(f"    and {len(changes) - _SHOWN} more")
        lines += self.not_compared_lines()
        how = record_hint or "record it again (mode 'record')"
        lines.append(f"the API changed under the cassette; if the new shape is intended, re-record it: {how}")
        super().__init__("\n".join(lines))

    def not_compared_lines(self, limit: int = _SHOWN) -> list[str]:
        """How a report lists the requests whose answer was not compared (no drift): up to ``limit``."""
        if not self.not_compared:
            return []
        lines = [f"{len(self.not_compared)} request(s) not compared (not drift):"]
        lines += [_shown(f"  {line}") for line in self.not_compared[:limit]]
        if len(self.not_compared) > limit:
            lines.append(f"  and {len(self.not_compared) - limit} more")
        return lines


class RecordedError(VcrTransportError):
    """Replays a recorded failure whose exception class can't be rebuilt in the caller's library."""

    def __init__(self, class_name: str, message: str) -> None:
        self.class_name = class_name
        super().__init__(f"{class_name}: {message}")


class ModeError(VcrTransportError, ValueError):
    """An unknown mode name; the message lists the valid ones."""


class CassetteOwnerError(VcrTransportError):
    """A request came from a thread or task that holds no cassette while several cassettes are open."""


class RefusedWrite(VcrTransportError):
    """A write refused by ``write_target``: ``path`` is what was asked, ``leads_to`` where it resolves."""

    def __init__(self, path: _Path, leads_to: _Path, problem: str, fix: str) -> None:
        self.path = path
        self.leads_to = leads_to
        self.problem = problem
        self.fix = fix
        super().__init__(f"{path}: {problem}\n  fix: {fix}")


class RedactionLimitError(VcrTransportError):
    """A redactor asked to remember more distinct secrets than it holds: ``limit`` characters of their written
    forms (``_core/rules/_known.py``'s ``MAX_LEARNED_CHARACTERS``; each secret is searched in up to 15 forms,
    and each character of them costs its searches tens of bytes). No recording or file brings that many but a
    hostile one: the recording is not saved, ``scan`` stops searching the file and says so."""

    FIX = (
        "a file with this many distinct secrets is damaged or hostile: delete it; a recording of this many (thousands "
        "of signed URLs) records too much in one cassette: split its calls over several"
    )

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"more distinct secrets to remember than a redactor holds ({limit:,} characters of their written forms)"
        )


class NetworkBlockedError(VcrTransportError, RuntimeError):
    """A connection, datagram or DNS lookup beyond loopback, stopped by the network guard (the pytest plugin
    in replay, ``--block-network``, or ``use_cassette(block_network=True)``). It is a RuntimeError too, as
    pytest-recording's ``RuntimeError("Network is disabled")`` is, so code and tests that catch that catch
    this."""


class UnplayedCallsWarning(UserWarning):
    """Recorded calls that no request asked for, when ``use_cassette(unplayed="warn")``."""


class ShapeDriftWarning(UserWarning):
    """Mode ``check`` through ``transport()`` (no block to fail at its end): a live answer whose shape
    differs from the recorded call's; the message is ShapeDriftError's for that call."""


class RecordingNotSavedWarning(UserWarning):
    """A recording was dropped and the cassette left as it was: it was interrupted, carried no call, or
    holds only failures (no response, refused credentials). The message names the cassette and why."""


class CassetteExpiredWarning(UserWarning):
    """A replayed cassette was recorded longer ago than ``max_age`` days (its header's ``created``), with
    ``on_expiry="warn"`` outside pytest (the plugin says so in its end-of-run summary instead). The message
    names the cassette, its age and how to re-record it."""


# The tree's classes are the package's (``vcr_transport.ReplayMismatch`` in a traceback), whichever module
# loads this one first: importing the package does not.
for _name in __all__:
    globals()[_name].__module__ = "vcr_transport"
del _name
