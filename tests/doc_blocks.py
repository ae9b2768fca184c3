"""The code blocks of the README and of docs/: where each is and what kind it is. Read by
``integration/test_docs.py`` (which runs or parses them) and ``package/typecheck.py`` (which type-checks the
Python ones). Also the generators of docs/_gen.py as a module (``docs_gen``), for the tests that check a
generated file is current.

A block's kind comes from a comment on the line before its fence, ``<!-- doc-test: KIND -->`` (none: ``run``);
``<!-- doc-test: KIND untyped -->`` also keeps a Python block out of the type check (one that shows an error on
purpose)."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
import textwrap
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
KINDS = ("run", "pytest", "tutorial", "live", "sketch", "cassette")
_FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S)
_KIND = re.compile(r"<!-- doc-test: (?P<kind>[a-z]+)(?P<untyped> untyped)? -->\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str
    kind: str
    typed: bool = True

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, in order."""
    text = page.read_text("utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        kind = _KIND.search(before)
        code = textwrap.dedent("\n".join(line[len(match["indent"]) :] for line in match["body"].splitlines()) + "\n")
        line = text.count("\n", 0, match.start()) + 1
        typed = not (kind and kind["untyped"])
        found.append(Block(page, line, match["lang"], code, kind["kind"] if kind else "run", typed))
    return found


def pages() -> list[Path]:
    """The README and every page of docs/."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


@functools.cache
def docs_gen() -> ModuleType:
    """``docs/_gen.py``, loaded once: the generators of the docs' tables and of the package's generated modules."""
    spec = importlib.util.spec_from_file_location("docs_gen", DOCS / "_gen.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
