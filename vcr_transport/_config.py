"""The mode switch, resolved in one place.

| precedence | where                                   | example                                  |
|------------|-----------------------------------------|------------------------------------------|
| 1          | an explicit argument                    | ``use_cassette(path, mode="replay")``    |
| 2          | the pytest option                       | ``pytest --vcr-mode=record``             |
| 3          | the environment variable                | ``VCR_TRANSPORT_MODE=record``            |
| 4          | ``[tool.vcr_transport]`` in pyproject   | ``mode = "replay"``                      |
| 5          | the default                             | ``auto``                                 |

``auto`` replays an existing cassette and records a missing one, except when the environment variable
``CI`` is set: then it never records, and a missing cassette is an error saying how to record it.
Nothing here runs at import time.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._exceptions import CassetteError, ModeError, VcrTransportError

__all__ = ["MODES", "ENVIRONMENT_VARIABLE", "ResolvedMode", "concrete_mode", "find_pyproject", "resolve_mode"]

MODES = ("off", "record", "replay", "record-on-miss", "auto")
ENVIRONMENT_VARIABLE = "VCR_TRANSPORT_MODE"


def check_mode(name: str, source: str) -> str:
    if name not in MODES:
        raise ModeError(f"unknown vcr_transport mode {name!r} (from {source}); valid modes: {', '.join(MODES)}")
    return name


@dataclass(frozen=True)
class ResolvedMode:
    mode: str
    source: str


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` (the working directory by default)."""
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file():
            return path
    return None


def read_settings(pyproject: Path | None) -> dict[str, Any]:
    """``[tool.vcr_transport]`` of a pyproject.toml, or {}."""
    if pyproject is None:
        return {}
    try:
        document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise VcrTransportError(f"{pyproject}: can't read [tool.vcr_transport]: {exc}") from None
    settings = document.get("tool", {}).get("vcr_transport", {})
    return settings if isinstance(settings, dict) else {}


def resolve_mode(
    argument: str | None = None,
    *,
    pytest_option: str | None = None,
    environ: Mapping[str, str] | None = None,
    pyproject: Path | None = None,
) -> ResolvedMode:
    """The mode in force and where it came from, by the precedence in this module's docstring."""
    environ = os.environ if environ is None else environ
    if argument is not None:
        return ResolvedMode(check_mode(argument, "argument"), "argument")
    if pytest_option is not None:
        return ResolvedMode(check_mode(pytest_option, "--vcr-mode"), "pytest option --vcr-mode")
    from_environment = environ.get(ENVIRONMENT_VARIABLE)
    if from_environment:
        return ResolvedMode(check_mode(from_environment, ENVIRONMENT_VARIABLE), f"environment {ENVIRONMENT_VARIABLE}")
    pyproject = pyproject if pyproject is not None else find_pyproject()
    from_pyproject = read_settings(pyproject).get("mode")
    if from_pyproject:
        source = f"{pyproject} [tool.vcr_transport]"
        return ResolvedMode(check_mode(str(from_pyproject), source), source)
    return ResolvedMode("auto", "default")


def concrete_mode(mode: str, path: Path, environ: Mapping[str, str] | None = None) -> str:
    """``auto`` made into ``replay`` or ``record`` for this cassette; other modes as they are."""
    if mode != "auto":
        return mode
    if path.exists():
        return "replay"
    environ = os.environ if environ is None else environ
    if environ.get("CI"):
        raise CassetteError(
            str(path),
            None,
            "no such cassette, and auto mode never records when CI is set",
            f"record it where the real API is reachable with {ENVIRONMENT_VARIABLE}=record, then commit it",
        )
    return "record"
