"""Keys in hex, HTML numeric entities (``&#115;``), ``\\xNN`` escapes, double percent-encoding (``%252D``) or base64
in prose, for the ``encoded`` rule. Bounded work: the search finds ``ENCODED_NEEDLES`` in its one pass; a token is
decoded once, only when at most ``MAX_TOKEN`` long, and kept only when printable UTF-8 (base64 media never are)."""

from __future__ import annotations

import base64
import bisect
import re
from collections.abc import Callable
from urllib.parse import unquote

from .._memo import lazy_pattern

__all__ = ["ENCODED_NEEDLES", "MAX_TOKEN", "decoded_tokens"]

MAX_TOKEN = 4096  # characters: longer runs are media or data, not a key written in prose
# The key prefixes whose hex and base64 forms the search looks for: the LLM vendors' and the commonest others'.
_PREFIXES = b"sk-proj- sk-ant- sk-svcacct- sk-admin- github_pat_ ghp_ gho_ ghs_ glpat- AKIA ASIA AIza xoxb- xoxp-"
_PREFIXES += b" hf_ gsk_ xai- sk-"


def _base64_needles(prefix: bytes) -> set[bytes]:
    """The lower-cased base64 (standard and URL-safe) characters fixed by ``prefix`` alone at each of the three
    alignments; four or more (a four-character prefix fixes only four at one of them; three occur by chance)."""
    needles = {
        encode(b"\0" * offset + prefix)[-(-4 * offset // 3) : 4 * (offset + len(prefix)) // 3].lower()
        for encode in (base64.b64encode, base64.urlsafe_b64encode)
        for offset in range(3)
    }
    return {needle for needle in needles if len(needle) >= 4}


_ENCODED_PREFIXES = sorted({n for p in _PREFIXES.split() for n in (p.hex().encode(), *_base64_needles(p))})
ENCODED_NEEDLES: tuple[bytes, ...] = (b"&#", b"\\x", b"%25", *_ENCODED_PREFIXES)
# What a hex or base64 token must hold to be decoded: the rule changes only what its probe found.
_ENCODED_PREFIX = lazy_pattern("|".join(re.escape(needle.decode()) for needle in _ENCODED_PREFIXES))


def _text(data: bytes) -> str | None:
    """``data`` as text when printable UTF-8 (white space allowed), else None or a ValueError."""
    text = data.decode("utf-8")
    return text if text.replace("\n", " ").replace("\r", " ").replace("\t", " ").isprintable() else None


def _from_base64(token: str) -> str | None:
    decode = base64.urlsafe_b64decode if ("-" in token or "_" in token) else base64.b64decode
    return _text(decode(token.rstrip("=") + "=" * (-len(token.rstrip("=")) % 4)))


def _from_entities(token: str) -> str | None:
    import html  # lazily: its import compiles patterns

    return html.unescape(token)


def _from_escapes(token: str) -> str | None:
    return _text(re.sub(r"\\{1,2}x([0-9A-Fa-f]{2})", lambda match: chr(int(match[1], 16)), token).encode("latin-1"))


def _from_double_percent(token: str) -> str:
    return unquote(unquote(token, errors="strict"), errors="strict")


# (mark a token holds, or "" for an encoded prefix; pattern; decoder). The patterns find maximal runs of encoded and
# key characters possessively: linear time, and no memory per character of a run; ``\xNN`` also JSON-escaped.
_DECODINGS: tuple[tuple[str, str, Callable[[str], str | None]], ...] = (
    ("&#", r"(?:[A-Za-z0-9_.\-]++|&#(?:[xX][0-9A-Fa-f]{1,6}|[0-9]{1,7});)++", _from_entities),
    ("\\x", r"(?:[A-Za-z0-9_.\-]++|\\{1,2}x[0-9A-Fa-f]{2})++", _from_escapes),
    ("%25", r"(?:[A-Za-z0-9_.~\-]++|%[0-9A-Fa-f]{2})++", _from_double_percent),
    ("", r"(?<![0-9A-Za-z])[0-9A-Fa-f]{20,}+(?![0-9A-Za-z])", lambda token: _text(bytes.fromhex(token))),
    ("", r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/_=-])", _from_base64),
)


def decoded_tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, decoded text) of each token at most ``MAX_TOKEN`` long that holds its decoding's mark and decodes
    to other printable text, in order; the first decoding to claim a token keeps it."""
    taken: list[tuple[int, int, str]] = []
    for mark, pattern, decode in _DECODINGS:
        if mark not in text:
            continue
        found = []
        for match in re.finditer(pattern, text):
            (start, end), token = match.span(), match.group()
            holds = mark in token if mark else _ENCODED_PREFIX.search(token.lower()) is not None
            if end - start > MAX_TOKEN or not holds or _overlaps(taken, start, end):
                continue
            try:
                decoded = decode(token)
            except ValueError:  # binascii's and Unicode's errors too
                continue
            if decoded not in (None, token):
                found.append((start, end, decoded))
        taken = sorted(taken + found)  # two sorted runs: merged
    return taken


def _overlaps(taken: list[tuple[int, int, str]], start: int, end: int) -> bool:
    index = bisect.bisect_left(taken, (start,))
    return (index < len(taken) and taken[index][0] < end) or (index > 0 and taken[index - 1][1] > start)
