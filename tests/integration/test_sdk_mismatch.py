"""A replay miss reaches the user of every SDK fast and readable, naming the field that changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import recording
from upstream import Upstream
from vendors import Sdk

import vcr_transport

FIELD = {
    "openai": "body.messages[2].content",
    "anthropic": "body.messages[2].content[0].text",
    "genai": "body.contents[2].parts[0].text",
}


def test_changed_word_names_the_field(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    recorded = [("chat", ["hi"]), ("chat", ["hi", "echo:hi", "tell me about cats"])]
    changed = [("chat", ["hi"]), ("chat", ["hi", "echo:hi", "tell me about dogs"])]
    sdk.run(recording(sdk.library, sdk.is_async, cassette), upstream.url, recorded)
    upstream.stop()

    replay = vcr_transport.ReplayTransport(cassette)
    requests_seen: list[int] = []
    respond = replay.respond

    def counting(request: object, body: bytes) -> object:
        requests_seen.append(1)
        return respond(request, body)

    replay.respond = counting  # type: ignore[method-assign]
    with pytest.raises(Exception) as caught:
        sdk.run(replay, upstream.url, changed)

    line = (
        f"replay mismatch at call 1, field {FIELD[sdk.name]}: "
        "recorded 'tell me about cats', incoming 'tell me about dogs'"
    )
    assert line in str(caught.value)
    if sdk.name == "anthropic":
        import anthropic

        assert isinstance(caught.value, anthropic.BadRequestError)
    else:
        assert isinstance(caught.value, vcr_transport.ReplayMismatch)
        assert str(caught.value).splitlines()[0] == line
    # Whatever the SDK made of it, the transport kept the mismatch itself.
    mismatch = replay.first_mismatch
    assert mismatch is not None and mismatch.headline == line
    assert (mismatch.call_index, mismatch.field_path) == (1, FIELD[sdk.name])
    assert (mismatch.recorded, mismatch.incoming) == ("tell me about cats", "tell me about dogs")
    with pytest.raises(vcr_transport.ReplayMismatch):
        replay.raise_first_mismatch()
    # Call 0 and the call that missed, each once: no SDK retried the miss (a retry would sleep first).
    assert len(requests_seen) == 2, f"{len(requests_seen)} requests reached the transport: an SDK retried the miss"


def test_machine_varying_headers_do_not_miss(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    """Recorded on one simulated platform, replayed with another's headers, SDK version and key."""
    steps = [("chat", ["hi"]), ("stream", ["hi", "echo:hi", "more"])]
    sdk.run(recording(sdk.library, sdk.is_async, cassette), upstream.url, steps)
    upstream.stop()
    other_machine = {
        "X-Stainless-OS": "Windows",
        "X-Stainless-Arch": "arm64",
        "X-Stainless-Runtime-Version": "3.99.1",
        "X-Stainless-Package-Version": "99.0.0",
        "User-Agent": "SomethingElse/9.9",
        "x-goog-api-client": "google-genai-sdk/99.0.0 gl-python/3.99.1",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    }
    key = {
        "openai": "sk-proj-OTHERKEY0123456789abcdefghijkl",
        "anthropic": "sk-ant-api03-OTHERKEY0123456789abcdefgh",
        "genai": "AIzaSyOTHERKEY0123456789abcdefghijklmn",
    }[sdk.name]
    options = (
        {"http_options": {"headers": other_machine}} if sdk.name == "genai" else {"default_headers": other_machine}
    )
    replay = vcr_transport.ReplayTransport(cassette)
    results = sdk.run(replay, upstream.url, steps, api_key=key, **options)
    assert results[0] == "echo:hi"
    assert replay.first_mismatch is None
    assert replay.unplayed_calls() == []


def test_an_sdk_answered_with_the_400_raises_its_own_error_and_the_mismatch_is_kept(
    sdk: Sdk, upstream: Upstream, cassette: Path
) -> None:
    """What openai before 3.50 (instructor's 3.3) gets under ``on_mismatch="auto"``, forced here on the installed
    SDK: its ``BadRequestError`` carrying the line, not caused by ``ReplayMismatch``; an app that catches 400s
    swallows it, and the transport still holds the mismatch that closing the cassette raises."""
    if sdk.name != "openai":
        pytest.skip("the openai SDK's own error")
    import openai

    recorded = [("chat", ["hi"]), ("chat", ["hi", "echo:hi", "tell me about cats"])]
    sdk.run(recording(sdk.library, sdk.is_async, cassette), upstream.url, recorded)
    upstream.stop()
    replay = vcr_transport.ReplayTransport(cassette, on_mismatch="respond")
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.run(replay, upstream.url, [("chat", ["hi"]), ("chat", ["hi", "echo:hi", "tell me about dogs"])])
    line = f"replay mismatch at call 1, field {FIELD['openai']}: recorded 'tell me about cats', incoming"
    assert line in caught.value.message and caught.value.status_code == 400
    assert caught.value.__cause__ is None and not isinstance(caught.value, vcr_transport.ReplayMismatch)
    with pytest.raises(vcr_transport.ReplayMismatch, match=r"field body\.messages\[2\]\.content"):
        replay.raise_first_mismatch()
