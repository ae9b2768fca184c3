"""Size and cyclomatic complexity of a package, the figures of the one-path-per-behaviour redesign.

    pip install radon && python -m benchmarks.code_metrics vcr_transport [TOP]

Prints files, lines and characters of every ``*.py`` below the folder; the number of functions and methods
(radon's ``cc_visit``: top-level functions and each class's methods, nested functions counted in their
parent), their mean and maximum complexity, how many are at 15 or more, and the ``TOP`` most complex.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path


def main() -> None:
    try:
        from radon.complexity import cc_visit
    except ImportError:
        raise SystemExit("needs radon: pip install radon") from None
    root = Path(sys.argv[1])
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    files = sorted(root.rglob("*.py"))
    texts = [path.read_text(encoding="utf-8") for path in files]
    blocks: list[tuple[int, str]] = []
    for path, text in zip(files, texts, strict=True):
        seen: set[tuple[int, str]] = set()
        for block in cc_visit(text):
            for item in getattr(block, "methods", None) or [block]:
                if (item.lineno, item.name) in seen:
                    continue
                seen.add((item.lineno, item.name))
                owner = f"{item.classname}." if getattr(item, "classname", None) else ""
                blocks.append((item.complexity, f"{path.relative_to(root.parent)}:{owner}{item.name}"))
    complexity = [value for value, _ in blocks]
    print(f"files {len(files)}, lines {sum(t.count(chr(10)) for t in texts)}, characters {sum(map(len, texts))}")
    print(
        f"functions and methods {len(complexity)}, mean CC {statistics.mean(complexity):.2f}, "
        f"max {max(complexity)}, at CC>=15: {sum(value >= 15 for value in complexity)}"
    )
    for value, name in sorted(blocks, reverse=True)[:top]:
        print(f"  {value:3d} {name}")


if __name__ == "__main__":
    main()
