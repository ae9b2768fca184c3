"""Size, complexity and maintainability of the package, split by role: the figures of the layout and redaction
issues, computed the same way on any tree (run it on an older checkout to compare).

    pip install radon && python -m benchmarks.code_metrics vcr_transport [TOP]

Prints, for the runtime, the tools (``_tools/``, or the same modules by name in a tree from before the layout)
and the hand-written redaction (the rules layer but the host rules and the generated catalogue; by module name
in an older tree): files, lines and characters. For the whole package: the number of functions and methods
(radon's ``cc_visit``: top-level functions and each class's methods, nested functions counted in their parent),
their mean and maximum cyclomatic complexity, how many are at 10 or more and at 15 or more, the files with the
lowest maintainability index, ``CassetteSession``'s instance attributes, the runtime's ``_websocket.py`` lines,
and the ``TOP`` most complex functions. Generated files ("do not edit") count as code but not as hand-written.
"""

from __future__ import annotations

import ast
import statistics
import sys
from pathlib import Path

TOOLS = {"_cli", "_manage", "_term", "_render", "_html", "_har", "_drift", "_vcrpy", "_serve", "_diff", "_vendors"}
REDACTION = {"_redaction", "_credentials", "_stream_redaction", "_scan"}


def _role(path: Path, root: Path) -> str:
    parts = path.relative_to(root).parts
    if parts[0] == "_tools" or (path.stem in TOOLS and "_tools" not in parts):
        return "tools"
    return "runtime"


def _is_redaction(path: Path, root: Path, generated: bool) -> bool:
    parts = path.relative_to(root).parts
    if generated or path.stem == "_hosts":
        return False
    return "rules" in parts[:-1] or (path.stem in REDACTION and "_tools" not in parts)


def _session_attributes(texts: dict[Path, str]) -> int:
    for path, text in texts.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.name == "CassetteSession" and path.name == "_session.py":
                return len(
                    {
                        target.attr
                        for item in ast.walk(node)
                        for target in getattr(item, "targets", [getattr(item, "target", None)])
                        if isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    }
                )
    return -1


def main() -> None:
    try:
        from radon.complexity import cc_visit
        from radon.metrics import mi_visit
    except ImportError:
        raise SystemExit("needs radon: pip install radon") from None
    root = Path(sys.argv[1])
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    texts = {path: path.read_text(encoding="utf-8") for path in sorted(root.rglob("*.py"))}
    groups: dict[str, list[str]] = {"runtime": [], "tools": [], "hand-written redaction": []}
    for path, text in texts.items():
        generated = "do not edit" in text[:2000].lower()
        groups[_role(path, root)].append(text)
        if _is_redaction(path, root, generated):
            groups["hand-written redaction"].append(text)
    for name, members in groups.items():
        print(
            f"{name}: files {len(members)}, lines {sum(t.count(chr(10)) for t in members)}, "
            f"characters {sum(map(len, members))}"
        )
    blocks: list[tuple[int, str]] = []
    for path, text in texts.items():
        seen: set[tuple[int, str]] = set()
        for block in cc_visit(text):
            for item in getattr(block, "methods", None) or [block]:
                if (item.lineno, item.name) in seen:
                    continue
                seen.add((item.lineno, item.name))
                owner = f"{item.classname}." if getattr(item, "classname", None) else ""
                blocks.append((item.complexity, f"{path.relative_to(root.parent)}:{owner}{item.name}"))
    complexity = [value for value, _ in blocks]
    print(
        f"functions and methods {len(complexity)}, mean CC {statistics.mean(complexity):.2f}, "
        f"max {max(complexity)}, at CC>=10: {sum(value >= 10 for value in complexity)}, "
        f"at CC>=15: {sum(value >= 15 for value in complexity)}"
    )
    index = sorted((mi_visit(text, multi=True), str(path.relative_to(root.parent))) for path, text in texts.items())
    print("lowest maintainability index: " + ", ".join(f"{name} {value:.1f}" for value, name in index[:6]))
    websocket = [t for p, t in texts.items() if p.name == "_websocket.py" and "_core" not in p.parts]
    print(
        f"CassetteSession attributes {_session_attributes(texts)}, "
        f"runtime _websocket.py lines {websocket[0].count(chr(10)) if websocket else 'none'}"
    )
    for value, name in sorted(blocks, reverse=True)[:top]:
        print(f"  {value:3d} {name}")


if __name__ == "__main__":
    main()
