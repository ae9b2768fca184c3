"""Where the mode and the settings come from: arguments, the pytest run, the environment and pyproject.toml.

| precedence | where                                   | example                                  |
|------------|-----------------------------------------|------------------------------------------|
| 1          | an explicit argument                    | ``use_cassette(path, mode="replay")``    |
| 2          | the pytest option                       | ``pytest --vcr-mode=record``             |
| 3          | the environment variable                | ``VCR_TRANSPORT_MODE=record``            |
| 4          | ``[tool.vcr_transport]`` in pyproject   | ``mode = "replay"``                      |
| 5          | the default                             | ``auto``                                 |

The pytest plugin publishes its run when the run starts (``published_run``, from the leaf ``_run.py``): every
entry point in that run sees its ``--vcr-mode`` (the marker, ``use_cassette()``, ``transport()`` and
``async_transport()``), and tells it of every cassette opened and closed (for the usage ledger and the
end-of-run summary). What the
modes mean, and ``auto`` under ``CI``, is decided in ``_core/engine/_modes.py``. Nothing here runs at import time,
and importing it imports neither ``_modes`` nor ``_options`` (the plugin loads it for every run).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._registration import ENVIRONMENT_VARIABLE, MODES, PYPROJECT_NAMES
from ._run import PytestRun, current_run, published_run

__all__ = [
    "ENVIRONMENT_VARIABLE",
    "MODES",
    "SKIPPED_FOLDERS",
    "PytestRun",
    "ResolvedMode",
    "cassette_folders",
    "cassette_mode",
    "configured_source",
    "current_run",
    "find_pyproject",
    "how_to_record",
    "published_run",
    "read_settings",
    "resolve_mode",
    "check_settings",
]


class ResolvedMode:
    """The mode in force and where it came from (a plain class: the plugin may load this module in every run)."""

    __slots__ = ("mode", "source")

    def __init__(self, mode: str, source: str) -> None:
        self.mode = mode
        self.source = source

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResolvedMode) and (self.mode, self.source) == (other.mode, other.source)

    def __hash__(self) -> int:
        return hash((self.mode, self.source))

    def __repr__(self) -> str:
        return f"ResolvedMode(mode={self.mode!r}, source={self.source!r})"


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` (the working directory by default: ``os.getcwd()`` is
    already the real path, so it is not resolved again; each test's cassette looks it up)."""
    folder = os.getcwd() if start is None else str(start.resolve())
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            return Path(candidate)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


# The settings read from each pyproject.toml, with the file's identity when they were read (its modification
# time, size and inode): every test's cassette asks, and the file is parsed again only once it changed.
_SETTINGS: dict[Path, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def read_settings(pyproject: Path | None) -> dict[str, Any]:
    """``[tool.vcr_transport]`` of a pyproject.toml, or {} (the same dict while the file is unchanged: not to be
    modified)."""
    if pyproject is None:
        return {}
    try:
        found = os.stat(pyproject)
        identity = (found.st_mtime_ns, found.st_size, found.st_ino)
    except OSError:
        identity = (-1, -1, -1)
    cached = _SETTINGS.get(pyproject)
    if cached is not None and cached[0] == identity and identity[0] != -1:
        return cached[1]
    settings = _parsed_settings(pyproject)
    _SETTINGS[pyproject] = (identity, settings)
    return settings


def _settings_error(message: str) -> Exception:
    """The VcrTransportError of a pyproject.toml whose settings are wrong. The exception tree is loaded then, not
    with this module: the plugin reads the settings at every start."""
    from ._exceptions import VcrTransportError

    return VcrTransportError(message)


def _parsed_settings(pyproject: Path) -> dict[str, Any]:
    import tomllib  # lazily: loading the pytest plugin reads no pyproject

    try:
        document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise _settings_error(f"{pyproject}: can't read [tool.vcr_transport]: {exc}") from None
    settings = document.get("tool", {}).get("vcr_transport", {})
    if not isinstance(settings, dict):
        raise _settings_error(f"{pyproject}: [tool.vcr_transport] must be a table")
    check_settings(settings, pyproject)
    return settings


def check_settings(settings: Mapping[str, Any], pyproject: Path) -> None:
    """An unknown key in ``[tool.vcr_transport]`` is a VcrTransportError naming the file, the key and the closest
    valid name: ``redact_name`` for ``redact_names`` would otherwise be a redaction rule that never applies."""
    if all(key in PYPROJECT_NAMES for key in settings):
        return  # without importing the options: the plugin checks the file at every start
    from ._core.engine._options import pyproject_names, unknown_settings

    unknown = unknown_settings(settings)
    if unknown:
        key, closest = unknown[0]
        hint = f"did you mean {closest}? " if closest else ""
        more = f" (and {', '.join(k for k, _ in unknown[1:])})" if len(unknown) > 1 else ""
        raise _settings_error(
            f"{pyproject}: [tool.vcr_transport] has no setting {key}{more}; {hint}valid: {', '.join(pyproject_names())}"
        )


def resolve_mode(
    argument: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    pyproject: Path | None = None,
) -> ResolvedMode:
    """The mode in force and where it came from, by the precedence in this module's docstring."""
    from ._core.engine._modes import check_mode

    environ = os.environ if environ is None else environ
    if argument is not None:
        return ResolvedMode(check_mode(argument, "argument"), "argument")
    run = current_run()
    if run is not None and run.vcr_mode is not None:
        return ResolvedMode(check_mode(run.vcr_mode, "--vcr-mode"), "pytest option --vcr-mode")
    from_environment = environ.get(ENVIRONMENT_VARIABLE)
    if from_environment:
        return ResolvedMode(check_mode(from_environment, ENVIRONMENT_VARIABLE), f"environment {ENVIRONMENT_VARIABLE}")
    pyproject = pyproject if pyproject is not None else find_pyproject()
    from_pyproject = read_settings(pyproject).get("mode")
    if from_pyproject:
        source = f"{pyproject} [tool.vcr_transport]"
        return ResolvedMode(check_mode(str(from_pyproject), source), source)
    return ResolvedMode("auto", "default")


def how_to_record(resolved: ResolvedMode, *, marker: bool = False) -> str:
    """What the user changes to record, given where the mode in force came from: the highest-precedence
    source that is in force wins, so naming a lower one would not work."""
    if resolved.source == "argument":
        return "mode='record' in the marker" if marker else "pass mode='record' (the argument wins over the rest)"
    if resolved.source.startswith("pytest option"):
        return "run pytest with --vcr-mode=record"
    if resolved.source.startswith("environment"):
        return f"set {ENVIRONMENT_VARIABLE}=record"
    if current_run() is not None:
        return f"run pytest with --vcr-mode=record (or set {ENVIRONMENT_VARIABLE}=record)"
    return f"set {ENVIRONMENT_VARIABLE}=record (or pass mode='record')"


def cassette_mode(
    resolved: ResolvedMode, path: Path, environ: Mapping[str, str] | None = None, *, exists: bool | None = None
) -> str:
    """The concrete mode for one cassette: ``auto`` decided by whether it exists (``exists``, default: whether
    the file does) and whether CI is set."""
    from ._core.engine._modes import concrete_mode

    environ = os.environ if environ is None else environ
    return concrete_mode(
        resolved.mode,
        str(path),
        exists=path.exists() if exists is None else exists,
        ci=bool(environ.get("CI")),
        how_to_record=how_to_record(resolved),
        configured=resolved.source if configured_source(resolved) else "",
    )


def configured_source(resolved: ResolvedMode) -> bool:
    """Whether the mode came from the project's configuration (the environment, pyproject), not an explicit
    choice (the argument, ``--vcr-mode``) or the default."""
    return resolved.source.startswith("environment") or resolved.source.endswith("[tool.vcr_transport]")


SKIPPED_FOLDERS = frozenset(
    {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache", ".vcr_transport"}
)


def cassette_folders(root: Path) -> list[Path]:
    """Where a project's cassettes live: ``cassette_dir`` of [tool.vcr_transport], else every folder named
    ``cassettes`` under ``root`` (not inside virtualenvs, caches or .git)."""
    from ._core.engine._options import CASSETTE_DIR_SETTING

    configured = read_settings(find_pyproject(root)).get(CASSETTE_DIR_SETTING)
    if configured:
        return [root / str(configured)]
    found = []
    for folder, subfolders, _ in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in SKIPPED_FOLDERS]
        if Path(folder).name == "cassettes":
            found.append(Path(folder))
            subfolders[:] = []
    return sorted(found)
