"""The core is sans-I/O: no async def, no HTTP library, no sockets, no files. Shells do the I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "vcr_transport" / "_core"
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


@pytest.mark.slow
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


def _own_private_names() -> set[str]:
    """Private names the package itself defines: attributes it assigns, functions, methods and classes."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[-1])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                names.add(node.value)  # __slots__ entries
    return names


@pytest.mark.slow
def test_only_http_touches_other_libraries_private_attributes() -> None:
    """``x._name`` (or ``x.__dict__``) where the package defines no ``_name`` is another library's private
    attribute (httpx's ``Headers._list``, ``Response._content``...): only ``_http.py`` may reach for one."""
    own = _own_private_names()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute):
                continue
            name = node.attr
            foreign = name == "__dict__" or (name.startswith("_") and not name.startswith("__") and name not in own)
            if foreign and path.name != "_http.py":
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: .{name}")
    assert found == [], "\n".join(found)


def test_tests_are_laid_out_by_owner_with_unique_names() -> None:
    """Tests live in core/, transports/, integration/ or package/; names are unique across the folders (they
    are imported by basename, and pytester's in-process runs import their own ``test_*`` modules)."""
    tests = Path(__file__).resolve().parents[1]
    files = sorted(tests.rglob("test_*.py"))
    assert {path.parent.name for path in files} == {"core", "transports", "integration", "package"}
    names = [path.name for path in files]
    assert len(names) == len(set(names)), sorted(name for name in names if names.count(name) > 1)


def test_no_helper_module_of_the_tests_shadows_a_package_the_compatibility_suite_imports() -> None:
    """The tests' helper modules are imported by their bare names (``from upstream import ...``), as are the
    frameworks in ``compat/``: a helper named ``agents.py`` hid openai-agents' ``agents`` from the compat run."""
    tests = Path(__file__).resolve().parents[1]
    helpers = {path.stem for path in tests.glob("*.py")}
    imported = set()
    for path in (tests.parent / "compat").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
    local = {"conftest", "fakes"} | helpers & {"upstream", "realtime_server", "mcp_upstream", "helpers", "vendors"}
    shadowed = sorted((helpers & imported) - local)
    assert shadowed == [], f"rename these helpers of tests/: {shadowed}"
