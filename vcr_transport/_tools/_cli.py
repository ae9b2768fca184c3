"""The ``vcr-transport`` command: see, check, manage and serve cassettes.

Only ``serve`` and ``drift`` open connections: ``serve`` replays cassettes over HTTP and, asked to, records
through a proxy; ``drift`` sends a cassette's requests to the live API to compare the answers' shapes.

Conventions, the same for every command (each ``--help`` says them too):

- **Exit status** as diff(1) and ``git diff --exit-code``: 0 all is well (the same, nothing found), 1 a
  difference or a problem was found, 2 trouble (a missing file, a cassette that can't be read, options that
  don't go together, no network).
- **Output**: text for people, ``--json`` for scripts (an object whose ``json_version`` says its shape,
  docs/reference/cli-json.md); paths as the user would type them, the same in both. Colour on a terminal
  (``NO_COLOR`` and ``FORCE_COLOR`` honoured, ``_term``), and a progress line on stderr when a long run
  goes to a terminal. Text from a cassette (or its file name) never reaches the terminal raw: its control and
  bidi characters are shown escaped (``visible``), in the text output and in error messages alike.
- This module parses and prints; ``_manage`` does the work on the files, ``_render`` the text.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .._config import ENVIRONMENT_VARIABLE, MODES, check_settings, find_pyproject, read_settings
from .._core.engine._modes import check_mode
from .._core.engine._options import Options
from .._core.format._bodies import DecodeBudget
from .._core.format._format import Cassette, RecordedCall
from .._core.views._view import call_view
from .._display import visible, visible_json
from .._exceptions import CassetteError, VcrTransportError
from .._storage import file_start, not_a_cassette, read_cassette
from .._write_paths import replace_file
from ._diff import compared_calls
from ._manage import (
    ImportOutcome,
    UsageProblem,
    calls_of_removed_tests,
    cassette_summary,
    find_cassettes,
    git_setup,
    import_files,
    project_status,
    prune_reasons,
    remove_cassettes,
    scan,
    split_cassettes,
    verify,
)
from ._pyproject import edit_setting
from ._render import (
    diff_json,
    diff_lines,
    drift_json,
    drift_lines,
    drift_plan_json,
    drift_plan_lines,
    import_line,
    import_summary,
    list_json,
    list_lines,
    removal_lines,
    scan_json,
    scan_lines,
    show_json,
    show_lines,
    status_lines,
    textconv_lines,
    verify_lines,
    versioned,
)
from ._term import Paint, Progress, colour_wanted
from ._vcrpy import ImportProblem

__all__ = ["build_parser", "main"]


def _print_lines(lines: Iterable[str]) -> None:
    for line in lines:
        print(line)


def _print_json(value: Any, **options: Any) -> None:
    print(visible_json(json.dumps(value, indent=2, **options)))


def _paint() -> Paint:
    return Paint(colour_wanted(sys.stdout))


# --- status and mode ------------------------------------------------------------------------------------


def command_status(args: argparse.Namespace) -> int:
    status = project_status(args.mode)
    if args.json:
        _print_json(versioned(status.as_json()))
    else:
        _print_lines(status_lines(status))
    return 0


def command_config(args: argparse.Namespace) -> int:
    """``config [get [KEY]]``, ``config set KEY VALUE``, ``config unset KEY``: [tool.vcr_transport] of the nearest
    pyproject.toml, edited with tomlkit (comments and layout kept; refused when it can't edit safely)."""
    pyproject = find_pyproject() or Path.cwd() / "pyproject.toml"
    if args.action == "get":
        _config_get(pyproject, args.key)
        return 0
    if args.key is None:
        raise UsageProblem(f"config {args.action} needs a key, e.g. vcr-transport config {args.action} mode")
    if args.action == "set" and args.value is None:
        raise UsageProblem(f"config set {args.key} needs a value, e.g. vcr-transport config set mode replay")
    value = None if args.action == "unset" else _setting_value(args.key, args.value)
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    edited = edit_setting(text, args.key, value, where=str(pyproject))
    replace_file(pyproject, edited.encode("utf-8"), root=pyproject.parent)  # the project is the file's folder
    done = f"{args.key} = {json.dumps(value)} saved in" if value is not None else f"{args.key} removed from"
    print(f"{done} {pyproject} [tool.vcr_transport]")
    _config_notes(args.key, value)
    return 0


def _config_get(pyproject: Path, key: str | None) -> None:
    """``config get KEY``, or every key set (``config`` alone too); with none set, says so and where it looked."""
    settings = read_settings(pyproject if pyproject.exists() else None)
    if key is not None:
        check_settings({key: None}, pyproject)
        print(f"{key} = {json.dumps(settings[key])}" if key in settings else f"{key}: not set in {pyproject}")
        return
    example = "e.g. vcr-transport config set mode replay"
    if not pyproject.exists():
        print(f"nothing set: no pyproject.toml in {pyproject.parent} or above; {example} creates it")
    elif not settings:
        print(f"nothing set in {pyproject} [tool.vcr_transport]; {example}")
    for name in sorted(settings):
        print(f"{name} = {json.dumps(settings[name])}")


def _config_notes(key: str, value: Any) -> None:
    """What else decides a saved mode: the environment variable over it, CI refusing a committed recording mode."""
    if key == "mode" and os.environ.get(ENVIRONMENT_VARIABLE):
        print(f"note: {ENVIRONMENT_VARIABLE}={os.environ[ENVIRONMENT_VARIABLE]} is set and takes precedence")
    if key == "mode" and value in ("record", "record-on-miss"):
        print("note: committed, this records wherever the tests run; under CI it is refused (--vcr-mode records)")


def _setting_value(key: str, text: str) -> Any:
    """A value from the command line: TOML (``true``, ``["a", "b"]``, ``'x'``) when it parses, else the text; checked
    as the setting's own validator checks it."""
    import tomllib

    try:
        value: Any = tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        value = text
    if key == "mode":
        check_mode(str(value), f"config set {key}")
    elif key in Options.names():
        try:
            Options.knob(key).check(value, key, f"config set {key}")
        except (TypeError, ValueError) as error:
            raise UsageProblem(str(error)) from None
    return value


# --- list, show, verify ---------------------------------------------------------------------------------


def command_list(args: argparse.Namespace) -> int:
    summaries = [cassette_summary(path) for path in find_cassettes(args.paths)]
    if args.json:
        _print_json(list_json(summaries))
    else:
        _print_lines(list_lines(summaries, _paint()))
    return 0


_TEXTCONV_RAW = 1024 * 1024  # the most of a file that is no cassette ``--textconv`` shows as it is


def _textconv(path: str, volatile: bool) -> int:
    """git's textconv driver: the cassette one line per field; a file that is no readable cassette is shown as
    it is (``visible``), under a line saying why, so that ``git diff`` still works."""
    try:
        cassette = read_cassette(path)
    except CassetteError as error:
        print(f"(not a readable cassette: {str(error).splitlines()[0]})")
        start = file_start(path, _TEXTCONV_RAW)  # a regular file's start: never a device, a FIFO or a link
        if isinstance(start, bytes):
            sys.stdout.write(visible(start.decode("utf-8", "replace"), newlines=True))
            if len(start) == _TEXTCONV_RAW:
                print(f"\n(cut at {_TEXTCONV_RAW:,} bytes)")
        return 0
    _print_lines(textconv_lines(cassette, volatile=volatile))
    return 0


def _write(output: str | None, text: str, what: str) -> None:
    """``text`` into the file ``output`` (saying so), or to stdout without one (or with ``-``). A cassette is
    never the output: ``show a.jsonl --har b.jsonl`` would replace it with a page."""
    if output and output != "-":
        if not_a_cassette(Path(output)) is None:
            raise CassetteError(
                output,
                None,
                "is a cassette, and the output would replace it",
                "name another output file, or - for stdout",
            )
        Path(output).write_text(text, encoding="utf-8")
        print(f"wrote {output} ({len(text.encode('utf-8'))} bytes): {what}")
    else:
        sys.stdout.write(text)


def _html(args: argparse.Namespace) -> int:
    from ._html import html_page

    page = html_page(read_cassette(args.cassette), read_cassette(args.other) if args.other else None)
    _write(args.output, page, "open it in a browser")
    return 0


def _har(args: argparse.Namespace) -> int:
    from ._har import har_log

    cassette = read_cassette(args.cassette, lazy=True)
    log = har_log(cassette, _chosen_calls(cassette, args.call))
    har = visible_json(json.dumps(log, indent=1, ensure_ascii=False))
    _write(args.har, har + "\n", "open it in a HAR viewer or devtools")
    return 0


def _har_alone_took_the_cassette(args: argparse.Namespace) -> None:
    """``show --har CASSETTE``: argparse gives the one path to ``--har`` (its FILE is optional), so it is the
    cassette and the HAR goes to stdout, as ``--html`` without ``-o``. A cassette is always required."""
    if args.cassette is None and args.har not in (None, "-"):
        args.cassette, args.har = args.har, "-"
    if args.cassette is None:
        raise UsageProblem("which cassette? e.g. vcr-transport show tests/cassettes/chat.jsonl")


# ``show``'s options that don't go together: (whether ``args`` hold such a pair, what to say), the first that
# applies is said.
_SHOW_CONFLICTS: tuple[tuple[Callable[[argparse.Namespace], bool], str], ...] = (
    (
        lambda args: args.other and not args.html,
        "a second cassette is shown with --html only; for field differences: vcr-transport diff A B",
    ),
    (lambda args: args.output and not args.html, "-o/--output is for --html (--har takes its own FILE)"),
    (
        lambda args: sum([args.json, args.textconv, args.html, args.har is not None]) > 1,
        "choose one of --json, --textconv, --html, --har",
    ),
    (lambda args: args.textconv and args.call is not None, "--textconv shows the whole cassette; drop --call"),
    (
        lambda args: args.volatile and not args.textconv,
        "--volatile is for --textconv (show and --json always show every header)",
    ),
)


def _show_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``show``'s options together (``_SHOW_CONFLICTS``), or None."""
    return next((problem for conflicts, problem in _SHOW_CONFLICTS if conflicts(args)), None)


def _chosen_calls(cassette: Cassette, number: int | None) -> list[RecordedCall]:
    """``show --call N``'s call, or every call without it."""
    if number is None:
        return cassette.calls
    if not 0 <= number < len(cassette.calls):
        raise UsageProblem(f"{cassette.path} has calls 0..{len(cassette.calls) - 1}; there is no call {number}")
    return [cassette.calls[number]]


def command_show(args: argparse.Namespace) -> int:
    _har_alone_took_the_cassette(args)
    problem = _show_problem(args)
    if problem:
        raise UsageProblem(problem)
    if args.textconv:
        return _textconv(args.cassette, args.volatile)
    if args.html:
        return _html(args)
    if args.har is not None:
        return _har(args)
    cassette = read_cassette(args.cassette, lazy=True)  # chunks are read call by call as they are shown
    budget = DecodeBudget()  # the bodies decoded in all: a JSON document holds them all at once
    views = (call_view(call, budget) for call in _chosen_calls(cassette, args.call))  # one at a time
    if args.json:
        _print_json(show_json(cassette, views), ensure_ascii=False)
    else:
        _print_lines(show_lines(cassette, views))
    return 0


def command_verify(args: argparse.Namespace) -> int:
    progress = Progress("verify")
    try:
        verification = verify(
            args.paths,
            strict=args.strict,
            progress=lambda done, total: progress.update(f"{done} of {total} cassettes"),
            allow_early_stop=args.allow_early_stop,
        )
    finally:
        progress.close()
    if args.json:
        _print_json(versioned(verification.as_json()))
    else:
        _print_lines(verify_lines(verification, _paint()))
    return 1 if verification.problems else 0


# --- diff ----------------------------------------------------------------------------------------------


def command_diff(args: argparse.Namespace) -> int:
    a, b = read_cassette(args.a), read_cassette(args.b)
    compared = list(compared_calls(a, b, volatile=args.volatile))
    if args.json:
        _print_json(diff_json(a, b, compared), default=str)
    else:
        _print_lines(diff_lines(a, b, compared, _paint()))
    return 1 if any(call.differences for call in compared) else 0


# --- scan -----------------------------------------------------------------------------------------------


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def _project_rules() -> tuple[list[str], list[str]]:
    """The ``redact_names`` and ``redact_patterns`` of the project's ``[tool.vcr_transport]``: what recording
    adds to the default rules, so that ``scan`` flags what recording removes and ``import`` removes it."""
    settings = read_settings(find_pyproject())
    return [str(n) for n in settings.get("redact_names", ())], [str(p) for p in settings.get("redact_patterns", ())]


def command_scan(args: argparse.Namespace) -> int:
    progress = Progress("scan")

    def advance(files: int, total: int, done: int, size: int) -> None:
        progress.update(f"{files:,} of {total:,} files, {_megabytes(done)} of {_megabytes(size)}")

    try:
        names, patterns = _project_rules()
        report = scan(args.paths, [*names, *(args.name or ())], [*patterns, *(args.pattern or ())], progress=advance)
    finally:
        progress.close()
    if args.json:
        _print_json(scan_json(report))
    else:
        _print_lines(scan_lines(report, _paint()))
    return 1 if report.hits or report.problems else 0


# --- delete and prune -----------------------------------------------------------------------------------


def _print_removal(
    args: argparse.Namespace,
    why: dict[Path, str],
    skipped: list[tuple[Path, str]],
    calls_of: dict[Path, dict[str, int]] | None = None,
) -> int:
    removal = remove_cassettes(why, yes=args.yes, skipped=skipped, calls_of=calls_of)
    if args.json:
        _print_json(versioned(removal.as_json()))
    else:
        _print_lines(removal_lines(removal))
    return 0


def command_delete(args: argparse.Namespace) -> int:
    return _print_removal(args, {Path(p): "named" for p in args.cassettes}, [])


def command_prune(args: argparse.Namespace) -> int:
    cassettes, others = split_cassettes(find_cassettes([args.dir] if args.dir else []))
    why = prune_reasons(cassettes, older_than=args.older_than, force=args.force)
    unused = {path: why[path] for path in sorted(why)}
    kept = [path for path in cassettes if path not in why]
    calls_of = calls_of_removed_tests(kept, force=args.force) if args.older_than is None else {}
    return _print_removal(args, unused, others, calls_of)


# --- import ---------------------------------------------------------------------------------------------


def command_import(args: argparse.Namespace) -> int:
    """Convert every file. YAML that is no vcrpy cassette (a project's configuration) is skipped in one line; a
    cassette that can't be converted (a body that can't be recovered, a file that would not read back) is
    refused in one line; the run goes on. Ends with a summary; exits 1 when a cassette was refused or none of
    the files was one."""
    outcomes = list(_imported(args))
    converted, refused = _converted_and_refused(outcomes)
    calls = sum(o.calls for o in converted)
    if args.json:
        files = [outcome.as_json() for outcome in outcomes]
        _print_json(versioned({"files": files, "converted": len(converted), "calls": calls}))
    else:
        _print_import_end(outcomes, len(converted), calls, refused)
    return 1 if refused or not converted else 0


def _imported(args: argparse.Namespace) -> Iterator[ImportOutcome]:
    """Each file's outcome as it is imported, told in a line as it comes (a refusal on stderr) unless
    ``--json``."""
    for outcome in import_files(args.files, args.out, *_project_rules()):
        if not args.json:
            print(import_line(outcome), file=sys.stderr if outcome.refused is not None else sys.stdout)
        yield outcome


def _converted_and_refused(outcomes: list[ImportOutcome]) -> tuple[list[ImportOutcome], list[CassetteError]]:
    """The files converted, and why each refused one was."""
    converted = [o for o in outcomes if o.refused is None and o.skipped is None]
    return converted, [o.refused for o in outcomes if o.refused is not None]


def _print_import_end(outcomes: list[ImportOutcome], converted: int, calls: int, refused: list[CassetteError]) -> None:
    """``import``'s notes on what converted cassettes lack (when there are any), then its summary."""
    skipped = sum(o.skipped is not None for o in outcomes)
    if converted:
        print("note: vcrpy keeps no chunk boundaries, so each body came in whole, as one chunk; re-record to get them")
        print("note: these cassettes match as vcrpy did (match_on in their header); see the docs to tighten it")
    print(import_summary(converted, calls, refused, skipped))


# --- drift ----------------------------------------------------------------------------------------------


def command_drift(args: argparse.Namespace) -> int:
    from ._drift import DriftProblem, check_drift, plan_drift  # lazily: it imports httpx2

    upstreams = dict(_upstreams(args.upstream or []))
    if args.dry_run:
        try:
            cassettes, planned = plan_drift(
                find_cassettes(args.cassettes), upstreams=upstreams, include_writes=args.include_writes
            )
        except DriftProblem as problem:
            raise UsageProblem(str(problem)) from None
        if args.json:
            _print_json(drift_plan_json(cassettes, planned))
        else:
            _print_lines(drift_plan_lines(cassettes, planned, _paint()))
        return 2 if any(call.error for call in planned) else 0
    progress = Progress("drift")
    try:
        report = check_drift(
            find_cassettes(args.cassettes),
            upstreams=upstreams,
            timeout=args.timeout,
            include_writes=args.include_writes,
            progress=lambda done, total: progress.update(f"{done} of {total} calls"),
        )
    except DriftProblem as problem:
        raise UsageProblem(str(problem)) from None
    finally:
        progress.close()
    if args.json:
        _print_json(drift_json(report))
    else:
        _print_lines(drift_lines(report, _paint()))
    return report.exit_status


# --- git-setup and completion ---------------------------------------------------------------------------


def command_git_setup(args: argparse.Namespace) -> int:
    for line in git_setup(Path.cwd(), sys.executable, dry_run=args.dry_run):
        print(line)
    return 0


def command_completion(args: argparse.Namespace) -> int:
    from importlib import resources

    script = resources.files("vcr_transport").joinpath("_tools", "completions", f"vcr-transport.{args.shell}")
    sys.stdout.write(script.read_text(encoding="utf-8"))
    return 0


# --- serve ----------------------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    """An argument that is a whole number of at least 1 (a bound of serve's)."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return number


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
            max_body=args.max_body,
            max_connections=args.max_connections,
            idle_timeout=args.idle_timeout,
            request_timeout=args.request_timeout,
        )
        run_server(config, say=lambda line: print(line, flush=True))
    except ServeError as problem:
        raise UsageProblem(str(problem)) from None
    return 0


# --- the parser: every command with a description, its defaults, examples and exit status ---------------


def _version() -> str:
    from .._version import __version__

    return __version__


TROUBLE = "trouble: a path that isn't there, a cassette that can't be read, options that don't go together"
_REPORTED = {"0": "done", "2": TROUBLE}


def _command(
    commands: Any,
    name: str,
    summary: str,
    description: str,
    examples: Iterable[str],
    exits: dict[str, str] | None = None,
) -> argparse.ArgumentParser:
    """A subcommand whose help gives a description, examples and its exit status (0/1/2)."""
    codes = exits or _REPORTED
    epilog = "examples:\n" + "".join(f"  {example}\n" for example in examples)
    epilog += "\nexit status:\n" + "".join(f"  {code}  {meaning}\n" for code, meaning in codes.items())
    return commands.add_parser(  # type: ignore[no-any-return]
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="machine-readable output (versioned shapes: docs/reference/cli-json.md)"
    )


def _add_status_and_modes(commands: Any) -> None:
    status = _command(
        commands,
        "status",
        "the mode in force, where it came from, and the cassettes found",
        "The mode in force (argument, VCR_TRANSPORT_MODE, pyproject.toml, or the default auto) and where it "
        "came from, the cassette folders, and how many cassettes and calls they hold. Works with broken "
        "cassettes (it counts them).",
        ["vcr-transport status", "vcr-transport status --mode replay --json"],
    )
    status.add_argument("--mode", choices=MODES, help="an explicit mode, as a script would pass it (default: none)")
    _json_flag(status)
    status.set_defaults(run=command_status)
    config = _command(
        commands,
        "config",
        "get, set or unset a setting of pyproject.toml [tool.vcr_transport]",
        "Read or change [tool.vcr_transport] of the nearest pyproject.toml (created when there is none), edited "
        "with a round-trip TOML library: comments and layout stay; an edit that would change anything else is "
        'refused. A value is TOML when it parses (true, ["a", "b"]), else text. A recording mode saved here '
        "never records under CI; for one run, pytest --vcr-mode=... is the switch.",
        [
            "vcr-transport config set mode replay",
            "vcr-transport config",
            "vcr-transport config get mode",
            "vcr-transport config set redact_names '[\"customer_secret\"]'",
            "vcr-transport config unset mode",
        ],
    )
    config.add_argument(
        "action", nargs="?", choices=("get", "set", "unset"), default="get", help="(default: get, every key set)"
    )
    config.add_argument("key", nargs="?", help="a [tool.vcr_transport] key, e.g. mode (get: every key when none)")
    config.add_argument("value", nargs="?", help="the value to set")
    config.set_defaults(run=command_config)


def _add_list_show(commands: Any) -> None:
    listing = _command(
        commands,
        "list",
        "one line per cassette: version, calls, size, completeness, hosts",
        "One line per cassette: format version, number of calls, size, whether every call is complete, and the "
        "hosts. A cassette that can't be read is listed as UNREADABLE with why (verify says more).",
        ["vcr-transport list", "vcr-transport list tests/cassettes --json"],
    )
    listing.add_argument("paths", nargs="*", metavar="DIR", help="folders or files (default: the project's)")
    _json_flag(listing)
    listing.set_defaults(run=command_list)

    show = _command(
        commands,
        "show",
        "a cassette call by call; --textconv for git diff, --html for a page, --har for devtools",
        "A cassette call by call: method, URL, the request body, status and headers, timings, a stream "
        "event by event (content-encodings undone), incomplete calls marked. --textconv gives one line per "
        "field for git's diff driver (volatile fields left out), --html one self-contained HTML page, --har "
        "a HAR 1.2 file for browser devtools and HAR viewers.",
        [
            "vcr-transport show tests/cassettes/chat.jsonl --call 1",
            "vcr-transport show chat.jsonl --html -o chat.html",
            "vcr-transport show old.jsonl new.jsonl --html -o review.html",
            "vcr-transport show chat.jsonl --har chat.har",
            "vcr-transport show --har chat.jsonl | jq '.log.entries[0].timings'",
        ],
    )
    show.add_argument("cassette", nargs="?", metavar="CASSETTE", help="the cassette to show (required)")
    show.add_argument("other", nargs="?", metavar="CASSETTE_B", help="with --html: show B and what changed from A")
    show.add_argument("--call", type=int, metavar="N", help="only call N (default: every call)")
    _json_flag(show)
    show.add_argument("--textconv", action="store_true", help="one line per field, for git diff (a textconv driver)")
    show.add_argument("--volatile", action="store_true", help="with --textconv: show volatile headers and fields too")
    show.add_argument("--html", action="store_true", help="one self-contained HTML page (offline)")
    show.add_argument("-o", "--output", metavar="FILE", help="with --html: write the page here (default: stdout)")
    show.add_argument(
        "--har", nargs="?", const="-", metavar="FILE", help="the calls as a HAR 1.2 file (default or '-': stdout)"
    )
    show.set_defaults(run=command_show)


def _add_diff_verify_scan(commands: Any) -> None:
    diff = _command(
        commands,
        "diff",
        "what differs between two cassettes, call by call; exit 1 when they differ",
        "What differs between two cassettes, field by field. Calls are paired by their requests, not by "
        "position; what changes on every recording (request ids, dates, rate-limit counters, the ids in "
        "answers) is left out unless --volatile; whitespace-only and padding-only changes are said so; long "
        "values (base64, images) are cut to a head, a length and a hash.",
        ["vcr-transport diff old.jsonl new.jsonl", "vcr-transport diff --json a.jsonl b.jsonl"],
        {"0": "the cassettes are the same", "1": "they differ", "2": TROUBLE},
    )
    diff.add_argument("a")
    diff.add_argument("b")
    diff.add_argument("--volatile", action="store_true", help="show the volatile differences too")
    _json_flag(diff)
    diff.set_defaults(run=command_diff)

    verify_ = _command(
        commands,
        "verify",
        "check cassettes for CI; exit 1 on problems",
        "Check cassettes by the format's own rules: the version, every value, every call_end with its count, "
        "orphan lines, unreadable lines (file:line). Incomplete calls are notes (problems with --strict); a "
        "folder with no cassette is a problem.",
        ["vcr-transport verify", "vcr-transport verify tests/cassettes --strict --json"],
        {"0": "no problem", "1": "problems found", "2": TROUBLE},
    )
    verify_.add_argument("paths", nargs="*", metavar="CASSETTE_OR_DIR", help="(default: the project's cassettes)")
    verify_.add_argument("--strict", action="store_true", help="incomplete calls are problems too")
    verify_.add_argument(
        "--allow-early-stop",
        action="append",
        default=[],
        metavar="CASSETTE[:CALL]",
        help="a call of this cassette (a path or a glob; every call without :CALL) may end closed_early: an "
        "intended early stop, no problem for --strict (one recorded with early_stop_ok=True says so itself)",
    )
    _json_flag(verify_)
    verify_.set_defaults(run=command_verify)

    scan_ = _command(
        commands,
        "scan",
        "find secrets in cassettes or any files; exit 1 when found",
        "Find secrets in cassettes or any text file with the redaction engine itself: secret shapes, "
        "secret-named keys, NAME=value lines, base64 payloads, each recorded stream reassembled. Findings are "
        "masked. A line nested too deep to read as JSON is searched as text and reported.",
        ["vcr-transport scan tests/cassettes", "vcr-transport scan . --name x-internal-token --json"],
        {"0": "no secret found", "1": "secrets found, or a line that could not be scanned whole", "2": TROUBLE},
    )
    scan_.add_argument("paths", nargs="+", metavar="PATH")
    scan_.add_argument("--name", action="append", help="another secret name (repeatable)")
    scan_.add_argument("--pattern", action="append", help="another secret regex (repeatable)")
    _json_flag(scan_)
    scan_.set_defaults(run=command_scan)


def _add_delete_prune_import(commands: Any) -> None:
    removed = {"0": "done (or a dry run)", "2": TROUBLE + "; a path that is not a cassette (nothing is deleted)"}
    delete = _command(
        commands,
        "delete",
        "delete cassettes (a dry run unless --yes)",
        "Delete cassettes; a dry run without --yes. Only cassettes (a regular file whose first line is a "
        "cassette header): anything else named refuses the whole command.",
        ["vcr-transport delete tests/cassettes/old.jsonl", "vcr-transport delete tests/cassettes/old.jsonl --yes"],
        removed,
    )
    delete.add_argument("cassettes", nargs="+")
    delete.add_argument("--yes", action="store_true", help="really delete (default: a dry run)")
    _json_flag(delete)
    delete.set_defaults(run=command_delete)

    prune = _command(
        commands,
        "prune",
        "delete cassettes the last test run did not use, or old ones (a dry run unless --yes)",
        "Delete the cassettes no test used in the last complete run (the pytest plugin's ledger), or those "
        "not modified for DAYS; a dry run without --yes. From a cassette several tests share, it removes the "
        "calls of tests that are gone (renamed or removed from a file the run collected, or whose file was "
        "deleted). After a partial run it refuses and says why. Files that are not cassettes are skipped.",
        ["vcr-transport prune", "vcr-transport prune --older-than 90 --yes"],
        removed,
    )
    prune.add_argument("dir", nargs="?", help="(default: the project's cassette folders)")
    prune.add_argument("--older-than", type=float, metavar="DAYS", help="by age instead of by the last test run")
    prune.add_argument("--yes", action="store_true", help="really delete (default: a dry run)")
    prune.add_argument("--force", action="store_true", help="prune by the last run even when it was partial")
    _json_flag(prune)
    prune.set_defaults(run=command_prune)

    importing = _command(
        commands,
        "import",
        "convert vcrpy YAML cassettes to this format, redacting on the way",
        "Convert vcrpy YAML cassettes (files, or folders searched recursively) to JSONL cassettes, redacting "
        "on the way. YAML that is no vcrpy cassette is skipped; a cassette that can't be converted is refused "
        "with why, and the run goes on. A target that may not be written (two inputs for one, a link out of the "
        "project or to no cassette) stops the run before anything is written. Needs PyYAML.",
        ["vcr-transport import tests/cassettes --out tests/cassettes_v1"],
        {"0": "every cassette converted", "1": "a cassette was refused, or none of the files was one", "2": TROUBLE},
    )
    importing.add_argument("files", nargs="+", metavar="FILE_OR_DIR")
    importing.add_argument("--out", help="folder for the converted cassettes (default: beside each file)")
    _json_flag(importing)
    importing.set_defaults(run=command_import)


def _add_drift_tools(commands: Any) -> None:
    drift = _command(
        commands,
        "drift",
        "send a cassette's requests to the live API and compare the answers' shapes (uses the network)",
        "Send each recorded request to the live upstream, and compare the answer's shape with the recording: "
        "status, content type, JSON structure and types, stream event types. A request goes only to its "
        "vendor's own hosts over https (OpenAI, Azure OpenAI, Anthropic, Gemini, Vertex AI, Bedrock; more with "
        "drift_hosts in [tool.vcr_transport]) or to the --upstream named for that vendor, with that vendor's key "
        "(OPENAI_API_KEY, AZURE_OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY) only where "
        "the vendor takes it; any other call is refused before any lookup or connection. WebSocket sessions, "
        "and calls that may change state at the vendor (unless --include-writes), are skipped. Writes nothing; "
        "each call is reported identical, changed (with the field paths), not checked or skipped. Costs what "
        "the requests cost.",
        [
            "vcr-transport drift tests/cassettes/chat.jsonl",
            "vcr-transport drift chat.jsonl --upstream openai=http://127.0.0.1:8000",
            "vcr-transport drift --dry-run tests/cassettes",
        ],
        {
            "0": "every answer sent has the recorded shape (--dry-run: every call not skipped can be sent)",
            "1": "a shape changed",
            "2": TROUBLE + "; a request was refused or failed (--dry-run: a call would be refused)",
        },
    )
    drift.add_argument("cassettes", nargs="+", metavar="CASSETTE_OR_DIR")
    drift.add_argument(
        "--upstream",
        action="append",
        metavar="VENDOR=URL",
        help="send the calls to this vendor's hosts here, with its key (openai, azure, anthropic, gemini, vertex, "
        "bedrock); http allowed",
    )
    drift.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default: 60)")
    drift.add_argument(
        "--dry-run",
        action="store_true",
        help="list each call's verdict: to which host and with which key variable, or why refused or skipped; "
        "send nothing",
    )
    drift.add_argument(
        "--include-writes",
        action="store_true",
        help="also send calls that may change state at the vendor (uploads, deletes, batches...; skipped otherwise)",
    )
    _json_flag(drift)
    drift.set_defaults(run=command_drift)

    setup = _command(
        commands,
        "git-setup",
        "set up git diff's textconv driver for cassettes, with this interpreter's path",
        "Add '**/cassettes/**/*.jsonl diff=vcr' to .gitattributes and set diff.vcr.textconv in this clone's "
        "git config to this Python's absolute path with '-m vcr_transport show --textconv', so git diff and "
        "git log -p work without an active virtualenv. Run it again if the virtualenv moves.",
        ["vcr-transport git-setup", "vcr-transport git-setup --dry-run"],
    )
    setup.add_argument("--dry-run", action="store_true", help="say what would be done, change nothing")
    setup.set_defaults(run=command_git_setup)

    completion = _command(
        commands,
        "completion",
        "print a shell completion script (bash, zsh, fish)",
        "Print the completion script for a shell; it was generated from this parser when the package was built "
        "and needs nothing at run time.",
        [
            "vcr-transport completion bash > ~/.local/share/bash-completion/completions/vcr-transport",
            "vcr-transport completion zsh > ~/.zfunc/_vcr-transport",
            "vcr-transport completion fish > ~/.config/fish/completions/vcr-transport.fish",
        ],
    )
    completion.add_argument("shell", choices=("bash", "zsh", "fish"))
    completion.set_defaults(run=command_completion)


def _add_serve(commands: Any) -> None:
    serve = _command(
        commands,
        "serve",
        "replay cassettes over HTTP to any client, or record through a proxy",
        "Replay cassettes over HTTP/1.1 to any client, whatever its language, on 127.0.0.1; or, with --mode "
        "record or record-on-miss and --upstream, record through a proxy. Requests are matched across every "
        "cassette given, unordered; a miss gets a 400 naming the nearest recorded call.",
        [
            "vcr-transport serve tests/cassettes/chat.jsonl --port 8000",
            "vcr-transport serve new.jsonl --mode record --upstream openai=https://api.openai.com",
        ],
        {"0": "stopped", "2": TROUBLE},
    )
    serve.add_argument("paths", nargs="+", metavar="CASSETTE_OR_DIR")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port (default: 0, a free one, printed)")
    serve.add_argument(
        "--mode", choices=("replay", "record", "record-on-miss"), default="replay", help="(default: replay)"
    )
    serve.add_argument(
        "--upstream", action="append", metavar="VENDOR=URL", help="openai|anthropic|google=URL (record modes)"
    )
    serve.add_argument(
        "--pace", type=float, nargs="?", const=1.0, metavar="FACTOR", help="recorded timing (1.0 when given alone)"
    )
    serve.add_argument("--fault", action="append", metavar="SPEC", help="inject a fault, e.g. cut:after=3")
    serve.add_argument("--match-headers", action="store_true", help="compare request headers too (as in-process)")
    serve.add_argument("--ignore-header", action="append", metavar="NAME", help="a header matching skips")
    serve.add_argument("--ignore-field", action="append", metavar="FIELD", help="a body field matching skips")
    serve.add_argument("--allow-remote", action="store_true", help="listen beyond loopback (keys cross in clear)")
    serve.add_argument("--grace", type=float, default=30.0, help="seconds calls in flight get on SIGTERM (default: 30)")
    serve.add_argument(
        "--max-body",
        type=_positive_int,
        default=64 * 1024 * 1024,
        metavar="BYTES",
        help="the largest request body read; a larger one is answered 413 (default: 64 MiB)",
    )
    serve.add_argument(
        "--max-connections",
        type=_positive_int,
        default=512,
        metavar="N",
        help="connections open at once; one more is answered 503 and closed (default: 512)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help=(
            "close a connection that sends nothing this long while a request is awaited, or a WebSocket session "
            "the recording has waiting for the client (default: 60)"
        ),
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="answer 408 to a request whose head and body take longer to arrive, from its first byte (default: 120)",
    )
    serve.set_defaults(run=command_serve)


@functools.cache  # argparse parsers are reusable; building one costs more than checking a small cassette
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vcr-transport",
        description="See, check, manage and serve vcr_transport cassettes. "
        "Only serve, as a recording proxy, records; only serve and drift use the network.",
        epilog="Without a path, commands look in cassette_dir of [tool.vcr_transport], else in every folder "
        "named 'cassettes' under the project. 'vcr-transport COMMAND --help' describes one command.\n\n"
        "exit status: 0 all is well, 1 a difference or a problem was found, 2 trouble.\n"
        "colour: on a terminal; NO_COLOR=1 turns it off, FORCE_COLOR=1 on.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_status_and_modes(commands)
    _add_list_show(commands)
    _add_diff_verify_scan(commands)
    _add_delete_prune_import(commands)
    _add_serve(commands)
    _add_drift_tools(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (UsageProblem, ImportProblem, VcrTransportError) as problem:
        print(f"vcr-transport {args.command}: {visible(str(problem), newlines=True)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the output was piped into head or less, which stopped reading
        sys.stderr.close()
        return 0
