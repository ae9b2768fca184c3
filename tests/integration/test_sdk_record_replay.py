"""The real SDKs, sync and async, over httpx and httpx2, recorded against a loopback vendor and replayed
with the server stopped: the SDK result, the bytes and the chunk boundaries must all be the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import call_ends, recording
from tap import Tap
from upstream import Reply, Upstream
from vendors import VENDOR_ROUTES, Sdk

import vcr_transport

CONVERSATION = [("chat", ["hi"]), ("stream", ["hi", "echo:hi", "how are you?"]), ("chat", ["bye"])]


def record_and_replay(
    sdk: Sdk, upstream: Upstream, path: Path, steps: list[tuple[str, list[str]]], **options: Any
) -> tuple[Any, Any, Tap, Tap]:
    live_tap = Tap(recording(sdk.library, sdk.is_async, path))
    live = sdk.run(live_tap, upstream.url, steps, **options)
    upstream.stop()
    replay_tap = Tap(vcr_transport.ReplayTransport(path))
    replayed = sdk.run(replay_tap, upstream.url, steps, **options)
    return live, replayed, live_tap, replay_tap


@pytest.mark.parametrize("split", ["events", 7, 1], ids=["event-boundaries", "7-bytes", "1-byte"])
@pytest.mark.slow
def test_conversation_replays_chunk_exact(sdk: Sdk, upstream: Upstream, cassette: Path, split: Any) -> None:
    prefix, reply = VENDOR_ROUTES[sdk.name]
    upstream.routes[prefix] = lambda received: reply(received, split=split, pause=0.001)
    live, replayed, live_tap, replay_tap = record_and_replay(sdk, upstream, cassette, CONVERSATION)
    assert live[0] == "echo:hi"
    assert "".join(live[1]) == "echo:how are you? héllo ✓ 日本"
    assert replayed == live
    assert replay_tap.calls == live_tap.calls
    assert replay_tap.statuses == live_tap.statuses
    assert len(live_tap.calls[1]) > 1, "the stream reached the SDK in more than one chunk"


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_line_endings_replay_as_recorded(sdk: Sdk, upstream: Upstream, cassette: Path, newline: str) -> None:
    prefix, reply = VENDOR_ROUTES[sdk.name]
    upstream.routes[prefix] = lambda received: reply(received, split=5, newline=newline)
    live, replayed, live_tap, replay_tap = record_and_replay(sdk, upstream, cassette, [("stream", ["hi"])])
    assert replayed == live and "".join(live[0]).startswith("echo:hi")
    assert replay_tap.calls == live_tap.calls
    assert newline.encode() + newline.encode() in b"".join(replay_tap.calls[0])


def test_gzip_json_stays_gzip_in_the_cassette(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    prefix, reply = VENDOR_ROUTES[sdk.name]

    def gzipped(received: Any) -> Reply:
        plain = reply(received)
        plain.gzip = True
        return plain

    upstream.routes[prefix] = gzipped
    live, replayed, live_tap, replay_tap = record_and_replay(sdk, upstream, cassette, [("chat", ["zip me"])])
    assert live == replayed == ["echo:zip me"]
    assert live_tap.calls == replay_tap.calls
    assert b"".join(replay_tap.calls[0])[:2] == b"\x1f\x8b", "the transport still yields the gzip bytes"


def test_retry_after_429_replays_the_same_retry_sequence(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    prefix, reply = VENDOR_ROUTES[sdk.name]
    served: list[int] = []

    def limited(received: Any) -> Reply:
        served.append(1)
        if len(served) == 1:
            return Reply.json(
                {"error": {"message": "slow down", "type": "rate_limit_error"}},
                status=429,
                headers=[("retry-after", "0.3")],
            )
        return reply(received)

    upstream.routes[prefix] = limited
    options: dict[str, Any] = {}
    if sdk.name == "genai":
        from google.genai import types

        options["http_options"] = {
            "retry_options": types.HttpRetryOptions(attempts=2, initial_delay=0.01, max_delay=0.02)
        }
    live, replayed, live_tap, replay_tap = record_and_replay(sdk, upstream, cassette, [("chat", ["hi"])], **options)
    assert live == replayed == ["echo:hi"]
    assert live_tap.statuses == replay_tap.statuses == [429, 200]
    assert [end["outcome"] for end in call_ends(cassette)] == ["complete", "complete"]


def test_error_in_the_middle_of_a_stream_replays_at_the_same_point(
    sdk: Sdk, upstream: Upstream, cassette: Path
) -> None:
    prefix, reply = VENDOR_ROUTES[sdk.name]

    def broken(received: Any) -> Reply:
        cut = reply(received, split=40, pause=0.002)
        cut.cut_after = 3
        return cut

    upstream.routes[prefix] = broken
    steps = [("stream", ["hi"])]
    options = {"max_retries": 0} if sdk.name != "genai" else {}
    live_tap = Tap(recording(sdk.library, sdk.is_async, cassette, keep_failures=True))
    with pytest.raises(Exception) as live_error:
        sdk.run(live_tap, upstream.url, steps, **options)
    upstream.stop()
    replay_tap = Tap(vcr_transport.ReplayTransport(cassette))
    with pytest.raises(Exception) as replay_error:
        sdk.run(replay_tap, upstream.url, steps, **options)
    assert type(replay_error.value) is type(live_error.value)
    assert replay_tap.calls == live_tap.calls
    assert len(live_tap.calls[0]) == 3
    (end,) = call_ends(cassette)
    assert end["outcome"] == "error" and end["error"]["class"].endswith("RemoteProtocolError")


def test_refused_connection_replays_as_the_same_error(sdk: Sdk, cassette: Path) -> None:
    from upstream import free_port

    url = f"http://127.0.0.1:{free_port()}"
    options = {"max_retries": 0} if sdk.name != "genai" else {}
    with pytest.raises(Exception) as live_error:
        sdk.run(recording(sdk.library, sdk.is_async, cassette, keep_failures=True), url, [("chat", ["hi"])], **options)
    with pytest.raises(Exception) as replay_error:
        sdk.run(vcr_transport.ReplayTransport(cassette), url, [("chat", ["hi"])], **options)
    assert type(replay_error.value) is type(live_error.value)
    assert (
        type(replay_error.value.__cause__ or replay_error.value).__name__
        == type(live_error.value.__cause__ or live_error.value).__name__
    )
    (end,) = call_ends(cassette)
    assert end == {"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "error", "error": end["error"]}
    assert end["error"]["class"].endswith("ConnectError")


def test_stopping_a_stream_early_then_calling_again(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    prefix, reply = VENDOR_ROUTES[sdk.name]
    upstream.routes[prefix] = lambda received: reply(received, pause=0.002)
    steps = [("first", ["hi"]), ("chat", ["again"]), ("first", ["last"])]
    live, replayed, live_tap, replay_tap = record_and_replay(sdk, upstream, cassette, steps)
    assert live == replayed == ["echo:hi", "echo:again", "echo:last"]
    assert replay_tap.calls == live_tap.calls
    ends = call_ends(cassette)
    assert [end["outcome"] for end in ends][1] == "complete"
    assert ends[0]["outcome"] in ("closed_early", "complete") and ends[0]["event_count"] == len(live_tap.calls[0])


def test_openai_aiohttp_transport_is_wrapped(upstream: Upstream, cassette: Path) -> None:
    import asyncio

    import httpx2
    from openai._vendor.httpx_aiohttp import AiohttpTransport

    sdk = Sdk("openai", httpx2, "async")
    steps = [("chat", ["hi"]), ("stream", ["hi", "echo:hi", "more"])]

    async def record() -> list[Any]:
        transport = vcr_transport.AsyncRecordingTransport(AiohttpTransport(), cassette)
        return await sdk._run_async(transport, upstream.url, steps, {})

    live = asyncio.run(record())
    upstream.stop()
    assert sdk.run(vcr_transport.ReplayTransport(cassette), upstream.url, steps) == live
    assert live[0] == "echo:hi"
