"""``serve``'s WebSocket sessions: a recorded session answered over a client's own connection, framed by
websockets' sans-I/O server protocol, checked and delivered by the session's playback as in-process replay
does (``_websocket_replay.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from websockets.frames import Opcode
from websockets.http11 import Request
from websockets.protocol import State
from websockets.server import ServerProtocol

from ._core.engine._websocket import SessionPlayback
from ._exceptions import ReplayMismatch

__all__ = ["serve_session"]


async def serve_session(
    playback: SessionPlayback,
    handshake: bytes,
    early: bytes,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    pace: float | None,
    idle: float,
) -> str:
    """``serve``: answer a WebSocket client from a recorded session over its connection. ``handshake`` is the
    client's opening request as it came, ``early`` the bytes the client sent after it that were read with it
    (frames sent in the same packet as the handshake); websockets' sans-I/O server protocol answers the
    handshake (101, no compression, the recorded subprotocol) and then frames the messages, ``early`` first,
    which ``playback`` checks and delivers as in-process replay does. A client message that differs is
    answered with close code 1008 and the mismatch's first line as the reason. A client that sends nothing for
    ``idle`` seconds while the recording waits for it is closed so too, the reason saying what the recording
    has next (once closing, a client silent that long loses the connection). A handshake websockets refuses
    (a header line over its limits) gets websockets' answer. What became of the session, for the access log."""
    recorded = dict((name.lower(), value) for name, value in playback.call.response_headers)
    chosen = recorded.get("sec-websocket-protocol")
    protocol = ServerProtocol(subprotocols=[chosen] if chosen else None)  # type: ignore[list-item]
    # The handshake alone: a frame parsed with it would be read before the connection is open (a close
    # unanswered, a message lost); ``early`` is given to the protocol once the 101 is sent.
    protocol.receive_data(handshake)
    request = next((e for e in protocol.events_received() if isinstance(e, Request)), None)
    response = protocol.accept(request) if request is not None else None
    if response is not None:
        protocol.send_response(response)
    served = _Served(playback, protocol, reader, writer, pace, idle)
    await served.flush()
    if response is None:
        return f"handshake refused ({protocol.handshake_exc})"
    if response.status_code != 101:
        return f"handshake refused ({response.status_code})"
    return await served.run(early)


class _Served:
    """A recorded session played to a client over its connection once the 101 is sent (``serve_session``):
    ``read`` takes the client's frames, ``write`` sends the server's messages as the playback delivers them;
    ``outcome`` is what became of the session so far."""

    def __init__(
        self,
        playback: SessionPlayback,
        protocol: ServerProtocol,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pace: float | None,
        idle: float,
    ) -> None:
        self.playback = playback
        self.protocol = protocol
        self.reader = reader
        self.writer = writer
        self.pace = pace
        self.idle = idle
        self.changed = asyncio.Event()
        self.outcome = "closed by the client"
        self.fragments: list[bytes] = []
        self.text = False

    async def run(self, early: bytes) -> str:
        sending = asyncio.ensure_future(self.write())
        try:
            await self.read(early)
        finally:
            sending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sending
        left = self.playback.unplayed()
        return self.outcome + (f"; {left}" if left else "")

    async def flush(self) -> None:
        writer = self.writer
        for data in self.protocol.data_to_send():
            if data:
                writer.write(data)
            elif writer.can_write_eof():
                writer.write_eof()
        await writer.drain()

    def take(self, frame: Any) -> None:
        """A frame from the client: a message, once its last fragment came, checked by the playback."""
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            self.fragments.clear()
            self.text = frame.opcode is Opcode.TEXT
        elif frame.opcode is not Opcode.CONT:
            return
        self.fragments.append(bytes(frame.data))
        if frame.fin:
            data = b"".join(self.fragments)
            try:
                self.playback.sent(data.decode() if self.text else data)
            except ReplayMismatch as miss:
                headline = str(miss).splitlines()[0]
                self.outcome = headline
                self.protocol.send_close(1008, headline.encode()[:120].decode("utf-8", "ignore"))
            self.changed.set()

    def silent(self) -> bool:
        """The client sent nothing for ``idle`` seconds: whether to read on (yes while the server's messages
        are being paced: the client listens). The session is closed if the recording waits for the client."""
        if self.protocol.state is not State.OPEN:
            return False
        playback = self.playback
        if playback.next_server() is None:
            awaited = playback.awaited()
            self.outcome = (
                f"closed after {self.idle:g} s with nothing from the client; the recording has {awaited} next"
            )
            self.protocol.send_close(1008, self.outcome[:120])
        return True

    async def read(self, early: bytes) -> None:
        data, protocol = early, self.protocol
        while protocol.state is not State.CLOSED:
            try:
                data = data or await asyncio.wait_for(self.reader.read(65536), self.idle)
            except TimeoutError:
                if not self.silent():
                    return
                await self.flush()
                continue
            if not data:
                protocol.receive_eof()
            else:
                protocol.receive_data(data)
            for frame in protocol.events_received():
                self.take(frame)
            await self.flush()
            if not data:
                return
            data = b""

    async def write(self) -> None:
        playback, protocol = self.playback, self.protocol
        while protocol.state is State.OPEN:
            self.changed.clear()
            position = playback.next_server()
            if position is None:
                await self.changed.wait()
                continue
            if position == SessionPlayback.CLOSED:
                await self.close_as_recorded()
                return
            delay = playback.delay(position, self.pace)
            if delay:
                await asyncio.sleep(delay)
            message = playback.delivered(position)
            if isinstance(message, str):
                protocol.send_text(message.encode())
            else:
                protocol.send_binary(message)
            await self.flush()

    async def close_as_recorded(self) -> None:
        close = self.playback.call.close
        code, reason = (close[0], close[1]) if close is not None and close[0] is not None else (1011, "")
        self.outcome = f"closed by the server ({code}), as recorded"
        self.protocol.send_close(code, reason)
        await self.flush()
