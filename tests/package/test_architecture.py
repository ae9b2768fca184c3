"""The package's architecture, as tests: the core is sans-I/O and in layers (format <- rules <- engine <- views),
the runtime never imports the tools, and the leaves import nothing above them."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "vcr_transport"
CORE = PACKAGE / "_core"
FORBIDDEN_MODULES = {"httpx", "httpx2", "socket", "asyncio", "anyio", "trio", "ssl", "subprocess", "tempfile"}
FORBIDDEN_CALLS = {"open", "print", "input"}

# The core's layers, bottom first: a module imports from its own layer and the ones before it.
LAYERS = ("format", "rules", "engine", "views")
# Leaves anything may import: they import nothing of the package but each other, as listed.
LEAVES = {
    "vcr_transport._version": set(),
    "vcr_transport._display": set(),
    "vcr_transport._exceptions": {"vcr_transport._display"},
    "vcr_transport._core._memo": set(),
}


def _core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path) -> Iterator[tuple[int, str]]:
    """Every module of the package that ``path`` imports (at any depth of the file), as an absolute name."""
    here = _module_name(path, root).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[: len(here) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                is_module = root.parent.joinpath(*candidate.split(".")).with_suffix(".py").is_file()
                yield node.lineno, candidate if is_module else module
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(root.name):
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(root.name):
                    yield node.lineno, alias.name


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "_core" and parts[2] in LAYERS:
        return LAYERS.index(parts[2])
    return None


def layering_violations(root: Path) -> list[str]:
    """What breaks the layering rules in the package at ``root``: a core module importing a layer above its own
    or anything outside the core but the leaves; a leaf importing more than its list; the runtime (everything
    outside ``_tools``) importing the tools."""
    found = []
    for path in sorted(root.rglob("*.py")):
        importer = _module_name(path, root)
        own = _layer(importer)
        for line, target in _imports(path, root):
            where = f"{path.relative_to(root.parent)}:{line}: {importer} imports {target}"
            if importer in LEAVES and target not in LEAVES[importer] and target != importer:
                found.append(f"{where} (a leaf imports only {sorted(LEAVES[importer]) or 'nothing'})")
            elif own is not None and target.startswith(f"{root.name}._core."):
                theirs = _layer(target)
                if theirs is not None and theirs > own:
                    found.append(f"{where} (the {LAYERS[own]} layer is below the {LAYERS[theirs]} layer)")
            elif own is not None and target not in LEAVES and not target.startswith(f"{root.name}._core"):
                found.append(f"{where} (the core imports only the core and the leaves)")
            tools = f"{root.name}._tools"
            if ".".join(target.split(".")[:2]) == tools and not importer.startswith((tools, f"{root.name}.__main__")):
                found.append(f"{where} (the runtime never imports the tools)")
    return found


def test_the_layers_hold() -> None:
    assert layering_violations(PACKAGE) == []


@pytest.mark.parametrize(
    ("file", "line", "broken"),
    [
        ("_core/format/_sse.py", "from ..engine._matching import RequestMatcher", "format layer is below the engine"),
        ("_core/rules/_hosts.py", "from ..views._view import call_view", "rules layer is below the views"),
        ("_core/engine/_faults.py", "from ..._session import CassetteSession", "imports only the core and the leaves"),
        ("_session.py", "from ._tools._render import call_lines", "runtime never imports the tools"),
        ("_pytest_plugin.py", "    from ._tools import _cli", "runtime never imports the tools"),
        ("_exceptions.py", "from ._core.format._format import RecordedCall", "a leaf imports only"),
        ("_display.py", "from ._exceptions import CassetteError", "a leaf imports only"),
    ],
)
def test_a_deliberate_violation_is_caught(tmp_path: Path, file: str, line: str, broken: str) -> None:
    copy = tmp_path / "vcr_transport"
    for path in PACKAGE.rglob("*.py"):
        target = copy / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    victim = copy / file
    body = victim.read_text(encoding="utf-8")
    indent = "def _violation() -> None:\n" if line.startswith(" ") else ""
    victim.write_text(f"{body}\n{indent}{line}\n", encoding="utf-8")
    found = layering_violations(copy)
    assert len(found) == 1 and broken in found[0], found


def test_loading_the_plugin_and_replaying_import_nothing_of_the_tools(tmp_path: Path) -> None:
    script = """
import sys
import httpx2
import vcr_transport._pytest_plugin
import vcr_transport
path = sys.argv[1]
def answer(request):
    return httpx2.Response(200, json={"ok": True}, headers={"content-type": "application/json"})
recorder = vcr_transport.RecordingTransport(httpx2.MockTransport(answer), path)
with httpx2.Client(transport=recorder) as client:
    client.post("https://api.openai.com/v1/chat/completions", json={"model": "m"})
recorder.close()
with httpx2.Client(transport=vcr_transport.transport(path)) as client:
    assert client.post("https://api.openai.com/v1/chat/completions", json={"model": "m"}).json() == {"ok": True}
with vcr_transport.use_cassette(path), httpx2.Client() as client:
    assert client.post("https://api.openai.com/v1/chat/completions", json={"model": "m"}).json() == {"ok": True}
print(sorted(name for name in sys.modules if name.startswith("vcr_transport._tools")))
"""
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "c.jsonl")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(CORE)))
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
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
            assert node.attr not in {"open", "pread", "read", "write", "replace", "fsync"}, (
                f"{path.name}:{node.lineno}: os.{node.attr} is I/O"
            )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, f"{path.name}:{node.lineno}: {node.func.id}() is I/O"


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


# Core modules whose test file is named for what they hold rather than for the module; generated modules are
# tested through the generator's check that they are current.
TESTED_AS = {"_format": "format", "_modes": "mode_decision", "_rules": "redaction_rules", "_stream": "stream_redactor",
             "_shared": "shared_cassette"}  # fmt: skip
GENERATED = {"_gitleaks_rules", "_prefix_table", "_registration", "_typed_options"}


def test_every_core_module_has_a_test_file_of_its_own() -> None:
    tests = Path(__file__).resolve().parents[1] / "core"
    modules = {path.stem for layer in LAYERS for path in (CORE / layer).glob("_*.py")} - {"__init__"}
    missing = sorted(
        module
        for module in modules - GENERATED
        if not (tests / f"test_{TESTED_AS.get(module, module.lstrip('_'))}.py").is_file()
    )
    assert missing == [], f"core modules without tests/core/test_<name>.py: {missing}"


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
