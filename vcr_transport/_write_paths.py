"""Where vcr_transport may write, and how it replaces a file it edits in place.

One rule for every writer (a recording, ``prune``, ``import``, the usage ledger, ``config set``,
``git-setup``), in ``write_target``. A cassette arrives in a pull request and git keeps symlinks, so a link
inside the project is the repository's choice, not the user's:

- the project is the pytest rootdir in a pytest run, else the nearest folder at or above the working
  directory holding ``pyproject.toml`` or ``.git``, else the working directory;
- a path whose folders, as written, pass through the project's folder must resolve inside it: a folder
  link or a file link that leads out is refused, naming the path and where it leads;
- a path that is itself a link is written through only to a file of the kind the writer replaces (a
  cassette, for a cassette); a dangling link is refused (writing would create the file it names);
- a path outside the project (an absolute path, ``cassette_dir = "../shared"``) is the user's choice: it
  is written where it resolves, under the same rule for a link.

Reading through links is not restricted here. ``replace_file`` writes a file the tool edits in place
(pyproject.toml, .gitattributes): a temporary file in the same folder, synced, given the old file's mode,
then moved over it, so that a reader sees the old file or the new one, never a cut one.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from ._config import current_run
from ._exceptions import RefusedWrite

__all__ = [
    "RefusedWrite",
    "enclosing_project",
    "project_root",
    "regular_file",
    "replace_file",
    "sync_folder",
    "write_target",
]

PROJECT_MARKERS = ("pyproject.toml", ".git")


def project_root() -> Path:
    """The project's folder, resolved (see the module's docstring): the pytest run's, else ``enclosing_project``."""
    run = current_run()
    if run is not None and run.root is not None:
        return Path(os.path.realpath(run.root))
    return enclosing_project()


def enclosing_project() -> Path:
    """The nearest folder at or above the working directory holding ``pyproject.toml`` or ``.git``, resolved;
    else the working directory. The tools' project when no pytest run is in this process."""
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if any(os.path.lexists(folder / marker) for marker in PROJECT_MARKERS):
            return folder
    return here


def regular_file(path: Path) -> str | None:
    """Why ``path`` (resolved) is no regular file a writer may replace, or None when it is one."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as error:
        return f"can't be read: {error.strerror}"
    return None if stat.S_ISREG(mode) else "not a regular file"


def write_target(
    path: str | os.PathLike[str],
    *,
    replaces: Callable[[Path], str | None] = regular_file,
    root: Path | None = None,
) -> Path:
    """Where a write to ``path`` goes (the path resolved), or RefusedWrite when the rule of this module's
    docstring refuses it. ``replaces``: why a link's target is not what this writer replaces (None: it is),
    e.g. ``_storage.not_a_cassette``. ``root``: the project's folder, when the writer knows it (the
    ledger's rootdir); else ``project_root()``."""
    asked = Path(path)
    target = Path(os.path.realpath(asked))
    if os.path.islink(asked):
        why = replaces(target)
        if why is not None:
            raise RefusedWrite(
                asked,
                target,
                f"is a symlink to {target}, not written through: {why}",
                f"remove the link {asked}, or point it at a file of its kind inside the project",
            )
    root = project_root() if root is None else Path(os.path.realpath(root))
    if _passes_through(Path(os.path.abspath(asked)), root) and not target.is_relative_to(root):
        raise RefusedWrite(
            asked,
            target,
            f"leads out of the project {root} through a symlink, to {target}: not written",
            f"remove the link, or name {target} itself if it is yours",
        )
    return target


def _passes_through(lexical: Path, root: Path) -> bool:
    """Whether one of the folders of ``lexical``, as written, is the project's folder ``root``."""
    return any(os.path.realpath(folder) == str(root) for folder in reversed(lexical.parents))


def replace_file(path: Path, data: bytes, *, root: Path | None = None) -> Path:
    """Replace the file at ``path`` (through a link, by ``write_target``'s rule, in the project ``root``)
    with ``data``: a temporary file beside its target, synced, given the old file's mode (a new file: the
    umask's), moved over it. Returns the file written."""
    target = write_target(path, root=root)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, _mode_of(target))
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    sync_folder(target.parent)
    return target


def _mode_of(target: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def sync_folder(folder: Path) -> None:
    """Sync a folder after a file was moved into it (where the platform allows)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # a folder that can't be opened for reading (some platforms) can't be synced either
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename itself is done
    finally:
        os.close(descriptor)
