"""The text rules the redactor runs (``RULES``, in order). A rule's ``may_apply(scan, names)`` is never False when
its ``apply(text, ctx)`` would change the scanned text: the prefilter (``Redactor.could_redact``) asks them all."""

from __future__ import annotations

import base64
import bisect
import functools
import re
from collections.abc import Callable, Iterable
from typing import NamedTuple
from urllib.parse import unquote_plus

from .._memo import lazy_pattern
from ..format._format import PLACEHOLDER
from ._catalogue import catalogue_matches, glued_matches, looks_like_credential, may_hold_prefixed
from ._encodings import decoded_tokens
from ._json import JSON_ESCAPE, SIBLING_VALUE_BYTES, Context, key_may_be_secret, redact_json, token_is_credential
from ._names import Names, words_of
from ._patterns import regex
from ._search import Scan

__all__ = ["RULES", "TEXT_DATA_URL", "TEXT_MEDIA", "Rule", "candidates", "redact_base64_text", "redact_shapes"]

_TEXT_TYPES = r"text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript"
TEXT_MEDIA = lazy_pattern(r"(?i:" + _TEXT_TYPES + r"|x-python)|[^;,]*\+(?:json|xml))")
_TEXT_DATA_URL_IN_TEXT = lazy_pattern(
    r"(?P<head>data:(?i:" + _TEXT_TYPES + r"))[^,\s\"']*;base64,)(?P<payload>[A-Za-z0-9+/]{8,}={0,2})"
)
TEXT_DATA_URL = lazy_pattern(r"data:(?i:" + _TEXT_TYPES + r"))[^,]*;base64,")
_TEXT_MEDIA_BYTES = lazy_pattern(_TEXT_TYPES.encode() + rb"|x-python)|\+(?:json|xml)")
# Every query or fragment parameter (``user[password]`` too), also one inside another's value (a redirect URL's).
_PARAMETER_NAME = r"(?=[?&;#]([A-Za-z0-9_.%\-\[\]]{1,64})=)"
_QUERY = lazy_pattern(_PARAMETER_NAME)
_PARAMETER = lazy_pattern(_PARAMETER_NAME.encode()[:-1] + rb"[^&#\s\"'<>\\])")
_VALUE_ENDS = lazy_pattern(r"[&#\s\"'<>\\]")  # what ends a parameter's value
# A scheme's run of characters (``x.a-b+https``) is read once, from its start, and only when ``://`` ends it:
# trying each ``.``, ``-`` or ``+`` inside a long run as a start is quadratic. The scheme starts, as before, at
# the run's first letter after a non-word character; what comes before it in the run is kept as it is.
_SCHEME = r"(?<![A-Za-z0-9+.-])(?=[A-Za-z0-9+.-]*+://)[A-Za-z0-9+.-]*?"
_USERINFO = lazy_pattern(
    _SCHEME + r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*+://)"
    r"(?P<userinfo>(?P<user>[^/\s@:\[\]\"'?#]*)(?::(?P<password>[^/\s@\"']*))?)@"
)
_SCHEMES = r"(?i:bearer|basic|token|digest|apikey|key)"  # ``Authorization: Bearer X``: X is the value
# A ``name: value`` or ``NAME=value`` line in free text (a real or a JSON-escaped line start, a quote); its value may
# open with a quote, also a JSON-escaped one (``\"``).
_OPENING = r"(?:\\?[\"'])?"
_ASSIGNMENT = lazy_pattern(
    r"(?:(?<![^\n\r\"'`])|(?<=\\n)|(?<=\\r)|(?<=\\t))[ \t]*(?:export[ \t]+|-[ \t]+)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{1,63})[ \t]*[:=][ \t]*" + _OPENING + r"(?:" + _SCHEMES + r"[ \t]+)?"
    r"(?P<value>(?!\[secret removed\]|" + _SCHEMES + r"[ \t])[^\s\"'`\\,;]{4,})"
)
# Code quoted in a prompt: a name given a string literal (of no white space, closed by its quote: a sentence under
# a secret name, ``{'token': 'Authentication required'}``, is a message, not a secret). The name quoted (a dict's
# ``'api_key': 'v'``, ``os.environ["API_KEY"] = "v"``), declared (``const apiKey = "v"``, ``$password = 'v'``) or
# a keyword argument (``Mistral(api_key="v")``). Not a type annotation (``token: string``), nor an expression.
_LITERAL = r"[ \t]*\\?(?P<q>[\"'])(?P<value>(?!\[secret removed\])[^\s\"'`\\,;]{4,})\\?(?P=q)"
_CODE = lazy_pattern(
    r"(?:(?P<quoted>(?<=['`\"]))|(?<![\w$])(?:(?:const|let|var)[ \t]+|\$)|(?<=[(,])[ \t]*)"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{1,63})"
    r"(?(quoted)(?:['`]\]?|\\?\"\]|\\?'\]?)[ \t]*[:=]|[ \t]*=)" + _LITERAL
)
# A command-line flag given a key (``--api-key 3fA9...``, ``-p=...``): a credential-looking value only, so that
# ``--password-file path`` and ``--token-limit 4096`` stay.
_FLAG = lazy_pattern(
    r"(?<![\w-])--?(?P<name>[A-Za-z][A-Za-z0-9_-]{1,63})(?:=|[ \t]+)\\?[\"']?(?P<value>[A-Za-z0-9._~+/=-]{16,256})"
    r"(?![A-Za-z0-9._~+/=-])"
)
# What the probe asks, in the lower case: a pattern starting with its literal ``-`` is searched fast (one a body).
_FLAG_BYTES = lazy_pattern(rb"-[a-z][a-z0-9_-]{1,63}(?:=|[ \t]+)\\?[\"']?[a-z0-9._~+/=-]{16}")
# What follows a name's word up to the end of its run of name characters, then an assignment's tail: every word
# that ends in one run is followed by the same tail, which is read once a run (reading it from each word is quadratic).
_NAME_RUN_TAIL = lazy_pattern(
    rb"[a-z0-9_.\-]*+(?P<tail>(?:\\?['`]\]?|(?:\\?\")?\])?[ \t]*[:=][ \t]*"
    + _OPENING.encode()
    + rb"[^\s\"'`\\,;]{4,})?"
)
_ENV_NAME = lazy_pattern(r"[A-Z][A-Z0-9_]*")
_URL = lazy_pattern(_SCHEME + r"\b[A-Za-z][A-Za-z0-9+.-]*+://[^\s\"'<>\\]+")
_PATH_SEGMENT = lazy_pattern(r"(?<=/)[^/?#]{8,}")
# XML: an element's text (``<wsse:Password>``), a start tag's attributes (``<add key="Password" value="..."/>``).
_XML_ELEMENT = lazy_pattern(
    r"<(?P<tag>(?:[A-Za-z_][\w.-]*:)?(?P<name>[A-Za-z_][\w.-]*))(?:\s[^<>]*)?>(?P<value>[^<]*)</(?P=tag)\s*>"
)
_XML_CDATA = lazy_pattern(
    r"<(?P<tag>(?:[A-Za-z_][\w.-]*:)?(?P<name>[A-Za-z_][\w.-]*))(?:\s[^<>]*)?>\s*+<!\[CDATA\["
    r"(?P<value>[^\]<]*+(?:\](?!\]>)[^\]<]*+)*+)\]\]>\s*+</(?P=tag)\s*>"  # no ``<``: each start reads to the next
)
_XML_TAG = lazy_pattern(r"<[A-Za-z_][\w:.-]*\s[^<>]*>")
# An attribute's name starts at the first ASCII letter or ``_`` of its run of name characters, and the run is read
# once: tried from each position inside a long run, the name read the rest of the run each time (quadratic).
_XML_ATTRIBUTE = lazy_pattern(
    r"""(?<![\w:.-])(?:(?![A-Za-z_])[\w:.-])*+(?P<name>[A-Za-z_][\w:.-]*+)\s*=\s*(?P<q>["'])(?P<value>[^"'<>]*)(?P=q)"""
)
_XML_BYTES = lazy_pattern(rb"</|/>|<[a-z_][\w:.-]*\s[^<>]*=")
_SLACK_WEBHOOK = lazy_pattern(
    r"(?i:hooks\.slack\.com)/(?:services|workflows|triggers)/(?:[A-Za-z0-9]{1,40}/){1,3}(?P<secret>[A-Za-z0-9]{16,64})"
    r"(?![A-Za-z0-9])"
)
# A value that names where the secret is: a call (``os.environ.get(``), a variable (``${API_KEY}``, ``process.env.X``).
_REFERENCE = lazy_pattern(r"[A-Za-z_][\w.]*\(|\$\{?[A-Za-z_]|process\.env\.|os\.environ\b")


class Rule(NamedTuple):
    """``marks``: one of them is in every text the rule may change (none: any text). ``probed``: ``may_apply`` is
    False for a prefilter's scan whose search found no probe."""

    name: str
    marks: bytes
    probed: bool
    may_apply: Callable[[Scan, Names], bool]
    apply: Callable[[str, Context], str]


def assigns_secret(names: Names, name: str, value: str, response: bool) -> bool:
    """Whether ``name: value`` (an assignment, an XML element or attribute) holds a secret value."""
    if value.lower() in ("true", "false", "null", "none") or PLACEHOLDER in value or _REFERENCE.match(value):
        return False
    secret = names.is_secret(name, 1 if _ENV_NAME.fullmatch(name) else 0)
    if secret and response and words_of(name) == ("token",):
        return token_is_credential(value)
    return secret


_Secrets = Callable[[re.Match[str], Context], list[str]]


def _named_secrets(match: re.Match[str], ctx: Context) -> list[str]:
    """The value of an assignment or XML element that holds a secret (an assignment's has no space to strip)."""
    value = match["value"].strip()
    return [value] if value and assigns_secret(ctx.names, match["name"], value, ctx.response) else []


def _replaced(text: str, spans: Iterable[tuple[int, int]], found: list[str]) -> str:
    """``text`` with each span (sorted; one overlapping the last is cut to what follows it) replaced by the
    placeholder, its text put in ``found``."""
    pieces, position = [], 0
    for start, end in spans:
        if end > position:
            start = max(start, position)
            found.append(text[start:end])
            pieces += [text[position:start], PLACEHOLDER]
            position = end
    return "".join(pieces) + text[position:]


def _substituting(pattern: re.Pattern[str], group: str, secrets: _Secrets) -> Callable[[str, Context], str]:
    """An ``apply``: a match of ``pattern`` for which ``secrets`` names any (put in ``found``) loses its ``group``."""

    def apply(text: str, ctx: Context) -> str:
        def replace(match: re.Match[str]) -> str:
            found = secrets(match, ctx)
            if not found:
                return match.group()
            ctx.found.extend(found)
            string = match.string
            return string[match.start() : match.start(group)] + PLACEHOLDER + string[match.end(group) : match.end()]

        return pattern.sub(replace, text)

    return apply


def redact_shapes(text: str, lowered: str | None, found: list[str], keywords: list[int] | None = None) -> str:
    """``text`` without the catalogue's credential shapes."""
    matches = catalogue_matches(text, lowered, keywords)
    return _replaced(text, sorted((start, end) for start, end, _ in matches), found) if matches else text


def redact_base64_text(payload: str, ctx: Context) -> str:
    """A text type's base64 payload, decoded, redacted and encoded again; redacted as it is when not base64 of UTF-8
    or holding no secret."""
    try:
        text = base64.b64decode(payload, validate=True).decode("utf-8")
    except ValueError:  # binascii's and Unicode's errors too
        return ctx.redact_text(payload, ctx.response)
    redacted = ctx.redact_text(text, ctx.response)
    return ctx.redact_text(payload, ctx.response) if redacted == text else base64.b64encode(redacted.encode()).decode()


def _json_names_may_apply(scan: Scan, names: Names) -> bool:
    data, words = scan.data, scan.words
    if not words or b'"' not in data:
        return False
    named = functools.partial(key_may_be_secret, names)
    if (b"value" in data and regex(SIBLING_VALUE_BYTES).search(data)) or scan.may_hold_secret_key(named, words):
        return True
    if not scan.prefilter or b"\\" not in data:
        return False
    # Read as JSON, whose ``\n``, ``\t``... are separators (each read as two spaces).
    view = regex(JSON_ESCAPE).sub(lambda m: b"  " if m[0][1:] in b"bfnrt" else m[0], scan.raw or b"").lower()
    again = scan.search.scan_bytes(view, view)
    return again.may_hold_secret_key(named, again.words)


def _assignments_may_apply(scan: Scan, names: Names) -> bool:
    data, words = scan.data, scan.words
    if not words or (b":" not in data and b"=" not in data):
        return False
    run_start, run_end = 0, -1  # the run of name characters last read
    for _, end in words:
        if not run_start <= end <= run_end:
            run = _NAME_RUN_TAIL.match(data, end)  # the run, then the tail if there is one: one match a run
            if run is not None and run["tail"] is not None:
                return True
            run_start, run_end = end, run.end() if run else end
    return False


def _redact_assignments(text: str, ctx: Context) -> str:
    return _redact_code(_redact_named_values(text, ctx), ctx)


def _flags_may_apply(scan: Scan, names: Names) -> bool:
    return bool(scan.words) and b"-" in scan.data and _FLAG_BYTES.search(scan.data) is not None


def _flag_secrets(match: re.Match[str], ctx: Context) -> list[str]:
    value = match["value"]
    return [value] if looks_like_credential(value) and ctx.names.is_secret(match["name"], 1) else []


_redact_named_values = _substituting(_ASSIGNMENT, "value", _named_secrets)
_redact_code = _substituting(_CODE, "value", _named_secrets)


def _query_may_apply(scan: Scan, names: Names) -> bool:
    raw = scan.raw
    return b"=" in scan.data and (
        raw is None or any(names.is_secret(m[1].decode("ascii"), 2) for m in _PARAMETER.finditer(raw))
    )


def _redact_query(text: str, ctx: Context) -> str:
    """The values of secret-named parameters, each up to the first character that ends a value (one search of
    those for the text: a parameter inside another's value ends where that one does)."""
    ends: list[int] | None = None
    spans: list[tuple[int, int]] = []
    for match in _QUERY.finditer(text):
        start = match.end(1) + 1
        if (spans and start < spans[-1][1]) or not ctx.names.is_secret(match[1], 2):
            continue  # inside the value of one found (whose end is its end too)
        ends = ends if ends is not None else [end.start() for end in _VALUE_ENDS.finditer(text)] + [len(text)]
        end = ends[bisect.bisect_left(ends, start)]
        if end > start and not text.startswith(PLACEHOLDER, start):
            spans.append((start, end))
            ctx.found.append(unquote_plus(text[start:end]))
    return _replaced(text, spans, ctx.found) if spans else text


def _data_urls_may_apply(scan: Scan, names: Names) -> bool:
    """Also a ``data`` member beside a text media type, which ``redact_value`` decodes."""
    data = scan.data
    marked = scan.prefixed() if scan.raw is not None else b"base64," in data and b"data:" in data
    return marked and _TEXT_MEDIA_BYTES.search(data) is not None


def _redact_data_urls(text: str, ctx: Context) -> str:
    return _TEXT_DATA_URL_IN_TEXT.sub(lambda match: match["head"] + redact_base64_text(match["payload"], ctx), text)


def _xml_may_apply(scan: Scan, names: Names) -> bool:
    return bool(scan.words) and b"<" in scan.data and _XML_BYTES.search(scan.data) is not None


def _redact_xml(text: str, ctx: Context) -> str:
    if "</" in text:
        text = _redact_xml_elements(text, ctx)
        text = _redact_xml_cdata(text, ctx) if "<![CDATA[" in text else text
    return _XML_TAG.sub(lambda match: _xml_tag(match.group(), ctx), text) if "=" in text else text


_redact_xml_elements = _substituting(_XML_ELEMENT, "value", _named_secrets)
_redact_xml_cdata = _substituting(_XML_CDATA, "value", _named_secrets)


def _xml_tag(tag: str, ctx: Context) -> str:
    """A start tag without its secret-named attributes' values, nor a ``value`` whose sibling ``key`` or ``name``
    names a secret."""
    attributes = list(_XML_ATTRIBUTE.finditer(tag))
    named = any(a["name"].lower() in ("key", "name") and ctx.names.is_secret(a["value"]) for a in attributes)

    def secret(value: str, name: str) -> bool:
        return (named and name.lower() == "value") or assigns_secret(ctx.names, name, value, ctx.response)

    spans = (a.span("value") for a in attributes if a["value"] and secret(a["value"], a["name"].rpartition(":")[2]))
    return _replaced(tag, spans, ctx.found)


def _userinfo_secrets(match: re.Match[str], ctx: Context) -> list[str]:
    """``scheme://user:password@``, and ``scheme://TOKEN@`` when the user is a credential."""
    user, password = match["user"], match["password"]
    if password:
        return [user, password]
    if not user or (password is None and not (looks_like_credential(user) or catalogue_matches(user))):
        return []
    return [user]


_redact_userinfo = _substituting(_USERINFO, "userinfo", _userinfo_secrets)


def _url_paths_may_apply(scan: Scan, names: Names) -> bool:
    return b"://" in scan.data and (not scan.prefilter or _shapes_may_apply(scan, names))


def _redact_url_paths(text: str, ctx: Context) -> str:
    """Path segments of a URL that are credentials by shape: ``/v1/keys/sk-.../``, bot tokens."""
    return _URL.sub(lambda match: _redact_url_path(match.group(), ctx.found), text)


def _redact_url_path(url: str, found: list[str]) -> str:
    authority_end = url.find("/", url.find("://") + 3)
    if authority_end < 0:
        return url
    return url[:authority_end] + _PATH_SEGMENT.sub(lambda m: redact_shapes(m.group(), None, found), url[authority_end:])


def _redact_glued(text: str, ctx: Context) -> str:
    """Long prefixed shapes glued to the word before them."""
    return _replaced(text, glued_matches(text), ctx.found)


# A Slack webhook URL keeps its ids and loses its secret: it stays a URL, which a replay's (redacted alike) matches.
_redact_slack_webhooks = _substituting(_SLACK_WEBHOOK, "secret", lambda match, _: [match["secret"]])


def _redact_encoded(text: str, ctx: Context) -> str:
    """A token whose decoding (``_encodings``) holds a secret goes whole."""
    tokens = decoded_tokens(text)
    spans = ((start, end) for start, end, decoded in tokens if ctx.redact_text(decoded, ctx.response) != decoded)
    return _replaced(text, spans, ctx.found)


def _shapes_may_apply(scan: Scan, names: Names) -> bool:
    """Only the prefilter's scan, which searched the prefixes, can say no."""
    return scan.raw is None or bool(scan.keywords()) or (scan.prefixed() and may_hold_prefixed(scan.raw))


# The shapes last: they read the text the others left. JSON names: secret-named keys lose their value (but booleans,
# null, schemas), also in JSON inside a string, as does a ``value`` whose sibling names a secret.
RULES: tuple[Rule, ...] = (
    Rule("json names", b'"', True, _json_names_may_apply, redact_json),
    Rule("assignments", b":=", True, _assignments_may_apply, _redact_assignments),
    Rule("query values", b"=", False, _query_may_apply, _redact_query),
    Rule("data urls", b"/+", True, _data_urls_may_apply, _redact_data_urls),
    Rule("xml", b"<", True, _xml_may_apply, _redact_xml),
    Rule("userinfo", b"@", False, lambda scan, _: b"@" in scan.data and b"://" in scan.data, _redact_userinfo),
    Rule("url paths", b"/", True, _url_paths_may_apply, _redact_url_paths),
    Rule("glued shapes", b".-/", True, lambda scan, _: scan.glued(), _redact_glued),
    Rule("flags", b"-", True, _flags_may_apply, _substituting(_FLAG, "value", _flag_secrets)),
    Rule("slack webhooks", b"/", True, lambda scan, _: bool(scan.hits) and scan.hooked(), _redact_slack_webhooks),
    Rule("encoded", b"", True, lambda scan, _: bool(scan.hits) and scan.encoded(), _redact_encoded),
    Rule("shapes", b"", True, _shapes_may_apply, lambda text, ctx: redact_shapes(text, None, ctx.found)),
)


# Marks too common in JSON to look for are taken as present; each other mark has a bit.
_COMMON_MARKS = frozenset(b'":')
_RARE_MARKS = sorted(frozenset(c for rule in RULES for c in rule.marks) - _COMMON_MARKS)
_MARK_BITS = tuple((2 << bit, mark) for bit, mark in enumerate(_RARE_MARKS))  # bit 0: probe_found
_UNPROBED_BITS = tuple(
    (bit, mark) for bit, mark in _MARK_BITS if any(not rule.probed and mark in rule.marks for rule in RULES)
)


def candidates(data: bytes, probe_found: bool = True) -> tuple[Rule, ...]:
    """The rules (in order) whose marks are in ``data`` (a text's lower-cased UTF-8); without ``probe_found`` (a
    prefilter's search found nothing), the unprobed ones. One memchr a mark, asked by its byte value."""
    key = int(probe_found)
    for bit, mark in _MARK_BITS if probe_found else _UNPROBED_BITS:
        if mark in data:
            key |= bit
    return _rules_marked(key)


@functools.cache
def _rules_marked(key: int) -> tuple[Rule, ...]:
    present = _COMMON_MARKS.union(mark for bit, mark in _MARK_BITS if key & bit)
    return tuple(
        rule for rule in RULES if (key & 1 or not rule.probed) and (not rule.marks or present.intersection(rule.marks))
    )
