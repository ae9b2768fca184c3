"""What ``verify`` finds in a cassette: every unreadable or malformed line, the first structural problem, and
notes on calls recorded incomplete or with bodies a converter lost."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..._exceptions import CassetteError
from ._parser import ChunkSource, Parser, RecordedCall

__all__ = [
    "header_problem",
    "problems",
    "unsendable_header",
    "Finding",
]

# --- checking --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """What ``verify`` reports about a cassette: a problem, or (``incomplete``) a note on a call that was
    recorded incomplete and replays as recorded."""

    path: str
    line: int | None
    problem: str
    fix: str = ""
    incomplete: bool = False
    call: int | None = None  # the call of a note on an incomplete call
    outcome: str = ""  # its outcome

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.problem}" + (f"\n  fix: {self.fix}" if self.fix else "")


def _finding(error: CassetteError) -> Finding:
    return Finding(error.path, error.line, error.problem, error.fix)


def problems(path: str, blocks: Iterable[bytes], file: ChunkSource | None = None) -> Iterator[Finding]:
    """Every unreadable or malformed line, then the first structural problem (a missing call_end, a line out
    of order), then notes on incomplete calls when there was no problem; a file that is something else (a
    BOM, a merge conflict, a Git LFS pointer) gets its one finding there. Reads block by block: memory stays
    bounded by the longest line (HELD_LINE_BYTES past the longest a reader accepts, with ``file``, which the
    blocks come from) and the number of calls."""
    parser = Parser(path, "outline")
    found: list[CassetteError] = []
    shown = 0
    try:
        for run in parser.runs(blocks, file):
            parser.take(run, problems=found)
            yield from map(_finding, found[shown:])
            shown = len(found)
    except CassetteError as error:  # a line too long, or cut off; a file that is something else
        yield from map(_finding, found[shown:])
        yield _finding(error)
        return
    if found:
        return
    try:
        cassette = parser.finish()
    except CassetteError as error:
        yield _finding(error)
        return
    for call in cassette.calls:
        if call.stopped_on_purpose:
            continue  # the test that recorded it said so: no problem, even for verify --strict
        if not call.complete:
            detail = f": {call.error_class}" if call.outcome == "error" else ""
            ended = f"call {call.index} ({call.method} {call.url}) ended {call.outcome}{detail}"
            yield Finding(path, None, ended, "", True, call.index, call.outcome or "")
        else:
            yield from _lost_bodies(path, call)
        yield from _unsendable(path, call)


_LOST_FIX = (
    "a converter lost it (vcrpy serializers that store bodies in their own fields): import the YAML again with "
    "this version, or re-record"
)


def _lost_bodies(path: str, call: RecordedCall) -> Iterator[Finding]:
    """Notes on bodies missing in a way no real exchange produces: a POST/PUT/PATCH that says JSON and sends
    nothing, a response that says it has content (content-length > 0) and has no events."""
    where = f"call {call.index} ({call.method} {call.url})"
    request_type = next((v.lower() for k, v in call.request_headers if k.lower() == "content-type"), "")
    if call.method in ("POST", "PUT", "PATCH") and "json" in request_type and call.body is None:
        yield Finding(
            path, call.line or None, f"{where}: a request with a JSON content-type and no body", _LOST_FIX, True
        )
    length = next((v.strip() for k, v in call.response_headers if k.lower() == "content-length"), "")
    if call.event_total == 0 and length.isdigit() and int(length) > 0 and call.method != "HEAD":
        yield Finding(
            path,
            call.line or None,
            f"{where}: a {call.status} response with content-length {length} and no body",
            _LOST_FIX,
            True,
        )


# What HTTP lets a header be (RFC 9110 5.1 and 5.5): a name of token characters, a value with no line break or NUL.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BREAKS = re.compile(r"[\r\n\x00]")


def unsendable_header(headers: Iterable[tuple[str, str]]) -> str | None:
    """Why one of ``headers`` can't be written on the wire (no recording holds such a header: an edited or hostile
    cassette), or None: ``serve`` answers 502 saying so, ``verify`` reports it."""
    for name, value in headers:
        if not _TOKEN.fullmatch(name):
            return f"the header name {name!r} is no HTTP token"
        if _BREAKS.search(value):
            return f"the header {name} holds a line break or NUL"
    return None


def _unsendable(path: str, call: RecordedCall) -> Iterator[Finding]:
    for side, headers in (("request", call.request_headers), ("response", call.response_headers)):
        why = unsendable_header(headers)
        if why is not None:
            where = f"call {call.index} ({call.method} {call.url})"
            yield Finding(path, call.line or None, f"{where}: {side}: {why}", "re-record the cassette: it was edited")


def header_problem(first_line: bytes) -> str | None:
    """Why a file's first line is not a cassette header, or None when it is one (any format version: a file
    of another version is still a cassette, for delete and prune)."""
    try:
        header = json.loads(first_line)
    except (ValueError, RecursionError):  # nested past what a reader holds: no header either
        return "its first line is not a cassette header"
    if not isinstance(header, dict) or header.get("type") != "header" or "format_version" not in header:
        return "its first line is not a cassette header"
    return None
