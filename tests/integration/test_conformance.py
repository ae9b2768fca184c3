"""Conformance over real vendor traffic (``tests/fixtures/wire/traffic.ndjson``): each exchange is served by a
loopback server, called through the real SDK for its host while recording, then replayed offline. The SDK-level
result, the bytes and the chunk boundaries the SDK received must be identical. A stream is served three ways
(split at its events, every 7 bytes, and at 64 bytes with CRLF line endings), on the sync and async sides in
turn."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from helpers import recording
from real_wire import vendor_traffic
from tap import Tap
from upstream import Reply, Upstream, split_bytes, split_events

import vcr_transport
from vcr_transport import PLACEHOLDER, Redactor

DROPPED_HEADERS = {"content-length", "transfer-encoding", "content-encoding", "connection"}


class Exchange(NamedTuple):
    interaction: dict[str, Any]
    variant: int  # % 3: how the body is split (a stream: at events, every 7 bytes, CRLF); % 2: the async side


def _streaming(headers: Any) -> bool:
    return any(
        k.lower() == "content-type" and "event-stream" in (v if isinstance(v, str) else v[0]) for k, v in headers
    )


def _exchanges() -> list[Any]:
    found = []
    for name, interaction in vendor_traffic():
        # A stream is served three times, in turn split at its events, every 7 bytes, and with CRLF line endings.
        for _ in range(3 if _streaming(interaction["response"]["headers"].items()) else 1):
            found.append(pytest.param(Exchange(interaction, len(found)), id=f"{name[:70]}-{len(found)}"))
    return found


def _reply(interaction: dict[str, Any], variant: int) -> Reply:
    response = interaction["response"]
    headers = [
        (k, v if isinstance(v, str) else v[0])
        for k, v in response["headers"].items()
        if k.lower() not in DROPPED_HEADERS
    ]
    body = response["body"]
    data = json.dumps(body["json"]).encode() if "json" in body else body["text"].encode()
    streaming = _streaming(headers)
    if streaming and variant % 3 == 2:
        data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    chunks = split_events(data) if streaming and variant % 3 == 0 else split_bytes(data, 7 if variant % 3 == 1 else 64)
    return Reply(response["status"], headers, chunks, pause=0.0002 if streaming else 0.0)


def _call(client: Any, kind: str, request: dict[str, Any], streaming: bool) -> Any:
    """One call through the SDK's own request machinery; returns what the SDK gives the user."""
    parts = urlsplit(request["uri"])
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    method = request["method"].lower()
    body = request["body"].get("json")
    try:
        if kind in ("openai", "anthropic"):
            module = openai if kind == "openai" else anthropic
            options: dict[str, Any] = {"cast_to": object}
            if body is not None:
                options["body"] = body
            if streaming:
                return [
                    event
                    for event in getattr(client, method)(path, stream=True, stream_cls=module.Stream[object], **options)
                ]
            return getattr(client, method)(path, **options)
        if kind == "genai":
            version, _, rest = parts.path.lstrip("/").partition("/")
            http_options = genai_types.HttpOptions(api_version=version)
            rest += f"?{parts.query}" if parts.query else ""
            if streaming:
                return [r.body for r in client._api_client.request_streamed(method, rest, body or {}, http_options)]
            return client._api_client.request(method, rest, body or {}, http_options).body
        response = client.request(
            request["method"], path, content=json.dumps(body).encode() if body is not None else None
        )
        return response.status_code, response.content
    except Exception as exc:  # an error exchange: the error the SDK raises is the result
        return type(exc).__name__, str(exc)


async def _call_async(client: Any, kind: str, request: dict[str, Any], streaming: bool) -> Any:
    parts = urlsplit(request["uri"])
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    method = request["method"].lower()
    body = request["body"].get("json")
    try:
        if kind == "genai":
            version, _, rest = parts.path.lstrip("/").partition("/")
            rest += f"?{parts.query}" if parts.query else ""
            api, http_options = client.aio._api_client, genai_types.HttpOptions(api_version=version)
            if streaming:
                return [r.body async for r in await api.async_request_streamed(method, rest, body or {}, http_options)]
            return (await api.async_request(method, rest, body or {}, http_options)).body
        module = openai if kind == "openai" else anthropic
        options: dict[str, Any] = {"cast_to": object}
        if body is not None:
            options["body"] = body
        if streaming:
            stream = await getattr(client, method)(path, stream=True, stream_cls=module.AsyncStream[object], **options)
            return [event async for event in stream]
        return await getattr(client, method)(path, **options)
    except Exception as exc:
        return type(exc).__name__, str(exc)


def _kind(host: str) -> str:
    if "anthropic" in host:
        return "anthropic"
    if "googleapis" in host and "oauth2" not in host:
        return "genai"
    if "openai" in host or "cerebras" in host:
        return "openai"
    return "plain"


def _run(transport: Any, base_url: str, interaction: dict[str, Any], streaming: bool, use_async: bool) -> Any:
    kind = _kind(urlsplit(interaction["request"]["uri"]).hostname or "")
    if use_async:

        async def run() -> Any:
            async with httpx2.AsyncClient(transport=transport) as http:
                if kind == "genai":
                    http_options = genai_types.HttpOptions(base_url=base_url, httpx_async_client=http)
                    google = genai.Client(api_key="AIza-conformance", http_options=http_options)
                    return await _call_async(google, kind, interaction["request"], streaming)
                cls = openai.AsyncOpenAI if kind == "openai" else anthropic.AsyncAnthropic
                client = cls(
                    api_key="sk-conformance-000000000000000000000", base_url=base_url, http_client=http, max_retries=0
                )
                return await _call_async(client, kind, interaction["request"], streaming)

        return asyncio.run(run())
    with httpx2.Client(transport=transport, base_url=base_url) as http:
        client: Any = http
        if kind == "openai":
            client = openai.OpenAI(
                api_key="sk-conformance-000000000000000000000", base_url=base_url, http_client=http, max_retries=0
            )
        elif kind == "anthropic":
            client = anthropic.Anthropic(
                api_key="sk-ant-conformance-0000000000000000", base_url=base_url, http_client=http, max_retries=0
            )
        elif kind == "genai":
            client = genai.Client(
                api_key="AIza-conformance", http_options=genai_types.HttpOptions(base_url=base_url, httpx_client=http)
            )
        return _call(client, kind, interaction["request"], streaming)


@pytest.fixture(scope="module")
def vendor() -> Any:
    server = Upstream().start()
    yield server
    server.stop()


@pytest.mark.parametrize("exchange", _exchanges())
@pytest.mark.slow
def test_vendor_exchange_replays_identically(exchange: Exchange, vendor: Upstream, tmp_path: Path) -> None:
    interaction, variant = exchange
    reply = _reply(interaction, variant)
    streaming = _streaming(reply.headers)
    kind = _kind(urlsplit(interaction["request"]["uri"]).hostname or "")
    use_async = kind != "plain" and variant % 2 == 1
    vendor.routes["/"] = lambda received: reply
    cassette = tmp_path / "exchange.jsonl"

    live_tap = Tap(recording(httpx2, use_async, cassette))
    live = _run(live_tap, vendor.url, interaction, streaming, use_async)
    served = len(vendor.received)
    vendor.routes["/"] = lambda received: Reply.json({"error": "replay must not reach the network"}, status=599)

    replay_tap = Tap(vcr_transport.ReplayTransport(cassette))
    replayed = _run(replay_tap, vendor.url, interaction, streaming, use_async)

    assert len(vendor.received) == served, "replay opened a connection"
    assert b"".join(live_tap.calls[-1]) == b"".join(reply.chunks)
    body = b"".join(reply.chunks).decode()
    redacted = Redactor().redact_text(body, response=True)
    if redacted != body:
        # A response carrying credentials (an OAuth token exchange) replays with them removed, same chunking.
        assert b"".join(replay_tap.calls[-1]) == redacted.encode()
        assert len(replay_tap.calls[-1]) == len(live_tap.calls[-1])
        assert PLACEHOLDER in str(replayed)
        return
    assert replayed == live
    assert replay_tap.calls == live_tap.calls
