"""The package's own regular expressions keep no backtracking point per character of what they read.

Python's engine keeps one for each pass of a repeated group (``(?:[^"\\]|\\.)*``, ``(?:%XX|[a-z])+``) unless the
repeat is possessive or atomic: 114 bytes a character, so a JSON string, a stream's text or a run of key characters
megabytes long took gigabytes to redact (127 to 286 times the text at peak). A repeat of one character class
keeps none. This test reads every pattern the package compiles (module constants, ``lazy_pattern``, the
literal or constant first argument of each ``re``/``regex`` call, the credential catalogue) and refuses an
unbounded repeat of a group that is not possessive, but those listed with the bound of what they read."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from vcr_transport._core._memo import _LazyPattern
from vcr_transport._core.rules import _catalogue

sre: Any = importlib.import_module("re._constants")  # the parser's own tree: no stubs
sre_parse: Any = importlib.import_module("re._parser")
PACKAGE = Path(__file__).resolve().parents[2] / "vcr_transport"
CALLS = {"regex", "compile", "sub", "subn", "finditer", "findall", "match", "fullmatch", "search", "split"}
ONE_CHARACTER = {sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY, sre.CATEGORY}
# Patterns that only ever read a bounded text: where, and the bound.
BOUNDED = {
    "vcr_transport._core.rules._known._HOSTNAME": "fullmatch of a value to learn, at most MAX_PROPAGATED_LENGTH",
}


def _modules() -> Iterator[ModuleType]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] != "__main__":
            yield importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))


def _called_patterns(module: ModuleType) -> Iterator[tuple[str, Any]]:
    """(where, pattern) of each call's first argument that is a literal or made of the module's constants."""
    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        function, called = node.func, getattr(node.func, "id", "")
        of_re = isinstance(function, ast.Attribute) and getattr(function.value, "id", "") == "re"
        if (of_re and getattr(function, "attr", "") in CALLS) or called in ("regex", "lazy_pattern"):
            value = _evaluated(node.args[0], module)
            if isinstance(value, str | bytes):
                yield f"{module.__name__}:{node.lineno}", value


def _evaluated(expression: ast.expr, module: ModuleType) -> object:
    """``expression`` worked out with the module's names, a function's local names standing for ``"x"``
    (``rb'"' + re.escape(key.encode()) + rb'"...'``); None when it can't be."""
    code = compile(ast.Expression(expression), module.__name__, "eval")
    local: dict[str, Any] = {}
    for _ in range(8):
        try:
            return eval(code, vars(module), local)  # noqa: S307 - the package's own source
        except NameError as error:
            local[str(error.name)] = "x"
        except Exception:  # noqa: BLE001 - not a pattern made of names and literals
            return None
    return None


def _listed(value: object) -> Iterator[str | bytes]:
    """A constant's strings: itself, or those of a tuple or list, nested ones too (a table of patterns)."""
    if isinstance(value, str | bytes):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _listed(item)


def _patterns() -> Iterator[tuple[str, Any]]:
    for module in _modules():
        for name, value in vars(module).items():
            if isinstance(value, _LazyPattern):
                yield f"{module.__name__}.{name}", value.__dict__["_pattern"]
            elif isinstance(value, re.Pattern):
                yield f"{module.__name__}.{name}", value.pattern
            elif name.lstrip("_").isupper():  # a constant: a pattern, or a table of them
                yield from ((f"{module.__name__}.{name}", text) for text in _listed(value) if _parses(text))
        yield from _called_patterns(module)
    for credential in (*_catalogue.CATALOGUE, *_catalogue.GITLEAKS_CATALOGUE):
        yield f"catalogue {credential.name}", credential.expression


def _parses(text: str | bytes) -> bool:
    try:
        sre_parse.parse(text)
    except (re.error, OverflowError, TypeError):
        return False
    return True


def _repeated_groups(parsed: Any) -> Iterator[str]:
    """The unbounded repeats of more than one character class that may backtrack, anywhere in ``parsed``."""
    for op, argument in parsed:
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, body = argument
            if high == sre.MAXREPEAT and not (len(body) == 1 and body[0][0] in ONE_CHARACTER):
                yield f"{{{low},}} of {body!s:.60}"
            yield from _repeated_groups(body)
        elif op == sre.POSSESSIVE_REPEAT:
            yield from _repeated_groups(argument[2])
        elif op == sre.SUBPATTERN:
            yield from _repeated_groups(argument[-1])
        elif op == sre.BRANCH:
            for branch in argument[1]:
                yield from _repeated_groups(branch)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            yield from _repeated_groups(argument[1])


def test_no_pattern_of_the_package_repeats_a_group_that_can_backtrack() -> None:
    patterns: dict[Any, str] = {}  # each pattern, where it is first found (a constant before the calls using it)
    for where, pattern in _patterns():
        patterns.setdefault(pattern, where)
    assert len(patterns) > 250, "the patterns are found: module constants, lazy patterns, calls and the catalogue"
    found = {
        where: repeats
        for pattern, where in patterns.items()
        if _parses(pattern) and (repeats := list(_repeated_groups(sre_parse.parse(pattern)))) and where not in BOUNDED
    }
    assert found == {}
    assert set(BOUNDED) <= set(patterns.values()), "each bounded exception is still a pattern of the package"


def test_the_check_finds_the_repeats_it_refuses() -> None:
    refused = [r'"(?:[^"\\]|\\.)*"', r"(?:%[0-9A-F]{2}|[a-z])+", r"(?:/[\w.-]+)+", r"x(?:ab)*?y"]
    allowed = [r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', r"(?:%[0-9A-F]{2}|[a-z])++", r"[a-z]+", r"(?:ab){1,200}"]
    assert [bool(list(_repeated_groups(sre_parse.parse(pattern)))) for pattern in refused + allowed] == [True] * len(
        refused
    ) + [False] * len(allowed)
