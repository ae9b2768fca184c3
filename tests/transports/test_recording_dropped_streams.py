"""A stream the app drops before its end (an SDK's stream abandoned after the first chunk) is closed at once
through a recording transport, as httpcore closes its own: not left to the garbage collector, which may close
it at any later moment, possibly while the same thread holds the connection pool's lock (closing it then
waits on that lock forever: a hang of the next call). Shown with the garbage collector off, through the real
SDKs over httpx and httpx2, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import call_ends
from upstream import Upstream
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
