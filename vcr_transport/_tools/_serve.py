"""``vcr-transport serve``: cassettes replayed over HTTP/1.1 to any client, or recorded through a proxy.
A WebSocket handshake that matches a recorded session is answered with that session (replay only).

The server is asyncio's own streams framed by h11 (RFC 9112's rules, a malformed request answered with a
400), no framework: each recorded chunk is written as its own HTTP chunk
and drained before the next (an ASGI server would stand between the chunk and the socket, with its own
buffering); a connection is a coroutine, so 100 concurrent streams cost 100 coroutines; shutdown is in our
hands, so a recording commits only after the calls in flight have ended.

Each cassette is a ``CassetteSession`` served (the decision, matcher, redaction, faults and recording of
in-process replay): replay is unordered across every cassette given, a recorded call answering as often as it
is asked for; the recording proxy records through the session, over httpx2's ``AsyncHTTPTransport``, which
follows no redirect, so the caller sees each chunk as the vendor sent it while the cassette gets it
redacted. record-on-miss appends each miss after the recorded calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import re
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import h11
import httpx2

from .._core.engine._options import Options
from .._core.format._bodies import redact_url
from .._core.format._lint import unsendable_header
from .._core.rules._redaction import PLACEHOLDER, Redactor
from .._display import visible
from .._exceptions import ReplayMismatch, VcrTransportError
from .._http import header_pairs
from .._recording import CassetteRecorder
from .._replay import CALL_INDEX_EXTENSION, error_response
from .._session import CassetteSession

__all__ = [
    "SERVE_MODES",
    "VENDORS",
    "CassetteServer",
    "ServeConfig",
    "ServeError",
    "cassette_files",
    "check_bind",
    "check_upstream",
    "run_server",
    "vendor_of",
]

SERVE_MODES = ("replay", "record", "record-on-miss")
VENDORS = ("openai", "anthropic", "google")
# Headers about one hop, never forwarded (RFC 9110 7.6.1), and those the server sets itself.
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host"}
)
_MAX_HEAD = 64 * 1024
_FRAMING = ("transfer-encoding", "content-length")
_READ_SIZE = 64 * 1024
# A refused request's unread bytes are read and dropped (up to this many, for up to _LINGER seconds) before the
# connection closes: closed with bytes unread, the socket resets, and the client may lose the refusal.
_LINGER_BYTES = 1024 * 1024
_LINGER = 2.0
_UPSTREAM_TIMEOUT = {"connect": 30.0, "read": 600.0, "write": 60.0, "pool": 30.0}


class ServeError(VcrTransportError):
    """A serve setting that can't work; the message says what to do."""


class _BadRequest(Exception):
    """A request refused before it is answered: its status (400, 413) and the problem, said in the answer."""

    def __init__(self, problem: str, status: int = 400) -> None:
        super().__init__(problem)
        self.status = status


class _Idle(Exception):
    """The client sent nothing for ``idle_timeout`` seconds while the server waited for a request."""


@dataclasses.dataclass(frozen=True)
class ServeConfig:
    """What ``serve`` was asked: the cassettes (files), the mode, the upstream of each vendor (record
    modes), the replay options, where to listen, and how long in-flight calls get to end on SIGTERM."""

    cassettes: tuple[Path, ...]
    mode: str = "replay"
    upstreams: tuple[tuple[str, str], ...] = ()
    options: Options = Options()
    host: str = "127.0.0.1"
    port: int = 0
    allow_remote: bool = False
    grace: float = 30.0
    # The server's own bounds (each a flag): the largest request body read (a larger one is answered 413), the
    # connections open at once (one more is answered 503 and closed), how long a connection may send nothing
    # while a request is awaited (then it is closed) or, in a WebSocket session, while the recording waits for
    # the client (then the session is closed with 1008), and how long one request's head and body may take to
    # arrive from its first byte (then it is answered 408: a client sending a byte now and then holds no
    # connection longer). A response being written is not timed.
    max_body: int = 64 * 1024 * 1024
    max_connections: int = 512
    idle_timeout: float = 60.0
    request_timeout: float = 120.0


def check_bind(host: str, allow_remote: bool) -> bool:
    """Whether ``host`` is a loopback address (``localhost`` included); any other raises ServeError unless
    ``allow_remote``. Checked before anything is bound."""
    if host == "localhost":
        return True
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not allow_remote:
        raise ServeError(
            f"refusing to listen on {host}: not a loopback address, and clients send their API keys to this "
            "server in clear; listen on 127.0.0.1, or pass --allow-remote to accept that"
        )
    return loopback


def check_upstream(vendor: str, url: str, options: Options) -> str:
    """An ``--upstream`` value checked: a known vendor, an http(s) URL with no credentials in it (keys
    travel in the client's headers, never in the server's settings). Returns the URL without a trailing /."""
    if vendor not in VENDORS:
        raise ServeError(f"--upstream {vendor}=...: unknown vendor {vendor!r}; valid: {', '.join(VENDORS)}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ServeError(f"--upstream {vendor}={url}: not an http(s) URL; e.g. https://api.openai.com")
    if parts.username or parts.password or redact_url(url, options.redactor()) != url:
        raise ServeError(
            f"--upstream {vendor}=...: the URL carries a credential; give the bare URL, the clients send "
            "their own keys and the proxy forwards them"
        )
    if parts.query or parts.fragment:
        raise ServeError(f"--upstream {vendor}={url}: give scheme, host and an optional path prefix, no query")
    return url.rstrip("/")


def vendor_of(path: str, headers: Sequence[tuple[str, str]]) -> str:
    """Which vendor a request is for: anthropic (``anthropic-version``, ``/v1/messages``), google
    (``x-goog-api-key``, ``/v1beta/``, ``:generateContent``), else openai."""
    names = {name.lower() for name, _ in headers}
    if "anthropic-version" in names or path.startswith("/v1/messages"):
        return "anthropic"
    if "x-goog-api-key" in names or path.startswith(("/v1beta/", "/upload/")) or ":generate" in path:
        return "google"
    return "openai"


@dataclasses.dataclass
class _Request:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes
    keep_alive: bool


class _Wire:
    """One connection's HTTP/1.1, framed by h11 (RFC 9112: conflicting lengths, chunked bodies with
    trailers, bad chunk sizes and over-long heads are refused as 400s), over asyncio's streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, config: ServeConfig) -> None:
        self.reader, self.writer = reader, writer
        self.connection = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
        self.max_body, self.idle_timeout, self.request_timeout = (
            config.max_body,
            config.idle_timeout,
            config.request_timeout,
        )
        self.must_close = False  # the request being answered is the connection's last (RFC 9112 6.1)
        self._deadline: float | None = None  # when the request being read must have arrived (loop time)

    async def _next_event(self) -> Any:
        """The next h11 event of the connection, reading from the client as h11 needs more (a client waiting
        for ``100 Continue`` is sent it first). A framing error h11 finds is a ``_BadRequest`` (a 400)."""
        while True:
            try:
                event = self.connection.next_event()
            except h11.RemoteProtocolError as error:
                raise _BadRequest(str(error)) from None
            if event is not h11.NEED_DATA:
                return event
            if self.connection.they_are_waiting_for_100_continue:
                self.writer.write(self.connection.send(h11.InformationalResponse(status_code=100, headers=[])))
                await self.writer.drain()
            self.connection.receive_data(await self._read())

    async def _read(self) -> bytes:
        """The next bytes the client sends, within ``idle_timeout`` (``_Idle`` past it) and the request's
        deadline, which its first byte starts (a 408 past it)."""
        loop = asyncio.get_running_loop()
        wait = self.idle_timeout
        if self._deadline is not None:
            wait = min(wait, self._deadline - loop.time())
        try:
            data = await asyncio.wait_for(self.reader.read(_READ_SIZE), max(wait, 0.0))
        except TimeoutError:
            if self._deadline is not None and loop.time() >= self._deadline:
                raise _BadRequest(
                    f"the request did not arrive whole within {self.request_timeout:g} s of its first byte "
                    "(serve --request-timeout)",
                    408,
                ) from None
            raise _Idle from None
        if self._deadline is None:
            self._deadline = loop.time() + self.request_timeout
        return data

    async def read_request(self) -> _Request | None:
        """The next request on the connection, or None when the client closed it between requests. It must
        arrive whole within ``request_timeout`` of the first byte read for it."""
        self._deadline = None
        event = await self._next_event()
        if isinstance(event, h11.ConnectionClosed):
            return None
        if not isinstance(event, h11.Request):  # pragma: no cover - h11 gives a request first
            raise _BadRequest(f"expected a request, got {type(event).__name__}")
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in event.headers.raw_items()]
        lengths = self._framing(headers)
        content = await self._body()
        # RFC 9112 6.1: a request with both Transfer-Encoding and Content-Length may be an attempt to smuggle a
        # second request in its body; h11 frames it by Transfer-Encoding, and the connection closes after the
        # answer (``connection: close``), so no byte after it is read as a request.
        self.must_close = len(lengths) == len(_FRAMING)
        keep_alive = self.connection.their_state is not h11.MUST_CLOSE and not self.must_close
        if "transfer-encoding" in lengths:  # the body came whole: say its length
            headers = [
                *((n, v) for n, v in headers if n.lower() not in _FRAMING),
                ("content-length", str(len(content))),
            ]
        return _Request(
            event.method.decode("ascii").upper(), event.target.decode("latin-1"), headers, content, keep_alive
        )

    def _framing(self, headers: list[tuple[str, str]]) -> dict[str, str]:
        """The request's framing headers (h11 has checked them), lowercased; a 413 for a Content-Length over
        ``max_body``, before a byte of the body is read."""
        framing = {name.lower(): value for name, value in headers if name.lower() in _FRAMING}
        if "transfer-encoding" not in framing and int(framing.get("content-length", 0)) > self.max_body:
            raise self._too_large()
        return framing

    async def _body(self) -> bytes:
        """The request's body, refused (413) once it grows past ``max_body``: a chunked one as it comes."""
        parts: list[bytes] = []
        size = 0
        while not isinstance(body := await self._next_event(), h11.EndOfMessage):
            if isinstance(body, h11.ConnectionClosed):
                raise _BadRequest("the request body ended early")
            size += len(body.data)
            if size > self.max_body:
                raise self._too_large()
            parts.append(bytes(body.data))
        return b"".join(parts)

    def _too_large(self) -> _BadRequest:
        return _BadRequest(f"the request body is larger than {self.max_body:,} bytes (serve --max-body)", 413)

    def head(self, status: int, reason: str, headers: list[tuple[str, str]], bodiless: bool) -> bytes:
        framing = [] if bodiless else [("transfer-encoding", "chunked")]
        if self.must_close:
            framing.append(("connection", "close"))
        return self.connection.send(
            h11.Response(status_code=status, reason=reason.encode("latin-1"), headers=[*headers, *framing])
        )

    def chunk(self, data: bytes) -> bytes:
        return self.connection.send(h11.Data(data=data))

    def end(self) -> bytes:
        return self.connection.send(h11.EndOfMessage())

    def next_cycle(self) -> bool:
        """Whether the connection can carry another request (then ready for it)."""
        if self.connection.our_state is h11.DONE and self.connection.their_state is h11.DONE:
            self.connection.start_next_cycle()
            return True
        return False

    async def refuse(self, status: int, problem: str) -> None:
        """Answer a request refused before it was read whole (400, 408, 413, 503) saying why, then read and drop
        what the client still sends (bounded: ``_LINGER_BYTES``, ``_LINGER`` seconds), so that the close
        doesn't reset the connection before the client has read the answer."""
        body = f"{_REFUSALS[status].lower()}: {problem}\n".encode()
        self.writer.write(
            b"HTTP/1.1 %d %s\r\nconnection: close\r\ncontent-type: text/plain\r\ncontent-length: %d\r\n\r\n%s"
            % (status, _REFUSALS[status].encode(), len(body), body)
        )
        await self.writer.drain()
        self.writer.write_eof()
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(_LINGER):
                left = _LINGER_BYTES
                while left > 0 and (data := await self.reader.read(min(left, _READ_SIZE))):
                    left -= len(data)


# How h11 quotes a header line without a colon: its first word stands where a header's name would.
_ILLEGAL_HEADER = re.compile(r"illegal header line: bytearray\(b['\"](?P<name>[^\s:'\"]*)(?P<rest>.*)['\"]\)")
_REFUSALS = {400: "Bad Request", 408: "Request Timeout", 413: "Content Too Large", 503: "Service Unavailable"}


def _origins(calls: Sequence[Any]) -> dict[tuple[str, str], list[str]]:
    """(method, path) -> the origins (scheme://host) its recorded calls went to, in first-seen order."""
    found: dict[tuple[str, str], list[str]] = {}
    for call in calls:
        parts = urlsplit(call.url)
        origins = found.setdefault((call.method.upper(), parts.path or "/"), [])
        if f"{parts.scheme}://{parts.netloc}" not in origins:
            origins.append(f"{parts.scheme}://{parts.netloc}")
    return found


def _check_mode(config: ServeConfig, upstreams: dict[str, str]) -> None:
    """A ServeError for a mode serve does not know, and for a recording mode (record, record-on-miss) without
    exactly one cassette to record into or without an upstream to forward to."""
    if config.mode not in SERVE_MODES:
        raise ServeError(f"unknown mode {config.mode!r}; valid: {', '.join(SERVE_MODES)}")
    if config.mode == "replay":
        return
    if len(config.cassettes) != 1:
        raise ServeError(f"--mode {config.mode} records into one cassette: give exactly one path")
    if not upstreams:
        raise ServeError(f"--mode {config.mode} forwards to the vendors: give --upstream VENDOR=URL")


class CassetteServer:
    """The cassettes of a ServeConfig answered over HTTP; see the module docstring."""

    def __init__(self, config: ServeConfig, say: Callable[[str], None] = print) -> None:
        self.config = config
        self.say: Callable[[str], None] = lambda line: say(visible(line))  # the log quotes cassettes and clients
        self.loopback = check_bind(config.host, config.allow_remote)
        self.upstreams = {name: check_upstream(name, url, config.options) for name, url in config.upstreams}
        _check_mode(config, self.upstreams)
        self.sessions = [self._session(path) for path in config.cassettes]
        # The session that records (record, record-on-miss), and those that replay, with their origins.
        self.recording = self.sessions[0] if config.mode != "replay" else None
        self._replaying = [
            (session, session.replayer, _origins(session.replayer.calls))
            for session in self.sessions
            if session.replayer is not None
        ]
        self.older_cassette = self.recording is not None and self.recording.existed
        self._inner = httpx2.AsyncHTTPTransport() if self.recording is not None else None
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._connections: set[asyncio.Task[None]] = set()
        self.url = ""

    def _log_redactor(self) -> Redactor:
        """A redactor for one line of the log: what it learns goes with it (a server that runs for days would
        otherwise remember every secret every client ever sent)."""
        return self.config.options.redactor()

    def _session(self, path: Path) -> CassetteSession:
        hint = "serve it with --mode record-on-miss --upstream VENDOR=URL to record it"
        session = CassetteSession(path, self.config.mode, "serve", self.config.options, record_hint=hint, serving=True)
        if self.config.mode == "replay":
            session.raise_if_broken()
        return session

    @property
    def recorder(self) -> CassetteRecorder | None:
        return self.recording.recorder if self.recording is not None else None

    @property
    def calls(self) -> int:
        return sum(len(replayer.calls) for _, replayer, _ in self._replaying)

    # -- answering ---------------------------------------------------------------------------------------

    def _replayed(self, request: _Request) -> tuple[Any, str]:
        """The response from the cassettes and what the access log says of it (the call that answered, or
        the mismatch); no response when the request is to be forwarded and recorded (record, a miss in
        record-on-miss). In replay, a miss is answered against the nearest recorded call."""
        answered, nearest = self._answered(request)
        if answered is not None:
            return answered
        if self.recording is not None:
            return None, "forwarded, recorded"
        problem = (
            nearest[1] if nearest else ServeError(f"{request.method} {request.target}: the cassettes hold no call")
        )
        return error_response(httpx2, "replay_mismatch", problem), str(problem).splitlines()[0]

    def _answered(
        self, request: _Request
    ) -> tuple[tuple[Any, str] | None, tuple[tuple[int, float], ReplayMismatch] | None]:
        """The first cassette's response to ``request`` and the call that answered; else none, and the
        nearest mismatch met (by ``distance``), if any."""
        path = urlsplit(request.target).path or "/"
        nearest: tuple[tuple[int, float], ReplayMismatch] | None = None
        for session, replayer, origins in self._replaying:
            for origin in _origins_to_try(origins, request.method, path, replayer.calls):
                outgoing = httpx2.Request(request.method, origin + request.target, headers=request.headers)
                try:
                    response = session.respond(outgoing, request.body)
                except ReplayMismatch as miss:
                    nearest = _nearer(nearest, replayer.distance(outgoing, request.body, miss.call_index), miss)
                    continue
                if response is not None:
                    index = response.extensions.get(CALL_INDEX_EXTENSION)
                    return (response, f"call {index} of {session.path.name}"), nearest
        return None, nearest

    async def _forwarded(self, request: _Request) -> Any:
        """The vendor's response to ``request``, forwarded to its ``--upstream`` (hop-by-hop headers left out)
        and recorded; a 502 JSON error when the vendor has no upstream or the upstream can't be reached."""
        vendor = vendor_of(urlsplit(request.target).path, request.headers)
        upstream = self.upstreams.get(vendor)
        if upstream is None:
            known = ", ".join(self.upstreams) or "none"
            return _json_error(
                502, "no_upstream", f"no upstream for {vendor} (given: {known}); pass --upstream {vendor}=URL"
            )
        headers = [(n, v) for n, v in request.headers if n.lower() not in _HOP_BY_HOP]
        outgoing = httpx2.Request(
            request.method,
            upstream + request.target,
            headers=headers,
            content=request.body,
            extensions={"timeout": _UPSTREAM_TIMEOUT},
        )
        assert self.recording is not None and self._inner is not None
        try:
            return await self.recording.record_async(outgoing, self._inner)
        except httpx2.TransportError as error:
            return _json_error(502, "upstream_error", f"{upstream}: {type(error).__name__}: {error}")

    async def _answer(self, request: _Request, wire: _Wire) -> bool:
        """Answer one request and log it; whether the connection can carry another."""
        try:
            response, note = self._replayed(request)
        except Exception as error:  # a recorded failure with no response: the connection fails, as it did
            self._log(request, "-", f"connection cut, as recorded ({type(error).__name__})")
            wire.writer.transport.abort()
            return False
        if response is None:
            response = await self._forwarded(request)
        unsendable = unsendable_header(header_pairs(response.headers))
        if unsendable is not None:  # an edited cassette: said, where the connection was cut without a word
            await response.aclose()
            response = _json_error(502, "unsendable_recording", f"{note}: {unsendable}; re-record it")
        self._log(request, str(response.status_code), note)
        try:
            return await _send(response, request, wire)
        finally:
            await response.aclose()

    async def _websocket(self, request: _Request, wire: _Wire) -> None:
        """A WebSocket handshake: answered from the recorded session it matches (``_websocket_serve.serve_session``)
        on this connection, which then carries the session's messages; a miss is answered as an HTTP miss
        is. Recording WebSocket sessions through ``serve`` is not supported (501). A handshake with a body is
        refused (400): RFC 6455 4.1 has none, and websockets would not read the handshake."""
        if request.body:
            raise _BadRequest("a WebSocket handshake has no body (RFC 6455 4.1)")
        found = self._recorded_session(request)
        if isinstance(found, tuple):
            await self._session_played(request, wire, *found)
            return
        nearest = found
        if nearest is None and self.recording is not None:
            response = _json_error(
                501, "not_supported", "serve records HTTP only; record WebSocket sessions in-process"
            )
        else:
            problem = nearest or ServeError(f"GET {request.target}: the cassettes hold no WebSocket session")
            response = error_response(httpx2, "replay_mismatch", problem)
        self._log(request, str(response.status_code), str(nearest or "no session").splitlines()[0])
        try:
            await _send(response, request, wire)
        finally:
            await response.aclose()

    def _recorded_session(self, request: _Request) -> tuple[CassetteSession, Any] | ReplayMismatch | None:
        """The cassette and recorded session that answer a handshake, else the first miss (None: no cassette
        has a WebSocket session at its path)."""
        from .._core.engine._websocket import handshake_headers

        path = urlsplit(request.target).path or "/"
        nearest: ReplayMismatch | None = None
        for session, replayer, origins in self._replaying:
            engine = replayer.engine
            for origin in origins.get(("GET", path), []):
                if not origin.startswith("ws"):
                    continue
                incoming = engine.incoming_fields(
                    "GET", origin + request.target, handshake_headers(request.headers), b""
                )
                try:
                    return session, engine.select(incoming)
                except ReplayMismatch as miss:
                    nearest = nearest or miss
        return nearest

    async def _session_played(self, request: _Request, wire: _Wire, session: CassetteSession, call: Any) -> None:
        """The recorded session ``call`` played on the connection (``_websocket_serve.serve_session``), with the
        bytes h11 read past the handshake (the client's first frames, when they came in the same packet)."""
        from .._core.engine._websocket import MessageMatcher, SessionPlayback
        from .._websocket_serve import serve_session

        assert session.replayer is not None
        options = session.replayer.options
        matcher = MessageMatcher(session.replayer.engine.matcher, options.redactor(), options.normalizer())
        playback = SessionPlayback(call, matcher, cassette=str(session.path))
        head = f"GET {request.target} HTTP/1.1\r\n" + "".join(f"{n}: {v}\r\n" for n, v in request.headers)
        early = bytes(wire.connection.trailing_data[0])
        note = await serve_session(
            playback,
            (head + "\r\n").encode("latin-1"),
            early,
            wire.reader,
            wire.writer,
            options.pace,
            self.config.idle_timeout,
        )
        self._log(request, "101", f"session {call.index} of {session.path.name}: {note}")

    async def _requests(self, wire: _Wire) -> None:
        """Answer the connection's requests one after the other, while it can carry another."""
        while True:
            request = await wire.read_request()
            if request is None:
                break
            if _upgrades_to_websocket(request):
                await self._websocket(request, wire)
                break
            self._in_flight += 1
            self._idle.clear()
            try:
                keep_alive = await self._answer(request, wire) and request.keep_alive
            finally:
                self._in_flight -= 1
                if not self._in_flight:
                    self._idle.set()
            if not (keep_alive and wire.next_cycle()):
                break

    def _redacted_problem(self, problem: str) -> str:
        """A refusal's reason as the answer and the log say it: redacted as a recorded value is. A header line
        without a colon (``Authorization Bearer sk-...``), which h11 quotes whole, loses all but its name
        when that name is a secret one."""
        line = _ILLEGAL_HEADER.search(problem)
        redactor = self._log_redactor()
        if line is not None and redactor.is_secret_name(line["name"], header=True):
            problem = problem[: line.start("rest")] + " " + PLACEHOLDER + problem[line.end("rest") :]
        return redactor.redact_text(problem)

    def _log(self, request: _Request, status: str, note: str) -> None:
        """The access log: one line per request (method, path with its query redacted, status, what answered)."""
        target = redact_url("http://serve" + request.target, self._log_redactor()).removeprefix("http://serve")
        self.say(f"{request.method} {target} {status} {note}")

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection: its requests answered in turn until it closes. Past ``max_connections`` it
        is refused with a 503, a malformed request with its status (logged, the problem redacted); a client
        that goes away or stays idle is let go."""
        task = asyncio.current_task()
        assert task is not None
        full = len(self._connections) >= self.config.max_connections
        self._connections.add(task)
        wire = _Wire(reader, writer, self.config)
        try:
            if full:
                raise _BadRequest(f"{self.config.max_connections} connections are open (serve --max-connections)", 503)
            await self._requests(wire)
        except _BadRequest as refusal:
            problem = self._redacted_problem(str(refusal))
            self.say(f"- - {refusal.status} {_REFUSALS[refusal.status].lower()}: {problem}")
            await wire.refuse(refusal.status, problem)
        except (OSError, asyncio.IncompleteReadError, h11.LocalProtocolError, _Idle):
            pass  # the client went away mid-answer (reset, or no longer connected), or sent nothing for idle_timeout
        except asyncio.CancelledError:
            writer.transport.abort()
        finally:
            self._connections.discard(task)
            writer.close()

    # -- running -----------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Listen, say the URL, answer until SIGTERM or SIGINT, then shut down (see ``_shutdown``)."""
        server = await asyncio.start_server(self._connection, self.config.host, self.config.port, limit=_MAX_HEAD)
        host, port = server.sockets[0].getsockname()[:2]
        self.url = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
        if not self.loopback:
            self.say(f"warning: listening on {host}, beyond this machine: API keys cross the network in clear")
        what = f"{self.calls} call(s) from {len(self._replaying)} cassette(s)"
        if self.recorder is not None:
            what = f"{self.config.mode} into {self.recorder.path}" + (f", replaying {what}" if self._replaying else "")
        self.say(f"vcr-transport serve: {self.url} ({what}); stop with Ctrl-C or SIGTERM")
        loop = asyncio.get_running_loop()
        stop: asyncio.Future[int] = loop.create_future()

        def stopping(number: int) -> None:
            if not stop.done():
                stop.set_result(number)

        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, stopping, number)
        try:
            received = await stop
        finally:
            for number in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(number)
        server.close()
        await self._shutdown(signal.Signals(received))
        await server.wait_closed()

    async def _shutdown(self, number: signal.Signals) -> None:
        """SIGTERM: let the calls in flight end (up to ``grace`` seconds), then commit the recording.
        SIGINT: stop at once; the recording is committed only when no call was cut and it replaces no
        older cassette, else it is dropped and the older cassette stays as it was."""
        interrupted = number == signal.SIGINT
        busy = self._in_flight > 0
        if not interrupted and busy:
            try:
                await asyncio.wait_for(self._idle.wait(), self.config.grace)
            except TimeoutError:
                pass
        await self._close_connections()
        self._commit(keep=not interrupted or (not busy and not self.older_cassette))

    async def _close_connections(self) -> None:
        """Cancel the connections still open (waiting up to five seconds for them), then close the upstream
        client."""
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=5)
        if self._inner is not None:
            await self._inner.aclose()

    def _commit(self, keep: bool) -> None:
        """Close the recording, if any: committed when ``keep``, else dropped; say which."""
        if self.recording is None or self.recorder is None:
            return
        self.recording.close(None if keep else KeyboardInterrupt())
        if self.recorder.saved:
            self.say(f"vcr-transport serve: saved {self.recorder.path}")
        else:
            self.say(f"vcr-transport serve: {self.recorder.path} not saved; an older cassette, if any, is unchanged")


def _origins_to_try(
    origins: dict[tuple[str, str], list[str]], method: str, path: str, calls: Sequence[Any]
) -> list[str]:
    """The origins a cassette recorded ``method`` and ``path`` at; else the origin of its first call."""
    return origins.get((method, path)) or ([_origin(calls[0].url)] if calls else [])


def _nearer(
    nearest: tuple[tuple[int, float], ReplayMismatch] | None, distance: tuple[int, float], miss: ReplayMismatch
) -> tuple[tuple[int, float], ReplayMismatch]:
    """The nearer of the nearest mismatch so far and ``miss`` at ``distance`` (the first on a tie)."""
    return (distance, miss) if nearest is None or distance < nearest[0] else nearest


def _upgrades_to_websocket(request: _Request) -> bool:
    return request.method == "GET" and any(
        name.lower() == "upgrade" and value.strip().lower() == "websocket" for name, value in request.headers
    )


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _json_error(status: int, error_type: str, message: str) -> Any:
    return httpx2.Response(
        status,
        json={"type": "error", "error": {"type": error_type, "message": message}},
        headers={"x-vcr-transport": error_type.replace("_", "-")},
    )


async def _send(response: Any, request: _Request, wire: _Wire) -> bool:
    """Write a response: the head once the first body chunk is ready (so a delayed first byte delays the
    status line too), then each chunk as its own HTTP chunk, drained before the next. A stream that fails
    aborts the connection, as the recorded or injected failure did. Whether the connection is reusable."""
    writer = wire.writer
    bodiless = _bodiless(request.method, response.status_code)
    chunks = response.stream.__aiter__()
    try:
        first = None if bodiless else await anext(chunks, None)
    except Exception:
        writer.transport.abort()
        return False
    headers = [(n, v) for n, v in header_pairs(response.headers) if n.lower() not in _HOP_BY_HOP | {"content-length"}]
    writer.write(wire.head(response.status_code, response.reason_phrase or "Unknown", headers, bodiless))
    if bodiless:
        writer.write(wire.end())
        await writer.drain()
        return True
    return await _send_chunks(first, chunks, wire)


def _bodiless(method: str, status: int) -> bool:
    """Whether a response carries no body: to a HEAD, a 204 or 304, or an informational status."""
    return method == "HEAD" or status in (204, 304) or status < 200


async def _send_chunks(first: bytes | None, chunks: AsyncIterator[bytes], wire: _Wire) -> bool:
    """Write ``first`` and the rest of ``chunks``, each as its own HTTP chunk, drained before the next, then
    the terminating chunk. A stream that fails aborts the connection. Whether the connection is reusable."""
    writer = wire.writer
    chunk = first
    try:
        while chunk is not None:
            if chunk:
                writer.write(wire.chunk(chunk))
                await writer.drain()
            chunk = await anext(chunks, None)
    except (ConnectionError, asyncio.CancelledError):
        raise
    except Exception:
        writer.transport.abort()  # no terminating chunk: the client sees the cut
        return False
    writer.write(wire.end())
    await writer.drain()
    return True


def run_server(config: ServeConfig, say: Callable[[str], None] = print) -> None:
    """Build the server (its checks raise ServeError before anything is bound) and run it until a signal."""

    async def main() -> None:
        await CassetteServer(config, say).run()

    asyncio.run(main())


def cassette_files(paths: Sequence[str], recording: bool) -> tuple[Path, ...]:
    """The cassettes named on the command line, folders expanded to their ``*.jsonl``; a recording's path
    may not exist yet."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files += sorted(path.rglob("*.jsonl"))
        elif path.exists() or recording:
            files.append(path)
        else:
            raise ServeError(f"{path}: no such cassette or folder")
    if not files:
        raise ServeError(f"no cassettes in {', '.join(paths)}")
    return tuple(files)
