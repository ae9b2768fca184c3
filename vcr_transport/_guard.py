"""The network guard: while it is on, every in-process route beyond loopback raises ``NetworkBlockedError``
before anything leaves the machine. What passes is decided by one function without I/O, ``decide`` in
``_core/rules/_hosts.py`` (allowed-host rules, DNS to port 53 of any address, loopback proxies named by ``*_proxy``
variables, loopback); the hooks here only turn what a route names into a host and a port and act on it.

The hooks, in this process and in every thread of it:

- ``connect``, ``connect_ex``, ``sendto`` (UDP, and TCP Fast Open's ``MSG_FASTOPEN``) and ``sendmsg`` with an
  address, for every address form CPython accepts (``str``, ``bytes`` or ``bytearray`` hosts, IPv4, IPv6,
  IPv4-mapped IPv6, host names). They are guarded on ``socket.socket`` (so on ``ssl.SSLSocket`` and every
  other subclass), and on the C class ``_socket.socket``: its methods can't be patched, so while the guard
  is on ``_socket.socket`` (and ``SocketType``) is a guarded subclass, ``socket.socket`` is a subclass
  that puts that guarded class between itself and the C class, which catches ``super(socket.socket, s)``,
  and each subclass of the C class made before the guard started gets checked methods of its own.
- DNS: ``getaddrinfo``, ``gethostbyname``, ``gethostbyname_ex``, ``gethostbyaddr`` and ``getnameinfo``, in
  both the ``socket`` and ``_socket`` modules. ``localhost`` and ``*.localhost`` are answered here with
  127.0.0.1 and ::1, never by the real resolver; another name is resolved only when allowed.
- asyncio, which goes through the above; uvloop, whose libuv connects and resolves in C: ``uvloop.Loop``'s
  ``create_connection``, ``create_datagram_endpoint`` (its transport's ``sendto`` too), ``getaddrinfo``,
  ``getnameinfo``, ``sock_connect`` and ``sock_sendto`` are checked first, when uvloop was imported before
  the guard started or is imported while it is on (``Patch``'s late imports).

- Under all of these, an audit hook (``sys.addaudithook``, put in at the first start, never removed): the C
  socket module raises its events whatever reference the call came through, so a socket made before the
  guard started, ``super(<the original class>, s)``, and resolver functions bound before it are checked in
  C. As a socket is made (``socket.__new__``), it refuses the bare C class reached around the stand-ins
  (``socket.socket.__mro__``, ``from _socket import socket`` taken earlier, which would resolve a name in C
  before any check) and every socket that sends where its own headers say: AF_PACKET, SOCK_RAW, and every
  family but AF_INET, AF_INET6, AF_UNIX and AF_NETLINK. No ``allowed_hosts`` opens these: there is no host
  yet. The hook returns at once for every other event, and while no guard is on.

What it can't reach (docs/explanation/network-guard.md): C code's own sockets (ctypes, C extensions) and C
resolvers (c-ares), subprocesses and spawn children, connections already open when it starts (and their
copies: ``dup``, ``fromfd``, a descriptor passed over a Unix socket), the name lookup C does for a
``connect`` to a host name on a socket made before the guard started (the connection itself is refused),
and a proxy on loopback that no ``*_proxy`` variable names (``ProxyHandler``, ``set_tunnel``, a client's
``proxies=``): the guard sees a loopback connection.

Loopback (127.0.0.0/8, ::1, the unspecified address, which means this host) and AF_UNIX / AF_NETLINK
sockets stay open. Guards nest: they share one ``Patch`` (``_patch.py``), which the first ``start()``
installs and the last ``stop()`` restores in full. While several guards are on, a route passes only when
every one of them allows it: a guard never opens what another blocks.
"""

from __future__ import annotations

import _socket
import dataclasses
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from ._core.rules._hosts import (
    BEYOND,
    PROXY_VARIABLES,
    Decision,
    HostRule,
    canonical_address,
    decide,
    local_address,
    parse_host_rules,
    proxy_ports,
)
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

    rules: tuple[HostRule, ...]
    reason: str
    # addresses allowed names resolved to, each with the rules that allowed the name (and so their ports)
    resolved: dict[str, tuple[HostRule, ...]] = dataclasses.field(default_factory=dict)


_starts: list[_Start] = []  # every start in force, innermost last

_LOCALHOST_V4 = "127.0.0.1"
_LOCALHOST_V6 = "::1"


_ALLOW_IT = "let the host through with allowed_hosts=[...]"


def network_blocked_message(
    what: str, reason: str = "replay mode", allowed: Iterable[str] = (), why: str = BEYOND, fix: str = _ALLOW_IT
) -> str:
    """The message of a blocked route: what was blocked, why it can't be recorded, what to do instead (the
    last of the ways out is ``fix``)."""
    hosts = ", ".join(allowed)
    reachable = "loopback (127.0.0.1, ::1, localhost)" + (f" and the allowed hosts ({hosts})" if hosts else "")
    because = f"nothing beyond {reachable} is reachable" if why == BEYOND else why
    return (
        f"{what} was blocked by vcr_transport's network guard ({reason}): {because}, and no packet was sent. "
        "Requests through httpx or httpx2 are answered from the cassette and never open a socket, so this "
        "traffic comes from something a cassette can't hold (urllib, requests, a raw socket, DNS, another "
        f"client): mock it in the test, point it to a server on 127.0.0.1, or {fix}"
    )


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


def _port(port: object) -> int | None:
    """A port as a number (a service name or None: no port the rules can name)."""
    if isinstance(port, int) and not isinstance(port, bool):
        return port
    if isinstance(port, str | bytes) and port.isdigit():
        return int(port)
    return None


def _proxies_now() -> dict[int, str]:
    """The loopback ports the proxy variables name now (a test may set one after the guard started)."""
    found = {name: value for name in PROXY_VARIABLES if (value := os.environ.get(name))}
    return proxy_ports(found) if found else {}


def _check(host: object, port: object, what: str) -> Decision:
    """The decision of every guard in force for a route to ``host``:``port`` (``decide``); raises
    NetworkBlockedError naming the first guard that blocks it. ``port`` None: a lookup, which names none."""
    text = _host_text(host)
    number = _port(port)
    answer = Decision("pass")
    for start in list(_starts):
        decision = decide(text, number, start.rules, start.resolved, _proxies_now)
        if decision.action == "block":
            allowed = [rule.text for rule in start.rules]
            raise NetworkBlockedError(network_blocked_message(what, start.reason, allowed, decision.why))
        if decision.action == "localhost":
            answer = decision
    return answer


def _note_resolved(host: object, addresses: Iterable[str]) -> None:
    """An allowed name resolved to these addresses: each guard in force lets them through on the ports of the
    rules that allowed the name."""
    text = _host_text(host)
    if text is None:
        return
    found = [address.split("%", 1)[0] for address in addresses]
    with _lock:
        for start in _starts:
            rules = tuple(rule for rule in start.rules if rule.matches(text, None))
            for address in found:
                key = canonical_address(address) or address
                start.resolved[key] = (*start.resolved.get(key, ()), *rules)


def _checked_address(sock: Any, address: Any, route: str) -> Any:
    """The address to hand to the real call (a localhost name replaced by its loopback address), or raise."""
    if not _active():
        return address
    family = sock.family
    if family in _LOCAL_FAMILIES:
        return address
    if family not in _INET_FAMILIES:
        raise NetworkBlockedError(network_blocked_message(f"{route} on a socket of family {family!r} to {address!r}"))
    if not isinstance(address, tuple) or len(address) < 2:
        raise NetworkBlockedError(network_blocked_message(f"{route} to {address!r}"))
    host = address[0]
    decision = _check(host, address[1], f"a connection ({route}) to {host!r}:{address[1]}")
    if decision.action == "localhost":
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


def _lookup(host: Any, what: str) -> Decision:
    """The decision for a lookup of ``host``: a name is resolved only if allowed, a localhost name never."""
    return _check(host, None, what)


def _resolve(real: Any, host: Any, port: Any, family: int, type: int, proto: int, flags: int) -> Any:  # noqa: A002
    if not _active() or host is None:
        return real(host, port, family, type, proto, flags)
    decision = _lookup(host, f"a DNS lookup (getaddrinfo) of {host!r} for port {port!r}")
    if decision.action == "pass":
        answers = real(host, port, family, type, proto, flags)
        if local_address(_host_text(host) or "") is None:
            _note_resolved(host, (str(entry[4][0]) for entry in answers if isinstance(entry[4], tuple)))
        return answers
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
    if _lookup(host, f"a DNS lookup (gethostbyname) of {host!r}").action == "localhost":
        return _LOCALHOST_V4
    address = _REAL["gethostbyname"](host)
    _note_resolved(host, [address])
    return address


def _gethostbyname_ex(host: Any) -> Any:
    if not _active():
        return _REAL["gethostbyname_ex"](host)
    text = _host_text(host) or ""
    decision = _lookup(host, f"a DNS lookup (gethostbyname_ex) of {host!r}")
    if decision.action == "localhost":
        return (text, [], [_LOCALHOST_V4])
    if local_address(text):
        return (text, [], [text])
    found = _REAL["gethostbyname_ex"](host)
    _note_resolved(host, found[2])
    return found


def _gethostbyaddr(host: Any) -> Any:
    if not _active():
        return _REAL["gethostbyaddr"](host)
    text = _host_text(host) or ""
    decision = _lookup(host, f"a reverse DNS lookup (gethostbyaddr) of {host!r}")
    if decision.action == "localhost":
        return ("localhost", [], [_LOCALHOST_V4])
    if local_address(text):
        return ("localhost", [], [text])
    return _REAL["gethostbyaddr"](host)


def _getnameinfo(sockaddr: Any, flags: int) -> Any:
    real = _REAL["getnameinfo"]
    if not _active():
        return real(sockaddr, flags)
    if not isinstance(sockaddr, tuple) or len(sockaddr) < 2:
        raise NetworkBlockedError(network_blocked_message(f"a reverse DNS lookup (getnameinfo) of {sockaddr!r}"))
    decision = _lookup(sockaddr[0], f"a reverse DNS lookup (getnameinfo) of {sockaddr[0]!r}")
    if decision.action == "pass" and not local_address(_host_text(sockaddr[0]) or ""):
        return real(sockaddr, flags)
    numeric = sockaddr if decision.action == "pass" else (_LOCALHOST_V4, *sockaddr[1:])
    host, service = real(numeric, flags | socket.NI_NUMERICHOST)
    return (host if flags & socket.NI_NUMERICHOST else "localhost"), service


_GUARDED_DNS = {
    "getaddrinfo": _getaddrinfo,
    "gethostbyname": _gethostbyname,
    "gethostbyname_ex": _gethostbyname_ex,
    "gethostbyaddr": _gethostbyaddr,
    "getnameinfo": _getnameinfo,
}


# --- classes that bypass the guarded classes --------------------------------------------------------------


def _checking(name: str, original: Any) -> Any:
    """A subclass's own ``connect``/``sendto``/... (or the C method it inherits), checked first."""
    guarded = _GUARDED_METHODS[name]

    if original is getattr(_C_SOCKET, name):
        return guarded

    def method(self: Any, *args: Any) -> Any:
        if args and _active():
            if name in ("connect", "connect_ex"):
                args = (_checked_address(self, args[0], name), *args[1:])
            elif name == "sendto" and len(args) >= 2:
                args = (*args[:-1], _checked_address(self, args[-1], name))
            elif name == "sendmsg" and len(args) >= 4 and args[3] is not None:
                args = (*args[:3], _checked_address(self, args[3], name), *args[4:])
        return original(self, *args)

    return method


def _early_subclasses() -> list[type]:
    """Subclasses of the C socket class defined before the guard started, outside ``socket.socket``'s line
    (``class Raw(_socket.socket)``): their methods are the C class's, which the guard can't patch."""
    found: list[type] = []
    pending: list[type] = list(_C_SOCKET.__subclasses__())
    while pending:
        cls = pending.pop()
        if issubclass(cls, _PY_SOCKET) or cls in (_GuardedCSocket, _GuardedSocket) or cls in found:
            continue
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def _guard_subclasses(patch: Patch) -> None:
    for cls in _early_subclasses():
        for name in _SOCKET_METHODS:
            try:
                patch.replace(cls, name, _checking(name, getattr(cls, name)))
            except TypeError:  # a static type of a C extension: out of reach (the docs say so)
                break


# --- uvloop: libuv connects and resolves in C, below the socket module ------------------------------------


def _loopback_for(family: int) -> str:
    """The loopback address a localhost name stands for in ``family``, so that libuv never resolves it."""
    return _LOCALHOST_V6 if family == socket.AF_INET6 else _LOCALHOST_V4


def _guarded_create_connection(original: Any) -> Any:
    async def create_connection(self: Any, protocol_factory: Any, host: Any = None, port: Any = None, **kw: Any) -> Any:
        if _active() and host is not None:
            hosts = host if isinstance(host, list | tuple) else [host]
            checked = []
            for one in hosts:
                decision = _check(one, port, f"a connection (loop.create_connection) to {one!r}:{port}")
                checked.append(_loopback_for(kw.get("family", 0)) if decision.action == "localhost" else one)
            host = checked if isinstance(host, list | tuple) else checked[0]
        return await original(self, protocol_factory, host, port, **kw)

    return create_connection


class _CheckedDatagramTransport:
    """A datagram transport whose ``sendto`` to an address is checked first; everything else is the real one."""

    def __init__(self, transport: Any) -> None:
        self._transport = transport

    def sendto(self, data: Any, addr: Any = None) -> None:
        if addr is not None and _active():
            host, port = (addr[0], addr[1]) if isinstance(addr, tuple) and len(addr) >= 2 else (None, None)
            if _check(host, port, f"a datagram (transport.sendto) to {addr!r}").action == "localhost":
                addr = (_LOCALHOST_V4, *addr[1:])
        self._transport.sendto(data, addr)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _CheckedDatagramProtocol:
    """Hands the protocol the checked transport in ``connection_made``; forwards every other call."""

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol

    def connection_made(self, transport: Any) -> None:
        self.protocol.connection_made(_CheckedDatagramTransport(transport))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.protocol, name)


def _guarded_create_datagram_endpoint(original: Any) -> Any:
    async def create_datagram_endpoint(
        self: Any, protocol_factory: Any, local_addr: Any = None, remote_addr: Any = None, **kw: Any
    ) -> Any:
        if not _active():
            return await original(self, protocol_factory, local_addr, remote_addr, **kw)
        if remote_addr is not None and not isinstance(remote_addr, str | bytes):
            host, port = (remote_addr[0], remote_addr[1]) if len(remote_addr) >= 2 else (None, None)
            what = f"a datagram endpoint (loop.create_datagram_endpoint) to {remote_addr!r}"
            if _check(host, port, what).action == "localhost":
                remote_addr = (_loopback_for(kw.get("family", 0)), *remote_addr[1:])
        transport, wrapper = await original(
            self, lambda: _CheckedDatagramProtocol(protocol_factory()), local_addr, remote_addr, **kw
        )
        return _CheckedDatagramTransport(transport), wrapper.protocol

    return create_datagram_endpoint


def _guarded_getaddrinfo(original: Any) -> Any:
    async def getaddrinfo(self: Any, host: Any, port: Any, **kw: Any) -> Any:
        if not _active() or host is None:
            return await original(self, host, port, **kw)
        decision = _lookup(host, f"a DNS lookup (loop.getaddrinfo) of {host!r} for port {port!r}")
        if decision.action == "localhost":
            return _socket_module_getaddrinfo(
                host, port, kw.get("family", 0), kw.get("type", 0), kw.get("proto", 0), kw.get("flags", 0)
            )
        answers = await original(self, host, port, **kw)
        if local_address(_host_text(host) or "") is None:
            _note_resolved(host, (str(entry[4][0]) for entry in answers if isinstance(entry[4], tuple)))
        return answers

    return getaddrinfo


def _guarded_getnameinfo(original: Any) -> Any:
    async def getnameinfo(self: Any, sockaddr: Any, flags: int = 0) -> Any:
        if _active():
            return _getnameinfo(sockaddr, flags)  # numeric for loopback, the real resolver only if allowed
        return await original(self, sockaddr, flags)

    return getnameinfo


def _guarded_sock_method(name: str, original: Any) -> Any:
    async def sock_method(self: Any, sock: Any, *args: Any) -> Any:
        if _active() and args:
            args = (*args[:-1], _checked_address(sock, args[-1], f"loop.{name}"))
        return await original(self, sock, *args)

    return sock_method


_UVLOOP_HOOKS: dict[str, Callable[[Any], Any]] = {
    "create_connection": _guarded_create_connection,
    "create_datagram_endpoint": _guarded_create_datagram_endpoint,
    "getaddrinfo": _guarded_getaddrinfo,
    "getnameinfo": _guarded_getnameinfo,
    "sock_connect": lambda original: _guarded_sock_method("sock_connect", original),
    "sock_sendto": lambda original: _guarded_sock_method("sock_sendto", original),
}


def _guard_uvloop(patch: Patch, uvloop: ModuleType) -> None:
    """uvloop's loop (and every subclass, an installed policy's or a ``Runner(loop_factory=...)``'s): the
    methods that connect or resolve in libuv, checked first."""
    loop_class = getattr(uvloop, "Loop", None)
    if not isinstance(loop_class, type):
        return
    for name, hook in _UVLOOP_HOOKS.items():
        original = getattr(loop_class, name, None)
        if original is not None:
            patch.replace(loop_class, name, hook(original))


# --- the audit hook: the floor under the patched classes ----------------------------------------------
#
# CPython raises an audit event in the C socket module itself, whatever class or reference the call came
# through: ``socket.__new__`` as a socket is made, ``socket.connect`` (``connect_ex`` too), ``socket.sendto``
# and ``socket.sendmsg`` before their system call, and one per resolver function before it resolves. So the
# C class reached around the patches (``socket.socket.__mro__``, ``from _socket import socket`` taken before
# the guard started, a socket made before it) still meets a check. The patches stay the first line: they
# see a host name before C resolves it (the ``socket.connect`` event comes after) and answer ``localhost``
# without the resolver; the hook can only refuse. A hook can't be removed: it goes in at the first start,
# stays for the life of the process, and returns at once for every event that isn't one of these, or
# while no guard is on.

_SOCKET_FAMILIES = _INET_FAMILIES | _LOCAL_FAMILIES
_TYPE_MASK = 0xF  # Linux or-s SOCK_NONBLOCK and SOCK_CLOEXEC into a socket's type
_C_METHODS = {name: getattr(_C_SOCKET, name) for name in _SOCKET_METHODS}
# Why a socket is refused as it is made, and the way out: allowed_hosts can't help, there is no host yet.
_BARE = (
    "that class resolves a host name in C before its connect or sendto reaches any check",
    "make the socket through socket.socket (allowed_hosts can't open this class; block_network=False turns "
    "the guard off for the test)",
)
_UNADDRESSED = (
    "it sends where its own headers say, not to an address the guard can check (only AF_INET, AF_INET6, "
    "AF_UNIX and AF_NETLINK sockets that aren't SOCK_RAW are made while the guard is on)",
    "turn the guard off for this test with block_network=False (allowed_hosts can't open it)",
)


def _refuse(what: str, why_and_fix: tuple[str, str]) -> None:
    starts = list(_starts)
    if starts:  # the first guard in force names the reason, as ``_check`` does
        allowed = [rule.text for rule in starts[0].rules]
        why, fix = why_and_fix
        raise NetworkBlockedError(network_blocked_message(what, starts[0].reason, allowed, why, fix))


def _family_name(family: int) -> str:
    try:
        return socket.AddressFamily(family).name
    except ValueError:
        return str(family)


def _made(args: tuple[Any, ...]) -> None:
    """``socket.__new__`` (the instance, family, type, protocol; -1 for what the call left out)."""
    sock, family, kind, _ = args
    if family != -1 and family not in _SOCKET_FAMILIES:
        _refuse(f"a socket of family {_family_name(family)}", _UNADDRESSED)
    elif family in _INET_FAMILIES and kind != -1 and kind & _TYPE_MASK == socket.SOCK_RAW:
        _refuse(f"a raw socket (SOCK_RAW) of family {_family_name(family)}", _UNADDRESSED)
    elif family not in _LOCAL_FAMILIES and any(getattr(type(sock), n) is c for n, c in _C_METHODS.items()):
        cls = type(sock)
        _refuse(f"a socket of class {cls.__module__}.{cls.__qualname__} (_socket.socket's own methods)", _BARE)


def _sent(route: str) -> Callable[[tuple[Any, ...]], None]:
    """``socket.connect``, ``socket.sendto``, ``socket.sendmsg``: the socket and the address (None when a
    ``sendmsg`` names none)."""

    def check(args: tuple[Any, ...]) -> None:
        if args[1] is not None:
            _checked_address(args[0], args[1], route)

    return check


def _resolved(route: str, host_of: Callable[[Any], Any]) -> Callable[[tuple[Any, ...]], None]:
    """A resolver function's event: the host it is asked about (None, a passive ``getaddrinfo``, passes)."""

    def check(args: tuple[Any, ...]) -> None:
        host = host_of(args[0])
        if host is not None:
            _lookup(host, f"a DNS lookup ({route}) of {host!r}")

    return check


def _sockaddr_host(sockaddr: Any) -> Any:
    return sockaddr[0] if isinstance(sockaddr, tuple) and sockaddr else ""


_AUDITED: dict[str, Callable[[tuple[Any, ...]], None]] = {
    "socket.__new__": _made,
    "socket.connect": _sent("connect"),
    "socket.sendto": _sent("sendto"),
    "socket.sendmsg": _sent("sendmsg"),
    "socket.getaddrinfo": _resolved("getaddrinfo", lambda host: host),
    "socket.gethostbyname": _resolved("gethostbyname", lambda host: host),
    "socket.gethostbyaddr": _resolved("gethostbyaddr", lambda host: host),
    "socket.getnameinfo": _resolved("getnameinfo", _sockaddr_host),
}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """The audit hook: every audited event of the process comes here, so anything else leaves at once."""
    if event in _AUDITED and _starts:
        _AUDITED[event](args)


_audit_hooked = False


def _hook_audit_events() -> None:
    global _audit_hooked
    if not _audit_hooked:
        sys.addaudithook(_audit)
        _audit_hooked = True


# --- install and restore ------------------------------------------------------------------------------


def _install(patch: Patch) -> None:
    for name, guarded in _GUARDED_DNS.items():
        patch.replace(_socket, name, guarded)
        patch.replace(socket, name, _socket_module_getaddrinfo if name == "getaddrinfo" else guarded)
    for name, method in _GUARDED_METHODS.items():
        patch.replace(_PY_SOCKET, name, method)
    _guard_subclasses(patch)
    for module in (_socket, socket):
        patch.replace(module, "SocketType", _GuardedCSocket)
    patch.replace(_socket, "socket", _GuardedCSocket)
    patch.replace(socket, "socket", _GuardedSocket)
    for name, hook in _LATE.items():
        if name in sys.modules:
            hook(patch, sys.modules[name])


# The event loops that connect and resolve below the socket module, guarded when imported before the guard
# starts or while it is on.
_LATE: dict[str, Callable[[Patch, ModuleType], None]] = {"uvloop": _guard_uvloop}

# What the guard replaced while on: one patch, however many guards nest.
_PATCH = Patch(_install, late=_LATE)


class NetworkGuard:
    """Blocks every in-process route beyond loopback between ``start()`` and ``stop()`` (or in a ``with``).

    ``allowed_hosts``: the rules of the option ``allowed_hosts`` (``_core/rules/_hosts.py``): globs of names or
    addresses (``*.internal``, ``db``, ``10.0.0.*``), with ``:port`` for one port only, address networks
    (``10.0.0.0/8``), or ``re:`` and a regular expression matched from the start (pytest-recording's
    ``--allowed-hosts``). An address an allowed name resolved to is reachable too. ``reason`` is what a
    blocked route's message says the guard is on for.

    Guards nest, across objects and threads: the patches go in at the first start and come out at the
    last stop, and a route passes only when every guard in force allows it. The guard is process-wide:
    while it is on, every thread of the process is guarded.
    """

    def __init__(self, allowed_hosts: Iterable[str] = (), *, reason: str = "replay mode") -> None:
        if isinstance(allowed_hosts, str | bytes):
            raise TypeError(f"allowed_hosts must be a list of host globs, not {allowed_hosts!r}")
        self.allowed_hosts = tuple(allowed_hosts)
        if not all(isinstance(item, str) for item in self.allowed_hosts):
            raise TypeError(f"allowed_hosts must be a list of host globs (text), not {allowed_hosts!r}")
        try:
            self._rules = parse_host_rules(self.allowed_hosts)
        except ValueError as error:
            raise ValueError(f"NetworkGuard(allowed_hosts): {error}") from None
        self.reason = reason
        self._mine: list[_Start] = []

    @property
    def active(self) -> bool:
        """Whether this guard object has been started more times than stopped."""
        return bool(self._mine)

    def start(self) -> NetworkGuard:
        with _lock:
            _hook_audit_events()
            _PATCH.start()
            start = _Start(self._rules, self.reason)
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
