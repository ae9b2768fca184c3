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
