"""WebSocket sessions recorded: the real ``websockets`` connection (sync or asyncio), each message sent and
received, and the close, appended to the cassette as it happens (``RecordingConnection``,
``AsyncRecordingConnection``); and what a message is as recorded (``as_sent``, ``joined``, ``decoded``).

A message is recorded when the client sends it or receives it; before each send, the messages that have
already arrived are received and recorded first (and kept for the client), so that the recording shows them
before the send and replay delivers them without waiting for it. Pings and pongs are not recorded.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidStatus
from websockets.http11 import Request
from websockets.protocol import State

from ._exceptions import VcrTransportError

if TYPE_CHECKING:
    from ._recording import RecordingSession
    from ._session import CassetteSession

__all__ = [
    "AsyncRecordingConnection",
    "RecordingConnection",
    "SessionRecorder",
    "as_sent",
    "decoded",
    "handshake",
    "joined",
    "start_recording",
]


def handshake(connecter: Any, asynchronous: bool) -> Request:
    """The opening handshake ``connecter`` (a ``websockets`` connect object, or a ``ConnectCall``) would
    send, built with no I/O by websockets' own sans-I/O protocol, as its connection builds it."""
    from websockets.client import ClientProtocol
    from websockets.uri import parse_uri

    request: Request
    if asynchronous:
        ws_uri = getattr(connecter, "ws_uri", None) or parse_uri(connecter.uri)
        factory = getattr(connecter, "factory", None) or connecter.protocol_factory  # 17, or 13 to 16
        request = factory(ws_uri).protocol.connect()
    else:
        request = ClientProtocol(connecter.ws_uri, **connecter.protocol_kwargs).connect()
    if connecter.additional_headers is not None:
        request.headers.update(connecter.additional_headers)
    if connecter.user_agent_header is not None:
        request.headers.setdefault("User-Agent", connecter.user_agent_header)
    return request


def start_recording(session: CassetteSession, connecter: Any, asynchronous: bool) -> SessionRecorder:
    recorder = session.recorder
    assert recorder is not None, "a recording step has its recorder"
    request = handshake(connecter, asynchronous)
    return SessionRecorder(recorder.start_session(connecter.uri, list(request.headers.raw_items())))


class SessionRecorder:
    """What both recording connections share: the session's recording, and how a connection's close is told."""

    def __init__(self, recording: RecordingSession) -> None:
        self.recording = recording

    def refused(self, error: Exception) -> None:
        response = getattr(error, "response", None)
        if isinstance(error, InvalidStatus) and response is not None:
            self.recording.accepted(response.status_code, list(response.headers.raw_items()), bytes(response.body))
        self.recording.end("error", error=error)

    def accepted(self, connection: Any) -> None:
        response = connection.response
        self.recording.accepted(response.status_code, list(response.headers.raw_items()))

    def message(self, side: str, data: Any) -> None:
        if isinstance(data, bytearray | memoryview):
            data = bytes(data)
        self.recording.message(side, data)

    def closed(self, connection: Any) -> None:
        """The connection closed: how (who closed first, the code and reason), or that it broke."""
        protocol = connection.protocol
        rcvd, sent = protocol.close_rcvd, protocol.close_sent
        if rcvd is None and sent is None:
            self.recording.end("complete" if connection.state is State.CLOSED else "error", (None, "", None))
            return
        by = "server" if rcvd is not None and (sent is None or protocol.close_rcvd_then_sent) else "client"
        frame = rcvd if by == "server" else sent
        assert frame is not None
        self.recording.end("complete", (int(frame.code), frame.reason, by))


class _ServerCount:
    """The server messages a recording connection received, of which the first ``hidden`` are recorded but
    not given to the client: record-on-miss's resend, where the client already had the recorded messages
    they stand for."""

    __slots__ = ("hidden", "received")

    def __init__(self, hidden: int) -> None:
        self.hidden = hidden
        self.received = 0

    def given(self) -> bool:
        """Count one more; whether the client is given it."""
        self.received += 1
        return self.received > self.hidden


class _Recorded:
    """What the sync and asyncio recording connections share: the real connection (every other attribute is
    its), the recorder, and the server messages that arrived before the client asked for them."""

    def __init__(self, connection: Any, recorder: SessionRecorder, hidden: int) -> None:
        self._connection = connection
        self._recorder = recorder
        self._early: collections.deque[str | bytes] = collections.deque()
        self._count = _ServerCount(hidden)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    def _take(self, message: str | bytes) -> None:
        """A server message that arrived before the client asked for it: recorded, kept for its recv."""
        self._recorder.message("server", message)
        if self._count.given():
            self._early.append(message)


class RecordingConnection(_Recorded):
    """A real ``websockets.sync`` connection, each message and the close recorded as they happen.

    Before each send, the messages that have already arrived are received (and kept for the client's next
    ``recv``), so that the recording shows them before the send: replay delivers them without waiting for
    it. Not while another thread is receiving: that one gets each message as it arrives."""

    def __init__(self, connection: Any, recorder: SessionRecorder, hidden: int = 0) -> None:
        super().__init__(connection, recorder, hidden)
        self._receiving = threading.Lock()

    def _drain(self) -> None:
        if not self._receiving.acquire(blocking=False):
            return
        try:
            while True:
                self._take(self._connection.recv(0))
        except (TimeoutError, ConnectionClosed):
            return  # nothing more has arrived; a close is met again by the next recv or send
        finally:
            self._receiving.release()

    def catch_up(self, count: int, timeout: float) -> None:
        """Receive (and record) until ``count`` server messages have come in all, or ``timeout`` seconds have
        passed, or the connection closed: record-on-miss's resend waits so for the server, as recorded."""
        deadline = time.monotonic() + timeout
        with self._receiving:
            while self._count.received < count and (left := deadline - time.monotonic()) > 0:
                try:
                    self._take(self._connection.recv(left))
                except (TimeoutError, ConnectionClosed):
                    return

    def send(self, message: Any, text: bool | None = None) -> None:
        self._drain()
        try:
            self._connection.send(message, text=text)
        except ConnectionClosed:
            self._recorder.closed(self._connection)
            raise
        self._recorder.message("client", as_sent(message, text))

    def recv(self, timeout: float | None = None, decode: bool | None = None) -> Any:
        with self._receiving:
            while not self._early:
                try:
                    self._take(self._connection.recv(timeout))
                except ConnectionClosed:
                    self._recorder.closed(self._connection)
                    raise
            return decoded(self._early.popleft(), decode)

    def __iter__(self) -> Iterator[Any]:
        try:
            while True:
                yield self.recv()
        except ConnectionClosedOK:
            return

    def recv_streaming(self, decode: bool | None = None) -> Iterator[Any]:
        """The next message fragment by fragment, as it arrives; recorded whole once its last fragment came."""
        with self._receiving:
            if self._early:
                yield decoded(self._early.popleft(), decode)
                return
            parts: list[str | bytes] = []
            try:
                for part in self._connection.recv_streaming():
                    parts.append(part)
                    yield decoded(part, decode)
            except ConnectionClosed:
                self._recorder.closed(self._connection)
                raise
            self._recorder.message("server", joined(parts))
            self._count.given()

    def close(self, code: int = 1000, reason: str = "") -> None:
        try:
            self._connection.close(code, reason)
        finally:
            self._recorder.closed(self._connection)

    def __enter__(self) -> RecordingConnection:
        self._connection.__enter__()  # as the real one is entered (websockets 17 warns of a connection it isn't)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncRecordingConnection(_Recorded):
    """A real ``websockets.asyncio`` connection, each message and the close recorded as they happen; the
    messages that arrived before a send are received first, as ``RecordingConnection`` does."""

    def __init__(self, connection: Any, recorder: SessionRecorder, hidden: int = 0) -> None:
        super().__init__(connection, recorder, hidden)
        self._receiving = False

    async def catch_up(self, count: int, timeout: float) -> None:
        """As ``RecordingConnection.catch_up``."""
        self._receiving = True
        try:
            async with asyncio.timeout(timeout):
                while self._count.received < count:
                    self._take(await self._connection.recv())  # websockets: cancelling recv loses nothing
        except (TimeoutError, ConnectionClosed):
            return
        finally:
            self._receiving = False

    async def _drain(self) -> None:
        if self._receiving:
            return
        self._receiving = True
        try:
            while True:
                waiting = asyncio.ensure_future(self._connection.recv())
                await asyncio.sleep(0)  # one step: a message already there is taken in it
                if not waiting.done():
                    waiting.cancel()  # websockets: cancelling recv loses nothing
                    with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                        await waiting
                    return
                if waiting.exception() is not None:
                    return  # closed: met again by the next recv or send
                self._take(waiting.result())
        finally:
            self._receiving = False

    async def send(self, message: Any, text: bool | None = None) -> None:
        await self._drain()
        try:
            await self._connection.send(message, text=text)
        except ConnectionClosed:
            self._recorder.closed(self._connection)
            raise
        self._recorder.message("client", as_sent(message, text))

    async def recv(self, decode: bool | None = None) -> Any:
        self._receiving = True
        try:
            while not self._early:
                self._take(await self._connection.recv())
        except ConnectionClosed:
            self._recorder.closed(self._connection)
            raise
        finally:
            self._receiving = False
        return decoded(self._early.popleft(), decode)

    async def __aiter__(self) -> AsyncIterator[Any]:
        try:
            while True:
                yield await self.recv()
        except ConnectionClosedOK:
            return

    async def recv_streaming(self, decode: bool | None = None) -> AsyncIterator[Any]:
        """As ``RecordingConnection.recv_streaming``."""
        if self._early:
            yield decoded(self._early.popleft(), decode)
            return
        parts: list[str | bytes] = []
        self._receiving = True
        try:
            async for part in self._connection.recv_streaming():
                parts.append(part)
                yield decoded(part, decode)
        except ConnectionClosed:
            self._recorder.closed(self._connection)
            raise
        finally:
            self._receiving = False
        self._recorder.message("server", joined(parts))
        self._count.given()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        try:
            await self._connection.close(code, reason)
        finally:
            self._recorder.closed(self._connection)

    async def __aenter__(self) -> AsyncRecordingConnection:
        await self._connection.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def as_sent(message: Any, text: bool | None) -> str | bytes:
    """What went on the wire: a str (or bytes sent with ``text=True``) as text, bytes (or a str sent with
    ``text=False``) as binary. Fragments (an iterable of them) are recorded as the one message they make."""
    if not isinstance(message, str | bytes | bytearray | memoryview):
        if not isinstance(message, Iterator | list | tuple):
            raise VcrTransportError(f"a WebSocket message sent in {type(message).__name__} form is not recorded")
        message = joined(list(message))
    if isinstance(message, str):
        return message.encode() if text is False else message
    data = bytes(message)
    return data.decode() if text else data


def joined(parts: list[str | bytes]) -> str | bytes:
    """A message read fragment by fragment, whole: text fragments are str, binary ones bytes."""
    return "".join(parts) if parts and isinstance(parts[0], str) else b"".join(parts)  # type: ignore[arg-type]


def decoded(message: str | bytes, decode: bool | None) -> str | bytes:
    """A received message as ``recv(decode=...)`` gives it: text as str unless ``decode=False``, binary as
    bytes unless ``decode=True``."""
    if decode is False and isinstance(message, str):
        return message.encode()
    if decode is True and isinstance(message, bytes):
        return message.decode()
    return message
