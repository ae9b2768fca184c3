"""The HTTP library (httpx or httpx2) as a value: what a request came from, and building that library's
streams, responses and exceptions."""

from __future__ import annotations

import builtins
import functools
import sys
from types import ModuleType
from typing import Any

from ._exceptions import RecordedError

__all__ = [
    "convert_error",
    "error_name",
    "header_pairs",
    "library_of",
    "rebuild_error",
    "stream_class",
    "transport_library",
]

HTTP_LIBRARIES = ("httpx", "httpx2")


def _loaded_libraries() -> list[ModuleType]:
    return [module for module in map(sys.modules.get, HTTP_LIBRARIES) if module is not None]


# Classes are compared by identity: SDKs re-export httpx2 classes and rewrite their __module__.
def library_of(obj: object) -> ModuleType:
    """The httpx or httpx2 module whose Request or Response ``obj`` is."""
    library = _library_of_class.get(type(obj))  # a class's library never changes: found once per class
    if library is not None:
        return library
    for library in _loaded_libraries():
        if isinstance(obj, library.Request | library.Response):
            _library_of_class[type(obj)] = library
            return library
    raise TypeError(f"expected an httpx or httpx2 request or response, got {type(obj).__qualname__}")


_library_of_class: dict[type, ModuleType] = {}


def transport_library(transport: object) -> ModuleType | None:
    """The library whose transport base class ``transport`` derives from; None for duck-typed transports."""
    kind = type(transport)
    if kind in _transport_library_of_class:  # a class's bases never change: found once per class
        return _transport_library_of_class[kind]
    found = None
    for library in _loaded_libraries():
        if isinstance(transport, library.BaseTransport | library.AsyncBaseTransport):
            found = library
            break
    _transport_library_of_class[kind] = found
    return found


_transport_library_of_class: dict[type, ModuleType | None] = {}


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
    """The recorded exception as the same class of the caller's library, or a builtin, or RecordedError."""
    root, _, name = class_name.rpartition(".")
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
    """Raw header pairs, original case and order kept, decoded as latin-1. Read from the (raw name, lower
    name, value) list that httpx and httpx2 ``Headers`` keep, rather than through ``.raw``, which builds a
    list first; any other headers object through ``.raw``."""
    triples = getattr(headers, "_list", None)
    if type(triples) is not list:
        return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers.raw]
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, _, value in triples]
