"""The text rules, a row each in ``RULES`` (in the order the redactor runs them): a ``name``, ``may_apply(scan,
names)`` (whether it may change a text the search scanned; never false when it would) and ``apply(text, ctx)``.
The prefilter (``Redactor.could_redact``) asks whether any rule may apply."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from typing import NamedTuple
from urllib.parse import unquote_plus

from ..format._format import PLACEHOLDER
from ._catalogue import catalogue_matches, glued_matches, looks_like_credential, may_hold_prefixed
from ._encodings import decoded_tokens
from ._json import JSON_ESCAPE, SIBLING_VALUE_BYTES, Context, key_may_be_secret, redact_json, token_is_credential
from ._names import Names, words_of
from ._patterns import regex
from ._search import Scan

__all__ = [
    "RULES",
    "Rule",
    "TEXT_DATA_URL",
    "TEXT_MEDIA",
    "candidates",
    "is_reference",
    "redact_base64_text",
    "redact_shapes",
]

_TEXT_TYPES = r"text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript"
TEXT_MEDIA = r"(?i:" + _TEXT_TYPES + r"|x-python)|[^;,]*\+(?:json|xml))"
TEXT_DATA_URL = r"data:(?i:" + _TEXT_TYPES + r"))[^,]*;base64,"
_SCHEMES = r"(?i:bearer|basic|token|digest|apikey|key)"  # ``Authorization: Bearer X``: X is the value
# A ``name: value`` or ``NAME=value`` line in free text (a real or a JSON-escaped line start, a quote).
_ASSIGNMENT = (
    r"(?:(?<![^\n\r\"'`])|(?<=\\n)|(?<=\\r)|(?<=\\t))[ \t]*(?:export[ \t]+|-[ \t]+)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{1,63})[ \t]*[:=][ \t]*[\"']?(?:" + _SCHEMES + r"[ \t]+)?"
    r"(?P<value>(?!\[secret removed\]|" + _SCHEMES + r"[ \t])[^\s\"'`\\,;]{4,})"
)
_SLACK_WEBHOOK = (
    r"(?i:hooks\.slack\.com)/(?:services|workflows|triggers)/(?:[A-Za-z0-9]{1,40}/){1,3}(?P<value>[A-Za-z0-9]{16,64})"
    r"(?![A-Za-z0-9])"
)
# A value that names where the secret is, not the secret: a call (``os.environ.get(``, ``getenv(``), an
# environment variable (``$API_KEY``, ``${API_KEY}``, ``process.env.API_KEY``).
_REFERENCE = r"[A-Za-z_][\w.]*\(|\$\{?[A-Za-z_]|process\.env\.|os\.environ\b"


def is_reference(value: str) -> bool:
    return regex(_REFERENCE).match(value) is not None


def assigns_secret(names: Names, name: str, value: str, response: bool) -> bool:
    """Whether ``name: value`` (an assignment, an XML element or attribute) holds a secret value."""
    if value.lower() in ("true", "false", "null", "none") or PLACEHOLDER in value or is_reference(value):
        return False
    secret = names.is_secret(name, 1 if regex(r"[A-Z][A-Z0-9_]*").fullmatch(name) else 0)
    if secret and response and words_of(name) == ("token",):
        return token_is_credential(value)
    return secret


def _assigns_secret(match: re.Match[str], ctx: Context) -> bool:
    return assigns_secret(ctx.names, match["name"], match["value"], ctx.response)


def _any(match: re.Match[str], ctx: Context) -> bool:
    return True


def _blanked(text: str, spans: Iterable[tuple[int, int]], found: list[str]) -> str:
    """``text`` with each span (overlaps merged) replaced by the placeholder, and its text found; ``text``
    itself when there is none."""
    pieces, position = [], 0
    for start, end in sorted(spans):
        if end > position:
            start = max(start, position)
            found.append(text[start:end])
            pieces += [text[position:start], PLACEHOLDER]
            position = end
    return "".join(pieces) + text[position:] if pieces else text


def _blanking(pattern: str, secret: Callable[[re.Match[str], Context], bool]) -> Callable[[str, Context], str]:
    """An ``apply`` that removes the group ``value`` (the end of each match of ``pattern``) where ``secret``."""

    def apply(text: str, ctx: Context) -> str:
        def replace(match: re.Match[str]) -> str:
            if not secret(match, ctx):
                return match.group()
            ctx.found.append(match["value"])
            return match.group()[: match.start("value") - match.start()] + PLACEHOLDER

        return regex(pattern).sub(replace, text)

    return apply


def redact_shapes(text: str, lowered: str | None, found: list[str], keywords: list[int] | None = None) -> str:
    """``text`` without the catalogue's credential shapes."""
    return _blanked(text, [(start, end) for start, end, _ in catalogue_matches(text, lowered, keywords)], found)


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


# --- the rules' may_apply and apply, where they are more than a line -----------------------------------------


def _json_may_apply(scan: Scan, names: Names) -> bool:
    data, words = scan.data, scan.words
    if not words or b'"' not in data:
        return False
    if b"value" in data and regex(SIBLING_VALUE_BYTES).search(data):
        return True
    named = lambda key: key_may_be_secret(names, key)  # noqa: E731
    if scan.may_hold_secret_key(named, words):
        return True
    if not scan.prefilter or b"\\" not in data:
        return False
    # Read as JSON, whose ``\n``, ``\t``... are separators there (each read as two spaces).
    view = regex(JSON_ESCAPE).sub(lambda m: b"  " if m[0][1:] in b"bfnrt" else m[0], scan.raw or b"").lower()
    again = scan.search.scan_bytes(view, view)
    return again.may_hold_secret_key(named, again.words)


def _assignment_may_apply(scan: Scan, names: Names) -> bool:
    if not scan.words or (b":" not in scan.data and b"=" not in scan.data):
        return False
    tail = regex(rb"[a-z0-9_.\-]*[ \t]*[:=][ \t]*[\"']?[^\s\"'`\\,;]{4,}")
    return any(tail.match(scan.data, end) for _, end in scan.words)


def _query_may_apply(scan: Scan, names: Names) -> bool:
    if b"=" not in scan.data or scan.raw is None:  # the redactor's scan: any "=" may start one
        return b"=" in scan.data
    # Every query or fragment parameter, also one inside another's value: a piece of the text may start there.
    parameters = regex(rb"(?=[?&;#]([A-Za-z0-9_.%\-]{1,64})=[^&#\s\"'<>\\])").finditer(scan.raw)
    return any(names.is_secret(match[1].decode("ascii"), 2) for match in parameters)


def _query(text: str, ctx: Context) -> str:
    def replace(match: re.Match[str]) -> str:
        value = match["value"]
        if value == PLACEHOLDER or not ctx.names.is_secret(match["name"], 2):
            return match.group(0)
        ctx.found.extend([value, unquote_plus(value)])
        return f"{match['sep']}{match['name']}={PLACEHOLDER}"

    query = r"(?P<sep>[?&;#])(?P<name>[A-Za-z0-9_.%\-]{1,64})=(?P<value>\[secret removed\]|[^&#\s\"'<>\\]+)"
    return regex(query).sub(replace, text)


def _data_url_may_apply(scan: Scan, names: Names) -> bool:
    """A data URL (or, for the prefilter, a ``data`` member beside a text media type, which ``redact_value``
    decodes)."""
    media = rb"text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript|x-python)|\+(?:json|xml)"
    if scan.raw is not None:
        return scan.prefixed() and regex(media).search(scan.data) is not None
    return b"base64," in scan.data and b"data:" in scan.data and regex(media).search(scan.data) is not None


def _data_url(text: str, ctx: Context) -> str:
    in_text = r"(?P<head>data:(?i:" + _TEXT_TYPES + r"))[^,\s\"']*;base64,)(?P<payload>[A-Za-z0-9+/]{8,}={0,2})"
    return regex(in_text).sub(lambda m: m["head"] + redact_base64_text(m["payload"], ctx), text)


def _xml_may_apply(scan: Scan, names: Names) -> bool:
    return (
        bool(scan.words)
        and b"<" in scan.data
        and regex(rb"</|/>|<[a-z_][\w:.-]*\s[^<>]*=").search(scan.data) is not None
    )


def _xml(text: str, ctx: Context) -> str:
    """Secret-named elements and attributes lose their text (``<SecretAccessKey>``, SOAP's ``<wsse:Password>``,
    ``password="..."``), and so does a ``value`` attribute beside a ``key`` or ``name`` that names a secret
    (NuGet's ``<add key="ClearTextPassword" value="..."/>``); the markup stays."""
    if "</" in text:
        element = (
            r"<(?P<tag>(?:[A-Za-z_][\w.-]*:)?(?P<name>[A-Za-z_][\w.-]*))(?:\s[^<>]*)?>(?P<value>[^<]*)</(?P=tag)\s*>"
        )
        text = regex(element).sub(lambda match: _xml_element(match, ctx), text)
    return regex(r"<[A-Za-z_][\w:.-]*\s[^<>]*>").sub(lambda match: _xml_tag(match, ctx), text) if "=" in text else text


def _xml_element(match: re.Match[str], ctx: Context) -> str:
    value = match["value"].strip()
    if not value or not assigns_secret(ctx.names, match["name"], value, ctx.response):
        return match.group()
    ctx.found.append(value)
    start, end = match.start("value") - match.start(), match.end("value") - match.start()
    return match.group()[:start] + PLACEHOLDER + match.group()[end:]


def _xml_tag(match: re.Match[str], ctx: Context) -> str:
    tag = match.group()
    attributes = list(
        regex(r"""(?P<name>[A-Za-z_][\w:.-]*)\s*=\s*(?P<q>["'])(?P<value>[^"'<>]*)(?P=q)""").finditer(tag)
    )
    named = any(a["name"].lower() in ("key", "name") and ctx.names.is_secret(a["value"]) for a in attributes)
    spans = []
    for attribute in attributes:
        value, name = attribute["value"], attribute["name"].rpartition(":")[2]
        if value and ((named and name.lower() == "value") or assigns_secret(ctx.names, name, value, ctx.response)):
            spans.append(attribute.span("value"))
    return _blanked(tag, spans, ctx.found)


def _userinfo(text: str, ctx: Context) -> str:
    """``scheme://user:password@``, and ``scheme://TOKEN@`` when the user is a credential."""

    def replace(match: re.Match[str]) -> str:
        user, password = match["user"], match["password"]
        credential = looks_like_credential(user) or bool(catalogue_matches(user))
        if not (user or password) or (password is None and not credential):
            return match.group()
        ctx.found.extend([user, password] if password else [user])
        return match["scheme"] + PLACEHOLDER + "@"

    userinfo = r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s@:\[\]\"'?#]*)(?::(?P<password>[^/\s@\"']*))?@"
    return regex(userinfo).sub(replace, text)


def _url_paths(text: str, ctx: Context) -> str:
    """Path segments of a URL that are credentials by shape: ``/v1/keys/sk-.../``, bot tokens."""

    def url_path(url: str) -> str:
        authority_end = url.find("/", url.find("://") + 3)
        if authority_end < 0:
            return url
        path = regex(r"(?<=/)[^/?#]{8,}").sub(lambda m: redact_shapes(m.group(), None, ctx.found), url[authority_end:])
        return url[:authority_end] + path

    return regex(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>\\]+").sub(lambda match: url_path(match.group()), text)


def _shapes_may_apply(scan: Scan, names: Names) -> bool:
    """The catalogue searches its prefixes itself: only the prefilter's scan, which has them, can say no."""
    if scan.raw is None:
        return True
    return bool(scan.keywords()) or (scan.prefixed() and may_hold_prefixed(scan.raw or b""))


def _encoded(text: str, ctx: Context) -> str:
    """A key written in hex, HTML numeric entities, ``\\xNN`` escapes, double percent-encoding or a base64 run
    in prose (``_encodings``): a token whose decoding holds a secret goes whole."""
    spans = [
        (start, end)
        for start, end, decoded in decoded_tokens(text)
        if ctx.redact_text(decoded, ctx.response) != decoded
    ]
    return _blanked(text, spans, ctx.found)


class Rule(NamedTuple):
    """A text rule. ``marks``: characters one of which is in every text it may change (none: any text).
    ``probed``: ``may_apply`` is False for a prefilter's scan whose search found no probe (``candidates``
    leaves it out there, unasked)."""

    name: str
    marks: bytes
    probed: bool
    may_apply: Callable[[Scan, Names], bool]
    apply: Callable[[str, Context], str]


_SHAPES = Rule("shapes", b"", True, _shapes_may_apply, lambda text, ctx: redact_shapes(text, None, ctx.found))
RULES: tuple[Rule, ...] = (
    # Secret-named JSON keys lose their whole value (but booleans, null and schemas), also in JSON inside a
    # JSON string; so does a ``value`` whose sibling names a secret.
    Rule("json names", b'"', True, _json_may_apply, redact_json),
    # A ``name: value`` or ``NAME=value`` line of free text whose name is a secret's: the value goes.
    Rule("assignments", b":=", True, _assignment_may_apply, _blanking(_ASSIGNMENT, _assigns_secret)),
    # A secret-named query, fragment or form parameter after its ``?``, ``&``, ``;`` or ``#``.
    Rule("query values", b"=", False, _query_may_apply, _query),
    # A data URL of a text type: its base64 payload decoded and redacted.
    Rule("data urls", b"/+", True, _data_url_may_apply, _data_url),
    Rule("xml", b"<", True, _xml_may_apply, _xml),
    Rule("userinfo", b"@", False, lambda scan, _: b"@" in scan.data and b"://" in scan.data, _userinfo),
    Rule(
        "url paths", b"/", True, lambda scan, names: b"://" in scan.data and _shapes_may_apply(scan, names), _url_paths
    ),
    # Long prefixed shapes glued to the word before them (``_catalogue.glued_matches``).
    Rule(
        "glued shapes",
        b".-/",
        True,
        lambda scan, _: scan.glued(),
        lambda t, ctx: _blanked(t, glued_matches(t), ctx.found),
    ),
    # A Slack webhook URL keeps its workspace and channel ids and loses its secret, the last path segment
    # (``hooks.slack.com/services/T.../B.../[secret removed]``): the URL stays one, and a replay with another
    # webhook's secret matches it (the live URL is redacted the same way before it is compared).
    Rule(
        "slack webhooks", b"/", False, lambda scan, _: b"hooks.slack.com/" in scan.data, _blanking(_SLACK_WEBHOOK, _any)
    ),
    Rule("encoded", b"", True, lambda scan, _: bool(scan.hits) and scan.encoded(), _encoded),  # most: no hit
    # The catalogue's credential shapes (``_catalogue``), last: the redactor runs it with the keywords found.
    _SHAPES,
)


# Characters too common in JSON to be worth looking for: taken as present in every text.
_COMMON_MARKS = frozenset(b'":')
_RARE_MARKS = tuple(sorted(frozenset(c for rule in RULES for c in rule.marks) - _COMMON_MARKS))
_UNPROBED_MARKS = tuple(sorted(frozenset(c for rule in RULES if not rule.probed for c in rule.marks) - _COMMON_MARKS))
_CANDIDATES: dict[tuple[bytes, bool], tuple[Rule, ...]] = {}


def candidates(data: bytes, probe_found: bool = True) -> tuple[Rule, ...]:
    """The rules (in order) whose marks are in ``data`` (a text's lower-cased UTF-8): the only ones that may
    apply to it; without ``probe_found`` (a prefilter's search found nothing), only those not ``probed``. (A
    memchr for each mark, asked by its byte value: a long body is not walked byte by byte.)"""
    marks = _RARE_MARKS if probe_found else _UNPROBED_MARKS
    key = (bytes([mark for mark in marks if mark in data]), probe_found)
    found = _CANDIDATES.get(key)
    if found is None:
        present = _COMMON_MARKS.union(key[0])
        found = _CANDIDATES[key] = tuple(
            rule
            for rule in RULES
            if (probe_found or not rule.probed) and (not rule.marks or present.intersection(rule.marks))
        )
    return found
