"""The vcr-transport command (to come)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    raise SystemExit("vcr-transport: not yet available")
