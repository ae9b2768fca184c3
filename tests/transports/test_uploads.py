"""Multipart uploads replay: openai's ``files.create`` and ``audio.transcriptions.create`` draw a random
boundary per request (httpx2: ``os.urandom(16).hex()``), in the content type and in the body, and a
``tempfile`` file name is a second random value. Bodies are compared part by part, and a mismatch names the
part. Served at the vendor's own host with its real headers (cookies included)."""

from __future__ import annotations

import asyncio
import base64
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
from helpers import verify_strict
from real_wire import vendor_mock

from vcr_transport import AsyncRecordingTransport, RecordingTransport, ReplayMismatch, ReplayTransport
from vcr_transport._core.engine._matching import comparable_parts

KEY = "sk-proj-" + "Uq3" * 14
AUDIO = bytes(range(256)) * 40  # not UTF-8: a binary part
BATCH_LINES = b'{"custom_id": "1", "method": "POST", "url": "/v1/chat/completions", "body": {}}\n'


def answer(request: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    if request.url.path.endswith("/files"):
        body = {
            "id": "file-abc123",
            "object": "file",
            "bytes": 10,
            "created_at": 1,
            "filename": "x",
            "purpose": "batch",
        }
    else:
        body = {"text": "hello from the recording"}
    return 200, [("content-type", "application/json")], json.dumps(body).encode()


def uploads(transport: Any, library: Any, audio_name: str, *, is_async: bool, lines: bytes = BATCH_LINES) -> list[Any]:
    """A batch input upload, a transcription of an audio file opened from disk, then another upload."""

    def sync_run() -> list[Any]:
        with library.Client(transport=transport) as http:
            client = openai.OpenAI(api_key=KEY, http_client=http, max_retries=0)
            first = client.files.create(file=("batch.jsonl", lines), purpose="batch")
            with open(audio_name, "rb") as audio:
                text = client.audio.transcriptions.create(model="whisper-1", file=audio)
            again = client.files.create(file=("batch.jsonl", lines), purpose="batch")
            return [first.id, text.text, again.id]

    async def async_run() -> list[Any]:
        async with library.AsyncClient(transport=transport) as http:
            client = openai.AsyncOpenAI(api_key=KEY, http_client=http, max_retries=0)
            first = await client.files.create(file=("batch.jsonl", lines), purpose="batch")
            with open(audio_name, "rb") as audio:
                text = await client.audio.transcriptions.create(model="whisper-1", file=audio)
            again = await client.files.create(file=("batch.jsonl", lines), purpose="batch")
            return [first.id, text.text, again.id]

    return asyncio.run(async_run()) if is_async else sync_run()


def audio_file(folder: Path, data: bytes = AUDIO) -> str:
    """A tempfile-named audio file (``tmpXXXXXXXX.wav``): its name changes from run to run."""
    with tempfile.NamedTemporaryFile(dir=folder, suffix=".wav", delete=False) as file:
        file.write(data)
    return file.name


@pytest.mark.parametrize("library", [httpx, httpx2], ids=lambda library: library.__name__)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_uploads_record_verify_and_replay(library: Any, is_async: bool, tmp_path: Path) -> None:
    cassette = tmp_path / "uploads.jsonl"
    inner = vendor_mock(library, answer)
    recording: Any = AsyncRecordingTransport(inner, cassette) if is_async else RecordingTransport(inner, cassette)
    live = uploads(recording, library, audio_file(tmp_path), is_async=is_async)
    assert verify_strict(cassette)[0] == 0
    text = cassette.read_text()
    assert "multipart/form-data; boundary=" in text
    # Replayed from another temporary file (another random name) and with other boundaries.
    assert uploads(ReplayTransport(cassette), library, audio_file(tmp_path), is_async=is_async) == live


def test_a_changed_part_is_named(tmp_path: Path) -> None:
    cassette = tmp_path / "uploads.jsonl"
    uploads(RecordingTransport(vendor_mock(httpx2, answer), cassette), httpx2, audio_file(tmp_path), is_async=False)
    with pytest.raises(ReplayMismatch) as caught:
        uploads(ReplayTransport(cassette, on_mismatch="raise"), httpx2, audio_file(tmp_path), is_async=False,
                lines=BATCH_LINES.replace(b'"1"', b'"2"'))  # fmt: skip
    assert str(caught.value).startswith("replay mismatch at call 0, field body.parts[file].content: recorded ")
    assert "'custom_id'" not in str(caught.value) or '"1"' in str(caught.value)
    with pytest.raises(ReplayMismatch) as caught:
        uploads(ReplayTransport(cassette, on_mismatch="raise"), httpx2, audio_file(tmp_path, AUDIO[::-1]),
                is_async=False)  # fmt: skip
    message = str(caught.value)
    assert message.startswith("replay mismatch at call 1, field body.parts[file].content: recorded '<10240 bytes,")


def test_parts_are_compared_without_the_boundary_by_name_filename_type_and_content() -> None:
    def body(boundary: str, filename: str, content: bytes, kind: str = "audio/wav") -> bytes:
        return (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
                f"Content-Type: {kind}\r\n\r\n"
            ).encode()
            + content
            + f"\r\n--{boundary}--\r\n".encode()
        )

    one = comparable_parts(body("aaaa", "tmpab_cd123.wav", b"\xff\x00"), "aaaa")
    assert one == comparable_parts(body("bbbb", "tmpzz9y8x7w.wav", b"\xff\x00"), "bbbb")
    assert one["parts[model]"]["content"] == "whisper-1"
    assert one["parts[file]"]["content"].startswith("<2 bytes, sha256 ")
    assert one != comparable_parts(body("aaaa", "speech.wav", b"\xff\x00"), "aaaa")
    assert one != comparable_parts(body("aaaa", "tmpab_cd123.wav", b"\xff\x01"), "aaaa")
    assert one != comparable_parts(body("aaaa", "tmpab_cd123.wav", b"\xff\x00", "audio/mpeg"), "aaaa")


def test_a_compressed_multipart_upload_with_a_binary_part_records_and_scan_reads_it(tmp_path: Path) -> None:
    """A gzip multipart body holding a binary file part: its recording failed (the stand-in that stores a body
    unredacted, to tell whether redaction changed it, had no ``redact_binary``), and so did scan's reading."""
    import gzip

    from real_wire import real_headers

    from vcr_transport._tools._cli import main as cli

    key = "sk-proj-4fJ9kQ2mXv7LpR8sT1uW3yZ5aB6cD0eF9gH2iJ4kLm"
    body = (
        b'--xyz\r\nContent-Disposition: form-data; name="note"\r\n\r\nkey ' + key.encode() + b"\r\n"
        b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n\x89\xff\x00binary\r\n--xyz--\r\n"
    )
    headers = {"content-type": "multipart/form-data; boundary=xyz", "content-encoding": "gzip"}
    answer = [*real_headers("openai"), ("content-type", "application/json")]
    path = tmp_path / "upload.jsonl"
    mock = httpx2.MockTransport(lambda _: httpx2.Response(200, json={"id": "file-1"}, headers=answer))
    with httpx2.Client(transport=RecordingTransport(mock, path)) as client:
        client.post("https://api.openai.com/v1/files", content=gzip.compress(body), headers=headers)
    request = json.loads(path.read_text().splitlines()[1])
    stored = gzip.decompress(base64.b64decode(request["body"]["base64"]))
    assert key.encode() not in stored and b"key [secret removed]" in stored and b"\x89\xff\x00binary" in stored
    with httpx2.Client(transport=ReplayTransport(path)) as client:
        assert client.post("https://api.openai.com/v1/files", content=gzip.compress(body), headers=headers).json() == {
            "id": "file-1"
        }
    request["body"]["base64"] = base64.b64encode(gzip.compress(body)).decode()  # the key put back
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], json.dumps(request), *lines[2:]]) + "\n")
    assert cli(["scan", str(path)]) == 1
