"""A transport that passes everything through and notes the chunks the client received, call by call."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator
from typing import Any


class _TapStream:
    def __init__(self, inner: Any, seen: list[bytes]) -> None:
        self._inner = inner
        self._seen = seen

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._seen.append(chunk)
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._seen.append(chunk)
            yield chunk

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()


@functools.cache
def _stream_class(library: Any) -> type:
    return type("TapStream", (_TapStream, library.SyncByteStream, library.AsyncByteStream), {})


def _library(request: Any) -> Any:
    import sys

    return sys.modules[type(request).__module__.partition(".")[0]]


class Tap:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[bytes]] = []
        self.statuses: list[int] = []

    def _tapped(self, request: Any, response: Any) -> Any:
        seen: list[bytes] = []
        self.calls.append(seen)
        self.statuses.append(response.status_code)
        response.stream = _stream_class(_library(request))(response.stream, seen)
        return response

    def handle_request(self, request: Any) -> Any:
        return self._tapped(request, self.inner.handle_request(request))

    async def handle_async_request(self, request: Any) -> Any:
        return self._tapped(request, await self.inner.handle_async_request(request))

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __enter__(self) -> Tap:
        self.inner.__enter__()
        return self

    def __exit__(self, *args: Any) -> None:
        self.inner.__exit__(*args)

    async def __aenter__(self) -> Tap:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *args: Any) -> None:
        await self.inner.__aexit__(*args)
