"""How a value is shown in a message: ``MISSING`` stands for a value one side lacks (a key on one side of a
field-path difference only), ``shorten`` cuts a value's repr to a readable length, and ``side_by_side``
shows two long strings as a window around where they first differ, as pytest does. No I/O."""

from __future__ import annotations

from typing import Any

__all__ = ["MISSING", "shorten", "side_by_side"]

MISSING: Any = "<missing>"
_CONTEXT = 24  # characters shown on each side of the part that differs
_MIDDLE = 40  # the most of the differing part shown


def shorten(value: Any, limit: int = 80) -> str:
    """The repr of a value, cut to a readable length (``MISSING`` shown as itself)."""
    text = value if value is MISSING else repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def side_by_side(recorded: Any, incoming: Any, limit: int = 80) -> tuple[str, str]:
    """Two values as a message shows them: two strings of which one is too long to show whole as a window
    around the part that differs, in brackets on both sides (``'...Be [concise]. Answer...'`` against
    ``'...Be [verbose]. Answer...'``); anything else through ``shorten``."""
    if not (isinstance(recorded, str) and isinstance(incoming, str) and recorded is not MISSING):
        return shorten(recorded, limit), shorten(incoming, limit)
    if incoming is MISSING or max(len(repr(recorded)), len(repr(incoming))) <= limit:
        return shorten(recorded, limit), shorten(incoming, limit)
    start = 0
    shortest = min(len(recorded), len(incoming))
    while start < shortest and recorded[start] == incoming[start]:
        start += 1
    end = 0  # the length of the common end, not reaching into the common start
    while end < shortest - start and recorded[-1 - end] == incoming[-1 - end]:
        end += 1
    while start and recorded[start - 1].isalnum():  # whole words: [concise] against [verbose]
        start -= 1
    while end and recorded[-end].isalnum():
        end -= 1
    return _window(recorded, start, len(recorded) - end), _window(incoming, start, len(incoming) - end)


def _window(text: str, start: int, stop: int) -> str:
    """``text[start:stop]`` in brackets, with up to ``_CONTEXT`` characters around it, as a repr."""
    middle = text[start:stop]
    if len(middle) > _MIDDLE:
        middle = middle[: _MIDDLE - 3] + "..."
    before = text[max(0, start - _CONTEXT) : start]
    after = text[stop : stop + _CONTEXT]
    shown = repr(before + "\x00" + middle + "\x01" + after)[1:-1].replace("\\x00", "[").replace("\\x01", "]")
    return "'" + ("..." if start > _CONTEXT else "") + shown + ("..." if stop + _CONTEXT < len(text) else "") + "'"
