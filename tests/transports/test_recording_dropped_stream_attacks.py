"""Streams dropped early through a recording transport, attacked: asyncio and trio, a response never closed,
a stream dropped inside another's iteration, a drop after the last byte (``complete``), iterating again (the
library's ReadError, as live), replay with ``unplayed="error"`` afterwards."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import call_ends
from test_recording_dropped_streams import ClosingProbe
from upstream import Reply, Upstream

import vcr_transport

CHUNKS = [f"line {i:03d}\n".encode() for i in range(200)]


@pytest.fixture
def slow(upstream: Upstream) -> Upstream:
    upstream.routes["/slow"] = lambda r: Reply(200, [("content-type", "text/plain")], list(CHUNKS), pause=0.002)
    upstream.routes["/fast"] = lambda r: Reply.json({"ok": r.path})
    return upstream


def _sync_drop(client: httpx.Client, url: str, n: int = 2) -> bytes:
    response = client.send(client.build_request("GET", url), stream=True)
    got = b""
    for chunk in response.iter_raw():
        got += chunk
        if len(got) >= n * len(CHUNKS[0]):
            break  # the response is never closed by the app
    return got


@pytest.mark.usefixtures("no_gc")
def test_async_drop_without_closing_the_response(slow: Upstream, cassette: Path) -> None:
    probe = ClosingProbe(httpx.AsyncHTTPTransport())

    async def run() -> tuple[bool, Any]:
        async with httpx.AsyncClient(transport=vcr_transport.AsyncRecordingTransport(probe, cassette)) as client:
            response = await client.send(client.build_request("GET", slow.url + "/slow"), stream=True)
            async for _ in response.aiter_raw():
                break
            del response
            await asyncio.sleep(0.01)
            closed = probe.closed[0]
            return closed, (await client.get(slow.url + "/fast")).json()

    closed, after = asyncio.run(run())
    assert after == {"ok": "/fast"}
    assert closed, "the dropped async stream was left open"
    assert [end["outcome"] for end in call_ends(cassette)] == ["closed_early", "complete"]


TRIO_WARNINGS = pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")


@TRIO_WARNINGS
@pytest.mark.usefixtures("no_gc")
def test_trio_drop(slow: Upstream, cassette: Path) -> None:
    import trio

    probe = ClosingProbe(httpx.AsyncHTTPTransport())

    async def run() -> tuple[bytes, bool, Any]:
        async with httpx.AsyncClient(transport=vcr_transport.AsyncRecordingTransport(probe, cassette)) as client:
            async with client.stream("GET", slow.url + "/slow") as response:
                got = b""
                async for chunk in response.aiter_raw():
                    got += chunk
                    break
            closed = probe.closed[0]
            return got, closed, (await client.get(slow.url + "/fast")).json()

    got, closed, after = trio.run(run)
    assert got and after == {"ok": "/fast"} and closed
    assert [end["outcome"] for end in call_ends(cassette)] == ["closed_early", "complete"]
    slow.stop()

    async def replay() -> bytes:
        async with httpx.AsyncClient() as client:
            async with client.stream("GET", slow.url + "/slow") as response:
                async for chunk in response.aiter_raw():  # noqa: B007 - the chunk read is returned
                    break
            assert (await client.get(slow.url + "/fast")).json() == {"ok": "/fast"}
            return chunk

    with vcr_transport.use_cassette(cassette, mode="replay"):
        assert trio.run(replay).startswith(b"line 000")


@TRIO_WARNINGS
@pytest.mark.usefixtures("no_gc")
def test_trio_drop_without_closing_the_response(slow: Upstream, cassette: Path) -> None:
    import trio

    probe = ClosingProbe(httpx.AsyncHTTPTransport())

    async def run() -> tuple[bool, Any]:
        async with httpx.AsyncClient(transport=vcr_transport.AsyncRecordingTransport(probe, cassette)) as client:
            response = await client.send(client.build_request("GET", slow.url + "/slow"), stream=True)
            async for _ in response.aiter_raw():
                break
            del response
            await trio.sleep(0.01)
            closed = probe.closed[0]
            return closed, (await client.get(slow.url + "/fast")).json()

    closed, after = trio.run(run)
    assert after == {"ok": "/fast"}
    assert closed, "the dropped trio stream was left open"
    assert [end["outcome"] for end in call_ends(cassette)] == ["closed_early", "complete"]


@pytest.mark.usefixtures("no_gc")
def test_sync_drop_inside_another_streams_iteration(slow: Upstream, cassette: Path) -> None:
    probe = ClosingProbe(httpx.HTTPTransport())

    def run(transport: Any) -> tuple[bytes, bytes]:
        with httpx.Client(transport=transport) as client:
            outer = b""
            inner = b""
            with client.stream("GET", slow.url + "/slow?outer") as response:
                for number, chunk in enumerate(response.iter_raw()):
                    outer += chunk
                    if number == 1:
                        inner = _sync_drop(client, slow.url + "/slow?inner")
                        assert probe.closed[1:] == [True] or transport is not rec
            return outer, inner

    rec = vcr_transport.RecordingTransport(probe, cassette)
    outer, inner = run(rec)
    assert outer == b"".join(CHUNKS) and inner.startswith(b"line 000")
    ends = {end["call_index"]: end["outcome"] for end in call_ends(cassette)}
    assert ends == {0: "complete", 1: "closed_early"}, ends
    slow.stop()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert run(httpx.HTTPTransport()) == (outer, inner)


@pytest.mark.usefixtures("no_gc")
def test_async_drop_inside_another_streams_iteration(slow: Upstream, cassette: Path) -> None:
    probe = ClosingProbe(httpx.AsyncHTTPTransport())

    async def run(transport: Any) -> tuple[bytes, bool]:
        async with httpx.AsyncClient(transport=transport) as client:
            outer = b""
            closed = True
            async with client.stream("GET", slow.url + "/slow?outer") as response:
                number = 0
                async for chunk in response.aiter_raw():
                    outer += chunk
                    number += 1
                    if number == 2:
                        inner = await client.send(client.build_request("GET", slow.url + "/slow?inner"), stream=True)
                        async for _ in inner.aiter_raw():
                            break
                        del inner
                        await asyncio.sleep(0.01)
                        closed = probe.closed[1] if transport is rec else True
            return outer, closed

    rec = vcr_transport.AsyncRecordingTransport(probe, cassette)
    outer, closed = asyncio.run(run(rec))
    assert outer == b"".join(CHUNKS) and closed
    ends = {end["call_index"]: end["outcome"] for end in call_ends(cassette)}
    assert ends == {0: "complete", 1: "closed_early"}, ends
    slow.stop()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert asyncio.run(run(httpx.AsyncHTTPTransport()))[0] == outer


@pytest.mark.usefixtures("no_gc")
def test_sync_drop_then_replay_with_unplayed_error(slow: Upstream, cassette: Path) -> None:
    probe = ClosingProbe(httpx.HTTPTransport())
    with httpx.Client(transport=vcr_transport.RecordingTransport(probe, cassette)) as client:
        got = _sync_drop(client, slow.url + "/slow")
        assert probe.closed == [True]
        assert client.get(slow.url + "/fast").json() == {"ok": "/fast"}
    assert [end["outcome"] for end in call_ends(cassette)] == ["closed_early", "complete"]
    slow.stop()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"), httpx.Client() as client:
        assert _sync_drop(client, slow.url + "/slow") == got
        assert client.get(slow.url + "/fast").json() == {"ok": "/fast"}


@pytest.mark.usefixtures("no_gc")
def test_a_stream_dropped_after_its_last_byte_is_complete(upstream: Upstream, cassette: Path) -> None:
    """The app stops at the last chunk of a body with a content-length, before the iteration's end."""
    upstream.routes["/whole"] = lambda r: Reply(
        200, [("content-type", "text/plain")], list(CHUNKS), content_length=True
    )
    probe = ClosingProbe(httpx.HTTPTransport())
    total = len(b"".join(CHUNKS))
    with httpx.Client(transport=vcr_transport.RecordingTransport(probe, cassette)) as client:
        response = client.send(client.build_request("GET", upstream.url + "/whole"), stream=True)
        got = b""
        for chunk in response.iter_raw():
            got += chunk
            if len(got) == total:
                break
        assert probe.closed == [True]
    assert got == b"".join(CHUNKS)
    assert [end["outcome"] for end in call_ends(cassette)] == ["complete"]
    upstream.stop()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"), httpx.Client() as client:
        assert client.get(upstream.url + "/whole").content == got


@pytest.mark.usefixtures("no_gc")
def test_iterating_a_dropped_stream_again_fails_as_live(slow: Upstream, cassette: Path) -> None:
    def again(transport: Any) -> type[BaseException] | None:
        with httpx.Client(transport=transport) as client:
            response = client.send(client.build_request("GET", slow.url + "/slow"), stream=True)
            stream = response.stream
            for _ in stream:
                break
            try:
                for _ in stream:
                    pass
            except Exception as error:  # noqa: BLE001
                return type(error)
            return None

    live = again(httpx.HTTPTransport())
    recorded = again(vcr_transport.RecordingTransport(httpx.HTTPTransport(), cassette))
    assert recorded == live, (recorded, live)


@TRIO_WARNINGS
@pytest.mark.usefixtures("no_gc")
@pytest.mark.parametrize("runner", ["trio", "asyncio"])
def test_openai_async_stream_abandoned(upstream: Upstream, cassette: Path, runner: str) -> None:
    """openai's async SDK: a streamed completion abandoned after its first delta (no close), then another call
    on the same client; through a recording transport the stream is closed when it is live."""
    import openai
    import trio
    from vendors import VENDOR_ROUTES

    prefix, reply = VENDOR_ROUTES["openai"]
    upstream.routes[prefix] = lambda received: reply(received, pause=0.005)

    def attempt(recording: bool) -> tuple[str, bool, str]:
        probe = ClosingProbe(httpx.AsyncHTTPTransport())
        transport = vcr_transport.AsyncRecordingTransport(probe, cassette) if recording else probe

        async def run() -> tuple[str, bool, str]:
            async with httpx.AsyncClient(transport=transport) as http:
                client = openai.AsyncOpenAI(api_key="sk-test", base_url=upstream.url + "/v1", http_client=http)
                stream = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True
                )
                first = ""
                async for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        first = chunk.choices[0].delta.content
                        break
                del stream, chunk
                await (trio.sleep(0.05) if runner == "trio" else asyncio.sleep(0.05))
                closed = probe.closed[0]
                answer = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "again"}]
                )
                return first, closed, str(answer.choices[0].message.content)

        return trio.run(run) if runner == "trio" else asyncio.run(run())

    live = attempt(False)
    recorded = attempt(True)
    assert recorded == live
    assert [end["outcome"] for end in call_ends(cassette)] == ["closed_early", "complete"]
