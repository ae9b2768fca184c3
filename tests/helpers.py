from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import vcr_transport


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
