"""The HTTP library (httpx or httpx2) as a value: what a request came from, and building that library's
requests, streams, responses and exceptions. The one module that knows how httpx and httpx2 objects are
made: the others ask it."""

from __future__ import annotations

import builtins
import functools
import sys
from types import ModuleType
from typing import Any

from ._core._memo import Memo
from ._display import visible
from ._exceptions import RecordedError

__all__ = [
    "stainless_sender_lets_exceptions_through",
    "transport_choice",
    "body_already_read",
    "convert_error",
    "error_name",
    "forwarded_request",
    "header_pairs",
    "library_of",
    "http_version",
    "rebuild_error",
    "response_in",
    "stream_class",
    "transport_library",
]

HTTP_LIBRARIES = ("httpx", "httpx2")


def _loaded_libraries() -> list[ModuleType]:
    return [module for module in map(sys.modules.get, HTTP_LIBRARIES) if module is not None]


# Classes are compared by identity: SDKs re-export httpx2 classes and rewrite their __module__. A class's
# library (and bases) never change: each is found once per class.
_library_of_class: Memo[type, ModuleType] = Memo(256)
_transport_library_of_class: Memo[type, ModuleType | None] = Memo(256)


def library_of(obj: object) -> ModuleType:
    """The httpx or httpx2 module whose Request or Response ``obj`` is."""
    return _library_of_class.get(type(obj), lambda: _find_library(obj))


def _find_library(obj: object) -> ModuleType:
    for library in _loaded_libraries():
        if isinstance(obj, library.Request | library.Response):
            return library
    raise TypeError(f"expected an httpx or httpx2 request or response, got {type(obj).__qualname__}")


def transport_library(transport: object) -> ModuleType | None:
    """The library whose transport base class ``transport`` derives from; None for duck-typed transports."""
    return _transport_library_of_class.get(type(transport), lambda: _find_transport_library(transport))


def _find_transport_library(transport: object) -> ModuleType | None:
    for library in _loaded_libraries():
        if isinstance(transport, library.BaseTransport | library.AsyncBaseTransport):
            return library
    return None


def forwarded_request(request: Any, library: ModuleType | None, *, plain: bool) -> Any:
    """``request`` (read) as it is sent on to an inner transport of ``library`` (None: a duck-typed one,
    which gets the request's own library): the same object when nothing changes, else built by that
    library's Request, asking for an uncompressed response (``accept-encoding: identity``, in the place of
    the one there or last) when ``plain``. The build adds what the library adds to any request (``Host``, the
    body's length) where they are missing; a body sent chunked is given as an iterator, so it stays chunked
    (given as bytes, httpx 0.28 would add a ``Content-Length`` beside the ``Transfer-Encoding``). The caller's
    request object is left as it is."""
    own = library_of(request)
    library = library or own
    if not plain and library is own:
        return request
    headers = request.headers.raw
    if plain:
        identity = (b"accept-encoding", b"identity")
        headers = [identity if name.lower() == b"accept-encoding" else (name, value) for name, value in headers]
        if identity not in headers:
            headers.append(identity)
    chunked = any(name.lower() == b"transfer-encoding" for name, _ in headers)
    forwarded = library.Request(
        request.method,
        request.url if library is own else str(request.url),
        headers=headers,
        content=iter([request.content]) if chunked else request.content,
        extensions=request.extensions,
    )
    forwarded.read()  # a chunked body, read again into the bytes it came as
    return forwarded


def body_already_read(response: Any) -> bytes | None:
    """The body of a response its transport handed back already read (``httpx2.MockTransport``, a Response
    built with ``content=``), or None for a stream not read yet. Such a response gives ``.content`` without
    iterating its stream, so a recorder takes the body from there."""
    if not response.is_stream_consumed:
        return None
    try:
        return response.content  # type: ignore[no-any-return]
    except library_of(response).ResponseNotRead:  # consumed without being read: it has no body to give
        return None


def response_in(library: ModuleType, response: Any, stream: Any = None) -> Any:
    """``response`` as a Response of ``library``, its stream replaced by ``stream`` when one is given (else its
    body is read already): the same object when it already is one, else built from its status, raw headers,
    extensions and body."""
    if library_of(response) is library:
        if stream is not None:
            response.stream = stream
        return response
    body = {"content": response.content} if stream is None else {"stream": stream}
    return library.Response(response.status_code, headers=response.headers.raw, extensions=response.extensions, **body)


def http_version(response: Any) -> str:
    """The HTTP version a transport's response says it came over (``HTTP/1.1`` when it doesn't say)."""
    version = response.extensions.get("http_version", b"HTTP/1.1")
    return str(version.decode("ascii", "replace") if isinstance(version, bytes) else version)


@functools.cache
def stream_class(library: ModuleType, base: type) -> type:
    """``base`` made an instance of ``library``'s SyncByteStream and AsyncByteStream, as clients assert.
    Made once per library and base (a class per response would cost more than the response)."""
    return type(base.__name__, (base, library.SyncByteStream, library.AsyncByteStream), {"__module__": base.__module__})


def _error_library(exc: BaseException) -> ModuleType | None:
    name = type(exc).__name__
    for library in _loaded_libraries():
        if getattr(library, name, None) is type(exc):
            return library
    return None


def error_name(exc: BaseException) -> str:
    """``httpx2.ReadError``, ``builtins.OSError``, ``aiohttp.client_exceptions.X``: what replay rebuilds."""
    library = _error_library(exc)
    module = library.__name__ if library is not None else type(exc).__module__
    return f"{module}.{type(exc).__qualname__}"


def rebuild_error(library: ModuleType, class_name: str, message: str, request: Any) -> BaseException:
    """The recorded exception as the same class of the caller's library, or a builtin, or RecordedError; its
    message ``visible`` (a traceback prints it)."""
    root, _, name = class_name.rpartition(".")
    message = visible(message, newlines=True)
    try:
        if root in HTTP_LIBRARIES:
            cls = getattr(library, name, None)
            if isinstance(cls, type) and issubclass(cls, library.RequestError):
                return cls(message, request=request)  # type: ignore[no-any-return]
            if isinstance(cls, type) and issubclass(cls, Exception):
                return cls(message)
        if root == "builtins":
            cls = getattr(builtins, name, None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                return cls(message)
    except TypeError:  # a class that is not built from a message alone (UnicodeDecodeError, HTTPStatusError)
        pass
    return RecordedError(class_name, message)


def convert_error(exc: BaseException, library: ModuleType, request: Any) -> BaseException:
    """An exception of the other HTTP library, as the caller's library's class of the same name."""
    source = _error_library(exc)
    if source is not None and source is not library:
        return rebuild_error(library, error_name(exc), str(exc), request)
    return exc


def header_pairs(headers: Any) -> list[tuple[str, str]]:
    """Raw header pairs, original case and order kept, decoded as latin-1."""
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers.raw]


def stainless_sender_lets_exceptions_through() -> bool:
    """Whether the Stainless ``_base_client`` in the call stack (sync frames, or the awaiting coroutines)
    retries only transport errors. False when none is found: the error response is then the safe answer.
    Reads the frames' globals: the SDK's private module, as only this module may."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if isinstance(module, str) and module.endswith("._base_client"):
            return "request_exceptions" in frame.f_globals
        frame = frame.f_back  # type: ignore[assignment]
    return False


def transport_choice(cls: type) -> tuple[str, Any]:
    """The name and function of the client method (private to httpx and httpx2) that picks the transport a
    request to a URL goes through, which ``use_cassette`` routes: ``Client._transport_for_url``."""
    return "_transport_for_url", cls.__dict__["_transport_for_url"]
