"""WebSocket sessions through a cassette: the shells around ``websockets``' sync and asyncio clients.

``use_cassette``'s patcher (``_context.py``) sends each connection the ``websockets`` clients open
(``websockets.sync.client.connect``, ``websockets.asyncio.client.connect`` and their subclasses: the ones
openai's ``client.realtime.connect(...)`` and google-genai's ``client.aio.live.connect(...)`` use) to
``open_sync`` or ``open_async`` with the cassette session that owns it. In the session's mode, the
connection is:

- passed through (off, a passthrough host): the real connection, nothing recorded;
- recorded: the real connection, wrapped so that each message sent and received, and the close, is
  appended to the cassette as it happens (``_websocket_recording.py``);
- replayed: no socket is opened. The handshake is matched as a request is, then a ``ReplayConnection`` or
  ``AsyncReplayConnection`` (``_websocket_replay.py``) checks each message the client sends and delivers the
  recorded server messages (what to deliver when is ``_core/engine/_websocket.SessionPlayback``'s). In
  record-on-miss, a handshake that misses records the session instead, as a missed request is recorded, and
  a client message that differs takes the session live from there (``_websocket_replay._GoingLive``).

``serve`` answers WebSocket clients from recorded sessions over their own connections
(``_websocket_serve.py``).
"""

from __future__ import annotations

import http
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from websockets.exceptions import InvalidStatus
from websockets.http11 import Request, Response

from ._core.engine._modes import Step
from ._core.engine._websocket import MessageMatcher, SessionPlayback, handshake_headers
from ._core.format._format import RecordedCall
from ._exceptions import ReplayMismatch, VcrTransportError
from ._websocket_recording import (
    AsyncRecordingConnection,
    RecordingConnection,
    SessionRecorder,
    handshake,
    start_recording,
)
from ._websocket_replay import AsyncReplayConnection, ReplayConnection

if TYPE_CHECKING:
    from ._session import CassetteSession

__all__ = ["ConnectCall", "open_async", "open_sync"]


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
) -> tuple[SessionPlayback, Request] | SessionRecorder | None:
    """What opening ``connecter`` does under ``session``, the same for both clients: replay (the playback and
    the handshake), record (the recorder; record-on-miss too, when no recorded session answers), or None: the
    connection goes out as it would without vcr_transport."""
    step = _step(session, connecter)
    if step is Step.REPLAY:
        request = handshake(connecter, asynchronous)
        call = _selected(session, connecter, request)
        if call is not None:
            if call.status != 101:
                raise _refused_handshake(call)
            return _playback(session, call), request
    elif step is not Step.RECORD:
        return None
    return start_recording(session, connecter, asynchronous)


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
