"""Type-check code as users write it, with ``mypy --strict`` and pyright in strict mode: every Python block of
the README and of docs/ that uses vcr_transport, the examples, and ``typing_user_side.py`` (every way to hand
one of our transports to an httpx or httpx2 client, sync and async).

    .venv/bin/python tests/package/typecheck.py [--keep FOLDER] [--only mypy|pyright]

The blocks go into a temporary folder (``--keep``: this one, left in place), one module per block; the ``run``
blocks of a page share one module, as they share one namespace when ``test_docs.py`` runs them. A ``sketch``
block uses names the reader supplies: those are not reported. ``<!-- doc-test: KIND untyped -->`` keeps a
block out. Exit status 1 when either checker reports an error.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from doc_blocks import ROOT, Block, blocks, pages  # noqa: E402

HERE = Path(__file__).resolve().parent
EXAMPLES = ROOT / "examples"
USER_SIDE = HERE / "typing_user_side.py"
# A sketch's own names are the reader's: the checkers are told not to report them (nor the page's imports that
# come with it, which it may not use).
SKETCH_HEADER = (
    '# mypy: disable-error-code="name-defined"\n# pyright: reportUndefinedVariable=false, reportUnusedImport=false\n'
)
# The run blocks of a page are one namespace, and reuse names (a client of each SDK); each block, written to be
# read alone, imports what it uses again.
RUN_HEADER = "# mypy: allow-redefinition-new, local-partial-types\n# pyright: reportDuplicateImport=false\n"
_IMPORT = re.compile(r"^(?:import|from) \S+.*$", re.M)


def _module_name(block: Block, grouped: bool) -> str:
    stem = re.sub(r"\W+", "_", str(block.page.relative_to(ROOT).with_suffix(""))).strip("_").lower()
    return f"doc_{stem}" if grouped else f"doc_{stem}_{block.line}"


def doc_modules() -> dict[str, str]:
    """Module name -> source, for every typed Python block that uses vcr_transport (its marker included)."""
    modules: dict[str, str] = {}
    for page in pages():
        python = [block for block in blocks(page) if block.lang == "python" and block.typed]
        run = [block for block in python if block.kind == "run"]
        if any("vcr_transport" in block.code for block in run):
            source = RUN_HEADER + "".join(f"# {block.where}\n{block.code}\n" for block in run)
            modules[_module_name(run[0], grouped=True)] = source
        for number, block in enumerate(python):
            if block.kind == "run" or "vcr_transport" not in block.code:
                continue
            header = ""
            if block.kind == "sketch":  # with the imports of the page's blocks before it, which it reads on from
                imports = [line for earlier in python[:number] for line in _IMPORT.findall(earlier.code)]
                header = SKETCH_HEADER + "".join(f"{line}\n" for line in dict.fromkeys(imports))
            modules[_module_name(block, grouped=False)] = f"{header}# {block.where}\n{block.code}"
    return modules


def write(folder: Path) -> list[Path]:
    """The files to check: the docs' modules written into ``folder``, the user-side file, the examples."""
    files = []
    for name, source in doc_modules().items():
        path = folder / f"{name}.py"
        path.write_text(source, "utf-8")
        files.append(path)
    shutil.copy(USER_SIDE, folder / USER_SIDE.name)
    files.append(folder / USER_SIDE.name)
    return files + sorted(EXAMPLES.glob("*.py"))


def run_mypy(files: list[Path], folder: Path) -> int:
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(folder / ".mypy")]
    return subprocess.run([*command, *map(str, files)], cwd=folder, check=False).returncode


def run_pyright(files: list[Path], folder: Path) -> int:
    config = {"typeCheckingMode": "strict", "extraPaths": [str(EXAMPLES)], "pythonVersion": "3.11"}
    (folder / "pyrightconfig.json").write_text(json.dumps(config), "utf-8")
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        print("pyright is not installed: pip install pyright (the dev group has it)", file=sys.stderr)
        return 1
    command = [pyright, "--project", str(folder), "--pythonpath", sys.executable]
    return subprocess.run([*command, *map(str, files)], cwd=folder, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--keep", type=Path, help="write the modules into this folder and leave them there")
    parser.add_argument("--only", choices=("mypy", "pyright"), help="run one checker")
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vcr-typecheck-") as temporary:
        folder = arguments.keep or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        files = write(folder)
        print(f"type-checking {len(files)} files: {', '.join(path.name for path in files)}", flush=True)
        failed = 0
        if arguments.only in (None, "mypy"):
            failed |= run_mypy(files, folder)
        if arguments.only in (None, "pyright"):
            failed |= run_pyright(files, folder)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
