"""Redaction: the rules that keep secrets out of every byte written to a cassette.

Three mechanisms, each searching every representation of a value (raw, percent-encoded, JSON-escaped with
``\\u``, JSON text inside a JSON string, URL query, fragment, userinfo and path):

- **Names**: header names, query parameter names, form fields and JSON keys, matched regardless of case
  and separators after percent and ``\\u`` decoding. A secret-named key loses its whole value, except a
  boolean, a null or a JSON-schema definition, which are never secrets.
- **Shapes**: the credential catalogue (``_credentials.CATALOGUE``): prefixed keys, JWTs, PEM blocks,
  ``Basic``/``Bearer`` credentials, AWS keys, webhook URLs...
- **Known values**: a value removed by name or shape is learned by the redactor (one per cassette) and
  removed from everything it redacts afterwards, in its raw, percent-encoded, JSON-escaped and base64
  forms. Only credentials are learned, never structure: a cookie's value but none of its attributes
  (``Domain``, ``Path``, ``Expires``, ``Max-Age``...), and never a hostname, a path, a date or a plain
  number (``is_structure``), which would otherwise be removed from every URL, ``Host`` header and
  ``max-age`` after it.

Cookies keep their shape: ``set-cookie: __cf_bm=[secret removed]; path=/; domain=.api.openai.com; ...`` and
``cookie: __cf_bm=[secret removed]; _cfuvid=[secret removed]``, so that a client's cookie jar behaves on
replay as it did live.

The defaults can't be removed; users add names, patterns or callables.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import ahocorasick_rs

from .._memo import Memo
from ..format._format import PLACEHOLDER, encode_line
from ._credentials import (
    KEYWORD_PATTERNS,
    PREFIX_PATTERNS,
    catalogue_matches,
    looks_like_credential,
    may_hold_prefixed,
)
from ._patterns import user_pattern

__all__ = [
    "MIN_PROPAGATED_LENGTH",
    "PLACEHOLDER",
    "QUERY_SECRET_NAMES",
    "SECRET_FIELD_NAMES",
    "RedactWithError",
    "Redactor",
    "cookie_names",
    "has_credential_shape",
    "is_structure",
    "remove_secret_values",
]

# Shorter values are not propagated: they are too likely to occur by chance in other text.
MIN_PROPAGATED_LENGTH = 8

SECRET_FIELD_NAMES: frozenset[str] = frozenset(
    {
        # HTTP authentication and API gateways
        "authorization",
        "proxy-authorization",
        "api_key",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "x-functions-key",
        "ocp-apim-subscription-key",
        "x-auth-token",
        "private-token",
        "x-honeycomb-team",
        "cookie",
        "set-cookie",
        # OAuth 2.0 (RFC 6749, RFC 7523, RFC 7636) and OpenID Connect
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "assertion",
        "client_assertion",
        "code_verifier",
        # Signed URLs: AWS SigV4 query authentication, Google Cloud Storage
        "x-amz-security-token",
        "x-amz-credential",
        "x-goog-credential",
        # Generic
        "secret",
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "credential",
        "jwt",
        "session_key",
        "connection_string",
    }
)
# Names that are secrets in a URL query or a form body only: Google's `?key=`, OAuth's authorization
# `code`, Azure SAS `sig`, signed-URL signatures. In JSON they are ordinary data (Gemini's customMetadata
# `key`, an error `code`, Anthropic's thinking `signature`).
QUERY_SECRET_NAMES: frozenset[str] = frozenset(
    {"key", "code", "sig", "signature", "x-amz-signature", "x-goog-signature", "appid", "hapikey"}
)

# A name whose words end with one of these is a secret too: github_token, stripe_secret_key, db_password,
# X-Custom-Api-Key. Plural counters (max_tokens, num_keys) end with another word and stay.
_SECRET_SUFFIXES: tuple[tuple[str, ...], ...] = (
    ("token",),
    ("secret",),
    ("password",),
    ("passwd",),
    ("pwd",),
    ("passphrase",),
    ("pass", "phrase"),
    ("cookie",),
    ("authorization",),
    ("credential",),
    ("jwt",),
    ("assertion",),
    ("apikey",),
    ("api", "key"),
    ("secret", "key"),
    ("private", "key"),
    ("access", "key"),
    ("account", "key"),
    ("session", "key"),
    ("subscription", "key"),
    ("functions", "key"),
    ("connection", "string"),
)
_QUERY_SECRET_SUFFIXES: tuple[tuple[str, ...], ...] = (("signature",),)
# Names that end like a secret but carry data: pagination cursors and tokenizer special tokens.
_NOT_SECRET_SUFFIXES: tuple[tuple[str, ...], ...] = (
    ("page", "token"),
    ("next", "token"),
    ("continuation", "token"),
    ("sync", "token"),
    *((special, "token") for special in ("eos", "bos", "pad", "unk", "sep", "cls", "mask", "start", "end", "stop")),
)
# Any of these words (singular or plural), wherever it stands in a name, makes the name secret:
# ``auth_token_value``, ``X-Auth-Key``, ``credentials``, ``SecretString``, ``private_key_pem``. Unless a word
# after it says the value is about the secret, not the secret (``DESCRIPTOR_WORDS``: ``token_type``,
# ``secret_name``, ``password_hint``), or the name is a kept one (``_NOT_SECRET_SUFFIXES``).
_ANYWHERE_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "pwd", "passphrase", "credential", "jwt", "auth", "authorization"}
)
# "key" is data in JSON (a metadata key, a cache key, a sort key): there it is a secret after one of these
# words only (``api_key``, ``app_key``, ``license_key``, ``auth_key``). In a header or a query name, "key"
# is a secret wherever it stands (``Fastly-Key``, ``DD-APPLICATION-KEY``, ``x-rapidapi-key``), but for the
# names of ``_NOT_SECRET_KEYS``.
_KEY_QUALIFIERS = frozenset(
    {"api", "apis", "secret", "private", "access", "account", "session", "subscription", "functions", "auth"}
    | {"app", "application", "license", "licence", "master", "admin", "client", "signing", "encryption", "service"}
    | {"global", "user", "write", "read", "ingest", "ingestion", "deploy", "server", "management", "virtual"}
)
_NOT_SECRET_KEYS: tuple[tuple[str, ...], ...] = (
    ("idempotency", "key"),
    ("cache", "key"),
    ("sort", "key"),
    ("partition", "key"),
    ("primary", "key"),
    ("foreign", "key"),
    ("object", "key"),
    ("routing", "key"),
    ("dedup", "key"),
    ("dedupe", "key"),
    ("public", "key"),
    ("header", "key"),
)
# Qualifiers that make "tokens" a list of credentials (``access_tokens``), where alone it is a count.
_TOKEN_QUALIFIERS = frozenset({"access", "refresh", "id", "api", "auth", "bearer", "session", "oauth", "personal"})
# A word after the secret one that makes the name a description of the secret, not the secret itself.
DESCRIPTOR_WORDS = frozenset(
    {"id", "ids", "type", "types", "kind", "name", "names", "count", "counts", "limit", "limits", "remaining"}
    | {"reset", "used", "usage", "length", "len", "size", "budget", "url", "uri", "urls", "endpoint", "expires"}
    | {"expiry", "expiration", "ttl", "prefix", "hint", "last4", "present", "provided", "required", "enabled"}
    | {"configured", "env", "var", "file", "path", "ref", "arn", "version", "policy", "format", "location"}
    | {"label", "status", "method", "methods", "mode", "provider", "algorithm", "alg", "fingerprint", "scope"}
    | {"scopes", "field", "param", "parameter", "placement", "strategy", "created", "updated", "rotated"}
    | {"description", "title", "source", "index", "offset", "logprob", "logprobs", "probability", "rank"}
)
# The words that are split out of run-together lower case: ``accesstoken``, ``clientsecret``, ``privatekey``,
# ``hapikey``, ``apikeys``. A run-together word is split when it is made of these words only, or ends with two
# or more of them of which the last is a secret word (``hapikey``: h, api, key; but ``monkey`` stays one), or
# ends with a secret word other than key (``xsrftoken``).
_DICTIONARY = (
    _ANYWHERE_WORDS
    | _KEY_QUALIFIERS
    | _TOKEN_QUALIFIERS
    | {"key", "keys", "tokens", "secrets", "passwords", "credentials", "cookie", "string", "value", "id"}
    | {"page", "next", "max", "num", "input", "output", "total", "count", "type", "name", "pass", "phrase"}
)
_SUFFIX_WORDS = ("token", "secret", "password", "passwd", "passphrase", "credential", "credentials", "secrets")
_PLURALS = {
    "secrets": "secret",
    "passwords": "password",
    "credentials": "credential",
    "passphrases": "passphrase",
    "jwts": "jwt",
    "keys": "key",
    "cookies": "cookie",
}


def _split_run_together(word: str) -> tuple[str, ...]:
    """``word`` (lower case, no separators) as the words of ``_DICTIONARY`` it is made of, when it is."""
    whole = _segment(word)
    if whole is not None:
        return whole
    for start in range(1, len(word) - 2):
        tail = _segment(word[start:])
        if tail is not None and (len(tail) >= 2 or tail[-1] in _SUFFIX_WORDS) and tail[-1] in _SECRET_ENDS:
            return (word[:start], *tail)
    return (word,)


_SECRET_ENDS = frozenset({*_ANYWHERE_WORDS, "key", "keys", "secrets", "passwords", "credentials"})


@functools.lru_cache(maxsize=4096)
def _segment(word: str) -> tuple[str, ...] | None:
    """``word`` as the fewest words of ``_DICTIONARY``, or None."""
    if word in _DICTIONARY:
        return (word,)
    best: tuple[str, ...] | None = None
    for end in range(2, len(word) - 1):
        head = word[:end]
        if head in _DICTIONARY:
            rest = _segment(word[end:])
            if rest is not None and (best is None or len(rest) + 1 < len(best)):
                best = (head, *rest)
    return best


def _secret_by_word(words: tuple[str, ...], loose: bool) -> bool:
    """Whether a secret word stands anywhere in ``words`` with no descriptor after it (see above); with
    ``loose`` (a header, a query parameter, an environment variable), "key" is one wherever it stands."""
    last = -1
    for index, word in enumerate(words):
        singular = _PLURALS.get(word, word)
        before = words[index - 1] if index else ""
        if singular in _ANYWHERE_WORDS:
            last = index
        elif singular == "key" and ((loose and word == "key") or before in _KEY_QUALIFIERS):
            if (before, "key") not in _NOT_SECRET_KEYS:
                last = index
        elif word == "tokens" and before in _TOKEN_QUALIFIERS:
            last = index
    if last < 0:
        return False
    if (words[last - 1] if last else "", _PLURALS.get(words[last], words[last])) in _NOT_SECRET_SUFFIXES:
        return False
    return not any(word in DESCRIPTOR_WORDS for word in words[last + 1 :])


# The keys a JSON-schema definition is made of: an object of these only (with a "type", "properties"...)
# is a schema, even under a name like "password", and keeps its contents.
_SCHEMA_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "properties",
        "items",
        "required",
        "enum",
        "const",
        "format",
        "default",
        "examples",
        "example",
        "title",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "uniqueItems",
        "additionalProperties",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "$ref",
        "$defs",
        "definitions",
        "nullable",
        "propertyOrdering",
        "$schema",
        "$id",
        "$comment",
        "readOnly",
        "writeOnly",
        "deprecated",
        "multipleOf",
        "patternProperties",
        "prefixItems",
        "minProperties",
        "maxProperties",
        "contentEncoding",
        "contentMediaType",
        "strict",
    }  # fmt: skip
)
_SCHEMA_MARKERS = frozenset({"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "properties", "items"})

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
# Escapes that can hide a credential or a name: those of printable ASCII characters. (Escaped accents,
# \u00e9 or %C3%A9, are never part of one, and text full of them is not decoded.)
_PERCENT_ASCII = re.compile(r"%[2-7][0-9A-Fa-f]")
_PERCENT_ASCII_BYTES = re.compile(rb"%[2-7][0-9A-Fa-f]")
# The UTF-8 of the only characters whose lower case holds an ASCII letter (U+0130, the Kelvin sign).
_LOWERING_TO_ASCII = (b"\xc4\xb0", b"\xe2\x84\xaa")
_UNICODE_ASCII = re.compile(r"\\u00[2-7][0-9A-Fa-f]")
_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_UNICODE_RUN = re.compile(r"(?:\\u[0-9A-Fa-f]{4})+")
_JSON_KEY = re.compile(r"\"(?P<key>(?:[^\"\\]++|\\u[0-9A-Fa-f]{4})++)\"\s*:\s*")
_JSON_STRING_REST = re.compile(r"(?:[^\"\\]|\\.)*\"")
_JSON_SCALAR = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null")
_NESTED_JSON = re.compile(r"\"(?P<body>[\[{](?:[^\"\\]|\\.)*)\"")
_QUOTED_PLACEHOLDER = f'"{PLACEHOLDER}"'
_QUERY = re.compile(r"(?P<sep>[?&;#])(?P<name>[A-Za-z0-9_.%\-]{1,64})=(?P<value>\[secret removed\]|[^&#\s\"'<>\\]+)")
_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s@:\[\]\"'?#]*)(?::(?P<password>[^/\s@\"']*))?@"
)
# The members of an object that names its sibling's value (``_sibling_values``), folded (``_folded``).
_SIBLING_NAME_KEYS = frozenset({"name", "key", "parametername", "parameterkey", "outputkey", "variable", "envvar"})
_SIBLING_VALUE_KEYS = frozenset({"value", "parametervalue", "outputvalue", "secretvalue"})
_SIBLING_NAME = re.compile(
    r"\"(?:[Nn]ame|[Kk]ey|Parameter(?:Name|Key)|OutputKey|[Vv]ariable|env_?[Vv]ar)\"\s*:\s*\"(?P<name>(?:[^\"\\]|\\.){1,200})\""
)
_SIBLING_VALUE = re.compile(r"\"(?:[Vv]alue|ParameterValue|OutputValue|[Ss]ecret_?[Vv]alue)\"\s*:")
# Media types whose base64 payloads are text, searched decoded: in a data URL, or beside a ``data`` member.
_TEXT_MEDIA = re.compile(
    r"(?i:text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript|x-python)|[^;,]*\+(?:json|xml))"
)
# A data URL of a text type inside free text (a prompt, a stream's line): its payload decoded and searched.
_TEXT_DATA_URL_IN_TEXT = re.compile(
    r"(?P<head>data:(?i:text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript))[^,\s\"']*;base64,)"
    r"(?P<payload>[A-Za-z0-9+/]{8,}={0,2})"
)
_TEXT_DATA_URL = re.compile(r"data:(?i:text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript))[^,]*;base64,")
_MEDIA_MARKERS = (b"text/", b"application/", b"+json", b"+xml")
_TEXT_MEDIA_BYTES = re.compile(
    rb"text/|application/(?:json|xml|yaml|x-yaml|toml|x-sh|javascript|x-python)|\+(?:json|xml)"
)
# The authorization schemes a value may start with (``Authorization: Bearer X``: X is the value).
_SCHEMES = r"(?i:bearer|basic|token|digest|apikey|key)"
# A ``name: value`` or ``NAME=value`` line in free text (a real or a JSON-escaped line start, a quote).
_ASSIGNMENT = re.compile(
    r"(?:(?<![^\n\r\"'`])|(?<=\\n)|(?<=\\r)|(?<=\\t))[ \t]*(?:export[ \t]+|-[ \t]+)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{1,63})[ \t]*[:=][ \t]*[\"']?(?:" + _SCHEMES + r"[ \t]+)?"
    r"(?P<value>(?!\[secret removed\]|" + _SCHEMES + r"[ \t])[^\s\"'`\\,;]{4,})"
)
# What follows a secret name's word in such a line, in lower-cased UTF-8 (``_may_assign``).
_ASSIGNMENT_TAIL = re.compile(rb"[a-z0-9_.\-]*[ \t]*[:=][ \t]*[\"']?[^\s\"'`\\,;]{4,}")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>\\]+")
_PATH_SEGMENT = re.compile(r"(?<=/)[^/?#]{8,}")
_AUTH_SCHEME = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9-]*)\s+(?P<credential>\S{8,})")

# What a value that is structure, not a credential, looks like (``is_structure``).
_PLAIN_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")
_HOSTNAME = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9+.-]*:(?://)?)?\.?(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\.?"
    r"(?::[0-9]{1,5})?(?:[/?#]\S*)?"
)
_DATE = re.compile(
    r"(?:[A-Za-z]{3,9},?\s+)?[0-9]{1,2}[ -][A-Za-z]{3}[ -][0-9]{2,4}(?:\s+[0-9]{2}:[0-9]{2}(?::[0-9]{2})?)?(?:\s+GMT)?"
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
)
_PATH = re.compile(r"/[^\s]*")
# Cookie attributes (RFC 6265 section 4.1.1, with SameSite, Priority and Partitioned): kept, never learned.
_COOKIE_HEADERS = frozenset({"cookie", "set-cookie"})


def is_structure(value: str) -> bool:
    """Whether ``value`` is structure rather than a credential: a hostname (or a URL or ``scheme:host``
    with one), a path, a date or a plain number, unless the credential catalogue knows its shape (a JWT
    has dots too). Such a value is removed where its name says it is secret, but never learned: learned,
    it would be removed from every URL, ``Host`` header and ``max-age`` that holds it."""
    text = value.strip()
    if _PLAIN_NUMBER.fullmatch(text) or _DATE.fullmatch(text) or _PATH.fullmatch(text):
        return True
    if _HOSTNAME.fullmatch(text) is None or catalogue_matches(text):
        return False
    # A label as long as a key, mixing letters and digits, is a credential with dots in it.
    return not any(looks_like_credential(label) for label in re.split(r"[.:/?#]", text))


def cookie_names(value: str, *, response: bool) -> list[str]:
    """The names of the cookies a ``set-cookie`` (``response``) or ``cookie`` header value carries."""
    pairs = value.split(";", 1)[:1] if response else value.split(";")
    return [pair.partition("=")[0].strip() for pair in pairs if "=" in pair and pair.partition("=")[0].strip()]


def _cookie_pairs(value: str, response: bool) -> tuple[list[tuple[str, str, str]], str]:
    """The (name with its ``=``, value, what follows the value) of each cookie in a ``cookie`` header, or of
    the one a ``set-cookie`` sets (then with the attributes after it, as sent). A cookie with no ``=`` is
    a value with no name."""
    if response:
        pair, semicolon, attributes = value.partition(";")
        pieces, rest = [pair], semicolon + attributes
    else:
        pieces, rest = value.split(";"), ""
    found = []
    for piece in pieces:
        name, equals, item = piece.partition("=")
        if not equals:
            name, item = "", name
        stripped = item.strip()
        lead = item[: len(item) - len(item.lstrip())]
        trail = item[len(item.rstrip()) :]
        found.append((name + equals + lead, stripped, trail))
    return found, rest


# A secret name's word may stand anywhere in a JSON key (``token_value``): what follows it up to the closing
# quote of the key is anything but a quote (found by ``bytes.find``), and then comes ``_AFTER_KEY``.
# What may follow that quote up to the key's colon, in the UTF-8 of lower-cased text: whitespace (any that
# ``\s`` in text matches: a byte of a character that isn't ASCII stands for it) and, in JSON nested in a
# JSON string, whitespace escaped (``\n``, ``\\u0020``, and so on at any depth). A key is always followed
# by a colon: text with a secret name's word followed by a quote and no colon (prose ending with
# "password") has no key to walk.
_AFTER_KEY = rb"[\s\x1c-\x1f\x80-\xff\\ntru0-9a-f]*:"
# JSON's escapes, read as two spaces where they stand for a separator (``\n``, ``\t``...) inside a key.
_JSON_ESCAPE = re.compile(rb"\\[bfnrt]|\\.")
# A sibling ``value`` member (``{"name": "MISTRAL_API_KEY", "value": ...}``), in lower-cased UTF-8.
_SIBLING_VALUE_BYTES = re.compile(rb'value\\*"')
# XML: an element holding text (``<SecretAccessKey>...</SecretAccessKey>``, SOAP's ``<wsse:Password>``), a
# start tag's attributes (``password="..."``, NuGet's ``<add key="ClearTextPassword" value="..."/>``).
_XML_ELEMENT = re.compile(
    r"<(?P<tag>(?:[A-Za-z_][\w.-]*:)?(?P<name>[A-Za-z_][\w.-]*))(?:\s[^<>]*)?>(?P<value>[^<]*)</(?P=tag)\s*>"
)
_XML_TAG = re.compile(r"<[A-Za-z_][\w:.-]*\s[^<>]*>")
_XML_ATTRIBUTE = re.compile(r"""(?P<name>[A-Za-z_][\w:.-]*)\s*=\s*(?P<q>["'])(?P<value>[^"'<>]*)(?P=q)""")
_XML_BYTES = re.compile(rb"</|/>|<[a-z_][\w:.-]*\s[^<>]*=")
# Every query or fragment parameter, also one inside another's value: a piece of the text may start there.
_PARAMETER = re.compile(rb"(?=[?&;#]([A-Za-z0-9_.%\-]{1,64})=[^&#\s\"'<>\\])")


class _Names(NamedTuple):
    """For the words of a redactor's secret names: the words searched for ("key" already finds "apikey":
    only words no other word is part of), the probe of what follows the closing quote of a JSON key
    (``_AFTER_KEY``, up to its colon), and the two searches of a redactor that has learned nothing."""

    words: tuple[str, ...]
    probe: re.Pattern[bytes]
    search: _Search
    prefilter: _Search


_DFA_PATTERNS = 400


class _Search(NamedTuple):
    """One pass over the UTF-8 of lower-cased text (Aho-Corasick, in Rust) finds, in this order, the
    catalogue's prefixes (for the prefilter only: redaction finds them in the text's tokens, and short ones
    occur in any prose), the secret names' last words, the catalogue's keywords and the redactor's learned
    forms (``forms``) lower-cased. ``words``, ``keywords`` and ``learned`` are where each group starts among
    the patterns; ``exact`` says that a learned form occurs in a text only where its lower case is found in
    the text's (every form is ASCII)."""

    finder: ahocorasick_rs.BytesAhoCorasick
    forms: tuple[str, ...]
    words: int
    keywords: int
    learned: int
    exact: bool

    @classmethod
    def build(cls, words: tuple[str, ...], forms: tuple[str, ...], *, with_prefixes: bool = False) -> _Search:
        # The prefilter's: the catalogue's prefixes, and the text media types of base64 payloads.
        prefixes = [prefix.lower() for prefix in PREFIX_PATTERNS] + list(_MEDIA_MARKERS) if with_prefixes else []
        lowered = sorted({form.encode("utf-8", "surrogatepass").lower() for form in forms})
        patterns = [*prefixes, *(word.encode() for word in words), *KEYWORD_PATTERNS, *lowered]
        keywords = len(prefixes) + len(words)
        # A DFA, which the library builds by itself for 100 patterns at most: twice as fast as its NFA, and
        # the defaults are more than 100. (Many learned forms make a DFA big: then the library chooses.)
        implementation = ahocorasick_rs.Implementation.DFA if len(patterns) <= _DFA_PATTERNS else None
        return cls(
            ahocorasick_rs.BytesAhoCorasick(patterns, implementation=implementation),
            forms,
            len(prefixes),
            keywords,
            keywords + len(KEYWORD_PATTERNS),
            all(form.isascii() for form in forms),
        )

    def scan(self, text: str) -> _Scan:
        lowered = text.lower()
        data = lowered.encode("utf-8", "surrogatepass")
        unsure = not text.isascii() and ("\u0130" in text or "\u212a" in text)
        return _new_scan((self, lowered, data, self.finder.find_matches_as_indexes(data, overlapping=True), unsure))


class _Scan(NamedTuple):
    """What a search found in a text: its lower case (not kept for a scan of bytes), that lower case's
    UTF-8 (``data``), the (pattern, start, end) of every pattern found there (``hits``), and whether the
    text holds U+0130 or the Kelvin sign, the only characters whose lower case holds an ASCII letter."""

    search: _Search
    lowered: str
    data: bytes
    hits: list[tuple[int, int, int]]
    unsure: bool

    @staticmethod
    def of_bytes(search: _Search, data: bytes) -> _Scan:
        """The scan of lower-cased UTF-8 (in which neither of those characters is)."""
        return _new_scan((search, "", data, search.finder.find_matches_as_indexes(data, overlapping=True), False))

    def may_hold_secret_key(
        self,
        probe: re.Pattern[bytes],
        named: Callable[[int, int], bool] | None = None,
        words: list[tuple[int, int]] | None = None,
    ) -> bool:
        """Whether a JSON key in the text may hold a secret name's word: ``probe`` (see ``_Names``) matches
        where one occurs, and ``named`` (given where the key starts and ends in ``data``) says it may be a
        secret name; ``words``, ``words()`` when the caller has it. Prose that merely mentions a token or a key
        is not walked as JSON. (In text holding U+0130 or the Kelvin sign, any name word is enough.)"""
        if not self.hits:
            return False
        if words is None:
            words = self.words()
        if words and self.unsure:
            return True
        data = self.data
        # The next quote after a word, and whether a key's colon follows it: shared by the words before it.
        after, quote, key = -1, -1, False
        for start, _ in words:
            if not after <= start <= quote:
                after, quote = start, data.find(b'"', start)
                if quote < 0:
                    continue
                key = probe.match(data, quote + 1) is not None
            if quote >= 0 and key and (named is None or named(data.rfind(b'"', 0, start) + 1, quote)):
                return True
        return False

    def words(self) -> list[tuple[int, int]]:
        """Where secret-name words are, in ``data``."""
        if not self.hits:
            return []
        first, end = self.search.words, self.search.keywords
        return [(start, stop) for index, start, stop in self.hits if first <= index < end]

    def keywords(self) -> list[int]:
        """The index in ``KEYWORD_PATTERNS`` of each catalogue keyword found."""
        if not self.hits:
            return []
        first, end = self.search.keywords, self.search.learned
        return [index - first for index, _, _ in self.hits if first <= index < end]

    def clear_of(self, forms: tuple[str, ...]) -> bool:
        """Whether the text surely holds none of ``forms``: the search's own forms, none found."""
        search = self.search
        return forms is search.forms and search.exact and (not self.hits or max(self.hits)[0] < search.learned)


_new_scan = functools.partial(tuple.__new__, _Scan)  # _Scan(*fields), without NamedTuple's Python __new__


def _names(words: frozenset[str]) -> _Names:
    searched = tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))
    return _Names(
        searched,
        re.compile(_AFTER_KEY),
        _Search.build(searched, ()),
        _Search.build(searched, (), with_prefixes=True),
    )


# Shared by the redactors with the same names (one per cassette): a program has few sets of them.
_NAMES: Memo[frozenset[str], _Names] = Memo(16)


def _occurrences(part: str, text: str) -> Iterable[int]:
    start = text.find(part)
    while start >= 0:
        yield start
        start = text.find(part, start + 1)


def _may_assign(data: bytes, words: list[tuple[int, int]]) -> bool:
    """Whether a secret name's word (at ``words`` in ``data``, lower-cased UTF-8) is in a name that a
    ``name: value`` or ``NAME=value`` assignment could have (the only texts ``_ASSIGNMENT`` is run on)."""
    return any(_ASSIGNMENT_TAIL.match(data, end) for _, end in words)


def _text_payload(obj: Mapping[Any, Any]) -> str | None:
    """The key of a base64 payload whose sibling says it is text (``media_type``, ``mime_type``,
    ``mimeType``: ``text/*``, JSON, XML, YAML...), or None."""
    if "data" not in obj or not isinstance(obj["data"], str):
        return None
    for key in ("media_type", "mime_type", "mimeType", "mediaType"):
        media = obj.get(key)
        if isinstance(media, str) and _TEXT_MEDIA.match(media):
            return "data"
    return None


_KEYWORD_FINDER = ahocorasick_rs.BytesAhoCorasick(KEYWORD_PATTERNS)


def _may_hold_keyword(data: bytes) -> bool:
    """Whether the lower case of ``data`` holds a catalogue keyword (of a format that isn't prefixed)."""
    return bool(_KEYWORD_FINDER.find_matches_as_indexes(data.lower()))


def _exact_finder(forms: tuple[str, ...]) -> ahocorasick_rs.BytesAhoCorasick:
    """A search for the learned forms as they are written in a cassette line: their UTF-8, and the JSON
    escapes ``encode_line`` writes."""
    patterns = {form.encode("utf-8", "surrogateescape") for form in forms}
    patterns |= {json.dumps(form, ensure_ascii=False)[1:-1].encode("utf-8", "surrogateescape") for form in forms}
    return ahocorasick_rs.BytesAhoCorasick(sorted(patterns))


def _has_ascii_escapes(text: str) -> bool:
    return ("%" in text and _PERCENT_ASCII.search(text) is not None) or (
        "\\u00" in text and _UNICODE_ASCII.search(text) is not None
    )


def _utf8(text: str | bytes) -> bytes | None:
    """The UTF-8 of ``text`` (of bytes that aren't, their ``surrogateescape`` text's), or None when the text
    holds U+0130 or the Kelvin sign, whose lower case holds an ASCII letter that the bytes' doesn't."""
    if isinstance(text, str):
        data = text.encode("utf-8", "surrogatepass")
    else:
        data = text
        if not data.isascii():
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                data = data.decode("utf-8", "surrogateescape").encode("utf-8", "surrogatepass")
    if data.isascii() or not any(special in data for special in _LOWERING_TO_ASCII):
        return data
    return None


def _may_hold_escape(data: bytes) -> bool:
    """A ``\\u`` escape, JSON's ``\\/``, the ``%XX`` of an ASCII character, or URL userinfo."""
    if (b"\\" in data and (b"\\u" in data or b"\\/" in data)) or (b"@" in data and b"://" in data):
        return True
    return b"%" in data and _PERCENT_ASCII_BYTES.search(data) is not None


def _decode_escapes(text: str) -> str:
    """``text`` with its ``%XX`` and ``\\uXXXX`` escapes (and JSON's ``\\/``) decoded."""

    def decode_unicode(match: re.Match[str]) -> str:
        try:
            decoded: str = json.loads(f'"{match.group()}"')
        except ValueError:
            return match.group()
        return decoded

    if "%" in text:
        text = _PERCENT_RUN.sub(lambda match: unquote(match.group(), errors="surrogateescape"), text)
    if "\\u" in text:
        text = _UNICODE_RUN.sub(decode_unicode, text)
    return text.replace("\\/", "/")


def _folded(key: str) -> str:
    return key.lower().replace("_", "")


def _enclosing_object(text: str, position: int) -> tuple[int, int] | None:
    """The ``{`` and the end (after its ``}``) of the innermost JSON object holding ``position``."""
    stack: list[int] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            rest = _JSON_STRING_REST.match(text, index + 1)
            if rest is None:
                return None
            index = rest.end()
            continue
        if char == "{":
            stack.append(index)
        elif char == "}" and stack:
            opening = stack.pop()
            if opening < position < index:
                return opening, index + 1
        index += 1
    return None


def _depths(text: str, opening: int, closing: int) -> Callable[[int], int]:
    """The object depth (1: directly inside the object opened at ``opening``) of a position in it."""
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
        if char in "{[":
            depth += 1
            marks.append((index, depth))
        elif char in "}]":
            depth -= 1
            marks.append((index, depth))
        index += 1

    def depth_at(position: int) -> int:
        current = 0
        for mark, value in marks:
            if mark >= position:
                break
            current = value
        return current

    return depth_at


def _words(name: str) -> tuple[str, ...]:
    """The words of a name: split at separators and changes of case, and run-together lower case split
    into the words of ``_DICTIONARY`` (``accesstoken``: access, token)."""
    if "%" in name or "\\" in name:
        name = _decode_escapes(name)
    words: list[str] = []
    for word in _WORD_SPLIT.split(name):
        if word:
            lowered = word.lower()
            words.extend(_split_run_together(lowered) if len(lowered) > 4 else (lowered,))
    return tuple(words)


def _ends_with(words: tuple[str, ...], suffixes: Iterable[tuple[str, ...]]) -> bool:
    return any(words[-len(suffix) :] == suffix for suffix in suffixes if len(words) >= len(suffix))


def has_credential_shape(value: str) -> bool:
    """A long run of credential characters holding both letters and digits: a key, not a word."""
    return looks_like_credential(value)


def _is_schema(value: Any) -> bool:
    """A JSON-schema definition: an object made only of schema keywords, with a type or its like."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(key in _SCHEMA_KEYWORDS for key in value)
        and any(key in _SCHEMA_MARKERS for key in value)
    )


def _string_leaves(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _string_leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _string_leaves(item)


def _json_value_end(text: str, start: int) -> int:
    """Where the JSON value starting at ``start`` ends (exclusive), or -1 when it doesn't end in ``text``."""
    if start >= len(text):
        return -1
    opening = text[start]
    if opening == '"':
        match = _JSON_STRING_REST.match(text, start + 1)
        return match.end() if match else -1
    if opening in "{[":
        depth, position = 0, start
        while position < len(text):
            char = text[position]
            if char == '"':
                match = _JSON_STRING_REST.match(text, position + 1)
                if not match:
                    return -1
                position = match.end()
                continue
            if char in "{[":
                depth += 1
            elif char in "}]":
                depth -= 1
                if depth == 0:
                    return position + 1
            position += 1
        return -1
    match = _JSON_SCALAR.match(text, start)
    return match.end() if match else -1


def _json_string(literal_body: str) -> str | None:
    try:
        value = json.loads(f'"{literal_body}"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _encoded_forms(value: str) -> set[str]:
    """The ways ``value`` is written in other parts of a call: raw, percent-encoded, JSON-escaped, and
    base64 (standard and URL-safe) at each of the three alignments a base64 window can have."""
    # A lone surrogate (from bytes decoded with surrogateescape) has no UTF-8: its bytes are percent-encoded.
    data = value.encode("utf-8", "surrogateescape")
    forms = {
        value,
        quote(data, safe=""),
        quote(data, safe="-_.~"),
        quote_plus(data),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
    }
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(data).decode("ascii")
        forms |= {whole, whole.rstrip("=")}
        for offset in range(3):
            encoded = encode(b"\0" * offset + data).decode("ascii")
            # Characters that depend on the value's bytes only: none of the offset's, none of what follows.
            forms.add(encoded[-(-4 * offset // 3) : 4 * (offset + len(data)) // 3])
    return {form for form in forms if len(form) >= MIN_PROPAGATED_LENGTH}


def _any_escaping(value: str) -> re.Pattern[str]:
    """A pattern for ``value`` written with any mix of raw, ``%XX`` and ``\\uXXXX`` characters."""

    def hex_digits(number: int, width: int) -> str:
        return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in f"{number:0{width}x}")

    parts = []
    for char in value:
        encoded = char.encode("utf-8", "surrogateescape")
        options = [re.escape(char), "".join("%" + hex_digits(byte, 2) for byte in encoded)]
        if ord(char) < 0x10000:
            options.append(r"\\u" + hex_digits(ord(char), 4))
        if char == "/":
            options.append(r"\\/")
        parts.append("(?:" + "|".join(options) + ")")
    return re.compile("".join(parts))


def _learnable(part: str) -> bool:
    """A part of a secret worth learning: long enough, no piece of the placeholder, not structure."""
    return (
        len(part) >= MIN_PROPAGATED_LENGTH
        and part not in PLACEHOLDER
        and PLACEHOLDER not in part
        and not is_structure(part)
    )


def _credential_parts(value: str) -> list[str]:
    """A secret value and what it carries: the credential of ``Scheme credential``, the ``user:password``
    inside ``Basic`` and its password, the values of ``name=value; name=value`` (cookies, connection
    strings)."""
    parts = [value]
    scheme = _AUTH_SCHEME.fullmatch(value.strip())
    if scheme:
        credential = scheme["credential"]
        parts.append(credential)
        if scheme["scheme"].lower() == "basic":
            try:
                decoded = base64.b64decode(credential + "=" * (-len(credential) % 4)).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                decoded = ""
            if ":" in decoded:
                parts += [decoded, decoded.partition(":")[2]]
    for piece in re.split(r"[;,&]", value):
        name, sep, item = piece.partition("=")
        if sep and name.strip():
            parts.append(item.strip())
    return parts


class RedactWithError(TypeError):
    """A ``redact_with`` function raised, or returned something that is not a string (the message names the
    function and what it did). A recording it breaks is not saved: closing raises a CassetteError that says so,
    and the live call goes on unharmed."""

    FIX = "make the function return the string it was given (with its secrets replaced), for every string"


def _function_name(function: Callable[[str], str]) -> str:
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    module = getattr(function, "__module__", None)
    return f"{module}.{name}" if module and module != "builtins" else str(name)


def _called(function: Callable[[str], str], text: str) -> str:
    """``function(text)``, which must be a string: else a RedactWithError naming the function."""
    try:
        result = function(text)
    except Exception as error:  # its message is left out: it may hold the string, secrets and all
        raise RedactWithError(
            f"redact_with function {_function_name(function)} raised {type(error).__name__}"
        ) from error
    if not isinstance(result, str):
        raise RedactWithError(
            f"redact_with function {_function_name(function)} returned {type(result).__name__}, not a string"
        )
    return result


class Redactor:
    """Finds and removes secrets. The default rules always apply; the arguments only add to them.

    ``names``: more secret names (matched as whole names and as name suffixes, case-insensitive).
    ``patterns``: regular expressions whose matches are replaced in every string.
    ``callables``: functions called with every string; they return it with their secrets replaced.

    One instance serves one cassette: every value it removes by name or shape is learned (``learn``) and
    removed from whatever it redacts afterwards. It is safe to share between threads.
    """

    def __init__(
        self,
        names: Iterable[str] = (),
        patterns: Iterable[str | re.Pattern[str]] = (),
        callables: Iterable[Callable[[str], str]] = (),
    ) -> None:
        extra = {_words(name) for name in names}
        self._names = frozenset({_words(name) for name in SECRET_FIELD_NAMES} | extra)
        self._query_names = frozenset(_words(name) for name in QUERY_SECRET_NAMES)
        self._suffixes = _SECRET_SUFFIXES + tuple(extra)
        # A JSON key can only be secret if the lower-cased text holds the last word of some secret name.
        words = frozenset(words[-1] for words in (*self._names, *self._suffixes) if words) | _ANYWHERE_WORDS | {"key"}
        self._words = _NAMES.get(words, lambda: _names(words))
        self._patterns = tuple(user_pattern(p, "redact_patterns") for p in patterns)  # RE2: linear time
        self._callables = tuple(callables)
        self._lock = threading.Lock()
        self._known: set[str] = set()
        self._learned: set[str] = set()  # values whose parts have been added to the known values
        self._forms: tuple[str, ...] = ()  # every form of every known value, longest first
        # Worked out once (the names and header values of a cassette repeat from call to call), and for the
        # learned forms as they are (a header value, and the search, are worked out again once one is learned).
        self._secret_names: Memo[tuple[str, int], bool] = Memo(4096)
        self._header_values: Memo[str, str] = Memo(4096)
        self._header_lists: Memo[tuple[tuple[str, str], ...], list[tuple[str, str]]] = Memo(1024)
        self._searches: Memo[tuple[str, ...], _Search] = Memo(1)
        self._prefilters: Memo[tuple[str, ...], _Search] = Memo(1)
        self._exact_finders: Memo[tuple[str, ...], ahocorasick_rs.BytesAhoCorasick] = Memo(1)

    # --- names -----------------------------------------------------------------------------------------

    def is_secret_name(self, name: str, *, query: bool = False, header: bool = False) -> bool:
        """Whether ``name`` (a JSON key, with ``header`` a header or an environment variable's name, with
        ``query`` a query parameter or form field) holds a secret. Case, separators, run-together words,
        ``%XX`` and ``\\uXXXX`` escapes don't matter."""
        kind = 2 if query else 1 if header else 0
        return self._secret_names.get((name, kind), lambda: self._names_a_secret(name, kind))

    def _names_a_secret(self, name: str, kind: int) -> bool:
        words = _words(name)
        if not words or _ends_with(words, _NOT_SECRET_SUFFIXES):
            return False
        if words in self._names or _ends_with(words, self._suffixes):
            return True
        if kind == 2 and (words in self._query_names or _ends_with(words, _QUERY_SECRET_SUFFIXES)):
            return True
        return _secret_by_word(words, loose=kind > 0)

    def _removes_value(self, name: str, value: Any, response: bool) -> bool:
        """Booleans, null and JSON-schema definitions are never secrets; a bare ``token`` in a response is a
        text token of logprobs unless it looks like a credential."""
        if value is None or isinstance(value, bool) or _is_schema(value) or not self.is_secret_name(name):
            return False
        if response and _words(name) == ("token",):
            return isinstance(value, str) and looks_like_credential(value)
        return True

    # --- known values ----------------------------------------------------------------------------------

    def learn(self, value: str) -> None:
        """Remove ``value`` (a secret seen elsewhere in this cassette), and its credential parts, from
        everything redacted from now on, in every encoding. Values shorter than 8 characters, and structure
        (``is_structure``: hostnames, paths, dates, plain numbers), are not learned."""
        if value in self._learned:  # its parts are known already: nothing is ever forgotten
            return
        fresh = [part for part in _credential_parts(value) if part not in self._known and _learnable(part)]
        with self._lock:
            self._learned.add(value)
            fresh = [part for part in fresh if part not in self._known]
            if not fresh:
                return
            self._known.update(fresh)
            forms = {form for part in fresh for form in _encoded_forms(part) if form not in PLACEHOLDER}
            if not forms.issubset(self._forms):
                self._forms = tuple(sorted(forms.union(self._forms), key=lambda form: (-len(form), form)))

    def _learn_all(self, values: Iterable[str]) -> None:
        for value in values:
            if len(value) >= MIN_PROPAGATED_LENGTH:
                self.learn(value)

    def _search(self, *, prefilter: bool = False) -> _Search:
        """The search (or the prefilter's) for the learned forms as they are, built once searched for."""
        forms = self._forms
        if not forms:
            return self._words.prefilter if prefilter else self._words.search
        if prefilter:
            return self._prefilters.get(
                forms, lambda: _Search.build(self._words.words, forms, with_prefixes=True), forms
            )
        return self._searches.get(forms, lambda: _Search.build(self._words.words, forms), forms)

    # --- the final pass at commit ------------------------------------------------------------------------

    def final_pass(self, line: bytes) -> bytes:
        """A cassette line (with its newline) without any value this redactor has learned, wherever it was
        learned: a token first seen under a name that isn't secret and later sent as ``Bearer T`` leaves the
        lines written before it too. Strings (keys included) lose every learned form; base64 payloads are
        decoded, searched as text and encoded again when one is found. A line holding none (one search of
        its bytes) is returned as it is."""
        if not self.holds_learned(line):
            return line
        try:
            obj = json.loads(line)
        except ValueError:
            return line  # not a line this pass can rewrite safely: the parser reports it
        scrubbed = self._scrub_learned(obj)
        return line if scrubbed == obj else encode_line(scrubbed)

    def holds_learned(self, data: bytes) -> bool:
        """Whether ``data`` (cassette lines) holds a learned form as a cassette line writes it (base64
        payloads included: a learned value's base64, at each alignment, is one of its forms)."""
        forms = self._forms
        if not forms:
            return False
        finder = self._exact_finders.get(forms, lambda: _exact_finder(forms), forms)
        return bool(finder.find_matches_as_indexes(data))

    @property
    def longest_learned(self) -> int:
        """The length in bytes of the longest form ``holds_learned`` searches for (at most)."""
        return max((len(form.encode("utf-8", "surrogateescape")) * 6 for form in self._forms[:1]), default=0)

    def _scrub_learned(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self._remove_known(obj)
        if isinstance(obj, dict):
            return {
                (self._remove_known(key) if isinstance(key, str) else key): (
                    self._scrub_base64(value)
                    if key == "base64" and isinstance(value, str)
                    else self._scrub_learned(value)
                )
                for key, value in obj.items()
            }
        if isinstance(obj, list):
            return [self._scrub_learned(item) for item in obj]
        return obj

    def _scrub_base64(self, payload: str) -> str:
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            return payload
        text = data.decode("utf-8", "surrogateescape")
        scrubbed = self._remove_known(text)
        if scrubbed == text:
            return payload
        return base64.b64encode(scrubbed.encode("utf-8", "surrogateescape")).decode("ascii")

    def _remove_known(self, text: str) -> str:
        for form in self._forms:  # longest first
            if form in text:
                text = text.replace(form, PLACEHOLDER)
        return text

    # --- text ------------------------------------------------------------------------------------------

    def redact_text(self, text: str, *, response: bool = False) -> str:
        """Replace every secret in free text: secret-named JSON, query, fragment and form values, catalogued
        credential shapes, URL userinfo and path credentials, and every value this redactor has learned;
        in each case also when written percent-encoded or ``\\u``-escaped."""
        if text == PLACEHOLDER:
            return text
        escaped_names = False
        if ("%" in text or "\\u00" in text) and _has_ascii_escapes(text):
            text, escaped_names = self._redact_escaped(text, response)
        scan = (self._search() if self._forms else self._words.search).scan(text)
        found: list[str] = []
        redacted = self._redact_builtin(text, scan, response, found, escaped_names)
        if found:
            self._learn_all(found)
        if self._forms and (redacted is not text or not scan.clear_of(self._forms)):
            redacted = self._remove_known(redacted)
        for pattern in self._patterns:
            redacted = pattern.sub(PLACEHOLDER, redacted)
        for function in self._callables:
            redacted = _called(function, redacted)
        return redacted

    def _redact_escaped(self, text: str, response: bool) -> tuple[str, bool]:
        """``text`` without the secrets that only its ``%XX`` and ``\\u`` escapes decoded show (learned), and
        whether a secret name's word shows only then."""
        decoded = _decode_escapes(text)
        if decoded == text:
            return text, False
        scan = self._search().scan(decoded)
        hidden: list[str] = []
        self._redact_builtin(decoded, scan, response, hidden)
        hidden += [value for value in self._known if value in decoded]
        for value in hidden:
            if len(value) >= MIN_PROPAGATED_LENGTH and PLACEHOLDER not in value:
                text = _any_escaping(value).sub(PLACEHOLDER, text)
        self._learn_all(hidden)
        return text, any(map(scan.lowered.__contains__, self._words.words))

    def _redact_builtin(
        self, text: str, scan: _Scan, response: bool, found: list[str], escaped_names: bool = False
    ) -> str:
        """The default rules over ``text`` (``scan`` is the search's pass over it); every value removed is
        appended to ``found``. ``escaped_names``: the text holds a secret name only once its escapes are
        decoded."""
        original = text
        words = scan.words()
        if '"' in text and (
            escaped_names
            or (
                bool(words)
                and (
                    scan.may_hold_secret_key(self._words.probe, self._key_at_positions(text, scan), words)
                    # a sibling naming a secret: a name word somewhere, and a "value" member
                    or (b"value" in scan.data and _SIBLING_VALUE_BYTES.search(scan.data) is not None)
                )
            )
        ):
            text = self._redact_json_names(text, response, found)
        if words and (":" in text or "=" in text) and _may_assign(scan.data, words):
            text = _ASSIGNMENT.sub(lambda match: self._replace_assignment(match, response, found), text)
        if "=" in text:
            text = _QUERY.sub(lambda match: self._replace_query(match, found), text)
        if "base64," in text and "data:" in text:
            text = _TEXT_DATA_URL_IN_TEXT.sub(
                lambda match: match["head"] + self._redact_base64_text(match["payload"], response), text
            )
        if words and "<" in text and _XML_BYTES.search(scan.data):
            text = self._redact_xml(text, response, found)
        if "://" in text:
            if "@" in text:
                text = _USERINFO.sub(lambda match: self._replace_userinfo(match, found), text)
            text = _URL.sub(lambda match: self._redact_url_path(match.group(), found), text)
        # The catalogue finds keywords by their positions in the lower-cased text: of the text as it is now.
        if text is not original:
            return self._redact_shapes(text, text.lower(), found)
        return self._redact_shapes(text, scan.lowered, found, scan.keywords())

    def _redact_shapes(
        self, text: str, lowered: str | None, found: list[str], keywords: list[int] | None = None
    ) -> str:
        matches = catalogue_matches(text, lowered, keywords)
        if not matches:
            return text
        spans = sorted((start, end) for start, end, _ in matches)
        pieces, position = [], 0
        for start, end in spans:
            if end <= position:
                continue
            start = max(start, position)
            found.append(text[start:end])
            pieces += [text[position:start], PLACEHOLDER]
            position = end
        return "".join(pieces) + text[position:]

    def _redact_url_path(self, url: str, found: list[str]) -> str:
        """Path segments of a URL that are credentials by shape: ``/v1/keys/sk-.../``, bot tokens."""
        authority_end = url.find("/", url.find("://") + 3)
        if authority_end < 0:
            return url
        head, path = url[:authority_end], url[authority_end:]
        return head + _PATH_SEGMENT.sub(lambda match: self._redact_shapes(match.group(), None, found), path)

    def _replace_userinfo(self, match: re.Match[str], found: list[str]) -> str:
        """``scheme://user:password@``, and ``scheme://TOKEN@`` when the user is a credential."""
        user, password = match["user"], match["password"]
        if not user and not password:
            return match.group()
        if password is None and not (looks_like_credential(user) or catalogue_matches(user)):
            return match.group()
        found += [user, password] if password else [user]
        return match["scheme"] + PLACEHOLDER + "@"

    def _redact_json_names(self, text: str, response: bool, found: list[str]) -> str:
        if '\\"' in text:
            text = _NESTED_JSON.sub(lambda match: self._redact_nested_json(match, response, found), text)
        return self._redact_json_values(text, response, found)

    def _redact_nested_json(self, match: re.Match[str], response: bool, found: list[str]) -> str:
        """A JSON string holding JSON text (a tool call's ``arguments``): its secret-named values go too."""
        body = match["body"]
        inner = _json_string(body)
        if inner is None or '"' not in inner:
            return match.group()
        redacted = self._redact_json_names(inner, response, found)
        if redacted == inner:
            return match.group()
        return json.dumps(redacted, ensure_ascii=body.isascii())

    def _redact_json_values(self, text: str, response: bool, found: list[str]) -> str:
        """JSON text: the whole value of every secret-named key (string, number, object or array), except
        booleans, null and JSON-schema objects, and of a ``value`` a sibling names a secret (see
        ``_sibling_values``)."""
        pieces, position = [], 0
        named = self._sibling_named_values(text) if _SIBLING_VALUE.search(text) else set()
        for match in _JSON_KEY.finditer(text):
            start = match.end()
            if match.start() < position:
                continue
            if start in named:
                end = _json_value_end(text, start)
                if end > 0 and text[start:end] not in (_QUOTED_PLACEHOLDER, "true", "false", "null"):
                    raw = text[start:end]
                    found.append((_json_string(raw[1:-1]) or raw[1:-1]) if raw[0] == '"' else raw)
                    pieces += [text[position:start], _QUOTED_PLACEHOLDER]
                    position = end
                continue
            if not self.is_secret_name(match["key"]):
                continue
            end = _json_value_end(text, start)
            if end < 0 or text[start:end] == _QUOTED_PLACEHOLDER:
                continue
            raw = text[start:end]
            value: Any
            if raw[0] == '"':
                value = _json_string(raw[1:-1])
                value = raw[1:-1] if value is None else value
            elif raw[0] in "{[":
                try:
                    value = json.loads(raw)
                except ValueError:
                    value = raw
            else:
                value = {"true": True, "false": False, "null": None}.get(raw, raw)
            if not self._removes_value(match["key"], value, response):
                continue
            found.extend(_string_leaves(value))
            pieces += [text[position:start], _QUOTED_PLACEHOLDER]
            position = end
        return "".join(pieces) + text[position:] if pieces else text

    def _sibling_named_values(self, text: str) -> set[int]:
        """Where the values start (in JSON ``text``) that a sibling names as secrets (``_sibling_values``)."""
        starts: set[int] = set()
        for match in _SIBLING_NAME.finditer(text):
            name = _json_string(match["name"])
            if name is None or not self.is_secret_name(name, header=True):
                continue
            bounds = _enclosing_object(text, match.start())
            if bounds is None:
                continue
            opening, closing = bounds
            depth_of = _depths(text, opening, closing)
            for key in _JSON_KEY.finditer(text, opening, closing):
                if depth_of(key.start()) == 1 and _folded(_json_string(key["key"]) or "") in _SIBLING_VALUE_KEYS:
                    starts.add(key.end())
        return starts

    def _redact_xml(self, text: str, response: bool, found: list[str]) -> str:
        """XML's secret-named elements and attributes lose their text (an attribute named by its sibling
        ``key`` or ``name``, too); the markup stays."""

        def element(match: re.Match[str]) -> str:
            value = match["value"]
            name = match["name"]
            if not value.strip() or not self._assigns_secret(name, value.strip(), response):
                return match.group()
            found.append(value.strip())
            start, end = match.start("value") - match.start(), match.end("value") - match.start()
            return match.group()[:start] + PLACEHOLDER + match.group()[end:]

        def tag(match: re.Match[str]) -> str:
            attributes = list(_XML_ATTRIBUTE.finditer(match.group()))
            named = any(a["name"].lower() in ("key", "name") and self.is_secret_name(a["value"]) for a in attributes)
            pieces, position = [], 0
            for attribute in attributes:
                value, name = attribute["value"], attribute["name"].rpartition(":")[2]
                secret = (named and name.lower() == "value") or self._assigns_secret(name, value, response)
                if value and secret:
                    found.append(value)
                    pieces += [match.group()[position : attribute.start("value")], PLACEHOLDER]
                    position = attribute.end("value")
            return "".join(pieces) + match.group()[position:] if pieces else match.group()

        if "</" in text:
            text = _XML_ELEMENT.sub(element, text)
        if "=" in text:
            text = _XML_TAG.sub(tag, text)
        return text

    def _replace_assignment(self, match: re.Match[str], response: bool, found: list[str]) -> str:
        """A ``name: value`` or ``NAME=value`` line of free text (a prompt, a file pasted in one) whose name
        is a secret's: the value goes."""
        value = match["value"]
        if not self._assigns_secret(match["name"], value, response):
            return match.group()
        found.append(value)
        return match.group()[: match.start("value") - match.start()] + PLACEHOLDER

    def _assigns_secret(self, name: str, value: str, response: bool) -> bool:
        if value.lower() in ("true", "false", "null", "none") or PLACEHOLDER in value:
            return False
        if _ENV_NAME.fullmatch(name):
            secret = self.is_secret_name(name, header=True)
        else:
            secret = self.is_secret_name(name)
        if secret and response and _words(name) == ("token",):
            return looks_like_credential(value)
        return secret

    def _replace_query(self, match: re.Match[str], found: list[str]) -> str:
        value = match["value"]
        if value != PLACEHOLDER and self.is_secret_name(match["name"], query=True):
            found += [value, unquote_plus(value)]
            return f"{match['sep']}{match['name']}={PLACEHOLDER}"
        return match.group(0)

    # --- structures ------------------------------------------------------------------------------------

    def redact_value(self, obj: Any, *, response: bool = False) -> Any:
        """Walk a dumped structure: secret-named keys lose their whole value (booleans, null and schemas
        excepted), keys and strings lose secrets as in ``redact_text``. Values under secret names are
        learned first, so they leave the rest of the structure too."""
        self._learn_all(self._named_values(obj, response))
        return self._redact_structure(obj, response)

    def _named_values(self, obj: Any, response: bool) -> Iterable[str]:
        if isinstance(obj, Mapping):
            siblings = self._sibling_values(obj)
            for key, value in obj.items():
                if key in siblings or (isinstance(key, str) and self._removes_value(key, value, response)):
                    yield from _string_leaves(value)
                else:
                    yield from self._named_values(value, response)
        elif isinstance(obj, list | tuple):
            for item in obj:
                yield from self._named_values(item, response)

    def _redact_structure(self, obj: Any, response: bool) -> Any:
        if isinstance(obj, str):
            if obj.startswith("data:") and _TEXT_DATA_URL.match(obj):
                head, _, payload = obj.partition(",")
                return head + "," + self._redact_base64_text(payload, response)
            return self.redact_text(obj, response=response)
        if isinstance(obj, Mapping):
            redacted: dict[Any, Any] = {}
            siblings = self._sibling_values(obj)
            text_data = _text_payload(obj)
            for key, value in obj.items():
                if key in siblings or (isinstance(key, str) and self._removes_value(key, value, response)):
                    value = PLACEHOLDER
                elif key == text_data:
                    value = self._redact_base64_text(value, response)
                else:
                    value = self._redact_structure(value, response)
                if isinstance(key, str):
                    new_key = self.redact_text(key, response=response)
                    if new_key != key:  # a secret used as a key: keep the other entries apart
                        base, number = new_key, 2
                        while new_key in redacted or new_key in obj:
                            new_key, number = f"{base} {number}", number + 1
                    key = new_key
                redacted[key] = value
            return redacted
        if isinstance(obj, list | tuple):
            return [self._redact_structure(item, response) for item in obj]
        return obj

    def redact_binary(self, data: bytes) -> bytes:
        """The bytes of a binary body or part (an octet-stream upload, a multipart file) without what can be
        told as a secret with no text around it: the catalogue's credential shapes and the values learned.
        Every other byte is kept; what is found is learned."""
        text = data.decode("latin-1")  # one character per byte: the shapes and forms are ASCII
        found: list[str] = []
        redacted = (
            self._redact_shapes(text, None, found) if may_hold_prefixed(data) or _may_hold_keyword(data) else text
        )
        self._learn_all(found)
        if self._forms and self.holds_learned(data):
            redacted = self._remove_known(redacted)
        return data if redacted == text else redacted.encode("latin-1", "replace")

    def _redact_base64_text(self, payload: str, response: bool) -> str:
        """A base64 payload of a text media type (an Anthropic ``document``, an OpenAI ``file_data`` data URL,
        Gemini ``inline_data``): decoded, redacted as text and encoded again when it held a secret; as it
        came when it isn't base64 of UTF-8 text."""
        try:
            text = base64.b64decode(payload, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return self.redact_text(payload, response=response)
        redacted = self.redact_text(text, response=response)
        if redacted == text:
            return self.redact_text(payload, response=response)
        return base64.b64encode(redacted.encode("utf-8")).decode("ascii")

    def _sibling_values(self, obj: Mapping[Any, Any]) -> list[str]:
        """The keys of the values a sibling names as secrets: ``{"name": "MISTRAL_API_KEY", "value": ...}``
        (Kubernetes, Vercel, ECS), ``{"Name": "/prod/db/password", "Type": ..., "Value": ...}`` (SSM)."""
        if len(obj) > 12 or not any(isinstance(key, str) and _folded(key) in _SIBLING_VALUE_KEYS for key in obj):
            return []
        if not any(
            isinstance(key, str)
            and _folded(key) in _SIBLING_NAME_KEYS
            and isinstance(name, str)
            and len(name) < 200
            and self.is_secret_name(name, header=True)
            for key, name in obj.items()
        ):
            return []
        return [
            key
            for key, value in obj.items()
            if isinstance(key, str)
            and _folded(key) in _SIBLING_VALUE_KEYS
            and value is not None
            and not isinstance(value, bool)
        ]

    def redact_headers(self, pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Secret-named headers lose their value (learned, with its credential parts), but for cookies: a
        ``cookie`` header loses each cookie's value, a ``set-cookie`` header the value of the cookie it sets,
        and both keep the cookies' names and a ``set-cookie``'s attributes (only the values are learned).
        The other headers are redacted as text."""
        pairs = tuple(pairs)
        if self._callables:  # a user's function may not answer the same twice
            return self._redacted_headers(pairs)
        # Header lists repeat from call to call (what they lead to be learned was learned the first time).
        try:
            return list(self._header_lists.get(pairs, lambda: self._redacted_headers(pairs), self._forms))
        except TypeError:  # pairs given as lists: redacted, not remembered
            return self._redacted_headers(tuple(map(tuple, pairs)))  # type: ignore[arg-type]

    def _redacted_headers(self, pairs: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
        secret = [self.is_secret_name(name, header=True) for name, _ in pairs]
        for (name, value), is_secret in zip(pairs, secret, strict=True):
            if not is_secret:
                continue
            lower = name.lower()
            if lower in _COOKIE_HEADERS:
                for _, item, _ in _cookie_pairs(value, lower == "set-cookie")[0]:
                    self.learn(item)
            else:
                self.learn(value)
        return [
            (name, self._secret_header_value(name, value) if is_secret else self._header_value(value))
            for (name, value), is_secret in zip(pairs, secret, strict=True)
        ]

    def _secret_header_value(self, name: str, value: str) -> str:
        """What a secret-named header keeps: nothing, or the shape of its cookies (see ``redact_headers``)."""
        lower = name.lower()
        if lower not in _COOKIE_HEADERS:
            return PLACEHOLDER
        pairs, rest = _cookie_pairs(value, lower == "set-cookie")
        kept = [head + (PLACEHOLDER if item else "") + tail for head, item, tail in pairs]
        return ";".join(kept) + (self.redact_text(rest) if rest else "")

    def _header_value(self, value: str) -> str:
        """``redact_text(value)``: header values repeat from call to call (a user's function excepted)."""
        if self._callables:
            return self.redact_text(value)
        return self._header_values.get(value, lambda: self.redact_text(value), self._forms)

    def redact_form(self, text: str) -> str:
        """A form-encoded body: each field named like a secret loses its value (learned, decoded); the rest
        keep their bytes unless they hold a secret."""
        fields = [field.partition("=") for field in text.split("&")]
        for name, sep, value in fields:
            if sep and self.is_secret_name(name, query=True):
                self._learn_all([value, unquote_plus(value)])
        redacted = []
        for name, sep, value in fields:
            secret = sep and self.is_secret_name(name, query=True)
            redacted.append(f"{name}={PLACEHOLDER}" if secret else self.redact_text(name + sep + value))
        return "&".join(redacted)

    # --- prefilter -------------------------------------------------------------------------------------

    @property
    def learned_forms(self) -> tuple[str, ...]:
        """Every form of every value learned so far: a new tuple whenever one is learned, so that a caller
        holding it can tell by identity that nothing was learned since."""
        return self._forms

    def could_redact(self, text: str | bytes) -> bool:
        """Whether ``redact_text`` could change ``text`` (or its UTF-8, bytes that aren't being read with
        ``surrogateescape``) or a piece of it, or ``redact_value`` the keys and strings of it read as JSON.
        False only when none of the redactor's rules can apply: no user pattern or callable, no ``\\u``
        escape or JSON's ``\\/``, no ``%XX`` of an ASCII character, no URL userinfo, no catalogue prefix
        anywhere, no catalogue keyword in its lower case, no secret name's word at the end of a JSON key, no
        secret-named query or fragment parameter after its ``?``, ``&``, ``;`` or ``#``, no form of a learned
        value. (Not a prefilter for ``redact_form``: a form's first field has no separator before it.)
        Answered from the UTF-8 in one pass over its lower case (for catalogue prefixes, name words,
        keywords and learned forms at once); only what that finds is looked at further. Learns nothing."""
        if self._patterns or self._callables:
            return True
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        if not data.isascii():
            utf8 = _utf8(text)
            if utf8 is None:
                return True
            data = utf8
        if _may_hold_escape(data):
            return True
        # The text's ASCII characters are its UTF-8's ASCII bytes, and no other character lower-cases to an
        # ASCII one (but the two ``_utf8`` leaves out): an ASCII pattern occurring in the UTF-8 of the text's
        # lower case occurs in the lower case of the bytes, and so does a learned form's UTF-8.
        search = self._search(prefilter=True) if self._forms else self._words.prefilter
        lowered = data.lower()
        hits = search.finder.find_matches_as_indexes(lowered, overlapping=True)
        if hits and self._found_may_redact(data, _new_scan((search, "", lowered, hits, False))):
            return True
        return b"=" in data and any(
            self.is_secret_name(match[1].decode("ascii"), query=True) for match in _PARAMETER.finditer(data)
        )

    def _found_may_redact(self, data: bytes, scan: _Scan) -> bool:
        """Whether what the search found in ``data`` may be redacted: a keyword or a learned form, a
        catalogue prefix (in its case), a secret name's word that may end a JSON key."""
        search, hits = scan.search, scan.hits
        if max(hits)[0] >= search.keywords:
            return True  # a keyword, or perhaps a learned form
        if min(hits)[0] < search.words and (may_hold_prefixed(data) or _TEXT_MEDIA_BYTES.search(scan.data)):
            return True  # a catalogue prefix, or a base64 payload of a text type (``_redact_base64_text``)
        if (b":" in data or b"=" in data) and _may_assign(scan.data, scan.words()):
            return True
        if b"<" in data and _XML_BYTES.search(scan.data) and scan.words():
            return True  # XML whose element or attribute may be a secret's
        return b'"' in data and self._may_hold_key(data, scan)

    def _key_at_positions(self, text: str, scan: _Scan) -> Callable[[int, int], bool]:
        """For ``may_hold_secret_key``: whether the key of ``text`` between two positions of its lower case's
        UTF-8 (``scan.data``) may be secret, read in ``text`` itself. Lower-casing keeps the number of
        characters (but for U+0130, with which ``may_hold_secret_key`` doesn't ask), so the key's characters
        are at the same places in the text."""
        if text.isascii():
            return lambda start, end: self._key_may_be_secret(text[start:end])

        def named(start: int, end: int) -> bool:
            data = scan.data
            first = len(data[:start].decode("utf-8", "surrogatepass"))
            last = first + len(data[start:end].decode("utf-8", "surrogatepass"))
            return self._key_may_be_secret(text[first:last])

        return named

    def _key_may_be_secret(self, name: str) -> bool:
        """Whether a JSON key (as written) may be a secret name, once its escapes are decoded."""
        if "\\" in name:
            decoded = _json_string(name)
            return decoded is None or self.is_secret_name(decoded) or self.is_secret_name(name)
        return self.is_secret_name(name)

    def _may_hold_key(self, data: bytes, scan: _Scan) -> bool:
        """Whether a secret name may be a JSON key in ``data``, or name a sibling ``value`` (see
        ``_sibling_values``): in it, or in it read as JSON, whose ``\\n``, ``\\t``, ``\\r``, ``\\b`` and
        ``\\f`` are separators there (each read as two spaces)."""
        if b"value" in scan.data and _SIBLING_VALUE_BYTES.search(scan.data) and scan.words():
            return True

        def named(start: int, end: int) -> bool:
            # The key in ``data`` (the same positions as in its lower case).
            return self._key_may_be_secret(data[start:end].decode("utf-8", "surrogateescape"))

        probe = self._words.probe
        if scan.may_hold_secret_key(probe, named):
            return True
        if b"\\" not in data or not scan.words():
            return False
        view = _JSON_ESCAPE.sub(lambda match: b"  " if match[0][1:] in b"bfnrt" else match[0], data).lower()
        return _Scan.of_bytes(scan.search, view).may_hold_secret_key(probe, named)


def remove_secret_values(obj: Any) -> Any:
    """Return a dumped structure with every secret replaced by ``[secret removed]``, by the default rules
    (with a redactor of its own: nothing is learned across calls)."""
    return Redactor().redact_value(obj)
