"""What the ``vcr-transport`` command prints, as lines of text (and the dicts ``--json`` prints): a cassette
call by call (``show``), one line per field for git's ``textconv`` driver, the differences between two
cassettes, and the reports of the management commands. A call is rendered from its view
(``_core._view.CallView``); the HTML page is ``_html``."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ._core._conversation import Message, ToolCall
from ._core._diff import CallDifference, changed_words
from ._core._display import shorten
from ._core._format import FORMAT_VERSION, Cassette
from ._core._view import NOT_JSON, CallView, call_view
from ._exceptions import CassetteError
from ._manage import CassetteSummary, ProjectStatus, ScanReport, Verification

__all__ = [
    "diff_json",
    "diff_lines",
    "import_summary",
    "list_lines",
    "plural",
    "scan_json",
    "scan_lines",
    "show_json",
    "show_lines",
    "status_lines",
    "textconv_lines",
    "verify_lines",
]


def plural(count: int, noun: str) -> str:
    """``1 call``, ``2 calls``, ``0 differences``: a count with its noun."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun}es" if noun.endswith(("s", "x", "ch", "sh")) else f"{count} {noun}s"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _indented(text: str, indent: str = "    ") -> list[str]:
    return [f"{indent}{line}" for line in text.splitlines()]


# --- show: a cassette call by call ----------------------------------------------------------------------


def _body_as_text(view: CallView) -> str:
    """A body that is no JSON or stream: as text when it is ASCII or of a text type, else as base64."""
    if view.body.isascii() or "text" in view.content_type:
        return view.text
    return base64.b64encode(view.body).decode()


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
    if view.outcome == "error":
        data["error"] = {"class": view.error_class, "message": view.error_message}
    if view.stream is not None:
        data["sse_events"] = [event.raw for event in view.stream]
    elif view.json is not NOT_JSON:
        data["response_json"] = view.json
    else:
        data["response_text"] = _body_as_text(view)
    return data


def _shown_response(view: CallView) -> Iterator[str]:
    yield f"  response: {view.status} {view.http_version}"
    yield from [f"    {name}: {value}" for name, value in view.response_headers]
    if view.chunk_times:
        first, last = view.chunk_times[0], view.chunk_times[-1]
        yield f"  timing: {view.chunk_count} chunks, first at +{first:.3f}s, last at +{last:.3f}s"
    if view.stream is not None:
        yield f"  stream: {len(view.stream)} events"
        yield from [f"    {event.raw}" for event in view.stream]
    elif view.json is not NOT_JSON:
        yield "  body:"
        yield from _indented(_pretty(view.json))
    else:
        yield f"  body: {_body_as_text(view)[:2000]}"


def _shown_call(view: CallView) -> Iterator[str]:
    mark = "" if view.outcome == "complete" else f"  [INCOMPLETE: {view.outcome}]"
    yield ""
    yield f"call {view.index}: {view.method} {view.url}{mark}"
    body = view.request_body
    if body is not None:
        yield "  request body:"
        yield from _indented(_pretty(body["json"]) if "json" in body else str(next(iter(body.values()))))
    if view.status is None:
        yield f"  no response: {view.error}"
        return
    yield from _shown_response(view)
    if view.outcome == "error":
        yield f"  then failed: {view.error}"


def show_json(cassette: Cassette, views: Iterable[CallView]) -> dict[str, Any]:
    """``show --json``: the cassette's path and header, and each of ``views`` (``call_json``)."""
    return {"path": cassette.path, "header": cassette.header, "calls": [call_json(view) for view in views]}


def show_lines(cassette: Cassette, views: Iterable[CallView]) -> Iterator[str]:
    """``show``: the cassette's header line, then each of ``views`` (its calls, or one of them)."""
    yield f"{cassette.path}: format v{cassette.header['format_version']}, {plural(len(cassette.calls), 'call')}"
    for view in views:
        yield from _shown_call(view)


# --- textconv: one line per field, for git diff ----------------------------------------------------------


def _block(label: str, text: str, indent: str = "  ") -> Iterator[str]:
    """``label: text`` on one line, or ``label:`` then the text's lines indented below it."""
    lines = text.splitlines()
    if len(lines) <= 1:
        yield f"{indent}{label}: {text}"
        return
    yield f"{indent}{label}:"
    for line in lines:
        yield f"{indent}  | {line}"


def _tool_call(call: ToolCall) -> str:
    return f"{call.name}({call.arguments})"


def _message_lines(messages: list[Message], tools: list[str]) -> Iterator[str]:
    for number, message in enumerate(messages):
        if message.text:
            yield from _block(f"request.messages[{number}].{message.role}", message.text)
        for tool_call in message.tool_calls:
            yield f"  request.messages[{number}].{message.role}.tool_call: {_tool_call(tool_call)}"
    if tools:
        yield f"  request.tools: {', '.join(tools)}"


def _reply_lines(view: CallView) -> Iterator[str]:
    if view.reply.text:
        yield from _block("response.text", view.reply.text)
    for tool_call in view.reply.tool_calls:
        yield f"  response.tool_call: {_tool_call(tool_call)}"
    stream, body = view.readable_stream, view.reply_body
    if stream is not None:
        yield f"  response.stream: {len(stream)} events in {view.chunk_count} chunks"
        for number, event in enumerate(stream):
            yield f"  response.stream[{number}]: {event.raw}"
    elif isinstance(body, dict | list):
        yield from _block("response.body", _pretty(body))
    elif body is not None:
        yield from _block("response.body", str(body))


def call_lines(view: CallView) -> Iterator[str]:
    """One call, one line per field (a text or JSON spread over several lines is indented below its
    field); timings are left out: they change on every recording."""
    yield f"call {view.index}: {view.method} {view.url}"
    for name, value in view.request_headers:
        yield f"  request.headers.{name.lower()}: {value}"
    body = view.request_body
    if body is not None and "json" in body:
        yield from _message_lines(view.messages, view.tools)
        yield from _block("request.body", _pretty(body["json"]))
    elif body is not None:
        kind, value = next(iter(body.items()))
        yield from _block(f"request.body.{kind}", str(value))
    if view.status is None:
        yield f"  error: {view.error}"
        return
    yield f"  response.status: {view.status} {view.http_version}"
    for name, value in view.response_headers:
        yield f"  response.headers.{name.lower()}: {value}"
    yield from _reply_lines(view)
    yield f"  outcome: {view.outcome}" + (f": {view.error}" if view.outcome == "error" else "")


def textconv_lines(cassette: Cassette) -> Iterator[str]:
    """``show --textconv``, git's textconv driver: the whole cassette, one line per field (``call_lines``),
    calls separated by a blank line, so a re-recording shows in ``git diff`` as the fields that changed."""
    yield f"cassette format v{cassette.header.get('format_version')}, {len(cassette.calls)} calls"
    for call in cassette.calls:
        yield ""
        yield from call_lines(call_view(call))


# --- diff ----------------------------------------------------------------------------------------------


def _change(left: Any, right: Any) -> str:
    """A difference as the terminal shows it: two texts by their changed words, anything else by value."""
    if isinstance(left, str) and isinstance(right, str) and any(" " in text or "\n" in text for text in (left, right)):
        return changed_words(left, right)
    return f"{shorten(left)} -> {shorten(right)}"


def diff_lines(a: Cassette, b: Cassette, found: Sequence[CallDifference]) -> Iterator[str]:
    """``diff``: one line per difference, then how many there are between the two cassettes."""
    for index, path, left, right in found:
        yield f"call {index}, field {path}: {_change(left, right)}"
    yield (
        f"{plural(len(found), 'difference')} between {a.path} ({plural(len(a.calls), 'call')}) "
        f"and {b.path} ({plural(len(b.calls), 'call')})"
    )


def diff_json(found: Sequence[CallDifference]) -> list[dict[str, Any]]:
    return [{"call_index": i, "field_path": p, "a": x, "b": y} for i, p, x, y in found]


# --- the management commands' reports -------------------------------------------------------------------


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


def _shown_path(path: Path) -> str:
    """A path as the user would type it: relative to the working folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _size(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return ""  # pragma: no cover


def _list_row(summary: CassetteSummary) -> list[str]:
    shown, size = _shown_path(summary.path), _size(summary.size)
    if summary.problem is not None:
        return [shown, "", "", size, f"UNREADABLE: {summary.problem.splitlines()[0]}"]
    state = f"incomplete calls {summary.incomplete_calls}" if summary.incomplete_calls else "all complete"
    calls = plural(summary.calls, "call")
    return [shown, f"v{summary.format_version}", calls, size, state, ", ".join(summary.hosts)]


def list_lines(summaries: Sequence[CassetteSummary]) -> Iterator[str]:
    """``list``: one row per cassette, in columns (the last, the hosts, is not padded)."""
    table = [_list_row(summary) for summary in summaries]
    widths = [max((len(cells[i]) for cells in table if i < len(cells) - 1), default=0) for i in range(5)]
    for cells in table:
        yield "  ".join([*(cell.ljust(widths[i]) for i, cell in enumerate(cells[:-1])), cells[-1]]).rstrip()
    if not table:
        yield "no cassettes found"


def verify_lines(verification: Verification) -> Iterator[str]:
    yield from [f"PROBLEM {problem}" for problem in verification.problems]
    yield from [f"note    {note} (recorded incomplete; replays as recorded)" for note in verification.notes]
    yield (
        f"{plural(verification.cassettes, 'cassette')} checked, {verification.with_problems} with problems, "
        f"format version {FORMAT_VERSION}"
    )


def scan_lines(report: ScanReport) -> Iterator[str]:
    yield from [f"{path}:{number}: secret-shaped value {secret}" for path, number, secret in report.hits]
    yield f"{plural(len(report.files), 'file')} scanned, {plural(len(report.hits), 'secret')} found"


def scan_json(report: ScanReport) -> list[dict[str, Any]]:
    return [{"path": str(path), "line": number, "secret": secret} for path, number, secret in report.hits]


def import_summary(converted: int, calls: int, refused: Sequence[CassetteError], skipped: int = 0) -> str:
    """``import``'s last line: what was converted, the most common reasons files were refused, and how many
    files were skipped as no vcrpy cassettes."""
    summary = f"summary: {plural(converted, 'file')} converted ({plural(calls, 'call')}), {len(refused)} refused"
    if refused:
        why = Counter(
            error.problem.split(":", 1)[-1].strip() if error.problem.startswith("interaction ") else error.problem
            for error in refused
        )
        summary += ": " + "; ".join(f"{n} x {reason}" for reason, n in why.most_common(5))
        if len(why) > 5:
            summary += f"; and {len(why) - 5} other reason(s)"
    if skipped:
        summary += f"; {skipped} skipped (not vcrpy cassettes)"
    if not converted and not refused:
        summary += ": none of the YAML files is a vcrpy cassette, nothing was imported"
    return summary
