"""The ``vcr-transport`` command: see, check and manage cassettes. It never records and never opens a
network connection. ``--json`` gives machine-readable output where it makes sense."""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ._config import ENVIRONMENT_VARIABLE, MODES, find_pyproject, read_settings, resolve_mode
from ._core._bodies import content_type_of, decoded_body, sse_events, stored_body
from ._core._format import FORMAT_VERSION, Cassette, RecordedCall, dumps_line, encode_chunk
from ._core._matching import RequestMatcher, iter_differences
from ._core._redaction import Redactor
from ._core._scan import scan_document
from ._core._stream_redaction import StreamRedactor
from ._exceptions import CassetteError, VcrTransportError
from ._ledger import last_run_cassettes
from ._storage import read_cassette

__all__ = ["main"]

SKIPPED_FOLDERS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache", ".vcr_transport"}


class UsageProblem(Exception):
    """A command-line mistake; the message says what to do."""


def _out(text: str = "") -> None:
    print(text)


def _project_root() -> Path:
    pyproject = find_pyproject()
    return pyproject.parent if pyproject else Path.cwd()


def _cassette_dirs(root: Path) -> list[Path]:
    """Where cassettes live: ``cassette_dir`` of [tool.vcr_transport], else every folder named cassettes."""
    configured = read_settings(find_pyproject()).get("cassette_dir")
    if configured:
        return [root / str(configured)]
    found = []
    for folder, subfolders, _ in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in SKIPPED_FOLDERS]
        if Path(folder).name == "cassettes":
            found.append(Path(folder))
            subfolders[:] = []
    return found


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
    return _cassettes_in([str(d) for d in _cassette_dirs(_project_root())])


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
    folders = _cassette_dirs(root)
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


def set_mode_in_pyproject(text: str, mode: str) -> str:
    """Set ``mode`` in [tool.vcr_transport], leaving every other line as it was."""
    line = f'mode = "{mode}"'
    lines = text.splitlines(keepends=True)
    heading = re.compile(r"\s*\[tool\.vcr_transport\]\s*(#.*)?$")
    table = next((i for i, entry in enumerate(lines) if heading.match(entry)), None)
    if table is None:
        prefix = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return f"{text}{prefix}[tool.vcr_transport]\n{line}\n"
    end = next((i for i in range(table + 1, len(lines)) if re.match(r"\s*\[", lines[i])), len(lines))
    for i in range(table + 1, end):
        if re.match(r"\s*mode\s*=", lines[i]):
            lines[i] = line + "\n"
            return "".join(lines)
    lines.insert(table + 1, line + "\n")
    return "".join(lines)


# --- list, show, verify ---------------------------------------------------------------------------------


def _summary(path: Path) -> dict[str, Any]:
    try:
        cassette = read_cassette(path)
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
    for row, path in zip(rows, paths, strict=True):
        if not row["readable"]:
            _out(f"{_shown(path)}  {_size(path)}  UNREADABLE: {row['problem'].splitlines()[0]}")
            continue
        state = "all complete" if row["complete"] else f"incomplete calls {row['incomplete_calls']}"
        hosts = ", ".join(row["hosts"])
        _out(f"{_shown(path)}  v{row['format_version']}  {row['calls']} calls  {_size(path)}  {state}  {hosts}")
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
        view["sse_events"] = sse_events(text)
    else:
        try:
            view["response_json"] = json.loads(text)
        except ValueError:
            view["response_text"] = (
                text if body.isascii() or "text" in content_type else base64.b64encode(body).decode()
            )
    return view


def command_show(args: argparse.Namespace) -> int:
    cassette = read_cassette(args.cassette)
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
    _out(f"{cassette.path}: format v{cassette.header['format_version']}, {len(cassette.calls)} calls")
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


def verify_file(path: Path) -> tuple[list[str], list[str]]:
    """(problems, notes) of one cassette: every unreadable line, then the first structural problem."""
    problems: list[str] = []
    try:
        data = path.read_bytes()
    except OSError as error:
        return [f"{path}: can't be read: {error.strerror}"], []
    lines = data.split(b"\n")
    if lines[-1]:
        problems.append(f"{path}:{len(lines)}: the last line is cut off (no newline): the recording was interrupted")
    kinds = ("header", "request", "response", "event", "call_end")
    for number, line in enumerate(lines[:-1], start=1):
        try:
            obj = json.loads(line)
        except ValueError as error:
            problems.append(f"{path}:{number}: unreadable line ({error})")
            continue
        if not isinstance(obj, dict) or obj.get("type") not in kinds:
            problems.append(f"{path}:{number}: unknown line type {obj.get('type') if isinstance(obj, dict) else obj!r}")
    if problems:
        return problems, []
    try:
        cassette = Cassette.parse(data, str(path))
    except CassetteError as error:
        return [str(error).replace("cassette ", "", 1)], []
    notes = [
        f"{path}: call {call.index} ({call.method} {call.url}) ended {call.outcome}"
        + (f": {call.error_class}" if call.outcome == "error" else "")
        for call in cassette.calls
        if not call.complete
    ]
    return [], notes


def command_verify(args: argparse.Namespace) -> int:
    paths = _cassettes_in(args.paths) if args.paths else _default_cassettes()
    results = {str(p): verify_file(p) for p in paths}
    problems = [problem for found, _ in results.values() for problem in found]
    notes = [note for _, found in results.values() for note in found]
    if args.strict:
        problems += notes
    if args.json:
        _out(json.dumps({"cassettes": len(paths), "problems": problems, "incomplete": notes}, indent=2))
    else:
        for problem in problems:
            _out(f"PROBLEM {problem}")
        for note in notes if not args.strict else []:
            _out(f"note    {note} (recorded incomplete; replays as recorded)")
        bad = len({p.split(":")[0] for p in problems})
        _out(f"{len(paths)} cassette(s) checked, {bad} with problems, format version {FORMAT_VERSION}")
    return 1 if problems else 0


# --- diff ----------------------------------------------------------------------------------------------


def _response_fields(call: RecordedCall) -> dict[str, Any]:
    body = decoded_body(call.events, call.response_headers).decode("utf-8", "replace")
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        parsed = sse_events(body) if "event-stream" in content_type_of(call.response_headers) else body
    return {
        "status": call.status,
        "outcome": call.outcome,
        "headers": {k.lower(): v for k, v in call.response_headers if k.lower() not in ("date", "content-length")},
        "body": parsed,
    }


def cassette_differences(a: Cassette, b: Cassette) -> Iterator[tuple[int, str, Any, Any]]:
    matcher = RequestMatcher()
    for index in range(max(len(a.calls), len(b.calls))):
        if index >= len(a.calls) or index >= len(b.calls):
            left = f"{len(a.calls)} calls" if index >= len(a.calls) else "present"
            right = f"{len(b.calls)} calls" if index >= len(b.calls) else "present"
            yield index, "call_index", left, right
            continue
        ca, cb = a.calls[index], b.calls[index]
        ra = matcher.comparable(ca.method, ca.url, ca.request_headers, ca.body)
        rb = matcher.comparable(cb.method, cb.url, cb.request_headers, cb.body)
        for section in ("method", "url", "headers", "body"):
            for path, left, right in iter_differences(ra[section], rb[section], section):
                yield index, path, left, right
        for path, left, right in iter_differences(_response_fields(ca), _response_fields(cb), "response"):
            yield index, path, left, right


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
            _out(f"call {index}, field {path}: {_short(left)} -> {_short(right)}")
        _out(f"{len(found)} difference(s) between {args.a} ({len(a.calls)} calls) and {args.b} ({len(b.calls)} calls)")
    return 1 if found else 0


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


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
        _out(f"{len(files)} file(s) scanned, {len(hits)} secret(s) found")
    return 1 if hits else 0


# --- delete and prune -----------------------------------------------------------------------------------


def _remove(paths: list[Path], yes: bool, why: dict[Path, str]) -> int:
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
    for path in paths:
        if not path.is_file():
            raise UsageProblem(f"{path}: no such cassette")
    return _remove(paths, args.yes, {p: "named" for p in paths})


def command_prune(args: argparse.Namespace) -> int:
    root = _project_root()
    paths = _cassettes_in([args.dir]) if args.dir else _default_cassettes()
    why: dict[Path, str] = {}
    if args.older_than is not None:
        cutoff = time.time() - args.older_than * 86400
        for path in paths:
            if path.stat().st_mtime < cutoff:
                why[path] = f"older than {args.older_than:g} days"
    else:
        run, used = last_run_cassettes(root)
        if run is None:
            raise UsageProblem(
                f"no usage ledger under {root / '.vcr_transport'}: run the test suite once with the pytest plugin, "
                "or use --older-than DAYS"
            )
        for path in paths:
            if path.resolve() not in used:
                why[path] = f"no test used it in the last run ({run[:8]})"
    return _remove(sorted(why), args.yes, why)


# --- import ---------------------------------------------------------------------------------------------


def _header_pairs(headers: Any) -> list[tuple[str, str]]:
    pairs = []
    for name, values in (headers or {}).items():
        for value in values if isinstance(values, list) else [values]:
            pairs.append((str(name), str(value)))
    return pairs


def _as_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, dict):
        body = body.get("string", b"")
    return body if isinstance(body, bytes) else str(body).encode("utf-8")


def import_vcrpy(source: Path, target: Path) -> int:
    """Convert a vcrpy YAML cassette into a v1 cassette, redacting on the way. Returns the call count."""
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise UsageProblem("import needs PyYAML: pip install pyyaml") from None
    try:
        document = yaml.load(source.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        raise UsageProblem(f"{source}: not a YAML file: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("interactions"), list):
        raise UsageProblem(f"{source}: not a vcrpy cassette (no 'interactions' list)")
    redactor = Redactor()
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    lines = [
        dumps_line(
            {"type": "header", "format_version": FORMAT_VERSION, "created": created, "imported_from": str(source)}
        )
    ]
    for index, interaction in enumerate(document["interactions"]):
        request, response = interaction["request"], interaction["response"]
        request_headers = _header_pairs(request.get("headers"))
        lines.append(
            dumps_line(
                {
                    "type": "request",
                    "call_index": index,
                    "method": str(request["method"]).upper(),
                    "url": redactor.redact_text(str(request["uri"])),
                    "headers": redactor.redact_headers(request_headers),
                    "body": stored_body(_as_bytes(request.get("body")), content_type_of(request_headers), redactor),
                }
            )
        )
        response_headers = _header_pairs(response.get("headers"))
        status = response.get("status", {})
        lines.append(
            dumps_line(
                {
                    "type": "response",
                    "call_index": index,
                    "status": int(status.get("code", 200)),
                    "headers": redactor.redact_headers(response_headers),
                    "http_version": "HTTP/1.1",
                }
            )
        )
        streaming = StreamRedactor(redactor)
        for chunk, _ in [*streaming.feed(_as_bytes(response.get("body")), 0), *streaming.finish()]:
            kind, value = encode_chunk(chunk)
            lines.append(dumps_line({"type": "event", "call_index": index, "event_index": 0, "t": 0.0, kind: value}))
        lines.append(dumps_line({"type": "call_end", "call_index": index, "event_count": 1, "outcome": "complete"}))
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.partial")
    temporary.write_text("".join(lines), encoding="utf-8")
    os.chmod(temporary, 0o600)
    os.replace(temporary, target)
    return len(document["interactions"])


def command_import(args: argparse.Namespace) -> int:
    for raw in args.files:
        source = Path(raw)
        if not source.is_file():
            raise UsageProblem(f"{source}: no such file")
        target = (Path(args.out) / source.with_suffix(".jsonl").name) if args.out else source.with_suffix(".jsonl")
        count = import_vcrpy(source, target)
        _out(f"imported {count} call(s): {source} -> {target}")
    _out("note: vcrpy keeps no chunk boundaries, so each body came in whole, as one chunk; re-record to get them")
    return 0


# --- entry point ----------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vcr-transport", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    status = commands.add_parser("status", help="the effective mode, where it came from, the cassettes")
    status.add_argument("--mode", choices=MODES, help="an explicit mode, as a script would pass it")
    status.add_argument("--json", action="store_true")
    status.set_defaults(run=command_status)
    for mode in MODES:
        persist = commands.add_parser(mode, help=f"save mode {mode!r} in pyproject.toml [tool.vcr_transport]")
        persist.set_defaults(run=command_set_mode)

    listing = commands.add_parser("list", help="one line per cassette")
    listing.add_argument("paths", nargs="*", metavar="DIR")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=command_list)

    show = commands.add_parser("show", help="a cassette, call by call")
    show.add_argument("cassette")
    show.add_argument("--call", type=int)
    show.add_argument("--json", action="store_true")
    show.set_defaults(run=command_show)

    diff = commands.add_parser("diff", help="call-by-call field differences between two cassettes")
    diff.add_argument("a")
    diff.add_argument("b")
    diff.add_argument("--json", action="store_true")
    diff.set_defaults(run=command_diff)

    verify = commands.add_parser("verify", help="structural check for CI; non-zero on problems")
    verify.add_argument("paths", nargs="*", metavar="CASSETTE_OR_DIR")
    verify.add_argument("--strict", action="store_true", help="incomplete calls are problems too")
    verify.add_argument("--json", action="store_true")
    verify.set_defaults(run=command_verify)

    scan = commands.add_parser("scan", help="find secret-shaped values; non-zero when found")
    scan.add_argument("paths", nargs="+", metavar="PATH")
    scan.add_argument("--name", action="append", help="another secret name (repeatable)")
    scan.add_argument("--pattern", action="append", help="another secret regex (repeatable)")
    scan.add_argument("--json", action="store_true")
    scan.set_defaults(run=command_scan)

    delete = commands.add_parser("delete", help="delete cassettes (dry run unless --yes)")
    delete.add_argument("cassettes", nargs="+")
    delete.add_argument("--yes", action="store_true")
    delete.set_defaults(run=command_delete)

    prune = commands.add_parser("prune", help="delete cassettes no test used in the last run, or old ones")
    prune.add_argument("dir", nargs="?")
    prune.add_argument("--older-than", type=float, metavar="DAYS")
    prune.add_argument("--yes", action="store_true")
    prune.set_defaults(run=command_prune)

    importing = commands.add_parser("import", help="convert vcrpy YAML cassettes, redacting on the way")
    importing.add_argument("files", nargs="+")
    importing.add_argument("--out", help="folder for the converted cassettes (default: beside each file)")
    importing.set_defaults(run=command_import)
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
