"""What the ``vcr-transport`` command prints, as lines of text (and the dicts ``--json`` prints): a cassette
call by call (``show``), one line per field for git's ``textconv`` driver, the differences between two
cassettes, and the reports of the management commands. A call is rendered from its view
(``_core._view.CallView``); the HTML page is ``_html``, the HAR file ``_har``.

Text is coloured by role through a ``Paint`` (``_term``: plain unless the output is a terminal that wants
colour). Recorded text (a URL, a header, a body, a path, a test id) is shown ``visible`` (``_core._display``):
its control and bidi characters escaped, never raw. A view that paints nothing escapes each line it yields
(``_visible_lines``); one that paints escapes each recorded value before it is painted, so that only its own
colour codes reach the terminal.

Every ``--json`` document is an object whose ``json_version`` says its shape (``JSON_VERSION``;
docs/reference/cli-json.md describes each); a new field may be added within a version, a field changed or removed
makes the next one.
"""

from __future__ import annotations

import base64
import functools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ParamSpec

from .._core.engine._matching import RequestMatcher, is_volatile_response_header
from .._core.format._bodies import DecodeBudget
from .._core.format._format import FORMAT_VERSION, Cassette, decode_json
from .._core.views._conversation import Message, ToolCall
from .._core.views._review import Part, cut_long, described_bytes, quiet
from .._core.views._shape import DriftReport, PlannedCall
from .._core.views._view import NOT_JSON, CallView, call_view
from .._display import MISSING, shorten, visible
from .._exceptions import CassetteError
from ._diff import ComparedCall, Difference, changed_words, reading_order, recorded_concurrently
from ._manage import (
    CassetteSummary,
    ImportOutcome,
    ProjectStatus,
    Removal,
    ScanReport,
    Verification,
    shown_path,
)
from ._term import PLAIN, Paint

__all__ = [
    "JSON_VERSION",
    "diff_json",
    "diff_lines",
    "drift_json",
    "drift_lines",
    "drift_plan_json",
    "drift_plan_lines",
    "import_line",
    "import_summary",
    "list_json",
    "list_lines",
    "plural",
    "removal_lines",
    "scan_json",
    "scan_lines",
    "show_json",
    "show_lines",
    "status_lines",
    "textconv_lines",
    "verify_lines",
    "versioned",
]

JSON_VERSION = 1
_P = ParamSpec("_P")


def versioned(payload: dict[str, Any]) -> dict[str, Any]:
    """A ``--json`` document: ``json_version`` first, then the command's fields."""
    return {"json_version": JSON_VERSION, **payload}


def plural(count: int, noun: str) -> str:
    """``1 call``, ``2 calls``, ``0 differences``: a count with its noun."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun}es" if noun.endswith(("s", "x", "ch", "sh")) else f"{count} {noun}s"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _visible_lines(render: Callable[_P, Iterator[str]]) -> Callable[_P, Iterator[str]]:
    """A view that paints nothing, each of its lines ``visible`` (a recorded newline inside a line too)."""

    @functools.wraps(render)
    def shown(*args: _P.args, **kwargs: _P.kwargs) -> Iterator[str]:
        return map(visible, render(*args, **kwargs))

    return shown


def _split(text: str) -> list[str]:
    """A multi-line text's lines, split at its newlines only: a CR or another separator stays in its line,
    where ``visible`` shows it."""
    return text.removesuffix("\n").split("\n") if text else []


def _indented(text: str, indent: str = "    ") -> list[str]:
    return [f"{indent}{line}" for line in _split(text)]


def _part_lines(parts: list[Part], prefix: str) -> Iterator[str]:
    """One line per multipart part: ``prefix[name]: filename=…, type, size, hash`` (text parts by value)."""
    for part in parts:
        yield f"{prefix}[{part.name if part.name is not None else ''}]: {part.described}"


# --- show: a cassette call by call ----------------------------------------------------------------------


def _body_as_text(view: CallView) -> str:
    """A body that is no JSON or stream: as text when it is ASCII or of a text type, else as base64."""
    if view.body.isascii() or "text" in view.content_type:
        return view.text
    return base64.b64encode(view.body).decode()


def _binary_body(view: CallView) -> str:
    """A binary body in words: its type, size and hash (and why it is shown encoded, when it is)."""
    return f"{view.content_type or 'binary'}, {described_bytes(view.body)}{f' ({view.note})' if view.note else ''}"


def call_json(view: CallView) -> dict[str, Any]:
    """One call as ``show --json`` prints it."""
    data: dict[str, Any] = {
        "call_index": view.index,
        "method": view.method,
        "url": view.url,
        "request_headers": view.request_headers,
        "request_body": view.request_body,
        "status": view.status,
        "http_version": view.http_version,
        "response_headers": view.response_headers,
        "outcome": view.outcome,
        "events": view.chunk_count,
        "first_chunk_s": view.chunk_times[0] if view.chunk_times else None,
        "last_chunk_s": view.chunk_times[-1] if view.chunk_times else None,
    }
    if view.owner:
        data["test"] = view.owner
    if view.outcome == "error":
        data["error"] = {"class": view.error_class, "message": view.error_message}
    data.update(_websocket_json(view, view.close) if view.close is not None else _reply_json(view))
    return data


def _websocket_json(view: CallView, close: tuple[Any, ...]) -> dict[str, Any]:
    """A WebSocket call's messages and close, as ``show --json`` prints them."""
    return {
        "messages": [
            {"from": side, "t": t, "text": d} if isinstance(d, str) else {"from": side, "t": t, "base64": _b64(d)}
            for side, d, t in view.websocket_messages
        ],
        "close": dict(zip(("code", "reason", "by"), close, strict=True)),
    }


def _reply_json(view: CallView) -> dict[str, Any]:
    """An HTTP call's response body (its SSE events, its JSON or its text) and note, as ``show --json``
    prints them."""
    data: dict[str, Any] = {}
    if view.stream is not None:
        data["sse_events"] = [event.raw for event in view.stream]
    elif view.json is not NOT_JSON:
        data["response_json"] = view.json
    else:
        data["response_text"] = _body_as_text(view)
    if view.note:
        data["response_note"] = view.note
    return data


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _message_text(data: str | bytes) -> str:
    """A WebSocket message for textconv: JSON with long values (audio) cut, other text cut, binary by size."""
    if isinstance(data, bytes):
        return f"binary, {described_bytes(data)}"
    try:
        return json.dumps(cut_long(decode_json(data)), ensure_ascii=False)
    except ValueError:
        return str(cut_long(data))


def _shown_response(view: CallView) -> Iterator[str]:
    yield f"  response: {view.status} {view.http_version}"
    yield from [f"    {name}: {value}" for name, value in view.response_headers]
    if view.close is not None:
        yield f"  WebSocket: {plural(len(view.websocket_messages), 'message')}, closed {view.closed}"
        yield from [f"    {line}" for line in view.message_texts(2000)]
        return
    if view.chunk_times:
        first, last = view.chunk_times[0], view.chunk_times[-1]
        yield f"  timing: {view.chunk_count} chunks, first at +{first:.3f}s, last at +{last:.3f}s"
    if view.stream is not None:
        yield f"  stream: {len(view.stream)} events"
        for event in view.stream:
            yield from _indented(event.raw)
    elif view.json is not NOT_JSON:
        yield "  body:"
        yield from _indented(_pretty(cut_long(view.json)))
    elif view.binary:
        yield f"  body: {_binary_body(view)}"
    else:
        yield from _block("body", _body_as_text(view)[:2000])


def _shown_call(view: CallView) -> Iterator[str]:
    mark = "" if view.outcome == "complete" else f"  [INCOMPLETE: {view.outcome}]"
    yield ""
    yield f"call {view.index}: {view.method} {view.url}{mark}"
    if view.owner:
        yield f"  recorded by: {view.owner}"
    body = view.request_body
    if view.parts is not None:
        yield f"  request body: multipart, {plural(len(view.parts), 'part')}"
        yield from _part_lines(view.parts, "    parts")
    elif body is not None:
        yield "  request body:"
        yield from _indented(
            _pretty(cut_long(body["json"])) if "json" in body else str(cut_long(next(iter(body.values()))))
        )
    if view.status is None:
        yield f"  no response: {view.error}"
        return
    yield from _shown_response(view)
    if view.outcome == "error":
        yield f"  then failed: {view.error}"


def show_json(cassette: Cassette, views: Iterable[CallView]) -> dict[str, Any]:
    """``show --json``: the cassette's path and header, and each of ``views`` (``call_json``)."""
    return versioned(
        {"path": shown_path(cassette.path), "header": cassette.header, "calls": [call_json(view) for view in views]}
    )


@_visible_lines
def show_lines(cassette: Cassette, views: Iterable[CallView]) -> Iterator[str]:
    """``show``: the cassette's header line, then each of ``views`` (its calls, or one of them)."""
    yield f"{cassette.path}: format v{cassette.header['format_version']}, {plural(len(cassette.calls), 'call')}"
    for view in views:
        yield from _shown_call(view)


# --- textconv: one line per field, for git diff ----------------------------------------------------------


def _block(label: str, text: str, indent: str = "  ") -> Iterator[str]:
    """``label: text`` on one line, or ``label:`` then the text's lines indented below it."""
    lines = _split(text)
    if len(lines) <= 1:
        yield f"{indent}{label}: {text}"
        return
    yield f"{indent}{label}:"
    for line in lines:
        yield f"{indent}  | {line}"


def _tool_call(call: ToolCall) -> str:
    return f"{call.name}({cut_long(call.arguments)})"


def _message_lines(messages: list[Message], tools: list[str]) -> Iterator[str]:
    for number, message in enumerate(messages):
        if message.text:
            yield from _block(f"request.messages[{number}].{message.role}", cut_long(message.text))
        for tool_call in message.tool_calls:
            yield f"  request.messages[{number}].{message.role}.tool_call: {_tool_call(tool_call)}"
    if tools:
        yield f"  request.tools: {', '.join(tools)}"


def _event_line(raw: str, name: str, data: str, volatile: bool) -> str:
    """A stream event as textconv shows it: as it came with ``volatile``; else, when its data is JSON,
    without its volatile fields, its padding as ``…`` and long values cut (``_review``)."""
    if volatile:
        return raw
    try:
        parsed = decode_json(data)
    except ValueError:
        return raw
    shown = json.dumps(cut_long(quiet(parsed)), ensure_ascii=False)
    return f"event: {name} | data: {shown}" if name else f"data: {shown}"


def _reply_lines(view: CallView, volatile: bool) -> Iterator[str]:
    if view.reply.text:
        yield from _block("response.text", cut_long(view.reply.text))
    for tool_call in view.reply.tool_calls:
        yield f"  response.tool_call: {_tool_call(tool_call)}"
    stream, body = view.readable_stream, view.reply_body
    if stream is not None:
        yield f"  response.stream: {len(stream)} events in {view.chunk_count} chunks"
        yield from _stream_lines(stream, volatile)
    elif view.binary and view.status is not None:
        yield f"  response.body: {_binary_body(view)}"
    elif isinstance(body, dict | list):
        yield from _block("response.body", _pretty(cut_long(body if volatile else quiet(body))))
    elif body is not None:
        yield from _block("response.body", str(cut_long(body)))


def _stream_lines(stream: Sequence[Any], volatile: bool) -> Iterator[str]:
    """Each event of a readable stream, one line each (``_event_line``)."""
    for number, event in enumerate(stream):
        yield f"  response.stream[{number}]: {_event_line(event.raw, event.name, event.data, volatile)}"


def _header_lines(
    side: str, headers: Sequence[tuple[str, str]], is_volatile: Callable[[str], bool], volatile: bool
) -> Iterator[str]:
    """A side's headers, one line each, the volatile ones (``is_volatile``) left out unless ``volatile``."""
    for name, value in headers:
        if volatile or not is_volatile(name.lower()):
            yield f"  {side}.headers.{name.lower()}: {value}"


def call_lines(view: CallView, *, volatile: bool = False, label: str | None = None) -> Iterator[str]:
    """One call, one line per field (a text or JSON spread over several lines is indented below its
    field). Timings are left out: they change on every recording; so are volatile headers and fields
    (``_review``) unless ``volatile``. ``label``: how the call is named (``call N`` by default)."""
    yield f"{label or f'call {view.index}'}: {view.method} {view.url}"
    if view.owner:
        yield f"  test: {view.owner}"
    yield from _header_lines("request", view.request_headers, RequestMatcher().is_volatile, volatile)
    yield from _request_body_lines(view)
    if view.status is None:
        yield f"  error: {view.error}"
        return
    yield f"  response.status: {view.status} {view.http_version}"
    yield from _header_lines("response", view.response_headers, is_volatile_response_header, volatile)
    if view.close is not None:
        for number, (side, data, _) in enumerate(view.websocket_messages):
            yield from _block(f"message[{number}].{side}", _message_text(data))
        yield f"  close: {view.closed}"
    else:
        yield from _reply_lines(view, volatile)
    yield f"  outcome: {view.outcome}" + (f": {view.error}" if view.outcome == "error" else "")


def _request_body_lines(view: CallView) -> Iterator[str]:
    """The request's body: its messages and JSON, its multipart parts, or its text."""
    body = view.request_body
    if body is not None and "json" in body:
        yield from _message_lines(view.messages, view.tools)
        yield from _block("request.body", _pretty(cut_long(body["json"])))
    elif view.parts is not None:
        yield from _part_lines(view.parts, "  request.body.parts")
    elif body is not None:
        kind, value = next(iter(body.items()))
        yield from _block(f"request.body.{kind}", str(cut_long(value)))


@_visible_lines
def textconv_lines(cassette: Cassette, *, volatile: bool = False) -> Iterator[str]:
    """``show --textconv``, git's textconv driver: the whole cassette, one line per field (``call_lines``),
    calls separated by a blank line, so a re-recording shows in ``git diff`` as the fields that changed.
    Calls recorded concurrently are listed by their requests and not numbered (``reading_order``): a
    re-recording that finished them in another order then shows no change."""
    concurrent = recorded_concurrently(cassette)
    yield f"cassette format v{cassette.header.get('format_version')}, {len(cassette.calls)} calls" + (
        " (recorded concurrently: listed by request)" if concurrent else ""
    )
    budget = DecodeBudget()  # the file's bodies, decoded in all
    for call in reading_order(cassette):
        yield ""
        yield from call_lines(call_view(call, budget), volatile=volatile, label="call" if concurrent else None)


# --- diff ----------------------------------------------------------------------------------------------


def _value(value: Any) -> str:
    return "<missing>" if value is MISSING else shorten(cut_long(value))


def _shown(value: Any) -> str:
    """A recorded value in a painted line: as text, ``visible``."""
    return visible(str(value))


def _change(difference: Difference, paint: Paint) -> str:
    """A difference as the terminal shows it: two texts by their changed words, anything else by value;
    whitespace and padding changes said so."""
    left, right = difference.a, difference.b
    if difference.kind == "padding":
        return paint(f"padding only: the random padding of {_shown(left)} changed", "dim")
    if difference.kind in ("added", "removed"):
        only = left if right is MISSING else right
        return paint(f"only in {'B' if difference.kind == 'added' else 'A'}: {_shown(only)}", "warn")
    if isinstance(left, str) and isinstance(right, str) and _wordy(left, right):
        if difference.kind == "whitespace":
            return paint("whitespace only: ", "dim") + shorten(left) + " -> " + shorten(right)
        return _painted_words(visible(changed_words(left, right)), paint)
    return f"{paint(_value(left), 'bad')} -> {paint(_value(right), 'good')}"


def _wordy(left: str, right: str) -> bool:
    """Whether two texts are shown by their changed words: one of them holds a space or a line break."""
    return any(" " in text or "\n" in text for text in (left, right))


def _painted_words(words: str, paint: Paint) -> str:
    """``changed_words``' output with its removed pieces red and its added ones green (on a terminal)."""
    if not paint.enabled:
        return words
    return (
        words.replace("[-", "\x1b[31m[-")
        .replace("-]", "-]\x1b[0m")
        .replace("{+", "\x1b[32m{+")
        .replace("+}", "+}\x1b[0m")
    )


def diff_lines(a: Cassette, b: Cassette, compared: Sequence[ComparedCall], paint: Paint = PLAIN) -> Iterator[str]:
    """``diff``: one line per difference (``call N, field PATH: change``), then how many there are between
    the two cassettes, and how many volatile ones were left out."""
    found = [difference for call in compared for difference in call.differences]
    for difference in found:
        yield f"call {difference.call}, field {_shown(difference.path)}: {_change(difference, paint)}"
    hidden = sum(call.hidden for call in compared)
    note = f"; {plural(hidden, 'volatile difference')} not shown (--volatile shows them)" if hidden else ""
    yield (
        f"{plural(len(found), 'difference')} between {_shown(a.path)} ({plural(len(a.calls), 'call')}) "
        f"and {_shown(b.path)} ({plural(len(b.calls), 'call')}){note}"
    )


def _json_value(value: Any) -> Any:
    return None if value is MISSING else cut_long(value)


def diff_json(a: Cassette, b: Cassette, compared: Sequence[ComparedCall]) -> dict[str, Any]:
    """``diff --json``: the two cassettes, whether they are the same, and each difference."""
    found = [difference for call in compared for difference in call.differences]
    return versioned(
        {
            "a": {"path": shown_path(a.path), "calls": len(a.calls)},
            "b": {"path": shown_path(b.path), "calls": len(b.calls)},
            "same": not found,
            "differences": [
                {
                    "a_call": d.a_call,
                    "b_call": d.b_call,
                    "field_path": d.path,
                    "kind": d.kind,
                    "a": _json_value(d.a),
                    "b": _json_value(d.b),
                }
                for d in found
            ],
            "volatile_hidden": sum(call.hidden for call in compared),
        }
    )


# --- the management commands' reports -------------------------------------------------------------------


@_visible_lines
def status_lines(status: ProjectStatus) -> Iterator[str]:
    yield f"mode: {status.mode}  (from {status.source})"
    if status.mode == "auto":
        yield "  auto: " + (
            "CI is set, so missing cassettes are errors"
            if status.ci
            else "replays existing cassettes, records missing ones"
        )
    yield "cassette folders: " + (", ".join(str(f) for f in status.folders) or f"none found under {status.root}")
    yield f"cassettes: {status.cassettes} ({status.calls} calls)" + (
        f", {status.broken} unreadable: run 'vcr-transport verify'" if status.broken else ""
    )


def _size(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return ""  # pragma: no cover


def _list_row(summary: CassetteSummary) -> list[str]:
    shown, size = _shown(shown_path(summary.path)), _size(summary.size)
    if summary.problem is not None:
        return [shown, "", "", size, f"UNREADABLE: cassette {str(summary.problem).splitlines()[0]}"]
    state = f"incomplete calls {summary.incomplete_calls}" if summary.incomplete_calls else "all complete"
    calls = plural(summary.calls, "call")
    return [shown, f"v{summary.format_version}", calls, size, state, _shown(", ".join(summary.hosts))]


def list_lines(summaries: Sequence[CassetteSummary], paint: Paint = PLAIN) -> Iterator[str]:
    """``list``: one row per cassette, in columns (the last, the hosts, is not padded)."""
    table = [_list_row(summary) for summary in summaries]
    widths = [max((len(cells[i]) for cells in table if i < len(cells) - 1), default=0) for i in range(5)]
    for cells in table:
        line = "  ".join([*(cell.ljust(widths[i]) for i, cell in enumerate(cells[:-1])), cells[-1]]).rstrip()
        yield paint(line, "bad") if "UNREADABLE: " in cells[-1] else line
    if not table:
        yield "no cassettes found"


def list_json(summaries: Sequence[CassetteSummary]) -> dict[str, Any]:
    return versioned({"cassettes": [summary.as_json() for summary in summaries]})


def verify_lines(verification: Verification, paint: Paint = PLAIN) -> Iterator[str]:
    yield from [f"{paint('PROBLEM', 'bad')} {problem}" for problem in verification.problems]  # Problem: visible
    notes = verification.notes
    yield from [f"{paint('note', 'warn')}    {note} (recorded incomplete; replays as recorded)" for note in notes]
    yield (
        f"{plural(verification.cassettes, 'cassette')} checked, {verification.with_problems} with problems, "
        f"format version {FORMAT_VERSION}"
    )


def scan_lines(report: ScanReport, paint: Paint = PLAIN) -> Iterator[str]:
    for hit in report.hits:
        yield f"{_shown(shown_path(hit.path))}:{hit.line}: {paint('secret-shaped value', 'bad')} {_shown(hit.secret)}"
    yield from [f"{paint('PROBLEM', 'bad')} {problem}" for problem in report.problems]
    problems = f", {plural(len(report.problems), 'line')} not scanned whole" if report.problems else ""
    yield f"{plural(len(report.files), 'file')} scanned, {plural(len(report.hits), 'secret')} found{problems}"


def scan_json(report: ScanReport) -> dict[str, Any]:
    return versioned(
        {
            "files": len(report.files),
            "secrets": [hit.as_json() for hit in report.hits],
            "problems": [problem.as_json() for problem in report.problems],
        }
    )


@_visible_lines
def removal_lines(removal: Removal) -> Iterator[str]:
    """``delete`` and ``prune``: what was skipped, what was (or would be) deleted and why."""
    for path, why in removal.skipped:
        yield f"skipped {shown_path(path)}: not a cassette ({why}); prune only deletes cassettes"
    for path, why in removal.removed:
        yield f"{'deleted' if removal.deleted else 'would delete'} {shown_path(path)}  ({why})"
    yield from _dropped_call_lines(removal)
    if not removal.deleted and (removal.removed or removal.dropped_calls):
        yield "dry run: nothing was deleted; add --yes to delete"
    if not removal.removed and not removal.dropped_calls:
        yield "nothing to delete"


def _dropped_call_lines(removal: Removal) -> Iterator[str]:
    """The calls of tests gone from the last run that were (or would be) removed from shared cassettes."""
    verb = "removed" if removal.deleted else "would remove"
    for path, tests in removal.dropped_calls:
        for test, calls in tests.items():
            yield f"{verb} {plural(calls, 'call')} of {test} from {shown_path(path)}  (no such test in the last run)"


def import_line(outcome: ImportOutcome) -> str:
    """One converted, skipped or refused file (a refusal goes to stderr)."""
    if outcome.refused is not None:
        return visible("refused: " + str(outcome.refused).replace("\n  fix: ", "; fix: "))
    if outcome.skipped is not None:
        return visible(f"skipped: {outcome.skipped}")
    lines = [visible(f"imported {plural(outcome.calls, 'call')}: {outcome.source} -> {outcome.target}")]
    lines += [
        f"  note: {plural(count, 'call')} from {client}, replayed in the pytest-recording compatibility mode only "
        "(vcr_transport_compat = pytest-recording); never recorded"
        for client, count in sorted(outcome.compat_only.items())
    ]
    lines += [
        f"  can't serve: {plural(count, 'call')} from {client}: replay answers httpx and httpx2 (and, in the "
        "compatibility mode, urllib3 and requests); a test making it meets the network guard: send it through "
        "one of those clients, or mock it"
        for client, count in sorted(outcome.unserved.items())
    ]
    return "\n".join(lines)


def import_summary(converted: int, calls: int, refused: Sequence[CassetteError], skipped: int = 0) -> str:
    """``import``'s last line: what was converted, the most common reasons files were refused, and how many
    files were skipped as no vcrpy cassettes."""
    summary = f"summary: {plural(converted, 'file')} converted ({plural(calls, 'call')}), {len(refused)} refused"
    if refused:
        why = Counter(
            error.problem.split(":", 1)[-1].strip() if error.problem.startswith("interaction ") else error.problem
            for error in refused
        )
        summary += ": " + "; ".join(f"{n} x {visible(reason)}" for reason, n in why.most_common(5))
        if len(why) > 5:
            summary += f"; and {len(why) - 5} other reason(s)"
    if skipped:
        summary += f"; {skipped} skipped (not vcrpy cassettes)"
    if not converted and not refused:
        summary += ": none of the YAML files is a vcrpy cassette, nothing was imported"
    return summary


# --- drift ----------------------------------------------------------------------------------------------


def drift_lines(report: DriftReport, paint: Paint = PLAIN) -> Iterator[str]:
    """``drift``: one line per call (identical, changed, not checked or skipped), each changed field path below
    it, then the counts."""
    for call in report.calls:
        where = _shown(f"{call.path} call {call.index}: {call.method} {call.url}")
        if call.outcome == "identical":
            yield f"{where}: {paint('identical shape', 'good')}"
        elif call.outcome == "changed":
            fields = plural(len(call.changes), "field")
            yield f"{where}: {paint(f'changed shape ({fields})', 'warn')}"
            for change in call.changes:
                yield _shown(f"  {change.path}: {change.recorded} -> {change.live}")
        elif call.outcome == "skipped":
            yield f"{where}: {paint('skipped', 'warn')}: {_shown(call.skipped)}"
        else:
            yield f"{where}: {paint('not checked', 'bad')}: {_shown(call.error)}"
    counts = Counter(call.outcome for call in report.calls)
    yield (
        f"{plural(len(report.calls), 'call')} in {plural(report.cassettes, 'cassette')}: {counts['identical']} "
        f"identical, {counts['changed']} changed, {counts['failed']} not checked, {counts['skipped']} skipped"
    )


def _plan_line(call: PlannedCall, paint: Paint) -> str:
    where = _shown(f"{call.path} call {call.index}: {call.method} {call.url}")
    if call.error:
        return f"{where}: {paint('would not be sent', 'bad')}: {_shown(call.error)}"
    if call.skipped:
        return f"{where}: {paint('skipped', 'warn')}: {_shown(call.skipped)}"
    return where + (f" (key from {_shown(call.key_from)})" if call.key_from else "")


def drift_plan_lines(cassettes: int, planned: Sequence[PlannedCall], paint: Paint = PLAIN) -> Iterator[str]:
    """``drift --dry-run``: one line per call (where it would go, whose key it would carry, or why it would be
    refused or skipped), then the hosts."""
    yield from (_plan_line(call, paint) for call in planned)
    sent = [call for call in planned if _would_send(call)]
    hosts = sorted({call.host for call in sent})
    skipped = sum(1 for call in planned if call.skipped)
    yield (
        f"dry run: {plural(len(sent), 'call')} of {plural(len(planned), 'call')} in "
        f"{plural(cassettes, 'cassette')} would be sent to {_shown(', '.join(hosts)) or 'no host'}"
        + (f", {skipped} skipped" if skipped else "")
        + "; nothing was sent"
    )


def _would_send(call: PlannedCall) -> bool:
    """Whether ``drift`` would send a planned call: neither refused nor skipped."""
    return not call.error and not call.skipped


def drift_plan_json(cassettes: int, planned: Sequence[PlannedCall]) -> dict[str, Any]:
    """``drift --dry-run --json``: what each call would send, and to which host."""
    return versioned({"dry_run": True, "cassettes": cassettes, "calls": [call.as_json() for call in planned]})


def drift_json(report: DriftReport) -> dict[str, Any]:
    """``drift --json``: each call's outcome and changed field paths."""
    return versioned({"cassettes": report.cassettes, "calls": [call.as_json() for call in report.calls]})
