"""Generate ``vcr_transport/_core/rules/_gitleaks_rules.py`` from gitleaks' rule file (``config/gitleaks.toml``, MIT).

Usage::

    python tools/gen_credentials.py --git-dir PATH/TO/gitleaks.git          # reads HEAD:config/gitleaks.toml
    python tools/gen_credentials.py --toml gitleaks.toml --version v8.30.0 --commit <sha>

It keeps the rules whose secret has a shape of its own: a literal prefix (``ghp_``, ``sk-ant-api03-``,
``dop_v1_``) or a distinctive literal inside it (``.atlasv1.``, ``T3BlbkFJ``, ``Q~``). The generic rules that find
any value after a keyword (``generic-api-key``, ``<vendor> ... = [a-z0-9]{32}``) are left out: they would remove
commit hashes, UUIDs and ids after a vendor's name. Of such a keyword rule, the secret itself is kept when it has
a prefix of its own (mailgun's ``key-``, New Relic's ``NRJS-``, Typeform's ``tfp_``).

Each kept regular expression is translated from Go's RE2 to Python's ``re`` (POSIX classes, flags set in the
middle of a pattern, ``\\z``), its boundaries replaced by the catalogue's (a prefixed key must not stand inside a
longer run of base64), compiled to check it, and given a sample generated from it, recorded in the generated
module: ``tests/core/test_catalogue.py`` checks that the redactor removes every sample. The module holds
plain data (strings); ``_catalogue`` compiles each expression the first time it is needed.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import subprocess
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# The expression module's parser: the generator reads each translated pattern's structure (its literal
# prefixes, its sample) from it. Only this script uses it, never the package.
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

TARGET = Path(__file__).resolve().parent.parent / "vcr_transport" / "_core" / "rules" / "_gitleaks_rules.py"

# The catalogue's boundaries (``_catalogue._BEFORE`` and ``_AFTER``).
BEFORE = r"(?<![A-Za-z0-9_+/.\-])"
AFTER = r"(?![A-Za-z0-9_+/=\-])"
# A prefixed format is found where a token of these characters starts (``_catalogue._TOKEN_BYTES``), at
# least this long (``_catalogue._SHORTEST``).
TOKEN_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/-.")
SHORTEST = 11
MINIMUM_PREFIX = 3

# Rules left out by name, and why.
EXCLUDED = {
    "generic-api-key": "any value after a secret-like word: the name rules own that",
    "curl-auth-header": "a command line; the Authorization rules own the credential",
    "curl-auth-user": "a command line; the userinfo rule owns the credential",
    "private-key": "the catalogue's PEM rule (it also finds a key cut short)",
    "pkcs12-file": "a file path rule",
    "jwt": "the catalogue's JWT rule (the prefix ey starts too many words)",
    "kubernetes-secret-yaml": "a YAML document shape: the name rules own its values",
    "sourcegraph-access-token": "one alternative is any 40 hex digits (commit hashes)",
    "facebook-access-token": "no prefix: a number, a bar and a word",
    "hashicorp-tf-password": "any value after 'password': the name rules own that",
    "nuget-config-password": "an XML attribute after 'Password': the name rules own that",
    "freemius-secret-key": "a PHP array entry after 'secret_key': the name rules own that",
    "twilio-api-key": "a two-letter prefix anywhere in a word; the catalogue's Twilio rule stands alone",
    "gocardless-api-token": "live_ and 40 word characters, without gocardless beside it, is an identifier",
    "vault-service-token": "the legacy alternative s.<24> matches ordinary words; hvs. is in the catalogue",
}

# gitleaks' context around a secret: a group that matches before it at the start of the text or after one of
# some characters, a group after it that matches at the end of the text (``(?:[\x60'"\s;]|\\[nr]|$)``: a
# quote, a space, a semicolon, an escaped line break or the end), a word boundary. A key here is bounded by
# the catalogue's own (``BEFORE``, ``AFTER``): it ends where its token does, whatever follows it (``&``,
# ``,``, ``<``, ``}``, ``#``).
_CONTEXT_PART = r"(?:\[(?:\\.|[^\]])*\]|[^()\[])*"  # text of a group without groups (classes may hold parentheses)
LEADING_CONTEXT = re.compile(rf"^(?:\\b|\(\?:\^\|{_CONTEXT_PART}\))")
TRAILING_CONTEXT = re.compile(rf"(?:\\b|\(\?:{_CONTEXT_PART}(?:\$|\\z){_CONTEXT_PART}\))$")
ASSIGNMENT = r"(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)"
POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
    "word": "0-9A-Za-z_",
    "space": r"\t\n\v\f\r ",
}


def translate(go: str) -> str:
    """Go RE2 syntax as Python ``re`` syntax: POSIX classes spelled out, ``\\z`` as ``\\Z``, and a flag group
    set in the middle of a pattern (``(?i)``, which RE2 applies to the rest of the enclosing group) as a scoped
    group closed where that group (or its alternative) ends."""
    out: list[str] = []
    pending: list[list[str]] = [[]]  # per open group: the flags opened in it, to close at its end
    i = 0
    while i < len(go):
        char = go[i]
        if char == "\\":
            pair = go[i : i + 2]
            out.append(r"\Z" if pair == r"\z" else pair)
            i += 2
        elif char == "[":
            end = i + 1
            if end < len(go) and go[end] == "^":
                end += 1
            if end < len(go) and go[end] == "]":
                end += 1
            body = []
            while go[end] != "]":
                if go[end] == "\\":
                    body.append(go[end : end + 2])
                    end += 2
                elif go.startswith("[:", end):
                    close = go.index(":]", end)
                    body.append(POSIX_CLASSES[go[end + 2 : close]])
                    end = close + 2
                else:
                    body.append(go[end])
                    end += 1
            opening = go[i : i + 2] if go.startswith("[^", i) else "["
            out.append(
                opening + go[i + len(opening) : i + len(opening) + (go[i + len(opening)] == "]")] + "".join(body) + "]"
            )
            i = end + 1
        elif char == "(":
            flags = re.match(r"\(\?([imsU-]+)\)", go[i:])
            if flags and i == 0:
                out.append(flags.group())
                i += len(flags.group())
            elif flags:
                out.append(f"(?{flags[1]}:")
                pending[-1].append(flags[1])
                i += len(flags.group())
            else:
                out.append(char)
                pending.append([])
                i += 1
        elif char == ")":
            out.append(")" * len(pending.pop()) + ")")
            i += 1
        elif char == "|":
            opened = pending[-1]
            out.append(")" * len(opened) + "|" + "".join(f"(?{f}:" for f in opened))
            i += 1
        else:
            out.append(char)
            i += 1
    out.append(")" * len(pending.pop()))
    return "".join(out)


def group_source(pattern: str, number: int) -> str:
    """The source of capture group ``number`` of ``pattern`` (Python syntax), without its parentheses."""
    count, depth, start, i = 0, 0, -1, 0
    stack: list[bool] = []
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i += 1
            if pattern[i] == "^":
                i += 1
            if pattern[i] == "]":
                i += 1
            while pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif char == "(":
            capturing = not pattern.startswith("(?", i) or pattern.startswith("(?P<", i)
            stack.append(capturing)
            depth += 1
            if capturing:
                count += 1
                if count == number:
                    start = i + (pattern.index(">", i) + 1 - i if pattern.startswith("(?P<", i) else 1)
                    target = depth
        elif char == ")":
            if start >= 0 and depth == target:
                return pattern[start:i]
            stack.pop()
            depth -= 1
        i += 1
    raise ValueError(f"no group {number} in {pattern}")


def strip_boundaries(go: str) -> tuple[str, str]:
    """(leading global flags, the Go pattern without them and without its context before and after)."""
    flags = ""
    if match := re.match(r"\(\?[a-z]+\)", go):
        flags, go = match.group(), go[match.end() :]
    while match := LEADING_CONTEXT.match(go):
        go = go[match.end() :]
    if match := TRAILING_CONTEXT.search(go):
        go = go[: match.start()]
    return flags, go


def _parsed(pattern: str, flags: int = 0) -> Any:
    return sre_parse.parse(pattern, flags)


def literal_prefixes(pattern: str) -> list[str] | None:
    """The literal text each match of ``pattern`` starts with, one per alternative (at most 12), or None
    when some alternative starts with no literal."""

    def walk(items: list[Any]) -> tuple[list[str], bool]:
        """(the prefixes of ``items``, whether ``items`` are literal text through to their end)."""
        prefixes = [""]
        for op, value in items:
            if op is sre_constants.LITERAL:
                prefixes = [p + chr(value) for p in prefixes]
            elif op is sre_constants.AT:
                continue
            elif op in (sre_constants.SUBPATTERN, sre_constants.BRANCH):
                branches = [value[-1]] if op is sre_constants.SUBPATTERN else value[1]
                walked = [walk(list(branch)) for branch in branches]
                prefixes = [p + q for p in prefixes for inner, _ in walked for q in inner]
                if not all(complete for _, complete in walked) or len(prefixes) > 12:
                    return prefixes, False
            elif op is sre_constants.IN and len(value) <= 6 and all(o is sre_constants.LITERAL for o, _ in value):
                prefixes = [p + chr(v) for p in prefixes for _, v in value]
                if len(prefixes) > 12:
                    return prefixes, False
            else:
                return prefixes, False
        return prefixes, True

    found, _ = walk(list(_parsed(pattern)))
    return found if found and len(found) <= 12 and all(found) else None


# Characters a sample draws from: printable ASCII without quotes, backslash or spaces.
_PRINTABLE = [chr(c) for c in range(0x21, 0x7F) if chr(c) not in "\"'\\`"]


def _class_characters(items: list[Any], ignore_case: bool) -> list[str]:
    negate = any(op is sre_constants.NEGATE for op, _ in items)
    allowed: set[str] = set()
    for op, value in items:
        if op is sre_constants.LITERAL:
            allowed.add(chr(value))
        elif op is sre_constants.RANGE:
            allowed.update(chr(c) for c in range(value[0], value[1] + 1))
        elif op is sre_constants.CATEGORY:
            name = str(value)
            if "DIGIT" in name:
                allowed.update("0123456789")
            elif "WORD" in name:
                allowed.update(c for c in _PRINTABLE if c.isalnum() or c == "_")
            elif "SPACE" in name:
                allowed.add(" ")
    if ignore_case:
        allowed |= {c.swapcase() for c in allowed}
    if negate:
        return [c for c in _PRINTABLE if c not in allowed]
    chosen = [c for c in _PRINTABLE if c in allowed]
    # A key's own characters where the class has them: a "/" or "+" would make a sample that a URL path
    # or a form holds only percent-encoded.
    plain = [c for c in chosen if c.isalnum() or c in "_-"]
    return plain or chosen or sorted(allowed)


def sample(pattern: str, seed: int) -> str:
    """A string ``pattern`` matches whole, its characters spread over each class (``seed`` varies them)."""
    chooser = random.Random(seed)  # deterministic: the same samples at every run

    def pick(choices: list[str]) -> str:
        return chooser.choice(choices)

    def walk(items: list[Any], ignore_case: bool) -> str:
        out = []
        for op, value in items:
            if op is sre_constants.LITERAL:
                out.append(chr(value))
            elif op is sre_constants.NOT_LITERAL:
                out.append(pick([c for c in _PRINTABLE if c != chr(value)]))
            elif op is sre_constants.ANY:
                out.append(".")  # an unescaped dot in a rule is nearly always a host name's
            elif op is sre_constants.IN:
                out.append(pick(_class_characters(list(value), ignore_case)))
            elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT):
                low, high, inner = value
                count = max(low, 12) if high == sre_constants.MAXREPEAT else low
                out.extend(walk(list(inner), ignore_case) for _ in range(count))
            elif op is sre_constants.SUBPATTERN:
                _, add, remove, inner = value
                case = (ignore_case or bool(add & sre_constants.SRE_FLAG_IGNORECASE)) and not (
                    remove & sre_constants.SRE_FLAG_IGNORECASE
                )
                out.append(walk(list(inner), case))
            elif op is sre_constants.BRANCH:
                branches = value[1]
                out.append(walk(list(branches[seed % len(branches)]), ignore_case))
            elif op in (sre_constants.AT, sre_constants.ASSERT, sre_constants.ASSERT_NOT):
                continue
            elif op is sre_constants.GROUPREF:
                raise ValueError("back references are not generated")
            else:
                raise ValueError(f"can't generate {op}")
        return "".join(out)

    parsed = _parsed(pattern)
    return walk(list(parsed), bool(parsed.state.flags & sre_constants.SRE_FLAG_IGNORECASE))


def shannon(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


@dataclass
class Rule:
    name: str
    kind: str  # "prefixed" or "keyword"
    keywords: tuple[str, ...]
    pattern: str
    group: int  # the group that is the secret (0: the whole match)
    entropy: float | None
    sample: str


def convert(rule: dict[str, Any]) -> Rule | str:
    """The catalogue rule of one gitleaks rule, or why it is left out."""
    name = rule["id"]
    if name in EXCLUDED:
        return EXCLUDED[name]
    if "regex" not in rule:
        return "no regular expression (a path rule)"
    re.compile(translate(rule["regex"]))  # the whole rule translates
    flags, go = strip_boundaries(rule["regex"])
    core = translate(go)
    extracted = False
    if ASSIGNMENT in go or "[\\w.-]{0,50}?" in go:
        # A keyword rule: keep its secret alone when the secret has a prefix of its own.
        group = group_source(core, int(rule.get("secretGroup", 1)))
        flags = flags or ("(?i)" if "(?i:" in core[: core.find(group)] else "")
        prefixes = literal_prefixes(flags + group)
        if not prefixes or min(map(len, prefixes)) < 4:
            return "a value after the vendor's name, no shape of its own"
        flags, core = strip_boundaries(flags + group)
        extracted = True
    prefixes = literal_prefixes(flags + core)
    entropy = rule.get("entropy")
    literal = core.replace("\\", "").lower()
    inside = tuple(k.lower() for k in rule.get("keywords", ()) if len(k) >= 2 and k.lower() in literal)
    if prefixes and min(map(len, prefixes)) >= MINIMUM_PREFIX:
        pattern = flags + BEFORE + core + AFTER
        keywords = tuple(dict.fromkeys(prefixes))
        kind = "prefixed"
    elif inside:
        pattern = flags + BEFORE + core + AFTER
        keywords = inside
        kind = "keyword"
    else:
        return "no literal prefix nor keyword of its own"
    compiled = re.compile(pattern)
    group = 0
    for seed in range(40):
        text = sample(pattern, seed)
        match = compiled.fullmatch(text)
        if match is None:
            continue
        # The secret: gitleaks' first group, when it is most of the match (not a repeated piece of it).
        group = 1 if not extracted and compiled.groups and len(match[1] or "") * 2 >= len(text) else 0
        if entropy is None or shannon(match[group]) >= entropy:
            break
    else:
        raise SystemExit(f"{name}: no sample of {pattern!r} matches it with entropy {entropy}")
    if kind == "prefixed" and not all(c in TOKEN_CHARACTERS for c in text[:SHORTEST]):
        # The token finder would not see it start: found by its keyword instead.
        if not inside:
            return "its prefix is not a token's start, and it has no keyword of its own"
        kind, keywords = "keyword", inside
    return Rule(name, kind, keywords, pattern, group, entropy, text)


HEADER = '''"""Generated by tools/gen_credentials.py from gitleaks' config/gitleaks.toml: do not edit by hand.

Source: gitleaks {version} (commit {commit}),
https://github.com/gitleaks/gitleaks, MIT License, Copyright (c) 2019 Zachary Rice.
{kept} of its {total} rules are kept (the prefixed and shape-specific ones), translated to Python's ``re``; each
carries a sample generated from its expression, which the redactor must
remove (tests/core/test_catalogue.py). ``_catalogue`` compiles an expression the first time it is needed.
"""

# ruff: noqa: E501

from __future__ import annotations

__all__ = ["GITLEAKS_COMMIT", "GITLEAKS_RULES", "GITLEAKS_VERSION", "GitleaksRule"]

from typing import NamedTuple

GITLEAKS_VERSION = {version!r}
GITLEAKS_COMMIT = {commit!r}


class GitleaksRule(NamedTuple):
    """One gitleaks rule: ``kind`` "prefixed" (every match starts with one of ``keywords``, case as written)
    or "keyword" (searched wherever one of ``keywords``, lower case, occurs); ``group``, the group of
    ``pattern`` that is the secret (0: the whole match); ``entropy``, gitleaks' minimum Shannon entropy of the
    secret; ``sample``, a secret the pattern matches (generated from it)."""

    name: str
    kind: str
    keywords: tuple[str, ...]
    pattern: str
    group: int
    entropy: float | None
    sample: str


GITLEAKS_RULES: tuple[GitleaksRule, ...] = (
'''


def render(rules: list[Rule], version: str, commit: str, total: int) -> str:
    lines = [HEADER.format(version=version, commit=commit, kept=len(rules), total=total)]
    for rule in rules:
        lines.append(
            "    GitleaksRule(\n"
            f"        {rule.name!r},\n"
            f"        {rule.kind!r},\n"
            f"        {rule.keywords!r},\n"
            f"        {rule.pattern!r},\n"
            f"        {rule.group!r},\n"
            f"        {rule.entropy!r},\n"
            f"        {rule.sample!r},\n"
            "    ),\n"
        )
    lines.append(")\n")
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git-dir", type=Path, help="a gitleaks git directory: reads HEAD:config/gitleaks.toml")
    parser.add_argument("--toml", type=Path, help="a copy of gitleaks.toml (with --version and --commit)")
    parser.add_argument("--version", help="the gitleaks version the copy is of (git describe --tags)")
    parser.add_argument("--commit", help="the gitleaks commit the copy is of")
    parser.add_argument("--output", type=Path, default=TARGET)
    parser.add_argument("--verbose", action="store_true", help="print each rule left out and why")
    args = parser.parse_args(argv)
    if args.git_dir:

        def git(*command: str) -> str:
            return subprocess.run(
                ["git", "-C", str(args.git_dir), *command], check=True, capture_output=True, text=True
            ).stdout

        source = git("show", "HEAD:config/gitleaks.toml")
        version, commit = git("describe", "--tags").strip(), git("rev-parse", "HEAD").strip()
    elif args.toml and args.version and args.commit:
        source, version, commit = args.toml.read_text(encoding="utf-8"), args.version, args.commit
    else:
        parser.error("give --git-dir, or --toml with --version and --commit")
    rules = tomllib.loads(source)["rules"]
    kept: list[Rule] = []
    for rule in rules:
        converted = convert(rule)
        if isinstance(converted, Rule):
            kept.append(converted)
        elif args.verbose:
            print(f"left out {rule['id']}: {converted}", file=sys.stderr)
    args.output.write_text(render(kept, version, commit, len(rules)), encoding="utf-8")
    # The repository's formatting, so that a run on the same rules changes nothing.
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(args.output)], check=False)
    print(f"{len(kept)} of {len(rules)} rules written to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
