"""Credentials written in an encoding the other rules read as plain characters: hex, HTML numeric entities
(``&#115;``, ``&#x73;``), ``\\xNN`` escapes, double percent-encoding (``%252D``) and base64 runs in prose. The
``Encoded`` rule (``_rules``) redacts what a token decodes to and removes a token whose decoding held a secret.

Bounded work: the search (``_search``) finds ``ENCODED_NEEDLES`` (the marks ``&#``, ``\\x``, ``%25`` and the hex
and base64 forms of the commonest key prefixes) in its one pass; a token is decoded once, only when at most
``MAX_TOKEN`` characters long, and kept only when it decodes to printable UTF-8. Base64 media decode to bytes
that aren't text, or are longer than any token: they are never changed."""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import re
from collections.abc import Callable, Iterator
from urllib.parse import unquote

__all__ = ["ENCODED_NEEDLES", "MAX_TOKEN", "decoded_tokens"]

MAX_TOKEN = 4096  # characters: longer runs are media or data, not a key written in prose
# The prefixes whose hex and base64 forms the search looks for: the LLM vendors' and the commonest others'.
_PREFIXES = b"sk-proj- sk-ant- sk-svcacct- sk-admin- github_pat_ ghp_ gho_ ghs_ glpat- AKIA ASIA AIza xoxb- xoxp-"
_PREFIXES += b" hf_ gsk_ xai- sk-"


def _base64_needles(prefix: bytes) -> set[bytes]:
    """The lower case of the characters of ``prefix``'s base64 (standard and URL-safe) that depend on its bytes
    only, at each of the three alignments of a base64 window; five or more (shorter ones occur by chance)."""
    needles = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):
            needle = encode(b"\0" * offset + prefix)[-(-4 * offset // 3) : 4 * (offset + len(prefix)) // 3].lower()
            needles |= {needle} if len(needle) >= 5 else set()
    return needles


_ENCODED_PREFIXES = sorted({n for p in _PREFIXES.split() for n in (p.hex().encode(), *_base64_needles(p))})
ENCODED_NEEDLES: tuple[bytes, ...] = (b"&#", b"\\x", b"%25", *_ENCODED_PREFIXES)


def _text(data: bytes) -> str | None:
    """``data`` as text when it is printable UTF-8 (white space allowed), else None: media never is."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text.replace("\n", " ").replace("\r", " ").replace("\t", " ").isprintable() else None


def _from_base64(token: str) -> str | None:
    padded = token.rstrip("=") + "=" * (-len(token.rstrip("=")) % 4)
    decode = base64.urlsafe_b64decode if ("-" in token or "_" in token) else base64.b64decode
    try:
        return _text(decode(padded.encode("ascii")))
    except (binascii.Error, ValueError):
        return None


def _from_entities(token: str) -> str | None:
    import html  # lazily: its import compiles patterns

    return html.unescape(token)


def _from_escapes(token: str) -> str | None:
    return _text(re.sub(r"\\{1,2}x([0-9A-Fa-f]{2})", lambda match: chr(int(match[1], 16)), token).encode("latin-1"))


# (mark a token must hold, or None for an encoded prefix; token pattern; decoder). The patterns find maximal
# runs of encoded and plain key characters (no backtracking: linear); ``\xNN`` also JSON-escaped (``\\xNN``).
_DECODINGS: tuple[tuple[str | None, str, Callable[[str], str | None]], ...] = (
    ("&#", r"(?:&#(?:[xX][0-9A-Fa-f]{1,6}|[0-9]{1,7});|[A-Za-z0-9_.\-])+", _from_entities),
    ("\\x", r"(?:\\{1,2}x[0-9A-Fa-f]{2}|[A-Za-z0-9_.\-])+", _from_escapes),
    ("%25", r"(?:%[0-9A-Fa-f]{2}|[A-Za-z0-9_.~\-])+", lambda t: unquote(unquote(t, errors="strict"), errors="strict")),
    (None, r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}){10,}(?![0-9A-Za-z])", lambda token: _text(bytes.fromhex(token))),
    (None, r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/_=-])", _from_base64),
)


@functools.cache
def _encoded_prefix() -> re.Pattern[str]:
    """What a hex or base64 token must hold to be decoded (so the rule changes only what its probe found)."""
    return re.compile("|".join(re.escape(needle.decode()) for needle in _ENCODED_PREFIXES))


def decoded_tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, decoded text) of each token of ``text`` at most ``MAX_TOKEN`` long that decodes to other
    printable text, in order; the first decoding to claim a token keeps it. Linear: maximal runs, merged."""
    taken: list[tuple[int, int, str]] = []
    for mark, pattern, decode in _DECODINGS:
        if mark is None or mark in text:
            taken = sorted(taken + list(_decoded(text, mark, pattern, decode, taken)))  # two sorted runs: merged
    return taken


def _overlaps(taken: list[tuple[int, int, str]], start: int, end: int) -> bool:
    index = bisect.bisect_left(taken, (start,))
    return (index < len(taken) and taken[index][0] < end) or (index > 0 and taken[index - 1][1] > start)


def _decoded(
    text: str, mark: str | None, pattern: str, decode: Callable[[str], str | None], taken: list[tuple[int, int, str]]
) -> Iterator[tuple[int, int, str]]:
    """The tokens of one decoding: holding its mark (or an encoded prefix), none overlapping ``taken``."""
    for match in re.finditer(pattern, text):
        (start, end), token = match.span(), match.group()
        holds = mark in token if mark is not None else _encoded_prefix().search(token.lower()) is not None
        if end - start > MAX_TOKEN or not holds or _overlaps(taken, start, end):
            continue
        try:
            decoded = decode(token)
        except (UnicodeError, ValueError):
            continue
        if decoded is not None and decoded != token:
            yield start, end, decoded
