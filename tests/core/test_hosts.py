"""The network guard's one decision (``_core/rules/_hosts.py``): allowed-host rules, DNS, loopback proxies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from vcr_transport._core.rules._hosts import (
    BEYOND,
    Decision,
    HostRule,
    decide,
    parse_host_rules,
    proxy_ports,
)


def _decide(
    host: str | None, port: int | None, rules: Sequence[str] = (), proxies: Mapping[int, str] | None = None
) -> Decision:
    return decide(host, port, parse_host_rules(rules), {}, lambda: proxies or {})


@pytest.mark.parametrize(
    ("rule", "host", "port", "allowed"),
    [
        ("db", "db", 5432, True),
        ("db", "DB.", 80, True),  # names compare without case and the final dot
        ("db", "db2", 5432, False),
        ("*.internal", "api.internal", 443, True),
        ("*.internal", "internal", 443, False),
        ("10.0.0.*", "10.0.0.7", 80, True),
        ("10.0.0.*", "10.0.1.7", 80, False),
        ("10.0.0.*", "::ffff:10.0.0.7", 80, True),  # an IPv4-mapped address is its IPv4 address
        ("10.0.0.0/8", "10.200.3.4", 80, True),
        ("10.0.0.0/8", "11.0.0.1", 80, False),
        ("localhost:5432", "localhost", 5432, True),
        ("db:5432", "db", 5432, True),
        ("db:5432", "db", 5433, False),
        ("db:5432", "db", None, True),  # a lookup names no port: the name may be resolved
        ("[2001:db8::1]:443", "2001:db8::1", 443, True),
        ("[2001:db8::1]:443", "2001:db8::1", 80, False),
        ("2001:db8::1", "2001:0db8:0::1", 80, True),  # a bare IPv6 address: every port, any spelling
        ("re:api\\.", "api.example.com", 443, True),  # pytest-recording's: matched from the start
        ("re:api\\.", "x.api.example.com", 443, False),
        ("*", "anything.example", 1, True),
    ],
)
def test_a_rule_allows_the_hosts_and_ports_it_names(rule: str, host: str, port: int | None, allowed: bool) -> None:
    assert parse_host_rules([rule])[0].matches(host, port) is allowed
    assert (_decide(host, port, [rule]).action != "block") is allowed or host == "localhost"


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ("db:http", "the port after ':' must be a number"),
        ("db:0", "the port after ':' must be a number"),
        ("[::1", "without closing it"),
        ("[::1]x", "only ':port' may follow"),
        (":80", "names no host"),
        ("10.0.0.0/33", "not an address network"),
        ("re:(", "not a regular expression"),
    ],
)
def test_a_malformed_rule_is_refused_naming_it_and_the_form(rule: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as refused:
        parse_host_rules([rule])
    assert repr(rule) in str(refused.value)


@pytest.mark.parametrize(
    ("host", "port", "action"),
    [
        ("127.0.0.1", 8080, "pass"),
        ("127.9.9.9", 8080, "pass"),
        ("::1", 8080, "pass"),
        ("", 8080, "pass"),
        ("0.0.0.0", 8080, "pass"),
        ("localhost", 8080, "localhost"),
        ("api.LOCALHOST.", 8080, "localhost"),
        ("localhost.example", 8080, "block"),
        ("10.99.0.1", 8080, "block"),
        ("::ffff:10.99.0.1", 8080, "block"),
        ("example.test", None, "block"),  # a lookup of a name
        (None, 80, "block"),
        ("127.0.0.53", 53, "block"),  # a loopback stub resolver forwards the query
        ("127.0.0.11", 53, "block"),
        ("127.0.0.1", 53, "block"),
        ("localhost", 53, "block"),
    ],
)
def test_loopback_passes_dns_and_the_rest_are_blocked(host: str | None, port: int | None, action: str) -> None:
    assert _decide(host, port).action == action


def test_dns_is_blocked_unless_a_rule_allows_that_host() -> None:
    assert "DNS (port 53)" in _decide("127.0.0.53", 53).why
    assert _decide("127.0.0.53", 53, ["127.0.0.53:53"]).action == "pass"
    assert _decide("10.0.0.2", 53, ["10.0.0.2"]).action == "pass"  # a rule without a port: every port
    assert _decide("10.0.0.2", 53, ["10.0.0.2:5432"]).action == "block"


def test_an_address_an_allowed_name_resolved_to_passes_on_that_rules_ports() -> None:
    (rule,) = parse_host_rules(["db:5432"])
    resolved: dict[str, tuple[HostRule, ...]] = {"10.0.0.5": (rule,)}
    assert decide("10.0.0.5", 5432, (rule,), resolved, dict).action == "pass"
    assert decide("::ffff:10.0.0.5", 5432, (rule,), resolved, dict).action == "pass"
    assert decide("10.0.0.5", 22, (rule,), resolved, dict).why == BEYOND
    assert decide("10.0.0.6", 5432, (rule,), resolved, dict).action == "block"


@pytest.mark.parametrize(
    ("environ", "ports"),
    [
        ({"HTTP_PROXY": "http://127.0.0.1:3128"}, {3128}),
        ({"https_proxy": "http://user:secret@localhost:8888/"}, {8888}),
        ({"ALL_PROXY": "socks5://[::1]:1080"}, {1080}),
        ({"all_proxy": "socks5h://127.0.0.1"}, {1080}),  # a scheme's default port
        ({"HTTP_PROXY": "127.0.0.1:3128"}, {3128}),  # no scheme, as curl takes it
        ({"HTTP_PROXY": "http://127.0.0.1"}, {80}),
        ({"WS_PROXY": "http://127.0.0.1:9000"}, {9000}),  # any *_proxy, as urllib reads them
        ({"HTTP_PROXY": "http://10.1.2.3:3128"}, set()),  # beyond loopback: blocked as any host is
        ({"NO_PROXY": "127.0.0.1:80", "PATH": "/bin"}, set()),
        ({"HTTP_PROXY": "http://127.0.0.1:notaport"}, set()),
        ({"HTTP_PROXY": ""}, set()),
    ],
)
def test_proxy_ports_are_the_loopback_ports_proxy_variables_name(environ: dict[str, str], ports: set[int]) -> None:
    assert set(proxy_ports(environ)) == ports


def test_a_loopback_proxy_port_is_blocked_unless_allowed() -> None:
    proxies = proxy_ports({"HTTP_PROXY": "http://127.0.0.1:3128"})
    blocked = _decide("127.0.0.1", 3128, proxies=proxies)
    assert blocked.action == "block" and "HTTP_PROXY=http://127.0.0.1:3128" in blocked.why
    assert _decide("localhost", 3128, proxies=proxies).action == "block"
    assert _decide("127.0.0.1", 3129, proxies=proxies).action == "pass"
    assert _decide("127.0.0.1", 3128, ["127.0.0.1:3128"], proxies=proxies).action == "pass"
