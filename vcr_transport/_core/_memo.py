"""The one memo helper: values worked out once per key and remembered, up to a bound. No I/O.

Every cache in the package is a ``Memo``: one eviction rule (past ``size`` entries, everything is forgotten
at once: the keys a program meets repeat, and a bound keeps memory flat when they don't) and one
invalidation rule (a memo made with a ``generation`` forgets everything when the generation it is asked
with is not, by identity, the one its values were worked out under: the redactor's learned forms, say,
which are a new tuple whenever a secret is learned).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Memo"]

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
