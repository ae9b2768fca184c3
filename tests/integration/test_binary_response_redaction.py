"""Binary response bodies through the SDKs: a file downloaded with openai's ``files.content`` (an
``application/octet-stream`` answer, with the vendor's real headers) that holds a key is recorded without it,
searched as bytes once whole (the key split across the chunks it came in); every other byte is kept, and
media (audio) is never touched."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from helpers import call_ends
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


# --- attacks: every binary kind, gzip, HEAD, a download stopped or cut, a key split across chunks ---------


AWS = "AKIA" + "QWERTYUIOPASDFGH"


GHP = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7cF0hJ3kL6"


SECRETS = (KEY, AWS, GHP)


BLOB = b"\x00\x01\x02PK\x03\x04\xff\xfe\nOPENAI_API_KEY=" + KEY.encode() + b"\naws=" + AWS.encode()


BLOB += b"\ngh=" + GHP.encode() + b"\nDEBUG=1\n\x80\x81\xc3\x28"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _leaks(cassette: Path) -> list[str]:
    text = cassette.read_text()
    stored = _events(cassette)
    return [s for s in SECRETS if s in text or s.encode() in stored]


def _serve(upstream: Upstream, path: str, body: bytes, headers: list[tuple[str, str]], **kw: Any) -> None:
    kw.setdefault("content_length", True)
    upstream.routes[path] = lambda received: Reply(200, headers, split_bytes(body, kw.pop("size", 5)), **kw)


def _get(url: str, method: str = "GET") -> bytes:
    with httpx.Client() as client:
        return client.request(method, url).content


@pytest.mark.parametrize(
    "content_type",
    [
        "application/octet-stream",
        "application/pdf",
        "application/zip",
        "Application/Octet-Stream",
        "application/octet-stream; charset=binary",
        "application/zip; name=secrets.zip",
    ],
)
def test_binary_kinds_are_redacted_and_replay(tmp_path: Path, upstream: Upstream, content_type: str) -> None:
    cassette = tmp_path / "c.jsonl"
    _serve(upstream, "/download", BLOB, [("content-type", content_type)], size=3)
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _get(upstream.url + "/download") == BLOB  # the app gets the original bytes
    assert _leaks(cassette) == []
    stored = _events(cassette)
    assert stored.endswith(b"\nDEBUG=1\n\x80\x81\xc3\x28") and stored.startswith(b"\x00\x01\x02PK\x03\x04")
    upstream.stop()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert _get(upstream.url + "/download") == stored


@pytest.mark.parametrize(
    "content_type",
    ["application/x-zip-compressed", "application/x-tar", "application/vnd.ms-excel", "application/x-protobuf"],
)
def test_other_binary_types_are_redacted(tmp_path: Path, upstream: Upstream, content_type: str) -> None:
    """Binary types that are not in the library's short list: they go through the text stream redactor."""
    cassette = tmp_path / "c.jsonl"
    _serve(upstream, "/download", BLOB, [("content-type", content_type)], size=3)
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _get(upstream.url + "/download") == BLOB
    assert _leaks(cassette) == []


def test_binary_body_without_content_type(tmp_path: Path, upstream: Upstream) -> None:
    cassette = tmp_path / "c.jsonl"
    _serve(upstream, "/download", BLOB, [], size=3)
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _get(upstream.url + "/download") == BLOB
    assert _leaks(cassette) == []
    upstream.stop()
    with vcr_transport.use_cassette(cassette, mode="replay"):
        replayed = _get(upstream.url + "/download")
    assert replayed.endswith(b"\x80\x81\xc3\x28")


def test_gzip_octet_stream_is_redacted_and_replays(tmp_path: Path, upstream: Upstream) -> None:
    cassette = tmp_path / "c.jsonl"
    upstream.routes["/download"] = lambda r: Reply(
        200, [("content-type", "application/octet-stream")], [BLOB], gzip=True, content_length=True
    )
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _get(upstream.url + "/download") == BLOB
    stored = _events(cassette)
    text = cassette.read_text()
    decoded = gzip.decompress(stored)
    assert not any(s in text or s.encode() in decoded for s in SECRETS)
    assert decoded.startswith(b"\x00\x01\x02PK\x03\x04") and decoded.endswith(b"\x80\x81\xc3\x28")
    upstream.stop()
    with vcr_transport.use_cassette(cassette, mode="replay"):
        assert _get(upstream.url + "/download") == decoded


def test_media_with_key_shape_is_untouched(tmp_path: Path, upstream: Upstream) -> None:
    cassette = tmp_path / "c.jsonl"
    audio = b"ID3\x04\x00" + KEY.encode() + bytes(range(256))
    for kind in ("audio/mpeg", "IMAGE/PNG", "audio/wav; codecs=1"):
        cassette.unlink(missing_ok=True)
        _serve(upstream, "/speech", audio, [("content-type", kind)], size=7)
        with vcr_transport.use_cassette(cassette, mode="record"):
            assert _get(upstream.url + "/speech") == audio
        assert _events(cassette) == audio, kind


def test_head_request_of_binary(tmp_path: Path, upstream: Upstream) -> None:
    cassette = tmp_path / "c.jsonl"
    _serve(upstream, "/download", BLOB, [("content-type", "application/octet-stream")])
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _get(upstream.url + "/download", "HEAD") == b""
    upstream.stop()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert _get(upstream.url + "/download", "HEAD") == b""


def test_download_stopped_early_leaks_nothing(tmp_path: Path, upstream: Upstream) -> None:
    """iter_bytes stopped after the first chunks: the held chunks are still redacted before they are written."""
    cassette = tmp_path / "c.jsonl"
    body = BLOB + b"\x00" * 200_000
    _serve(upstream, "/download", body, [("content-type", "application/octet-stream")], size=16)
    with vcr_transport.use_cassette(cassette, mode="record"):
        with httpx.Client() as client, client.stream("GET", upstream.url + "/download") as response:
            got = b""
            for chunk in response.iter_bytes():
                got += chunk
                if len(got) > len(BLOB):
                    break
    assert got.startswith(BLOB)
    assert _leaks(cassette) == []
    upstream.stop()
    with vcr_transport.use_cassette(cassette, mode="replay"):
        with httpx.Client() as client, client.stream("GET", upstream.url + "/download") as response:
            replayed = b""
            for chunk in response.iter_bytes():
                replayed += chunk
                if len(replayed) > len(BLOB):
                    break
    assert KEY.encode() not in replayed


def test_key_split_one_byte_per_chunk(tmp_path: Path, upstream: Upstream) -> None:
    cassette = tmp_path / "c.jsonl"
    _serve(upstream, "/download", BLOB, [("content-type", "application/octet-stream")], size=1, content_length=False)
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _get(upstream.url + "/download") == BLOB
    assert _leaks(cassette) == []


def _segments_kept(original: bytes, stored: bytes) -> bool:
    """Every byte of ``original`` but the secrets is in ``stored``, in order."""
    import re

    pieces = re.split(b"|".join(re.escape(s.encode()) for s in SECRETS), original)
    at = 0
    for piece in pieces:
        found = stored.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


@pytest.mark.parametrize("content_type", [None, "application/octet-stream", "application/x-tar"])
@pytest.mark.parametrize("zipped", [False, True], ids=["plain", "gzip"])
def test_binary_bytes_other_than_keys_are_kept(
    tmp_path: Path, upstream: Upstream, content_type: str | None, zipped: bool
) -> None:
    cassette = tmp_path / "c.jsonl"
    body = BLOB + bytes(range(256)) + "héllo ✓".encode() + b"\xff" * 10
    headers = [] if content_type is None else [("content-type", content_type)]
    upstream.routes["/download"] = lambda r: Reply(200, headers, split_bytes(body, 3), gzip=zipped, content_length=True)
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _get(upstream.url + "/download") == body
    stored = _events(cassette)
    if zipped:
        stored = gzip.decompress(stored)
    assert not any(s.encode() in stored for s in SECRETS) and not any(s in cassette.read_text() for s in SECRETS)
    assert _segments_kept(body, stored)
    upstream.stop()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert _get(upstream.url + "/download") == stored


@pytest.mark.parametrize("kind", ["audio/mpeg", "image/png"])
def test_gzipped_media_is_untouched(tmp_path: Path, upstream: Upstream, kind: str) -> None:
    """Media sent with Content-Encoding: gzip (as some CDNs do): still media, kept byte for byte."""
    cassette = tmp_path / "c.jsonl"
    audio = b"ID3\x04\x00" + KEY.encode() + bytes(range(256)) + AWS.encode()
    upstream.routes["/speech"] = lambda r: Reply(200, [("content-type", kind)], [audio], gzip=True, content_length=True)
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _get(upstream.url + "/speech") == audio
    assert gzip.decompress(_events(cassette)) == audio


def test_binary_download_cut_by_the_server_leaks_nothing(tmp_path: Path, upstream: Upstream) -> None:
    """The server drops the connection mid-body: the held chunks that are written (keep_failures) are searched."""
    cassette = tmp_path / "c.jsonl"
    body = BLOB * 3 + b"\x00" * 4000
    upstream.routes["/download"] = lambda r: Reply(
        200, [("content-type", "application/octet-stream")], split_bytes(body, 50), cut_after=10
    )
    with vcr_transport.use_cassette(cassette, mode="record", keep_failures=True):
        with pytest.raises(httpx.HTTPError):
            _get(upstream.url + "/download")
    assert cassette.exists()
    assert [end["outcome"] for end in call_ends(cassette)] == ["error"]
    assert _leaks(cassette) == []


@pytest.mark.parametrize("zipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("content_type", ["application/octet-stream", "application/pdf"])
def test_binary_body_holding_the_requests_own_token(
    tmp_path: Path, upstream: Upstream, zipped: bool, content_type: str
) -> None:
    """A token of no catalogued shape, sent as the request's Authorization: the redactor learns it; the binary
    answer that echoes it is recorded without it."""
    cassette = tmp_path / "c.jsonl"
    token = "internalTok3n-Qm8x2Zr7Lp4Wv9Ks1Dn6"
    body = b"%PDF-1.7\n\x00\xff" + token.encode() + b"\n\x80trailer"
    upstream.routes["/download"] = lambda r: Reply(
        200, [("content-type", content_type)], split_bytes(body, 4), gzip=zipped, content_length=True
    )
    with vcr_transport.use_cassette(cassette, mode="record"):
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as client:
            assert client.get(upstream.url + "/download").content == body
    stored = _events(cassette)
    if zipped:
        stored = gzip.decompress(stored)
    assert token not in cassette.read_text() and token.encode() not in stored
    assert stored.startswith(b"%PDF-1.7\n\x00\xff") and stored.endswith(b"\n\x80trailer")


@pytest.mark.parametrize("content_type", ["application/octet-stream", None])
def test_big_binary_with_keys_across_batch_boundaries(
    tmp_path: Path, upstream: Upstream, content_type: str | None
) -> None:
    """3 MiB of binary with keys placed across the 32 KiB batch boundaries, sent in odd-sized chunks."""
    cassette = tmp_path / "c.jsonl"
    body = bytearray(bytes(range(256)) * (3 * 4096))
    for offset in (32 * 1024 - 10, 64 * 1024 - 3, 1024 * 1024 - 20, len(body) - 60):
        body[offset - 1 : offset + len(KEY) + 1] = b"\x00" + KEY.encode() + b"\x00"  # no alphanumeric neighbour
    body = bytes(body)
    headers = [] if content_type is None else [("content-type", content_type)]
    upstream.routes["/big"] = lambda r: Reply(200, headers, split_bytes(body, 4093), content_length=True)
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _get(upstream.url + "/big") == body
    stored = _events(cassette)
    assert KEY.encode() not in stored and KEY not in cassette.read_text()
    assert _segments_kept(body, stored)
    upstream.stop()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert _get(upstream.url + "/big") == stored
