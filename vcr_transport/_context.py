"""``use_cassette``: every httpx and httpx2 client, sync and async, goes through a cassette inside a block.

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
import threading
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from ._exceptions import CassetteOwnerError, UnplayedCallsError, UnplayedCallsWarning
from ._session import CassetteSession, open_session

__all__ = ["use_cassette"]

F = TypeVar("F", bound=Callable[..., Any])

UNPLAYED_ACTIONS = ("error", "warn", "ignore")

_active: contextvars.ContextVar[CassetteSession | None] = contextvars.ContextVar("vcr_transport_cassette", default=None)
_open_sessions: list[CassetteSession] = []
_patch_lock = threading.Lock()
_originals: dict[tuple[type, str], Any] = {}


class _Bound:
    """The transport a client gets inside the block: its own transport, seen through the cassette."""

    def __init__(self, session: CassetteSession, inner: Any) -> None:
        self.session = session
        self.inner = inner

    def handle_request(self, request: Any) -> Any:
        return self.session.handle(request, self.inner)

    async def handle_async_request(self, request: Any) -> Any:
        return await self.session.handle_async(request, self.inner)


def _owner() -> CassetteSession | None:
    session = _active.get()
    if session is not None:
        if session.closed:
            raise CassetteOwnerError(
                f"a request was sent after its cassette {session.path} closed, from a task started inside "
                "use_cassette(); finish such tasks inside the block"
            )
        return session
    open_now = list(_open_sessions)
    if len(open_now) > 1:
        raise CassetteOwnerError(
            "a request came from a thread or task that opened no cassette while several are open ("
            + ", ".join(str(s.path) for s in open_now)
            + "); open the cassette in that thread, or run it in the opener's context (contextvars.copy_context())"
        )
    return open_now[0] if open_now else None


def _patched(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    @functools.wraps(original)
    def transport_for_url(client: Any, url: Any) -> Any:
        real = original(client, url)
        session = _owner()
        return real if session is None else _Bound(session, real)

    return transport_for_url


def _client_classes() -> list[type]:
    classes = []
    for name in ("httpx", "httpx2"):
        module = sys.modules.get(name)
        if module is None and name == "httpx2":
            import httpx2 as module
        if module is not None:
            classes += [module.Client, module.AsyncClient]
    return classes


# google-genai sends its own async calls through aiohttp whenever aiohttp is importable, out of httpx's
# sight. Inside the block it is told aiohttp is absent, so those calls take its httpx2 client.
_GENAI_API_CLIENT = "google.genai._api_client"
_told_no_aiohttp: list[ModuleType] = []


def _install() -> None:
    with _patch_lock:
        if not _originals:
            for cls in _client_classes():
                _originals[(cls, "_transport_for_url")] = cls.__dict__["_transport_for_url"]
                cls._transport_for_url = _patched(cls.__dict__["_transport_for_url"])  # type: ignore[attr-defined]
            genai = sys.modules.get(_GENAI_API_CLIENT)
            if genai is not None and getattr(genai, "has_aiohttp", False):
                _told_no_aiohttp.append(genai)
                setattr(genai, "has_aiohttp", False)  # noqa: B010 - a module attribute mypy can't see


def _uninstall() -> None:
    with _patch_lock:
        if not _open_sessions:
            for (cls, name), original in _originals.items():
                setattr(cls, name, original)
            _originals.clear()
            for module in _told_no_aiohttp:
                setattr(module, "has_aiohttp", True)  # noqa: B010
            _told_no_aiohttp.clear()


class use_cassette:  # noqa: N801 - reads as a function, like contextlib's
    """Route every httpx/httpx2 client through a cassette inside a ``with`` block, ``async with`` block or
    decorated function.

    ``mode`` wins over the pytest option, ``VCR_TRANSPORT_MODE``, ``[tool.vcr_transport]`` and the default
    ``auto``. ``unplayed`` decides what recorded-but-unplayed calls do at exit: ``"warn"`` (default),
    ``"error"`` or ``"ignore"``. Other options are ReplayTransport's. On exit a replay mismatch that an SDK
    swallowed is raised again.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: str | None = None,
        unplayed: str = "warn",
        pytest_option: str | None = None,
        **options: Any,
    ) -> None:
        if unplayed not in UNPLAYED_ACTIONS:
            raise ValueError(f"unplayed must be one of {', '.join(UNPLAYED_ACTIONS)}, not {unplayed!r}")
        self.path = path
        self.requested_mode = mode
        self.unplayed = unplayed
        self.pytest_option = pytest_option
        self.options = options
        self.session: CassetteSession | None = None
        self._token: contextvars.Token[CassetteSession | None] | None = None

    @property
    def mode(self) -> str:
        """The concrete mode in force (after ``auto`` was decided), once entered."""
        return self.session.mode if self.session else "unopened"

    def __enter__(self) -> use_cassette:
        session = open_session(self.path, self.requested_mode, self.options, pytest_option=self.pytest_option)
        self.session = session
        with _patch_lock:
            _open_sessions.append(session)
        self._token = _active.set(session)
        _install()
        return self

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        self.close(check=exc_type is None, failure=exc if isinstance(exc, BaseException) else None)

    def close(self, *, check: bool = True, failure: BaseException | None = None) -> None:
        """Leave the block: restore, commit a recording (not when ``failure`` ended the block); with
        ``check``, report what the block missed."""
        session = self.session
        assert session is not None and self._token is not None
        try:
            _active.reset(self._token)
        except ValueError:  # exited in another context than entered (a generator moved between tasks)
            pass
        with _patch_lock:
            _open_sessions.remove(session)
        try:
            _uninstall()
        finally:
            session.close(failure)
        if check:
            self.check()

    async def __aenter__(self) -> use_cassette:
        return self.__enter__()

    async def __aexit__(self, exc_type: object, exc: object, traceback: object) -> None:
        self.__exit__(exc_type, exc, traceback)

    def check(self) -> None:
        """Raise the first mismatch an SDK swallowed; then report unplayed calls as configured."""
        session = self.session
        if session is None:
            return
        session.raise_if_broken()
        if session.first_mismatch is not None:
            raise session.first_mismatch
        unplayed = session.unplayed_calls()
        if unplayed and self.unplayed != "ignore":
            error = UnplayedCallsError(str(session.path), unplayed)
            if self.unplayed == "error":
                raise error
            warnings.warn(str(error), UnplayedCallsWarning, stacklevel=3)

    def _fresh(self) -> use_cassette:
        return use_cassette(
            self.path,
            mode=self.requested_mode,
            unplayed=self.unplayed,
            pytest_option=self.pytest_option,
            **self.options,
        )

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
