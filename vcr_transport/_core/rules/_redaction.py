"""The facade of the rules layer: a ``Redactor`` runs the text rules whose probes the search finds on texts,
structures, headers, forms and binary bodies, and learns what a name or a shape removed, to remove it everywhere
(``_known``). Cookies keep their names, so that a client's cookie jar behaves on replay as it did live."""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote_plus

from .._memo import Memo
from ..format._format import PLACEHOLDER, encode_line
from ._json import SIBLING_NAME_KEYS, SIBLING_VALUE_KEYS, Context, folded, names_a_secret, removes_value, string_leaves
from ._known import EMPTY, MIN_PROPAGATED_LENGTH, Known, is_structure, remove_escaped
from ._names import SECRET_FIELD_NAMES, Names, decode_escapes
from ._patterns import user_pattern
from ._rules import RULES, TEXT_DATA_URL, TEXT_MEDIA, candidates, redact_base64_text, redact_shapes
from ._search import Scan, Search

__all__ = [
    "PLACEHOLDER",
    "SECRET_FIELD_NAMES",
    "RedactWithError",
    "Redactor",
    "cookie_names",
    "is_structure",
    "remove_secret_values",
]

_decode_escapes = decode_escapes
# The escapes of printable ASCII characters: those that can hide a credential or a name.
_PERCENT_ASCII = re.compile(r"%[2-7][0-9A-Fa-f]")
_PERCENT_ASCII_BYTES = re.compile(rb"%[2-7][0-9A-Fa-f]")
_UNICODE_ASCII = re.compile(r"\\u00[2-7][0-9A-Fa-f]")
# The UTF-8 of the only characters whose lower case holds an ASCII letter (U+0130, the Kelvin sign).
_LOWERING_TO_ASCII = (b"\xc4\xb0", b"\xe2\x84\xaa")
_COOKIE_HEADERS = frozenset({"cookie", "set-cookie"})
_context = functools.partial(tuple.__new__, Context)  # Context(*fields), without NamedTuple's Python __new__
_JSON_NAMES, _SHAPES = RULES[0], RULES[-1]
_Headers = tuple[tuple[str, str], ...]


def cookie_names(value: str, *, response: bool) -> list[str]:
    """The names of the cookies a ``set-cookie`` (``response``) or ``cookie`` header value carries."""
    pairs = value.split(";", 1)[:1] if response else value.split(";")
    return [pair.partition("=")[0].strip() for pair in pairs if "=" in pair and pair.partition("=")[0].strip()]


def _cookie_pairs(value: str, response: bool) -> tuple[list[tuple[str, str, str]], str]:
    """(name, ``=`` and leading space; value; trailing space) of each cookie of a ``cookie`` header, or of the
    one a ``set-cookie`` sets, and what follows (its attributes). No ``=``: a value, no name."""
    pair, semicolon, attributes = value.partition(";")
    pieces, rest = ([pair], semicolon + attributes) if response else (value.split(";"), "")
    found = []
    for piece in pieces:
        name, equals, item = piece.partition("=")
        name, item = (name, item) if equals else ("", name)
        value = item.lstrip()  # an item of spaces only is all leading space
        found.append((name + equals + item[: len(item) - len(value)], value.rstrip(), value[len(value.rstrip()) :]))
    return found, rest


def _text_payload(obj: Mapping[Any, Any]) -> str | None:
    """``"data"`` when it is a base64 payload whose sibling media type is text, else None."""
    if not isinstance(obj.get("data"), str):
        return None
    media = [obj.get(key) for key in ("media_type", "mime_type", "mimeType", "mediaType")]
    return "data" if any(isinstance(m, str) and TEXT_MEDIA.match(m) for m in media) else None


def _utf8(text: str | bytes) -> bytes | None:
    """The UTF-8 of ``text`` (of bytes that aren't, their ``surrogateescape`` text's); None when it holds one
    of ``_LOWERING_TO_ASCII``."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if data.isascii():
        return data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        data = data.decode("utf-8", "surrogateescape").encode("utf-8", "surrogatepass")
    return None if any(special in data for special in _LOWERING_TO_ASCII) else data


def _has_ascii_escapes(text: str) -> bool:
    return ("%" in text and _PERCENT_ASCII.search(text) is not None) or (
        "\\u00" in text and _UNICODE_ASCII.search(text) is not None
    )


def _may_hold_escape(data: bytes) -> bool:
    """A ``\\u`` escape, JSON's ``\\/`` or the ``%XX`` of an ASCII character: decoded before the rules run
    (the bytes asked by value: a memchr)."""
    if 92 in data and (b"\\u" in data or b"\\/" in data):
        return True
    return 37 in data and _PERCENT_ASCII_BYTES.search(data) is not None


class RedactWithError(TypeError):
    """A ``redact_with`` function raised, or returned no string: the recording is not saved (closing raises a
    CassetteError that says so); the live call goes on unharmed."""

    FIX = "make the function return the string it was given (with its secrets replaced), for every string"


def _called(function: Callable[[str], str], text: str) -> str:
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    module = getattr(function, "__module__", None)
    name = f"{module}.{name}" if module and module != "builtins" else str(name)
    try:
        result = function(text)
    except Exception as error:  # its message is left out: it may hold the string, secrets and all
        raise RedactWithError(f"redact_with function {name} raised {type(error).__name__}") from error
    if not isinstance(result, str):
        raise RedactWithError(f"redact_with function {name} returned {type(result).__name__}, not a string")
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
        self._names = Names(names)
        self._patterns = tuple(user_pattern(p, "redact_patterns") for p in patterns)  # RE2: linear time
        self._callables = tuple(callables)
        # A header list's redaction from a state of learned values, and the state it leads to: pure, so shared
        # by every redactor made from this one (``fresh``), and a session's client headers are redacted once.
        self._shared_headers: Memo[tuple[Known, _Headers], tuple[_Headers, Known]] = Memo(256)
        self._start_afresh()

    def _start_afresh(self) -> None:
        self._lock = threading.Lock()
        self._known: Known = EMPTY
        self._searches: tuple[tuple[str, ...], Search, Search] | None = None  # of the first level's forms
        self._header_values: Memo[str, str] = Memo(4096)  # header values repeat: redacted once per generation

    def fresh(self) -> Redactor:
        """A redactor of the same rules that has learned nothing: one per cassette, made from one built per
        configuration (the rules and their pure memos shared)."""
        twin = copy.copy(self)
        twin._start_afresh()
        return twin

    def is_secret_name(self, name: str, *, query: bool = False, header: bool = False) -> bool:
        """Whether ``name`` (a JSON key; ``header``: a header or environment variable; ``query``: a query or form
        field) holds a secret, whatever its case, separators, run-together words and escapes."""
        return self._names.is_secret(name, 2 if query else 1 if header else 0)

    # Known values.

    def learn(self, value: str) -> None:
        """Remove ``value`` and its credential parts from everything redacted from now on, in every encoding;
        but values shorter than 8 characters and structure (``is_structure``)."""
        self._learn_all((value,), 0)

    def _learn_all(self, values: Iterable[str], shortest: int = MIN_PROPAGATED_LENGTH) -> None:
        new = [value for value in values if len(value) >= shortest and not self._known.knows(value)]
        if new:
            with self._lock:
                self._known = self._known.learn(new)

    def final_pass(self, line: bytes) -> bytes:
        """A cassette line without any learned form in its strings, keys and base64 payloads (returned as it is
        when one search of its bytes finds none)."""
        if not self.holds_learned(line):
            return line
        try:
            obj = json.loads(line)
        except ValueError:
            return line  # not a line this pass can rewrite safely: the parser reports it
        scrubbed = self._scrub_learned(obj)
        return line if scrubbed == obj else encode_line(scrubbed)

    def holds_learned(self, data: bytes) -> bool:
        """Whether ``data`` (cassette lines) holds a learned form as a cassette line writes it."""
        return self._known.holds(data)

    @property
    def longest_learned(self) -> int:
        """At most the length in bytes of the longest form ``holds_learned`` searches for."""
        return self._known.longest * 6

    def _scrub_learned(self, obj: Any) -> Any:
        scrub = self._scrub_learned
        if isinstance(obj, str):
            return self._known.remove(obj)
        if isinstance(obj, list):
            return [scrub(item) for item in obj]
        if not isinstance(obj, dict):
            return obj
        return {
            scrub(key): self._scrub_base64(value) if key == "base64" and isinstance(value, str) else scrub(value)
            for key, value in obj.items()
        }

    def _scrub_base64(self, payload: str) -> str:
        try:
            text = base64.b64decode(payload, validate=True).decode("utf-8", "surrogateescape")
        except (binascii.Error, ValueError):
            return payload
        scrubbed = self._known.remove(text)
        return payload if scrubbed == text else base64.b64encode(scrubbed.encode("utf-8", "surrogateescape")).decode()

    # Text.

    def redact_text(self, text: str, *, response: bool = False) -> str:
        """Replace every secret in free text: what the rules find (also behind ``%XX`` or ``\\u`` escapes), every
        value learned, then the user's patterns and functions."""
        if text == PLACEHOLDER:
            return text
        escaped_names = False
        if _has_ascii_escapes(text):
            text, escaped_names = self._redact_escaped(text, response)
        scan = self._search(False).scan(text)
        found: list[str] = []
        redacted = self._run_rules(text, scan, response, found, escaped_names)
        self._learn_all(found)
        known = self._known
        if known.levels and not (redacted is text and self._clear_of_learned(scan, text)):
            redacted = known.remove(redacted)
        for pattern in self._patterns:
            redacted = pattern.sub(PLACEHOLDER, redacted)
        for function in self._callables:
            redacted = _called(function, redacted)
        return redacted

    def _search(self, prefilter: bool) -> Search:
        """The search of the names' words and the learned forms (the prefilter's: with the prefixes)."""
        searches, known = self._searches, self._known
        if searches is None or searches[0] is not known.first_forms:
            words = self._names.searched
            searches = self._searches = (known.first_forms, known.search(words, False), known.search(words, True))
        return searches[2] if prefilter else searches[1]

    def _clear_of_learned(self, scan: Scan, text: str) -> bool:
        """Whether ``text`` surely holds no learned form: the scan searched the first level's (none learned
        since) and found none, and the later levels find none."""
        known = self._known
        if not scan.clear_of(known.first_forms):
            return False
        return len(known.levels) < 2 or not known.in_later_levels(text.encode("utf-8", "surrogatepass"))

    def _redact(self, text: str, response: bool) -> str:
        return self.redact_text(text, response=response)

    def _run_rules(self, text: str, scan: Scan, response: bool, found: list[str], escaped_names: bool = False) -> str:
        """The rules that may apply (the JSON names too when ``escaped_names``: a name shows only decoded), then
        the shapes."""
        original, names, ctx = text, self._names, None
        rules = candidates(scan.data)
        if escaped_names and '"' in text:
            ctx = _context((names, response, found, self._redact))
            text, rules = _JSON_NAMES.apply(text, ctx), rules[1:]
        for rule in rules:
            if rule is not _SHAPES and rule.may_apply(scan, names):
                ctx = ctx or _context((names, response, found, self._redact))
                text = rule.apply(text, ctx)
        if text is not original:  # the catalogue finds keywords by their positions in the lower case
            return redact_shapes(text, text.lower(), found)
        return redact_shapes(text, scan.lowered, found, scan.keywords())

    def _redact_escaped(self, text: str, response: bool) -> tuple[str, bool]:
        """``text`` without the secrets (learned) its decoded escapes show, and whether a name's word shows."""
        decoded = decode_escapes(text)
        if decoded == text:
            return text, False
        scan = self._search(False).scan(decoded)
        hidden: list[str] = []
        self._run_rules(decoded, scan, response, hidden)
        hidden += self._known.found_in(decoded)
        text = remove_escaped(text, (v for v in hidden if len(v) >= MIN_PROPAGATED_LENGTH and PLACEHOLDER not in v))
        self._learn_all(hidden)
        return text, any(map(scan.lowered.__contains__, self._names.searched))

    # Structures.

    def redact_value(self, obj: Any, *, response: bool = False) -> Any:
        """Secret-named keys of a dumped structure lose their whole value (but booleans, null and schemas),
        learned first to leave the rest too; keys and strings lose secrets as in ``redact_text``."""
        self._learn_all(self._named_values(obj, response))
        return self._redact_structure(obj, response)

    def _loses_value(self, obj: Mapping[Any, Any], key: Any, siblings: list[str], response: bool) -> bool:
        return key in siblings or (isinstance(key, str) and removes_value(self._names, key, obj[key], response))

    def _named_values(self, obj: Any, response: bool) -> Iterable[str]:
        if isinstance(obj, list | tuple):
            for item in obj:
                yield from self._named_values(item, response)
        elif isinstance(obj, Mapping):
            siblings = self._sibling_values(obj)
            for key, value in obj.items():
                if self._loses_value(obj, key, siblings, response):
                    yield from string_leaves(value)
                else:
                    yield from self._named_values(value, response)

    def _base64_text(self, payload: str, response: bool) -> str:
        return redact_base64_text(payload, Context(self._names, response, [], self._redact))

    def _redact_structure(self, obj: Any, response: bool) -> Any:
        if isinstance(obj, str):
            if obj.startswith("data:") and TEXT_DATA_URL.match(obj):
                head, _, payload = obj.partition(",")
                return head + "," + self._base64_text(payload, response)
            return self.redact_text(obj, response=response)
        if isinstance(obj, list | tuple):
            return [self._redact_structure(item, response) for item in obj]
        return self._redact_mapping(obj, response) if isinstance(obj, Mapping) else obj

    def _redact_mapping(self, obj: Mapping[Any, Any], response: bool) -> dict[Any, Any]:
        redacted: dict[Any, Any] = {}
        siblings, text_data = self._sibling_values(obj), _text_payload(obj)
        for key, value in obj.items():
            if self._loses_value(obj, key, siblings, response):
                value = PLACEHOLDER
            elif key == text_data:
                value = self._base64_text(value, response)
            else:
                value = self._redact_structure(value, response)
            new_key = self.redact_text(key, response=response) if isinstance(key, str) else key
            base, number = new_key, 2  # a secret used as a key: keep the other entries apart
            while new_key != key and (new_key in redacted or new_key in obj):
                new_key, number = f"{base} {number}", number + 1
            redacted[new_key] = value
        return redacted

    def _sibling_values(self, obj: Mapping[Any, Any]) -> list[str]:
        """The keys of the values a sibling names as secrets: ``{"name": "MISTRAL_API_KEY", "value": ...}``
        (Kubernetes, Vercel, ECS), ``{"Name": "/prod/db/password", "Type": ..., "Value": ...}`` (SSM)."""
        keys = [(key, folded(key)) for key in obj if isinstance(key, str)] if len(obj) <= 12 else []
        values = [key for key, fold in keys if fold in SIBLING_VALUE_KEYS]
        if not values or not self._names_a_secret(obj, keys):
            return []
        return [key for key in values if not isinstance(obj[key], bool | None)]

    def _names_a_secret(self, obj: Mapping[Any, Any], keys: list[tuple[str, str]]) -> bool:
        return any(fold in SIBLING_NAME_KEYS and names_a_secret(self._names, obj[key]) for key, fold in keys)

    def redact_binary(self, data: bytes) -> bytes:
        """A binary body or part without the catalogue's credential shapes (learned) and the values learned;
        every other byte kept."""
        text = data.decode("latin-1")  # one character per byte: the shapes and forms are ASCII
        found: list[str] = []
        scan = self._search(True).scan_bytes(data, data.lower())
        redacted = redact_shapes(text, None, found) if _SHAPES.may_apply(scan, self._names) else text
        self._learn_all(found)
        if self._known.levels and self.holds_learned(data):
            redacted = self._known.remove(redacted)
        return data if redacted == text else redacted.encode("latin-1", "replace")

    # Headers and forms.

    def redact_headers(self, pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Secret-named headers lose their value (learned), but cookie headers keep the cookies' names and a
        ``set-cookie``'s attributes; the other headers are redacted as text."""
        pairs = tuple(map(tuple, pairs))  # type: ignore[arg-type]  # pairs may come as lists
        if self._callables:  # a user's function may not answer the same twice
            return self._redacted_headers(pairs)
        known = self._known
        redacted, after = self._shared_headers.get((known, pairs), lambda: self._headers_from(known, pairs))
        self._adopt(known, after)
        return list(redacted)

    def _headers_from(self, known: Known, pairs: _Headers) -> tuple[_Headers, Known]:
        """``pairs`` redacted by a twin in the state ``known`` (not another thread's), and its state after."""
        twin = copy.copy(self)
        twin._lock, twin._known = threading.Lock(), known
        return tuple(twin._redacted_headers(pairs)), twin._known

    def _adopt(self, known: Known, after: Known) -> None:
        """Learn what redacting from ``known`` learned (on top of what was learned meanwhile)."""
        if after is known:
            return
        with self._lock:
            if self._known is known:
                self._known = after
                return
        self._learn_all(after.learned_since(known), 0)

    def _redacted_headers(self, pairs: _Headers) -> list[tuple[str, str]]:
        secret = [self._names.is_secret(name, 1) for name, _ in pairs]
        for (name, value), is_secret in zip(pairs, secret, strict=True):
            lower = name.lower()
            if is_secret and lower in _COOKIE_HEADERS:
                self._learn_all(item for _, item, _ in _cookie_pairs(value, lower == "set-cookie")[0])
            elif is_secret:
                self.learn(value)
        header = self._header_value  # a name holds no secret but by mistake (``X-Debug-sk-proj-...``)
        return [
            (header(name), self._secret_header_value(name, value) if is_secret else header(value))
            for (name, value), is_secret in zip(pairs, secret, strict=True)
        ]

    def _secret_header_value(self, name: str, value: str) -> str:
        lower = name.lower()
        if lower not in _COOKIE_HEADERS:
            return PLACEHOLDER
        pairs, rest = _cookie_pairs(value, lower == "set-cookie")
        kept = [head + (PLACEHOLDER if item else "") + tail for head, item, tail in pairs]
        return ";".join(kept) + (self.redact_text(rest) if rest else "")

    def _header_value(self, value: str) -> str:
        if self._callables:
            return self.redact_text(value)
        return self._header_values.get(value, lambda: self.redact_text(value), self._known.generation)

    def redact_form(self, text: str) -> str:
        """A form-encoded body whose secret-named fields lose their value (learned, decoded too)."""
        fields = [
            (name, sep, value, bool(sep) and self._names.is_secret(name, 2))
            for name, sep, value in (field.partition("=") for field in text.split("&"))
        ]
        self._learn_all(part for _, _, value, secret in fields if secret for part in (value, unquote_plus(value)))
        return "&".join(
            f"{name}={PLACEHOLDER}" if secret else self.redact_text(name + sep + value)
            for name, sep, value, secret in fields
        )

    def could_redact(self, text: str | bytes) -> bool:
        """Whether ``redact_text`` could change ``text`` (or its UTF-8), or ``redact_value`` it read as JSON
        (not ``redact_form``): a user's rule, an escape, a learned form or a rule that may apply. Learns nothing."""
        data = _utf8(text)
        if self._patterns or self._callables or data is None or _may_hold_escape(data):
            return True
        # No character but ``_LOWERING_TO_ASCII`` lower-cases to ASCII: a probe in the text's lower case is in this.
        search, lowered = self._search(True), data.lower()
        hits = search.find(lowered)
        rules = candidates(lowered, bool(hits))  # no probe found: only the rules that have none
        if not (hits or rules):
            return False
        scan = search.scan_bytes(data, lowered, hits)
        learned = scan.learned() or self._known.in_later_levels(data)
        return learned or any(rule.may_apply(scan, self._names) for rule in rules)


def remove_secret_values(obj: Any) -> Any:
    """Return a dumped structure with every secret replaced by ``[secret removed]``, by the default rules
    (with a redactor of its own: nothing is learned across calls)."""
    return Redactor().redact_value(obj)
