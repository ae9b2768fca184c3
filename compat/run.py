"""The compatibility suite: each group of frameworks and clients in its own virtualenv.

Pins conflict between frameworks (pydantic-ai-slim[google] pins google-genai<3, instructor pins openai 3.3),
so each group gets ``.compat-venvs/<group>``, made with ``python -m venv``, this checkout installed editable
and the group's packages, and runs pytest on ``compat/test_<group>.py`` there. The versions each group ran
with and the figures its tests measured (mismatch delivery time and message, secrets found) are written to
``compat/results/latest.json`` (a run of some groups replaces only theirs) and printed as a table.

    python compat/run.py                 # every group
    python compat/run.py sdks langchain  # some groups
    python compat/run.py --list          # the groups and their packages
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".compat-venvs"
RESULTS = Path(__file__).resolve().parent / "results"

COMMON = ["pytest>=8"]
# group -> packages installed beside this checkout. The versions actually installed are recorded per run.
GROUPS: dict[str, list[str]] = {
    "sdks": [
        "openai[realtime]>=3.50",
        "anthropic[bedrock,vertex]>=2.10",
        "google-genai>=3.3",
        "trio",
        "uvloop",
        "cryptography",  # the realtime tests' self-signed certificate (genai speaks wss://)
    ],
    "pydantic_ai": ["pydantic-ai-slim[openai,anthropic,google,mcp]>=2.60"],
    "langchain": ["langchain-openai>=1.7", "langchain-anthropic>=1.7"],
    "litellm": ["litellm", "anthropic>=2.10"],
    "instructor": ["instructor>=1.17"],
    "agents": ["openai-agents>=0.24", "mcp>=2.3"],
}
# What each group's report lists as "versions tested".
REPORTED = {
    "sdks": [
        "openai",
        "anthropic",
        "google-genai",
        "botocore",
        "google-auth",
        "trio",
        "uvloop",
        "httpx2",
        "websockets",
    ],
    "pydantic_ai": ["pydantic-ai-slim", "mcp", "fastmcp-slim", "openai", "anthropic", "google-genai", "httpx2"],
    "langchain": ["langchain-openai", "langchain-anthropic", "langchain-core", "openai", "anthropic", "httpx2"],
    "litellm": ["litellm", "openai", "anthropic", "httpx", "aiohttp"],
    "instructor": ["instructor", "openai", "httpx2"],
    "agents": ["openai-agents", "mcp", "openai", "httpx2"],
}


def _python(group: str) -> Path:
    return VENVS / group / "bin" / "python"


def _stamp(group: str) -> str:
    return json.dumps([GROUPS[group], COMMON, (ROOT / "pyproject.toml").read_text()])


def ensure_venv(group: str) -> None:
    """Make (or reuse, when its packages are unchanged) the group's virtualenv."""
    venv = VENVS / group
    stamp = venv / ".compat-stamp"
    if stamp.exists() and stamp.read_text() == _stamp(group):
        return
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(_python(group)), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "-e", str(ROOT), *COMMON, *GROUPS[group]], check=True)
    stamp.write_text(_stamp(group))


def versions(group: str) -> dict[str, str]:
    script = (
        "import json, sys\nfrom importlib import metadata\nfound = {}\n"
        "for name in sys.argv[1:]:\n"
        "    try: found[name] = metadata.version(name)\n"
        "    except metadata.PackageNotFoundError: pass\n"
        "print(json.dumps(found))"
    )
    out = subprocess.run([str(_python(group)), "-c", script, *REPORTED[group]], capture_output=True, text=True)
    return json.loads(out.stdout or "{}")


def run_group(group: str, pytest_args: list[str]) -> dict[str, object]:
    started = time.perf_counter()
    ensure_venv(group)
    installed = time.perf_counter()
    figures = RESULTS / f"{group}.rows.jsonl"
    figures.unlink(missing_ok=True)
    env = {
        **os.environ,
        "VCR_COMPAT_FIGURES": str(figures),
        "PYTHONDONTWRITEBYTECODE": "1",
        # Never the internet: litellm fetches its model cost map at import unless told to use its own copy.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
    }
    env.pop("VCR_TRANSPORT_MODE", None)
    # Frameworks leave their own cached clients' sockets open (pydantic-ai's providers, openai-agents' exporter):
    # ResourceWarnings are reported, not turned into errors as in the main suite.
    command = [
        str(_python(group)),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "filterwarnings=default",
        f"compat/test_{group}.py",
    ]
    result = subprocess.run([*command, *pytest_args], cwd=ROOT, env=env)
    rows = [json.loads(line) for line in figures.read_text().splitlines()] if figures.exists() else []
    return {
        "group": group,
        "returncode": result.returncode,
        "versions": versions(group),
        "install_seconds": round(installed - started, 1),
        "test_seconds": round(time.perf_counter() - installed, 1),
        "rows": rows,
    }


def table(results: list[dict[str, object]]) -> str:
    lines = [
        "| row | HTTP library | record | replay | mismatch delivered in | mismatch seen as | secrets in cassette |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in results:
        for row in result["rows"]:  # type: ignore[attr-defined]
            lines.append(
                f"| {row['row']} | {row['library']} | {row['record']} | {row['replay']} | "
                f"{row.get('mismatch_ms', '-')} ms | {row.get('mismatch_seen', '-')} | {row['secrets']} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("groups", nargs="*", help=f"groups to run (default: all of {', '.join(GROUPS)})")
    parser.add_argument("--list", action="store_true", help="list the groups and their packages")
    parser.add_argument("--install-only", action="store_true", help="make the virtualenvs, run nothing")
    args, pytest_args = parser.parse_known_args(argv)
    if args.list:
        for group, packages in GROUPS.items():
            print(f"{group}: {' '.join(packages)}")
        return 0
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        parser.error(f"unknown group(s) {', '.join(unknown)}; groups: {', '.join(GROUPS)}")
    groups = args.groups or list(GROUPS)
    VENVS.mkdir(exist_ok=True)
    RESULTS.mkdir(exist_ok=True)
    if args.install_only:
        for group in groups:
            ensure_venv(group)
        return 0
    started = time.perf_counter()
    results = [run_group(group, pytest_args) for group in groups]
    total = round(time.perf_counter() - started, 1)
    latest = RESULTS / "latest.json"
    # A run of some groups replaces their results and keeps the others' (the groups in GROUPS' order).
    earlier = json.loads(latest.read_text())["groups"] if latest.exists() else []
    ran = {result["group"]: result for result in results}
    kept = {result["group"]: result for result in earlier if result["group"] in GROUPS} | ran
    merged = [kept[group] for group in GROUPS if group in kept]
    seconds = total if len(ran) == len(kept) else None  # one run's time only when it ran them all
    latest.write_text(json.dumps({"seconds": seconds, "groups": merged}, indent=2) + "\n")
    print(table(results))
    for result in results:
        print(
            f"{result['group']}: {result['versions']} (install {result['install_seconds']} s, "
            f"tests {result['test_seconds']} s, exit {result['returncode']})"
        )
    print(f"compat: {len(groups)} groups in {total} s")
    return max(int(r["returncode"]) for r in results)  # type: ignore[call-overload]


if __name__ == "__main__":
    sys.exit(main())
