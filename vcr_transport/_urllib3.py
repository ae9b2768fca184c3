"""urllib3 (and so ``requests``) answered from the open cassette: the calls vcrpy recorded from those clients,
replayed in the pytest-recording compatibility mode (``_compat.py``), where vcrpy users expect them.

vcrpy patches urllib3 (its ``HTTPConnectionPool``'s connection classes, ``vcr/patch.py``), so a vcrpy cassette
may hold a ``requests`` call beside an SDK's; an imported cassette doesn't say which client made a call, and
any recorded HTTP call can answer either. While ``URLLIB3_REPLAY`` is started, the connection pool's
``urlopen`` (which ``requests``, ``PoolManager`` and a bare pool all go through, HTTPS pools included) asks
the cassette that owns the request's thread or task (``_context.PATCHER``), as an httpx request does:

- **Replay** (``CassetteSession.replayed_call``): the same engine, matching and ordering as the httpx calls
  choose the call; the answer is a ``urllib3.HTTPResponse`` of the recorded status, headers and bytes (read
  at once or streamed, as ``preload_content`` says; a recorded ``content-encoding`` decoded as urllib3 decodes
  it, when ``decode_content``). No connection is taken from the pool: no socket is opened, no name looked
  up. A miss raises the same ``ReplayMismatch``, in every mode; an unreadable cassette raises its
  diagnostic.
- **Everything else goes on to urllib3 as before**, unrecorded: a recording mode (urllib3 calls are replayed,
  never recorded: re-record those with vcrpy, or send them through httpx), mode off, an ignored host, a
  thread or task with no cassette. The network guard, on while a cassette replays, then refuses what it
  does not allow.

Limits: the answer is the recorded one, never a redirect followed by the pool itself (``requests`` and
``PoolManager`` follow redirects above the pool, through this same ``urlopen``); faults and ``pace`` are the
httpx transports' alone.
"""

from __future__ import annotations

import functools
import http
import http.client
import inspect
import io
import sys
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from ._core.format._format import RecordedCall
from ._exceptions import RecordedError
from ._patch import Patch

__all__ = ["URLLIB3_REPLAY"]

POOL_MODULE = "urllib3.connectionpool"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _install(patch: Patch) -> None:
    module = sys.modules.get(POOL_MODULE)
    if module is not None:
        _patch_pool(patch, module)


def _patch_pool(patch: Patch, module: ModuleType) -> None:
    """Route ``HTTPConnectionPool.urlopen`` (public API, urllib3 1.26 to 2.x; ``HTTPSConnectionPool``
    inherits it) through the cassette of the request's thread or task."""
    from ._context import PATCHER  # lazily: _context is loaded by the first cassette, before this

    cls = module.HTTPConnectionPool
    original = cls.urlopen
    signature = inspect.signature(original)

    @functools.wraps(original)
    def urlopen(pool: Any, *args: Any, **kwargs: Any) -> Any:
        session = PATCHER.session_for_request()
        if session is None:
            return original(pool, *args, **kwargs)
        bound = signature.bind(pool, *args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        method = str(given["method"]).upper()
        url = _absolute_url(pool, str(given["url"]))
        headers = [(str(name), str(value)) for name, value in dict(given["headers"] or {}).items()]
        call = session.replayed_call(method, url, headers, _body_bytes(given["body"]))
        if call is None:
            return original(pool, *args, **kwargs)
        assert session.replayer is not None
        return _response(call, session.replayer.headers_of(call), method, url, given)

    patch.replace(cls, "urlopen", urlopen)


def _absolute_url(pool: Any, url: str) -> str:
    """The request's URL: a pool is given a path (or, through a proxy, the whole URL); its own scheme, host
    and port come first, the port left out when it is the scheme's default."""
    if urlsplit(url).scheme:
        return url
    scheme = str(pool.scheme)
    host = str(pool.host)
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    port = f":{pool.port}" if pool.port and pool.port != _DEFAULT_PORTS.get(scheme) else ""
    return f"{scheme}://{host}{port}{url if url.startswith('/') else '/' + url}"


def _body_bytes(body: Any) -> bytes:
    """The request body as bytes: given as bytes or text, a file (read), or an iterable of chunks (joined)."""
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    if hasattr(body, "read"):
        return _body_bytes(body.read())
    return b"".join(_body_bytes(chunk) for chunk in body)


class _RecordedMessage:
    """The ``original_response`` a replayed answer stands on: its headers as ``http.client`` gives them
    (``requests`` fills its cookie jar from ``msg``), closed with the body."""

    def __init__(self, headers: list[tuple[str, str]], body: io.BytesIO) -> None:
        self.msg = http.client.HTTPMessage()
        for name, value in headers:
            self.msg[name] = value  # a Message adds a header each time: repeated names kept
        self._body = body

    def close(self) -> None:
        self._body.close()

    def isclosed(self) -> bool:
        return self._body.closed


def _response(call: RecordedCall, headers: list[tuple[str, str]], method: str, url: str, given: dict[str, Any]) -> Any:
    """The recorded answer as ``urllib3.HTTPResponse``; a recorded failure raised as RecordedError. The body
    is whole, so a recorded ``transfer-encoding`` is left out (as vcrpy does)."""
    from urllib3.response import HTTPResponse

    if call.status is None:
        raise RecordedError(call.error_class, call.error_message)
    kept = [(name, value) for name, value in headers if name.lower() != "transfer-encoding"]
    retries = given.get("retries")
    body = io.BytesIO(b"".join(call.events))
    try:
        reason = http.HTTPStatus(call.status).phrase
    except ValueError:
        reason = ""
    return HTTPResponse(
        body=body,
        headers=kept,  # type: ignore[arg-type]  # pairs keep repeated names: HTTPHeaderDict(pairs), 1.26 and 2.x
        status=call.status,
        version=11,
        reason=reason,
        preload_content=bool(given.get("preload_content", True)),
        decode_content=bool(given.get("decode_content", True)),
        original_response=_RecordedMessage(kept, body),  # type: ignore[arg-type]  # what is read of it
        retries=retries if hasattr(retries, "history") else None,  # a Retry (a number is the pool's to read)
        request_method=method,
        request_url=url,
    )


# The one patch of urllib3: started by each compat-mode cassette (nested users counted, restored on every path);
# urllib3 imported later, while it is in place, is patched as its import completes.
URLLIB3_REPLAY = Patch(_install, late={POOL_MODULE: _patch_pool})
