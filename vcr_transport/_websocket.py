"""WebSocket sessions through a cassette: the shells around ``websockets``' sync and asyncio clients.

``use_cassette``'s patcher (``_context.py``) sends each connection the ``websockets`` clients open
(``websockets.sync.client.connect``, ``websockets.asyncio.client.connect`` and their subclasses: the ones
openai's ``client.realtime.connect(...)`` and google-genai's ``client.aio.live.connect(...)`` use) to
``open_sync`` or ``open_async`` with the cassette session that owns it. In the session's mode, the
connection is:

- passed through (off, a passthrough host): the real connection, nothing recorded;
- recorded: the real connection, wrapped so that each message sent and received, and the close, is
  appended to the cassette as it happens (``RecordingConnection``, ``AsyncRecordingConnection``);
- replayed: no socket is opened. The handshake is matched as a request is, then a ``ReplayConnection`` or
  ``AsyncReplayConnection`` checks each message the client sends and delivers the recorded server messages
  (what to deliver when is ``_core._websocket.SessionPlayback``'s). In record-on-miss, a handshake that
  misses records the session instead, as a missed request is recorded, and a client message that differs
  takes the session live from there (``_Replay``).

A message is recorded when the client sends it or receives it; before each send, the messages that have
already arrived are received and recorded first (and kept for the client). Replay delivers a server message
once every client message recorded before it was sent. Pings and pongs
are not recorded; replay answers a ping at once. The replayed connections offer what the real ones do for
sending, receiving, iterating and closing, and the attributes the SDKs read (``request``, ``response``,
``close_code``, ``close_reason``, ``state``, ``subprotocol``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import http
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

from websockets.exceptions import ConnectionClosed, ConnectionClosedError, ConnectionClosedOK, InvalidStatus
from websockets.frames import OK_CLOSE_CODES, Close
from websockets.http11 import Request, Response
from websockets.protocol import State

from ._core.engine._modes import Step
from ._core.engine._websocket import MessageMatcher, SessionPlayback, handshake_headers
from ._core.format._format import RecordedCall
from ._exceptions import ReplayMismatch, VcrTransportError

if TYPE_CHECKING:
    from ._recording import RecordingSession
    from ._session import CassetteSession

__all__ = ["ConnectCall", "open_async", "open_sync", "serve_session"]

_clock = time.perf_counter_ns


class ConnectCall:
    """A call of ``websockets.sync.client.connect(uri, **arguments)`` (websockets 13 to 16, which have no
    ``reconnect`` object), with what the handshake is built from, as a ``reconnect`` object has it."""

    def __init__(self, uri: str, arguments: dict[str, Any]) -> None:
        from websockets.uri import parse_uri

        self.uri = uri
        self.ws_uri = parse_uri(uri)
        self.additional_headers = arguments.get("additional_headers")
        self.user_agent_header = arguments.get("user_agent_header", _default_user_agent())
        self.protocol_kwargs = {"origin": arguments.get("origin"), "subprotocols": arguments.get("subprotocols")}


def _default_user_agent() -> str:
    from websockets.http11 import USER_AGENT

    return USER_AGENT


def _handshake(connecter: Any, asynchronous: bool) -> Request:
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


def _step(session: CassetteSession, connecter: Any) -> Step:
    step = session.decision.step_for(connecter.uri)
    if step is Step.REFUSE:
        raise session.refuse()
    return step


def _selected(session: CassetteSession, connecter: Any, request: Request) -> RecordedCall | None:
    """The recorded session that answers this handshake; None when it is to be recorded (record-on-miss)."""
    assert session.replayer is not None
    engine = session.replayer.engine
    headers = handshake_headers(request.headers.raw_items())
    try:
        return engine.select(engine.incoming_fields("GET", connecter.uri, headers, b""))
    except ReplayMismatch as miss:
        if not session.recording_takes_over(miss):
            raise
    return None


def _playback(session: CassetteSession, call: RecordedCall) -> SessionPlayback:
    assert session.replayer is not None
    replayer = session.replayer
    options = replayer.options
    matcher = MessageMatcher(replayer.engine.matcher, options.redactor(), options.normalizer())
    playback = SessionPlayback(call, matcher, cassette=str(session.path), record_hint=replayer.engine.record_hint)
    replayer.engine.sessions[call.index] = playback
    return playback


def _refused_handshake(call: RecordedCall) -> BaseException:
    """The recorded handshake failure, raised again: the server's refusal (InvalidStatus, with its status,
    headers and body) or the error."""
    if call.status is not None:
        from websockets.datastructures import Headers

        try:
            phrase = http.HTTPStatus(call.status).phrase
        except ValueError:  # a status code of the server's own
            phrase = ""
        return InvalidStatus(Response(call.status, phrase, Headers(call.response_headers), b"".join(call.events)))
    return VcrTransportError(f"the recorded WebSocket handshake failed: {call.error_class}: {call.error_message}")


def _opening(
    session: CassetteSession, connecter: Any, asynchronous: bool
) -> tuple[SessionPlayback, Request] | _SessionRecorder | None:
    """What opening ``connecter`` does under ``session``, the same for both clients: replay (the playback and
    the handshake), record (the recorder; record-on-miss too, when no recorded session answers), or None: the
    connection goes out as it would without vcr_transport."""
    step = _step(session, connecter)
    if step is Step.REPLAY:
        request = _handshake(connecter, asynchronous)
        call = _selected(session, connecter, request)
        if call is not None:
            if call.status != 101:
                raise _refused_handshake(call)
            return _playback(session, call), request
    elif step is not Step.RECORD:
        return None
    return _started(session, connecter, asynchronous)


def open_sync(session: CassetteSession, connecter: Any, original: Callable[[Any], Any]) -> Any:
    """``websockets.sync.client`` connect, through ``session``."""
    opening = _opening(session, connecter, asynchronous=False)
    if opening is None:
        return original(connecter)
    if isinstance(opening, tuple):
        return ReplayConnection(*opening, session, connecter, original)
    try:
        connection = original(connecter)
    except Exception as error:
        opening.refused(error)
        raise
    opening.accepted(connection)
    return RecordingConnection(connection, opening)


async def open_async(session: CassetteSession, connecter: Any, original: Callable[[Any], Any]) -> Any:
    """``websockets.asyncio.client`` connect, through ``session``."""
    opening = _opening(session, connecter, asynchronous=True)
    if opening is None:
        return await original(connecter)
    if isinstance(opening, tuple):
        return AsyncReplayConnection(*opening, session, connecter, original)
    try:
        connection = await original(connecter)
    except Exception as error:
        opening.refused(error)
        raise
    opening.accepted(connection)
    return AsyncRecordingConnection(connection, opening)


def _started(session: CassetteSession, connecter: Any, asynchronous: bool) -> _SessionRecorder:
    recorder = session.recorder
    assert recorder is not None, "a recording step has its recorder"
    request = _handshake(connecter, asynchronous)
    return _SessionRecorder(recorder.start_session(connecter.uri, list(request.headers.raw_items())))


class _SessionRecorder:
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


class RecordingConnection:
    """A real ``websockets.sync`` connection, each message and the close recorded as they happen.

    Before each send, the messages that have already arrived are received (and kept for the client's next
    ``recv``), so that the recording shows them before the send: replay delivers them without waiting for
    it. Not while another thread is receiving: that one gets each message as it arrives."""

    def __init__(self, connection: Any, recorder: _SessionRecorder, hidden: int = 0) -> None:
        self._connection = connection
        self._recorder = recorder
        self._early: collections.deque[str | bytes] = collections.deque()
        self._receiving = threading.Lock()
        self._count = _ServerCount(hidden)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    def _take(self, message: str | bytes) -> None:
        """A server message that arrived before the client asked for it: recorded, kept for its recv."""
        self._recorder.message("server", message)
        if self._count.given():
            self._early.append(message)

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
        self._recorder.message("client", _as_sent(message, text))

    def recv(self, timeout: float | None = None, decode: bool | None = None) -> Any:
        with self._receiving:
            while not self._early:
                try:
                    self._take(self._connection.recv(timeout))
                except ConnectionClosed:
                    self._recorder.closed(self._connection)
                    raise
            return _decoded(self._early.popleft(), decode)

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
                yield _decoded(self._early.popleft(), decode)
                return
            parts: list[str | bytes] = []
            try:
                for part in self._connection.recv_streaming():
                    parts.append(part)
                    yield _decoded(part, decode)
            except ConnectionClosed:
                self._recorder.closed(self._connection)
                raise
            self._recorder.message("server", _joined(parts))
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


class AsyncRecordingConnection:
    """A real ``websockets.asyncio`` connection, each message and the close recorded as they happen; the
    messages that arrived before a send are received first, as ``RecordingConnection`` does."""

    def __init__(self, connection: Any, recorder: _SessionRecorder, hidden: int = 0) -> None:
        self._connection = connection
        self._recorder = recorder
        self._early: collections.deque[str | bytes] = collections.deque()
        self._receiving = False
        self._count = _ServerCount(hidden)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    def _take(self, message: str | bytes) -> None:
        self._recorder.message("server", message)
        if self._count.given():
            self._early.append(message)

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
        self._recorder.message("client", _as_sent(message, text))

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
        return _decoded(self._early.popleft(), decode)

    async def __aiter__(self) -> AsyncIterator[Any]:
        try:
            while True:
                yield await self.recv()
        except ConnectionClosedOK:
            return

    async def recv_streaming(self, decode: bool | None = None) -> AsyncIterator[Any]:
        """As ``RecordingConnection.recv_streaming``."""
        if self._early:
            yield _decoded(self._early.popleft(), decode)
            return
        parts: list[str | bytes] = []
        self._receiving = True
        try:
            async for part in self._connection.recv_streaming():
                parts.append(part)
                yield _decoded(part, decode)
        except ConnectionClosed:
            self._recorder.closed(self._connection)
            raise
        finally:
            self._receiving = False
        self._recorder.message("server", _joined(parts))
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


def _as_sent(message: Any, text: bool | None) -> str | bytes:
    """What went on the wire: a str (or bytes sent with ``text=True``) as text, bytes (or a str sent with
    ``text=False``) as binary. Fragments (an iterable of them) are recorded as the one message they make."""
    if not isinstance(message, str | bytes | bytearray | memoryview):
        if not isinstance(message, Iterator | list | tuple):
            raise VcrTransportError(f"a WebSocket message sent in {type(message).__name__} form is not recorded")
        message = _joined(list(message))
    if isinstance(message, str):
        return message.encode() if text is False else message
    data = bytes(message)
    return data.decode() if text else data


def _joined(parts: list[str | bytes]) -> str | bytes:
    """A message read fragment by fragment, whole: text fragments are str, binary ones bytes."""
    return "".join(parts) if parts and isinstance(parts[0], str) else b"".join(parts)  # type: ignore[arg-type]


def _decoded(message: str | bytes, decode: bool | None) -> str | bytes:
    """A received message as ``recv(decode=...)`` gives it: text as str unless ``decode=False``, binary as
    bytes unless ``decode=True``."""
    if decode is False and isinstance(message, str):
        return message.encode()
    if decode is True and isinstance(message, bytes):
        return message.decode()
    return message


# How long record-on-miss's resend waits for each server message the recording has before a client message.
RESEND_WAIT = 10.0
# _next's answer once record-on-miss takes the session live: what the client receives comes from there
_LIVE: tuple[str | bytes | None, float] = (None, -1.0)


class _GoingLive:
    """What going live has opened so far: the live session's recorder, then its connection."""

    __slots__ = ("connection", "recorder")

    def __init__(self) -> None:
        self.recorder: _SessionRecorder | None = None
        self.connection: Any = None


class _Replay:
    """What both replayed connections share: the playback, the handshake's request and response, the close.

    In record-on-miss, the client messages sent are kept (as sent: the live server needs them whole) until
    one differs from the recording. Then the session goes live: the real connection is opened through
    ``original``, and the kept messages, then the differing one, are sent to it, each once as many server
    messages as the recording has before it have come (``SessionPlayback.resend_plan``; at most
    ``RESEND_WAIT`` seconds each). The live session is recorded from its handshake on, after the calls
    replayed (``ReplayEngine.end_at_session_miss``); its first server messages stand for those the client was
    given from the recording and are recorded only; from then on the connection is the live one."""

    _ready: threading.Event | asyncio.Event  # going live has finished (the shell's kind of event)

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
        self._sent_messages: list[str | bytes] | None = [] if session.decision.records_on_miss else None
        self._switching = False  # record-on-miss is taking the session live
        self._live: Any = None  # the live recording connection, once it has
        self._switch_failed: BaseException | None = None
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
        """What the shell's waiting needs: its ``_ready`` (going live has finished), set up last."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _going_live(self) -> Iterator[_GoingLive]:
        """Around going live: the block sets the live session's recorder, then the live connection once
        open. When the block ends the session is live, even when sending the messages again failed (that
        send raises it; later calls meet the live connection as it is, and closing this one closes it), or,
        when the live connection never opened, closed with what made it fail (every later call raises it).
        Either way, whoever waits for it is woken."""
        going = _GoingLive()
        failure: BaseException | None = None
        try:
            yield going
        except BaseException as error:
            if going.connection is None:  # the handshake failed, or the recording could not start
                if going.recorder is not None and isinstance(error, Exception):
                    going.recorder.refused(error)
                failure = error
            raise
        finally:
            self._went_live(going.connection, failure)
            self._ready.set()

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
            if self._switching:
                return "live"
            if self._state is not State.OPEN:
                raise self._closed_error()
            data = _as_sent(message, text)
            try:
                self._playback.sent(data)
            except ReplayMismatch as miss:
                if self._takes_over(miss):
                    self._switching = True
                    assert self._sent_messages is not None
                    self._sent_messages.append(data)
                    return "switch"
                engine = self._session.replayer.engine if self._session.replayer else None
                if engine is not None and engine.first_mismatch is None:
                    engine.first_mismatch = miss
                raise
            if self._sent_messages is not None:
                self._sent_messages.append(data)
            return "replayed"

    def _takes_over(self, miss: ReplayMismatch) -> bool:
        replayer = self._session.replayer
        return (
            self._sent_messages is not None
            and replayer is not None
            and replayer.engine.end_at_session_miss(self._playback.call.index)
            and self._session.recording_takes_over(miss)
        )

    def _resend_plan(self) -> tuple[list[tuple[str | bytes, int]], int, _SessionRecorder]:
        """What going live sends (each message with the server messages to wait for first), how many server
        messages it records only, and the live session's recorder (its handshake recorded)."""
        counts, given = self._playback.resend_plan()
        assert self._sent_messages is not None
        messages, self._sent_messages = self._sent_messages, None
        recorder = _started(self._session, self._connecter, asynchronous=isinstance(self, AsyncReplayConnection))
        return list(zip(messages, counts, strict=True)), given, recorder

    def _went_live(self, live: Any, failure: BaseException | None) -> None:
        with self._lock:
            self._live, self._switch_failed = live, failure
            if failure is not None:
                self._state = State.CLOSED

    def _live_connection(self) -> Any:
        """The live connection, once going live has finished (raising what made it fail)."""
        if self._switch_failed is not None:
            raise self._switch_failed
        return self._live

    def _next(self) -> tuple[str | bytes | None, float] | None:
        """The next server message and the paced wait before it; None: nothing may be delivered now. Raises
        ConnectionClosed once the session is closed (as recorded, or by the client)."""
        with self._lock:
            if self._switching:
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
            if self._switching:
                return False
            if self._state is not State.CLOSED:
                frame = Close(code, reason)
                self._sent, self._rcvd, self._rcvd_then_sent = frame, frame, False
                self._state = State.CLOSED
            return True


class ReplayConnection(_Replay):
    """A recorded session answering as a ``websockets.sync`` connection would; no socket (until
    record-on-miss takes it live)."""

    _ready: threading.Event

    def _shell(self) -> None:
        self._changed = threading.Condition()
        self._ready = threading.Event()

    def send(self, message: Any, text: bool | None = None) -> None:
        outcome = self._send(message, text)
        if outcome == "switch":
            self._resend()
        elif outcome == "live":
            self._ready.wait()
            self._live_connection().send(message, text)
        with self._changed:
            self._changed.notify_all()

    def _resend(self) -> None:
        with self._going_live() as going:
            messages, given, going.recorder = self._resend_plan()
            connection = self._original(self._connecter)
            live = going.connection = RecordingConnection(connection, going.recorder, hidden=given)
            going.recorder.accepted(connection)
            if self._entered:
                connection.__enter__()  # as the client entered this one (websockets 17 warns of one it isn't)
            for data, before in messages:
                live.catch_up(before, RESEND_WAIT)
                live.send(data)

    def recv(self, timeout: float | None = None, decode: bool | None = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while (found := self._next()) is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("timed out while receiving data")
                self._changed.wait(left)
        if found is _LIVE:
            self._ready.wait()
            return self._live_connection().recv(
                None if deadline is None else max(0.0, deadline - time.monotonic()), decode
            )
        message, delay = found
        if delay:
            time.sleep(delay)
        assert message is not None
        return _decoded(message, decode)

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
            self._ready.wait()
            if self._live is not None:
                self._live.close(code, reason)
        with self._changed:
            self._changed.notify_all()

    def __enter__(self) -> ReplayConnection:
        self._entered = True  # the live connection, if record-on-miss opens one, is entered too
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncReplayConnection(_Replay):
    """A recorded session answering as a ``websockets.asyncio`` connection would; no socket (until
    record-on-miss takes it live)."""

    _ready: asyncio.Event

    def _shell(self) -> None:
        self._waiters: list[asyncio.Future[None]] = []
        self._ready = asyncio.Event()

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
            await self._ready.wait()
            await self._live_connection().send(message, text)
        self._wake()

    async def _resend(self) -> None:
        try:
            with self._going_live() as going:
                messages, given, going.recorder = self._resend_plan()
                connection = await self._original(self._connecter)
                live = going.connection = AsyncRecordingConnection(connection, going.recorder, hidden=given)
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
            await self._ready.wait()
            return await self._live_connection().recv(decode)
        message, delay = found
        if delay:
            await asyncio.sleep(delay)
        assert message is not None
        return _decoded(message, decode)

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
            if self._switching:
                await self._ready.wait()
                if self._live is not None:
                    await self._live.wait_closed()
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if not self._client_closed(code, reason):
            await self._ready.wait()
            if self._live is not None:
                await self._live.close(code, reason)
        self._wake()

    async def __aenter__(self) -> AsyncReplayConnection:
        self._entered = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


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
    from websockets.frames import Opcode
    from websockets.server import ServerProtocol

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

    async def flush() -> None:
        for data in protocol.data_to_send():
            if data:
                writer.write(data)
            elif writer.can_write_eof():
                writer.write_eof()
        await writer.drain()

    await flush()
    if response is None:
        return f"handshake refused ({protocol.handshake_exc})"
    if response.status_code != 101:
        return f"handshake refused ({response.status_code})"
    changed = asyncio.Event()
    outcome = ["closed by the client"]
    fragments: list[bytes] = []
    text = [False]

    def take(frame: Any) -> None:
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            fragments.clear()
            text[0] = frame.opcode is Opcode.TEXT
        elif frame.opcode is not Opcode.CONT:
            return
        fragments.append(bytes(frame.data))
        if frame.fin:
            data = b"".join(fragments)
            try:
                playback.sent(data.decode() if text[0] else data)
            except ReplayMismatch as miss:
                headline = str(miss).splitlines()[0]
                outcome[0] = headline
                protocol.send_close(1008, headline.encode()[:120].decode("utf-8", "ignore"))
            changed.set()

    def silent() -> bool:
        """The client sent nothing for ``idle`` seconds: whether to read on (yes while the server's messages
        are being paced: the client listens). The session is closed if the recording waits for the client."""
        if protocol.state is not State.OPEN:
            return False
        if playback.next_server() is None:
            awaited = playback.awaited()
            outcome[0] = f"closed after {idle:g} s with nothing from the client; the recording has {awaited} next"
            protocol.send_close(1008, outcome[0][:120])
        return True

    async def read() -> None:
        data = early
        while protocol.state is not State.CLOSED:
            try:
                data = data or await asyncio.wait_for(reader.read(65536), idle)
            except TimeoutError:
                if not silent():
                    return
                await flush()
                continue
            if not data:
                protocol.receive_eof()
            else:
                protocol.receive_data(data)
            for frame in protocol.events_received():
                take(frame)
            await flush()
            if not data:
                return
            data = b""

    async def write() -> None:
        while protocol.state is State.OPEN:
            changed.clear()
            position = playback.next_server()
            if position is None:
                await changed.wait()
                continue
            if position == SessionPlayback.CLOSED:
                close = playback.call.close
                code, reason = (close[0], close[1]) if close is not None and close[0] is not None else (1011, "")
                outcome[0] = f"closed by the server ({code}), as recorded"
                protocol.send_close(code, reason)
                await flush()
                return
            delay = playback.delay(position, pace)
            if delay:
                await asyncio.sleep(delay)
            message = playback.delivered(position)
            if isinstance(message, str):
                protocol.send_text(message.encode())
            else:
                protocol.send_binary(message)
            await flush()

    sending = asyncio.ensure_future(write())
    try:
        await read()
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
    left = playback.unplayed()
    return outcome[0] + (f"; {left}" if left else "")
