"""How the ``vcr-transport`` command writes to a terminal: colour, and a progress line for long runs.

Colour goes to a terminal only, and the environment decides first (https://no-color.org,
https://force-color.org), as CPython's own ``_colorize`` does: ``NO_COLOR`` set and not empty turns it off,
then ``FORCE_COLOR`` set and not empty turns it on, then ``TERM=dumb`` turns it off, else a terminal gets it.
The progress line goes to stderr only when stderr is a terminal, only once a run has lasted ``Progress.DELAY``
seconds, is rewritten in place at most every ``Progress.INTERVAL`` seconds and is erased at the end: a pipe,
a file, a CI log or a test never sees it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Final, TextIO

from .._display import visible

__all__ = ["PLAIN", "Paint", "Progress", "colour_wanted"]

# The roles a rendering gives to its pieces, and their SGR codes.
_STYLES: Final = {
    "bad": "31",  # a problem, a removed text
    "good": "32",  # all is well, an added text
    "warn": "33",  # a note, a change worth a look
    "dim": "2",  # what matters less: volatile fields, padding, counts
    "bold": "1",
}


def colour_wanted(stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether text written to ``stream`` is coloured (the precedence in this module's docstring)."""
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    if environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Paint:
    """Wraps a piece of text in the colour of its role (``_STYLES``), or leaves it as it is."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, role: str) -> str:
        """``text`` (``visible``: its own control characters escaped) in the colour of ``role``."""
        text = visible(text)
        if not self.enabled or not text:
            return text
        return f"\x1b[{_STYLES[role]}m{text}\x1b[0m"


PLAIN: Final = Paint(False)


class Progress:
    """One line on stderr saying how far a long run is (``update``), erased by ``close``."""

    DELAY = 1.0  # seconds a run lasts before the line appears
    INTERVAL = 0.2  # seconds between two rewrites of the line

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        *,
        enabled: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) if enabled is None else enabled
        self._clock = clock
        self._started = clock()
        self._last = 0.0
        self._width = 0  # of the line on the screen, to erase it

    def update(self, text: str) -> None:
        """Show ``label: text``, when the run has lasted long enough and the line was not just rewritten."""
        if not self.enabled:
            return
        now = self._clock()
        if now - self._started < self.DELAY or now - self._last < self.INTERVAL:
            return
        self._last = now
        line = f"{self.label}: {text}"
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = len(line)

    def close(self) -> None:
        """Erase the line, if one was shown."""
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
