"""How a value is shown in a message: ``MISSING`` stands for a value one side lacks (a key on one side of a
field-path difference only), and ``shorten`` cuts a value's repr to a readable length. No I/O."""

from __future__ import annotations

from typing import Any

__all__ = ["MISSING", "shorten"]

MISSING: Any = "<missing>"


def shorten(value: Any, limit: int = 80) -> str:
    """The repr of a value, cut to a readable length (``MISSING`` shown as itself)."""
    text = value if value is MISSING else repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text
