"""What the network guard lets through: one decision, no I/O.

``decide(host, port, rules, ...)`` answers for every route the guard's hooks see (a socket's ``connect`` or
``sendto``, a resolver call, an event loop's ``create_connection``): pass, pass after answering a
``localhost`` name with a loopback address, or block, with the reason. The hooks in ``_guard.py`` only turn
what a route names into ``(host, port)`` and act on the answer.

The rules, in order:

1. A host an allowed-hosts rule matches passes (``HostRule``: a glob of a name or an address, an address
   network ``10.0.0.0/8``, or pytest-recording's ``re:`` regular expression; with ``:port``, that port
   only). So does an address an allowed name resolved to, on the ports that rule allows.
2. DNS (port 53, UDP or TCP) is blocked to every address, loopback too: a stub resolver on 127.0.0.53
   (systemd-resolved) or 127.0.0.11 (Docker) forwards the query off the machine.
3. A loopback port named by a proxy variable (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, either case:
   ``PROXY_VARIABLES``, ``proxy_ports``) is blocked: a local proxy forwards what it is given.
4. The rest of loopback (127.0.0.0/8, ::1, the unspecified address, ``localhost`` and ``*.localhost``) passes.
5. Everything else is blocked.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import ipaddress
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import Literal, NamedTuple

from ._patterns import UserPattern, user_pattern

__all__ = [
    "BEYOND",
    "DNS_PORT",
    "PROXY_VARIABLES",
    "canonical_address",
    "Decision",
    "HostRule",
    "decide",
    "is_localhost_name",
    "local_address",
    "parse_host_rules",
    "proxy_ports",
]

DNS_PORT = 53
# The proxy variables the guard reads (urllib, requests, httpx, aiohttp and curl read these), either case.
PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
_DEFAULT_PROXY_PORTS = {"http": 80, "https": 443, "socks": 1080, "socks4": 1080, "socks5": 1080, "socks5h": 1080}
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def is_localhost_name(text: str) -> bool:
    name = text.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


@functools.lru_cache(maxsize=1024)
def _address(text: str) -> Address | None:
    """A numeric address (an IPv4-mapped IPv6 one as its IPv4 address, a zone dropped), or None for a name."""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def canonical_address(text: str) -> str | None:
    """A numeric address in the one form the rules compare (``::ffff:10.0.0.1`` is ``10.0.0.1``), or None
    for a name."""
    address = _address(text)
    return None if address is None else str(address)


def local_address(text: str) -> bool | None:
    """True for a numeric loopback or unspecified address ('' too: INADDR_ANY), False for any other numeric
    one, None for a name."""
    if text == "":
        return True
    address = _address(text)
    if address is None:
        return None
    return address.is_loopback or address.is_unspecified


@dataclasses.dataclass(frozen=True)
class HostRule:
    """One allowed host: ``text`` as given; a name or address glob (``*.internal``, ``db``, ``10.0.0.*``), an
    address network (``10.0.0.0/8``), or ``re:`` and a regular expression matched from the start of the host
    (pytest-recording's ``--allowed-hosts``); ``port`` None allows every port."""

    text: str
    glob: str = ""
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    pattern: UserPattern | None = None
    port: int | None = None

    def allows_port(self, port: int | None) -> bool:
        return self.port is None or port is None or port == self.port

    def matches(self, host: str, port: int | None, address: Address | None | bool = False) -> bool:
        """Whether this rule allows ``host`` (a name or a numeric address) on ``port`` (None: a lookup, which
        names no port, or any port). ``address``: ``host`` parsed already (``_address``), when the caller has."""
        if not self.allows_port(port):
            return False
        if self.pattern is not None:
            return self.pattern.match(host) is not None
        if address is False:
            address = _address(host)
        if self.network is not None:
            return isinstance(address, Address) and address in self.network
        text = str(address) if isinstance(address, Address) else host.lower().rstrip(".")
        return fnmatch.fnmatchcase(text, self.glob)


def _regex_rule(text: str) -> HostRule:
    """A ``re:`` rule: the regular expression after the prefix, matched from the start of the host."""
    try:
        re.compile(text[3:])
    except re.error as error:
        raise ValueError(f"{text!r} is not a regular expression after 're:': {error}") from None
    return HostRule(text, pattern=user_pattern(text[3:], f"host rule {text!r}"))


def _bracketed(text: str) -> tuple[str, str | None]:
    """The host and the port text of ``[v6]:port`` or ``[v6]``."""
    close = text.find("]")
    if close < 0:
        raise ValueError(f"{text!r} opens '[' without closing it; write an IPv6 host as [::1]:5432 or ::1")
    host, rest = text[1:close], text[close + 1 :]
    if rest and not rest.startswith(":"):
        raise ValueError(f"{text!r}: after ']' only ':port' may follow")
    return host, rest[1:] if rest else None


def _host_and_port_text(text: str) -> tuple[str, str | None]:
    """The host of a rule and the text of its port (None: every port)."""
    if text.startswith("["):
        return _bracketed(text)
    if text.count(":") == 1:
        host, port_text = text.split(":")
        return host, port_text
    return text, None  # a name, an IPv4 glob, or a bare IPv6 address (more than one colon): every port


def _port(text: str, port_text: str | None) -> int | None:
    if port_text is None:
        return None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"{text!r}: the port after ':' must be a number from 1 to 65535")
    return int(port_text)


def _parse_rule(text: str) -> HostRule:
    if text.startswith("re:"):
        return _regex_rule(text)
    host, port_text = _host_and_port_text(text)
    port = _port(text, port_text)
    if not host:
        raise ValueError(f"{text!r} names no host; use '*' for every host")
    if "/" in host:
        try:
            return HostRule(text, network=ipaddress.ip_network(host, strict=False), port=port)
        except ValueError:
            raise ValueError(f"{text!r} is not an address network (10.0.0.0/8, fd00::/8)") from None
    address = _address(host)
    glob = str(address) if address is not None else host.lower().rstrip(".")
    return HostRule(text, glob=glob, port=port)


def parse_host_rules(texts: Iterable[str]) -> tuple[HostRule, ...]:
    """The rules of ``allowed_hosts``; a malformed one is a ValueError naming it and the form to use."""
    return tuple(_parse_rule(text) for text in texts)


def _is_proxy_variable(name: str) -> bool:
    """Any ``*_proxy`` but ``no_proxy``, either case."""
    lowered = name.lower()
    return lowered.endswith("_proxy") and lowered != "no_proxy"


def _loopback_proxy_port(name: str, value: str) -> int | None:
    """The loopback port a proxy variable points at (its scheme's default port when it names none); None for a
    variable that is no proxy, an empty or malformed one, and a proxy beyond loopback (blocked as any other
    host is)."""
    text = value.strip()
    if not (_is_proxy_variable(name) and text):
        return None
    parts = urllib.parse.urlsplit(text if "://" in text else f"http://{text}")
    try:
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname or ""
    if not (is_localhost_name(host) or local_address(host)):
        return None
    return port or _DEFAULT_PROXY_PORTS.get(parts.scheme.lower(), 80)


def proxy_ports(environ: Mapping[str, str]) -> dict[int, str]:
    """The loopback ports that the proxy variables of ``environ`` point at (``HTTP_PROXY=http://127.0.0.1:3128``:
    any ``*_proxy`` but ``no_proxy``, either case), each with the variable naming it."""
    found: dict[int, str] = {}
    for name, value in environ.items():
        port = _loopback_proxy_port(name, value)
        if port is not None:
            found.setdefault(port, f"{name}={value}")
    return found


class Decision(NamedTuple):
    """What to do with a route: ``"pass"``, ``"localhost"`` (pass, with a ``localhost`` name answered by a
    loopback address, never the real resolver) or ``"block"``; ``why`` says why it is blocked (``BEYOND``:
    the host is beyond loopback and no rule allows it)."""

    action: Literal["pass", "localhost", "block"]
    why: str = ""


BEYOND = "beyond loopback"
# The addresses allowed names resolved to, each with the rules that allowed it.
_Resolved = Mapping[str, tuple[HostRule, ...]]


def _allowed(
    host: str, port: int | None, address: Address | None, rules: Iterable[HostRule], resolved: _Resolved
) -> bool:
    """Whether a rule allows ``host`` on ``port``, or ``host`` is an address an allowed name resolved to, on a
    port that name's rule allows."""
    if any(rule.matches(host, port, address) for rule in rules):
        return True
    return address is not None and any(rule.allows_port(port) for rule in resolved.get(str(address), ()))


def _local(host: str, address: Address | None) -> bool:
    """Whether ``host`` is a loopback or unspecified address ('' too: INADDR_ANY)."""
    return host == "" or (address is not None and (address.is_loopback or address.is_unspecified))


def _through_proxy(port: int | None, proxies: Callable[[], Mapping[int, str]]) -> str:
    """Why a loopback route to ``port`` is blocked when a proxy variable names that port; "" when none does."""
    if port is None:
        return ""
    named = proxies()
    if port not in named:
        return ""
    return f"port {port} is the loopback proxy of {named[port]}, which forwards beyond loopback"


_DNS_BLOCKED = Decision("block", "DNS (port 53) is blocked to every address, a loopback stub resolver's too")


def decide(
    host: str | None,
    port: int | None,
    rules: Iterable[HostRule],
    resolved: _Resolved,
    proxies: Callable[[], Mapping[int, str]],
) -> Decision:
    """The guard's answer for a route to ``host`` (text: a name or a numeric address; None when the route
    named no host of a form a socket accepts) on ``port`` (None for a lookup). ``resolved``: addresses allowed
    names resolved to, with the rules that allowed them; ``proxies``: ``proxy_ports`` of the environment, asked
    only for a loopback host with a port."""
    if host is None:
        return Decision("block", BEYOND)
    address = _address(host)
    if _allowed(host, port, address, rules, resolved):
        return Decision("pass")
    if port == DNS_PORT:
        return _DNS_BLOCKED
    localhost = address is None and is_localhost_name(host)
    if not (localhost or _local(host, address)):
        return Decision("block", BEYOND)
    proxy = _through_proxy(port, proxies)
    if proxy:
        return Decision("block", proxy)
    return Decision("localhost" if localhost else "pass")
