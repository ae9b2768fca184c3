"""JSON: the secret-named values and those a sibling names, in JSON text (the "json names" rule's work, also in
JSON inside a JSON string) and in parsed values; what is never a secret (booleans, null, schemas)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from ..format._format import PLACEHOLDER
from ._catalogue import looks_like_credential
from ._names import Names, words_of
from ._patterns import regex

__all__ = [
    "Context",
    "JSON_ESCAPE",
    "SIBLING_NAME_KEYS",
    "SIBLING_VALUE_BYTES",
    "SIBLING_VALUE_KEYS",
    "folded",
    "is_schema",
    "json_string",
    "key_may_be_secret",
    "names_a_secret",
    "redact_json",
    "removes_value",
    "string_leaves",
    "token_is_credential",
]

_QUOTED_PLACEHOLDER = f'"{PLACEHOLDER}"'
_JSON_KEY = r"\"(?P<key>(?:[^\"\\]++|\\u[0-9A-Fa-f]{4})++)\"\s*:\s*"
# A JSON string's characters, possessively: no memory per character (``(?:[^"\\]|\\.)*`` took 114 bytes each).
_STRING_BODY = r"[^\"\\]*+(?:\\.[^\"\\]*+)*+"
_STRING_REST = _STRING_BODY + r"\""
JSON_ESCAPE = rb"\\[bfnrt]|\\."
# An object naming its sibling's value a secret: ``{"name": "MISTRAL_API_KEY", "value": ...}`` (Kubernetes,
# Vercel, ECS), ``{"Name": "/prod/db/password", "Value": ...}`` (SSM), compared ``folded``.
SIBLING_NAME_KEYS = frozenset("name key parametername parameterkey outputkey variable envvar id".split())
SIBLING_VALUE_KEYS = frozenset("value parametervalue outputvalue secretvalue".split())
# Each JSON string, a key when ``:`` follows it (the key's value starts at its end), and each bracket.
_TOKEN = r"\"(?P<string>" + _STRING_BODY + r")\"(?P<colon>\s*:\s*)?|[\"{\[}\]]"
_SIBLING_NAME = r"\"(?P<name>(?:[^\"\\]|\\.){1,200})\""
_SIBLING_VALUE = r"(?i)value_*\"\s*:"
SIBLING_VALUE_BYTES = rb'value_*\\*"'
# Azure Key Vault's get-secret answer: ``{"value": ..., "id": "https://<vault>.vault.azure.net/secrets/<name>/..."}``.
_KEY_VAULT_SECRET = r"(?i)https://[^/\s\"]+\.vault\.(?:azure\.net|azure\.cn|usgovcloudapi\.net)/secrets/"
# The keys a JSON-schema definition is made of, and those it has one of.
_SCHEMA_MARKERS = frozenset("type $ref anyOf oneOf allOf enum const properties items".split())
_SCHEMA_KEYWORDS = _SCHEMA_MARKERS | frozenset(
    """description required format default examples example title minimum maximum exclusiveMinimum exclusiveMaximum
    minLength maxLength pattern minItems maxItems uniqueItems additionalProperties not $defs definitions nullable
    propertyOrdering $schema $id $comment readOnly writeOnly deprecated multipleOf patternProperties prefixItems
    minProperties maxProperties contentEncoding contentMediaType strict""".split()
)


class Context(NamedTuple):
    """What a rule works with: ``found`` takes each value removed, to be learned; the redactor's ``redact_text``."""

    names: Names
    response: bool
    found: list[str]
    redact_text: Callable[[str, bool], str]


def folded(key: str) -> str:
    return key.lower().replace("_", "")


def json_string(literal_body: str) -> str | None:
    try:
        value = json.loads(f'"{literal_body}"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def is_schema(value: Any) -> bool:
    """A JSON-schema definition: an object made only of schema keywords, with a type or its like."""
    return isinstance(value, Mapping) and value.keys() <= _SCHEMA_KEYWORDS and not _SCHEMA_MARKERS.isdisjoint(value)


def string_leaves(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping | list | tuple):
        for item in value.values() if isinstance(value, Mapping) else value:
            yield from string_leaves(item)


def names_a_secret(names: Names, name: Any) -> bool:
    """Whether a sibling's ``name`` (``key``, ``id``...) names its ``value`` a secret."""
    if not isinstance(name, str) or len(name) >= 200:
        return False
    return names.is_secret(name, 1) or regex(_KEY_VAULT_SECRET).match(name) is not None


def token_is_credential(value: str) -> bool:
    """A bare ``token`` in a response is a text token of logprobs unless it looks like a credential, also one
    written ``user:secret``."""
    return looks_like_credential(value) or (":" in value and looks_like_credential(value.replace(":", "")))


def removes_value(names: Names, name: str, value: Any, response: bool) -> bool:
    """Whether a secret-named ``name`` loses ``value``: booleans, null and JSON-schema definitions are never
    secrets; a bare ``token`` in a response only when it is a credential (``token_is_credential``)."""
    if value is None or isinstance(value, bool) or is_schema(value) or not names.is_secret(name):
        return False
    if response and words_of(name) == ("token",):
        return isinstance(value, str) and token_is_credential(value)
    return True


class _ValueEnds:
    """Where the JSON values of one text end (exclusive; -1 for one that doesn't end in it). A bracketed value is
    walked bracket by bracket, and each walk keeps where every bracket it passed closes: a value starting at one of
    them is answered without walking again (a text of n objects that don't close is read once, not n times). A
    value starting inside what a walk read, out of step with it (inside one of its strings), is walked anew, at most
    ``_REWALKS`` times a text (only a crafted text does it at all); after that it counts as one that doesn't end,
    and its members are judged one by one."""

    _REWALKS = 8

    def __init__(self, text: str) -> None:
        self.text = text
        self.closes: dict[int, int] = {}
        self.reach = self.rewalks = 0

    def end(self, start: int) -> int:
        text = self.text
        if start >= len(text):
            return -1
        if text[start] == '"':
            match = regex(_STRING_REST).match(text, start + 1)
            return match.end() if match else -1
        if text[start] in "{[":
            return self._bracket_end(start)
        match = regex(r"-?[0-9][0-9.eE+-]*|true|false|null").match(text, start)
        return match.end() if match else -1

    def _bracket_end(self, start: int) -> int:
        if start in self.closes:
            return self.closes[start]
        if start < self.reach:
            if self.rewalks == self._REWALKS:
                return -1
            self.rewalks += 1
        self.reach = max(self.reach, _walk(self.text, start, self.closes))
        return self.closes[start]


def _walk(text: str, start: int, closes: dict[int, int]) -> int:
    """Reads from the bracket at ``start`` to its close, noting in ``closes`` where each bracket on the way closes
    (-1 for those that don't before the text or a string in it ends); returns where it stopped."""
    opened: list[int] = []
    for token in regex(_TOKEN).finditer(text, start):
        if token[0] == '"':  # a string that doesn't end
            closes.update(dict.fromkeys(opened, -1))
            return token.start()
        if token[0] in "{[":
            opened.append(token.start())
        elif token[0] in "}]":
            closes[opened.pop()] = token.end()
            if not opened:
                return token.end()
    closes.update(dict.fromkeys(opened, -1))
    return len(text)


def _sibling_named_values(names: Names, text: str) -> set[int]:
    """Where the ``value`` members' values start, in each object whose sibling names them secrets."""
    keys = list(_object_keys(text))
    named = {opening for opening, key in keys if _names_a_secret(names, text, key)}
    return {key.end() for opening, key in keys if opening in named and _folded_key(key) in SIBLING_VALUE_KEYS}


def _object_keys(text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """Each key in ``text`` with where the object directly holding it opens, in one pass; up to a string that
    doesn't end."""
    openings: list[int] = []
    for token in regex(_TOKEN).finditer(text):
        if token[0] == '"':
            return
        if token[0] in ("{", "["):
            openings.append(token.start())
        elif token[0] in ("}", "]"):
            del openings[-1:]
        elif token["colon"] is not None and openings and text[openings[-1]] == "{":
            yield openings[-1], token


def _folded_key(key: re.Match[str]) -> str:
    raw = key["string"]
    return folded(json_string(raw) or "" if "\\" in raw else raw)


def _names_a_secret(names: Names, text: str, key: re.Match[str]) -> bool:
    """Whether ``key`` is a sibling's name (``name``, ``ParameterName``...) whose string value names a secret."""
    if _folded_key(key) not in SIBLING_NAME_KEYS or not (value := regex(_SIBLING_NAME).match(text, key.end())):
        return False
    return names_a_secret(names, json_string(value["name"]))


def _json_value(raw: str) -> Any:
    """A JSON value's text decoded; as it is when it isn't valid, or a number."""
    if raw[0] == '"':
        value = json_string(raw[1:-1])
        return raw[1:-1] if value is None else value
    if raw[0] in "{[":
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):  # nested deeper than json reads: removed as its text
            return raw
    return {"true": True, "false": False, "null": None}.get(raw, raw)


def _removed_json_value(match: re.Match[str], ends: _ValueEnds, named: set[int], ctx: Context) -> int:
    """The end of the value after ``match`` (a key) when it goes (its strings added to found), else -1."""
    start, text = match.end(), ends.text
    if start not in named and not ctx.names.is_secret(match["key"]):
        return -1
    end = ends.end(start)
    if end < 0 or (raw := text[start:end]) == _QUOTED_PLACEHOLDER:
        return -1
    value = _json_value(raw)
    if start not in named:  # a secret-named key's value
        if not removes_value(ctx.names, match["key"], value, ctx.response):
            return -1
        ctx.found.extend(string_leaves(value))
    elif value is None or isinstance(value, bool):
        return -1
    else:
        ctx.found.append(value if isinstance(value, str) else raw)
    return end


def redact_json(text: str, ctx: Context) -> str:
    """The whole value of each secret-named key, and of each ``value`` a sibling names a secret, goes; also in JSON
    text held in a JSON string (a tool call's ``arguments``)."""
    if '\\"' in text:
        nested = regex(r"\"(?P<body>[\[{]" + _STRING_BODY + r")\"")
        text = nested.sub(lambda match: _redact_nested_json(match, ctx), text)
    pieces, position, ends = [], 0, _ValueEnds(text)
    named = _sibling_named_values(ctx.names, text) if regex(_SIBLING_VALUE).search(text) else set()
    for match in regex(_JSON_KEY).finditer(text):
        if match.start() >= position and (end := _removed_json_value(match, ends, named, ctx)) >= 0:
            pieces += [text[position : match.end()], _QUOTED_PLACEHOLDER]
            position = end
    return "".join(pieces) + text[position:] if pieces else text


def _redact_nested_json(match: re.Match[str], ctx: Context) -> str:
    inner = json_string(match["body"])
    if inner is None or '"' not in inner:
        return match.group()
    redacted = redact_json(inner, ctx)
    return match.group() if redacted == inner else json.dumps(redacted, ensure_ascii=match["body"].isascii())


def key_may_be_secret(names: Names, name: str) -> bool:
    """Whether a JSON key (as written) may be a secret name, once its escapes are decoded."""
    decoded = json_string(name) if "\\" in name else name
    return decoded is None or names.is_secret(decoded) or (decoded != name and names.is_secret(name))
