"""The network guard: every in-process route beyond loopback raises NetworkBlockedError before the real
socket or resolver function is reached; loopback keeps working; everything is restored after stop.

The real C functions the guard lets allowed calls through to are replaced by tripwires in these tests: a
tripwire records the call and raises, so even a guard that failed would send nothing. The addresses are
TEST-NET (192.0.2.1, 2001:db8::1) and the reserved name example.invalid.
"""

from __future__ import annotations

import _socket
import asyncio
import json
import socket
import ssl
import textwrap
import urllib.request
from _socket import getaddrinfo as _bound_getaddrinfo  # bound at import, before any guard started
from _socket import socket as _BoundCSocket  # the bare C class, bound at import
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import vcr_transport
from vcr_transport import NetworkBlockedError, _guard
from vcr_transport._guard import NetworkGuard

V4 = ("192.0.2.1", 80)
V6 = ("2001:db8::1", 80, 0, 0)
NAME = "example.invalid"


@pytest.fixture
def tripwires(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    """Every real function behind the guard, replaced by one that records the call and refuses it."""
    reached: list[tuple[str, tuple[Any, ...]]] = []
    for name in list(_guard._REAL):

        def tripwire(*args: Any, _name: str = name) -> Any:
            reached.append((_name, args))
            raise AssertionError(f"the guard let {_name}{args!r} through to the real function")

        monkeypatch.setitem(_guard._REAL, name, tripwire)
    return reached


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    """Every real function behind the guard, recorded and then called."""
    reached: list[tuple[str, tuple[Any, ...]]] = []
    for name, real in list(_guard._REAL.items()):

        def record(*args: Any, _name: str = name, _real: Any = real) -> Any:
            reached.append((_name, args))
            return _real(*args)

        monkeypatch.setitem(_guard._REAL, name, record)
    return reached


@pytest.fixture
def guarded() -> Iterator[NetworkGuard]:
    with NetworkGuard() as guard:
        yield guard


def _run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def _sock_connect() -> None:
    loop = asyncio.get_running_loop()
    with socket.socket() as sock:
        sock.setblocking(False)
        await loop.sock_connect(sock, V4)


async def _create_connection(host: str) -> None:
    await asyncio.get_running_loop().create_connection(asyncio.Protocol, host, 80)


async def _datagram_remote() -> None:
    await asyncio.get_running_loop().create_datagram_endpoint(asyncio.DatagramProtocol, remote_addr=V4)


class _LostWith(asyncio.DatagramProtocol):
    """asyncio hands a datagram transport's write error to connection_lost: keep it."""

    def __init__(self) -> None:
        self.lost: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set_result(exc)


async def _datagram_sendto() -> None:
    transport, protocol = await asyncio.get_running_loop().create_datagram_endpoint(
        _LostWith, local_addr=("127.0.0.1", 0)
    )
    transport.sendto(b"x", V4)
    error = await protocol.lost
    if error is not None:
        raise error


async def _loop_getaddrinfo() -> None:
    await asyncio.get_running_loop().getaddrinfo(NAME, 80)


async def _sock_sendto() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_sendto(sock, b"x", V4)


def _tcp() -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM)


def _udp(family: int = socket.AF_INET) -> socket.socket:
    return socket.socket(family, socket.SOCK_DGRAM)


def _with(make: Callable[[], Any], use: Callable[[Any], Any]) -> Callable[[], Any]:
    def route() -> Any:
        sock = make()
        try:
            return use(sock)
        finally:
            sock.close()

    return route


ROUTES: dict[str, Callable[[], Any]] = {
    "connect str IPv4": _with(_tcp, lambda s: s.connect(V4)),
    "connect bytes host": _with(_tcp, lambda s: s.connect((b"192.0.2.1", 80))),
    "connect bytearray host": _with(_tcp, lambda s: s.connect((bytearray(b"192.0.2.1"), 80))),
    "connect IPv6": _with(lambda: socket.socket(socket.AF_INET6), lambda s: s.connect(V6)),
    "connect IPv4-mapped IPv6": _with(
        lambda: socket.socket(socket.AF_INET6), lambda s: s.connect(("::ffff:192.0.2.1", 80))
    ),
    "connect host name": _with(_tcp, lambda s: s.connect((NAME, 80))),
    "connect hostname that ends in localhost-ish": _with(_tcp, lambda s: s.connect(("localhost.example.invalid", 80))),
    "connect_ex": _with(_tcp, lambda s: s.connect_ex(V4)),
    "UDP sendto": _with(_udp, lambda s: s.sendto(b"x", V4)),
    "UDP sendto with flags": _with(_udp, lambda s: s.sendto(b"x", 0, V4)),
    "UDP sendto IPv6": _with(lambda: _udp(socket.AF_INET6), lambda s: s.sendto(b"x", V6)),
    "UDP sendmsg": _with(_udp, lambda s: s.sendmsg([b"x"], [], 0, V4)),
    "UDP connect": _with(_udp, lambda s: s.connect(V4)),
    "TCP Fast Open sendto": _with(_tcp, lambda s: s.sendto(b"x", getattr(socket, "MSG_FASTOPEN", 0x20000000), V4)),
    "C class _socket.socket": _with(lambda: _socket.socket(), lambda s: s.connect(V4)),
    "C class _socket.SocketType": _with(lambda: _socket.SocketType(), lambda s: s.connect(V4)),
    "super(socket.socket, s).connect": _with(_tcp, lambda s: super(socket.socket, s).connect(V4)),
    "ssl.SSLSocket connect": _with(
        lambda: ssl.create_default_context().wrap_socket(socket.socket(), server_hostname="x"),
        lambda s: s.connect(V4),
    ),
    "socket.create_connection": lambda: socket.create_connection((NAME, 80), timeout=1),
    "socket.getaddrinfo": lambda: socket.getaddrinfo(NAME, 80),
    "socket.getaddrinfo numeric": lambda: socket.getaddrinfo("192.0.2.1", 80),
    "_socket.getaddrinfo": lambda: _socket.getaddrinfo(NAME, 80),
    "gethostbyname": lambda: socket.gethostbyname(NAME),
    "gethostbyname_ex": lambda: socket.gethostbyname_ex(NAME),
    "_socket.gethostbyname": lambda: _socket.gethostbyname(NAME),
    "gethostbyaddr": lambda: socket.gethostbyaddr("192.0.2.1"),
    "getnameinfo": lambda: socket.getnameinfo(V4, 0),
    "getfqdn of a remote name": lambda: socket.getfqdn(NAME),
    "urllib.request.urlopen": lambda: urllib.request.urlopen(f"http://{NAME}/", timeout=1),
    "asyncio loop.sock_connect": lambda: _run(_sock_connect()),
    "asyncio create_connection by name": lambda: _run(_create_connection(NAME)),
    "asyncio create_connection by address": lambda: _run(_create_connection("192.0.2.1")),
    "asyncio create_datagram_endpoint remote_addr": lambda: _run(_datagram_remote()),
    "asyncio datagram transport sendto": lambda: _run(_datagram_sendto()),
    "asyncio loop.getaddrinfo (executor)": lambda: _run(_loop_getaddrinfo()),
    "asyncio loop.sock_sendto": lambda: _run(_sock_sendto()),
}


@pytest.mark.parametrize("route", ROUTES, ids=list(ROUTES))
def test_every_route_beyond_loopback_is_blocked_before_the_real_call(
    route: str, tripwires: list[tuple[str, tuple[Any, ...]]], guarded: NetworkGuard
) -> None:
    with pytest.raises(NetworkBlockedError, match="was blocked by vcr_transport's network guard") as blocked:
        ROUTES[route]()
    assert tripwires == [], f"{route} reached the real function"
    assert "re-record" not in str(blocked.value) and "mock it" in str(blocked.value)


def test_a_socket_created_before_the_guard_is_blocked_too(tripwires: list[tuple[str, tuple[Any, ...]]]) -> None:
    early = socket.socket()
    try:
        with NetworkGuard(), pytest.raises(NetworkBlockedError):
            early.connect(V4)
        assert isinstance(early, socket.socket)
    finally:
        early.close()
    assert tripwires == []


def test_localhost_names_never_reach_the_real_resolver(
    recorder: list[tuple[str, tuple[Any, ...]]], guarded: NetworkGuard
) -> None:
    found = socket.getaddrinfo("anything.localhost", 80, type=socket.SOCK_STREAM)
    assert {entry[4][0] for entry in found} <= {"127.0.0.1", "::1"} and found
    assert socket.gethostbyname("Foo.LOCALHOST.") == "127.0.0.1"
    assert socket.gethostbyname_ex("x.localhost")[2] == ["127.0.0.1"]
    assert socket.gethostbyaddr("127.0.0.1")[0] == "localhost"
    assert socket.getnameinfo(("x.localhost", 80), socket.NI_NUMERICSERV) == ("localhost", "80")
    resolver_calls = [args for name, args in recorder if name in ("getaddrinfo", "getnameinfo")]
    assert resolver_calls, "the numeric loopback answers go through the real function"
    assert all(args[0] in ("127.0.0.1", "::1", ("127.0.0.1", 80)) for args in resolver_calls)
    assert all(args[5] & socket.AI_NUMERICHOST for name, args in recorder if name == "getaddrinfo"), (
        "a localhost name must be answered without the resolver"
    )
    assert not [name for name, _ in recorder if name in ("gethostbyname", "gethostbyname_ex", "gethostbyaddr")]


@pytest.fixture
def loopback_server() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(5)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "api.localhost", b"127.0.0.1", bytearray(b"127.0.0.1")])
def test_loopback_still_works(
    host: Any, loopback_server: int, recorder: list[tuple[str, tuple[Any, ...]]], guarded: NetworkGuard
) -> None:
    with socket.socket() as client:
        client.connect((host, loopback_server))
        assert client.getpeername() == ("127.0.0.1", loopback_server)
    connects = [args[1] for name, args in recorder if name == "connect"]
    assert connects and connects[-1][0] in ("127.0.0.1", b"127.0.0.1", bytearray(b"127.0.0.1"))


def test_ipv6_loopback_and_udp_loopback_work(
    recorder: list[tuple[str, tuple[Any, ...]]], guarded: NetworkGuard
) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        server = socket.create_server(("::1", 0), family=socket.AF_INET6)
    except OSError:
        pytest.skip("::1 is not configured here")
    with server, socket.socket(socket.AF_INET6) as client:
        client.connect(("::1", server.getsockname()[1]))
    with _udp() as receiver, _udp() as sender:
        receiver.bind(("127.0.0.1", 0))
        receiver.settimeout(5)
        sender.sendto(b"ping", receiver.getsockname())
        assert receiver.recv(10) == b"ping"
    assert {name for name, _ in recorder} >= {"connect", "sendto"}


def test_asyncio_loopback_works(loopback_server: int, guarded: NetworkGuard) -> None:
    async def talk() -> str:
        _, writer = await asyncio.open_connection("localhost", loopback_server)
        peer = writer.get_extra_info("peername")[0]
        writer.close()
        return str(peer)

    assert _run(talk()) in ("127.0.0.1", "::1")


@pytest.fixture
def fake_wire(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    """The real functions behind the guard, replaced by answers that send nothing: a connect that records its
    address, a resolver that answers api.allowed.test with 192.0.2.7 and every other name with a gaierror."""
    reached: list[tuple[str, tuple[Any, ...]]] = []

    def fake(name: str) -> Callable[..., Any]:
        def answer(*args: Any) -> Any:
            reached.append((name, args))
            if name in ("connect", "connect_ex", "sendto"):
                return 0
            host = args[0]
            if host != "api.allowed.test":
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            if name == "getaddrinfo":
                return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.0.2.7", args[1]))]
            if name == "gethostbyname":
                return "192.0.2.8"
            return (host, [], ["192.0.2.9"])

        return answer

    for name in list(_guard._REAL):
        monkeypatch.setitem(_guard._REAL, name, fake(name))
    return reached


def _connect(address: tuple[str, int]) -> None:
    with _tcp() as sock:
        sock.connect(address)


def test_re_allowed_hosts_are_regular_expressions_matched_from_the_start(fake_wire: list[Any]) -> None:
    """pytest-recording's --allowed-hosts (``re:`` rules): re.match, so a pattern allows every host it begins."""
    with NetworkGuard([r"re:192\.0\.2\.", "re:api\\.allowed"]):
        _connect(("192.0.2.55", 443))
        _connect(("api.allowed.test", 443))  # a name that matches may be connected to by name
        with pytest.raises(NetworkBlockedError, match=r"'198\.51\.100\.1':443 was blocked"):
            _connect(("198.51.100.1", 443))
        with pytest.raises(NetworkBlockedError):
            _connect(("x.api.allowed.test", 443))  # matched from the start, as pytest-recording does
    assert [args[1][0] for name, args in fake_wire if name == "connect"] == ["192.0.2.55", "api.allowed.test"]


def test_an_allowed_name_is_resolved_and_its_addresses_become_reachable(fake_wire: list[Any]) -> None:
    with NetworkGuard(["api.allowed.test"]):
        with pytest.raises(NetworkBlockedError, match="a connection \\(connect\\) to '192.0.2.7'"):
            _connect(("192.0.2.7", 443))  # not yet: nothing resolved to it
        assert socket.getaddrinfo("api.allowed.test", 443)[0][4] == ("192.0.2.7", 443)
        assert socket.gethostbyname("api.allowed.test") == "192.0.2.8"
        assert socket.gethostbyname_ex("api.allowed.test")[2] == ["192.0.2.9"]
        for address in ("192.0.2.7", "192.0.2.8", "192.0.2.9"):
            _connect((address, 443))
        with pytest.raises(NetworkBlockedError, match="getaddrinfo\\) of 'other.test'"):
            socket.getaddrinfo("other.test", 443)
    with NetworkGuard(["api.allowed.test"]), pytest.raises(NetworkBlockedError):
        _connect(("192.0.2.7", 443))  # what a guard learned ends with it
    names = [name for name, _ in fake_wire]
    assert names.count("connect") == 3 and "getaddrinfo" in names


def test_nested_guards_pass_only_what_every_guard_allows(fake_wire: list[Any]) -> None:
    outer = NetworkGuard(["192.0.2.1"], reason="--block-network")
    with outer:
        _connect(("192.0.2.1", 80))
        with NetworkGuard(), pytest.raises(NetworkBlockedError) as blocked:
            _connect(("192.0.2.1", 80))
        assert "network guard (replay mode): nothing beyond loopback (127.0.0.1, ::1, localhost) is" in str(
            blocked.value
        )
        with pytest.raises(NetworkBlockedError) as blocked:
            _connect(("192.0.2.2", 80))
        assert (
            "network guard (--block-network): nothing beyond loopback (127.0.0.1, ::1, localhost) and the "
            "allowed hosts (192.0.2.1) is reachable" in str(blocked.value)
        )
        _connect(("192.0.2.1", 80))  # the inner guard is gone: the outer one's rules again
    assert len([name for name, _ in fake_wire if name == "connect"]) == 2


def test_a_blocked_route_is_a_runtime_error_as_pytest_recordings_is(tripwires: list[Any]) -> None:
    with NetworkGuard(), pytest.raises(RuntimeError) as blocked:
        _connect(V4)
    assert isinstance(blocked.value, NetworkBlockedError) and tripwires == []


@pytest.mark.parametrize("hosts", [["re:api.(x"], "api.example.test", ["db:http"], ["[::1"], [""]])
def test_allowed_hosts_that_are_not_a_list_of_host_rules_are_refused(hosts: Any) -> None:
    with pytest.raises((ValueError, TypeError), match=r"allowed_hosts.*(not a regular expression|a list|port|\[|host)"):
        NetworkGuard(hosts)
    with pytest.raises((ValueError, TypeError), match=r"use_cassette\(\): option allowed_hosts"):
        vcr_transport.use_cassette("c.jsonl", block_network=True, allowed_hosts=hosts)


def test_use_cassette_lets_its_allowed_hosts_through(tmp_path: Path, fake_wire: list[Any]) -> None:
    cassette = tmp_path / "empty.jsonl"
    cassette.write_text(json.dumps({"type": "header", "format_version": 1}) + "\n")
    with vcr_transport.use_cassette(cassette, mode="replay", block_network=True, allowed_hosts=["192.0.2.1"]):
        _connect(("192.0.2.1", 80))
        with pytest.raises(NetworkBlockedError):
            _connect(("192.0.2.10", 80))
    assert [args[1] for name, args in fake_wire if name == "connect"] == [("192.0.2.1", 80)]


def _patched_state() -> dict[str, Any]:
    state = {f"socket.{n}": getattr(socket, n) for n in (*_guard._DNS_FUNCTIONS, "socket", "SocketType")}
    state.update({f"_socket.{n}": getattr(_socket, n) for n in (*_guard._DNS_FUNCTIONS, "socket", "SocketType")})
    state.update({f"class.{n}": vars(socket.socket).get(n) for n in _guard._SOCKET_METHODS})
    return state


def test_nested_guards_restore_everything_after_the_last_stop() -> None:
    before = _patched_state()
    outer, inner = NetworkGuard(), NetworkGuard()
    outer.start()
    guarded_state = _patched_state()
    assert guarded_state != before and socket.socket is not before["socket.socket"]
    inner.start()
    inner.start()
    inner.stop()
    inner.stop()
    assert _patched_state() == guarded_state, "an inner stop must not restore while the outer guard is on"
    with pytest.raises(NetworkBlockedError):
        socket.gethostbyname(NAME)
    outer.stop()
    assert _patched_state() == before
    assert socket.socket.connect.__qualname__ == "socket.connect" and "connect" not in vars(socket.socket)
    with pytest.raises(RuntimeError, match="without a start"):
        outer.stop()


def test_a_failed_install_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _patched_state()
    real_replace = _guard._PATCH.replace
    done: list[str] = []

    def failing(owner: Any, name: str, value: Any) -> None:
        if len(done) == 7:
            raise KeyboardInterrupt
        done.append(name)
        real_replace(owner, name, value)

    monkeypatch.setattr(_guard._PATCH, "replace", failing)
    with pytest.raises(KeyboardInterrupt):
        NetworkGuard().start()
    assert len(done) == 7 and _patched_state() == before and not _guard._PATCH.active


def test_after_stop_the_socket_classes_behave_as_before(loopback_server: int) -> None:
    with NetworkGuard():
        made_inside = socket.socket()
        raw_inside = _socket.socket()
    try:
        assert type(made_inside).__name__ == "_GuardedSocket" and isinstance(made_inside, socket.socket)
        made_inside.connect(("127.0.0.1", loopback_server))  # the guard is off: passes through
    finally:
        made_inside.close()
        raw_inside.close()


def test_use_cassette_block_network_guards_replay_only(tmp_path: Path) -> None:
    cassette = tmp_path / "empty.jsonl"
    cassette.write_text(json.dumps({"type": "header", "format_version": 1}) + "\n")
    before = _patched_state()
    with vcr_transport.use_cassette(cassette, mode="replay", block_network=True):
        with pytest.raises(NetworkBlockedError):
            socket.getaddrinfo(NAME, 443)
    assert _patched_state() == before
    with vcr_transport.use_cassette(cassette, mode="replay"):
        assert _patched_state() == before, "without block_network nothing is patched"
    with pytest.raises(ZeroDivisionError), vcr_transport.use_cassette(cassette, mode="replay", block_network=True):
        raise ZeroDivisionError
    assert _patched_state() == before, "restored on an exception too"
    with vcr_transport.use_cassette(tmp_path / "new.jsonl", mode="record", block_network=True):
        assert _patched_state() == before, "recording needs the network"


def test_a_replay_test_under_the_plugin_is_guarded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_routes=textwrap.dedent(
            """
            import _socket, socket
            import pytest
            from vcr_transport import NetworkBlockedError
            from vcr_transport import _guard

            @pytest.fixture
            def tripwire(monkeypatch):
                real = _guard._REAL["getaddrinfo"]
                def numeric_only(*args):
                    if not args[5] & socket.AI_NUMERICHOST:
                        raise AssertionError("reached the real resolver with %r" % (args,))
                    return real(*args)
                monkeypatch.setitem(_guard._REAL, "getaddrinfo", numeric_only)

            @pytest.mark.vcr_transport(path="empty.jsonl")
            @pytest.mark.parametrize("route", ["bytearray", "udp", "c_class", "super", "dns"])
            def test_blocked(route, tripwire):
                tcp, udp, raw = socket.socket(), socket.socket(type=socket.SOCK_DGRAM), _socket.socket()
                with tcp, udp, pytest.raises(NetworkBlockedError):
                    if route == "bytearray":
                        tcp.connect((bytearray(b"192.0.2.1"), 80))
                    elif route == "udp":
                        udp.sendto(b"x", ("192.0.2.1", 53))
                    elif route == "c_class":
                        raw.connect(("192.0.2.1", 80))
                    elif route == "super":
                        super(socket.socket, tcp).connect(("192.0.2.1", 80))
                    else:
                        socket.getaddrinfo("example.invalid", 80)
                raw.close()

            @pytest.mark.vcr_transport(path="empty.jsonl")
            def test_localhost_names_resolve_without_the_resolver(tripwire):
                found = socket.getaddrinfo("api.localhost", 80, type=socket.SOCK_STREAM)
                assert found and {entry[4][0] for entry in found} <= {"127.0.0.1", "::1"}

            def test_unmarked_tests_are_not_guarded():
                assert socket.socket.__name__ == "socket" and _socket.socket.__name__ == "socket"
            """
        )
    )
    (pytester.path / "empty.jsonl").write_text(json.dumps({"type": "header", "format_version": 1}) + "\n")
    pytester.runpytest("--vcr-mode=replay").assert_outcomes(passed=7)


class _EarlyRaw(_socket.socket):
    """A subclass of the C socket class made before any guard: its methods are the C class's own."""


def test_an_early_subclass_of_the_c_socket_class_is_checked_and_restored(
    tripwires: list[tuple[str, tuple[Any, ...]]],
) -> None:
    sock = _EarlyRaw()
    try:
        with NetworkGuard():
            assert "connect" in vars(_EarlyRaw)
            with pytest.raises(NetworkBlockedError):
                sock.connect(V4)
            with pytest.raises(NetworkBlockedError):
                sock.sendto(b"x", ("127.0.0.53", 53))
        assert not {"connect", "connect_ex", "sendto", "sendmsg"} & set(vars(_EarlyRaw)), "restored at the stop"
    finally:
        sock.close()
    assert tripwires == []


def test_uvloops_loop_is_checked_while_the_guard_is_on_and_restored_after() -> None:
    uvloop = pytest.importorskip("uvloop")
    before = {name: vars(uvloop.Loop).get(name) for name in _guard._UVLOOP_HOOKS}
    with NetworkGuard():
        assert all(vars(uvloop.Loop).get(name) is not None for name in _guard._UVLOOP_HOOKS)

        async def connect() -> None:
            await asyncio.open_connection("192.0.2.1", 80)

        with pytest.raises(NetworkBlockedError, match=r"loop\.create_connection"):
            uvloop.run(connect())
    assert {name: vars(uvloop.Loop).get(name) for name in _guard._UVLOOP_HOOKS} == before


def test_uvloop_reaches_loopback_by_name_and_address_under_the_guard(loopback_server: int) -> None:
    uvloop = pytest.importorskip("uvloop")

    async def talk(host: str) -> str:
        _, writer = await asyncio.open_connection(host, loopback_server)
        peer = writer.get_extra_info("peername")[0]
        writer.close()
        return str(peer)

    async def lookup() -> set[str]:
        found = await asyncio.get_running_loop().getaddrinfo("api.localhost", 80, type=socket.SOCK_STREAM)
        return {entry[4][0] for entry in found}

    with NetworkGuard():
        assert uvloop.run(talk("localhost")) == "127.0.0.1"  # answered by the guard, never by libuv's resolver
        assert uvloop.run(talk("127.0.0.1")) == "127.0.0.1"
        assert uvloop.run(lookup()) <= {"127.0.0.1", "::1"}


# --- routes around the patched classes, met by the audit hook ----------------------------------------------


@pytest.fixture
def outside(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[socket.socket, socket.socket]]:
    """A TCP listener and a UDP socket on one loopback port that ALL_PROXY names, so that the guard treats them
    as the outside (a loopback proxy forwards): what reaches them got past the guard."""
    tcp = socket.create_server(("127.0.0.1", 0))
    port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", port))
    for sock in (tcp, udp):
        sock.settimeout(0.2)
    monkeypatch.setenv("ALL_PROXY", f"socks5://127.0.0.1:{port}")
    try:
        yield tcp, udp
    finally:
        tcp.close()
        udp.close()


def _nothing_arrived(outside: tuple[socket.socket, socket.socket]) -> bool:
    tcp, udp = outside
    for receive in (tcp.accept, lambda: udp.recv(100)):
        try:
            receive()
        except TimeoutError:
            continue
        return False
    return True


def _late_bare_subclass() -> Any:
    class LateBare(_BoundCSocket):  # type: ignore[misc]
        pass

    return LateBare()


@pytest.mark.parametrize(
    "make",
    [lambda: socket.socket.__mro__[-2](), _BoundCSocket, _late_bare_subclass],
    ids=["socket.socket.__mro__", "from _socket import socket", "a subclass of it made under the guard"],
)
@pytest.mark.parametrize("allowed", [(), ("*",)], ids=["replay", "allowed_hosts=*"])
def test_the_c_socket_class_reached_around_the_guard_is_refused_as_the_socket_is_made(
    make: Callable[[], Any], allowed: tuple[str, ...]
) -> None:
    with NetworkGuard(allowed), pytest.raises(NetworkBlockedError, match="make the socket through socket.socket"):
        make().close()
    make().close()  # after the stop, as before


@pytest.mark.parametrize("how", ["connect", "connect_ex", "super(socket.socket, s).connect"])
def test_a_socket_made_before_the_guard_is_checked_at_the_c_connect(
    how: str, outside: tuple[socket.socket, socket.socket]
) -> None:
    address = outside[0].getsockname()
    original = socket.socket
    bare, wrapped = _socket.socket(), socket.socket()
    try:
        with NetworkGuard():
            with pytest.raises(NetworkBlockedError, match="loopback proxy of ALL_PROXY"):
                if how == "connect":
                    bare.connect(address)
                elif how == "connect_ex":
                    bare.connect_ex(address)
                else:
                    super(original, wrapped).connect(address)
    finally:
        bare.close()
        wrapped.close()
    assert _nothing_arrived(outside)


@pytest.mark.parametrize("how", ["sendto", "sendmsg"])
def test_a_datagram_from_a_socket_made_before_the_guard_is_checked(
    how: str, outside: tuple[socket.socket, socket.socket]
) -> None:
    address = outside[1].getsockname()
    bare = _socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        with NetworkGuard(), pytest.raises(NetworkBlockedError):
            if how == "sendto":
                bare.sendto(b"x", address)
            else:
                bare.sendmsg([b"x"], [], 0, address)
    finally:
        bare.close()
    assert _nothing_arrived(outside)


def test_a_socket_made_before_the_guard_still_reaches_loopback(loopback_server: int) -> None:
    bare = _socket.socket()
    try:
        with NetworkGuard():
            bare.connect(("127.0.0.1", loopback_server))
            assert bare.getpeername() == ("127.0.0.1", loopback_server)
    finally:
        bare.close()


def test_a_resolver_function_bound_before_the_guard_is_checked() -> None:
    with NetworkGuard(), pytest.raises(NetworkBlockedError, match="getaddrinfo"):
        _bound_getaddrinfo("192.0.2.1", 80, 0, 0, 0, socket.AI_NUMERICHOST)  # numeric: nothing is looked up
    with NetworkGuard():
        assert _bound_getaddrinfo("127.0.0.1", 80, 0, 0, 0, socket.AI_NUMERICHOST)


def _families(*names: str) -> list[Any]:
    return [pytest.param(getattr(socket, name), id=name) for name in names if hasattr(socket, name)]


@pytest.mark.parametrize("family", _families("AF_PACKET", "AF_VSOCK", "AF_BLUETOOTH", "AF_CAN", "AF_TIPC", "AF_RDS"))
def test_a_socket_of_a_family_the_guard_cant_read_is_refused_as_it_is_made(family: int) -> None:
    for allowed in ((), ("*",)):
        with NetworkGuard(allowed), pytest.raises(NetworkBlockedError, match="block_network=False"):
            socket.socket(family, socket.SOCK_RAW).close()


def test_raw_packet_and_raw_ip_sockets_are_refused_where_they_could_be_made() -> None:
    """AF_PACKET and SOCK_RAW need root (CAP_NET_RAW): made first unguarded, so the test knows it could."""
    makers = {
        "AF_PACKET": lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003)),
        "SOCK_RAW": lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW | socket.SOCK_NONBLOCK, socket.IPPROTO_RAW),
        "_socket SOCK_RAW": lambda: _socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_UDP),
    }
    try:
        for make in makers.values():
            make().close()
    except PermissionError as error:
        pytest.skip(f"raw sockets need root (CAP_NET_RAW): {error}")
    for name, make in makers.items():
        with NetworkGuard(["*"]), pytest.raises(NetworkBlockedError, match="no packet was sent"):
            make().close()
            pytest.fail(f"{name} was made under the guard")


def test_unix_and_netlink_sockets_are_still_made() -> None:
    with NetworkGuard():
        left, right = socket.socketpair()
        left.sendall(b"x")
        right.settimeout(5)
        assert right.recv(1) == b"x"
        left.close()
        right.close()
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
