"""Plain bodies: while recording, the upstream is asked for an uncompressed response, so the cassette holds
the readable bytes that really crossed the wire. The upstream here gzips only when the request allows it,
as real vendors do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import cassette_lines, recording
from tap import Tap
from upstream import Reply, Upstream
from vendors import VENDOR_ROUTES, Sdk

import vcr_transport


def _gzip_when_asked(sdk: Sdk, upstream: Upstream) -> None:
    prefix, reply = VENDOR_ROUTES[sdk.name]

    def answer(received: Any) -> Reply:
        plain = reply(received)
        plain.gzip = "if-accepted"
        return plain

    upstream.routes[prefix] = answer


def _events(path: Path) -> list[dict[str, Any]]:
    return [line for line in cassette_lines(path) if line["type"] == "event"]


def test_recording_asks_for_plain_bodies_and_stores_readable_text(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    _gzip_when_asked(sdk, upstream)
    steps = [("chat", ["plain please"]), ("stream", ["plain stream"])]
    live = sdk.run(recording(sdk.library, sdk.is_async, cassette), upstream.url, steps)
    assert live[0] == "echo:plain please"
    assert [r.headers.get("accept-encoding") for r in upstream.received] == ["identity", "identity"]
    events = _events(cassette)
    assert events and all("text" in event for event in events), "every chunk is stored as readable text"
    assert "echo:plain please" in "".join(event["text"] for event in events if event["call_index"] == 0)
    responses = [line for line in cassette_lines(cassette) if line["type"] == "response"]
    assert all(name.lower() != "content-encoding" for r in responses for name, _ in r["headers"])
    requests = [line for line in cassette_lines(cassette) if line["type"] == "request"]
    assert all(["accept-encoding", "identity"] in r["headers"] for r in requests), "the cassette says what was sent"
    upstream.stop()
    replayed = sdk.run(Tap(vcr_transport.ReplayTransport(cassette)), upstream.url, steps)
    assert replayed == live


def test_plain_bodies_false_keeps_the_compressed_wire_form(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    _gzip_when_asked(sdk, upstream)
    steps = [("chat", ["zip please"])]
    live = sdk.run(recording(sdk.library, sdk.is_async, cassette, plain_bodies=False), upstream.url, steps)
    assert live == ["echo:zip please"]
    assert "gzip" in upstream.received[0].headers.get("accept-encoding", "")
    response = next(line for line in cassette_lines(cassette) if line["type"] == "response")
    assert ["content-encoding", "gzip"] in [[n.lower(), v] for n, v in response["headers"]]
    assert any("base64" in event for event in _events(cassette)), "gzip bytes are not text"
    upstream.stop()
    assert sdk.run(vcr_transport.ReplayTransport(cassette), upstream.url, steps) == live


@pytest.mark.parametrize("plain", [True, False])
def test_the_option_reaches_use_cassette_recordings(upstream: Upstream, tmp_path: Path, plain: bool) -> None:
    import openai

    sdk_reply = VENDOR_ROUTES["openai"][1]
    upstream.routes[VENDOR_ROUTES["openai"][0]] = lambda received: Reply(
        **{**sdk_reply(received).__dict__, "gzip": "if-accepted"}
    )
    path = tmp_path / "ctx.jsonl"
    with vcr_transport.use_cassette(path, mode="record", plain_bodies=plain):
        client = openai.OpenAI(api_key="sk-test", base_url=upstream.url + "/v1")
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        client.close()
    response = next(line for line in cassette_lines(path) if line["type"] == "response")
    encoded = any(name.lower() == "content-encoding" for name, _ in response["headers"])
    assert encoded is not plain
    assert (upstream.received[0].headers.get("accept-encoding") == "identity") is plain


def test_plain_bodies_must_be_a_bool(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="option plain_bodies must be True or False"):
        vcr_transport.transport(tmp_path / "x.jsonl", mode="record", plain_bodies="yes")


def test_a_response_its_transport_hands_back_read_is_stored_decoded_and_redacted(tmp_path: Path) -> None:
    # httpx2.MockTransport (a Response built with content=) hands its response back read: its ``content`` is the
    # body decoded, so the cassette stores that, without the gzip header that would have it decoded again (by the
    # recorder's redaction, which kept it unredacted; by the client on replay, which failed).
    import gzip
    import json

    import httpx2
    import openai
    from real_wire import real_headers

    key = "sk-proj-Xq7Lm2Pz9Rt4Vb6Nc1Kd8Hw3Js5Gf0Ay2Eu9Oi4TyT3BlbkFJMn6Bv8Cx1Za3Sd5Fg7Hj9Kl2Qw4Er6"
    answer = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "your key is " + key}}]}  # fmt: skip
    packed = gzip.compress(json.dumps(answer).encode(), mtime=0)
    headers = [*real_headers("openai"), ("content-type", "application/json"), ("content-encoding", "gzip")]

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=headers, content=packed)

    path = tmp_path / "read.jsonl"

    def ask(transport: Any) -> str:
        with httpx2.Client(transport=transport) as http:
            client = openai.OpenAI(api_key="sk-test", base_url="https://api.openai.com/v1", http_client=http)
            reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "key?"}])
        return str(reply.choices[0].message.content)

    assert ask(vcr_transport.RecordingTransport(httpx2.MockTransport(handler), path)) == "your key is " + key
    text = path.read_text(encoding="utf-8")
    assert key not in text and "your key is [secret removed]" in text
    response = next(line for line in cassette_lines(path) if line["type"] == "response")
    assert "content-encoding" not in [name.lower() for name, _ in response["headers"]]
    assert ask(vcr_transport.ReplayTransport(path)) == "your key is [secret removed]"
