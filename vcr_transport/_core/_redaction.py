"""Redaction: the rules that keep secrets out of every byte written to a cassette.

Secrets are found by name (header names, query parameter names, form fields, JSON keys) and by shape
(``Bearer`` credentials, ``sk-`` keys, Google API keys, secret query parameters, URL userinfo). The
defaults can't be removed; users add names, patterns or callables.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["PLACEHOLDER", "SECRET_FIELD_NAMES", "Redactor", "remove_secret_values"]

PLACEHOLDER = "[secret removed]"

SECRET_FIELD_NAMES: frozenset[str] = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api_key",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "cookie",
        "set-cookie",
        "secret",
        "client_secret",
        "password",
        "session_key",
    }
)

# A name whose words end with one of these is a secret too: github_token, stripe_secret_key, db_password,
# X-Custom-Api-Key. Plural counters (max_tokens, num_keys) end with another word and stay.
_SECRET_SUFFIXES: tuple[tuple[str, ...], ...] = (
    ("token",),
    ("secret",),
    ("password",),
    ("passwd",),
    ("cookie",),
    ("authorization",),
    ("apikey",),
    ("api", "key"),
    ("secret", "key"),
    ("private", "key"),
    ("access", "key"),
    ("session", "key"),
)
# Names that end like a secret but carry data: pagination cursors.
_NOT_SECRET_SUFFIXES: tuple[tuple[str, ...], ...] = (("page", "token"),)
# Query parameter names that are secrets there only: Google's `?key=`. In JSON, "key" is ordinary data
# (Gemini's customMetadata is a list of {"key": ..., "stringValue": ...}).
_QUERY_ONLY_SECRETS = frozenset({("key",)})

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
_CREDENTIAL_SHAPE = re.compile(r"[A-Za-z0-9._~+/=-]{16,}")

# A key shape must stand alone: not inside a longer run of base64 or URL-safe base64 characters.
_BEFORE = r"A-Za-z0-9_+/\-"
_AFTER = r"A-Za-z0-9_+/=\-"
# Each rule runs only when a cheap substring test says it could match: most stream text has none.
_JSON_KEY = re.compile(r"\"(?P<key>[^\"\\]{1,100})\"\s*:\s*")
_JSON_STRING_REST = re.compile(r"(?:[^\"\\]|\\.)*\"")
_JSON_SCALAR = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null")
_QUOTED_PLACEHOLDER = f'"{PLACEHOLDER}"'


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


_BEARER = re.compile(r"(?P<word>\b[Bb]earer\s+)[A-Za-z0-9._~+/=-]{8,}")
_SK_KEY = re.compile(rf"(?<![{_BEFORE}])sk-[A-Za-z0-9_-]{{20,}}(?![{_AFTER}])")
_GOOGLE_KEY = re.compile(rf"(?<![{_BEFORE}])AIza[0-9A-Za-z_-]{{35}}(?![{_AFTER}])")
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@:\[\]\"']+:[^/\s@\"']*@")
_QUERY = re.compile(r"(?P<sep>[?&;])(?P<name>[A-Za-z0-9_.\-]{1,64})=(?P<value>\[secret removed\]|[^&#\s\"'<>\\]+)")


def _words(name: str) -> tuple[str, ...]:
    return tuple(word.lower() for word in _WORD_SPLIT.split(name) if word)


def _ends_with(words: tuple[str, ...], suffixes: Iterable[tuple[str, ...]]) -> bool:
    return any(words[-len(suffix) :] == suffix for suffix in suffixes if len(words) >= len(suffix))


def has_credential_shape(value: str) -> bool:
    """A long run of credential characters holding both letters and digits: a key, not a word."""
    return (
        _CREDENTIAL_SHAPE.fullmatch(value) is not None
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


class Redactor:
    """Finds and removes secrets. The default rules always apply; the arguments only add to them.

    ``names``: more secret names (matched as whole names and as name suffixes, case-insensitive).
    ``patterns``: regular expressions whose matches are replaced in every string.
    ``callables``: functions called with every string; they return it with their secrets replaced.
    """

    def __init__(
        self,
        names: Iterable[str] = (),
        patterns: Iterable[str | re.Pattern[str]] = (),
        callables: Iterable[Callable[[str], str]] = (),
    ) -> None:
        extra = {_words(name) for name in names}
        self._names = frozenset({_words(name) for name in SECRET_FIELD_NAMES} | extra)
        self._suffixes = _SECRET_SUFFIXES + tuple(extra)
        # A JSON key can only be secret if the lower-cased text holds the last word of some secret name.
        words = {words[-1] for words in (*self._names, *self._suffixes) if words}
        # "key" already finds "apikey": search only for words no other word is part of.
        self._name_words = tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))
        self._patterns = tuple(re.compile(p) if isinstance(p, str) else p for p in patterns)
        self._callables = tuple(callables)
        self._name_cache: dict[str, bool] = {}

    def is_secret_name(self, name: str, *, query: bool = False) -> bool:
        if query and _words(name) in _QUERY_ONLY_SECRETS:
            return True
        cached = self._name_cache.get(name)
        if cached is None:
            words = _words(name)
            cached = bool(words) and (
                words in self._names
                or (_ends_with(words, self._suffixes) and not _ends_with(words, _NOT_SECRET_SUFFIXES))
            )
            self._name_cache[name] = cached
        return cached

    def _removes_value(self, name: str, value: Any, response: bool) -> bool:
        """A bare ``token`` in a response is a text token of logprobs unless it looks like a credential."""
        if not self.is_secret_name(name):
            return False
        if response and _words(name) == ("token",):
            return isinstance(value, str) and has_credential_shape(value)
        return True

    def redact_text(self, text: str, *, response: bool = False) -> str:
        """Replace every secret-shaped value, and every secret-named JSON or query value, in free text."""
        if text == PLACEHOLDER:
            return text
        lowered = text.lower()
        if '"' in text and any(word in lowered for word in self._name_words):
            text = self._redact_json_values(text, response)
        if "earer" in text:
            text = _BEARER.sub(lambda m: m["word"] + PLACEHOLDER, text)
        if "sk-" in text:
            text = _SK_KEY.sub(PLACEHOLDER, text)
        if "AIza" in text:
            text = _GOOGLE_KEY.sub(PLACEHOLDER, text)
        if "@" in text and "://" in text:
            text = _USERINFO.sub(lambda m: m["scheme"] + PLACEHOLDER + "@", text)
        if "=" in text:
            text = _QUERY.sub(self._replace_query, text)
        for pattern in self._patterns:
            text = pattern.sub(PLACEHOLDER, text)
        for function in self._callables:
            text = function(text)
        return text

    def _redact_json_values(self, text: str, response: bool) -> str:
        """JSON text: the whole value of every secret-named key (string, number, object or array)."""
        pieces, position = [], 0
        for match in _JSON_KEY.finditer(text):
            start = match.end()
            if match.start() < position or not self.is_secret_name(match["key"]):
                continue
            end = _json_value_end(text, start)
            if end < 0 or text[start:end] == _QUOTED_PLACEHOLDER:
                continue
            value = text[start + 1 : end - 1] if text[start] == '"' else text[start:end]
            if not self._removes_value(match["key"], value if text[start] == '"' else None, response):
                continue
            pieces += [text[position:start], _QUOTED_PLACEHOLDER]
            position = end
        return "".join(pieces) + text[position:] if pieces else text

    def _replace_query(self, match: re.Match[str]) -> str:
        if match["value"] != PLACEHOLDER and self.is_secret_name(match["name"], query=True):
            return f"{match['sep']}{match['name']}={PLACEHOLDER}"
        return match.group(0)

    def redact_value(self, obj: Any, *, response: bool = False) -> Any:
        """Walk a dumped structure: secret-named keys lose their whole value, strings lose secret shapes."""
        if isinstance(obj, str):
            return self.redact_text(obj, response=response)
        if isinstance(obj, Mapping):
            return {
                key: PLACEHOLDER
                if isinstance(key, str) and self._removes_value(key, value, response)
                else self.redact_value(value, response=response)
                for key, value in obj.items()
            }
        if isinstance(obj, list | tuple):
            return [self.redact_value(item, response=response) for item in obj]
        return obj

    def redact_headers(self, pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(name, PLACEHOLDER if self.is_secret_name(name) else self.redact_text(value)) for name, value in pairs]

    def redact_form(self, text: str) -> str:
        """A form-encoded body: each field named like a secret loses its value; the rest keep their bytes."""
        fields = []
        for field in text.split("&"):
            name, sep, value = field.partition("=")
            secret = sep and self.is_secret_name(name, query=True)
            fields.append(f"{name}={PLACEHOLDER}" if secret else self.redact_text(field))
        return "&".join(fields)


DEFAULT_REDACTOR = Redactor()


def remove_secret_values(obj: Any) -> Any:
    """Return a dumped structure with every secret replaced by ``[secret removed]``, by the default rules."""
    return DEFAULT_REDACTOR.redact_value(obj)
