"""One Aho-Corasick pass over lower-cased UTF-8 for all the rules' probes, in order: the catalogue's prefixes and
text media types (prefilter only: short prefixes are in any prose), the names' words, the catalogue's keywords, the
glued prefixes, the encoded needles, ``SLACK_HOOKS`` and the learned forms."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import NamedTuple

import ahocorasick_rs

from ._catalogue import GLUED_NEEDLES, KEYWORD_PATTERNS, PREFIX_PATTERNS
from ._encodings import ENCODED_NEEDLES
from ._patterns import regex

__all__ = ["MEDIA_MARKERS", "SLACK_HOOKS", "Scan", "Search", "searched_words"]

MEDIA_MARKERS = (b"text/", b"application/", b"+json", b"+xml")
SLACK_HOOKS = b"hooks.slack.com/"  # in every Slack webhook URL, in lower case (the "slack webhooks" rule's probe)
# What may follow a JSON key's closing quote up to its colon, in lower-cased UTF-8: whitespace (a byte of a
# character that isn't ASCII stands for any ``\s``) and escaped whitespace of JSON nested in a JSON string.
_AFTER_KEY = rb"[\s\x1c-\x1f\x80-\xff\\ntru0-9a-f]*:"


class Search(NamedTuple):
    """The finder, the learned ``forms``, the index where each probe group starts among its patterns, and whether
    every form is ASCII (``exact``: a form occurs only where its lower case does)."""

    finder: ahocorasick_rs.BytesAhoCorasick
    forms: tuple[str, ...]
    words: int
    keywords: int
    glued: int
    encoded: int
    hooks: int
    learned: int
    exact: bool

    @classmethod
    def build(cls, names: tuple[str, ...], forms: tuple[str, ...], prefilter: bool) -> Search:
        prefixes = [prefix.lower() for prefix in PREFIX_PATTERNS] + list(MEDIA_MARKERS) if prefilter else []
        words = [word.encode() for word in names]
        groups = (prefixes, words, KEYWORD_PATTERNS, GLUED_NEEDLES, ENCODED_NEEDLES, [SLACK_HOOKS])
        lowered = sorted({form.encode("utf-8", "surrogatepass").lower() for form in forms})
        patterns = [*itertools.chain(*groups), *lowered]
        # A DFA is twice as fast as an NFA, but takes quadratic time to build on a long form (a learned
        # ``sk-sk-sk-...``): for many forms or long ones, an NFA.
        small = len(patterns) <= 400 and sum(map(len, lowered)) <= 4096
        nfa = ahocorasick_rs.Implementation.ContiguousNFA
        implementation = ahocorasick_rs.Implementation.DFA if small else nfa
        finder = ahocorasick_rs.BytesAhoCorasick(patterns, implementation=implementation)
        first, keywords, glued, encoded, hooks, learned = itertools.accumulate(len(group) for group in groups)
        return cls(finder, forms, first, keywords, glued, encoded, hooks, learned, all(map(str.isascii, forms)))

    def find(self, data: bytes) -> list[tuple[int, int, int]]:
        """The (pattern, start, end) of every probe in lower-cased UTF-8 ``data``, overlapping too."""
        return self.finder.find_matches_as_indexes(data, overlapping=True)

    def scan(self, text: str) -> Scan:
        lowered = text.lower()
        data = lowered.encode("utf-8", "surrogatepass")
        unsure = not text.isascii() and ("\u0130" in text or "\u212a" in text)
        hits = self.find(data)
        return _new_scan((self, text, lowered, data, hits, self._words(hits), unsure, None))

    def scan_bytes(self, raw: bytes, data: bytes, hits: list[tuple[int, int, int]] | None = None) -> Scan:
        """The prefilter's scan of UTF-8 ``raw``, ``data`` its lower case (``hits``: ``find(data)``, if found)."""
        hits = self.find(data) if hits is None else hits
        return _new_scan((self, None, "", data, hits, self._words(hits), False, raw))

    def _words(self, hits: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
        first, end = self.words, self.keywords
        return [(start, stop) for index, start, stop in hits if first <= index < end] if hits else []


class Scan(NamedTuple):
    """What a search found in ``text`` (or the prefilter in UTF-8 ``raw``): its lower case and that's UTF-8
    (``data``), each probe's (pattern, start, end), the name words' spans, and whether the text holds U+0130 or
    the Kelvin sign (``unsure``: the only characters whose lower case holds ASCII)."""

    search: Search
    text: str | None
    lowered: str
    data: bytes
    hits: list[tuple[int, int, int]]
    words: list[tuple[int, int]]
    unsure: bool
    raw: bytes | None

    @property
    def prefilter(self) -> bool:
        return self.raw is not None

    def keywords(self) -> list[int]:
        """The index in ``KEYWORD_PATTERNS`` of each catalogue keyword found."""
        first, end = self.search.keywords, self.search.glued
        return [index - first for index, _, _ in self.hits if first <= index < end] if self.hits else []

    def prefixed(self) -> bool:
        """A catalogue prefix or a media type found (prefilter scans only)."""
        return bool(self.hits) and min(self.hits)[0] < self.search.words

    def _found(self, low: int, high: int) -> bool:
        for index, _, _ in self.hits:  # most texts have none or one: a loop, no generator
            if low <= index < high:
                return True
        return False

    def glued(self) -> bool:
        return self._found(self.search.glued, self.search.encoded)

    def encoded(self) -> bool:
        return self._found(self.search.encoded, self.search.hooks)

    def hooked(self) -> bool:
        return self._found(self.search.hooks, self.search.learned)

    def learned(self) -> bool:
        """A learned form found (prefilter scans: the forms' lower case)."""
        return bool(self.hits) and max(self.hits)[0] >= self.search.learned

    def clear_of(self, forms: tuple[str, ...]) -> bool:
        """Whether the text surely holds none of ``forms`` (the search's own)."""
        search = self.search
        return forms is search.forms and search.exact and (not self.hits or max(self.hits)[0] < search.learned)

    def key(self, start: int, end: int) -> str:
        """The text between two positions of ``data`` (lower-casing keeps the length but for U+0130)."""
        if self.raw is not None:
            return self.raw[start:end].decode("utf-8", "surrogateescape")
        text = self.text or ""
        if text.isascii():
            return text[start:end]
        first = len(self.data[:start].decode("utf-8", "surrogatepass"))
        return text[first : first + len(self.data[start:end].decode("utf-8", "surrogatepass"))]

    def may_hold_secret_key(self, named: Callable[[str], bool], words: list[tuple[int, int]]) -> bool:
        """Whether a JSON key may hold a secret name's word: a quote and colon follow the word and ``named`` says
        the key may be a secret name. Prose that mentions a token or a key is not JSON."""
        if words and self.unsure:
            return True
        data, after_key = self.data, regex(_AFTER_KEY)
        after, quote, key = -1, -1, False  # the next quote after a word, shared by the words before it
        for start, _ in words:
            if not after <= start <= quote:
                after, quote = start, data.find(b'"', start)
                key = quote >= 0 and after_key.match(data, quote + 1) is not None
            if key and named(self.key(data.rfind(b'"', 0, start) + 1, quote)):
                return True
        return False


_new_scan = functools.partial(tuple.__new__, Scan)  # Scan(*fields), without NamedTuple's Python __new__


def searched_words(words: frozenset[str]) -> tuple[str, ...]:
    """The name words searched for: only those no other word is part of ("key" finds "apikey")."""
    return tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))
