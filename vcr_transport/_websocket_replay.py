"""WebSocket sessions replayed: a recorded session answering as a ``websockets`` connection would (sync
``ReplayConnection``, asyncio ``AsyncReplayConnection``), with no socket. Each message the client sends is
checked, and the recorded server messages delivered, by the session's playback
(``_core/engine/_websocket.SessionPlayback``): a server message once every client message recorded before it
was sent. A ping is answered at once. The connections offer what the real ones do for sending, receiving,
iterating and closing, and the attributes the SDKs read (``request``, ``response``, ``close_code``,
``close_reason``, ``state``, ``subprotocol``).

In record-on-miss, a client message that differs takes the session live from there: its own small object,
``_GoingLive``, made by that transition, opens the real connection and sends again what the client sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from websockets.exceptions import ConnectionClosed, ConnectionClosedError, ConnectionClosedOK
from websockets.frames import OK_CLOSE_CODES, Close
from websockets.http11 import Request, Response
from websockets.protocol import State

from ._core.engine._websocket import SessionPlayback
from ._exceptions import ReplayMismatch
from ._websocket_recording import (
    AsyncRecordingConnection,
    RecordingConnection,
    SessionRecorder,
    as_sent,
    decoded,
    start_recording,
)

if TYPE_CHECKING:
    from ._session import CassetteSession

__all__ = ["AsyncReplayConnection", "ReplayConnection"]


# How long record-on-miss's resend waits for each server message the recording has before a client message.
RESEND_WAIT = 10.0
# _next's answer once record-on-miss takes the session live: what the client receives comes from there
_LIVE: tuple[str | bytes | None, float] = (None, -1.0)


_Event = TypeVar("_Event", bound=threading.Event | asyncio.Event)  # the shell's kind of event


class _GoingLive(Generic[_Event]):
    """record-on-miss taking one replayed connection live: made by the transition at which a client message
    first differs and the recording takes over (``_Replay._send``), it stands for the replayed session from
    then on. ``messages``: what the client sent, to send again live (the messages kept, then the one that
    differs); ``recorder``: the live session's recording, once started; ``opened``: the live connection, once
    open. Once going live has finished (``ready`` is set), ``live`` is the live connection, or ``failure``
    what made opening it fail."""

    __slots__ = ("failure", "live", "messages", "opened", "ready", "recorder")

    def __init__(self, messages: list[str | bytes], ready: _Event) -> None:
        self.messages = messages
        self.ready = ready
        self.recorder: SessionRecorder | None = None
        self.opened: Any = None
        self.live: Any = None
        self.failure: BaseException | None = None

    def connection(self) -> Any:
        """The live connection, once going live has finished (raising what made it fail)."""
        if self.failure is not None:
            raise self.failure
        return self.live


class _Replay(Generic[_Event]):
    """What both replayed connections share: the playback, the handshake's request and response, the close.

    In record-on-miss, the client messages sent are kept (as sent: the live server needs them whole) until
    one differs from the recording. Then the session goes live: the real connection is opened through
    ``original``, and the kept messages, then the differing one, are sent to it, each once as many server
    messages as the recording has before it have come (``SessionPlayback.resend_plan``; at most
    ``RESEND_WAIT`` seconds each). The live session is recorded from its handshake on, after the calls
    replayed (``ReplayEngine.end_at_session_miss``); its first server messages stand for those the client was
    given from the recording and are recorded only; from then on the connection is the live one."""

    def __init__(
        self,
        playback: SessionPlayback,
        request: Request,
        session: CassetteSession,
        connecter: Any,
        original: Callable[[Any], Any],
    ) -> None:
        from websockets.datastructures import Headers

        call = playback.call
        self._playback = playback
        self._session = session
        self._connecter = connecter
        self._original = original
        # record-on-miss: the client's messages (as sent), kept until one differs and the session goes live
        self._kept: list[str | bytes] | None = [] if session.decision.records_on_miss else None
        self._going: _GoingLive[_Event] | None = None  # going live, or gone
        self._entered = False  # the client entered this connection with ``with``
        assert session.replayer is not None
        self._pace = session.replayer.options.pace
        self.request = request
        self.response = Response(101, "Switching Protocols", Headers(call.response_headers))
        self.subprotocol = self.response.headers.get("Sec-WebSocket-Protocol")
        self.id = call.index
        self.local_address: Any = ("127.0.0.1", 0)
        self.remote_address: Any = ("127.0.0.1", 0)
        self.latency = 0.0
        self._state = State.OPEN
        self._rcvd: Close | None = None
        self._sent: Close | None = None
        self._rcvd_then_sent: bool | None = None
        self._lock = threading.Lock()
        self._shell()

    def _shell(self) -> None:
        """What the shell's waiting needs, set up last."""
        raise NotImplementedError

    def _event(self) -> _Event:
        """A new event of the shell's kind."""
        raise NotImplementedError

    @property
    def _live(self) -> Any:
        """The live recording connection, once going live has finished."""
        return self._going.live if self._going is not None else None

    @contextlib.contextmanager
    def _going_live(self) -> Iterator[_GoingLive[_Event]]:
        """Around going live: the block sets the live session's recorder, then the live connection once
        open. When the block ends the session is live, even when sending the messages again failed (that
        send raises it; later calls meet the live connection as it is, and closing this one closes it), or,
        when the live connection never opened, closed with what made it fail (every later call raises it).
        Either way, whoever waits for it is woken."""
        going = self._going
        assert going is not None, "going live is made by the transition"
        failure: BaseException | None = None
        try:
            yield going
        except BaseException as error:
            if going.opened is None:  # the handshake failed, or the recording could not start
                if going.recorder is not None and isinstance(error, Exception):
                    going.recorder.refused(error)
                failure = error
            raise
        finally:
            self._went_live(going, failure)
            going.ready.set()

    @property
    def state(self) -> State:
        return self._live.state if self._live is not None else self._state

    @property
    def close_code(self) -> int | None:
        if self._live is not None:
            return self._live.close_code  # type: ignore[no-any-return]
        if self._state is not State.CLOSED:
            return None
        frame = self._rcvd or self._sent
        return 1006 if frame is None else int(frame.code)

    @property
    def close_reason(self) -> str | None:
        if self._live is not None:
            return self._live.close_reason  # type: ignore[no-any-return]
        if self._state is not State.CLOSED:
            return None
        frame = self._rcvd or self._sent
        return "" if frame is None else frame.reason

    def _closed_error(self) -> ConnectionClosed:
        rcvd, sent = self._rcvd, self._sent
        ok = rcvd is not None and sent is not None and rcvd.code in OK_CLOSE_CODES and sent.code in OK_CLOSE_CODES
        kind = ConnectionClosedOK if ok else ConnectionClosedError
        return kind(rcvd, sent, self._rcvd_then_sent)

    def _send(self, message: Any, text: bool | None) -> str:
        """Check a message the client sends: "replayed"; "switch" when it differs and record-on-miss takes
        the session live from it (the caller does: ``_resend``); "live" when the session is live already or
        going live (the caller sends it there). Raises the ReplayMismatch otherwise."""
        with self._lock:
            if self._going is not None:
                return "live"
            if self._state is not State.OPEN:
                raise self._closed_error()
            data = as_sent(message, text)
            try:
                self._playback.sent(data)
            except ReplayMismatch as miss:
                return self._missed(miss, data)
            if self._kept is not None:
                self._kept.append(data)
            return "replayed"

    def _missed(self, miss: ReplayMismatch, data: str | bytes) -> str:
        """A client message that differs (under the lock): "switch", the transition to going live, when
        record-on-miss takes the session live from it; else the mismatch, raised (and kept as the run's)."""
        if self._kept is not None and self._takes_over(miss):
            self._going = _GoingLive([*self._kept, data], self._event())
            self._kept = None
            return "switch"
        engine = self._session.replayer.engine if self._session.replayer else None
        if engine is not None and engine.first_mismatch is None:
            engine.first_mismatch = miss
        raise miss

    def _takes_over(self, miss: ReplayMismatch) -> bool:
        replayer = self._session.replayer
        return (
            replayer is not None
            and replayer.engine.end_at_session_miss(self._playback.call.index)
            and self._session.recording_takes_over(miss)
        )

    def _resend_plan(self, going: _GoingLive[_Event]) -> tuple[list[tuple[str | bytes, int]], int, SessionRecorder]:
        """What going live sends (each message with the server messages to wait for first), how many server
        messages it records only, and the live session's recorder (its handshake recorded)."""
        counts, given = self._playback.resend_plan()
        recorder = start_recording(self._session, self._connecter, asynchronous=isinstance(self, AsyncReplayConnection))
        return list(zip(going.messages, counts, strict=True)), given, recorder

    def _went_live(self, going: _GoingLive[_Event], failure: BaseException | None) -> None:
        with self._lock:
            going.live, going.failure = going.opened, failure
            if failure is not None:
                self._state = State.CLOSED

    def _going_now(self) -> _GoingLive[_Event]:
        going = self._going
        assert going is not None, "the session went live"
        return going

    def _next(self) -> tuple[str | bytes | None, float] | None:
        """The next server message and the paced wait before it; None: nothing may be delivered now. Raises
        ConnectionClosed once the session is closed (as recorded, or by the client)."""
        with self._lock:
            if self._going is not None:
                return _LIVE
            if self._state is not State.OPEN:
                raise self._closed_error()
            position = self._playback.next_server()
            if position is None:
                return None
            if position == SessionPlayback.CLOSED:
                self._server_closed()
                raise self._closed_error()
            delay = self._playback.delay(position, self._pace)
            return self._playback.delivered(position), delay

    def _server_closed(self) -> None:
        close = self._playback.call.close
        if close is not None and close[0] is not None:
            frame = Close(close[0], close[1])
            self._rcvd, self._sent, self._rcvd_then_sent = frame, frame, True
        self._state = State.CLOSED

    def _client_closed(self, code: int, reason: str) -> bool:
        """The client closes: False when the session is live (or going live), whose close it is."""
        with self._lock:
            if self._going is not None:
                return False
            if self._state is not State.CLOSED:
                frame = Close(code, reason)
                self._sent, self._rcvd, self._rcvd_then_sent = frame, frame, False
                self._state = State.CLOSED
            return True


class ReplayConnection(_Replay[threading.Event]):
    """A recorded session answering as a ``websockets.sync`` connection would; no socket (until
    record-on-miss takes it live)."""

    def _shell(self) -> None:
        self._changed = threading.Condition()

    def _event(self) -> threading.Event:
        return threading.Event()

    def _live_now(self) -> Any:
        """The live connection, once going live has finished."""
        going = self._going_now()
        going.ready.wait()
        return going.connection()

    def send(self, message: Any, text: bool | None = None) -> None:
        outcome = self._send(message, text)
        if outcome == "switch":
            self._resend()
        elif outcome == "live":
            self._live_now().send(message, text)
        with self._changed:
            self._changed.notify_all()

    def _resend(self) -> None:
        with self._going_live() as going:
            messages, given, going.recorder = self._resend_plan(going)
            connection = self._original(self._connecter)
            live = going.opened = RecordingConnection(connection, going.recorder, hidden=given)
            going.recorder.accepted(connection)
            if self._entered:
                connection.__enter__()  # as the client entered this one (websockets 17 warns of one it isn't)
            for data, before in messages:
                live.catch_up(before, RESEND_WAIT)
                live.send(data)

    def recv(self, timeout: float | None = None, decode: bool | None = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        found = self._wait_next(deadline)
        if found is _LIVE:
            live = self._live_now()
            return live.recv(None if deadline is None else max(0.0, deadline - time.monotonic()), decode)
        message, delay = found
        if delay:
            time.sleep(delay)
        assert message is not None
        return decoded(message, decode)

    def _wait_next(self, deadline: float | None) -> tuple[str | bytes | None, float]:
        """The next server message and the paced wait before it (``_next``), once one may be delivered; past
        ``deadline`` (``time.monotonic()``), TimeoutError."""
        with self._changed:
            while (found := self._next()) is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("timed out while receiving data")
                self._changed.wait(left)
        return found

    def __iter__(self) -> Iterator[Any]:
        try:
            while True:
                yield self.recv()
        except ConnectionClosedOK:
            return

    def recv_streaming(self, decode: bool | None = None) -> Iterator[Any]:
        """The next message in one fragment (the recording keeps messages whole)."""
        yield self.recv(decode=decode)

    def ping(self, data: Any = None, ack_on_close: bool = False) -> threading.Event:
        answered = threading.Event()
        answered.set()
        return answered

    def pong(self, data: Any = b"") -> None:
        return None

    def close(self, code: int = 1000, reason: str = "") -> None:
        if not self._client_closed(code, reason):
            self._going_now().ready.wait()
            if self._live is not None:
                self._live.close(code, reason)
        with self._changed:
            self._changed.notify_all()

    def __enter__(self) -> ReplayConnection:
        self._entered = True  # the live connection, if record-on-miss opens one, is entered too
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncReplayConnection(_Replay[asyncio.Event]):
    """A recorded session answering as a ``websockets.asyncio`` connection would; no socket (until
    record-on-miss takes it live)."""

    def _shell(self) -> None:
        self._waiters: list[asyncio.Future[None]] = []

    def _event(self) -> asyncio.Event:
        return asyncio.Event()

    async def _live_now(self) -> Any:
        """The live connection, once going live has finished."""
        going = self._going_now()
        await going.ready.wait()
        return going.connection()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def send(self, message: Any, text: bool | None = None) -> None:
        outcome = self._send(message, text)
        if outcome == "switch":
            await self._resend()
        elif outcome == "live":
            await (await self._live_now()).send(message, text)
        self._wake()

    async def _resend(self) -> None:
        try:
            with self._going_live() as going:
                messages, given, going.recorder = self._resend_plan(going)
                connection = await self._original(self._connecter)
                live = going.opened = AsyncRecordingConnection(connection, going.recorder, hidden=given)
                going.recorder.accepted(connection)
                if getattr(self._connecter, "connection", None) is connection:
                    self._connecter.connection = self  # websockets 13 to 16: what its __aexit__ closes
                if self._entered:
                    await connection.__aenter__()
                for data, before in messages:
                    await live.catch_up(before, RESEND_WAIT)
                    await live.send(data)
        finally:
            self._wake()

    async def recv(self, decode: bool | None = None) -> Any:
        while (found := self._next()) is None:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        if found is _LIVE:
            return await (await self._live_now()).recv(decode)
        message, delay = found
        if delay:
            await asyncio.sleep(delay)
        assert message is not None
        return decoded(message, decode)

    async def __aiter__(self) -> AsyncIterator[Any]:
        try:
            while True:
                yield await self.recv()
        except ConnectionClosedOK:
            return

    async def recv_streaming(self, decode: bool | None = None) -> AsyncIterator[Any]:
        """The next message in one fragment (the recording keeps messages whole)."""
        yield await self.recv(decode)

    async def ping(self, data: Any = None) -> asyncio.Future[float]:
        answered: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        answered.set_result(0.0)
        return answered

    async def pong(self, data: Any = b"") -> None:
        return None

    async def wait_closed(self) -> None:
        while self.state is not State.CLOSED:
            if self._going is not None:
                await self._going.ready.wait()
                if self._live is not None:
                    await self._live.wait_closed()
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if not self._client_closed(code, reason):
            await self._going_now().ready.wait()
            if self._live is not None:
                await self._live.close(code, reason)
        self._wake()

    async def __aenter__(self) -> AsyncReplayConnection:
        self._entered = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
