"""What a transport seam looks like (Protocols for requests and sync/async transports), the base our
transports show a type checker (``TransportBase``), and the close / aclose / enter / exit lifecycle shared by
our transports that serve a sync and an async client."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    import httpx
    import httpx2

__all__ = [
    "AsyncTransport",
    "ByteStream",
    "ClosingSides",
    "HttpRequest",
    "SyncTransport",
    "TransportBase",
    "TransportLifecycle",
    "propagating",
]


class HttpRequest(Protocol):
    """An httpx or httpx2 request, as far as the transports use one."""

    method: str
    url: Any
    headers: Any
    extensions: dict[str, Any]

    @property
    def content(self) -> bytes: ...

    def read(self) -> bytes: ...

    async def aread(self) -> bytes: ...


@runtime_checkable
class SyncTransport(Protocol):
    """An httpx or httpx2 sync transport (or a duck-typed one)."""

    def handle_request(self, request: Any) -> Any: ...


@runtime_checkable
class AsyncTransport(Protocol):
    """An httpx or httpx2 async transport (or a duck-typed one)."""

    async def handle_async_request(self, request: Any) -> Any: ...


class ByteStream(Protocol):
    """A response stream: iterable sync or async, closable."""

    def __iter__(self) -> Iterator[bytes]: ...

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    def close(self) -> None: ...

    async def aclose(self) -> None: ...


if TYPE_CHECKING:

    class TransportBase(httpx2.BaseTransport, httpx2.AsyncBaseTransport, httpx.BaseTransport, httpx.AsyncBaseTransport):
        """To a type checker, our transports are transports of both libraries, sync and async, so that
        ``httpx2.Client(transport=...)``, ``httpx.AsyncClient(transport=...)`` and the rest accept them.
        Clients type their ``transport`` parameter with their library's base classes, and one object of ours
        serves both libraries and both sides, which no class can inherit at runtime. The two libraries type
        ``handle_request`` with their own requests and responses: here they take and give any."""

        def handle_request(self, request: Any) -> Any: ...

        async def handle_async_request(self, request: Any) -> Any: ...

else:
    # At runtime, a plain object: the transports duck-type the contract (clients check the response's stream,
    # which ``_http.stream_class`` gives in the request's own library) and import no library they don't use.
    TransportBase = object


class ClosingSides:
    """Says when a transport finishes: once every side (sync, async) that carried a request has been closed.

    One transport object can serve a sync and an async client (google-genai wants both); the first
    client to close must not end the cassette under the other. ``failure`` is the first exception that
    was propagating when a used side closed (None when every side closed cleanly). It holds nothing of its
    owner (a bound method of it would be a reference cycle: every recorded request's transport).
    """

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._closed: set[str] = set()
        self.failure: BaseException | None = None
        self.finished = False

    def use(self, side: str) -> None:
        self._used.add(side)

    def close(self, side: str, failure: BaseException | None = None) -> bool:
        """``side`` closed; whether the owner finishes now (the first time every side used is closed)."""
        self._closed.add(side)
        if failure is not None and self.failure is None and side in self._used:
            self.failure = failure
        if self.finished or not self._used <= self._closed:
            return False
        self.finished = True
        return True


def propagating() -> BaseException | None:
    """The exception being propagated or handled where this is called from (a ``with`` block's exit, a
    ``finally`` or ``except`` clause), if any."""
    return sys.exc_info()[1]


class TransportLifecycle(TransportBase):
    """close / aclose / ``with`` / ``async with`` for a transport that wraps an optional sync and an
    optional async inner transport and finishes once every side it used is closed.

    A subclass provides ``_sides`` (a ClosingSides), ``_inner_to_close(side)`` (the inner transport of that
    side that exists now, creating none) and ``_finish(failure)``. Closing while an exception propagates (an
    SDK client's ``with`` block, a ``finally``), or an httpx client's ``__exit__`` passing its exception, hands
    that exception to ``_finish``, which decides what it means.
    """

    _sides: ClosingSides

    def _inner_to_close(self, side: str) -> Any:
        raise NotImplementedError

    def _finish(self, failure: BaseException | None) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Close the sync side; finish once every side that was used is closed."""
        self._close_sync(propagating())

    async def aclose(self) -> None:
        """Close the async side; finish once every side that was used is closed."""
        await self._close_async(propagating())

    def _close_sync(self, failure: BaseException | None) -> None:
        try:
            inner = self._inner_to_close("sync")
            if inner is not None:
                inner.close()
        finally:
            if self._sides.close("sync", failure):
                self._finish(self._sides.failure)

    async def _close_async(self, failure: BaseException | None) -> None:
        try:
            inner = self._inner_to_close("async")
            if inner is not None:
                await inner.aclose()
        finally:
            if self._sides.close("async", failure):
                self._finish(self._sides.failure)

    def __enter__(self) -> Self:
        enter = getattr(self._inner_to_close("sync"), "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        self._close_sync(exc_value)

    async def __aenter__(self) -> Self:
        enter = getattr(self._inner_to_close("async"), "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self._close_async(exc_value)
