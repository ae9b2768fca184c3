"""The network guard: while it is on, every in-process route to a non-loopback address raises
``NetworkBlockedError`` before anything leaves the machine.

What it covers, in this process and in every thread of it:

- ``connect``, ``connect_ex``, ``sendto`` (UDP, and TCP Fast Open's ``MSG_FASTOPEN``) and ``sendmsg`` with an
  address, for every address form CPython accepts (``str``, ``bytes`` or ``bytearray`` hosts, IPv4, IPv6,
  IPv4-mapped IPv6, host names). They are guarded on ``socket.socket`` (so on ``ssl.SSLSocket`` and every
  other subclass), and on the C class ``_socket.socket``: its methods can't be patched, so while the guard
  is on ``_socket.socket`` (and ``SocketType``) is a guarded subclass, and ``socket.socket`` is a subclass
  that puts that guarded class between itself and the C class, which catches ``super(socket.socket, s)``.
- DNS: ``getaddrinfo``, ``gethostbyname``, ``gethostbyname_ex``, ``gethostbyaddr`` and ``getnameinfo``, in
  both the ``socket`` and ``_socket`` modules. ``localhost`` and ``*.localhost`` are answered here with
  127.0.0.1 and ::1, never by the real resolver; any other name is blocked, and so is a numeric address
  beyond loopback.
- asyncio, which goes through the above (``sock_connect``, ``create_connection``,
  ``create_datagram_endpoint``, ``getaddrinfo`` in the executor).

What it can't reach: subprocesses, C extensions that open their own sockets, a socket object that was
created from the original classes before the guard started and is then driven through
``super(original_socket_class, s)``, and connections already open when it starts.

Loopback (127.0.0.0/8, ::1, the unspecified address, which means this host) and AF_UNIX / AF_NETLINK
sockets stay open. Guards nest: they share one ``Patch`` (``_patch.py``), which the first ``start()``
installs and the last ``stop()`` restores in full.

**Allowed hosts** (``NetworkGuard(allowed_hosts=[...])``, pytest-recording's ``--allowed-hosts``): regular
expressions matched, as pytest-recording matches them (``re.match``: from the start of the text), against the
host a route names, a name or a numeric address. A name that matches is looked up by the real resolver, and
the addresses it resolved to are reachable too (a client connects to the address, not the name). While several
guards are on, a route passes only when every one of them allows it: a guard never opens what another blocks.
"""

from __future__ import annotations

import _socket
import dataclasses
import ipaddress
import re
import socket
import threading
from collections.abc import Iterable
from typing import Any

from ._core._options import compile_patterns
from ._exceptions import NetworkBlockedError
from ._patch import Patch

__all__ = ["NetworkGuard", "network_blocked_message"]

_C_SOCKET: type = _socket.socket
_PY_SOCKET: type = socket.socket
_PY_GETADDRINFO = socket.getaddrinfo
_LOCAL_FAMILIES = frozenset(getattr(socket, name) for name in ("AF_UNIX", "AF_NETLINK") if hasattr(socket, name))
_INET_FAMILIES = frozenset({socket.AF_INET, socket.AF_INET6})
_DNS_FUNCTIONS = ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo")
_SOCKET_METHODS = ("connect", "connect_ex", "sendto", "sendmsg")

# The functions the guard lets an allowed call through to: the C ones, looked up at call time so that a
# test can put a tripwire in their place.
_REAL: dict[str, Any] = {name: getattr(_socket, name) for name in _DNS_FUNCTIONS}
_REAL.update({name: getattr(_C_SOCKET, name) for name in _SOCKET_METHODS})

_lock = threading.RLock()  # guards _starts


@dataclasses.dataclass(eq=False)
class _Start:
    """One start of a guard in force: what it allows beyond loopback, and why it blocks the rest."""

    allowed: tuple[re.Pattern[str], ...]
    reason: str
    resolved: set[str] = dataclasses.field(default_factory=set)  # addresses an allowed name resolved to

    def allows(self, host: str) -> bool:
        return host.split("%", 1)[0] in self.resolved or any(pattern.match(host) for pattern in self.allowed)


_starts: list[_Start] = []  # every start in force, innermost last

_LOCALHOST_V4 = "127.0.0.1"
_LOCALHOST_V6 = "::1"


def network_blocked_message(what: str, reason: str = "replay mode", allowed: Iterable[str] = ()) -> str:
    """The message of a blocked route: what was blocked, why it can't be recorded, what to do instead."""
    hosts = ", ".join(allowed)
    reachable = "loopback (127.0.0.1, ::1, localhost)" + (f" and the allowed hosts ({hosts})" if hosts else "")
    return (
        f"{what} was blocked by vcr_transport's network guard ({reason}): nothing beyond {reachable} is "
        "reachable, and no packet was sent. Requests through httpx or httpx2 are "
        "answered from the cassette and never open a socket, so this traffic comes from something a cassette "
        "can't hold (urllib, requests, a raw socket, DNS, another client): mock it in the test, or point it to "
        "a server on 127.0.0.1"
    )


def _blocked(what: str, host: str | None = None) -> NetworkBlockedError:
    """The error for a blocked route, naming the guard that refused it (the first whose rules don't allow
    ``host``)."""
    refusing = next((start for start in list(_starts) if host is None or not start.allows(host)), None)
    if refusing is None:
        return NetworkBlockedError(network_blocked_message(what))
    allowed = [pattern.pattern for pattern in refusing.allowed]
    return NetworkBlockedError(network_blocked_message(what, refusing.reason, allowed))


def _allowed(host: str | None) -> bool:
    """Whether every guard in force allows ``host`` beyond loopback."""
    starts = list(_starts)
    return host is not None and bool(starts) and all(start.allows(host) for start in starts)


def _note_resolved(addresses: Iterable[str]) -> None:
    """An allowed name resolved to these addresses: connecting to them is allowed by every guard in force."""
    found = {address.split("%", 1)[0] for address in addresses}
    with _lock:
        for start in _starts:
            start.resolved |= found


def _host_text(host: object) -> str | None:
    """A host as text, or None when it is of no form a socket accepts."""
    if isinstance(host, str):
        return host
    if isinstance(host, bytes | bytearray):
        try:
            return bytes(host).decode("ascii")
        except UnicodeDecodeError:
            return None
    return None


def _is_localhost_name(text: str) -> bool:
    name = text.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def _is_local_address(text: str) -> bool | None:
    """True for a numeric loopback or unspecified address, False for any other numeric one, None for a name."""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def _local_host(host: object) -> str | None:
    """'name' for a localhost name, 'address' for a local numeric address, None when it must be blocked."""
    text = _host_text(host)
    if text is None:
        return None
    if text == "":
        return "address"  # INADDR_ANY: this host
    local = _is_local_address(text)
    if local is None:
        return "name" if _is_localhost_name(text) else None
    return "address" if local else None


def _checked_address(sock: Any, address: Any, route: str) -> Any:
    """The address to hand to the real call (a localhost name replaced by its loopback address), or raise."""
    if not _active():
        return address
    family = sock.family
    if family in _LOCAL_FAMILIES:
        return address
    if family not in _INET_FAMILIES:
        raise _blocked(f"{route} on a socket of family {family!r} to {address!r}")
    if not isinstance(address, tuple) or len(address) < 2:
        raise _blocked(f"{route} to {address!r}")
    host = address[0]
    kind = _local_host(host)
    if kind is None:
        text = _host_text(host)
        if _allowed(text):
            return address
        raise _blocked(f"a connection ({route}) to {host!r}:{address[1]}", text)
    if kind == "name":
        numeric = _LOCALHOST_V6 if family == socket.AF_INET6 else _LOCALHOST_V4
        return (numeric, *address[1:])
    return address


def _active() -> bool:
    return _PATCH.users > 0


# --- the guarded socket methods -----------------------------------------------------------------------


def _connect(self: Any, address: Any) -> Any:
    return _REAL["connect"](self, _checked_address(self, address, "connect"))


def _connect_ex(self: Any, address: Any) -> Any:
    return _REAL["connect_ex"](self, _checked_address(self, address, "connect_ex"))


def _sendto(self: Any, data: Any, *args: Any) -> Any:
    if not args:
        return _REAL["sendto"](self, data)  # the C method says what is missing
    *flags, address = args
    return _REAL["sendto"](self, data, *flags, _checked_address(self, address, "sendto"))


def _sendmsg(self: Any, buffers: Any, *args: Any) -> Any:
    if len(args) >= 3 and args[2] is not None:
        args = (*args[:2], _checked_address(self, args[2], "sendmsg"), *args[3:])
    return _REAL["sendmsg"](self, buffers, *args)


_GUARDED_METHODS = {"connect": _connect, "connect_ex": _connect_ex, "sendto": _sendto, "sendmsg": _sendmsg}


class _ActsAsReal(type):
    """isinstance and issubclass answer for the class a guarded one stands in for, so that sockets created
    before the guard started still pass ``isinstance(s, socket.socket)``."""

    _stands_for: type

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls._stands_for)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._stands_for)


class _GuardedCSocket(_C_SOCKET, metaclass=_ActsAsReal):  # type: ignore[misc]
    """Stands in for ``_socket.socket`` while the guard is on."""

    __slots__ = ()
    _stands_for = _C_SOCKET
    connect = _connect
    connect_ex = _connect_ex
    sendto = _sendto
    sendmsg = _sendmsg


class _GuardedSocket(_PY_SOCKET, _GuardedCSocket, metaclass=_ActsAsReal):  # type: ignore[misc]
    """Stands in for ``socket.socket``; its MRO puts the guarded C class under ``socket.socket``, so
    ``super(socket.socket, s).connect`` is guarded too."""

    __slots__ = ()
    _stands_for = _PY_SOCKET


# --- the guarded DNS functions ------------------------------------------------------------------------


def _loopback_addresses(family: int) -> list[str]:
    if family == socket.AF_INET:
        return [_LOCALHOST_V4]
    if family == socket.AF_INET6:
        return [_LOCALHOST_V6]
    return [_LOCALHOST_V4, _LOCALHOST_V6]


def _resolve(real: Any, host: Any, port: Any, family: int, type: int, proto: int, flags: int) -> Any:  # noqa: A002
    if not _active() or host is None:
        return real(host, port, family, type, proto, flags)
    kind = _local_host(host)
    if kind is None:
        text = _host_text(host)
        if not _allowed(text):
            raise _blocked(f"a DNS lookup (getaddrinfo) of {host!r} for port {port!r}", text)
        answers = real(host, port, family, type, proto, flags)
        _note_resolved(str(entry[4][0]) for entry in answers if isinstance(entry[4], tuple))
        return answers
    if kind == "address":
        return real(host, port, family, type, proto, flags)
    found: list[Any] = []
    problem: OSError | None = None
    for numeric in _loopback_addresses(family):
        try:
            found += real(numeric, port, family, type, proto, flags | socket.AI_NUMERICHOST)
        except OSError as error:
            problem = error
    if not found and problem is not None:
        raise problem
    return found


def _getaddrinfo(host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0) -> Any:  # noqa: A002
    return _resolve(_REAL["getaddrinfo"], host, port, family, type, proto, flags)


def _socket_module_getaddrinfo(
    host: Any,
    port: Any,
    family: int = 0,
    type: int = 0,  # noqa: A002
    proto: int = 0,
    flags: int = 0,
) -> Any:
    """``socket.getaddrinfo``: the module's own function (enum families and types), given loopback only."""
    return _resolve(_PY_GETADDRINFO, host, port, family, type, proto, flags)


def _gethostbyname(host: Any) -> Any:
    if not _active():
        return _REAL["gethostbyname"](host)
    kind = _local_host(host)
    if kind is None:
        text = _host_text(host)
        if not _allowed(text):
            raise _blocked(f"a DNS lookup (gethostbyname) of {host!r}", text)
        address = _REAL["gethostbyname"](host)
        _note_resolved([address])
        return address
    return _LOCALHOST_V4 if kind == "name" else _REAL["gethostbyname"](host)


def _gethostbyname_ex(host: Any) -> Any:
    if not _active():
        return _REAL["gethostbyname_ex"](host)
    kind = _local_host(host)
    if kind is None:
        name = _host_text(host)
        if not _allowed(name):
            raise _blocked(f"a DNS lookup (gethostbyname_ex) of {host!r}", name)
        found = _REAL["gethostbyname_ex"](host)
        _note_resolved(found[2])
        return found
    text = _host_text(host) or ""
    return (text, [], [_LOCALHOST_V4 if kind == "name" else text])


def _gethostbyaddr(host: Any) -> Any:
    if not _active():
        return _REAL["gethostbyaddr"](host)
    kind = _local_host(host)
    if kind is None:
        text = _host_text(host)
        if _allowed(text):
            return _REAL["gethostbyaddr"](host)
        raise _blocked(f"a reverse DNS lookup (gethostbyaddr) of {host!r}", text)
    text = _host_text(host) or ""
    return ("localhost", [], [_LOCALHOST_V4 if kind == "name" else text])


def _getnameinfo(sockaddr: Any, flags: int) -> Any:
    real = _REAL["getnameinfo"]
    if not _active():
        return real(sockaddr, flags)
    if not isinstance(sockaddr, tuple) or len(sockaddr) < 2:
        raise _blocked(f"a reverse DNS lookup (getnameinfo) of {sockaddr!r}")
    kind = _local_host(sockaddr[0])
    if kind is None:
        text = _host_text(sockaddr[0])
        if _allowed(text):
            return real(sockaddr, flags)
        raise _blocked(f"a reverse DNS lookup (getnameinfo) of {sockaddr[0]!r}", text)
    numeric = sockaddr if kind == "address" else (_LOCALHOST_V4, *sockaddr[1:])
    host, service = real(numeric, flags | socket.NI_NUMERICHOST)
    return (host if flags & socket.NI_NUMERICHOST else "localhost"), service


_GUARDED_DNS = {
    "getaddrinfo": _getaddrinfo,
    "gethostbyname": _gethostbyname,
    "gethostbyname_ex": _gethostbyname_ex,
    "gethostbyaddr": _gethostbyaddr,
    "getnameinfo": _getnameinfo,
}


# --- install and restore ------------------------------------------------------------------------------


def _install(patch: Patch) -> None:
    for name, guarded in _GUARDED_DNS.items():
        patch.replace(_socket, name, guarded)
        patch.replace(socket, name, _socket_module_getaddrinfo if name == "getaddrinfo" else guarded)
    for name, method in _GUARDED_METHODS.items():
        patch.replace(_PY_SOCKET, name, method)
    for module in (_socket, socket):
        patch.replace(module, "SocketType", _GuardedCSocket)
    patch.replace(_socket, "socket", _GuardedCSocket)
    patch.replace(socket, "socket", _GuardedSocket)


# What the guard replaced while on: one patch, however many guards nest.
_PATCH = Patch(_install)


class NetworkGuard:
    """Blocks every in-process route beyond loopback between ``start()`` and ``stop()`` (or in a ``with``).

    ``allowed_hosts``: regular expressions of hosts (names or addresses) that stay reachable, matched from the
    start of the text as pytest-recording's ``--allowed-hosts`` are; an address an allowed name resolved to is
    reachable too. ``reason`` is what a blocked route's message says the guard is on for.

    Guards nest, across objects and threads: the patches go in at the first start and come out at the
    last stop, and a route passes only when every guard in force allows it. The guard is process-wide:
    while it is on, every thread of the process is guarded.
    """

    def __init__(self, allowed_hosts: Iterable[str] = (), *, reason: str = "replay mode") -> None:
        if isinstance(allowed_hosts, str | bytes):
            raise TypeError(f"allowed_hosts must be a list of regular expressions, not {allowed_hosts!r}")
        self.allowed_hosts = tuple(allowed_hosts)
        self._allowed = compile_patterns(self.allowed_hosts, "NetworkGuard(allowed_hosts)")
        self.reason = reason
        self._mine: list[_Start] = []

    @property
    def active(self) -> bool:
        """Whether this guard object has been started more times than stopped."""
        return bool(self._mine)

    def start(self) -> NetworkGuard:
        with _lock:
            _PATCH.start()
            start = _Start(self._allowed, self.reason)
            _starts.append(start)
            self._mine.append(start)
        return self

    def stop(self) -> None:
        with _lock:
            if not self._mine:
                raise RuntimeError("NetworkGuard.stop() without a start() of the same guard")
            _starts.remove(self._mine.pop())
            _PATCH.stop()

    def __enter__(self) -> NetworkGuard:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
