"""``_term``: colour by NO_COLOR / FORCE_COLOR / TERM / a terminal, and the progress line on stderr."""

from __future__ import annotations

import io

import pytest

from vcr_transport._tools._term import Paint, Progress, colour_wanted


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("environ", "tty", "wanted"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": ""}, True, True),  # set but empty: not honoured (no-color.org)
        ({"FORCE_COLOR": "1"}, False, True),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, False, False),  # NO_COLOR first
        ({"TERM": "dumb"}, True, False),
        ({"TERM": "dumb", "FORCE_COLOR": "1"}, False, True),
    ],
)
def test_colour_precedence(environ: dict[str, str], tty: bool, wanted: bool) -> None:
    assert colour_wanted(Tty() if tty else io.StringIO(), environ) is wanted


def test_paint_wraps_only_when_enabled() -> None:
    assert Paint(True)("bad", "bad") == "\x1b[31mbad\x1b[0m"
    assert Paint(False)("bad", "bad") == "bad"
    assert Paint(True)("", "bad") == ""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_progress_line_waits_then_is_rewritten_in_place_and_erased() -> None:
    stream, clock = Tty(), Clock()
    progress = Progress("scan", stream, clock=clock)
    progress.update("1 of 9 files")  # too early: a quick run shows nothing
    assert stream.getvalue() == ""
    clock.now = 1.5
    progress.update("2 of 9 files")
    clock.now = 1.55
    progress.update("3 of 9 files")  # too soon after the last rewrite
    clock.now = 2.0
    progress.update("4 of 9")
    progress.close()
    assert stream.getvalue() == "\rscan: 2 of 9 files\rscan: 4 of 9      \r" + " " * 12 + "\r"


def test_no_progress_line_off_a_terminal() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress("scan", stream, clock=clock)
    clock.now = 5.0
    progress.update("2 of 9 files")
    progress.close()
    assert stream.getvalue() == ""


def test_paint_shows_its_text_escaped_with_colour_on_or_off() -> None:
    """A painted piece of a cassette (a path, a value) can't carry its own escape sequence to the terminal:
    only the colour codes Paint adds are raw."""
    hostile = "x\x1b]52;c;AAAA\x07\u202ey"
    assert Paint(False)(hostile, "bad") == "x\\x1b]52;c;AAAA\\x07\\u202ey"
    assert Paint(True)(hostile, "bad") == "\x1b[31mx\\x1b]52;c;AAAA\\x07\\u202ey\x1b[0m"
