"""The ``vcr-transport`` command: see, check, manage and serve cassettes.

Only ``serve`` opens connections: it replays cassettes over HTTP and, asked to, records through a proxy.
``--json`` gives machine-readable output where it makes sense."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ._config import ENVIRONMENT_VARIABLE, MODES, find_pyproject, set_mode_in_pyproject
from ._core._diff import cassette_differences
from ._core._format import Cassette, RecordedCall
from ._core._options import Options
from ._core._view import call_view
from ._exceptions import CassetteError, VcrTransportError
from ._html import html_page
from ._manage import (
    UsageProblem,
    cassette_summary,
    check_deletable,
    find_cassettes,
    project_status,
    prune_reasons,
    scan,
    split_cassettes,
    verify,
)
from ._render import (
    diff_json,
    diff_lines,
    import_summary,
    list_lines,
    plural,
    scan_json,
    scan_lines,
    show_json,
    show_lines,
    status_lines,
    textconv_lines,
    verify_lines,
)
from ._storage import read_cassette
from ._vcrpy import ImportProblem, NotACassette, import_vcrpy, plan_imports

__all__ = ["main"]


def _print_lines(lines: Iterable[str]) -> None:
    for line in lines:
        print(line)


def _print_json(value: Any, **options: Any) -> None:
    print(json.dumps(value, indent=2, **options))


# --- status and mode ------------------------------------------------------------------------------------


def command_status(args: argparse.Namespace) -> int:
    status = project_status(args.mode)
    if args.json:
        _print_json(status.as_json())
    else:
        _print_lines(status_lines(status))
    return 0


def command_set_mode(args: argparse.Namespace) -> int:
    pyproject = find_pyproject() or Path.cwd() / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    pyproject.write_text(set_mode_in_pyproject(text, args.command), encoding="utf-8")
    print(f"mode {args.command} saved in {pyproject} [tool.vcr_transport]")
    if os.environ.get(ENVIRONMENT_VARIABLE):
        print(f"note: {ENVIRONMENT_VARIABLE}={os.environ[ENVIRONMENT_VARIABLE]} is set and takes precedence")
    return 0


# --- list, show, verify ---------------------------------------------------------------------------------


def command_list(args: argparse.Namespace) -> int:
    summaries = [cassette_summary(path) for path in find_cassettes(args.paths)]
    if args.json:
        _print_json([summary.as_json() for summary in summaries])
    else:
        _print_lines(list_lines(summaries))
    return 0


def _textconv(path: str) -> int:
    """git's textconv driver: the cassette one line per field; a file that is no readable cassette is shown as
    it is, under a line saying why, so that ``git diff`` still works."""
    try:
        cassette = read_cassette(path)
    except CassetteError as error:
        print(f"(not a readable cassette: {str(error).splitlines()[0]})")
        sys.stdout.write(Path(path).read_text(encoding="utf-8", errors="replace"))
        return 0
    _print_lines(textconv_lines(cassette))
    return 0


def _html(args: argparse.Namespace) -> int:
    page = html_page(read_cassette(args.cassette), read_cassette(args.other) if args.other else None)
    if args.output:
        Path(args.output).write_text(page, encoding="utf-8")
        print(f"wrote {args.output} ({len(page.encode('utf-8'))} bytes): open it in a browser")
    else:
        sys.stdout.write(page)
    return 0


def _show_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``show``'s options together, or None."""
    if args.other and not args.html:
        return "a second cassette is shown with --html only; for field differences: vcr-transport diff A B"
    if args.output and not args.html:
        return "-o/--output is for --html"
    if sum([args.json, args.textconv, args.html]) > 1:
        return "choose one of --json, --textconv, --html"
    if args.textconv and args.call is not None:
        return "--textconv shows the whole cassette; drop --call"
    return None


def _chosen_calls(cassette: Cassette, number: int | None) -> list[RecordedCall]:
    """``show --call N``'s call, or every call without it."""
    if number is None:
        return cassette.calls
    if not 0 <= number < len(cassette.calls):
        raise UsageProblem(f"{cassette.path} has calls 0..{len(cassette.calls) - 1}; there is no call {number}")
    return [cassette.calls[number]]


def command_show(args: argparse.Namespace) -> int:
    problem = _show_problem(args)
    if problem:
        raise UsageProblem(problem)
    if args.textconv:
        return _textconv(args.cassette)
    if args.html:
        return _html(args)
    cassette = read_cassette(args.cassette, lazy=True)  # chunks are read call by call as they are shown
    views = (call_view(call) for call in _chosen_calls(cassette, args.call))  # one at a time: each holds a body
    if args.json:
        _print_json(show_json(cassette, views), ensure_ascii=False)
    else:
        _print_lines(show_lines(cassette, views))
    return 0


def command_verify(args: argparse.Namespace) -> int:
    verification = verify(args.paths, strict=args.strict)
    if args.json:
        _print_json(verification.as_json())
    else:
        _print_lines(verify_lines(verification))
    return 1 if verification.problems else 0


# --- diff ----------------------------------------------------------------------------------------------


def command_diff(args: argparse.Namespace) -> int:
    a, b = read_cassette(args.a), read_cassette(args.b)
    found = list(cassette_differences(a, b))
    if args.json:
        _print_json(diff_json(found), default=str)
    else:
        _print_lines(diff_lines(a, b, found))
    return 1 if found else 0


# --- scan -----------------------------------------------------------------------------------------------


def command_scan(args: argparse.Namespace) -> int:
    report = scan(args.paths, args.name or (), args.pattern or ())
    if args.json:
        _print_json(scan_json(report))
    else:
        _print_lines(scan_lines(report))
    return 1 if report.hits else 0


# --- delete and prune -----------------------------------------------------------------------------------


def _remove(paths: list[Path], yes: bool, why: dict[Path, str]) -> int:
    """Delete (``yes``) or list what would be deleted, each path with why; refused unless all are cassettes."""
    check_deletable(paths)
    for path in paths:
        print(f"{'deleted' if yes else 'would delete'} {path}  ({why[path]})")
        if yes:
            path.unlink()
    if not yes and paths:
        print("dry run: nothing was deleted; add --yes to delete")
    if not paths:
        print("nothing to delete")
    return 0


def command_delete(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.cassettes]
    return _remove(paths, args.yes, {p: "named" for p in paths})


def command_prune(args: argparse.Namespace) -> int:
    cassettes, others = split_cassettes(find_cassettes([args.dir] if args.dir else []))
    for path, problem in others:
        print(f"skipped {path}: not a cassette ({problem}); prune only deletes cassettes")
    why = prune_reasons(cassettes, older_than=args.older_than, force=args.force)
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
    skipped = 0
    for source, target in plan:
        try:
            count = import_vcrpy(source, target)
        except ImportProblem as problem:
            raise UsageProblem(str(problem)) from None
        except NotACassette as other:
            skipped += 1
            print(f"skipped: {other}")
            continue
        except CassetteError as error:
            refused.append(error)
            one_line = str(error).replace("\n  fix: ", "; fix: ")
            print(f"refused: {one_line}", file=sys.stderr)
            continue
        converted, calls = converted + 1, calls + count
        print(f"imported {plural(count, 'call')}: {source} -> {target}")
    if converted:
        print("note: vcrpy keeps no chunk boundaries, so each body came in whole, as one chunk; re-record to get them")
        print("note: these cassettes match as vcrpy did (match_on in their header); see the docs to tighten it")
    print(import_summary(converted, calls, refused, skipped))
    return 1 if refused or not converted else 0


# --- serve ----------------------------------------------------------------------------------------------


def _upstreams(items: list[str]) -> tuple[tuple[str, str], ...]:
    """``--upstream VENDOR=URL`` arguments as (vendor, URL) pairs."""
    upstreams = []
    for item in items:
        vendor, equals, url = item.partition("=")
        if not equals:
            raise UsageProblem(f"--upstream {item}: give VENDOR=URL, e.g. openai=https://api.openai.com")
        upstreams.append((vendor.strip(), url.strip()))
    return tuple(upstreams)


def _serve_options(args: argparse.Namespace) -> Options:
    """The matching and replay options ``serve``'s arguments give (headers are not compared by default)."""
    arguments: dict[str, Any] = {"faults": args.fault or [], "pace": args.pace}
    arguments["ignore_headers"] = ([] if args.match_headers else ["*"]) + (args.ignore_header or [])
    if args.ignore_field:
        arguments["ignore_fields"] = args.ignore_field
    try:
        return Options.from_arguments(arguments, where="serve")
    except (TypeError, ValueError) as error:
        raise UsageProblem(str(error).removeprefix("serve: ")) from None


def command_serve(args: argparse.Namespace) -> int:
    from ._serve import ServeConfig, ServeError, cassette_files, run_server  # lazily: it imports httpx2

    upstreams, options = _upstreams(args.upstream or []), _serve_options(args)
    try:
        config = ServeConfig(
            cassette_files(args.paths, recording=args.mode != "replay"),
            mode=args.mode,
            upstreams=upstreams,
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


# --- entry point ----------------------------------------------------------------------------------------


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
    except (UsageProblem, ImportProblem) as problem:
        print(f"vcr-transport {args.command}: {problem}", file=sys.stderr)
        return 2
    except VcrTransportError as error:
        print(f"vcr-transport {args.command}: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the output was piped into head or less, which stopped reading
        sys.stderr.close()
        return 0
