from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import vcr_transport
from vcr_transport._cli import main as cli


def recording(library: Any, is_async: bool, path: Path, **options: Any) -> Any:
    if is_async:
        return vcr_transport.AsyncRecordingTransport(library.AsyncHTTPTransport(), path, **options)
    return vcr_transport.RecordingTransport(library.HTTPTransport(), path, **options)


def cassette_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def call_ends(path: Path) -> list[dict[str, Any]]:
    return sorted(
        (line for line in cassette_lines(path) if line["type"] == "call_end"), key=lambda end: end["call_index"]
    )


def verify_strict(path: Path) -> tuple[int, str]:
    """``vcr-transport verify --strict`` on one cassette, in-process: its exit code and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli(["verify", "--strict", str(path)])
    return code, out.getvalue()
