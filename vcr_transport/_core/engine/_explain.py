"""What a replay mismatch says beyond its first line: what kind of difference it is, and the option that
would make it replay. No I/O.

- A value that looks volatile (a UUID, an ISO or common timestamp, a Unix-epoch time, a temporary path, a
  hex id) gets the exact option that replays it, with the field's path: ``ignore_fields`` (or
  ``ignore_headers``) when the whole value is volatile, ``normalize_patterns`` when it sits inside a string.
- A list holding the same items in another order is named: that is the app's own nondeterminism (tool
  results appended as they complete).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["VOLATILE_SHAPES", "reordered_lists", "volatile_suggestion"]

# (what it is, the regular expression, the text normalize_patterns puts in its place). Written without '"',
# so that a suggestion can quote them as r"...".
VOLATILE_SHAPES: tuple[tuple[str, str, str], ...] = (
    ("a UUID", r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<uuid>"),
    (
        "an ISO timestamp",
        r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?",
        "<timestamp>",
    ),
    (
        "a timestamp",
        r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),? )?\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* "
        r"\d{4}(?: \d{2}:\d{2}(?::\d{2})?(?: ?(?:GMT|UTC|[+-]\d{4}))?)?",
        "<timestamp>",
    ),
    ("a time of day", r"\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b", "<time>"),
    ("a Unix-epoch time", r"\b1\d{9}(?:\d{3})?(?:\.\d+)?\b", "<epoch>"),
    ("a temporary path", r"(?:/private)?(?:/tmp|/var/folders|/var/tmp)(?:/[\w.-]++)++|\btmp[a-z0-9_]{8}\b", "<tmp>"),
    ("a hex id", r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b", "<hex>"),
)
_COMPILED = tuple((what, re.compile(pattern), pattern, replacement) for what, pattern, replacement in VOLATILE_SHAPES)
_EPOCH_SECONDS = (1e9, 2e9)  # 2001 to 2033
_EPOCH_MILLISECONDS = (1e12, 2e12)


def _epoch(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return any(low <= value < high for low, high in (_EPOCH_SECONDS, _EPOCH_MILLISECONDS))


def _ignore_option(path: str) -> str:
    """The option that skips the field at ``path`` (a mismatch's path)."""
    if path.startswith(("body.", "body[")):
        return f"ignore_fields=[{path!r}]".replace("'", '"')
    if path.startswith("headers."):
        return f'ignore_headers=["{path.removeprefix("headers.")}"]'
    return f'normalize_with=[lambda path, value: "<ignored>" if path == "{path}" else value]'


def volatile_suggestion(path: str, recorded: Any, incoming: Any) -> str:
    """What to say about a differing field whose values look volatile, with the option that replays it; ""
    when they don't."""
    if _epoch(recorded) and _epoch(incoming):
        return f"{path} looks like a Unix-epoch time, different on every run: to replay it, pass {_ignore_option(path)}"
    if not (isinstance(recorded, str) and isinstance(incoming, str)):
        return ""
    for what, compiled, pattern, replacement in _COMPILED:
        if compiled.sub(replacement, recorded) != compiled.sub(replacement, incoming):
            continue
        if compiled.fullmatch(recorded) and compiled.fullmatch(incoming):
            return f"{path} looks like {what}, different on every run: to replay it, pass {_ignore_option(path)}"
        return (
            f"{path} holds {what} that differs from run to run: to replay it, pass "
            f'normalize_patterns=[(r"{pattern}", "{replacement}")]'
        )
    return ""


_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def _steps(path: str) -> list[str | int]:
    """The steps of a mismatch's path after its section: ``body.messages[2].content`` is body, messages, 2,
    content."""
    section = path.split(".", 1)[0].split("[", 1)[0]
    steps: list[str | int] = [section]
    for key, index in _STEP.findall(path[len(section) :]):
        steps.append(int(index) if index else key)
    return steps


def _canonical(item: Any) -> str:
    return json.dumps(item, sort_keys=True, default=str)


def reordered_lists(recorded: dict[str, Any], incoming: dict[str, Any], paths: Iterable[str]) -> list[str]:
    """The paths of the lists on the way to ``paths`` that hold the same items on both sides in another
    order (outermost first, each once)."""
    found: list[str] = []
    for path in paths:
        steps = _steps(path)
        left: Any = recorded
        right: Any = incoming
        shown = ""
        for step in steps:
            if isinstance(left, list) and isinstance(right, list) and isinstance(step, int):
                if shown not in found and _same_items(left, right):
                    found.append(shown)
                    break
            try:
                left, right = left[step], right[step]
            except (KeyError, IndexError, TypeError):
                break
            shown = f"{shown}[{step}]" if isinstance(step, int) else (f"{shown}.{step}" if shown else step)
    return found


def _same_items(left: Sequence[Any], right: Sequence[Any]) -> bool:
    if len(left) != len(right) or left == right:
        return False
    return sorted(map(_canonical, left)) == sorted(map(_canonical, right))
