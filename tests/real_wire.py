"""The real wire, from the fixtures in ``tests/fixtures/wire`` (their README says where they came from): the
response headers real vendors send, for every test upstream, and real vendor exchanges.

api.openai.com and api.anthropic.com answer with Cloudflare cookies (``__cf_bm``, ``_cfuvid``) carrying
``Domain``, ``Path``, ``Expires`` and ``HttpOnly; Secure; SameSite=None``, plus HSTS with ``max-age``,
``alt-svc``, rate-limit and processing-time headers. A fixture without them proves nothing about the real
wire, so ``Upstream`` serves one of these sets with every reply (chosen by the request, so that the sets are all
met), and
``vendor_mock`` answers at the vendor's own host with them.

``vendor_traffic`` gives the exchanges (``traffic.ndjson``) the conformance and conversation-view tests serve
and read. The fixtures are part of the repository: there is no other source and no stand-in.
"""

from __future__ import annotations

import email.utils
import json
import random
import string
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "wire"
# What a server sets itself for the body it sends: taken from the reply, never from a recorded set.
_FRAMING = {"content-length", "transfer-encoding", "content-encoding", "connection", "content-type"}


def _load() -> dict[str, list[list[tuple[str, str]]]]:
    sets: dict[str, list[list[tuple[str, str]]]] = {}
    for vendor in ("openai", "anthropic"):
        entries = json.loads((FIXTURES / "headers" / f"{vendor}.json").read_text(encoding="utf-8"))
        sets[vendor] = [[(name, value) for name, value in entry["headers"]] for entry in entries]
    return sets


def vendor_traffic(prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    """The real exchanges whose name (capture file and number: ``test_openai_responses__...#1``) starts with
    ``prefix``, as ``(name, {"source", "request", "response"})``, in the fixture's order."""
    found = []
    for line in (FIXTURES / "traffic.ndjson").read_text(encoding="utf-8").splitlines():
        exchange = json.loads(line)
        if exchange["name"].startswith(prefix):
            found.append((exchange.pop("name"), exchange))
    return found


HEADER_SETS = _load()
# Sets whose cookies carry a real value with attributes (not the "SET-COOKIE-XXX=" of filtered cassettes).
COOKIE_SETS = {
    vendor: [
        number for number, headers in enumerate(sets) if any(";" in v for n, v in headers if n.lower() == "set-cookie")
    ]
    for vendor, sets in HEADER_SETS.items()
}


def vendor_of(path_or_host: str) -> str:
    """Whose headers answer a request: anthropic's for its messages API and host, openai's otherwise (the
    Gemini API's answers are not in the corpus; openai's Cloudflare set stands in, cookies included)."""
    return "anthropic" if "anthropic" in path_or_host or "/v1/messages" in path_or_host else "openai"


def real_headers(vendor: str, number: int | None = None) -> list[tuple[str, str]]:
    """Header set ``number`` of ``vendor`` (by default its first with real cookies), without the framing
    headers a reply sets for its own body."""
    sets = HEADER_SETS[vendor]
    chosen = sets[COOKIE_SETS[vendor][0] if number is None and COOKIE_SETS[vendor] else (number or 0) % len(sets)]
    return [(name, value) for name, value in chosen if name.lower() not in _FRAMING]


def headers_for(vendor: str, request_key: bytes) -> list[tuple[str, str]]:
    """One of ``vendor``'s sets, chosen by the request (its path and body): successive different requests
    meet different sets, and the same request always meets the same one (a re-record of an unchanged call
    gets the answer it got before)."""
    return real_headers(vendor, zlib.crc32(request_key))


# What changes with every answer of a real vendor: its date, its ids and timings.
_PER_ANSWER = {"cf-ray", "x-request-id", "request-id", "openai-processing-ms", "x-envoy-upstream-service-time"}


def _same_shape(value: str) -> str:
    """Random text of ``value``'s shape: each letter another letter of its case, each digit another digit."""
    return "".join(
        random.choice(string.digits)
        if c.isdigit()
        else random.choice(string.ascii_lowercase if c.islower() else string.ascii_uppercase)
        if c.isascii() and c.isalpha()
        else c
        for c in value
    )


def with_real_headers(
    headers: list[tuple[str, str]], vendor: str, request_key: bytes | None = None, date: str | None = None
) -> list[tuple[str, str]]:
    """``headers`` (a reply's own: content type and the like) after a vendor's real set (``headers_for``;
    without ``request_key``, the first set with real cookies); a name the reply sets itself is not taken
    from the set. As on the real wire, each answer has its own ``Date`` (``date``, by default now), request
    ids and timings."""
    own = {name.lower() for name, _ in headers}
    extra = real_headers(vendor) if request_key is None else headers_for(vendor, request_key)
    answer = []
    for name, value in extra:
        lower = name.lower()
        if lower in own:
            continue
        if lower == "date":
            value = date or email.utils.formatdate(usegmt=True)
        elif lower in _PER_ANSWER:
            value = _same_shape(value)
        answer.append((name, value))
    return answer + list(headers)


def vendor_mock(library: Any, answer: Callable[[Any], tuple[int, list[tuple[str, str]], bytes]]) -> Any:
    """A ``library.MockTransport`` that answers at the vendor's own host: ``answer(request)`` gives status,
    the reply's own headers and body; the vendor's real headers (cookies with their Domain) are added."""

    def handler(request: Any) -> Any:
        status, headers, body = answer(request)
        vendor = vendor_of(request.url.host + request.url.path)
        key = request.url.path.encode() + request.read()
        return library.Response(status, headers=with_real_headers(headers, vendor, key), content=body)

    return library.MockTransport(handler)


def at_vendor_host(library: Any, base_url: str, *, is_async: bool) -> Any:
    """An inner transport of ``library`` that sends each request, whatever its host, to the loopback server
    at ``base_url`` over a real socket (its chunks as the server writes them): the client, its cookie jar
    and the recording see the vendor's own host."""
    target = library.URL(base_url)

    def to_loopback(request: Any) -> Any:
        url = request.url.copy_with(scheme=target.scheme, host=target.host, port=target.port)
        return library.Request(request.method, url, headers=request.headers, content=request.content)

    if is_async:

        class AsyncAtVendorHost(library.AsyncHTTPTransport):  # type: ignore[misc, name-defined]
            async def handle_async_request(self, request: Any) -> Any:
                await request.aread()
                return await super().handle_async_request(to_loopback(request))

        return AsyncAtVendorHost()

    class AtVendorHost(library.HTTPTransport):  # type: ignore[misc, name-defined]
        def handle_request(self, request: Any) -> Any:
            request.read()
            return super().handle_request(to_loopback(request))

    return AtVendorHost()
