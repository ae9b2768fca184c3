"""Every example replays offline from the cassettes shipped in cassettes/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {
    "openai": ["echo: hello", "echo: stream this", "echo: from env"],
    "anthropic": ["echo: hello", "echo: stream this", "echo: from env"],
    "genai": ["echo: hello / echo: and async", "echo: stream this", "echo: from env"],
}


@pytest.mark.parametrize("sdk", sorted(EXPECTED))
@pytest.mark.slow
def test_example_replays_offline(sdk: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "VCR_TRANSPORT_MODE"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{sdk}_example.py")],
        capture_output=True,
        text=True,
        env={**env, "CI": "1"},
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    ways = ("constructor", "context manager", "environment")
    assert [line.split(": ", 1)[1] for line in lines] == EXPECTED[sdk]
    assert all(f"{way} (replay)" in line for way, line in zip(ways, lines, strict=True))
    assert sorted(p.name for p in (ROOT / "cassettes" / sdk).iterdir()) == [
        "constructor.jsonl",
        "context_manager.jsonl",
        "environment.jsonl",
    ]
