"""``Patch``: attributes of other modules (and entries of ``os.environ``) replaced while in use, the one way
vcr_transport patches anything.

The network guard (``_guard.py``), the client patcher of ``use_cassette`` (``_context.py``) and the stand-in
keys of a replay (``_stand_in_keys.py``) each own one. Rules, the same for all:

- **The object owns what it replaced.** Each ``replace`` records the attribute's old state (its own value, or
  that it had none and inherited one), each ``set_item`` the entry's (its value, or that it had none); nothing
  lives in module globals that a later import would miss.
- **Nested users are counted.** The first ``start()`` installs, the last ``stop()`` restores; a ``stop()``
  without a ``start()`` is an error, never a silent restore under another user's feet.
- **Restored on every path.** An install that fails half-way (an exception, Ctrl-C) restores what it had
  replaced before the error goes on; restoring puts back every attribute even when one of them fails.
- **Libraries imported later are seen.** ``late`` names modules to patch when they are first imported while
  the patch is in place: an import hook tells the patch as each one finishes executing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["Patch"]


class _NotifyingLoader(importlib.abc.Loader):
    """A module's own loader, and then a call with the executed module."""

    def __init__(self, loader: importlib.abc.Loader, loaded: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._loaded = loaded

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._loaded(module)

    def __getattr__(self, name: str) -> Any:  # resources, source and the rest: the real loader's
        return getattr(self._loader, name)


class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself: it wraps the loader of the watched modules, so that the patch hears of each one
    as its import completes."""

    def __init__(self, names: Sequence[str], loaded: Callable[[ModuleType], None]) -> None:
        self._names = frozenset(names)
        self._loaded = loaded

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._names:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _NotifyingLoader(spec.loader, self._loaded)
                return spec  # type: ignore[no-any-return]
        return None


# What one ``replace`` or ``set_item`` replaced: the owner (or mapping), the name (or key), whether it had
# its own value (or an entry), that value, and whether it is a mapping's entry.
_Saved = tuple[Any, str, bool, Any, bool]


def _undo(owner: Any, name: str, had: bool, old: Any, entry: bool) -> None:
    """Put back what ``replace`` (an attribute) or ``set_item`` (a mapping's entry) replaced."""
    if entry:
        if had:
            owner[name] = old
        else:
            owner.pop(name, None)
    elif had:
        setattr(owner, name, old)
    else:
        delattr(owner, name)


class Patch:
    """Attributes replaced between the first ``start()`` and the last ``stop()`` (or in a ``with``).

    ``install(patch)`` puts the replacements in at the first start, through ``patch.replace``. ``late`` maps a
    module name to ``patch_module(patch, module)``, called when that module is first imported while the patch
    is in place (and by ``install`` itself for those already imported, if it wants them). Thread-safe: starts,
    stops and late imports take one lock.
    """

    def __init__(
        self,
        install: Callable[[Patch], None],
        *,
        late: Mapping[str, Callable[[Patch, ModuleType], None]] | None = None,
    ) -> None:
        self._install = install
        self._late = dict(late or {})
        self._watcher = _ImportWatcher(tuple(self._late), self._loaded) if self._late else None
        self.lock = threading.RLock()
        self.users = 0
        self._saved: list[_Saved] = []  # each replaced attribute or entry, as it was (``_undo`` puts it back)
        self._replaced: set[tuple[int, str]] = set()

    @property
    def active(self) -> bool:
        return self.users > 0

    def start(self) -> Patch:
        """One more user; the first installs (a failed install leaves nothing replaced)."""
        with self.lock:
            if self.users == 0:
                try:
                    self._install(self)
                    if self._watcher is not None:
                        sys.meta_path.insert(0, self._watcher)
                except BaseException:
                    self._restore()
                    raise
            self.users += 1
        return self

    def stop(self) -> None:
        """One user fewer; the last restores everything."""
        with self.lock:
            if self.users == 0:
                raise RuntimeError("Patch.stop() without a start()")
            self.users -= 1
            if self.users == 0:
                self._restore()

    def replace(self, owner: Any, name: str, value: Any) -> None:
        """``owner.name = value`` until the last stop. An attribute this patch replaced already is left as it is."""
        key = (id(owner), name)
        if key in self._replaced:
            return
        own = vars(owner)
        self._saved.append((owner, name, name in own, own.get(name), False))
        self._replaced.add(key)
        setattr(owner, name, value)

    def set_item(self, mapping: MutableMapping[str, str], key: str, value: str) -> None:
        """``mapping[key] = value`` until the last stop (then the old value back, or no entry, as before). An
        entry this patch set already is left as it is."""
        marker = (id(mapping), key)
        if marker in self._replaced:
            return
        old = mapping.get(key)
        self._saved.append((mapping, key, old is not None, old, True))
        self._replaced.add(marker)
        mapping[key] = value

    def _loaded(self, module: ModuleType) -> None:
        with self.lock:
            if self.users:
                self._late[module.__name__](self, module)

    def _restore(self) -> None:
        """Every replaced attribute back, the last replaced first; one that fails doesn't keep the rest."""
        if self._watcher is not None and self._watcher in sys.meta_path:
            sys.meta_path.remove(self._watcher)
        failure: BaseException | None = None
        while self._saved:
            try:
                _undo(*self._saved.pop())
            except BaseException as error:  # noqa: PERF203 - each attribute is restored on its own
                failure = failure or error
        self._replaced.clear()
        if failure is not None:
            raise failure

    def __enter__(self) -> Patch:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
