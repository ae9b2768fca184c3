"""urllib3 replay (``_urllib3.py``): a vcrpy cassette that holds a ``requests`` call beside an openai call, recorded
by the real vcrpy against a loopback server, imported, and replayed in the pytest-recording compatibility mode
with the network guard on and no server running (through pytester, as a suite would run)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from upstream import Reply, Upstream
from vendors import openai_reply

from vcr_transport._tools._cli import main

IMAGE_HOST = "https://upload.wikimedia.org"
IMAGE_PATH = "/wikipedia/commons/cat.png"
# A PNG's signature and more: bytes that are not text, served gzip-encoded as a CDN may.
IMAGE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def record_with_vcrpy(cassette: Path) -> None:
    """What vcrpy writes for a test that fetches an image with ``requests`` (gzip-encoded and chunked: vcrpy 9
    with urllib3 2 stores it decoded, and import drops the stale ``content-encoding``), then asks
    the chat API (through httpx, which vcrpy patches; this openai sends through httpx2, which it doesn't):
    recorded against a loopback server, the URLs then made the real hosts', as the suite's cassettes have
    them."""
    import httpx
    import requests
    import vcr

    server = Upstream()
    cookie = ("set-cookie", "WMF-Last-Access=04-Dec-2026;Path=/;HttpOnly;secure")  # Wikimedia's
    image = Reply(headers=[("content-type", "image/png"), cookie], chunks=[IMAGE], gzip=True, real_headers=False)
    server.routes[IMAGE_PATH] = [image]
    server.routes["/v1/chat/completions"] = openai_reply
    server.start()
    try:
        with vcr.VCR(record_mode="all").use_cassette(str(cassette)):
            assert requests.get(server.url + IMAGE_PATH, timeout=5).content == IMAGE
            prompt = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "what is in the image?"}]}
            headers = {"authorization": "Bearer sk-test"}
            httpx.post(server.url + "/v1/chat/completions", json=prompt, headers=headers, timeout=5)
    finally:
        server.stop()
    text = cassette.read_text()
    text = text.replace(server.url + "/wikipedia", IMAGE_HOST + "/wikipedia")
    cassette.write_text(text.replace(server.url + "/v1", "https://api.openai.com/v1"))


TESTS = """
import openai
import pytest
import requests

IMAGE = IMAGE_BYTES

@pytest.mark.vcr
def test_describe_image():
    image = requests.get("IMAGE_URL", timeout=5)
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert image.content == IMAGE and "WMF-Last-Access" in image.cookies
    client = openai.OpenAI(api_key="sk-test", max_retries=0)
    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "what is in the image?"}]
    )
    assert answer.choices[0].message.content == "echo:what is in the image?"

@pytest.mark.vcr("test_describe_image")
def test_streamed_image():
    with requests.get("IMAGE_URL", stream=True, timeout=5) as image:
        assert b"".join(image.iter_content(100)) == IMAGE
"""


@pytest.fixture(scope="module")
def vcrpy_cassette(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Recorded once, before any in-process pytest run (which unloads what it imported, vcrpy's YAML
    emitter's state included)."""
    source = tmp_path_factory.mktemp("vcrpy") / "test_describe_image.yaml"
    record_with_vcrpy(source)
    return source.read_text()


@pytest.fixture
def project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], vcrpy_cassette: str
) -> Path:
    """A pytest-recording suite's cassette, recorded by vcrpy and converted by ``vcr-transport import``."""
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    source = pytester.path / "cassettes" / "test_mixed" / "test_describe_image.yaml"
    source.parent.mkdir(parents=True)
    source.write_text(vcrpy_cassette)
    assert main(["import", str(pytester.path / "cassettes")]) == 0
    out = capsys.readouterr().out
    assert "imported 2 calls" in out and "can't" not in out, out
    pytester.makeini("[pytest]\nvcr_transport_compat = pytest-recording\n")
    return source.with_suffix(".jsonl")


def suite_for(url: str) -> str:
    return TESTS.replace('"IMAGE_URL"', repr(url)).replace("IMAGE_BYTES", repr(IMAGE))


def test_a_requests_call_vcrpy_recorded_replays_beside_the_sdks_under_the_guard(
    pytester: pytest.Pytester, project: Path
) -> None:
    calls = [json.loads(line) for line in project.read_text().splitlines()[1:] if '"request"' in line]
    assert any("python-requests" in json.dumps(call) for call in calls), "vcrpy recorded the requests call"
    pytester.makepyfile(test_mixed=suite_for(IMAGE_HOST + IMAGE_PATH))
    result = pytester.runpytest_inprocess("-p", "no:cassetter", "-p", "no:recording")
    result.assert_outcomes(passed=2)


def test_a_changed_url_mismatches_with_the_field(pytester: pytest.Pytester, project: Path) -> None:
    pytester.makepyfile(test_mixed=suite_for(IMAGE_HOST + "/wikipedia/commons/dog.png"))
    result = pytester.runpytest_inprocess("-p", "no:cassetter", "-p", "no:recording", "-k", "describe")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E   *replay mismatch at call 0, field url.path: recorded *cat.png*, incoming *dog.png*"]
    )


def test_a_gzip_body_replays_as_recorded_and_urllib3_decodes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A body stored gzip-encoded (vcrpy with urllib3 1.x, or with decode_compressed_response off and httpx)
    reaches urllib3 encoded, and urllib3 decodes it when asked to; the patch is gone after the block."""
    import urllib3
    import yaml

    from vcr_transport import use_cassette
    from vcr_transport._urllib3 import URLLIB3_REPLAY

    payload = b'{"rows": [1, 2, 3]}'
    packed = gzip.compress(payload)
    url = "https://cdn.example.test/data.json"
    headers = {"content-type": ["application/json"], "content-encoding": ["gzip"]}
    interaction = {
        "request": {"method": "GET", "uri": url, "body": None, "headers": {"User-Agent": ["python-urllib3/2"]}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": headers, "body": {"string": packed}},
    }
    source = tmp_path / "data.yaml"
    source.write_text(yaml.safe_dump({"interactions": [interaction, interaction], "version": 1}))
    assert main(["import", str(source)]) == 0, capsys.readouterr()
    original = urllib3.connectionpool.HTTPConnectionPool.urlopen
    with URLLIB3_REPLAY, use_cassette(source.with_suffix(".jsonl"), mode="replay", block_network=True):
        pool = urllib3.PoolManager()
        raw = pool.request("GET", url, preload_content=False, decode_content=False)
        assert (raw.status, raw.headers["content-encoding"], raw.read()) == (200, "gzip", packed)
        assert pool.request("GET", url).json() == {"rows": [1, 2, 3]}
    assert urllib3.connectionpool.HTTPConnectionPool.urlopen is original
