"""Regular expressions: ours compiled on first use (``regex``); the user's (``redact_patterns``, ``normalize_patterns``,
``re:`` host rules), which run on what the network sends, by RE2, imported then: linear time whatever the pattern, and
``\\w``, ``\\d``, ``\\s``, ``\\b`` ASCII. A pattern RE2 refuses is refused where given, with the fix."""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["UserPattern", "regex", "user_pattern"]

regex = functools.cache(re.compile)
# A compiled pattern's flags as RE2's inline flags (re.UNICODE is every str pattern's).
_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
_ACCEPTED = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.UNICODE | re.ASCII


def user_pattern(pattern: str | re.Pattern[str], where: str) -> UserPattern:
    """``pattern`` compiled by RE2; a ValueError naming ``where`` (the option), the pattern, why and the fix."""
    text, flags = (pattern, 0) if isinstance(pattern, str) else (pattern.pattern, pattern.flags)
    if flags & ~_ACCEPTED:
        raise ValueError(
            f"{where}: pattern {text!r} has flags RE2 does not take (re.VERBOSE): user patterns run on RE2, "
            "in time linear in the text; compile it without them"
        )
    try:
        return _compiled(text, "".join(letter for flag, letter in _FLAGS if flags & flag))
    except ValueError as error:
        raise ValueError(
            f"{where}: pattern {text!r} is refused by RE2 ({error}), which runs user patterns in time linear in "
            "the text and has no lookaround or backreference: write it without them, or as a function "
            "(redact_with, normalize_with)"
        ) from None


class _Linear:
    """RE2's pattern with the ``re.Pattern`` methods we use, run on the text's UTF-8 (a lone surrogate, which a JSON
    string may hold, matches no character); ``match`` and ``search`` give a match of bytes."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str, compiled: Any) -> None:
        self.pattern, self._compiled = pattern, compiled

    def sub(self, repl: str, string: str) -> str:
        data = string.encode("utf-8", "surrogatepass")
        if self._compiled.search(data) is None:
            return string  # the common case, at half the cost of a substitution
        replaced: bytes = self._compiled.sub(repl.encode("utf-8", "surrogatepass"), data)
        return replaced.decode("utf-8", "surrogatepass")

    def match(self, string: str) -> Any:
        return self._compiled.match(string.encode("utf-8", "surrogatepass"))

    def search(self, string: str) -> Any:
        return self._compiled.search(string.encode("utf-8", "surrogatepass"))


UserPattern = _Linear  # what ``user_pattern`` gives


@functools.lru_cache(maxsize=256)
def _compiled(text: str, inline: str) -> UserPattern:
    import re2  # lazily: only a user pattern loads RE2

    options = re2.Options()
    options.log_errors = False  # the refusal says why, on no stream of RE2's own
    try:
        full = f"(?{inline}){text}" if inline else text
        return _Linear(text, re2.compile(full.encode("utf-8", "surrogatepass"), options))
    except re2.error as error:
        reason = error.args[0] if error.args else error
        raise ValueError(reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)) from None
