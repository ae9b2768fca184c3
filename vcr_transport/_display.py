"""How a value is shown in a message: ``visible`` makes recorded text safe to show, ``MISSING`` stands for a
value one side lacks (a key on one side of a field-path difference only), ``shorten`` cuts a value's repr to a
readable length, and ``side_by_side`` shows two long strings as a window around where they first differ, as
pytest does. No I/O.

A cassette is untrusted: a control character it holds, written raw to a terminal, can set the clipboard
(OSC 52), plant a hyperlink (OSC 8) or erase the lines above (``CR ESC[2K ESC[1A``), and a bidi control can
reorder what a reviewer reads (Trojan Source). Every text view (``show``, its textconv, ``diff``, the
management commands, ``serve``'s log, exception messages, the pytest report) passes recorded text through
``visible`` on its way out; ``repr`` (``shorten``, ``side_by_side``) already escapes the same characters.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["MISSING", "shorten", "side_by_side", "visible", "visible_json"]

# What ``visible`` escapes: C0 controls but the tab (and the newline, in a text shown as lines), DEL, C1
# controls, lone surrogates (which no terminal encoding can write), and the characters that reorder or hide
# text: bidi controls and marks, zero-width and invisible format characters (the soft hyphen, Arabic number
# signs, musical formatting...), line and paragraph separators,
# interlinear annotations and Unicode tags (which smuggle invisible ASCII). Zero-width (non-)joiners stay:
# scripts and emoji need them, and they hide nothing.
_HIDDEN = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b\u200e\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)  # every format character (Unicode 15.1's category Cf) but the joiners, and more


@functools.cache
def _unsafe(newlines: bool) -> re.Pattern[str]:
    """What ``visible`` escapes (but the newline, with ``newlines``), compiled on first use: a large class,
    which a process that shows nothing never pays for."""
    if newlines:
        return re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_HIDDEN}]")
    return re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_HIDDEN}]")


MISSING: Any = "<missing>"
_CONTEXT = 24  # characters shown on each side of the part that differs
_MIDDLE = 40  # the most of the differing part shown


_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escaped(found: re.Match[str]) -> str:
    code = ord(found[0])
    if found[0] in _NAMED:
        return _NAMED[found[0]]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str, *, newlines: bool = False) -> str:
    """``text`` safe to show on a terminal or in a review: each character of ``_HIDDEN`` and each control
    character but the tab written as its escape, as ``repr`` writes it (ESC as ``\\x1b``, U+202E as
    ``\\u202e``, CR as ``\\r``). The newline too, unless ``newlines`` (a text shown as lines: a message).
    Backslashes are left as they are, so that ``visible`` of a visible text is that text."""
    unsafe = _unsafe(newlines)
    return unsafe.sub(_escaped, text) if unsafe.search(text) else text


def _json_escaped(found: re.Match[str]) -> str:
    code = ord(found[0])
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible_json(document: str) -> str:
    """A JSON document (``json.dumps`` with ``ensure_ascii=False``) safe to show, and the same document: each
    character ``visible`` escapes, which JSON leaves raw (DEL, C1, bidi controls, lone surrogates), written
    as JSON's own ``\\u`` escape. Such characters sit inside strings only, so no value changes."""
    unsafe = _unsafe(True)
    return unsafe.sub(_json_escaped, document) if unsafe.search(document) else document


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
