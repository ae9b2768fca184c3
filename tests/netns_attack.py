"""The network guard attacked from inside a network namespace, where nothing can leave the machine.

``tests/transports/test_network_namespace.py`` runs this file under ``unshare -rnm`` with 10.99.0.1 on ``lo`` and a
resolv.conf naming 10.99.0.1 as the name server; ``netns_servers.py`` serves there (a TCP server, DNS
responders on 10.99.0.1:53 and 127.0.0.53:53, a proxy on 127.0.0.1:3128). Each route of ``ROUTES`` is tried
three times, the servers' counts read between the tries: with no guard (the route reaches its server: the
attack is real), under a guard in replay (``NetworkBlockedError``, and the server saw nothing), and under a
guard whose ``allowed_hosts`` let it through (the server saw it). The results are printed as JSON.

``python netns_attack.py late`` instead imports uvloop while a guard is on, and prints whether its
``create_connection`` was blocked.
"""

from __future__ import annotations

import _socket
import asyncio
import contextlib
import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from _socket import getaddrinfo as bound_getaddrinfo  # bound at import, before any guard started
from _socket import socket as BoundCSocket  # the bare C class, bound at import
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netns_servers import HTTP, PROXY, STUB, TARGET, TCP, UDP

NAME = "db.test"  # answered by the DNS responder on 10.99.0.1 with 10.99.0.1
REQUEST = b"GET / HTTP/1.0\r\nHost: db.test\r\n\r\n"
QUERY = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x02db\x04test\x00\x00\x01\x00\x01"  # A db.test


class EarlySocket(socket.socket):
    """A socket.socket subclass made before any guard started."""


class EarlyRaw(_socket.socket):
    """A _socket.socket subclass made before any guard started (the C class: the guard can't patch it)."""


# Sockets made before any guard started, of the original classes: each try of a route takes one (``attack``
# makes them, first thing).
ORIGINAL_SOCKET = socket.socket
EARLY: dict[str, list[Any]] = {}


def _make_early_sockets() -> None:
    EARLY["c tcp"] = [_socket.socket() for _ in range(6)]
    EARLY["c udp"] = [_socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(6)]
    EARLY["tcp"] = [socket.socket() for _ in range(3)]


def _tcp(sock: Any, address: tuple[str, int], how: str = "connect") -> bytes:
    with contextlib.closing(sock):
        sock.settimeout(5)
        if how == "connect_ex":
            error = sock.connect_ex(address)
            if error:
                raise OSError(error, os.strerror(error))
        elif how == "super":  # past every subclass, straight to the original C class's method
            super(ORIGINAL_SOCKET, sock).connect(address)
        else:
            sock.connect(address)
        sock.sendall(REQUEST)
        return bytes(sock.recv(100))


def _udp(sock: Any, address: tuple[str, int], how: str = "sendto") -> bytes:
    with contextlib.closing(sock):
        sock.settimeout(5)
        if how == "sendto":
            sock.sendto(QUERY, address)
        elif how == "sendmsg":
            sock.sendmsg([QUERY], [], 0, address)
        else:
            sock.connect(address)
            sock.send(QUERY)
        return bytes(sock.recv(512))


def _dgram() -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


def _subclass_under_guard() -> bytes:
    class Late(socket.socket):
        pass

    return _tcp(Late(), HTTP)


def _raw_subclass_under_guard() -> bytes:
    class LateRaw(_socket.socket):
        pass

    return _tcp(LateRaw(), HTTP)


def _ssl() -> bytes:
    context = ssl.create_default_context()
    return _tcp(context.wrap_socket(socket.socket(), server_hostname=NAME, do_handshake_on_connect=True), HTTP)


async def _open_connection(host: str, port: int) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(REQUEST)
    data = await asyncio.wait_for(reader.read(100), 5)
    writer.close()
    return data


async def _sock_connect(address: tuple[str, int], sock: Any = None) -> bytes:
    loop = asyncio.get_running_loop()
    with contextlib.closing(socket.socket() if sock is None else sock) as sock:
        sock.setblocking(False)
        await loop.sock_connect(sock, address)
        await loop.sock_sendall(sock, REQUEST)
        return await loop.sock_recv(sock, 100)


def _late_bare_subclass() -> bytes:
    class LateBare(BoundCSocket):  # type: ignore[misc]
        pass

    return _tcp(LateBare(), HTTP)


def _multiprocessing_client() -> None:
    from multiprocessing.connection import Client

    Client(HTTP).close()


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _ip_udp(target: tuple[str, int]) -> bytes:
    """An IPv4 packet carrying QUERY over UDP to ``target``, from 10.99.0.2 (a source that isn't local, so
    that a frame coming in on ``lo`` is taken as from the wire)."""
    udp = struct.pack("!HHHH", 40000, target[1], 8 + len(QUERY), 0) + QUERY
    addresses = socket.inet_aton("10.99.0.2") + socket.inet_aton(target[0])
    header = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(udp), 0, 0, 64, socket.IPPROTO_UDP, 0) + addresses
    return header[:10] + struct.pack("!H", _checksum(header)) + header[12:] + udp


def _packet_frame() -> None:
    """An Ethernet frame written on ``lo`` by an AF_PACKET socket (root, or CAP_NET_RAW): it names no address."""
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
        sock.bind(("lo", 0))
        sock.send(b"\0" * 12 + b"\x08\x00" + _ip_udp(UDP["dns"]))


def _raw_ip() -> None:
    """A raw IP packet sent to 127.0.0.1 whose own header says 10.99.0.1: it goes where its header says."""
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) as sock:
        sock.sendto(_ip_udp(UDP["dns"]), ("127.0.0.1", 0))


def _proxy_handler() -> bytes:
    """urllib through a loopback proxy that no *_PROXY variable names: the guard sees a loopback connection."""
    handler = urllib.request.ProxyHandler({"http": f"http://{PROXY[0]}:{PROXY[1]}"})
    with urllib.request.build_opener(handler).open(f"http://{NAME}/", timeout=5) as response:
        return bytes(response.read())


async def _getaddrinfo() -> Any:
    return await asyncio.get_running_loop().getaddrinfo(NAME, 80, type=socket.SOCK_STREAM)


async def _getnameinfo() -> Any:
    return await asyncio.get_running_loop().getnameinfo((TARGET, 80))


class _Answer(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        if not self.answer.done():
            self.answer.set_result(data)

    def error_received(self, exc: Exception) -> None:
        if not self.answer.done():
            self.answer.set_exception(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and not self.answer.done():
            self.answer.set_exception(exc)


async def _datagram(remote: tuple[str, int] | None, to: tuple[str, int] | None) -> bytes:
    loop = asyncio.get_running_loop()
    local = ("0.0.0.0", 0) if remote is None else None
    transport, protocol = await loop.create_datagram_endpoint(_Answer, local_addr=local, remote_addr=remote)
    try:
        transport.sendto(QUERY, to)
        return await asyncio.wait_for(protocol.answer, 5)
    finally:
        transport.close()


def _uvloop() -> Any:
    import uvloop

    return uvloop


def _on_uvloop(coroutine: Callable[[], Any]) -> Callable[[], Any]:
    def route() -> Any:
        with asyncio.Runner(loop_factory=_uvloop().new_event_loop) as runner:
            return runner.run(coroutine())

    return route


def _uvloop_policy() -> Any:
    uvloop = _uvloop()
    old = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    try:
        return asyncio.run(_open_connection(TARGET, 8080))
    finally:
        asyncio.set_event_loop_policy(old)


def _uvloop_subclass() -> Any:
    class MyLoop(_uvloop().Loop):  # type: ignore[misc,name-defined]
        pass

    with asyncio.Runner(loop_factory=MyLoop) as runner:
        return runner.run(_open_connection(TARGET, 8080))


class _PythonLoop(asyncio.SelectorEventLoop):
    """An event loop of the user's own, installed through asyncio.Runner(loop_factory=...)."""


def _python_loop() -> Any:
    with asyncio.Runner(loop_factory=_PythonLoop) as runner:
        return runner.run(_open_connection(TARGET, 8080))


async def _aiohttp(url: str) -> str:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.text()


def _opener_get(url: str) -> bytes:
    opener = urllib.request.build_opener()  # a ProxyHandler from the environment, read now
    with opener.open(url, timeout=5) as response:
        return bytes(response.read())


def _requests_get(url: str) -> str:
    import requests

    return requests.get(url, timeout=5).text


def _http_exchange() -> bytes:
    return _tcp(socket.socket(), HTTP)


def _in_child(method: str) -> bytes:
    """The exchange in a multiprocessing child started with ``method``; what it raised is raised here."""
    import multiprocessing

    with multiprocessing.get_context(method).Pool(1) as pool:
        return bytes(pool.apply(_http_exchange))


@dataclass
class Route:
    server: str  # the counting server it reaches when not blocked
    run: Callable[[], Any]
    allowed: tuple[str, ...]  # the allowed_hosts that let it through
    env: tuple[tuple[str, str], ...] = ()
    needs: str = ""  # a module it needs


ROUTES: dict[str, Route] = {
    "socket.socket connect": Route("http", lambda: _tcp(socket.socket(), HTTP), (TARGET,)),
    "_socket.socket connect": Route("http", lambda: _tcp(_socket.socket(), HTTP), ("10.99.0.*",)),
    "socket.socket subclass made before the guard": Route("http", lambda: _tcp(EarlySocket(), HTTP), (TARGET,)),
    "socket.socket subclass made under the guard": Route("http", _subclass_under_guard, (TARGET,)),
    "_socket.socket subclass made before the guard": Route("http", lambda: _tcp(EarlyRaw(), HTTP), (TARGET,)),
    "_socket.socket subclass made under the guard": Route("http", _raw_subclass_under_guard, (TARGET,)),
    "socket.create_connection by address": Route(
        "http", lambda: socket.create_connection(HTTP, timeout=5).close(), ("10.99.0.1:8080",)
    ),
    "socket.create_connection by name": Route(
        "http", lambda: _tcp(socket.create_connection((NAME, 8080), timeout=5), HTTP), (NAME,)
    ),
    "ssl-wrapped socket": Route("http", _ssl, (TARGET,)),
    "a multiprocessing fork child": Route("http", lambda: _in_child("fork"), (TARGET,)),
    "asyncio loop.sock_connect": Route("http", lambda: asyncio.run(_sock_connect(HTTP)), (TARGET,)),
    "asyncio open_connection by name": Route("http", lambda: asyncio.run(_open_connection(NAME, 8080)), (NAME,)),
    "asyncio Runner(loop_factory=a user's loop)": Route("http", _python_loop, (TARGET,)),
    "UDP sendto 10.99.0.1:53 (unconnected)": Route("dns", lambda: _udp(_dgram(), UDP["dns"]), ("10.99.0.1:53",)),
    "UDP sendto 127.0.0.53:53 (unconnected)": Route("stub", lambda: _udp(_dgram(), UDP["stub"]), (f"{STUB}:53",)),
    "UDP sendmsg 127.0.0.53:53": Route("stub", lambda: _udp(_dgram(), UDP["stub"], "sendmsg"), (STUB,)),
    "UDP connect and send 127.0.0.53:53": Route(
        "stub", lambda: _udp(_dgram(), UDP["stub"], "connect"), (f"{STUB}:53",)
    ),
    "TCP DNS 127.0.0.53:53": Route("stub-tcp", lambda: _tcp(socket.socket(), TCP["stub-tcp"]), (f"{STUB}:53",)),
    "TCP DNS 10.99.0.1:53": Route("dns-tcp", lambda: _tcp(socket.socket(), TCP["dns-tcp"]), ("10.99.0.0/24",)),
    "asyncio datagram sendto 127.0.0.53:53": Route(
        "stub", lambda: asyncio.run(_datagram(None, UDP["stub"])), (f"{STUB}:53",)
    ),
    "getaddrinfo of a name (the C resolver asks 10.99.0.1)": Route(
        "dns", lambda: socket.getaddrinfo(NAME, 80), (NAME,)
    ),
    "gethostbyname of a name": Route("dns", lambda: socket.gethostbyname(NAME), ("*.test",)),
    "urllib through HTTP_PROXY=http://127.0.0.1:3128": Route(
        "proxy",
        lambda: _opener_get(f"http://{NAME}/"),
        ("127.0.0.1:3128",),
        (("HTTP_PROXY", "http://127.0.0.1:3128"),),
    ),
    "requests through http_proxy=localhost:3128": Route(
        "proxy",
        lambda: _requests_get(f"http://{NAME}/"),
        ("localhost:3128", "127.0.0.1:3128"),
        (("http_proxy", "http://localhost:3128"),),
        needs="requests",
    ),
    "socket connect to the port of ALL_PROXY": Route(
        "proxy", lambda: _tcp(socket.socket(), PROXY), ("127.0.0.1",), (("ALL_PROXY", "socks5://127.0.0.1:3128"),)
    ),
    "uvloop create_connection by address": Route(
        "http", _on_uvloop(lambda: _open_connection(TARGET, 8080)), (TARGET,), needs="uvloop"
    ),
    "uvloop create_connection by name": Route(
        "http", _on_uvloop(lambda: _open_connection(NAME, 8080)), (NAME,), needs="uvloop"
    ),
    "uvloop getaddrinfo": Route("dns", _on_uvloop(_getaddrinfo), (NAME,), needs="uvloop"),
    "uvloop getnameinfo": Route("dns", _on_uvloop(_getnameinfo), (TARGET,), needs="uvloop"),
    "uvloop sock_connect": Route("http", _on_uvloop(lambda: _sock_connect(HTTP)), (TARGET,), needs="uvloop"),
    "uvloop create_datagram_endpoint remote_addr=127.0.0.53:53": Route(
        "stub", _on_uvloop(lambda: _datagram(UDP["stub"], None)), (f"{STUB}:53",), needs="uvloop"
    ),
    "uvloop datagram sendto 10.99.0.1:53 (unconnected)": Route(
        "dns", _on_uvloop(lambda: _datagram(None, UDP["dns"])), (TARGET,), needs="uvloop"
    ),
    "uvloop through asyncio.set_event_loop_policy": Route("http", _uvloop_policy, (TARGET,), needs="uvloop"),
    "uvloop Loop subclass as a loop_factory": Route("http", _uvloop_subclass, (TARGET,), needs="uvloop"),
    "aiohttp under uvloop by name": Route(
        "http", _on_uvloop(lambda: _aiohttp(f"http://{NAME}:8080/")), (f"{NAME}:8080",), needs="aiohttp"
    ),
    "aiohttp under uvloop by address": Route(
        "http", _on_uvloop(lambda: _aiohttp(f"http://{TARGET}:8080/")), (TARGET,), needs="aiohttp"
    ),
    "aiohttp on asyncio's loop by name": Route(
        "http", lambda: asyncio.run(_aiohttp(f"http://{NAME}:8080/")), (NAME,), needs="aiohttp"
    ),
    "a bare _socket.socket made before the guard: connect": Route(
        "http", lambda: _tcp(EARLY["c tcp"].pop(), HTTP), (TARGET,)
    ),
    "a bare _socket.socket made before the guard: asyncio loop.sock_connect": Route(
        "http", lambda: asyncio.run(_sock_connect(HTTP, EARLY["c tcp"].pop())), (TARGET,)
    ),
    "a bare _socket.socket made before the guard: UDP sendto": Route(
        "dns", lambda: _udp(EARLY["c udp"].pop(), UDP["dns"]), (TARGET,)
    ),
    "a bare _socket.socket made before the guard: UDP sendmsg": Route(
        "dns", lambda: _udp(EARLY["c udp"].pop(), UDP["dns"], "sendmsg"), (TARGET,)
    ),
    "a socket.socket made before the guard, through super(the original socket.socket, s).connect": Route(
        "http", lambda: _tcp(EARLY["tcp"].pop(), HTTP, "super"), (TARGET,)
    ),
    "connect_ex": Route("http", lambda: _tcp(socket.socket(), HTTP, "connect_ex"), (TARGET,)),
    "_socket.getaddrinfo bound before the guard": Route("dns", lambda: bound_getaddrinfo(NAME, 80), (NAME,)),
    "multiprocessing.connection.Client to an address": Route("http", _multiprocessing_client, (TARGET,)),
}

# Routes refused in replay whatever allowed_hosts says: they are tried with allowed_hosts=["*"] as the third try.
# The bare C class resolves a name in C before its connect reaches any check; a link-layer or raw IP socket
# sends where its own headers say, not where the address it names does.
REFUSED: dict[str, Route] = {
    "_socket.socket reached through socket.socket.__mro__": Route(
        "http", lambda: _tcp(socket.socket.__mro__[-2](), HTTP), ("*",)
    ),
    "_socket.socket bound before the guard (from _socket import socket)": Route(
        "http", lambda: _tcp(BoundCSocket(), HTTP), ("*",)
    ),
    "a subclass of the bound _socket.socket made under the guard": Route("http", _late_bare_subclass, ("*",)),
    "AF_PACKET: an Ethernet frame written on lo": Route("dns", _packet_frame, ("*",)),
    "SOCK_RAW: an IP packet to 127.0.0.1 whose header says 10.99.0.1": Route("dns", _raw_ip, ("*",)),
}


def _ctypes_connect() -> bytes:
    """A TCP exchange through libc's own socket calls, below the interpreter's socket module."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    address = struct.pack("!HH4s8x", socket.AF_INET, HTTP[1], socket.inet_aton(HTTP[0]))
    address = struct.pack("=H", socket.AF_INET) + address[2:]  # sa_family in host order
    try:
        if libc.connect(fd, ctypes.c_char_p(address), len(address)) != 0:
            raise OSError(ctypes.get_errno(), "connect")
        libc.send(fd, REQUEST, len(REQUEST), 0)
        five_seconds = struct.pack("@ll", 5, 0)  # struct timeval: the read below waits no longer
        libc.setsockopt(fd, socket.SOL_SOCKET, socket.SO_RCVTIMEO, five_seconds, len(five_seconds))
        answer = ctypes.create_string_buffer(100)
        return answer.raw[: libc.recv(fd, answer, 100, 0)]
    finally:
        libc.close(fd)


def _subprocess_connect() -> bytes:
    script = (
        f"import socket; s = socket.create_connection({HTTP!r}, timeout=5); s.sendall({REQUEST!r}); print(s.recv(100))"
    )
    return subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=60).stdout


# What an in-process guard can't catch (the docs say so, and how to close it: a network namespace): these reach
# their server with a guard on.
UNCAUGHT: dict[str, Route] = {
    "ctypes: libc's connect": Route("http", _ctypes_connect, ()),
    "a subprocess": Route("http", _subprocess_connect, ()),
    "a multiprocessing spawn child": Route("http", lambda: _in_child("spawn"), ()),
    "urllib ProxyHandler to a loopback proxy no variable names": Route("proxy", _proxy_handler, ()),
}


def namespace_unavailable() -> str:
    """Why a network namespace can't be made here ("" when it can)."""
    for tool in ("unshare", "ip", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (iproute2 and util-linux: apt-get install -y iproute2)"
    probe = subprocess.run(["unshare", "-rnm", "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"unshare -rnm is refused here: {probe.stderr.strip()}"
    return ""


def run_in_namespace(folder: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """``command`` inside a new user and network namespace with 10.99.0.1 on ``lo`` and 10.99.0.1 as the
    name server."""
    resolv = folder / "resolv.conf"
    resolv.write_text("nameserver 10.99.0.1\noptions timeout:1 attempts:1\n")
    setup = (
        f'ip addr add 10.99.0.1/32 dev lo && ip link set lo up && mount --bind {resolv} /etc/resolv.conf && exec "$@"'
    )
    return subprocess.run(
        ["unshare", "-rnm", "sh", "-c", setup, "sh", *command],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def count(server: str) -> int:
    """How many requests ``server`` saw (every earlier request to it included: it serves in order)."""
    if server in UDP:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(5)
            sock.sendto(b"COUNT", UDP[server])
            return int(sock.recv(100))
    with socket.create_connection(TCP[server], timeout=5) as sock:
        sock.sendall(b"COUNT\n")
        return int(sock.recv(100))


def _blocked_in(error: BaseException | None) -> BaseException | None:
    """The NetworkBlockedError in an exception's chain (aiohttp and others wrap what they meet)."""
    from vcr_transport import NetworkBlockedError

    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, NetworkBlockedError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


@contextlib.contextmanager
def _environment(pairs: tuple[tuple[str, str], ...]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name, _ in pairs}
    os.environ.update(dict(pairs))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _try(route: Route, guard: Any) -> tuple[str, int]:
    """Run the route (under ``guard`` when given): what it raised (or "") and how many requests its server saw."""
    before = count(route.server)
    error: BaseException | None = None
    try:
        if guard is None:
            route.run()
        else:
            with guard:
                route.run()
    except BaseException as raised:  # noqa: BLE001 - a refused TLS handshake, a gaierror: the count decides
        error = raised
    blocked = _blocked_in(error)
    shown = f"NetworkBlockedError: {blocked}" if blocked is not None else (repr(error) if error else "")
    return shown, count(route.server) - before


def attack() -> dict[str, Any]:
    from vcr_transport._guard import NetworkGuard

    _make_early_sockets()
    results: dict[str, Any] = {}
    for name, route in {**ROUTES, **REFUSED}.items():
        if route.needs:
            try:
                __import__(route.needs)
            except ImportError:
                results[name] = {"skipped": f"{route.needs} is not installed"}
                continue
        with _environment(route.env):
            unguarded = _try(route, None)
            guarded = _try(route, NetworkGuard())
            allowed = _try(route, NetworkGuard(route.allowed))
        results[name] = {"unguarded": unguarded, "guarded": guarded, "allowed": allowed}
    for name, route in UNCAUGHT.items():
        results[name] = {"guarded": _try(route, NetworkGuard())}
    return results


def late_import() -> dict[str, Any]:
    from vcr_transport._guard import NetworkGuard

    with NetworkGuard():
        uvloop = _uvloop()
        try:
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                runner.run(_open_connection(TARGET, 8080))
        except BaseException as error:  # noqa: BLE001
            return {"error": repr(_blocked_in(error) or error), "blocked": _blocked_in(error) is not None}
    return {"error": "", "blocked": False}


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        ready = Path(folder) / "ready"
        servers = subprocess.Popen([sys.executable, str(Path(__file__).with_name("netns_servers.py")), str(ready)])
        try:
            while not ready.exists():
                if servers.poll() is not None:
                    raise SystemExit(f"the servers exited with {servers.returncode}")
                time.sleep(0.02)
            results = late_import() if sys.argv[1:] == ["late"] else attack()
        finally:
            servers.kill()
            servers.wait()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
