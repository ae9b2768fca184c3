"""``use_cassette``: every httpx and httpx2 client, sync and async, and every WebSocket the ``websockets``
clients open (``_websocket.py``), goes through a cassette inside a block.

It wraps the transport each client really uses (custom ones, openai's aiohttp one, google-genai's
per-event-loop clients), whether the client was created inside the block or before it. The patch is
installed on the first entry and removed on the last exit, on every path. A cassette belongs to the
thread or task that opened it (a context variable); a request from a thread that has none goes to the
only open cassette, and raises when several are open, since its owner can't be told.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import os
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from ._core.engine._modes import Mode
from ._core.engine._options import Options
from ._exceptions import CassetteOwnerError, UnplayedCallsWarning
from ._http import transport_choice
from ._patch import Patch
from ._session import CassetteRequest, CassetteSession, open_session
from ._stand_in_keys import STAND_INS

if TYPE_CHECKING:
    from ._core.engine._typed_options import BlockOptions

__all__ = ["PATCHER", "ClientPatcher", "use_cassette"]

F = TypeVar("F", bound=Callable[..., Any])

HTTP_LIBRARIES = ("httpx", "httpx2")
# google-genai sends its own async calls through aiohttp whenever aiohttp is importable, out of httpx's
# sight. While patched it is told aiohttp is absent, so those calls take its httpx2 client.
GENAI_API_CLIENT = "google.genai._api_client"
# The websockets clients: the connect of each (a method, so subclasses such as openai's are patched too).
WEBSOCKETS_SYNC = "websockets.sync.client"
WEBSOCKETS_ASYNC = "websockets.asyncio.client"


class _CassetteBoundTransport:
    """The transport a client gets inside the block: its own transport, seen through the cassette."""

    def __init__(self, session: CassetteSession, inner: Any) -> None:
        self.session = session
        self.inner = inner

    def handle_request(self, request: Any) -> Any:
        return self.session.handle(request, self.inner)

    async def handle_async_request(self, request: Any) -> Any:
        return await self.session.handle_async(request, self.inner)


class ClientPatcher:
    """Routes the requests of every httpx and httpx2 client to the cassette that owns them, while a cassette
    is open.

    Each open cassette is one user of a ``Patch`` (``_patch.py``): nested blocks share it, installed at the
    first ``enter`` and removed at the last ``leave``, on every path. It patches ``Client._transport_for_url``
    of both libraries, so a client's own transport (custom ones, openai's aiohttp one, google-genai's) is
    wrapped, whether the client was created before or inside the block; a library first imported while a
    cassette is open is patched as its import completes. The cassette of a request is the one its thread or
    task opened (a context variable); a request from a thread or task that opened none goes to the only open
    cassette, and raises CassetteOwnerError when several are open.
    """

    def __init__(self) -> None:
        self._active: contextvars.ContextVar[CassetteSession | None] = contextvars.ContextVar(
            "vcr_transport_cassette", default=None
        )
        self._sessions: list[CassetteSession] = []
        self._routes: dict[Callable[[Any, Any], Any], Callable[[Any, Any], Any]] = {}  # ``_routed``'s
        late: dict[str, Callable[[Patch, ModuleType], None]] = {name: self._patch_library for name in HTTP_LIBRARIES}
        late.update({GENAI_API_CLIENT: _tell_no_aiohttp, WEBSOCKETS_SYNC: self._patch_websockets})
        self._patch = Patch(self._install, late={**late, WEBSOCKETS_ASYNC: self._patch_websockets})

    def enter(self, session: CassetteSession) -> contextvars.Token[CassetteSession | None]:
        """Open ``session`` for this thread or task (one more user of the patch)."""
        with self._patch.lock:
            self._patch.start()
            self._sessions.append(session)
        return self._active.set(session)

    def leave(self, session: CassetteSession, token: contextvars.Token[CassetteSession | None]) -> None:
        """Close ``session`` for this thread or task (one user fewer: the last one removes the patch)."""
        try:
            self._active.reset(token)
        except ValueError:  # left in another context than entered (a generator moved between tasks)
            pass
        with self._patch.lock:
            self._sessions.remove(session)
            self._patch.stop()

    def session_for_request(self) -> CassetteSession | None:
        session = self._active.get()
        if session is not None:
            if session.closed:
                raise CassetteOwnerError(
                    f"a request was sent after its cassette {session.path} closed, from a task started inside "
                    "use_cassette(); finish such tasks inside the block"
                )
            return session
        open_now = list(self._sessions)
        if len(open_now) > 1:
            raise CassetteOwnerError(
                "a request came from a thread or task that opened no cassette while several are open ("
                + ", ".join(str(s.path) for s in open_now)
                + "); open the cassette in that thread, or run it in the opener's context "
                "(contextvars.copy_context())"
            )
        return open_now[0] if open_now else None

    def _install(self, patch: Patch) -> None:
        for name in HTTP_LIBRARIES:
            module = sys.modules.get(name)
            if module is None and name == "httpx2":
                import httpx2 as module
            if module is not None:
                self._patch_library(patch, module)
        genai = sys.modules.get(GENAI_API_CLIENT)
        if genai is not None:
            _tell_no_aiohttp(patch, genai)
        for name in (WEBSOCKETS_SYNC, WEBSOCKETS_ASYNC):
            module = sys.modules.get(name)
            if module is not None:
                self._patch_websockets(patch, module)

    def _patch_websockets(self, patch: Patch, module: ModuleType) -> None:
        """Route the connections a websockets client opens through the cassette of their thread or task (see
        ``_websocket.py``). The sync client: ``reconnect.connect`` (websockets 17, which its ``connect()``
        calls), else the ``connect`` function itself (13 to 16, looked up by callers when they connect, as
        openai does). The asyncio client: the method that opens a ``connect`` object's connection (awaiting
        it, or ``async with``), ``connect`` (17) or ``__await_impl__`` (13 to 16), so subclasses are
        patched too."""
        from . import _websocket

        if module.__name__ == WEBSOCKETS_SYNC:
            reconnect = getattr(module, "reconnect", None)
            if reconnect is not None and "connect" in vars(reconnect):
                method = reconnect.connect

                @functools.wraps(method)
                def connect(connecter: Any) -> Any:
                    session = self.session_for_request()
                    if session is None:
                        return method(connecter)
                    return _websocket.open_sync(session, connecter, method)

                patch.replace(reconnect, "connect", connect)
                return
            function = module.connect

            @functools.wraps(function)
            def connect_function(uri: str, **arguments: Any) -> Any:
                session = self.session_for_request()
                if session is None:
                    return function(uri, **arguments)
                call = _websocket.ConnectCall(uri, arguments)
                return _websocket.open_sync(session, call, lambda _: function(uri, **arguments))

            patch.replace(module, "connect", connect_function)
            return
        cls = module.connect
        name = "connect" if "connect" in vars(cls) else "__await_impl__"
        opening = getattr(cls, name)

        @functools.wraps(opening)
        async def connect_async(connecter: Any) -> Any:
            session = self.session_for_request()
            if session is None:
                return await opening(connecter)
            connection = await _websocket.open_async(session, connecter, opening)
            if name == "__await_impl__":
                connecter.connection = connection  # what its __aexit__ closes (13 to 16)
            return connection

        patch.replace(cls, name, connect_async)

    def _patch_library(self, patch: Patch, module: ModuleType) -> None:
        for cls in (module.Client, module.AsyncClient):
            name, choose = transport_choice(cls)
            patch.replace(cls, name, self._routed(choose))

    def _routed(self, original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """The client method routed to the cassette, made once for each original (every test's cassette
        installs it)."""
        routed = self._routes.get(original)
        if routed is None:
            routed = self._routes[original] = self._new_route(original)
        return routed

    def _new_route(self, original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        @functools.wraps(original)
        def transport_for_url(client: Any, url: Any) -> Any:
            real = original(client, url)
            session = self.session_for_request()
            return real if session is None else _CassetteBoundTransport(session, real)

        return transport_for_url


def _tell_no_aiohttp(patch: Patch, genai: ModuleType) -> None:
    if getattr(genai, "has_aiohttp", False):
        patch.replace(genai, "has_aiohttp", False)


PATCHER = ClientPatcher()


class use_cassette:  # noqa: N801 - reads as a function, like contextlib's
    """Route every httpx/httpx2 client through a cassette inside a ``with`` block, ``async with`` block or
    decorated function.

    It takes every option of ``vcr_transport.Options``, as keyword arguments or as ``options=Options(...)``.
    ``mode`` wins over the pytest option, ``VCR_TRANSPORT_MODE``, ``[tool.vcr_transport]`` and the default
    ``auto``. On exit the first replay mismatch that the code inside swallowed is raised again, unless
    ``caught_mismatch="ignore"``; then ``unplayed`` decides what recorded-but-unplayed calls do: ``"error"``
    (default), ``"warn"``, ``"ignore"``, or ``"partial"`` (an error only when some calls were played and some
    not). ``missing_ok_unused``: a missing cassette no request asked for is not an error at exit (the first
    request still raises it). ``block_network=True`` (or ``"session"``, which only the pytest plugin reads
    otherwise) turns the network guard (``_guard.NetworkGuard``) on for the block when the mode is replay;
    ``allowed_hosts`` (host globs, ``_core/rules/_hosts.py``) stay reachable through it. While the block replays,
    the SDKs' unset credential variables hold a fake key (``_stand_in_keys.py``): a replay needs no key.
    ``requests`` and ``play_count`` show what was replayed or recorded.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: Mode | None = None,
        options: Options | None = None,
        **arguments: Unpack[BlockOptions],
    ) -> None:
        self.path = path
        given = Options.of(options, arguments, where="use_cassette()", entry="block")
        self.options = given if mode is None else given.overridden(mode=mode)
        self._guard: Any = None
        self._stand_ins: Patch | None = None
        self.session: CassetteSession | None = None
        self._token: contextvars.Token[CassetteSession | None] | None = None

    @property
    def mode(self) -> str:
        """The concrete mode in force (after ``auto`` was decided), once entered."""
        return self.session.mode if self.session else "unopened"

    def __enter__(self) -> use_cassette:
        self.session = open_session(self.path, self.options.mode, self.options)
        self._token = PATCHER.enter(self.session)
        if self.session.mode == "replay":
            try:
                self._stand_ins = STAND_INS.start()  # a replay sends no key: the SDKs get a fake one to start with
                self._start_guard(self.session.options)  # the options with [tool.vcr_transport] merged
            except BaseException as error:
                self.close(check=False, failure=error)
                raise
        return self

    def _start_guard(self, options: Options) -> None:
        if options.block_network:
            from ._guard import NetworkGuard

            self._guard = NetworkGuard(options.allowed_hosts).start()

    @property
    def guarded(self) -> bool:
        """Whether the network guard is on for this block (entered, replaying, ``block_network``)."""
        return self._guard is not None

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        self.close(check=exc_type is None, failure=exc if isinstance(exc, BaseException) else None)

    def close(self, *, check: bool = True, failure: BaseException | None = None) -> None:
        """Leave the block: restore, commit a recording (not when ``failure`` ended the block); with
        ``check``, report what the block missed."""
        session = self.session
        assert session is not None and self._token is not None
        guard, self._guard = self._guard, None
        stand_ins, self._stand_ins = self._stand_ins, None
        if guard is not None:
            guard.stop()
        try:
            PATCHER.leave(session, self._token)
        finally:
            try:
                if stand_ins is not None:
                    stand_ins.stop()
            finally:
                session.close(failure)
        if check:
            self.check()

    async def __aenter__(self) -> use_cassette:
        return self.__enter__()

    async def __aexit__(self, exc_type: object, exc: object, traceback: object) -> None:
        self.__exit__(exc_type, exc, traceback)

    def check(self) -> None:
        """Raise what mode check found (ShapeDriftError: the live answers whose shape changed); the first
        mismatch the code inside swallowed (unless ``caught_mismatch="ignore"``); then report unplayed calls as
        configured."""
        session = self.session
        if session is None:
            return
        session.raise_if_broken(unless_missing_and_unused=session.options.missing_ok_unused)
        drift = session.checker.error() if session.checker is not None else None
        if drift is not None:
            raise drift
        if session.first_mismatch is not None and session.options.caught_mismatch == "raise":
            raise session.first_mismatch
        action = session.options.unplayed
        if action == "partial" and not any(request.play_count for request in session.requests):
            return  # none of the calls was played: a test that took another path
        error = session.unplayed_error() if action != "ignore" else None
        if error is not None:
            if action in ("error", "partial"):
                raise error
            warnings.warn(str(error), UnplayedCallsWarning, stacklevel=3)

    @property
    def requests(self) -> list[CassetteRequest]:
        """Like vcrpy's ``cassette.requests``: each recorded request (method, url, headers, body) with its
        ``play_count``, then the requests recorded in this block; empty before the block is entered."""
        return self.session.requests if self.session is not None else []

    @property
    def play_count(self) -> int:
        """How many recorded calls were replayed, like vcrpy's ``cassette.play_count``."""
        return sum(request.play_count for request in self.requests)

    @property
    def all_played(self) -> bool:
        """Whether every recorded call was replayed, like vcrpy's ``cassette.all_played``."""
        return self.session is not None and not self.session.unplayed_calls()

    def _fresh(self) -> use_cassette:
        return use_cassette(self.path, options=self.options)

    def __call__(self, function: F) -> F:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                async with self._fresh():
                    return await function(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self._fresh():
                return function(*args, **kwargs)

        return run  # type: ignore[return-value]
