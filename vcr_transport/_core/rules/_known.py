"""The values a redactor has learned (``Known``, immutable) and the forms they are written in."""

from __future__ import annotations

import array
import base64
import itertools
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus, unquote

import ahocorasick_rs

from ..._exceptions import RedactionLimitError
from .._memo import Memo, lazy_pattern
from ..format._format import PLACEHOLDER
from ._catalogue import catalogue_matches, looks_like_credential
from ._search import Search

__all__ = [
    "EMPTY",
    "MAX_LEARNED_CHARACTERS",
    "MAX_PROPAGATED_LENGTH",
    "MIN_PROPAGATED_LENGTH",
    "Known",
    "is_structure",
    "remove_escaped",
    "utf8",
]

_PLACEHOLDER = PLACEHOLDER.encode()
_NFA = ahocorasick_rs.Implementation.ContiguousNFA
# A character as text may write it: a run of ``%XX`` (UTF-8 bytes), a ``\\uXXXX``, JSON's ``\\/``; or as it is.
_WRITTEN = lazy_pattern(r"(?:%[0-9A-Fa-f]{2})++|\\u[0-9A-Fa-f]{4}|\\/|[^%\\]+|[\s\S]")
MIN_PROPAGATED_LENGTH = 8  # shorter values are too likely to occur by chance in other text
# Longer values are removed where a rule finds them, not learned: a megabyte under a secret name is data, and its
# searches would take hundreds of megabytes (each character of a form costs each automaton tens of bytes).
MAX_PROPAGATED_LENGTH = 64 * 1024
# The written forms a redactor remembers, in characters: a 24-character secret has about 120, an OpenAI project key
# 1,250, a signed S3 URL's signature 490: some 35,000 secrets, 3,300 such keys or 8,500 such URLs, 330 MB of
# searches. Past it ``Known.learn`` raises RedactionLimitError: a hostile file or recording can't make a redactor
# take unbounded memory.
MAX_LEARNED_CHARACTERS = 4 * 1024 * 1024
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
    sized = MIN_PROPAGATED_LENGTH <= len(part) <= MAX_PROPAGATED_LENGTH
    return sized and part not in PLACEHOLDER and PLACEHOLDER not in part and not is_structure(part)


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


def utf8(text: str) -> bytes:
    """``text``'s UTF-8, a lone surrogate written as the byte ``surrogateescape`` decoded it from, or, for one
    that stands for no byte (JSON's ``"\\ud83d"``: half an emoji a client cut), as ``surrogatepass`` writes it."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _encoded_forms(value: str) -> set[str]:
    """``value`` raw, percent-encoded, JSON-escaped, and base64 (standard and URL-safe) at each of the three
    alignments a base64 window can have."""
    data = utf8(value)  # a lone surrogate's bytes are percent-encoded
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


def _decoded(text: str) -> tuple[bytes, array.array[int]]:
    """``text``'s escapes decoded once, in UTF-8 (lone surrogates too), and where in ``text`` the character of
    each byte is written (``len(text)`` last; 8 bytes each, where a list took 36)."""
    data, starts = bytearray(), array.array("q")
    for match in _WRITTEN.finditer(text):
        start, written = match.start(), match[0]
        if written.isascii() and written[0] not in "%\\":
            data += written.encode()
            starts.extend(range(start, match.end()))
            continue
        for char, width in _characters(written):
            encoded = char.encode("utf-8", "surrogatepass")
            data += encoded
            starts.extend([start] * len(encoded))
            start += width
    starts.append(len(text))
    return bytes(data), starts


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


class _Level:
    """Values learned together (one batch, or batches merged), every form of them longest first, and the searches
    of those forms, each built on first use. Never changed: ``merged`` gives a new one."""

    __slots__ = ("_finder", "_remover", "_seeker", "characters", "form_set", "forms", "learned", "values")

    def __init__(self, values: frozenset[str], learned: frozenset[str], forms: frozenset[str]) -> None:
        self.values, self.learned, self.form_set = values, learned, forms
        self.forms = tuple(sorted(forms, key=lambda form: (-len(form), form)))
        self.characters = sum(map(len, self.forms))
        self._finder: ahocorasick_rs.BytesAhoCorasick | None = None
        self._remover: ahocorasick_rs.BytesAhoCorasick | None = None
        self._seeker: tuple[ahocorasick_rs.BytesAhoCorasick, list[str]] | None = None

    @property
    def size(self) -> int:
        return len(self.values) + len(self.learned) + len(self.form_set)

    def merged(self, other: _Level) -> _Level:
        """This level and ``other`` as one (this one's forms and searches kept when ``other`` adds no form)."""
        level = _Level(self.values | other.values, self.learned | other.learned, frozenset())
        if other.form_set <= self.form_set:
            level.form_set, level.forms, level.characters = self.form_set, self.forms, self.characters
            level._finder, level._remover = self._finder, self._remover
        else:
            level.form_set = self.form_set | other.form_set
            level.forms = tuple(sorted(level.form_set, key=lambda form: (-len(form), form)))
            level.characters = sum(map(len, level.forms))
        return level

    def holds(self, data: bytes) -> bool:
        if self._finder is None:
            escaped = (json.dumps(form, ensure_ascii=False)[1:-1] for form in self.forms)
            patterns = {utf8(text) for text in (*self.forms, *escaped)}
            self._finder = _automaton(sorted(patterns))
        return bool(self._finder.find_matches_as_indexes(data))

    def spans(self, data: bytes) -> list[tuple[int, int]]:
        """Where the forms are in UTF-8 ``data``: leftmost, the longest at each start, none overlapping."""
        if self._remover is None:
            forms = [form.encode("utf-8", "surrogatepass") for form in self.forms]
            self._remover = _automaton(forms, ahocorasick_rs.MatchKind.LeftmostLongest)
        return [(start, end) for _, start, end in self._remover.find_matches_as_indexes(data)]

    def found_in(self, data: bytes) -> set[str]:
        if self._seeker is None:
            values = sorted(self.values)
            self._seeker = _automaton([value.encode("utf-8", "surrogatepass") for value in values]), values
        finder, values = self._seeker
        return {values[index] for index, _, _ in finder.find_matches_as_indexes(data, overlapping=True)}


# Up to this many values, learned values and forms in all, every batch learned is merged into one level: one search,
# rebuilt at each learn. Past it, levels of halving size: a value is merged O(log n) times, so learning n values one
# at a time (a hostile file whose lines each bring a secret) costs O(n log n), not O(n^2).
_ONE_LEVEL = 512


def _settled(levels: list[_Level]) -> tuple[_Level, ...]:
    """``levels`` with the newest merged into the ones before it while it is at least half their size (or while
    all of them are few)."""
    total = sum(level.size for level in levels)
    while len(levels) > 1 and (total <= _ONE_LEVEL or 2 * levels[-1].size >= levels[-2].size):
        newest = levels.pop()
        levels[-1] = levels[-1].merged(newest)
    return tuple(levels)


def _not_in(items: Iterable[str], sets: list[frozenset[str]]) -> frozenset[str]:
    """``items`` that none of ``sets`` holds."""
    return frozenset(item for item in items if not any(item in held for held in sets))


def _replaced(data: bytes, spans: Iterable[tuple[int, int]]) -> bytes:
    pieces, position = [], 0
    for start, end in spans:
        pieces += [data[position:start], _PLACEHOLDER]
        position = end
    return b"".join(pieces) + data[position:] if pieces else data


class Known:
    """Learned values, in levels (``_Level``): the oldest and largest first, each newer one less than half the size
    of the one before. ``generation`` is a new object whenever a form is added (what is worked out from the forms
    holds while it stays). Never changed: ``learn`` gives a new one."""

    __slots__ = ("generation", "levels")

    def __init__(self, levels: tuple[_Level, ...], generation: object) -> None:
        self.levels, self.generation = levels, generation

    def knows(self, value: str) -> bool:
        """Whether ``value`` was learned (given to ``learn``)."""
        return any(value in level.learned for level in self.levels)

    def learn(self, values: Iterable[str]) -> Known:
        """This with ``values`` and their credential parts, but those known or not learnable; in one step (one
        level more, merged as ``_settled`` says). Raises RedactionLimitError past ``MAX_LEARNED_CHARACTERS``."""
        new = _not_in(values, [level.learned for level in self.levels])
        if not new:
            return self
        added = self._level_of(new)
        if added.characters + sum(level.characters for level in self.levels) > MAX_LEARNED_CHARACTERS:
            raise RedactionLimitError(MAX_LEARNED_CHARACTERS)
        return Known(_settled([*self.levels, added]), object() if added.forms else self.generation)

    def _level_of(self, new: frozenset[str]) -> _Level:
        """The level of values ``new`` learned: their parts and forms not in a level already."""
        parts = {part for value in new for part in _credential_parts(value)}
        fresh = _not_in(filter(_learnable, parts), [level.values for level in self.levels])
        forms = {form for part in fresh for form in _encoded_forms(part)}
        return _Level(fresh, new, _not_in(forms, [level.form_set for level in self.levels]))

    def learned_since(self, older: Known) -> list[str]:
        """The values learned here that ``older`` (a state this one was learned from) does not know."""
        shared = {id(level) for level in older.levels}
        fresh = (level.learned for level in self.levels if id(level) not in shared)
        return [value for learned in fresh for value in learned if not older.knows(value)]

    @property
    def first_forms(self) -> tuple[str, ...]:
        """The forms of the first level: those ``search`` looks for with the rules' probes, in the same pass."""
        return self.levels[0].forms if self.levels else ()

    @property
    def longest(self) -> int:
        """The length in UTF-8 of each level's longest form (in characters), the longest."""
        return max((len(utf8(level.forms[0])) for level in self.levels if level.forms), default=0)

    def search(self, names: tuple[str, ...], prefilter: bool) -> Search:
        forms = self.first_forms
        return _SEARCHES.get((names, forms, prefilter), lambda: Search.build(names, forms, prefilter))

    def in_later_levels(self, data: bytes) -> bool:
        """Whether UTF-8 ``data`` holds a form of a level after the first (the search holds the first's)."""
        return any(level.spans(data) for level in self.levels[1:])

    def holds(self, data: bytes) -> bool:
        """Whether cassette lines hold a form as a line writes it (its UTF-8, or the JSON escapes of it)."""
        return any(level.holds(data) for level in self.levels)

    def found_in(self, text: str) -> list[str]:
        """The values ``text`` holds, also those overlapping another."""
        data = text.encode("utf-8", "surrogatepass")
        return sorted(set().union(*(level.found_in(data) for level in self.levels)))

    def remove(self, text: str) -> str:
        """``text`` without the forms: leftmost, the longest at each start, across the levels; then what the
        levels find in the rest (a form that overlapped another level's match, which was taken first)."""
        if not self.levels:
            return text
        data = text.encode("utf-8", "surrogatepass")
        found = [level.spans(data) for level in self.levels]
        spans = found[0] if len(found) == 1 else _leftmost_longest(itertools.chain(*found))
        if not spans:
            return text
        data = _replaced(data, spans)
        if len(self.levels) > 1:  # a form that overlapped a match of another level, taken first
            for level in self.levels:
                data = _replaced(data, level.spans(data))
        return data.decode("utf-8", "surrogatepass")

    # For inspection (each is worked out from every level).

    @property
    def values(self) -> frozenset[str]:
        return frozenset().union(*(level.values for level in self.levels))

    @property
    def learned(self) -> frozenset[str]:
        return frozenset().union(*(level.learned for level in self.levels))

    @property
    def forms(self) -> tuple[str, ...]:
        return tuple(sorted({form for level in self.levels for form in level.forms}, key=lambda f: (-len(f), f)))


def _leftmost_longest(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Of spans that may overlap, the leftmost, the longest at each start, none overlapping another taken."""
    taken: list[tuple[int, int]] = []
    position = 0
    for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):
        if start >= position:
            taken.append((start, end))
            position = end
    return taken


EMPTY = Known((), object())
# Searches by set of forms: pure, so shared by every redactor (a suite's cassettes learn the same key); ~240 KB each.
_SEARCHES: Memo[tuple[tuple[str, ...], tuple[str, ...], bool], Search] = Memo(32)
