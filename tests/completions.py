"""The shell completion scripts shipped in ``vcr_transport/_tools/completions/``, generated from the command's own
parser by shtab (a tool of the dev group: the package needs nothing at run time to serve them). Run this file
after changing the parser; ``tests/test_cli.py`` fails while a committed script is stale.

    .venv/bin/python tests/completions.py
"""

from __future__ import annotations

from pathlib import Path

import shtab

from vcr_transport._tools._cli import build_parser

SHELLS = ("bash", "zsh", "fish")
FOLDER = Path(__file__).resolve().parent.parent / "vcr_transport" / "_tools" / "completions"


def script(shell: str) -> str:
    """The completion script for ``shell``, as shtab writes it from the parser."""
    return shtab.complete(build_parser(), shell=shell)


def main() -> None:
    FOLDER.mkdir(exist_ok=True)
    for shell in SHELLS:
        (FOLDER / f"vcr-transport.{shell}").write_text(script(shell), encoding="utf-8")
        print(f"wrote {FOLDER / f'vcr-transport.{shell}'}")


if __name__ == "__main__":
    main()
