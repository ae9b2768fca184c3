"""``Patch``, the one way vcr_transport replaces other modules' attributes (the network guard and use_cassette's
client patcher): it owns what it replaced, counts nested users, restores on every path, sees late imports."""

from __future__ import annotations

import subprocess
import sys
import types
from typing import Any

import pytest

from vcr_transport._patch import Patch


class Owner:
    inherited = "from the class"


class Child(Owner):
    own = "own"


def _installing(*changes: tuple[Any, str, Any]) -> Patch:
    def install(patch: Patch) -> None:
        for owner, name, value in changes:
            patch.replace(owner, name, value)

    return Patch(install)


def test_nested_users_share_one_install_and_the_last_stop_restores() -> None:
    installs: list[int] = []
    patch = Patch(lambda p: (installs.append(1), p.replace(Child, "own", "patched"))[0])
    with patch:
        with patch:
            assert Child.own == "patched" and patch.users == 2
        assert Child.own == "patched", "an inner stop leaves the patch to the outer user"
    assert Child.own == "own" and not patch.active and installs == [1]
    with pytest.raises(RuntimeError, match="without a start"):
        patch.stop()


def test_an_inherited_attribute_is_removed_again_not_copied_down() -> None:
    with _installing((Child, "inherited", "patched")):
        assert Child.inherited == "patched"
    assert "inherited" not in vars(Child) and Child.inherited == "from the class"


def test_a_failed_install_restores_what_it_had_replaced() -> None:
    def install(patch: Patch) -> None:
        patch.replace(Child, "own", "patched")
        raise KeyboardInterrupt

    patch = Patch(install)
    with pytest.raises(KeyboardInterrupt):
        patch.start()
    assert Child.own == "own" and not patch.active
    with pytest.raises(RuntimeError, match="without a start"):
        patch.stop()


def test_one_attribute_that_fails_to_restore_does_not_keep_the_others() -> None:
    module = types.ModuleType("fragile")
    module.value = "before"  # type: ignore[attr-defined]

    class Sealed:
        def __setattr__(self, name: str, value: Any) -> None:
            if value == "before-sealed":
                raise AttributeError("sealed")
            object.__setattr__(self, name, value)

    sealed = Sealed()
    object.__setattr__(sealed, "value", "before-sealed")
    patch = _installing((module, "value", "patched"), (sealed, "value", "patched"))
    patch.start()
    with pytest.raises(AttributeError, match="sealed"):
        patch.stop()
    assert module.value == "before", "restored despite the other attribute's failure"  # type: ignore[attr-defined]


def test_an_entry_is_set_until_the_last_stop_and_put_back_as_it_was() -> None:
    environment = {"SET": "the user's", "EMPTY": ""}

    def install(patch: Patch) -> None:
        for key in ("SET", "EMPTY", "ABSENT"):
            patch.set_item(environment, key, "stand-in")

    patch = Patch(install)
    with patch, patch:
        assert environment == {"SET": "stand-in", "EMPTY": "stand-in", "ABSENT": "stand-in"}
    assert environment == {"SET": "the user's", "EMPTY": ""}, "an absent entry is removed, the others restored"


LATE = """
import sys
from vcr_transport._patch import Patch
seen = []
def mark(patch, module):
    seen.append(module.__name__)
    patch.replace(module, "marker", 1)
patch = Patch(lambda p: None, late={"colorsys": mark})
assert "colorsys" not in sys.modules
with patch:
    import colorsys
    inside = colorsys.marker
print(seen, inside, hasattr(colorsys, "marker"), any(type(f).__name__ == "_ImportWatcher" for f in sys.meta_path))
"""


def test_a_module_first_imported_while_patched_is_patched_and_restored() -> None:
    result = subprocess.run([sys.executable, "-c", LATE], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["['colorsys']", "1", "False", "False"]
