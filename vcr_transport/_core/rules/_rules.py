"""The text rules: each a small class with its ``name``, ``may_apply(scan)`` (whether it may change a text the
search scanned; never false when it would) and ``apply(text, ctx)``. ``RULES`` is the table the redactor runs,
in order, and the prefilter (``Redactor.could_redact``) asks: any rule that may apply."""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import unquote_plus

from .._memo import lazy_pattern
from ..format._format import PLACEHOLDER
from ._catalogue import catalogue_matches, glued_matches, looks_like_credential, may_hold_prefixed
from ._encodings import decoded_tokens
from ._json import JSON_ESCAPE, SIBLING_VALUE_BYTES, Context, key_may_be_secret, redact_json, token_is_credential
from ._names import Names, words_of
from ._patterns import regex
from ._search import Scan

__all__ = [
    "RULES",
    "JsonNames",
    "TEXT_DATA_URL",
    "TEXT_MEDIA",
    "Rule",
    "candidates",
    "is_reference",
    "redact_base64_text",
    "redact_shapes",
]

_TEXT_TYPES = r"text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript"
TEXT_MEDIA = lazy_pattern(r"(?i:" + _TEXT_TYPES + r"|x-python)|[^;,]*\+(?:json|xml))")
_TEXT_DATA_URL_IN_TEXT = lazy_pattern(
    r"(?P<head>data:(?i:" + _TEXT_TYPES + r"))[^,\s\"']*;base64,)(?P<payload>[A-Za-z0-9+/]{8,}={0,2})"
)
TEXT_DATA_URL = lazy_pattern(r"data:(?i:" + _TEXT_TYPES + r"))[^,]*;base64,")
_TEXT_MEDIA_BYTES = lazy_pattern(
    rb"text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript|x-python)|\+(?:json|xml)"
)
_QUERY = lazy_pattern(r"(?P<sep>[?&;#])(?P<name>[A-Za-z0-9_.%\-]{1,64})=(?P<value>\[secret removed\]|[^&#\s\"'<>\\]+)")
# Every query or fragment parameter, also one inside another's value: a piece of the text may start there.
_PARAMETER = lazy_pattern(rb"(?=[?&;#]([A-Za-z0-9_.%\-]{1,64})=[^&#\s\"'<>\\])")
_USERINFO = lazy_pattern(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s@:\[\]\"'?#]*)(?::(?P<password>[^/\s@\"']*))?@"
)
_SCHEMES = r"(?i:bearer|basic|token|digest|apikey|key)"  # ``Authorization: Bearer X``: X is the value
# A ``name: value`` or ``NAME=value`` line in free text (a real or a JSON-escaped line start, a quote).
_ASSIGNMENT = lazy_pattern(
    r"(?:(?<![^\n\r\"'`])|(?<=\\n)|(?<=\\r)|(?<=\\t))[ \t]*(?:export[ \t]+|-[ \t]+)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{1,63})[ \t]*[:=][ \t]*[\"']?(?:" + _SCHEMES + r"[ \t]+)?"
    r"(?P<value>(?!\[secret removed\]|" + _SCHEMES + r"[ \t])[^\s\"'`\\,;]{4,})"
)
_ASSIGNMENT_TAIL = lazy_pattern(rb"[a-z0-9_.\-]*[ \t]*[:=][ \t]*[\"']?[^\s\"'`\\,;]{4,}")
_ENV_NAME = lazy_pattern(r"[A-Z][A-Z0-9_]*")
_URL = lazy_pattern(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>\\]+")
_PATH_SEGMENT = lazy_pattern(r"(?<=/)[^/?#]{8,}")
# XML: an element holding text (``<SecretAccessKey>``, SOAP's ``<wsse:Password>``), a start tag's attributes
# (``password="..."``, NuGet's ``<add key="ClearTextPassword" value="..."/>``).
_XML_ELEMENT = lazy_pattern(
    r"<(?P<tag>(?:[A-Za-z_][\w.-]*:)?(?P<name>[A-Za-z_][\w.-]*))(?:\s[^<>]*)?>(?P<value>[^<]*)</(?P=tag)\s*>"
)
_XML_TAG = lazy_pattern(r"<[A-Za-z_][\w:.-]*\s[^<>]*>")
_XML_ATTRIBUTE = lazy_pattern(r"""(?P<name>[A-Za-z_][\w:.-]*)\s*=\s*(?P<q>["'])(?P<value>[^"'<>]*)(?P=q)""")
_XML_BYTES = lazy_pattern(rb"</|/>|<[a-z_][\w:.-]*\s[^<>]*=")


def assigns_secret(names: Names, name: str, value: str, response: bool) -> bool:
    """Whether ``name: value`` (an assignment, an XML element or attribute) holds a secret value."""
    if value.lower() in ("true", "false", "null", "none") or PLACEHOLDER in value or is_reference(value):
        return False
    secret = names.is_secret(name, 1 if _ENV_NAME.fullmatch(name) else 0)
    if secret and response and words_of(name) == ("token",):
        return token_is_credential(value)
    return secret


# A value that names where the secret is, not the secret: a call (``os.environ.get(``, ``getenv(``), an
# environment variable (``$API_KEY``, ``${API_KEY}``, ``process.env.API_KEY``).
_REFERENCE = lazy_pattern(r"[A-Za-z_][\w.]*\(|\$\{?[A-Za-z_]|process\.env\.|os\.environ\b")


def is_reference(value: str) -> bool:
    return _REFERENCE.match(value) is not None


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


# --- the rules -----------------------------------------------------------------------------------------------


class Rule:
    """``marks``: characters one of which is in every text the rule may change (none: any text). ``probed``:
    its ``may_apply`` is False for a prefilter's scan whose search found no probe (``candidates`` leaves it
    out there, unasked)."""

    name = ""
    marks = b""
    probed = False

    def may_apply(self, scan: Scan, names: Names) -> bool:
        raise NotImplementedError

    def apply(self, text: str, ctx: Context) -> str:
        raise NotImplementedError


class JsonNames(Rule):
    """Secret-named JSON keys lose their whole value (but booleans, null and schemas), also in JSON inside a
    JSON string; so does a ``value`` whose sibling names a secret."""

    name = "json names"
    marks = b'"'
    probed = True

    def may_apply(self, scan: Scan, names: Names) -> bool:
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

    def apply(self, text: str, ctx: Context) -> str:
        return redact_json(text, ctx)


class Assignment(Rule):
    """A ``name: value`` or ``NAME=value`` line of free text whose name is a secret's: the value goes."""

    name = "assignments"
    marks = b":="
    probed = True

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
    probed = True

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
    probed = True

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
    probed = True

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


class Glued(Rule):
    """Long prefixed shapes glued to the word before them (``_catalogue.glued_matches``)."""

    name = "glued shapes"
    marks = b".-/"
    probed = True

    def may_apply(self, scan: Scan, names: Names) -> bool:
        return scan.glued()

    def apply(self, text: str, ctx: Context) -> str:
        pieces, position = [], 0
        for start, end in glued_matches(text):
            ctx.found.append(text[start:end])
            pieces += [text[position:start], PLACEHOLDER]
            position = end
        return "".join(pieces) + text[position:] if pieces else text


class SlackWebhook(Rule):
    """A Slack webhook URL keeps its workspace and channel ids and loses its secret, the last path segment
    (``hooks.slack.com/services/T.../B.../[secret removed]``): the URL stays one, and a replay with another
    webhook's secret matches it (the live URL is redacted the same way before it is compared)."""

    name = "slack webhooks"
    marks = b"/"
    probed = True

    def may_apply(self, scan: Scan, names: Names) -> bool:
        return bool(scan.hits) and scan.hooked()  # its probe: the lower case holds ``SLACK_HOOKS``

    def apply(self, text: str, ctx: Context) -> str:
        def replace(match: re.Match[str]) -> str:
            ctx.found.append(match["secret"])
            return match.group()[: match.start("secret") - match.start()] + PLACEHOLDER

        return _SLACK_WEBHOOK.sub(replace, text)


_SLACK_WEBHOOK = lazy_pattern(
    r"(?i:hooks\.slack\.com)/(?:services|workflows|triggers)/(?:[A-Za-z0-9]{1,40}/){1,3}(?P<secret>[A-Za-z0-9]{16,64})"
    r"(?![A-Za-z0-9])"
)


class Encoded(Rule):
    """A key written in hex, HTML numeric entities, ``\\xNN`` escapes, double percent-encoding or a base64 run
    in prose (``_encodings``): a token whose decoding holds a secret goes whole. Base64 media never decode
    to text, so they stay as they are."""

    name = "encoded"
    probed = True

    def may_apply(self, scan: Scan, names: Names) -> bool:
        return bool(scan.hits) and scan.encoded()  # most texts have no hit: one test

    def apply(self, text: str, ctx: Context) -> str:
        pieces, position = [], 0
        for start, end, decoded in decoded_tokens(text):
            if ctx.redact_text(decoded, ctx.response) != decoded:
                ctx.found.append(text[start:end])
                pieces += [text[position:start], PLACEHOLDER]
                position = end
        return "".join(pieces) + text[position:] if pieces else text


class Shapes(Rule):
    """The catalogue's credential shapes (``_catalogue``). The redactor runs it last, with the keywords the
    search found; it searches its prefixes itself, so only the prefilter's scan, which has them, can say no."""

    name = "shapes"
    probed = True

    def may_apply(self, scan: Scan, names: Names) -> bool:
        if scan.raw is None:
            return True
        return bool(scan.keywords()) or (scan.prefixed() and may_hold_prefixed(scan.raw or b""))

    def apply(self, text: str, ctx: Context) -> str:
        return redact_shapes(text, None, ctx.found)


_Shapes = Shapes()
# In the order the redactor runs them (``Shapes`` last: it reads the text the others left).
RULES: tuple[Rule, ...] = (
    JsonNames(),
    Assignment(),
    Query(),
    DataUrl(),
    Xml(),
    Userinfo(),
    UrlPath(),
    Glued(),
    SlackWebhook(),
    Encoded(),
    _Shapes,
)


# Characters too common in JSON to be worth looking for: taken as present in every text. Each other mark has
# its bit (``_MARK_BITS``); those of the rules that are not probed, too (``_UNPROBED_BITS``).
_COMMON_MARKS = frozenset(b'":')
_RARE_MARKS = sorted(frozenset(c for rule in RULES for c in rule.marks) - _COMMON_MARKS)
_MARK_BITS = tuple((1 << bit, mark) for bit, mark in enumerate(_RARE_MARKS))
_UNPROBED_BITS = tuple(
    (bit, mark) for bit, mark in _MARK_BITS if any(not rule.probed and mark in rule.marks for rule in RULES)
)
_CANDIDATES: dict[int, tuple[Rule, ...]] = {}


def _rules_marked(data: bytes, bits: tuple[tuple[int, int], ...]) -> int:
    """The bits of the marks in ``data``: a memchr for each, asked by its byte value (a body of many
    kilobytes is not walked byte by byte, and ``bytes in data`` would first fail as an int)."""
    found = 0
    for bit, mark in bits:
        if mark in data:
            found |= bit
    return found


def candidates(data: bytes, probe_found: bool = True) -> tuple[Rule, ...]:
    """The rules (in order) whose marks are in ``data`` (a text's lower-cased UTF-8): the only ones that may
    apply to it, the only ones whose ``may_apply`` is asked; without ``probe_found`` (a prefilter's search
    found nothing), only those that are not ``probed``."""
    key = _rules_marked(data, _MARK_BITS if probe_found else _UNPROBED_BITS) << 1 | probe_found
    found = _CANDIDATES.get(key)
    if found is None:
        present = _COMMON_MARKS.union(mark for bit, mark in _MARK_BITS if key >> 1 & bit)
        found = _CANDIDATES[key] = tuple(
            rule
            for rule in RULES
            if (probe_found or not rule.probed) and (not rule.marks or present.intersection(rule.marks))
        )
    return found
