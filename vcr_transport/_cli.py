"""The ``vcr-transport`` command: see, check, manage and serve cassettes.

Only ``serve`` opens connections: it replays cassettes over HTTP and, asked to, records through a proxy.
``--json`` gives machine-readable output where it makes sense."""

from __future__ import annotations

import argparse
import base64
import functools
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ._config import (
    ENVIRONMENT_VARIABLE,
    MODES,
    SKIPPED_FOLDERS,
    cassette_folders,
    find_pyproject,
    resolve_mode,
    set_mode_in_pyproject,
)
from ._core._bodies import content_type_of, decoded_body
from ._core._conversation import parse_sse
from ._core._diff import cassette_differences, changed_words
from ._core._display import shorten
from ._core._format import FORMAT_VERSION, Cassette, RecordedCall
from ._core._options import Options
from ._core._redaction import Redactor
from ._core._scan import scan_document
from ._exceptions import CassetteError, VcrTransportError
from ._html import html_page
from ._ledger import LedgerProblem, read_ledger
from ._render import textconv_lines
from ._storage import check_cassette, not_a_cassette, read_cassette, read_outline
from ._vcrpy import ImportProblem, NotACassette, import_vcrpy, plan_imports

__all__ = ["main"]


class UsageProblem(Exception):
    """A command-line mistake; the message says what to do."""


def plural(count: int, noun: str) -> str:
    """``1 call``, ``2 calls``, ``0 differences``: a count with its noun."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun}es" if noun.endswith(("s", "x", "ch", "sh")) else f"{count} {noun}s"


def _out(text: str = "") -> None:
    print(text)


def _project_root() -> Path:
    pyproject = find_pyproject()
    return pyproject.parent if pyproject else Path.cwd()


def _cassettes_in(paths: Sequence[str | Path]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.jsonl") if not SKIPPED_FOLDERS & set(p.parts))
        elif path.exists():
            files.append(path)
        else:
            raise UsageProblem(f"{path}: no such file or folder")
    return files


def _default_cassettes() -> list[Path]:
    return _cassettes_in([str(d) for d in cassette_folders(_project_root())])


def _shown(path: Path) -> str:
    """A path as the user would type it: relative to the working folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _hosts(cassette: Cassette) -> list[str]:
    return sorted({urlsplit(call.url).netloc for call in cassette.calls})


def _size(path: Path) -> str:
    size = float(path.stat().st_size)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return ""  # pragma: no cover


# --- status and mode ------------------------------------------------------------------------------------


def command_status(args: argparse.Namespace) -> int:
    resolved = resolve_mode(args.mode)
    root = _project_root()
    folders = cassette_folders(root)
    good = broken = calls = 0
    for path in _cassettes_in([str(f) for f in folders]):
        try:
            calls += len(read_cassette(path).calls)
            good += 1
        except CassetteError:
            broken += 1
    report = {
        "mode": resolved.mode,
        "source": resolved.source,
        "ci": bool(os.environ.get("CI")),
        "cassette_dirs": [str(f) for f in folders],
        "cassettes": good + broken,
        "broken": broken,
        "calls": calls,
    }
    if args.json:
        _out(json.dumps(report, indent=2))
        return 0
    _out(f"mode: {resolved.mode}  (from {resolved.source})")
    if resolved.mode == "auto":
        _out(
            "  auto: "
            + (
                "CI is set, so missing cassettes are errors"
                if report["ci"]
                else "replays existing cassettes, records missing ones"
            )
        )
    _out("cassette folders: " + (", ".join(str(f) for f in folders) or f"none found under {root}"))
    _out(
        f"cassettes: {good + broken} ({calls} calls)"
        + (f", {broken} unreadable: run 'vcr-transport verify'" if broken else "")
    )
    return 0


def command_set_mode(args: argparse.Namespace) -> int:
    pyproject = find_pyproject() or Path.cwd() / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    pyproject.write_text(set_mode_in_pyproject(text, args.command), encoding="utf-8")
    _out(f"mode {args.command} saved in {pyproject} [tool.vcr_transport]")
    if os.environ.get(ENVIRONMENT_VARIABLE):
        _out(f"note: {ENVIRONMENT_VARIABLE}={os.environ[ENVIRONMENT_VARIABLE]} is set and takes precedence")
    return 0


# --- list, show, verify ---------------------------------------------------------------------------------


def _summary(path: Path) -> dict[str, Any]:
    try:
        cassette = read_outline(path)
    except CassetteError as error:
        return {"path": str(path), "size": path.stat().st_size, "readable": False, "problem": str(error)}
    incomplete = [c.index for c in cassette.calls if not c.complete]
    return {
        "path": str(path),
        "size": path.stat().st_size,
        "readable": True,
        "format_version": cassette.header.get("format_version"),
        "calls": len(cassette.calls),
        "hosts": _hosts(cassette),
        "complete": not incomplete,
        "incomplete_calls": incomplete,
    }


def command_list(args: argparse.Namespace) -> int:
    paths = _cassettes_in(args.paths) if args.paths else _default_cassettes()
    rows = [_summary(path) for path in paths]
    if args.json:
        _out(json.dumps(rows, indent=2))
        return 0
    table = []
    for row, path in zip(rows, paths, strict=True):
        if not row["readable"]:
            table.append([_shown(path), "", "", _size(path), f"UNREADABLE: {row['problem'].splitlines()[0]}"])
            continue
        state = "all complete" if row["complete"] else f"incomplete calls {row['incomplete_calls']}"
        hosts = ", ".join(row["hosts"])
        table.append(
            [_shown(path), f"v{row['format_version']}", plural(row["calls"], "call"), _size(path), state, hosts]
        )
    widths = [max((len(cells[i]) for cells in table if i < len(cells) - 1), default=0) for i in range(5)]
    for cells in table:
        _out("  ".join([*(cell.ljust(widths[i]) for i, cell in enumerate(cells[:-1])), cells[-1]]).rstrip())
    if not rows:
        _out("no cassettes found")
    return 0


def _call_view(call: RecordedCall) -> dict[str, Any]:
    body = decoded_body(call.events, call.response_headers)
    content_type = content_type_of(call.response_headers)
    view: dict[str, Any] = {
        "call_index": call.index,
        "method": call.method,
        "url": call.url,
        "request_headers": call.request_headers,
        "request_body": call.body,
        "status": call.status,
        "http_version": call.http_version,
        "response_headers": call.response_headers,
        "outcome": call.outcome,
        "events": len(call.events),
        "first_chunk_s": call.offsets[0] if call.offsets else None,
        "last_chunk_s": call.offsets[-1] if call.offsets else None,
    }
    if call.outcome == "error":
        view["error"] = {"class": call.error_class, "message": call.error_message}
    text = body.decode("utf-8", "replace")
    if "event-stream" in content_type:
        view["sse_events"] = [event.raw for event in parse_sse(text)]
    else:
        try:
            view["response_json"] = json.loads(text)
        except ValueError:
            view["response_text"] = (
                text if body.isascii() or "text" in content_type else base64.b64encode(body).decode()
            )
    return view


def _textconv(path: str) -> int:
    """git's textconv driver: the cassette one line per field; a file that is no readable cassette is shown as
    it is, under a line saying why, so that ``git diff`` still works."""
    try:
        cassette = read_cassette(path)
    except CassetteError as error:
        _out(f"(not a readable cassette: {str(error).splitlines()[0]})")
        sys.stdout.write(Path(path).read_text(encoding="utf-8", errors="replace"))
        return 0
    for line in textconv_lines(cassette):
        _out(line)
    return 0


def _html(args: argparse.Namespace) -> int:
    page = html_page(read_cassette(args.cassette), read_cassette(args.other) if args.other else None)
    if args.output:
        Path(args.output).write_text(page, encoding="utf-8")
        _out(f"wrote {args.output} ({len(page.encode('utf-8'))} bytes): open it in a browser")
    else:
        sys.stdout.write(page)
    return 0


def command_show(args: argparse.Namespace) -> int:
    if args.other and not args.html:
        raise UsageProblem("a second cassette is shown with --html only; for field differences: vcr-transport diff A B")
    if args.output and not args.html:
        raise UsageProblem("-o/--output is for --html")
    if sum([args.json, args.textconv, args.html]) > 1:
        raise UsageProblem("choose one of --json, --textconv, --html")
    if args.textconv:
        if args.call is not None:
            raise UsageProblem("--textconv shows the whole cassette; drop --call")
        return _textconv(args.cassette)
    if args.html:
        return _html(args)
    cassette = read_cassette(args.cassette, lazy=True)  # chunks are read call by call as they are shown
    calls = cassette.calls
    if args.call is not None:
        if not 0 <= args.call < len(calls):
            raise UsageProblem(f"{args.cassette} has calls 0..{len(calls) - 1}; there is no call {args.call}")
        calls = [calls[args.call]]
    views = [_call_view(call) for call in calls]
    if args.json:
        _out(
            json.dumps({"path": cassette.path, "header": cassette.header, "calls": views}, indent=2, ensure_ascii=False)
        )
        return 0
    _out(f"{cassette.path}: format v{cassette.header['format_version']}, {plural(len(cassette.calls), 'call')}")
    for view in views:
        mark = "" if view["outcome"] == "complete" else f"  [INCOMPLETE: {view['outcome']}]"
        _out(f"\ncall {view['call_index']}: {view['method']} {view['url']}{mark}")
        body = view["request_body"]
        if body is not None:
            shown = (
                json.dumps(body["json"], indent=2, ensure_ascii=False) if "json" in body else next(iter(body.values()))
            )
            _out("  request body:")
            for line in str(shown).splitlines():
                _out(f"    {line}")
        if view["status"] is None:
            _out(f"  no response: {view['error']['class']}: {view['error']['message']}")
            continue
        _out(f"  response: {view['status']} {view['http_version']}")
        for name, value in view["response_headers"]:
            _out(f"    {name}: {value}")
        if view["first_chunk_s"] is not None:
            first, last = view["first_chunk_s"], view["last_chunk_s"]
            _out(f"  timing: {view['events']} chunks, first at +{first:.3f}s, last at +{last:.3f}s")
        if "sse_events" in view:
            _out(f"  stream: {len(view['sse_events'])} events")
            for event in view["sse_events"]:
                _out(f"    {event}")
        elif "response_json" in view:
            _out("  body:")
            for line in json.dumps(view["response_json"], indent=2, ensure_ascii=False).splitlines():
                _out(f"    {line}")
        else:
            _out(f"  body: {view['response_text'][:2000]}")
        if view["outcome"] == "error":
            _out(f"  then failed: {view['error']['class']}: {view['error']['message']}")
    return 0


def command_verify(args: argparse.Namespace) -> int:
    paths = _cassettes_in(args.paths) if args.paths else _default_cassettes()
    problems: list[str] = []
    notes: list[str] = []
    bad = 0
    for path in paths:
        findings = list(check_cassette(path))
        found = [str(f) for f in findings if not f.incomplete or args.strict]
        problems += found
        notes += [str(f) for f in findings if f.incomplete and not args.strict]
        bad += bool(found)
    empty = [str(p) for p in args.paths if Path(p).is_dir() and not _cassettes_in([p])]
    problems += [f"{folder}: no cassette (*.jsonl) in this folder" for folder in empty]
    if args.json:
        _out(json.dumps({"cassettes": len(paths), "problems": problems, "incomplete": notes}, indent=2))
    else:
        for problem in problems:
            _out(f"PROBLEM {problem}")
        for note in notes:
            _out(f"note    {note} (recorded incomplete; replays as recorded)")
        _out(f"{plural(len(paths), 'cassette')} checked, {bad} with problems, format version {FORMAT_VERSION}")
    return 1 if problems else 0


# --- diff ----------------------------------------------------------------------------------------------


def command_diff(args: argparse.Namespace) -> int:
    a, b = read_cassette(args.a), read_cassette(args.b)
    found = list(cassette_differences(a, b))
    if args.json:
        _out(
            json.dumps(
                [{"call_index": i, "field_path": p, "a": x, "b": y} for i, p, x, y in found], indent=2, default=str
            )
        )
    else:
        for index, path, left, right in found:
            _out(f"call {index}, field {path}: {_change(left, right)}")
        _out(
            f"{plural(len(found), 'difference')} between {args.a} ({plural(len(a.calls), 'call')}) "
            f"and {args.b} ({plural(len(b.calls), 'call')})"
        )
    return 1 if found else 0


def _change(left: Any, right: Any) -> str:
    """A difference as the terminal shows it: two texts by their changed words, anything else by value."""
    if isinstance(left, str) and isinstance(right, str) and any(" " in text or "\n" in text for text in (left, right)):
        return changed_words(left, right)
    return f"{shorten(left)} -> {shorten(right)}"


# --- scan -----------------------------------------------------------------------------------------------


def _masked(secret: str) -> str:
    secret = secret.strip().strip('"')
    return (secret[:4] + "…" + f"({len(secret)} chars)") if len(secret) > 4 else "…"


def scan_file(path: Path, redactor: Redactor) -> Iterator[tuple[int, str]]:
    """(line, masked secret) for every secret in a file, by the redaction engine (``_core._scan``)."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return
    for number, secret in scan_document(redactor, text):
        yield number, _masked(secret)


def command_scan(args: argparse.Namespace) -> int:
    redactor = Redactor(args.name or (), args.pattern or ())
    files: list[Path] = []
    for raw in args.paths:
        path = Path(raw)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file() and not SKIPPED_FOLDERS & set(p.parts))
        elif path.is_file():
            files.append(path)
        else:
            raise UsageProblem(f"{path}: no such file or folder")
    hits = [(path, number, secret) for path in files for number, secret in scan_file(path, redactor)]
    if args.json:
        _out(json.dumps([{"path": str(p), "line": n, "secret": s} for p, n, s in hits], indent=2))
    else:
        for path, number, secret in hits:
            _out(f"{path}:{number}: secret-shaped value {secret}")
        _out(f"{plural(len(files), 'file')} scanned, {plural(len(hits), 'secret')} found")
    return 1 if hits else 0


# --- delete and prune -----------------------------------------------------------------------------------


def _remove(paths: list[Path], yes: bool, why: dict[Path, str]) -> int:
    refused = {path: problem for path in paths if (problem := not_a_cassette(path))}
    if refused:
        raise UsageProblem(
            "refused, nothing was deleted: "
            + "; ".join(f"{path} is not a cassette ({problem})" for path, problem in refused.items())
            + ". delete and prune only remove vcr_transport cassettes (a file whose first line is a cassette header)"
        )
    for path in paths:
        _out(f"{'deleted' if yes else 'would delete'} {path}  ({why[path]})")
        if yes:
            path.unlink()
    if not yes and paths:
        _out("dry run: nothing was deleted; add --yes to delete")
    if not paths:
        _out("nothing to delete")
    return 0


def command_delete(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.cassettes]
    return _remove(paths, args.yes, {p: "named" for p in paths})


def command_prune(args: argparse.Namespace) -> int:
    root = _project_root()
    paths = []
    for path in _cassettes_in([args.dir]) if args.dir else _default_cassettes():
        problem = not_a_cassette(path)
        if problem:
            _out(f"skipped {path}: not a cassette ({problem}); prune only deletes cassettes")
        else:
            paths.append(path)
    why: dict[Path, str] = {}
    if args.older_than is not None:
        cutoff = time.time() - args.older_than * 86400
        for path in paths:
            if path.stat().st_mtime < cutoff:
                why[path] = f"older than {args.older_than:g} days"
    else:
        try:
            ledger = read_ledger(root)
        except LedgerProblem as problem:
            raise UsageProblem(str(problem)) from None
        if not ledger.complete and not args.force:
            raise UsageProblem(
                f"the last test run (started {ledger.started}) was partial: {ledger.why_incomplete}. "
                "Its unused cassettes may belong to tests it did not run: run the whole suite, then prune "
                "(or add --force to prune by this run anyway)"
            )
        for path in paths:
            if path.resolve() not in ledger.cassettes:
                why[path] = f"no test used it in the last run ({ledger.started})"
    return _remove(sorted(why), args.yes, why)


# --- import ---------------------------------------------------------------------------------------------


def command_import(args: argparse.Namespace) -> int:
    """Convert every file. YAML that is no vcrpy cassette (a project's configuration) is skipped in one line; a
    cassette that can't be converted (a body that can't be recovered, a file that would not read back) is
    refused in one line; the run goes on. Ends with a summary; exits 1 when a cassette was refused or none of
    the files was one."""
    try:
        plan = plan_imports(args.files, args.out)
    except ImportProblem as problem:
        raise UsageProblem(str(problem)) from None
    converted, calls = 0, 0
    refused: list[CassetteError] = []
    skipped: list[NotACassette] = []
    for source, target in plan:
        try:
            count = import_vcrpy(source, target)
        except ImportProblem as problem:
            raise UsageProblem(str(problem)) from None
        except NotACassette as other:
            skipped.append(other)
            _out(f"skipped: {other}")
            continue
        except CassetteError as error:
            refused.append(error)
            one_line = str(error).replace("\n  fix: ", "; fix: ")
            print(f"refused: {one_line}", file=sys.stderr)
            continue
        converted, calls = converted + 1, calls + count
        _out(f"imported {plural(count, 'call')}: {source} -> {target}")
    if converted:
        _out("note: vcrpy keeps no chunk boundaries, so each body came in whole, as one chunk; re-record to get them")
        _out("note: these cassettes match as vcrpy did (match_on in their header); see the README to tighten it")
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
        summary += f"; {len(skipped)} skipped (not vcrpy cassettes)"
    if not converted and not refused:
        summary += ": none of the YAML files is a vcrpy cassette, nothing was imported"
    _out(summary)
    return 1 if refused or not converted else 0


# --- entry point ----------------------------------------------------------------------------------------


def command_serve(args: argparse.Namespace) -> int:
    from ._serve import ServeConfig, ServeError, cassette_files, run_server  # lazily: it imports httpx2

    upstreams = []
    for item in args.upstream or []:
        vendor, equals, url = item.partition("=")
        if not equals:
            raise UsageProblem(f"--upstream {item}: give VENDOR=URL, e.g. openai=https://api.openai.com")
        upstreams.append((vendor.strip(), url.strip()))
    arguments: dict[str, Any] = {"faults": args.fault or [], "pace": args.pace}
    arguments["ignore_headers"] = ([] if args.match_headers else ["*"]) + (args.ignore_header or [])
    if args.ignore_field:
        arguments["ignore_fields"] = args.ignore_field
    try:
        options = Options.from_arguments(arguments, where="serve")
    except (TypeError, ValueError) as error:
        raise UsageProblem(str(error).removeprefix("serve: ")) from None
    try:
        config = ServeConfig(
            cassette_files(args.paths, recording=args.mode != "replay"),
            mode=args.mode,
            upstreams=tuple(upstreams),
            options=options,
            host=args.host,
            port=args.port,
            allow_remote=args.allow_remote,
            grace=args.grace,
        )
        run_server(config, say=lambda line: print(line, flush=True))
    except ServeError as problem:
        raise UsageProblem(str(problem)) from None
    return 0


def _version() -> str:
    from . import __version__

    return __version__


@functools.cache  # argparse parsers are reusable; building one costs more than checking a small cassette
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vcr-transport",
        description="See, check, manage and serve vcr_transport cassettes. "
        "Only serve, as a recording proxy, records or uses the network.",
        epilog="Without a path, commands look in cassette_dir of [tool.vcr_transport], else in every folder "
        "named 'cassettes' under the project. 'vcr-transport COMMAND --help' describes one command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    status = commands.add_parser("status", help="the mode in force, where it came from, and the cassettes found")
    status.add_argument("--mode", choices=MODES, help="an explicit mode, as a script would pass it")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(run=command_status)
    for mode in MODES:
        persist = commands.add_parser(mode, help=f"save mode {mode!r} in pyproject.toml [tool.vcr_transport]")
        persist.set_defaults(run=command_set_mode)

    listing = commands.add_parser("list", help="one line per cassette: version, calls, size, completeness, hosts")
    listing.add_argument("paths", nargs="*", metavar="DIR")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(run=command_list)

    show = commands.add_parser("show", help="a cassette call by call; --textconv for git diff, --html for a page")
    show.add_argument("cassette")
    show.add_argument("other", nargs="?", metavar="CASSETTE_B", help="with --html: show B and what changed from A")
    show.add_argument("--call", type=int, metavar="N", help="only call N")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.add_argument("--textconv", action="store_true", help="one line per field, for git diff (a textconv driver)")
    show.add_argument("--html", action="store_true", help="one self-contained HTML page (offline)")
    show.add_argument("-o", "--output", metavar="FILE", help="with --html: write the page here, not to stdout")
    show.set_defaults(run=command_show)

    diff = commands.add_parser("diff", help="what differs between two cassettes, call by call; exit 1 when they differ")
    diff.add_argument("a")
    diff.add_argument("b")
    diff.add_argument("--json", action="store_true", help="machine-readable output")
    diff.set_defaults(run=command_diff)

    verify = commands.add_parser("verify", help="check cassettes for CI; exit 1 on problems")
    verify.add_argument("paths", nargs="*", metavar="CASSETTE_OR_DIR")
    verify.add_argument("--strict", action="store_true", help="incomplete calls are problems too")
    verify.add_argument("--json", action="store_true", help="machine-readable output")
    verify.set_defaults(run=command_verify)

    scan = commands.add_parser("scan", help="find secrets in cassettes or any files; exit 1 when found")
    scan.add_argument("paths", nargs="+", metavar="PATH")
    scan.add_argument("--name", action="append", help="another secret name (repeatable)")
    scan.add_argument("--pattern", action="append", help="another secret regex (repeatable)")
    scan.add_argument("--json", action="store_true", help="machine-readable output")
    scan.set_defaults(run=command_scan)

    delete = commands.add_parser("delete", help="delete cassettes (a dry run unless --yes)")
    delete.add_argument("cassettes", nargs="+")
    delete.add_argument("--yes", action="store_true", help="really delete")
    delete.set_defaults(run=command_delete)

    prune = commands.add_parser(
        "prune", help="delete cassettes the last test run did not use, or old ones (a dry run unless --yes)"
    )
    prune.add_argument("dir", nargs="?")
    prune.add_argument("--older-than", type=float, metavar="DAYS", help="by age instead of by the last test run")
    prune.add_argument("--yes", action="store_true", help="really delete")
    prune.add_argument("--force", action="store_true", help="prune by the last run even when it was partial")
    prune.set_defaults(run=command_prune)

    importing = commands.add_parser("import", help="convert vcrpy YAML cassettes to this format, redacting on the way")
    importing.add_argument("files", nargs="+", metavar="FILE_OR_DIR")
    importing.add_argument("--out", help="folder for the converted cassettes (default: beside each file)")
    importing.set_defaults(run=command_import)
    serve = commands.add_parser("serve", help="replay cassettes over HTTP to any client, or record through a proxy")
    serve.add_argument("paths", nargs="+", metavar="CASSETTE_OR_DIR")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port (default 0: a free one, printed)")
    serve.add_argument("--mode", choices=("replay", "record", "record-on-miss"), default="replay")
    serve.add_argument(
        "--upstream", action="append", metavar="VENDOR=URL", help="openai|anthropic|google=URL (record modes)"
    )
    serve.add_argument("--pace", type=float, nargs="?", const=1.0, metavar="FACTOR", help="recorded timing")
    serve.add_argument("--fault", action="append", metavar="SPEC", help="inject a fault, e.g. cut:after=3")
    serve.add_argument("--match-headers", action="store_true", help="compare request headers too (as in-process)")
    serve.add_argument("--ignore-header", action="append", metavar="NAME", help="a header matching skips")
    serve.add_argument("--ignore-field", action="append", metavar="FIELD", help="a body field matching skips")
    serve.add_argument("--allow-remote", action="store_true", help="listen beyond loopback (keys cross in clear)")
    serve.add_argument("--grace", type=float, default=30.0, help="seconds calls in flight get on SIGTERM")
    serve.set_defaults(run=command_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except UsageProblem as problem:
        print(f"vcr-transport {args.command}: {problem}", file=sys.stderr)
        return 2
    except VcrTransportError as error:
        print(f"vcr-transport {args.command}: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the output was piped into head or less, which stopped reading
        sys.stderr.close()
        return 0
