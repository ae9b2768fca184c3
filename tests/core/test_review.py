"""``_core/views/_review.py``: what the views spare a reviewer (volatile fields, padding) and how they show long
values and multipart parts."""

from __future__ import annotations

import base64

from vcr_transport._core.views._review import (
    LONG_BASE64,
    LONG_TEXT,
    PADDING,
    change_kind,
    cut_long,
    described_bytes,
    is_padding_path,
    quiet,
    request_bytes,
    request_parts,
)


def test_a_long_base64_payload_and_a_very_long_text_are_cut_to_head_length_and_hash() -> None:
    payload = base64.b64encode(bytes(range(256)) * 2).decode()
    assert len(payload) >= LONG_BASE64
    cut = cut_long({"data": [payload], "url": "data:image/png;base64," + payload, "short": "hello"})
    assert cut["short"] == "hello"
    assert cut["data"][0].startswith(payload[:32] + "… (") and f"({len(payload)} chars, sha256 " in cut["data"][0]
    assert cut["url"].startswith("data:image/png;base64,")
    prose = "word " * (LONG_TEXT // 5)
    assert cut_long(prose) != prose and cut_long(prose[: LONG_BASE64 + 10]) == prose[: LONG_BASE64 + 10]
    # The same text gives the same hash; another, another.
    assert cut_long(payload) == cut_long(payload) != cut_long(payload[::-1])


def test_quiet_leaves_out_volatile_fields_and_shows_padding() -> None:
    event = {"id": "chatcmpl-1", "created": 1, "obfuscation": "xyz", "p": "abc", "choices": [{"p": "kept", "id": 2}]}
    assert quiet(event) == {"obfuscation": PADDING, "p": PADDING, "choices": [{"p": "kept"}]}


def test_padding_paths_and_change_kinds() -> None:
    assert is_padding_path("response.events[3].obfuscation") and is_padding_path("response.events[3].p")
    assert is_padding_path("response.events[3].data.p")
    assert not is_padding_path("response.events[3].choices[0].p")
    assert change_kind("response.events[0].p", "a", "b") == "padding"
    assert change_kind("body.text", "a  b\n", "a b") == "whitespace"
    assert change_kind("body.text", "a b", "a c") == "changed"
    assert change_kind("body.n", 1, 2) == "changed"


def test_request_bytes_of_each_stored_form() -> None:
    assert request_bytes({"text": "héllo"}) == "héllo".encode()
    assert request_bytes({"base64": base64.b64encode(b"\x00\x01").decode()}) == b"\x00\x01"
    assert request_bytes({"base64": "not base64!"}) is None
    assert request_bytes({"json": {"a": 1}}) is None and request_bytes(None) is None


def test_a_multipart_body_is_shown_part_by_part() -> None:
    audio = bytes(range(200))
    body = (
        b'--XyZ\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n'
        b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n'
        b"Content-Type: audio/wav\r\n\r\n" + audio + b"\r\n--XyZ--\r\n"
    )
    stored = {"base64": base64.b64encode(body).decode()}
    parts = request_parts(stored, [("Content-Type", "multipart/form-data; boundary=XyZ")])
    assert parts is not None and [(p.name, p.filename) for p in parts] == [("model", None), ("file", "a.wav")]
    assert parts[0].described == "'whisper-1'"
    assert parts[1].described == f"filename=a.wav, audio/wav, {described_bytes(audio)}"
    assert described_bytes(audio).startswith("200 bytes, sha256 ")
    assert request_parts(stored, [("content-type", "application/json")]) is None
