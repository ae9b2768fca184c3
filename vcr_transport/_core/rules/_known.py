"""The values a redactor has learned (``Known``, immutable) and the forms they are written in."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus, unquote

import ahocorasick_rs

from .._memo import Memo, lazy_pattern
from ..format._format import PLACEHOLDER
from ._catalogue import catalogue_matches, looks_like_credential
from ._search import Search

__all__ = ["EMPTY", "MIN_PROPAGATED_LENGTH", "Known", "is_structure", "remove_escaped"]

_PLACEHOLDER = PLACEHOLDER.encode()
_NFA = ahocorasick_rs.Implementation.ContiguousNFA
# A character as text may write it: a run of ``%XX`` (UTF-8 bytes), a ``\\uXXXX``, JSON's ``\\/``; or as it is.
_WRITTEN = lazy_pattern(r"(?:%[0-9A-Fa-f]{2})+|\\u[0-9A-Fa-f]{4}|\\/|[^%\\]+|[\s\S]")
MIN_PROPAGATED_LENGTH = 8  # shorter values are too likely to occur by chance in other text
_AUTH_SCHEME = lazy_pattern(r"(?P<scheme>[A-Za-z][A-Za-z0-9-]*)\s+(?P<credential>\S{8,})")
_NUMBER_PATH_OR_DATE = lazy_pattern(
    r"[+-]?[0-9]+(?:\.[0-9]+)?|/\S*"
    r"|(?:[A-Za-z]{3,9},?\s+)?[0-9]{1,2}[ -][A-Za-z]{3}[ -][0-9]{2,4}(?:\s+[0-9]{2}:[0-9]{2}(?::[0-9]{2})?)?(?:\s+GMT)?"
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
)
_HOSTNAME = lazy_pattern(
    r"(?:[A-Za-z][A-Za-z0-9+.-]*:(?://)?)?\.?(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\.?"
    r"(?::[0-9]{1,5})?(?:[/?#]\S*)?"
)


def is_structure(value: str) -> bool:
    """Whether ``value`` is a plain number, a path, a date or a hostname (or a URL or ``scheme:host`` with one),
    never learned, unless the catalogue knows its shape or a label of it is key-like."""
    text = value.strip()
    if _NUMBER_PATH_OR_DATE.fullmatch(text):
        return True
    if _HOSTNAME.fullmatch(text) is None or catalogue_matches(text):
        return False
    return not any(looks_like_credential(label) for label in re.split(r"[.:/?#]", text))


def _learnable(part: str) -> bool:
    long = len(part) >= MIN_PROPAGATED_LENGTH
    return long and part not in PLACEHOLDER and PLACEHOLDER not in part and not is_structure(part)


def _credential_parts(value: str) -> list[str]:
    """A value, the credential of ``Scheme credential``, the ``user:password`` of ``Basic`` and its password,
    and the values of ``name=value; name=value`` (cookies, connection strings)."""
    parts = [value]
    scheme = _AUTH_SCHEME.fullmatch(value.strip())
    if scheme:
        credential = scheme["credential"]
        parts.append(credential)
        try:
            decoded = base64.b64decode(credential + "=" * (-len(credential) % 4)).decode("utf-8")
        except ValueError:
            decoded = ""
        if scheme["scheme"].lower() == "basic" and ":" in decoded:
            parts += [decoded, decoded.partition(":")[2]]
    pairs = (piece.partition("=") for piece in re.split(r"[;,&]", value))
    return parts + [item.strip() for name, sep, item in pairs if sep and name.strip()]


def _encoded_forms(value: str) -> set[str]:
    """``value`` raw, percent-encoded, JSON-escaped, and base64 (standard and URL-safe) at each of the three
    alignments a base64 window can have."""
    data = value.encode("utf-8", "surrogateescape")  # a lone surrogate's bytes are percent-encoded
    forms = {value, quote(data, safe=""), quote(data, safe="-_.~"), quote_plus(data)}
    forms |= {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(data).decode()
        forms |= {whole, whole.rstrip("=")}
        for offset in range(3):  # the characters that depend on the value's bytes only
            encoded = encode(b"\0" * offset + data).decode()
            forms.add(encoded[-(-4 * offset // 3) : 4 * (offset + len(data)) // 3])
    return {form for form in forms if len(form) >= MIN_PROPAGATED_LENGTH and form not in PLACEHOLDER}


def _automaton(patterns: list[bytes], kind: Any = None) -> ahocorasick_rs.BytesAhoCorasick:
    """An Aho-Corasick automaton of learned values, built in time linear in their length: the DFA the library
    picks for few patterns takes quadratic time on a long one (a learned ``sk-sk-sk-...``: minutes)."""
    return ahocorasick_rs.BytesAhoCorasick(
        patterns, matchkind=kind or ahocorasick_rs.MatchKind.Standard, implementation=_NFA
    )


def remove_escaped(text: str, values: Iterable[str]) -> str:
    """``text`` without ``values``, each written with any mix of raw, ``%XX`` and ``\\uXXXX`` characters (and
    JSON's ``\\/``), also where they overlap: one pass over ``text`` decoded."""
    patterns = sorted({value.encode("utf-8", "surrogatepass") for value in values})
    if not patterns:
        return text
    data, starts = _decoded(text)
    hits = _automaton(patterns).find_matches_as_indexes(data, overlapping=True)
    pieces, position = [], 0
    for start, end in sorted((starts[start], starts[end]) for _, start, end in hits):
        if start >= position:
            pieces += [text[position:start], PLACEHOLDER]
        position = max(position, end)
    return "".join(pieces) + text[position:]


def _decoded(text: str) -> tuple[bytes, list[int]]:
    """``text``'s escapes decoded once, in UTF-8 (lone surrogates too), and where in ``text`` the character of
    each byte is written (``len(text)`` last)."""
    data, starts = bytearray(), list[int]()
    for match in _WRITTEN.finditer(text):
        start, written = match.start(), match[0]
        if written.isascii() and written[0] not in "%\\":
            data += written.encode()
            starts += range(start, match.end())
            continue
        for char, width in _characters(written):
            encoded = char.encode("utf-8", "surrogatepass")
            data += encoded
            starts += [start] * len(encoded)
            start += width
    return bytes(data), [*starts, len(text)]


def _characters(written: str) -> Iterable[tuple[str, int]]:
    """The characters ``written`` (a ``_WRITTEN`` piece) stands for, each with the length of its writing."""
    if written[0] == "%" and len(written) > 1:
        for char in unquote(written, errors="surrogateescape"):
            yield char, 3 * len(char.encode("utf-8", "surrogateescape"))
    elif written.startswith("\\u"):
        yield chr(int(written[2:], 16)), 6
    elif written == "\\/":
        yield "/", 2
    else:
        yield from ((char, 1) for char in written)


class Known:
    """Learned values (``values``), the values whose parts were taken (``learned``) and every form of every
    value, longest first (``forms``). Never changed: ``learn`` gives a new one."""

    __slots__ = ("_finder", "_remover", "_seeker", "forms", "learned", "values")

    def __init__(self, values: frozenset[str], learned: frozenset[str], forms: tuple[str, ...]) -> None:
        self.values, self.learned, self.forms = values, learned, forms
        self._finder: ahocorasick_rs.BytesAhoCorasick | None = None
        self._remover: ahocorasick_rs.BytesAhoCorasick | None = None
        self._seeker: tuple[ahocorasick_rs.BytesAhoCorasick, list[str]] | None = None

    def learn(self, values: Iterable[str]) -> Known:
        """This with ``values`` and their credential parts, but those known or not learnable; in one step, as
        sorting the forms takes as long for many values as for one."""
        new = frozenset(values) - self.learned
        if not new:
            return self
        parts = {part for value in new for part in _credential_parts(value)}
        fresh = {part for part in parts if part not in self.values and _learnable(part)}
        forms = {form for part in fresh for form in _encoded_forms(part)}
        if forms.issubset(self.forms):  # the same forms: the same searches
            known = Known(self.values | fresh, self.learned | new, self.forms)
            known._finder, known._remover = self._finder, self._remover
            return known
        merged = tuple(sorted(forms.union(self.forms), key=lambda form: (-len(form), form)))
        return Known(self.values | fresh, self.learned | new, merged)

    def search(self, names: tuple[str, ...], prefilter: bool) -> Search:
        forms = self.forms
        return _SEARCHES.get((names, forms, prefilter), lambda: Search.build(names, forms, prefilter))

    def holds(self, data: bytes) -> bool:
        """Whether cassette lines hold a form as a line writes it (its UTF-8, or the JSON escapes of it)."""
        if not self.forms:
            return False
        if self._finder is None:
            escaped = (json.dumps(form, ensure_ascii=False)[1:-1] for form in self.forms)
            patterns = {text.encode("utf-8", "surrogateescape") for text in (*self.forms, *escaped)}
            self._finder = _automaton(sorted(patterns))
        return bool(self._finder.find_matches_as_indexes(data))

    def found_in(self, text: str) -> list[str]:
        """The values ``text`` holds, also those overlapping another."""
        if self._seeker is None:
            values = sorted(self.values)
            patterns = [value.encode("utf-8", "surrogatepass") for value in values]
            self._seeker = _automaton(patterns), values
        finder, values = self._seeker
        hits = finder.find_matches_as_indexes(text.encode("utf-8", "surrogatepass"), overlapping=True)
        return [values[index] for index in sorted({index for index, _, _ in hits})]

    def remove(self, text: str) -> str:
        """``text`` without the forms, each leftmost, longest first, in one pass."""
        if self._remover is None:
            forms = [form.encode("utf-8", "surrogatepass") for form in self.forms]
            self._remover = _automaton(forms, ahocorasick_rs.MatchKind.LeftmostLongest)
        data = text.encode("utf-8", "surrogatepass")
        pieces, position = [], 0
        for _, start, end in self._remover.find_matches_as_indexes(data):
            pieces += [data[position:start], _PLACEHOLDER]
            position = end
        return (b"".join(pieces) + data[position:]).decode("utf-8", "surrogatepass") if pieces else text


EMPTY = Known(frozenset(), frozenset(), ())
# Searches by set of forms: pure, so shared by every redactor (a suite's cassettes learn the same key); ~240 KB each.
_SEARCHES: Memo[tuple[tuple[str, ...], tuple[str, ...], bool], Search] = Memo(32)
