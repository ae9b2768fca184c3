"""Binary response bodies through the SDKs: a file downloaded with openai's ``files.content`` (an
``application/octet-stream`` answer, with the vendor's real headers) that holds a key is recorded without it,
searched as bytes once whole (the key split across the chunks it came in); every other byte is kept, and
media (audio) is never touched."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from upstream import Received, Reply, Upstream, split_bytes

import vcr_transport

KEY = "sk-proj-" + "Zq7RkLm2Nx4Vb8Tc1Wd5Yf9Hg3Js6Pa0Ue" * 2
ENV_FILE = b"\x00\x01\x02PK-ish header\xff\xfe\nOPENAI_API_KEY=" + KEY.encode() + b"\nDEBUG=1\n\x80\x81"
# Audio whose bytes happen to spell a key shape: media is kept byte for byte.
AUDIO = b"ID3\x04\x00" + KEY.encode() + bytes(range(256))


@pytest.fixture
def files(upstream: Upstream) -> Upstream:
    def download(received: Received) -> Reply:
        body = AUDIO if "speech" in received.path else ENV_FILE
        kind = "audio/mpeg" if "speech" in received.path else "application/octet-stream"
        return Reply(200, [("content-type", kind)], split_bytes(body, 7), content_length=True)

    upstream.routes["/v1/files/file-abc123/content"] = download
    upstream.routes["/v1/audio/speech"] = download
    return upstream


def _events(cassette: Path) -> bytes:
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    body = b""
    for line in lines:
        if line["type"] == "event":
            body += base64.b64decode(line["base64"]) if "base64" in line else line["text"].encode()
    return body


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_downloaded_file_is_recorded_without_the_key_it_holds(
    tmp_path: Path, files: Upstream, asynchronous: bool
) -> None:
    cassette = tmp_path / "download.jsonl"

    def download() -> bytes:
        if not asynchronous:
            with openai.OpenAI(api_key="sk-test", base_url=files.url + "/v1", max_retries=0) as client:
                return client.files.content("file-abc123").read()

        async def run() -> bytes:
            async with openai.AsyncOpenAI(api_key="sk-test", base_url=files.url + "/v1", max_retries=0) as client:
                return (await client.files.content("file-abc123")).read()

        return asyncio.run(run())

    with vcr_transport.use_cassette(cassette, mode="record"):
        assert download() == ENV_FILE  # the app gets the bytes as they came
    text = cassette.read_text()
    assert KEY not in text and KEY.encode() not in _events(cassette)
    stored = _events(cassette)
    assert stored.startswith(ENV_FILE[: ENV_FILE.index(b"sk-proj-")]) and stored.endswith(b"\nDEBUG=1\n\x80\x81")
    files.stop()
    with vcr_transport.use_cassette(cassette, mode="replay"):
        replayed = download()
    assert replayed == stored and KEY.encode() not in replayed
    scanned = subprocess.run([sys.executable, "-m", "vcr_transport", "scan", str(cassette)], capture_output=True)
    assert scanned.returncode == 0, scanned.stdout  # scan finds nothing left


def test_media_answers_are_kept_byte_for_byte(tmp_path: Path, files: Upstream) -> None:
    cassette = tmp_path / "speech.jsonl"

    def speak() -> bytes:
        with openai.OpenAI(api_key="sk-test", base_url=files.url + "/v1", max_retries=0) as client:
            return client.audio.speech.create(model="gpt-4o-mini-tts", voice="alloy", input="hi").read()

    with vcr_transport.use_cassette(cassette, mode="record"):
        assert speak() == AUDIO
    assert _events(cassette) == AUDIO
    files.stop()
    with vcr_transport.use_cassette(cassette, mode="replay"):
        assert speak() == AUDIO


@pytest.mark.parametrize("kind", ["audio/mpeg", "image/png"])
def test_media_sent_content_encoded_is_kept_byte_for_byte(tmp_path: Path, upstream: Upstream, kind: str) -> None:
    """Media a CDN sends with Content-Encoding: gzip is still media: kept as it came, never searched."""
    import gzip

    import httpx2

    cassette = tmp_path / "media.jsonl"
    upstream.routes["/media"] = lambda received: Reply(200, [("content-type", kind)], [AUDIO], gzip=True)
    with vcr_transport.use_cassette(cassette, mode="record"):
        with httpx2.Client() as client:
            assert client.get(upstream.url + "/media").content == AUDIO
    assert gzip.decompress(_events(cassette)) == AUDIO
