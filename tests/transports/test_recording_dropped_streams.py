"""A stream the app drops before its end (an SDK's stream abandoned after the first chunk) is closed at once
through a recording transport, as httpcore closes its own: not left to the garbage collector, which may close
it at any later moment, possibly while the same thread holds the connection pool's lock (closing it then
waits on that lock forever: a hang of the next call). Shown with the garbage collector off, through the real
SDKs over httpx and httpx2, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import call_ends
from upstream import Reply, Upstream
from vendors import SDKS, VENDOR_ROUTES, Sdk

import vcr_transport


class ClosingProbe:
    """An inner transport that says when each response stream it handed out was closed: by ``close``, or by
    its iteration ending or being dropped (as httpcore's own stream closes itself then)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.closed: list[bool] = []

    def _probed(self, response: Any) -> Any:
        closed, index = self.closed, len(self.closed)
        closed.append(False)
        inner = response.stream
        library = __import__(type(response).__module__.split(".")[0])

        def mark() -> None:
            closed[index] = True

        class Probed(library.SyncByteStream, library.AsyncByteStream):  # type: ignore[misc,name-defined]
            def __iter__(self) -> Iterator[bytes]:
                try:
                    yield from inner
                finally:
                    mark()

            async def __aiter__(self) -> Any:
                try:
                    async for chunk in inner:
                        yield chunk
                finally:
                    mark()

            def close(self) -> None:
                mark()
                inner.close()

            async def aclose(self) -> None:
                mark()
                await inner.aclose()

        return library.Response(
            response.status_code, headers=response.headers, stream=Probed(), extensions=response.extensions
        )

    async def closed_soon(self, index: int, sleep: Callable[[float], Awaitable[None]]) -> bool:
        """Whether stream ``index`` was closed once its close had its turns on the event loop: it runs as soon
        as the loop gets to it, which a loaded machine may delay, so it is waited for (at most 5 s), not slept
        on for a fixed time."""
        for _ in range(500):
            if self.closed[index]:
                return True
            await sleep(0.01)
        return self.closed[index]

    def handle_request(self, request: Any) -> Any:
        return self._probed(self.inner.handle_request(request))

    async def handle_async_request(self, request: Any) -> Any:
        return self._probed(await self.inner.handle_async_request(request))

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __enter__(self) -> ClosingProbe:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> ClosingProbe:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _drop_a_stream(sdk: Sdk, url: str, wrap: Any) -> tuple[str, list[bool], str]:
    """Stop a stream after its first delta, then call again, through ``wrap(probe)``: the first text, whether
    the dropped stream was closed by then, the second answer."""
    library = sdk.library
    if sdk.is_async:
        probe = ClosingProbe(library.AsyncHTTPTransport())

        async def run() -> tuple[str, list[bool], str]:
            async with library.AsyncClient(transport=wrap(probe)) as http_client:
                client = sdk._client(None, http_client, url, {})
                first = await sdk._first_async(client, ["hi"])
                await asyncio.sleep(0)  # a dropped async generator's aclose runs on the loop
                closed = list(probe.closed)
                return first, closed, await sdk._chat_async(client, ["again"])

        return asyncio.run(run())
    probe = ClosingProbe(library.HTTPTransport())
    with library.Client(transport=wrap(probe)) as http_client:
        client = sdk._client(http_client, None, url, {})
        first = sdk._first_sync(client, ["hi"])
        closed = list(probe.closed)
        return first, closed, sdk._chat_sync(client, ["again"])


@pytest.mark.usefixtures("no_gc")
@pytest.mark.parametrize("sdk", [s for s in SDKS if s.name in ("genai", "openai")], ids=lambda s: s.id)
def test_a_dropped_stream_is_closed_as_the_live_one_is(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    prefix, reply = VENDOR_ROUTES[sdk.name]
    upstream.routes[prefix] = lambda received: reply(received, pause=0.002)
    live = _drop_a_stream(sdk, upstream.url, lambda probe: probe)
    recorder: Any = vcr_transport.AsyncRecordingTransport if sdk.is_async else vcr_transport.RecordingTransport
    recorded = _drop_a_stream(sdk, upstream.url, lambda probe: recorder(probe, cassette))
    assert recorded == live
    assert recorded[:1] + recorded[2:] == ("echo:hi", "echo:again")
    if not (sdk.name == "genai" and sdk.is_async):  # google-genai's async stream stays open after an early stop
        assert recorded[1] == [True], "the dropped stream was left open for the garbage collector"
    assert [end["outcome"] for end in call_ends(cassette)] == ["closed_early", "complete"]


# --- attacks: asyncio and trio, a response never closed, a drop inside another's iteration, after the last byte ---


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
            closed = await probe.closed_soon(0, asyncio.sleep)
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
            closed = await probe.closed_soon(0, trio.sleep)
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
                        closed = await probe.closed_soon(1, asyncio.sleep) if transport is rec else True
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
@pytest.mark.slow  # 10 s each
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
                closed = await probe.closed_soon(0, trio.sleep if runner == "trio" else asyncio.sleep)
                answer = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "again"}]
                )
                return first, closed, str(answer.choices[0].message.content)

        return trio.run(run) if runner == "trio" else asyncio.run(run())

    live = attempt(False)
    recorded = attempt(True)
    assert recorded == live
    assert [end["outcome"] for end in call_ends(cassette)] == ["closed_early", "complete"]
