"""The text rules: each a small class with its ``name``, ``may_apply(scan)`` (whether it may change a text the
search scanned; never false when it would) and ``apply(text, ctx)``. ``RULES`` is the table the redactor runs,
in order, and the prefilter (``Redactor.could_redact``) asks: any rule that may apply."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple
from urllib.parse import unquote_plus

from ..format._format import PLACEHOLDER
from ._catalogue import catalogue_matches, looks_like_credential, may_hold_prefixed
from ._names import Names, words_of
from ._search import Scan

__all__ = ["RULES", "candidates", "Context", "Rule", "is_schema", "redact_shapes", "removes_value", "string_leaves"]

_QUOTED_PLACEHOLDER = f'"{PLACEHOLDER}"'
_JSON_KEY = re.compile(r"\"(?P<key>(?:[^\"\\]++|\\u[0-9A-Fa-f]{4})++)\"\s*:\s*")
_JSON_STRING_REST = re.compile(r"(?:[^\"\\]|\\.)*\"")
_JSON_SCALAR = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null")
_NESTED_JSON = re.compile(r"\"(?P<body>[\[{](?:[^\"\\]|\\.)*)\"")
_JSON_ESCAPE = re.compile(rb"\\[bfnrt]|\\.")
# An object naming its sibling's value a secret: ``{"name": "MISTRAL_API_KEY", "value": ...}`` (Kubernetes,
# Vercel, ECS), ``{"Name": "/prod/db/password", "Value": ...}`` (SSM), compared ``folded``.
SIBLING_NAME_KEYS = frozenset({"name", "key", "parametername", "parameterkey", "outputkey", "variable", "envvar"})
SIBLING_VALUE_KEYS = frozenset({"value", "parametervalue", "outputvalue", "secretvalue"})
_SIBLING_NAME = re.compile(
    r"\"(?:[Nn]ame|[Kk]ey|Parameter(?:Name|Key)|OutputKey|[Vv]ariable|env_?[Vv]ar)\"\s*:\s*\"(?P<name>(?:[^\"\\]|\\.){1,200})\""
)
_SIBLING_VALUE = re.compile(r"\"(?:[Vv]alue|ParameterValue|OutputValue|[Ss]ecret_?[Vv]alue)\"\s*:")
_SIBLING_VALUE_BYTES = re.compile(rb'value\\*"')
_TEXT_TYPES = r"text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript"
TEXT_MEDIA = re.compile(r"(?i:" + _TEXT_TYPES + r"|x-python)|[^;,]*\+(?:json|xml))")
_TEXT_DATA_URL_IN_TEXT = re.compile(
    r"(?P<head>data:(?i:" + _TEXT_TYPES + r"))[^,\s\"']*;base64,)(?P<payload>[A-Za-z0-9+/]{8,}={0,2})"
)
TEXT_DATA_URL = re.compile(r"data:(?i:" + _TEXT_TYPES + r"))[^,]*;base64,")
_TEXT_MEDIA_BYTES = re.compile(
    rb"text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript|x-python)|\+(?:json|xml)"
)
_QUERY = re.compile(r"(?P<sep>[?&;#])(?P<name>[A-Za-z0-9_.%\-]{1,64})=(?P<value>\[secret removed\]|[^&#\s\"'<>\\]+)")
# Every query or fragment parameter, also one inside another's value: a piece of the text may start there.
_PARAMETER = re.compile(rb"(?=[?&;#]([A-Za-z0-9_.%\-]{1,64})=[^&#\s\"'<>\\])")
_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s@:\[\]\"'?#]*)(?::(?P<password>[^/\s@\"']*))?@"
)
_SCHEMES = r"(?i:bearer|basic|token|digest|apikey|key)"  # ``Authorization: Bearer X``: X is the value
# A ``name: value`` or ``NAME=value`` line in free text (a real or a JSON-escaped line start, a quote).
_ASSIGNMENT = re.compile(
    r"(?:(?<![^\n\r\"'`])|(?<=\\n)|(?<=\\r)|(?<=\\t))[ \t]*(?:export[ \t]+|-[ \t]+)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{1,63})[ \t]*[:=][ \t]*[\"']?(?:" + _SCHEMES + r"[ \t]+)?"
    r"(?P<value>(?!\[secret removed\]|" + _SCHEMES + r"[ \t])[^\s\"'`\\,;]{4,})"
)
_ASSIGNMENT_TAIL = re.compile(rb"[a-z0-9_.\-]*[ \t]*[:=][ \t]*[\"']?[^\s\"'`\\,;]{4,}")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>\\]+")
_PATH_SEGMENT = re.compile(r"(?<=/)[^/?#]{8,}")
# XML: an element holding text (``<SecretAccessKey>``, SOAP's ``<wsse:Password>``), a start tag's attributes
# (``password="..."``, NuGet's ``<add key="ClearTextPassword" value="..."/>``).
_XML_ELEMENT = re.compile(
    r"<(?P<tag>(?:[A-Za-z_][\w.-]*:)?(?P<name>[A-Za-z_][\w.-]*))(?:\s[^<>]*)?>(?P<value>[^<]*)</(?P=tag)\s*>"
)
_XML_TAG = re.compile(r"<[A-Za-z_][\w:.-]*\s[^<>]*>")
_XML_ATTRIBUTE = re.compile(r"""(?P<name>[A-Za-z_][\w:.-]*)\s*=\s*(?P<q>["'])(?P<value>[^"'<>]*)(?P=q)""")
_XML_BYTES = re.compile(rb"</|/>|<[a-z_][\w:.-]*\s[^<>]*=")
# The keys a JSON-schema definition is made of: an object of these only, with a type or its like, keeps its
# contents even under a name like "password".
_SCHEMA_KEYWORDS = frozenset(
    {"type", "description", "properties", "items", "required", "enum", "const", "format", "default", "examples"}
    | {"example", "title", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength"}
    | {"pattern", "minItems", "maxItems", "uniqueItems", "additionalProperties", "anyOf", "oneOf", "allOf", "not"}
    | {"$ref", "$defs", "definitions", "nullable", "propertyOrdering", "$schema", "$id", "$comment", "readOnly"}
    | {"writeOnly", "deprecated", "multipleOf", "patternProperties", "prefixItems", "minProperties"}
    | {"maxProperties", "contentEncoding", "contentMediaType", "strict"}
)
_SCHEMA_MARKERS = frozenset({"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "properties", "items"})


class Context(NamedTuple):
    """What a rule works with: the secret names, whether the text is a response's, the list every removed
    value is appended to (to be learned), and the redactor's ``redact_text`` (for decoded payloads)."""

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
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(key in _SCHEMA_KEYWORDS for key in value)
        and any(key in _SCHEMA_MARKERS for key in value)
    )


def string_leaves(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping | list | tuple):
        for item in value.values() if isinstance(value, Mapping) else value:
            yield from string_leaves(item)


def removes_value(names: Names, name: str, value: Any, response: bool) -> bool:
    """Whether a secret-named ``name`` loses ``value``: booleans, null and JSON-schema definitions are never
    secrets; a bare ``token`` in a response is a text token of logprobs unless it looks like a credential."""
    if value is None or isinstance(value, bool) or is_schema(value) or not names.is_secret(name):
        return False
    if response and words_of(name) == ("token",):
        return isinstance(value, str) and looks_like_credential(value)
    return True


def assigns_secret(names: Names, name: str, value: str, response: bool) -> bool:
    """Whether ``name: value`` (an assignment, an XML element or attribute) holds a secret value."""
    if value.lower() in ("true", "false", "null", "none") or PLACEHOLDER in value:
        return False
    secret = names.is_secret(name, 1 if _ENV_NAME.fullmatch(name) else 0)
    if secret and response and words_of(name) == ("token",):
        return looks_like_credential(value)
    return secret


def redact_shapes(text: str, lowered: str | None, found: list[str], keywords: list[int] | None = None) -> str:
    """``text`` without the catalogue's credential shapes."""
    matches = catalogue_matches(text, lowered, keywords)
    if not matches:
        return text
    pieces, position = [], 0
    for start, end in sorted((start, end) for start, end, _ in matches):
        if end > position:
            start = max(start, position)
            found.append(text[start:end])
            pieces += [text[position:start], PLACEHOLDER]
            position = end
    return "".join(pieces) + text[position:]


def redact_base64_text(payload: str, ctx: Context) -> str:
    """A base64 payload of a text type, decoded, redacted and encoded again when it held a secret; as it came
    (redacted as text) when it isn't base64 of UTF-8 text."""
    try:
        text = base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return ctx.redact_text(payload, ctx.response)
    redacted = ctx.redact_text(text, ctx.response)
    if redacted == text:
        return ctx.redact_text(payload, ctx.response)
    return base64.b64encode(redacted.encode("utf-8")).decode("ascii")


# --- JSON text -----------------------------------------------------------------------------------------------


def _container_end(text: str, position: int) -> int:
    depth = 0
    while position < len(text):
        char = text[position]
        if char == '"':
            match = _JSON_STRING_REST.match(text, position + 1)
            if not match:
                return -1
            position = match.end()
            continue
        depth += 1 if char in "{[" else -1 if char in "}]" else 0
        if depth == 0 and char in "}]":
            return position + 1
        position += 1
    return -1


def json_value_end(text: str, start: int) -> int:
    """Where the JSON value starting at ``start`` ends (exclusive), or -1 when it doesn't end in ``text``."""
    if start >= len(text):
        return -1
    if text[start] == '"':
        match = _JSON_STRING_REST.match(text, start + 1)
        return match.end() if match else -1
    if text[start] in "{[":
        return _container_end(text, start)
    match = _JSON_SCALAR.match(text, start)
    return match.end() if match else -1


def _marks(text: str, opening: int, closing: int) -> list[tuple[int, int]]:
    """(position, depth) of every bracket between ``opening`` and ``closing``, strings skipped."""
    marks: list[tuple[int, int]] = []
    depth, index = 0, opening
    while index < closing:
        char = text[index]
        if char == '"':
            rest = _JSON_STRING_REST.match(text, index + 1)
            if rest is None:
                break
            index = rest.end()
            continue
        if char in "{[}]":
            depth += 1 if char in "{[" else -1
            marks.append((index, depth))
        index += 1
    return marks


def _enclosing_object(text: str, position: int) -> tuple[int, int] | None:
    """The ``{`` and the end (after its ``}``) of the innermost JSON object holding ``position``."""
    stack: list[int] = []
    for index, _ in _marks(text, 0, len(text)):
        if text[index] == "{":
            stack.append(index)
        elif text[index] == "}" and stack:
            opening = stack.pop()
            if opening < position < index:
                return opening, index + 1
    return None


def _sibling_named_values(names: Names, text: str) -> set[int]:
    """Where the values start (in JSON ``text``) that a sibling names as secrets."""
    starts: set[int] = set()
    for match in _SIBLING_NAME.finditer(text):
        name = json_string(match["name"])
        bounds = None if name is None or not names.is_secret(name, 1) else _enclosing_object(text, match.start())
        if bounds is None:
            continue
        marks = _marks(text, *bounds)
        for key in _JSON_KEY.finditer(text, *bounds):
            depth = next((depth for mark, depth in reversed(marks) if mark < key.start()), 0)
            if depth == 1 and folded(json_string(key["key"]) or "") in SIBLING_VALUE_KEYS:
                starts.add(key.end())
    return starts


def _json_value(raw: str) -> Any:
    if raw[0] == '"':
        value = json_string(raw[1:-1])
        return raw[1:-1] if value is None else value
    if raw[0] in "{[":
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return {"true": True, "false": False, "null": None}.get(raw, raw)


def _removed_json_value(match: re.Match[str], text: str, named: set[int], ctx: Context) -> int:
    """The end of the value after ``match`` (a key) when it goes (its leaves appended to found), else -1."""
    start = match.end()
    if start not in named and not ctx.names.is_secret(match["key"]):
        return -1
    end = json_value_end(text, start)
    raw = text[start:end]
    if end < 0 or raw == _QUOTED_PLACEHOLDER:
        return -1
    if start in named:
        if raw in ("true", "false", "null"):
            return -1
        ctx.found.append((json_string(raw[1:-1]) or raw[1:-1]) if raw[0] == '"' else raw)
        return end
    value = _json_value(raw)
    if not removes_value(ctx.names, match["key"], value, ctx.response):
        return -1
    ctx.found.extend(string_leaves(value))
    return end


def _redact_json_values(text: str, ctx: Context) -> str:
    """The whole value of every secret-named key, and of a ``value`` a sibling names a secret."""
    pieces, position = [], 0
    named = _sibling_named_values(ctx.names, text) if _SIBLING_VALUE.search(text) else set()
    for match in _JSON_KEY.finditer(text):
        if match.start() >= position and (end := _removed_json_value(match, text, named, ctx)) >= 0:
            pieces += [text[position : match.end()], _QUOTED_PLACEHOLDER]
            position = end
    return "".join(pieces) + text[position:] if pieces else text


def _redact_json(text: str, ctx: Context) -> str:
    if '\\"' in text:
        text = _NESTED_JSON.sub(lambda match: _redact_nested_json(match, ctx), text)
    return _redact_json_values(text, ctx)


def _redact_nested_json(match: re.Match[str], ctx: Context) -> str:
    """A JSON string holding JSON text (a tool call's ``arguments``): its secret-named values go too."""
    inner = json_string(match["body"])
    if inner is None or '"' not in inner:
        return match.group()
    redacted = _redact_json(inner, ctx)
    return match.group() if redacted == inner else json.dumps(redacted, ensure_ascii=match["body"].isascii())


def key_may_be_secret(names: Names, name: str) -> bool:
    """Whether a JSON key (as written) may be a secret name, once its escapes are decoded."""
    if "\\" in name:
        decoded = json_string(name)
        return decoded is None or names.is_secret(decoded) or names.is_secret(name)
    return names.is_secret(name)


# --- the rules -----------------------------------------------------------------------------------------------


class Rule:
    """``marks``: characters one of which is in every text the rule may change (none: any text)."""

    name = ""
    marks = b""

    def may_apply(self, scan: Scan, names: Names) -> bool:
        raise NotImplementedError

    def apply(self, text: str, ctx: Context) -> str:
        raise NotImplementedError


class JsonNames(Rule):
    """Secret-named JSON keys lose their whole value (but booleans, null and schemas), also in JSON inside a
    JSON string; so does a ``value`` whose sibling names a secret."""

    name = "json names"
    marks = b'"'

    def may_apply(self, scan: Scan, names: Names) -> bool:
        data, words = scan.data, scan.words
        if not words or b'"' not in data:
            return False
        if b"value" in data and _SIBLING_VALUE_BYTES.search(data):
            return True
        named = lambda key: key_may_be_secret(names, key)  # noqa: E731
        if scan.may_hold_secret_key(named, words):
            return True
        if not scan.prefilter or b"\\" not in data:
            return False
        # Read as JSON, whose ``\n``, ``\t``... are separators there (each read as two spaces).
        view = _JSON_ESCAPE.sub(lambda m: b"  " if m[0][1:] in b"bfnrt" else m[0], scan.raw or b"").lower()
        again = scan.search.scan_bytes(view, view)
        return again.may_hold_secret_key(named, again.words)

    def apply(self, text: str, ctx: Context) -> str:
        return _redact_json(text, ctx)


class Assignment(Rule):
    """A ``name: value`` or ``NAME=value`` line of free text whose name is a secret's: the value goes."""

    name = "assignments"
    marks = b":="

    def may_apply(self, scan: Scan, names: Names) -> bool:
        data = scan.data
        if not scan.words or (b":" not in data and b"=" not in data):
            return False
        return any(_ASSIGNMENT_TAIL.match(data, end) for _, end in scan.words)

    def apply(self, text: str, ctx: Context) -> str:
        def replace(match: re.Match[str]) -> str:
            if not assigns_secret(ctx.names, match["name"], match["value"], ctx.response):
                return match.group()
            ctx.found.append(match["value"])
            return match.group()[: match.start("value") - match.start()] + PLACEHOLDER

        return _ASSIGNMENT.sub(replace, text)


class Query(Rule):
    """A secret-named query, fragment or form parameter after its ``?``, ``&``, ``;`` or ``#``."""

    name = "query values"
    marks = b"="

    def may_apply(self, scan: Scan, names: Names) -> bool:
        if b"=" not in scan.data:
            return False
        if scan.raw is None:
            return True
        return any(names.is_secret(match[1].decode("ascii"), 2) for match in _PARAMETER.finditer(scan.raw))

    def apply(self, text: str, ctx: Context) -> str:
        def replace(match: re.Match[str]) -> str:
            value = match["value"]
            if value == PLACEHOLDER or not ctx.names.is_secret(match["name"], 2):
                return match.group(0)
            ctx.found.extend([value, unquote_plus(value)])
            return f"{match['sep']}{match['name']}={PLACEHOLDER}"

        return _QUERY.sub(replace, text)


class DataUrl(Rule):
    """A data URL of a text type: its base64 payload decoded and redacted. (For the prefilter, also a
    ``data`` member beside a text media type, which ``redact_value`` decodes.)"""

    name = "data urls"
    marks = b"/+"

    def may_apply(self, scan: Scan, names: Names) -> bool:
        data = scan.data
        if scan.raw is not None:
            return scan.prefixed() and _TEXT_MEDIA_BYTES.search(data) is not None
        return b"base64," in data and b"data:" in data and _TEXT_MEDIA_BYTES.search(data) is not None

    def apply(self, text: str, ctx: Context) -> str:
        return _TEXT_DATA_URL_IN_TEXT.sub(lambda m: m["head"] + redact_base64_text(m["payload"], ctx), text)


class Xml(Rule):
    """XML's secret-named elements and attributes lose their text (an attribute named by its sibling ``key``
    or ``name``, too); the markup stays."""

    name = "xml"
    marks = b"<"

    def may_apply(self, scan: Scan, names: Names) -> bool:
        return bool(scan.words) and b"<" in scan.data and _XML_BYTES.search(scan.data) is not None

    def apply(self, text: str, ctx: Context) -> str:
        if "</" in text:
            text = _XML_ELEMENT.sub(lambda match: _xml_element(match, ctx), text)
        return _XML_TAG.sub(lambda match: _xml_tag(match, ctx), text) if "=" in text else text


def _xml_element(match: re.Match[str], ctx: Context) -> str:
    value = match["value"].strip()
    if not value or not assigns_secret(ctx.names, match["name"], value, ctx.response):
        return match.group()
    ctx.found.append(value)
    start, end = match.start("value") - match.start(), match.end("value") - match.start()
    return match.group()[:start] + PLACEHOLDER + match.group()[end:]


def _xml_tag(match: re.Match[str], ctx: Context) -> str:
    attributes = list(_XML_ATTRIBUTE.finditer(match.group()))
    named = any(a["name"].lower() in ("key", "name") and ctx.names.is_secret(a["value"]) for a in attributes)
    pieces, position = [], 0
    for attribute in attributes:
        value, name = attribute["value"], attribute["name"].rpartition(":")[2]
        secret = (named and name.lower() == "value") or assigns_secret(ctx.names, name, value, ctx.response)
        if value and secret:
            ctx.found.append(value)
            pieces += [match.group()[position : attribute.start("value")], PLACEHOLDER]
            position = attribute.end("value")
    return "".join(pieces) + match.group()[position:] if pieces else match.group()


class Userinfo(Rule):
    """``scheme://user:password@``, and ``scheme://TOKEN@`` when the user is a credential."""

    name = "userinfo"
    marks = b"@"

    def may_apply(self, scan: Scan, names: Names) -> bool:
        return b"@" in scan.data and b"://" in scan.data

    def apply(self, text: str, ctx: Context) -> str:
        def replace(match: re.Match[str]) -> str:
            user, password = match["user"], match["password"]
            if not (user or password) or (password is None and not _credential_like(user)):
                return match.group()
            ctx.found.extend([user, password] if password else [user])
            return match["scheme"] + PLACEHOLDER + "@"

        return _USERINFO.sub(replace, text)


def _credential_like(user: str) -> bool:
    return looks_like_credential(user) or bool(catalogue_matches(user))


class UrlPath(Rule):
    """Path segments of a URL that are credentials by shape: ``/v1/keys/sk-.../``, bot tokens."""

    name = "url paths"
    marks = b"/"

    def may_apply(self, scan: Scan, names: Names) -> bool:
        return b"://" in scan.data and (not scan.prefilter or _Shapes.may_apply(scan, names))

    def apply(self, text: str, ctx: Context) -> str:
        return _URL.sub(lambda match: _redact_url_path(match.group(), ctx.found), text)


def _redact_url_path(url: str, found: list[str]) -> str:
    authority_end = url.find("/", url.find("://") + 3)
    if authority_end < 0:
        return url
    head, path = url[:authority_end], url[authority_end:]
    return head + _PATH_SEGMENT.sub(lambda match: redact_shapes(match.group(), None, found), path)


class Shapes(Rule):
    """The catalogue's credential shapes (``_catalogue``). The redactor runs it last, with the keywords the
    search found; it searches its prefixes itself, so only the prefilter's scan, which has them, can say no."""

    name = "shapes"

    def may_apply(self, scan: Scan, names: Names) -> bool:
        if scan.raw is None:
            return True
        return bool(scan.keywords()) or (scan.prefixed() and may_hold_prefixed(scan.raw or b""))

    def apply(self, text: str, ctx: Context) -> str:
        return redact_shapes(text, None, ctx.found)


_Shapes = Shapes()
# In the order the redactor runs them (``Shapes`` last: it reads the text the others left).
RULES: tuple[Rule, ...] = (JsonNames(), Assignment(), Query(), DataUrl(), Xml(), Userinfo(), UrlPath(), _Shapes)


# Characters too common in JSON to be worth looking for: taken as present in every text.
_COMMON_MARKS = frozenset(b'":')
_RARE_MARKS = frozenset(c for rule in RULES for c in rule.marks) - _COMMON_MARKS
_ALL_BUT_RARE = bytes(c for c in range(256) if c not in _RARE_MARKS)
_CANDIDATES: dict[bytes, tuple[Rule, ...]] = {}


def candidates(data: bytes) -> tuple[Rule, ...]:
    """The rules (in order) whose marks are in ``data`` (a text's lower-cased UTF-8): the only ones that may
    apply to it, the only ones whose ``may_apply`` is asked."""
    present = data.translate(None, _ALL_BUT_RARE)
    if len(present) > 1:
        present = bytes(sorted(set(present)))
    found = _CANDIDATES.get(present)
    if found is None:
        marks = _COMMON_MARKS.union(present)
        found = _CANDIDATES[present] = tuple(rule for rule in RULES if not rule.marks or marks.intersection(rule.marks))
    return found
