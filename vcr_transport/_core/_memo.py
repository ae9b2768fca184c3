"""The one memo helper: values worked out once per key and remembered, up to a bound. No I/O.

Every cache in the package is a ``Memo``: one eviction rule (past ``size`` entries, everything is forgotten
at once: the keys a program meets repeat, and a bound keeps memory flat when they don't) and one
invalidation rule (a memo made with a ``generation`` forgets everything when the generation it is asked
with is not, by identity, the one its values were worked out under: the redactor's learned forms, say,
which are a new tuple whenever a secret is learned).

``lazy_pattern`` is a regular expression worked out once too: compiled on its first use, not at import.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Hashable
from typing import Any, AnyStr, Generic, TypeVar, cast

__all__ = ["Memo", "lazy_pattern"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_NO_GENERATION = object()


class Memo(Generic[K, V]):
    """``memo.get(key, compute)``: ``compute()`` the first time a key is asked for, the remembered value
    after. ``generation``: the values are those worked out under this object; asked with another, the
    memo starts afresh. Safe to share between threads (a value may be worked out twice by two threads at
    once; both get a correct one)."""

    __slots__ = ("_generation", "_lock", "_size", "_values")

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._values: dict[K, V] = {}
        self._generation: object = _NO_GENERATION
        self._lock = threading.Lock()

    def get(self, key: K, compute: Callable[[], V], generation: object = _NO_GENERATION) -> V:
        if generation is not self._generation:
            with self._lock:
                if generation is not self._generation:
                    self._values = {}
                    self._generation = generation
        values = self._values
        try:
            return values[key]
        except KeyError:
            pass
        value = compute()
        if self._generation is generation:  # not forgotten meanwhile for another generation
            if len(values) >= self._size:
                values.clear()
            values[key] = value
        return value

    def clear(self) -> None:
        with self._lock:
            self._values = {}
            self._generation = _NO_GENERATION

    def __len__(self) -> int:
        return len(self._values)


# What a compiled pattern offers: its first use sets them all on the stand-in.
_PATTERN_ATTRIBUTES = (
    "match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer", "scanner",
    "pattern", "flags", "groups", "groupindex",
)  # fmt: skip


class _LazyPattern(Generic[AnyStr]):
    """A stand-in for ``re.compile(pattern, flags)`` that compiles it on the first read of an attribute (of
    its methods, ``.pattern``, ...), then keeps the compiled pattern's attributes as its own: later calls are
    the compiled pattern's bound methods, found in the instance, with nothing in between. Two threads may
    compile it at once: ``re``'s own cache makes that one compilation."""

    def __init__(self, pattern: AnyStr, flags: int) -> None:
        self._pattern: AnyStr = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # a probe (copy's ``__deepcopy__``...) or a copy not yet set up: not a pattern's
            raise AttributeError(name)
        compiled = re.compile(self._pattern, self._flags)
        for attribute in _PATTERN_ATTRIBUTES:
            setattr(self, attribute, getattr(compiled, attribute))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_pattern({self._pattern!r}, {self._flags})"


def lazy_pattern(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)`` on the pattern's first use: a module's patterns that a process may never
    use cost nothing at import. Used as the pattern (``.match``, ``.sub``...), never checked with ``isinstance``."""
    return cast("re.Pattern[AnyStr]", _LazyPattern(pattern, flags))
