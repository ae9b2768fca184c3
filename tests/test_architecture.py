"""The core is sans-I/O: no async def, no HTTP library, no sockets, no files. Shells do the I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parent.parent / "vcr_transport" / "_core"
FORBIDDEN_MODULES = {"httpx", "httpx2", "socket", "asyncio", "anyio", "trio", "ssl", "subprocess", "tempfile"}
FORBIDDEN_CALLS = {"open", "print", "input"}


def _core_files() -> list[Path]:
    return sorted(CORE.glob("*.py"))


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: p.name)
def test_core_module_does_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        assert not isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.AsyncFor | ast.AsyncWith), (
            f"{path.name}:{node.lineno}: async code belongs in a shell"
        )
        if isinstance(node, ast.Import):
            names = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = {node.module.split(".")[0]}
        else:
            names = set()
        assert not names & FORBIDDEN_MODULES, f"{path.name}:{node.lineno}: imports {names & FORBIDDEN_MODULES}"
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            assert node.module is None or not node.module.startswith("_") or (CORE / f"{node.module}.py").exists(), (
                f"{path.name}:{node.lineno}: the core imports a shell module {node.module}"
            )
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
            assert node.attr not in {"open", "pread", "read", "write", "replace", "fsync"}, (
                f"{path.name}:{node.lineno}: os.{node.attr} is I/O"
            )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, f"{path.name}:{node.lineno}: {node.func.id}() is I/O"


def test_core_imports_only_core_and_exceptions() -> None:
    for path in _core_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 2:
                assert node.module == "_exceptions", f"{path.name}: imports ..{node.module} from outside the core"


PACKAGE = CORE.parent


def _module_file(importer: Path, level: int, dotted: str) -> Path | None:
    """The file of the module a relative import names (a package's ``__init__.py``), or None."""
    base = importer.parent
    for _ in range(level - 1):
        base = base.parent
    target = base.joinpath(*dotted.split(".")) if dotted else base
    for candidate in (target / "__init__.py", target.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _declared_all(path: Path) -> set[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return None


def test_internal_imports_take_only_names_in_the_target_modules_all() -> None:
    """Inside the package, ``from .x import y`` takes ``y`` from ``x.__all__`` (or imports the module ``y``):
    a module's ``__all__`` is its interface, and what it keeps outside may change without notice. Module
    dunders (``__version__``) are exempt."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            dotted = node.module or ""
            target = _module_file(path, node.level, dotted)
            assert target is not None, f"{path.name}:{node.lineno}: no module {'.' * node.level}{dotted}"
            exported = _declared_all(target) or set()
            for alias in node.names:
                submodule = _module_file(path, node.level, f"{dotted}.{alias.name}".lstrip("."))
                if alias.name.startswith("__") or submodule is not None or alias.name in exported:
                    continue
                where = path.relative_to(PACKAGE.parent)
                wrong.append(
                    f"{where}:{node.lineno}: {alias.name} is not in {target.relative_to(PACKAGE.parent)}'s __all__"
                )
    assert wrong == [], "\n".join(wrong)
