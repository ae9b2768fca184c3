"""Credentials written in an encoding the other rules read as plain characters: hex, HTML numeric entities
(``&#115;&#107;``, ``&#x73;``), ``\\xNN`` escapes, double percent-encoding (``%252D``) and base64 runs in
prose. The ``Encoded`` rule (``_rules``) decodes a candidate token and redacts what it decodes to; a token
whose decoding holds a secret is removed whole.

Work stays bounded: the search (``_search``) looks for ``ENCODED_NEEDLES`` (the hex and base64 forms of the
commonest key prefixes, lower-cased, and the marks ``&#``, ``\\x`` and ``%25``) in its one pass; a
token is decoded once, only when at most ``MAX_TOKEN`` characters long and only when it decodes to printable
UTF-8 text. Base64 media (an image, audio: ``data``, ``b64_json``, data URLs) decode to bytes that aren't
text, or are longer than any token: they are never changed."""

from __future__ import annotations

import base64
import binascii
import bisect
import html
import re
from collections.abc import Callable
from urllib.parse import unquote

__all__ = ["ENCODED_NEEDLES", "MAX_TOKEN", "decoded_tokens"]

MAX_TOKEN = 4096  # characters: longer runs are media or data, not a key written in prose
# The prefixes whose hex and base64 forms the search looks for: the LLM vendors' and the commonest others'.
_PREFIXES = (
    *(b"sk-proj-", b"sk-ant-", b"sk-svcacct-", b"sk-admin-", b"github_pat_", b"ghp_", b"gho_", b"ghs_", b"glpat-"),
    *(b"AKIA", b"ASIA", b"AIza", b"xoxb-", b"xoxp-", b"hf_", b"gsk_", b"xai-", b"sk-"),
)
_MIN_BASE64_NEEDLE = 5  # shorter lower-cased needles occur in prose by chance


def _base64_needles(prefix: bytes) -> set[bytes]:
    """The characters of ``prefix``'s base64 (standard and URL-safe, lower-cased) that depend on its bytes
    only, at each of the three alignments a base64 window can have."""
    needles = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):
            encoded = encode(b"\0" * offset + prefix)
            needle = encoded[-(-4 * offset // 3) : 4 * (offset + len(prefix)) // 3].lower()
            if len(needle) >= _MIN_BASE64_NEEDLE:
                needles.add(needle)
    return needles


# What the encodings rule looks for in the lower case of a text: the marks of entities, escapes and double
# percent-encoding, and the hex and base64 forms of the prefixes.
_LITERAL_PROBES = (b"&#", b"\\x", b"%25")
_ENCODED_PREFIXES = sorted({p.hex().encode() for p in _PREFIXES} | {n for p in _PREFIXES for n in _base64_needles(p)})
ENCODED_NEEDLES: tuple[bytes, ...] = _LITERAL_PROBES + tuple(_ENCODED_PREFIXES)
# A hex or base64 token is decoded only when it holds one (so the rule changes only what its probe found).
_ENCODED_PREFIX = re.compile("|".join(re.escape(needle.decode()) for needle in _ENCODED_PREFIXES))

_HEX = re.compile(r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}){10,}(?![0-9A-Za-z])")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/_=-])")
# Maximal runs of encoded and plain key characters (no backtracking: linear), kept when they hold the mark.
_ENTITIES = re.compile(r"(?:&#(?:[xX][0-9A-Fa-f]{1,6}|[0-9]{1,7});|[A-Za-z0-9_.\-])+")
# ``\xNN``, also JSON-escaped (``\\xNN``: a string of a JSON text)
_ESCAPES = re.compile(r"(?:\\{1,2}x[0-9A-Fa-f]{2}|[A-Za-z0-9_.\-])+")
_DOUBLE_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2}|[A-Za-z0-9_.~\-])+")


def _text(data: bytes) -> str | None:
    """``data`` as text when it is printable UTF-8 (white space allowed), else None: media never is."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text.replace("\n", " ").replace("\r", " ").replace("\t", " ").isprintable() else None


def _from_hex(token: str) -> str | None:
    return _text(bytes.fromhex(token))


def _from_base64(token: str) -> str | None:
    padded = token.rstrip("=") + "=" * (-len(token.rstrip("=")) % 4)
    decode = base64.urlsafe_b64decode if ("-" in token or "_" in token) else base64.b64decode
    try:
        return _text(decode(padded.encode("ascii")))
    except (binascii.Error, ValueError):
        return None


def _from_entities(token: str) -> str | None:
    return html.unescape(token)


def _from_escapes(token: str) -> str | None:
    data = re.sub(r"\\{1,2}x([0-9A-Fa-f]{2})", lambda match: chr(int(match[1], 16)), token)
    return _text(data.encode("latin-1"))


def _from_double_percent(token: str) -> str | None:
    return unquote(unquote(token, errors="strict"), errors="strict")


# (mark a token must hold, or None for the search's needles; token pattern; decoder)
_DECODINGS: tuple[tuple[str | None, re.Pattern[str], Callable[[str], str | None]], ...] = (
    ("&#", _ENTITIES, _from_entities),
    ("\\x", _ESCAPES, _from_escapes),
    ("%25", _DOUBLE_PERCENT, _from_double_percent),
    (None, _HEX, _from_hex),
    (None, _BASE64, _from_base64),
)


def decoded_tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, decoded text) of each candidate token of ``text`` that decodes to other printable text,
    at most ``MAX_TOKEN`` characters long, in order; tokens don't overlap (the first decoding to claim one
    keeps it). Linear: each pattern finds maximal runs, and sorted runs merge."""
    taken: list[tuple[int, int, str]] = []
    for mark, pattern, decode in _DECODINGS:
        if mark is None or mark in text:
            taken = sorted(taken + _decoded(text, mark, pattern, decode, taken))  # two sorted runs: merged
    return taken


def _holds(token: str, mark: str | None) -> bool:
    """Whether ``token`` holds its decoding's mark (hex and base64: an encoded prefix, in its lower case)."""
    return mark in token if mark is not None else _ENCODED_PREFIX.search(token.lower()) is not None


def _overlaps(taken: list[tuple[int, int, str]], start: int, end: int) -> bool:
    index = bisect.bisect_left(taken, (start,))
    return (index < len(taken) and taken[index][0] < end) or (index > 0 and taken[index - 1][1] > start)


def _decoded(
    text: str,
    mark: str | None,
    pattern: re.Pattern[str],
    decode: Callable[[str], str | None],
    taken: list[tuple[int, int, str]],
) -> list[tuple[int, int, str]]:
    """The tokens ``pattern`` finds in ``text`` (holding ``mark``, none overlapping ``taken``) that ``decode``
    changes."""
    found: list[tuple[int, int, str]] = []
    for match in pattern.finditer(text):
        start, end = match.span()
        token = match.group()
        if end - start > MAX_TOKEN or not _holds(token, mark) or _overlaps(taken, start, end):
            continue
        try:
            decoded = decode(token)
        except (UnicodeError, ValueError):
            continue
        if decoded is not None and decoded != token:
            found.append((start, end, decoded))
    return found
