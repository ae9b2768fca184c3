"""use_cassette routes a library first imported inside the block: httpx, and google-genai's aiohttp choice.

Each case runs in a fresh interpreter, where the library is not imported yet.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from upstream import Reply, Upstream

CHILD = """
import json, sys
import vcr_transport
assert "httpx" not in sys.modules, "httpx must not be imported yet"
cassette, url, mode = sys.argv[1:4]
with vcr_transport.use_cassette(cassette, mode=mode, unplayed="error") as block:
    import httpx
    with httpx.Client() as client:
        reply = client.post(url + "/v1/echo", json={"say": "late"}).json()
unpatched = httpx.Client._transport_for_url.__qualname__
print(json.dumps({"reply": reply, "mode": block.mode, "unpatched": unpatched}))
"""


def run_child(script: str, *args: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_httpx_first_imported_inside_the_block_is_recorded_then_replayed(tmp_path: Path) -> None:
    server = Upstream()
    server.routes["/v1/echo"] = lambda received: Reply.json({"echo": received.json()["say"]})
    server.start()
    cassette = tmp_path / "late.jsonl"
    try:
        recorded = run_child(CHILD, str(cassette), server.url, "record")
    finally:
        server.stop()
    assert recorded["reply"] == {"echo": "late"}
    assert len(server.received) == 1
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [line["type"] for line in lines[:2]] == ["header", "request"], "the late client's call was recorded"
    replayed = run_child(CHILD, str(cassette), server.url, "replay")  # the server is gone: replay only
    assert replayed == {**recorded, "mode": "replay"}
    assert replayed["unpatched"] == "Client._transport_for_url", "the patch is gone after the block"


GENAI_CHILD = """
import json, sys
import vcr_transport
assert "google.genai._api_client" not in sys.modules
with vcr_transport.use_cassette(sys.argv[1], mode="off"):
    from google.genai import _api_client
    inside = _api_client.has_aiohttp
print(json.dumps({"inside": inside, "after": _api_client.has_aiohttp}))
"""


def test_google_genai_first_imported_inside_the_block_is_told_aiohttp_is_absent(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp")
    assert run_child(GENAI_CHILD, str(tmp_path / "unused.jsonl")) == {"inside": False, "after": True}
