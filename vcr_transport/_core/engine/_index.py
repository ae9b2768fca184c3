"""Matching by index: the recorded calls a request may take, found by a hash of its comparable request, so
that choosing among many calls is a lookup, and only a miss compares field by field. No I/O.

A key hashes what ``RequestMatcher.difference`` compares (the sections ``RequestMatcher.keyed_sections``
names, each encoded with its keys sorted): a request and a call it finds no difference between have the
same key. Where a difference doesn't count, the key leaves it out:

- a recorded ``PLACEHOLDER`` matches any string (the final pass removed a secret that the replay learns only
  later): a recorded call's key comes with the paths of its placeholders (its *mask*), and a request is keyed,
  once per mask among the calls it is looked up in, with the strings at those paths made the placeholder;
- under ``match_on``, headers are compared by the names the recording kept: they are not in the key.

A key only narrows: every call it finds is then compared in full (two requests may share a hash). A
request or call that can't be encoded (a normaliser's dict with keys that aren't strings, nesting deeper
than the encoder goes) has no key: it is compared with every call. Equal values of another type (1 and 1.0,
True and 1) are a difference, as the field-by-field walk always named them (they used to match when nothing
else differed).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import msgspec

from ..._display import MISSING
from ..rules._redaction import PLACEHOLDER

__all__ = ["CallIndex", "CallKey", "Mask", "RequestKeys", "call_key"]

# The paths of a recorded call's placeholders: each a section, and the keys and list positions in it.
Steps = tuple[str | int, ...]
Mask = tuple[tuple[str, Steps], ...]
CallKey = tuple[Mask, int | None]

_QUOTED_PLACEHOLDER = msgspec.json.encode(PLACEHOLDER)


def _opaque(value: Any) -> str:
    """What a value JSON has no form for is encoded as: its type (equal values share it; the full
    comparison tells them apart)."""
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


_encode = msgspec.json.Encoder(order="sorted", enc_hook=_opaque).encode


class _Unkeyed(Exception):
    """A request that gets no key: it is compared with every call."""


def _texts(fields: Mapping[str, Any], sections: Sequence[str]) -> tuple[bytes, ...]:
    try:
        return tuple(_encode(fields[section]) for section in sections)
    except (TypeError, ValueError, RecursionError, msgspec.EncodeError):
        raise _Unkeyed from None


def _placeholders(value: Any) -> Iterator[Steps]:
    """The paths of the strings in ``value`` that are the placeholder (without recursion)."""
    stack: list[tuple[Steps, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            stack.extend(((*path, key), child) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend(((*path, position), child) for position, child in enumerate(item))
        elif isinstance(item, str) and item == PLACEHOLDER:
            yield path


def call_key(fields: Mapping[str, Any], sections: Sequence[str]) -> CallKey:
    """A recorded call's (mask, key) from its comparable fields; the key None when it has none."""
    try:
        texts = _texts(fields, sections)
    except _Unkeyed:
        return (), None
    mask = tuple(
        sorted(
            (path for section, text in zip(sections, texts, strict=True) if _QUOTED_PLACEHOLDER in text
             for path in ((section, steps) for steps in _placeholders(fields[section]))),
            key=repr,
        )
    )  # fmt: skip
    return mask, hash(texts)


def _with_placeholder(value: Any, steps: Steps) -> Any:
    """``value`` with the string at ``steps`` made the placeholder (a key not there is added as it: a recorded
    placeholder matches a missing field too); unchanged where the path leads to anything else."""
    if not steps:
        return PLACEHOLDER if isinstance(value, str) else value
    step, rest = steps[0], steps[1:]
    if isinstance(value, dict) and isinstance(step, str):
        return {**value, step: _with_placeholder(value.get(step, MISSING), rest)}
    if isinstance(value, list) and isinstance(step, int):
        if step >= len(value):
            raise _Unkeyed  # a recorded placeholder past the request's items: only the walk can tell
        return [*value[:step], _with_placeholder(value[step], rest), *value[step + 1 :]]
    return value


class RequestKeys:
    """The keys of one request (its comparable fields), one per mask, each worked out when first asked."""

    def __init__(self, fields: dict[str, Any], sections: Sequence[str]) -> None:
        self.fields = fields
        self._sections = tuple(sections)
        self._keys: dict[Mask, int | None] = {}

    def key(self, mask: Mask) -> int | None:
        """The request's key as seen by the calls with placeholders at ``mask``; None when it has none."""
        try:
            return self._keys[mask]
        except KeyError:
            pass
        try:
            key: int | None = hash(_texts(self._masked(mask), self._sections))
        except _Unkeyed:
            key = None
        self._keys[mask] = key
        return key

    def _masked(self, mask: Mask) -> Mapping[str, Any]:
        fields = self.fields
        for section, steps in mask:
            try:
                fields = {**fields, section: _with_placeholder(fields[section], steps)}
            except RecursionError:
                raise _Unkeyed from None
        return fields


class CallIndex:
    """Recorded calls by key, for the requests that may take one of them: ``candidates`` gives those a
    request may match, in call order. ``key_of`` gives a call's (mask, key), remembered by its caller: it
    is asked only once the index holds more than one call (a single call needs no narrowing)."""

    def __init__(self, key_of: Callable[[int], CallKey], calls: Iterable[int] = ()) -> None:
        self._key_of = key_of
        self._pending = sorted(calls)  # not keyed yet
        self._buckets: dict[Mask, dict[int | None, list[int]]] = {}
        self._count = len(self._pending)

    def add(self, index: int) -> None:
        bisect.insort(self._pending if self._pending or not self._count else self._bucket(index), index)
        self._count += 1

    def discard(self, index: int) -> None:
        """Take call ``index`` out of the index, if it is there."""
        position = bisect.bisect_left(self._pending, index)
        if position < len(self._pending) and self._pending[position] == index:
            del self._pending[position]
            self._count -= 1
            return
        mask, key = self._key_of(index)
        bucket = self._buckets.get(mask, {}).get(key, [])
        position = bisect.bisect_left(bucket, index)
        if position < len(bucket) and bucket[position] == index:
            del bucket[position]
            self._count -= 1

    def calls(self) -> list[int]:
        """Every call in the index, in call order."""
        return sorted([*self._pending, *(i for bucket in self._all() for i in bucket)])

    def candidates(self, request: RequestKeys, reverse: bool = False) -> Iterator[int]:
        """The calls that may match the request, in call order (last first when ``reverse``): those with its
        key, and those with none; every call when the request has no key."""
        if self._count <= 1:
            return iter(self.calls())
        for index in self._pending:
            self._bucket(index).append(index)
        self._pending = []
        found: list[Sequence[int]] = []
        for mask, buckets in self._buckets.items():
            key = request.key(mask)
            found.extend(buckets.values() if key is None else (buckets.get(key, ()), buckets.get(None, ())))
        if reverse:
            return heapq.merge(*(reversed(bucket) for bucket in found), reverse=True)
        return heapq.merge(*found)

    def _bucket(self, index: int) -> list[int]:
        mask, key = self._key_of(index)
        return self._buckets.setdefault(mask, {}).setdefault(key, [])

    def _all(self) -> Iterator[list[int]]:
        for buckets in self._buckets.values():
            yield from buckets.values()
