"""The generated parts of the documentation, and the mkdocs hook that fills them in at build time.

Three parts are generated from the code, so they can't drift from it:

- ``options``: the configuration table, from the fields of ``vcr_transport.Options`` and its ``SETTINGS``
  (``options_table``);
- ``cli``: the command-line reference, from the argparse parser of ``vcr_transport/_tools/_cli.py``;
- ``schema``: the JSON Schema of a cassette line, from the format's msgspec types (``msgspec.json.schema``),
  also written to ``docs/reference/cassette-schema.json``.

Three more files are generated, though they are the package's, not the docs': from ``Options``, the TypedDicts
that type each entry point's keyword options, ``vcr_transport/_core/engine/_typed_options.py``
(``typed_options_module``), and what the pytest plugin registers when it loads,
``vcr_transport/_registration.py`` (``registration_module``); from the credential catalogue, its
prefix table, ``vcr_transport/_core/rules/_prefix_table.py``. The runtime keeps the declarations; the writing of
these files lives here.

Each generated part sits in a page between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``. The build
(``mkdocs build``, which loads this file as a hook) replaces what is there with what the code gives now;
``tests/integration/test_docs.py`` checks that the committed pages already hold it, and

    .venv/bin/python docs/_gen.py

rewrites them (and the generated files).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Iterable
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
#
# Three outputs come from the fields of ``Options`` (each field's ``Knob``) and ``SETTINGS``: the docs' options
# table, ``_typed_options.py`` and ``_registration.py``. The runtime keeps the declaration; its documentation and
# the two generated modules are written here.


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _marked(text: str) -> str:
    """Command-line options and markers in a text as code."""
    return re.sub(r"(--[\w-]+|@pytest\.mark\.\w+)", r"`\1`", text)


# How the table shows each way [tool.vcr_transport] takes an option.
_PYPROJECT = {"adds": "adds", "fills": "default", "read": "yes", "": ""}
_OPTIONS_HEADER = (
    "option",
    "values",
    "default",
    "arguments",
    "marker",
    "`[tool.vcr_transport]`",
    "ini",
    "environment, command line",
)


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _defaults() -> dict[str, Any]:
    """Each option's default, by name."""
    from vcr_transport._core.engine._options import Options

    return {field.name: field.default for field in dataclasses.fields(Options)}


def _option_row(name: str, default_value: Any) -> str:
    from vcr_transport._core.engine._options import ENTRIES, Options

    knob = Options.knob(name)
    default = knob.shown or f"`{default_value!r}`"
    if knob.has_compat_default:
        default += f" (compat: `{knob.compat!r}`)"
    arguments = "all" if knob.entries == tuple(ENTRIES) else ", ".join(ENTRIES[entry] for entry in knob.entries)
    elsewhere = "; ".join([*([_code(knob.env)] if knob.env else []), *map(_marked, knob.flags)])
    marker = "yes" if knob.marker else ""
    return _row(
        f"`{name}`",
        knob.check.values,
        default,
        arguments,
        marker,
        _PYPROJECT[knob.pyproject],
        _code(knob.ini),
        elsewhere,
    )


def _setting_row(setting: Any) -> str:
    name = _code(setting.name) if setting.name.isidentifier() else setting.name
    pyproject = "yes" if setting.pyproject else ""
    return _row(name, setting.values, setting.default, "", "", pyproject, _code(setting.ini), _code(setting.env))


def options_table() -> str:
    """The docs' table of every option and setting (the fields of ``Options``, then its ``SETTINGS``): what it
    takes, its default, and where it can be set."""
    from vcr_transport._core.engine._options import SETTINGS, Options

    defaults = _defaults()
    rows = [
        _row(*_OPTIONS_HEADER),
        _row(*["---"] * len(_OPTIONS_HEADER)),
        *(_option_row(name, defaults[name]) for name in Options.names()),
        *map(_setting_row, SETTINGS),
    ]
    return "\n".join(rows) + "\n"


# --- the keyword options' types (PEP 692), generated into _typed_options.py -------------------------------

# Each entry point's TypedDict, what it types, and the options it takes as named parameters instead.
TYPED_OPTIONS: dict[str, tuple[str | None, str, tuple[str, ...]]] = {
    "RecordingOptions": ("recording", "``RecordingTransport`` and ``AsyncRecordingTransport``", ()),
    "ReplayOptions": ("replay", "``ReplayTransport``", ()),
    "TransportOptions": ("transport", "``transport()`` and ``async_transport()`` (``mode`` is their own)", ("mode",)),
    "BlockOptions": ("block", "``use_cassette()`` (``mode`` is its own)", ("mode",)),
    "EveryOption": (None, "``Options(...)``", ()),
}
# The names an ``accepts`` may use, and where they come from.
_TYPING_IMPORTS = (
    ("re", "import re"),
    ("Callable", "from collections.abc import Callable"),
    ("Iterable", "from collections.abc import Iterable"),
    ("Mapping", "from collections.abc import Mapping"),
    ("Any", "from typing import Any"),
    ("Literal", "from typing import Literal"),
    ("Fault", "from ._faults import Fault"),
    ("Mode", "from ._modes import Mode"),
)


def _typed_dict(name: str, entry: Any, what: str, named: tuple[str, ...]) -> str:
    """One entry point's TypedDict: each option it takes as a keyword argument, typed as its validator accepts it."""
    from vcr_transport._core.engine._options import Options

    lines = [f"class {name}(TypedDict, total=False):", f'    """The keyword options of {what}."""', ""]
    lines += [
        f"    {option}: {Options.knob(option).check.accepts}" for option in Options.names(entry) if option not in named
    ]
    return "\n".join(lines) + "\n"


def _names_from(module: str, lines: list[str]) -> list[str]:
    """The names that ``lines`` import from ``module``, sorted."""
    prefix = f"from {module} import "
    return sorted(line.removeprefix(prefix) for line in lines if line.startswith(prefix))


def _typing_imports(body: str) -> tuple[list[str], list[str]]:
    """The imports the TypedDicts in ``body`` need: the standard library's (merged a line a module, as ruff sorts
    them), then the package's own."""
    used = [line for word, line in _TYPING_IMPORTS if re.search(rf"\b{word}\b", body)]
    imports = sorted(line for line in used if line.startswith("import "))
    abc_names = _names_from("collections.abc", used)
    if abc_names:
        imports.append(f"from collections.abc import {', '.join(abc_names)}")
    imports.append(f"from typing import {', '.join([*_names_from('typing', used), 'TypedDict'])}")
    local = [line for line in used if line.startswith("from .")]
    return imports, local


def typed_options_module() -> str:
    """The source of ``_typed_options.py``: for each entry point a TypedDict of the options it takes as keyword
    arguments, each typed as its validator ``accepts`` it (``**options: Unpack[ReplayOptions]``, PEP 692)."""
    body = "\n\n".join(_typed_dict(name, *typed) for name, typed in TYPED_OPTIONS.items())
    imports, local = _typing_imports(body)
    all_names = "\n".join(f'    "{name}",' for name in sorted(TYPED_OPTIONS))
    return (
        '"""The keyword options of each entry point, as TypedDicts: ``**options: Unpack[ReplayOptions]`` (PEP 692)\n'
        "lets a type checker refuse an unknown option or a wrong value, and an IDE complete them.\n\n"
        "Generated from the fields of ``Options`` by ``docs/_gen.py`` (``typed_options_module``): do not edit, run\n"
        "``python docs/_gen.py``. ``tests/core/test_options.py`` checks that it is current.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        + "\n".join(imports)
        + "\n\n"
        + "\n".join(local)
        + ("\n\n" if local else "")
        + f"__all__ = [\n{all_names}\n]\n\n\n"
        + body
    )


TYPED_OPTIONS_FILE = ROOT / "vcr_transport" / "_core" / "engine" / "_typed_options.py"


# --- what the pytest plugin registers when it loads, generated into _registration.py -------------------


def _ini_help(name: str, default_value: Any) -> str:
    """What ``pytest --help`` says of an option's ini setting."""
    from vcr_transport._core.engine._options import Options

    knob = Options.knob(name)
    values = ", ".join(knob.choices) if knob.choices else knob.check.values.replace("`", "")
    if isinstance(default_value, tuple):
        return f"the option {name} for every test, added to the marker's: {values}"
    compat = f"; {knob.compat} in the pytest-recording compatibility mode" if knob.has_compat_default else ""
    default = knob.shown.replace("`", "") or str(default_value)
    return f"the option {name} for every test: {values} (default: {default}{compat})"


def _wrapped(text: str, indent: int) -> str:
    """A long string as implicitly concatenated literals, one a line, each within the line length."""
    chunks: list[str] = []
    for word in text.split(" "):
        if chunks and len(chunks[-1]) + len(word) + indent + 4 <= 110:
            chunks[-1] += " " + word
        else:
            chunks.append(word)
    pieces = [chunk + " " for chunk in chunks[:-1]] + chunks[-1:]
    return "\n".join(" " * indent + _literal(piece) for piece in pieces)


def _literal(value: str | tuple[str, ...]) -> str:
    """A string or a tuple of strings as Python source, as ruff formats it (double quotes)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    items = ", ".join(map(_literal, value))
    return f"({items},)" if len(value) == 1 else f"({items})"


def _ini_row(name: str, default_value: Any) -> str:
    """One entry of ``INI_OPTIONS``: (option, ini setting, its help, its pytest ini type, its choices)."""
    from vcr_transport._core.engine._options import Options

    knob = Options.knob(name)
    return (
        f"    (\n        {_literal(name)},\n        {_literal(knob.ini)},\n"
        f"{_wrapped(_ini_help(name, default_value), 8)},\n"
        f"        {_literal('args' if isinstance(default_value, tuple) else 'string')},\n"
        f"        {_literal(knob.choices)},\n    ),"
    )


def _help_literal(text: str) -> str:
    """A help text as a tuple's item, indented 8: one literal when it fits the line, as ruff would join it."""
    one = " " * 8 + _literal(text)
    return one if len(one) + 1 <= 120 else _wrapped(text, 8)


def _compat_constants() -> str:
    """``COMPAT_VALUE``, ``COMPAT_OWNERS`` and ``COMPAT_FLAGS``: what the pytest-recording compatibility mode
    registers, copied from ``_compat`` so that the thin plugin loads without it."""
    from vcr_transport._compat import COMPAT_VALUE, FLAGS, OWNERS

    owners = "".join(f"    ({', '.join(map(_literal, owner))}),\n" for owner in OWNERS)
    flags = "".join(
        f"    (\n        {_literal(flag)},\n        {_literal(dest)},\n        {_literal(action)},\n"
        f"        {_literal(choices) if choices else '()'},\n{_help_literal(text)},\n    ),\n"
        for flag, dest, action, choices, text in FLAGS
    )
    return (
        f"COMPAT_VALUE = {_literal(COMPAT_VALUE)}\n"
        "# The plugins that own pytest-recording's options and marker: (the project, its package, the name pytest\n"
        "# loads it by). While one will load, the compatibility mode registers none of them.\n"
        "COMPAT_OWNERS: tuple[tuple[str, str, str], ...] = (\n" + owners + ")\n"
        "# pytest-recording's options that the compatibility mode serves: (the flag, its dest, its argparse action,\n"
        "# its choices, its help).\n"
        "COMPAT_FLAGS: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (\n" + flags + ")\n"
    )


_REGISTRATION_NAMES = (
    "COMPAT_FLAGS",
    "COMPAT_INI",
    "COMPAT_OWNERS",
    "COMPAT_VALUE",
    "ENVIRONMENT_VARIABLE",
    "INI_OPTIONS",
    "MODES",
    "PYPROJECT_NAMES",
)


def registration_module() -> str:
    """The source of ``_registration.py``: what the pytest plugin needs when it loads (the modes, the ini settings
    of the run-wide options, the keys of ``[tool.vcr_transport]``, what the pytest-recording compatibility mode
    registers) as plain constants, so that a run that uses no cassette imports neither that module's machinery,
    nor ``_modes``, nor ``_compat``."""
    from vcr_transport._core.engine._modes import ENVIRONMENT_VARIABLE, MODES
    from vcr_transport._core.engine._options import COMPAT_INI, Options, pyproject_names

    defaults = _defaults()
    rows = [_ini_row(name, defaults[name]) for name in Options.names("marker") if Options.knob(name).ini]
    return (
        '"""What the pytest plugin registers when it loads, before any cassette is used: the modes (``--vcr-mode``),\n'
        "the ini settings of the run-wide options, and the keys ``[tool.vcr_transport]`` takes. Plain constants, so\n"
        "that loading the plugin imports none of the machinery (issue 26: free when unused). Beside the plugin, not\n"
        "in the engine layer, whose packages would be two more modules for pytest's assertion rewriter to load at\n"
        "every start (about 0.5 ms each).\n\n"
        "Generated from ``_modes.MODES``, the fields of ``Options`` and ``_compat`` by ``docs/_gen.py``\n"
        "(``registration_module``): do not edit, run ``python docs/_gen.py``.\n"
        "``tests/integration/test_registration.py`` checks that it is current.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "__all__ = [\n" + "".join(f'    "{name}",\n' for name in _REGISTRATION_NAMES) + "]\n\n"
        f"MODES: tuple[str, ...] = {_literal(MODES)}\n"
        f"ENVIRONMENT_VARIABLE = {_literal(ENVIRONMENT_VARIABLE)}\n"
        f"COMPAT_INI = {_literal(COMPAT_INI)}\n"
        "# The run-wide options that a pytest ini setting sets: (option, ini setting, its help, its pytest ini type\n"
        "# (args: a list, added to the marker's), the values it takes as text when it takes only a few).\n"
        "INI_OPTIONS: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (\n" + "\n".join(rows) + "\n)\n"
        "PYPROJECT_NAMES: tuple[str, ...] = (\n"
        + "".join(f"    {_literal(name)},\n" for name in pyproject_names())
        + ")\n"
        + _compat_constants()
    )


REGISTRATION_FILE = ROOT / "vcr_transport" / "_registration.py"


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
            "vcr_transport/_core/format/_schema.py by docs/_gen.py; the parser checks more than a schema can say "
            "(see the cassette format reference)."
        ),
        **schema,
    }


def schema_text() -> str:
    return json.dumps(cassette_schema(), indent=2, ensure_ascii=False) + "\n"


def _token_prefix(keyword: str) -> bytes:
    """The start of ``keyword`` that a token holds: up to its first character outside the tokens."""
    from vcr_transport._core.rules._catalogue import TOKEN_BYTES

    prefix = bytearray()
    for byte in keyword.encode():
        if byte not in TOKEN_BYTES:
            break
        prefix.append(byte)
    return bytes(prefix)


def prefix_table(catalogue: Iterable[Any]) -> tuple[tuple[bytes, tuple[int, ...]], ...]:
    """Each prefix that a prefixed format's keyword starts a token with (``_token_prefix``), the longest
    first (then in byte order), and the formats (their index in ``catalogue``) whose prefix it starts with:
    a long token starting with it may be any of them."""
    formats: dict[bytes, set[int]] = {}
    for index, credential in enumerate(catalogue):
        for keyword in credential.keywords if credential.prefixed else ():
            formats.setdefault(_token_prefix(keyword), set()).add(index)
    return tuple(
        (prefix, tuple(sorted(set().union(*(formats.get(prefix[:end], ()) for end in range(len(prefix) + 1))))))
        for prefix in sorted(formats, key=lambda prefix: (-len(prefix), prefix))
    )


def prefix_table_module() -> str:
    """``vcr_transport/_core/rules/_prefix_table.py``: ``prefix_table(CATALOGUE)`` as plain constants, so that
    importing the catalogue computes none of it."""
    from vcr_transport._core.rules._catalogue import CATALOGUE

    # As ruff formats it: the prefixes are token characters (no quote, no backslash), printed in double quotes.
    rows = "".join(f'    (b"{prefix.decode()}", {formats!r}),\n' for prefix, formats in prefix_table(CATALOGUE))
    return (
        '"""The credential catalogue\'s prefix table: each prefix a prefixed format starts a token with, the\n'
        "longest first, and the formats (their index in ``_catalogue.CATALOGUE``) a token starting with it may\n"
        "be. Plain data, so that importing the catalogue computes none of it.\n\n"
        "Generated from the catalogue (``docs/_gen.py``, ``prefix_table_module``): do not edit, run\n"
        "``python docs/_gen.py``. ``tests/core/test_catalogue.py`` checks that it is current.\n"
        '"""\n\n'
        "# ruff: noqa: E501\n\n"
        "from __future__ import annotations\n\n"
        '__all__ = ["PREFIX_TABLE"]\n\n'
        f"PREFIX_TABLE: tuple[tuple[bytes, tuple[int, ...]], ...] = (\n{rows})\n"
    )


PREFIX_TABLE_FILE = ROOT / "vcr_transport" / "_core" / "rules" / "_prefix_table.py"
# The generated files beside the pages, each with what gives it.
FILES: dict[Path, Callable[[], str]] = {
    SCHEMA_FILE: schema_text,
    TYPED_OPTIONS_FILE: typed_options_module,
    REGISTRATION_FILE: registration_module,
    PREFIX_TABLE_FILE: prefix_table_module,
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
