"""The generated parts of the documentation, and the mkdocs hook that fills them in at build time.

Three parts are generated from the code, so they can't drift from it:

- ``options``: the configuration table, from the fields of ``vcr_transport.Options`` (its ``options_table``);
- ``cli``: the command-line reference, from the argparse parser of ``vcr_transport/_tools/_cli.py``;
- ``schema``: the JSON Schema of a cassette line, from the format's msgspec types (``msgspec.json.schema``),
  also written to ``docs/reference/cassette-schema.json``.

One more file is generated from ``Options``, though it is the package's, not the docs': the TypedDicts that type
each entry point's keyword options, ``vcr_transport/_core/engine/_typed_options.py`` (``typed_options_module``).

Each generated part sits in a page between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``. The build
(``mkdocs build``, which loads this file as a hook) replaces what is there with what the code gives now;
``tests/test_docs.py`` checks that the committed pages already hold it, and

    .venv/bin/python docs/_gen.py

rewrites them (and the two generated files).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
SCHEMA_FILE = DOCS / "reference" / "cassette-schema.json"
_BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- end generated: (?P=name) -->)", re.S)

if str(ROOT) not in sys.path:  # run as a script or loaded by mkdocs from a checkout
    sys.path.insert(0, str(ROOT))


def _cell(text: str) -> str:
    """Text for one cell of a Markdown table."""
    return text.replace("|", "\\|").replace("\n", " ")


# --- options ----------------------------------------------------------------------------------------------


def options_table() -> str:
    """Every option and setting, from the fields of ``Options`` and its ``SETTINGS`` (``options_table``)."""
    from vcr_transport._core.engine._options import options_table

    return options_table()


# --- the command line ------------------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> tuple[argparse._SubParsersAction[Any], dict[str, str]]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return action, helps


def _fixed_width(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` formatting its usage at 100 columns, whatever the terminal says."""
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
    return parser


def _argument(action: argparse.Action) -> tuple[str, str, str]:
    """(how it is written, what it does, its default) for one argument."""
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or (
                action.dest.upper() if not action.choices else "{" + ",".join(action.choices) + "}"
            )
            name += f" [{metavar}]" if action.nargs == "?" else f" {metavar}"
    else:
        name = str(action.metavar or action.dest)
        if action.nargs in ("*", "+"):
            name += "..."
        if action.nargs in ("?", "*"):
            name = f"[{name}]"
    repeat = (
        " (repeatable)"
        if isinstance(action, argparse._AppendAction) and "repeatable" not in (action.help or "")
        else ""
    )
    help_text = (action.help or "") + repeat
    if action.choices and not action.option_strings:
        help_text += " (one of " + ", ".join(map(str, action.choices)) + ")"
    default = action.default
    shown = "" if default in (None, False, argparse.SUPPRESS) else f"`{default}`"
    return name, help_text, shown


def cli_reference() -> str:
    """Every command of ``vcr-transport``: a summary table, then each command's usage and arguments."""
    from vcr_transport._tools._cli import build_parser

    parser = _fixed_width(build_parser())
    action, helps = _subcommands(parser)
    lines = ["```text", parser.format_usage().removeprefix("usage: ").strip(), "```", ""]
    lines += ["| command | what it does |", "|---|---|"]
    lines += [f"| [`{name}`](#{name}) | {_cell(helps.get(name, ''))} |" for name in action.choices]
    for name, sub in action.choices.items():
        _fixed_width(sub)
        usage = sub.format_usage().removeprefix("usage: ").strip()
        summary = helps.get(name, "").rstrip(".")
        lines += ["", f"### `{name}` {{#{name}}}", "", summary[:1].upper() + summary[1:] + ".", "", "```text"]
        lines += [usage, "```"]
        arguments = [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]
        if arguments:
            lines += ["", "| argument | what it does | default |", "|---|---|---|"]
            for argument in arguments:
                written, help_text, default = _argument(argument)
                lines.append(f"| `{_cell(written)}` | {_cell(help_text)} | {default} |")
    return "\n".join(lines)


# --- the cassette schema ------------------------------------------------------------------------------------


def cassette_schema() -> dict[str, Any]:
    """The JSON Schema of one cassette line (draft 2020-12), from the format's msgspec types."""
    import msgspec

    from vcr_transport._core.format import _format

    schema = msgspec.json.schema(_format.Line)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"vcr_transport cassette line, format version {_format.FORMAT_VERSION}",
        "description": (
            "One line of a JSONL cassette. Generated from the msgspec types of "
            "vcr_transport/_core/format/_format.py by docs/_gen.py; the parser checks more than a schema can say "
            "(see the cassette format reference)."
        ),
        **schema,
    }


def schema_text() -> str:
    return json.dumps(cassette_schema(), indent=2, ensure_ascii=False) + "\n"


def typed_options_text() -> str:
    """``vcr_transport/_core/engine/_typed_options.py``: each entry point's keyword options, as a TypedDict."""
    from vcr_transport._core.engine._options import typed_options_module

    return typed_options_module()


TYPED_OPTIONS_FILE = ROOT / "vcr_transport" / "_core" / "engine" / "_typed_options.py"


def registration_text() -> str:
    """``vcr_transport/_core/engine/_registration.py``: what the pytest plugin registers when it loads."""
    from vcr_transport._core.engine._options import registration_module

    return registration_module()


REGISTRATION_FILE = ROOT / "vcr_transport" / "_core" / "engine" / "_registration.py"


def prefix_table_text() -> str:
    """``vcr_transport/_core/rules/_prefix_table.py``: the credential catalogue's prefix table, computed once here."""
    from vcr_transport._core.rules._catalogue import prefix_table_module

    return prefix_table_module()


PREFIX_TABLE_FILE = ROOT / "vcr_transport" / "_core" / "rules" / "_prefix_table.py"
# The generated files beside the pages, each with what gives it.
FILES: dict[Path, Callable[[], str]] = {
    SCHEMA_FILE: schema_text,
    TYPED_OPTIONS_FILE: typed_options_text,
    REGISTRATION_FILE: registration_text,
    PREFIX_TABLE_FILE: prefix_table_text,
}


def schema_block() -> str:
    return "```json\n" + schema_text() + "```"


GENERATORS: dict[str, Callable[[], str]] = {"options": options_table, "cli": cli_reference, "schema": schema_block}


def fill(markdown: str) -> str:
    """``markdown`` with every generated block replaced by what its generator gives now."""

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            raise ValueError(f"unknown generated block {name!r}; known: {', '.join(GENERATORS)}")
        text = GENERATORS[name]()
        return match.group(1) + text + ("" if text.endswith("\n") else "\n") + match.group(4)

    return _BLOCK.sub(replace, markdown)


def generated_names(markdown: str) -> list[str]:
    return [match["name"] for match in _BLOCK.finditer(markdown)]


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def stale() -> list[str]:
    """The committed files that differ from what the generators give now."""
    found = [
        str(page.relative_to(ROOT)) for page in pages() if fill(page.read_text("utf-8")) != page.read_text("utf-8")
    ]
    for file, text in FILES.items():
        if not file.exists() or file.read_text("utf-8") != text():
            found.append(str(file.relative_to(ROOT)))
    return found


def write() -> list[str]:
    changed = stale()
    for page in pages():
        page.write_text(fill(page.read_text("utf-8")), "utf-8")
    for file, text in FILES.items():
        file.write_text(text(), "utf-8")
    return changed


# --- the mkdocs hook ---------------------------------------------------------------------------------------


def on_page_markdown(markdown: str, **_: Any) -> str:
    return fill(markdown)


def on_post_build(config: Any, **_: Any) -> None:
    target = Path(config["site_dir"]) / "reference" / "cassette-schema.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(schema_text(), "utf-8")


if __name__ == "__main__":
    for name in write():
        print(f"regenerated {name}")
