"""A planted-secret corpus: every credential format in every place a request, a response, a stream or an
error can carry it, sent through the real SDK clients (sync and async) to the loopback upstream and
recorded. The cassette's raw bytes, and its base64- and gzip-decoded payloads, must hold none of them; the
`scan` engine must find them when they are written, unredacted, into files of each kind."""

from __future__ import annotations

import asyncio
import base64
import functools
import gzip
import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from upstream import Received, Reply, Upstream, split_bytes
from vendors import SDKS, VENDOR_ROUTES, Sdk, anthropic_reply, gemini_reply, openai_reply, sse

import vcr_transport
from vcr_transport._core.format._bodies import content_encodings, decode_stacked
from vcr_transport._core.rules._redaction import Redactor
from vcr_transport._core.rules._scan import scan_document
from vcr_transport._core.rules._stream import delta_channels

# Formats the `rules` branch adds to the catalogue; cases that need them fail until it is merged.
CATALOGUE_FORMATS = {"github", "slack", "stripe", "aws", "jwt", "pem"}
ALPHABET = string.ascii_letters + string.digits


def _core(rng: random.Random, length: int) -> str:
    return "Q7" + "".join(rng.choice(ALPHABET) for _ in range(length - 2))


def _pem(core: str) -> str:
    lines = [core[i : i + 64] for i in range(0, len(core), 64)]
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----"


def _jwt(core: str) -> str:
    def part(obj: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': '1234567890'})}.{core}"


# format -> (length of the random core, how the secret is built around it)
FORMATS: dict[str, tuple[int, Callable[[str], str]]] = {
    "openai": (40, lambda c: "sk-proj-" + c),
    "anthropic": (40, lambda c: "sk-ant-api03-" + c),
    "google": (35, lambda c: "AIza" + c),
    "bearer": (32, lambda c: "Bearer " + c),
    "github": (36, lambda c: "ghp_" + c),
    "slack": (24, lambda c: "xoxb-123456789012-123456789012-" + c),
    "stripe": (24, lambda c: "sk_live_" + c),
    "aws": (16, lambda c: "AKIA" + c.upper()),
    "jwt": (43, _jwt),
    "pem": (256, _pem),
}
# Places that can't hold a format: a URL can't carry "Bearer <x>" (a space) or a PEM block (newlines),
# and a header value can't hold newlines.
NOT_IN = {"bearer": {"path", "query", "fragment"}, "pem": {"path", "query", "fragment", "header"}}
REQUEST_LOCATIONS = ["header", "query", "path", "fragment", "form", "json_value", "json_key", "nested_json"]
REQUEST_LOCATIONS += ["multipart", "gzip_request"]
RESPONSE_LOCATIONS = ["response_json", "sse_split_every_offset", "sse_deltas", "tool_argument_deltas"]
RESPONSE_LOCATIONS += ["long_line", "gzip_response", "stacked_encodings", "gzip_sse_deltas", "exception_message"]
# What google-genai's public surface can't send: form, multipart and compressed request bodies.
GENAI_CANNOT = {"form", "multipart", "gzip_request"}


@dataclass
class Planted:
    location: str
    format: str
    secret: str
    core: str

    def fragments(self) -> list[str]:
        """Windows of the random core: any of them in the cassette is (part of) a leak."""
        core = self.core.upper() if self.format == "aws" else self.core
        return [core[i : i + 12] for i in range(0, len(core) - 11, 6)]


class Corpus:
    def __init__(self, seed: str) -> None:
        self.rng = random.Random(seed)
        self.planted: list[Planted] = []

    def secrets(self, location: str) -> list[str]:
        found = []
        for name, (length, build) in FORMATS.items():
            if location in NOT_IN.get(name, set()):
                continue
            core = _core(self.rng, length)
            secret = build(core)
            self.planted.append(Planted(location, name, secret, core))
            found.append(secret)
        return found


def _sdk_ids() -> list[Any]:
    return [
        pytest.param(sdk, id=sdk.id)
        for sdk in SDKS
        if sdk.library is httpx2 and sdk.name in ("openai", "anthropic", "genai")
    ]


# --- the upstream's replies, per vendor ------------------------------------------------------------------


def _stream_events(vendor: str, texts: list[str], tool_args: list[str]) -> bytes:
    """An SSE body carrying ``texts`` as successive text deltas and ``tool_args`` as argument deltas."""
    if vendor == "openai":
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        events: list[tuple[str | None, Any]] = [
            (None, {**base, "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]}) for t in texts
        ]
        call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
        events.append((None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
        events += [
            (
                None,
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": a}}]}}],
                },
            )
            for a in tool_args
        ]
        events += [(None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), (None, "[DONE]")]
        return sse(events)
    if vendor == "anthropic":
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        events = [("message_start", {"type": "message_start", "message": message})]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
        )
        events += [
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
            )
            for t in texts
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
                },
            )
        )
        events += [
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": a}},
            )
            for a in tool_args
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 1}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": 2},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return sse(events)
    parts = [
        (None, {"candidates": [{"content": {"parts": [{"text": t}], "role": "model"}, "index": 0}]}) for t in texts
    ]
    parts.append(
        (
            None,
            {
                "candidates": [
                    {"content": {"parts": [{"text": "."}], "role": "model"}, "index": 0, "finishReason": "STOP"}
                ]
            },
        )
    )
    return sse(parts, "\r\n")


def _pieces(secrets: list[str], size: int) -> list[str]:
    """The secrets as a model emits them: a few characters per delta."""
    text = " ".join(secrets) + " "
    return [text[i : i + size] for i in range(0, len(text), size)]


def _long_text(secrets: list[str]) -> str:
    """Over 64 KiB on one line, secrets packed so that some straddle every place a long line is cut."""
    filler = "lorem ipsum " * 30
    out = ""
    while len(out) < 3 * 65536:
        for secret in secrets:
            out += filler[: 100 + len(out) % 211] + " " + secret.replace("\n", " ") + " "
    return out


# --- the run ---------------------------------------------------------------------------------------------


class RaisingTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """The real HTTP transport, except that a request to ``/boom`` fails with a message holding secrets."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.sync = httpx2.HTTPTransport()
        self.async_ = httpx2.AsyncHTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if "/boom" in request.url.path:
            raise httpx2.ConnectError(self.message, request=request)
        return self.sync.handle_request(request)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if "/boom" in request.url.path:
            raise httpx2.ConnectError(self.message, request=request)
        return await self.async_.handle_async_request(request)

    def close(self) -> None:
        self.sync.close()

    async def aclose(self) -> None:
        await self.async_.aclose()


def _record(sdk: Sdk, upstream: Any, cassette: Path) -> Corpus:
    corpus = Corpus(sdk.id)
    vendor = sdk.name
    s = {location: corpus.secrets(location) for location in REQUEST_LOCATIONS + RESPONSE_LOCATIONS}
    if vendor == "genai":
        for location in GENAI_CANNOT:
            corpus.planted = [p for p in corpus.planted if p.location != location]
    reply_of = {"openai": openai_reply, "anthropic": anthropic_reply, "genai": gemini_reply}[vendor]
    stream_prefix = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "genai": "/v1/models/"}[vendor]

    def scripted(received: Received) -> Reply:
        """The stream/chat route answers in turn: echo split at every offset, deltas, a long line, gzip."""
        step = received.headers.get("x-step", "")
        if step == "split":
            return reply_of(received, split=1)
        if step == "deltas":
            body = _stream_events(vendor, _pieces(s["sse_deltas"], 5), _pieces(s["tool_argument_deltas"], 3))
            return Reply(200, [("content-type", "text/event-stream")], split_bytes(body, 97))
        if step == "long":
            body = _stream_events(vendor, [_long_text(s["long_line"])], ["{}"])
            return Reply(200, [("content-type", "text/event-stream")], split_bytes(body, 4093))
        if step == "gzip_sse":
            body = _stream_events(vendor, _pieces(s["gzip_sse_deltas"], 4), ["{}"])
            return Reply(200, [("content-type", "text/event-stream")], [body], gzip=True)
        if step == "gzip":
            return Reply.json(json.loads(reply_of(received).chunks[0]) | {"note": s["gzip_response"]}, gzip=True)
        if step == "stacked":
            body = json.dumps(json.loads(reply_of(received).chunks[0]) | {"note": s["stacked_encodings"]}).encode()
            twice = gzip.compress(gzip.compress(body))
            headers = [("content-type", "application/json"), ("content-encoding", "gzip"), ("content-encoding", "gzip")]
            return Reply(200, headers, split_bytes(twice, 50))
        return reply_of(received)

    for prefix, route in VENDOR_ROUTES.values():
        upstream.routes[prefix] = route
    upstream.routes[stream_prefix] = scripted
    upstream.routes["/"] = lambda received: Reply.json({"ok": True})
    inner = RaisingTransport("could not connect: " + " ".join(x.replace("\n", " ") for x in s["exception_message"]))
    if sdk.is_async:
        transport: Any = vcr_transport.AsyncRecordingTransport(inner, cassette, keep_failures=True)
    else:
        transport = vcr_transport.RecordingTransport(inner, cassette, keep_failures=True)
    host = upstream.url.replace("http://", "")
    base_url = f"http://user:{s['header'][0].replace('sk-proj-', 'pw')}@{host}"
    corpus.planted.append(Planted("userinfo", "password", base_url.split(":")[2].split("@")[0], s["header"][0][8:]))
    header_value = " | ".join(s["header"])
    json_prompt = "my keys: " + " ; ".join(s["json_value"]) + " end"
    nested = json.dumps({"config": {"notes": s["nested_json"]}})
    echo_prompt = "echo " + " ".join(x.replace("\n", " ") for x in s["response_json"] + s["sse_split_every_offset"])
    url_path = "/".join(s["path"]) + "?note=" + ",".join(s["query"]) + "#" + ",".join(s["fragment"])
    form = "&".join(f"note{i}={x}" for i, x in enumerate(s["form"])).encode()
    multipart_text = ("notes: " + " ".join(s["multipart"])).encode()
    gzipped = gzip.compress(json.dumps({"notes": s["gzip_request"]}).encode())

    if vendor == "genai":
        from google import genai
        from google.genai import types

        def client_for(extra_body: dict[str, Any] | None = None) -> Any:
            http = httpx2.AsyncClient(transport=transport) if sdk.is_async else httpx2.Client(transport=transport)
            options = types.HttpOptions(
                base_url=base_url,
                headers={"X-Note": header_value},
                extra_body=extra_body,
                **({"httpx_async_client": http} if sdk.is_async else {"httpx_client": http}),
            )
            return genai.Client(api_key="AIzaSyTESTKEY0123456789abcdefghijklmno", http_options=options)

        async def run_genai() -> None:
            client = client_for({key: 1 for key in s["json_key"]})
            api = client.aio if sdk.is_async else client
            for prompt in (json_prompt, nested):
                result = api.models.generate_content(model="m", contents=prompt)
                await result if sdk.is_async else None
            plain = client_for()
            papi = plain.aio if sdk.is_async else plain
            result = papi.models.generate_content(model="m", contents=echo_prompt)
            await result if sdk.is_async else None
            for step in ("split", "deltas", "long", "gzip_sse"):
                stepped = client_for()
                stepped._api_client._http_options.headers["x-step"] = step
                sapi = stepped.aio if sdk.is_async else stepped
                if sdk.is_async:
                    async for _ in await sapi.models.generate_content_stream(model="m", contents="hi"):
                        pass
                else:
                    for _ in sapi.models.generate_content_stream(model="m", contents="hi"):
                        pass
            for step in ("gzip", "stacked"):
                stepped = client_for()
                stepped._api_client._http_options.headers["x-step"] = step
                sapi = stepped.aio if sdk.is_async else stepped
                result = sapi.models.generate_content(model="m", contents="hi")
                await result if sdk.is_async else None
            if sdk.is_async:
                await plain.aio._api_client.async_request("post", "echo/" + url_path, {"a": 1})
            else:
                plain._api_client.request("post", "echo/" + url_path, {"a": 1})
            with pytest.raises(Exception, match="could not connect"):
                if sdk.is_async:
                    await plain.aio._api_client.async_request("post", "boom", {"a": 1})
                else:
                    plain._api_client.request("post", "boom", {"a": 1})
            if sdk.is_async:
                await transport.aclose()

        asyncio.run(run_genai())
    else:
        import anthropic
        import openai

        def make(**options: Any) -> Any:
            http = httpx2.AsyncClient(transport=transport) if sdk.is_async else httpx2.Client(transport=transport)
            common = {"http_client": http, "max_retries": 0, "default_headers": {"X-Note": header_value, **options}}
            if vendor == "openai":
                cls = openai.AsyncOpenAI if sdk.is_async else openai.OpenAI
                return cls(api_key="sk-proj-TESTKEYabcdefghijklmnopqrstuvwxyz0123", base_url=base_url + "/v1", **common)
            cls = anthropic.AsyncAnthropic if sdk.is_async else anthropic.Anthropic
            return cls(api_key="sk-ant-api03-TESTKEYabcdefghijklmnopqrstuvwxyz0123", base_url=base_url, **common)

        def chat(client: Any, prompt: str, **extra: Any) -> Any:
            messages = [{"role": "user", "content": prompt}]
            if vendor == "openai":
                return client.chat.completions.create(model="m", messages=messages, **extra)
            return client.messages.create(model="m", max_tokens=9, messages=messages, **extra)

        async def consume(result: Any) -> None:
            if sdk.is_async:
                result = await result
                if hasattr(result, "__aiter__"):
                    async for _ in result:
                        pass
            elif hasattr(result, "__iter__") and not isinstance(result, dict):
                for _ in result:
                    pass

        async def run_stainless() -> None:
            client = make()
            await consume(chat(client, json_prompt, extra_body={key: 1 for key in s["json_key"]}))
            await consume(chat(client, nested))
            await consume(chat(client, echo_prompt))
            for step in ("split", "deltas", "long", "gzip_sse"):
                await consume(chat(make(**{"x-step": step}), "hi", stream=True))
            for step in ("gzip", "stacked"):
                await consume(chat(make(**{"x-step": step}), "hi"))
            posts = [
                {"path": "echo/" + url_path, "body": {"a": 1}},
                {
                    "path": "form",
                    "content": form,
                    "options": {"headers": {"Content-Type": "application/x-www-form-urlencoded"}},
                },
                {
                    "path": "files",
                    "body": {"purpose": "x"},
                    "options": {"headers": {"Content-Type": "multipart/form-data"}},
                    "files": [
                        ("file", ("a.bin", b"\xff\x00\x01binary", "application/octet-stream")),
                        ("notes", ("notes.txt", multipart_text, "text/plain")),
                    ],
                },
                {
                    "path": "gzipped",
                    "content": gzipped,
                    "options": {"headers": {"Content-Encoding": "gzip", "Content-Type": "application/json"}},
                },
            ]
            for post in posts:
                path = ("/" if vendor == "openai" else "/v1/") + str(post.pop("path"))
                await consume(client.post(path, cast_to=object, **post))
            with pytest.raises(Exception, match="could not connect|Connection error"):
                await consume(client.post("/boom", cast_to=object, body={"a": 1}))
            if sdk.is_async:
                await transport.aclose()

        asyncio.run(run_stainless()) if sdk.is_async else _run_sync(run_stainless)
    if not sdk.is_async:
        transport.close()
    return corpus


def _run_sync(coroutine_function: Callable[[], Any]) -> None:
    """Drive the sync steps: ``consume`` only awaits async results, so the loop never blocks on I/O."""
    asyncio.run(coroutine_function())


def _haystack(cassette: Path) -> str:
    """The cassette's raw text, plus every base64 payload decoded, gzip undone, and each call's stream
    reassembled, decoded by its content-encodings, and its delta pieces joined per channel."""
    raw = cassette.read_text()
    extra: list[str] = []
    streams: dict[int, bytearray] = {}
    encodings: dict[int, list[str]] = {}
    for line in raw.splitlines():
        obj = json.loads(line)
        payloads = [
            obj.get("base64"),
            (obj.get("body") or {}).get("base64") if isinstance(obj.get("body"), dict) else None,
        ]
        for payload in payloads:
            if isinstance(payload, str):
                data = base64.b64decode(payload)
                extra.append(data.decode("latin-1"))
                while data.startswith(b"\x1f\x8b"):
                    data = gzip.decompress(data)
                    extra.append(data.decode("latin-1"))
        if obj["type"] == "response":
            encodings[obj["call_index"]] = content_encodings([tuple(pair) for pair in obj["headers"]])
        if obj["type"] == "event":
            chunk = base64.b64decode(obj["base64"]) if "base64" in obj else obj["text"].encode()
            streams.setdefault(obj["call_index"], bytearray()).extend(chunk)
    for index, stream in streams.items():
        decoded = decode_stacked(bytes(stream), encodings.get(index, []))
        extra.append((decoded or bytes(stream)).decode("utf-8", "replace"))
        # Pieces of a delta stream are never contiguous in the raw bytes: join them as the SDK does.
        for pieces in delta_channels(decoded or bytes(stream)).values():
            extra.append("".join(value for _, _, value in pieces))
        if decoded:
            extra.append(json.dumps(decoded.decode("utf-8", "replace")))
    return raw + "\n".join(extra)


def _leaked(planted: list[Planted], haystack: str) -> list[Planted]:
    return [p for p in planted if any(fragment in haystack for fragment in p.fragments())]


CATALOGUES = ["core", "rules"]  # vendor keys and Bearer; the catalogue's GitHub/Slack/Stripe/AWS/JWT/PEM shapes


@functools.cache
def _recorded(sdk: Sdk, folder: str) -> tuple[list[Planted], str, str]:
    """Record the corpus once per SDK (both catalogue halves check the same cassette)."""
    server = Upstream().start()
    try:
        cassette = Path(folder) / f"{sdk.id}.jsonl"
        corpus = _record(sdk, server, cassette)
    finally:
        server.stop()
    received = "\n".join(r.path + json.dumps(r.headers) + r.body.decode("latin-1") for r in server.received)
    assert len(server.received) >= (10 if sdk.name == "genai" else 13), "every call reached the upstream"
    return corpus.planted, received, _haystack(cassette)


def _in_catalogue(planted: list[Planted], catalogue: str) -> list[Planted]:
    return [p for p in planted if (p.format in CATALOGUE_FORMATS) == (catalogue == "rules")]


@pytest.mark.parametrize("catalogue", CATALOGUES)
@pytest.mark.parametrize("sdk", _sdk_ids())
@pytest.mark.slow
def test_no_planted_secret_reaches_the_cassette(sdk: Sdk, catalogue: str, tmp_path_factory: Any) -> None:
    planted, received, haystack = _recorded(sdk, str(tmp_path_factory.getbasetemp()))
    planted = _in_catalogue(planted, catalogue)
    on_the_wire = {p.location for p in planted} & {"header", "query", "path", "json_value", "json_key", "form"}
    sent = {p.location for p in planted if any(fragment in received for fragment in p.fragments())}
    assert on_the_wire <= sent, "the request-side secrets really were sent"
    leaked = [f"{p.location}/{p.format}" for p in _leaked(planted, haystack)]
    print(f"{sdk.id} {catalogue}: {len(leaked)} of {len(planted)} planted secrets leaked")
    assert leaked == [], f"{len(leaked)} of {len(planted)} planted secrets leaked: {leaked}"


def _corpus_files(tmp_path: Path) -> tuple[list[Planted], list[Path]]:
    """The corpus written, unredacted, into files of each kind a secret hides in."""
    corpus = Corpus("scan")
    files: list[Path] = []

    def write(name: str, text: str | bytes) -> None:
        path = tmp_path / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        files.append(path)

    env = corpus.secrets("env")
    write(".env", "".join(f"SERVICE_{i}_API_KEY={x.replace(chr(10), '')}\n" for i, x in enumerate(env)))
    yaml_ = corpus.secrets("yaml")
    write("config.yaml", "".join(f"service_{i}:\n  token: {json.dumps(x)}\n" for i, x in enumerate(yaml_)))
    headers = corpus.secrets("raw_headers")
    write("headers.txt", "".join(f"X-Service-{i}-Token: {x.replace(chr(10), ' ')}\n" for i, x in enumerate(headers)))
    text = corpus.secrets("text")
    write("notes.md", "".join(f"* step {i}: use {x}\n" for i, x in enumerate(text)))
    events = corpus.secrets("cassette_base64_event")
    request_body = corpus.secrets("cassette_gzip_request")
    stream = corpus.secrets("cassette_gzip_stream")
    lines = [{"type": "header", "format_version": 1}]
    gzipped = base64.b64encode(gzip.compress(json.dumps(request_body).encode())).decode()
    lines.append(
        {
            "type": "request",
            "call_index": 0,
            "method": "POST",
            "url": "https://a.test/v1",
            "headers": [],
            "body": {"base64": gzipped},
        }
    )
    lines.append(
        {
            "type": "response",
            "call_index": 0,
            "status": 200,
            "http_version": "HTTP/1.1",
            "headers": [["content-type", "text/event-stream"], ["content-encoding", "gzip"]],
        }
    )
    sse_body = _stream_events("openai", _pieces(stream, 4), ["{}"])
    for i, chunk in enumerate(split_bytes(gzip.compress(sse_body), 40)):
        lines.append(
            {"type": "event", "call_index": 0, "event_index": i, "t": 0, "base64": base64.b64encode(chunk).decode()}
        )
    lines.append({"type": "call_end", "call_index": 0, "event_count": len(lines) - 3, "outcome": "complete"})
    for i, secret in enumerate(events):
        payload = base64.b64encode(b"\xff data: " + secret.encode()).decode()
        lines.append({"type": "event", "call_index": 1, "event_index": i, "t": 0, "base64": payload})
    write("cassette.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
    return corpus.planted, files


def _found_in(planted: list[Planted], found: list[str]) -> list[Planted]:
    return [p for p in planted if any(f in secret or secret in p.secret for f in p.fragments()[:1] for secret in found)]


def _caught(planted: list[Planted], files: list[Path]) -> list[Planted]:
    redactor = Redactor()
    found = [secret for path in files for _, secret in scan_document(redactor, path.read_text("utf-8", "replace"))]
    return _found_in(planted, found)


@pytest.mark.parametrize("catalogue", CATALOGUES)
def test_scan_catches_the_planted_corpus_in_files_of_every_kind(catalogue: str, tmp_path: Path) -> None:
    planted, files = _corpus_files(tmp_path)
    planted = _in_catalogue(planted, catalogue)
    caught = _caught(planted, files)
    missed = [f"{p.location}/{p.format}" for p in planted if p not in caught]
    print(f"scan caught {len(caught)} of {len(planted)} planted ({catalogue})")
    assert len(caught) >= 0.99 * len(planted), f"scan caught {len(caught)} of {len(planted)}; missed {missed}"


def test_scan_finds_every_planted_secret_detect_secrets_finds(tmp_path: Path) -> None:
    """A cross-check against Yelp's detect-secrets on the plain-text files of the corpus (it reads neither
    base64 nor gzip, so the cassette file is left out): whatever it finds, `scan` finds too."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    planted, files = _corpus_files(tmp_path)
    plain = [path for path in files if path.suffix != ".jsonl"]
    planted = [p for p in planted if not p.location.startswith("cassette")]
    collection = SecretsCollection()
    with default_settings():
        for path in plain:
            collection.scan_file(str(path))
    theirs = _found_in(planted, [secret.secret_value for _, secret in collection if secret.secret_value])
    ours = _caught(planted, plain)
    print(f"of {len(planted)} planted in plain files: detect-secrets found {len(theirs)}, scan {len(ours)}")
    assert theirs, "detect-secrets found nothing: the cross-check would prove nothing"
    missed = [f"{p.location}/{p.format}" for p in theirs if p not in ours]
    assert missed == [], f"detect-secrets found these and scan did not: {missed}"


# --- round three: what real applications and their tools send ----------------------------------------
# Credential names the old rules didn't read (any secret word, run-together lower case, plurals, a value
# named by a sibling, secret-store answers), key shapes and webhook URLs the catalogue lacked, userinfo with
# an empty user or a `#`/`?` in its password, `NAME=value` lines in a prompt, an AWS secret beside its key
# id, and a token learned only after the calls that carried it. Each through the SDK to the loopback
# upstream; the kept corpus holds look-alikes that are not secrets and must come through as sent.

ROUND_THREE_HEADERS = ["X-Auth-Key", "x-rapidapi-key", "Fastly-Key", "DD-APPLICATION-KEY", "X-Honeycomb-Team"]
ROUND_THREE_HEADERS += ["x-portkey-virtual-key", "Helicone-Auth"]
ROUND_THREE_QUERY = ["appid", "auth", "hapikey", "license_key", "app_key"]
ROUND_THREE_JSON = ["accesstoken", "clientsecret", "privatekey", "private_key_pem", "auth", "credentials"]
ROUND_THREE_JSON += ["SecretString", "masterKey", "userPassword"]
ROUND_THREE_SHAPES: dict[str, Callable[[str], str]] = {
    "nvidia": lambda c: "nvapi-" + c,
    "cerebras": lambda c: "csk-" + c,
    "together": lambda c: "tgp_v1_" + c,
    "elevenlabs": lambda c: "sk_" + hashlib_hex(c, 48),
    "voyage": lambda c: "pa-" + c,
    "vault": lambda c: "hvs." + c + c,
    "docker": lambda c: "dckr_pat_" + c,
    "posthog": lambda c: "phx_" + c,
    "slack webhook": lambda c: "https://hooks.slack.com/services/T0123ABCD/B0123ABCD/" + c[:24],
    "teams webhook": lambda c: f"https://contoso.webhook.office.com/webhookb2/{c}@{c[:12]}/IncomingWebhook/{c}",
    "zapier webhook": lambda c: f"https://hooks.zapier.com/hooks/catch/1234567/{c}/",
    "telegram bot path": lambda c: f"https://api.telegram.org/bot123456789:{c[:35]}/sendMessage",
}
# Values that look like the above but are not secrets: each must reach the cassette as sent.
KEPT_JSON = {
    "max_tokens": 77,
    "prompt_cache_key": "KEEP-cache-key-value",
    "token_type": "KEEP-Bearer-type",
    "next_page_token": "KEEP-next-page-token",
    "eos_token": "KEEP-eos-token",
    "tokenizer": "KEEP-tokenizer-name",
    "author": "KEEP-author-name",
    "monkey": "KEEP-monkey-value",
    "keywords": "KEEP-keywords-value",
    "secret_name": "KEEP-secret-name",
    "api_key_id": "KEEP-api-key-id",
    "password_hint": "KEEP-password-hint",
    "token_count": 12345,
    "sort_key": "KEEP-sort-key",
    "public_key": "KEEP-public-key",
    "idempotency_key": "KEEP-idempotency",
    "env": [{"name": "DEBUG_LEVEL", "value": "KEEP-debug-level"}],
}
KEPT_PROMPT = "author: KEEP-prose-author\nKey: the main point\nTokenizer: KEEP-prose-tokenizer\nmax_tokens=4096"
KEPT_QUERY = {"page_token": "KEEP-query-page", "sort_key": "KEEP-query-sort", "tokens": "KEEP-query-tokens"}


def hashlib_hex(seed: str, length: int) -> str:
    import hashlib

    return (hashlib.sha256(seed.encode()).hexdigest() * 2)[:length]


def _round_three(sdk: Sdk, cassette: Path) -> tuple[list[Planted], str]:
    """Record the round-three corpus through ``sdk``; the planted secrets and the cassette's haystack."""
    import anthropic
    import openai

    rng = random.Random("round-three-" + sdk.id)
    planted: list[Planted] = []

    def plant(location: str, kind: str, build: Callable[[str], str] = lambda c: c, length: int = 32) -> str:
        core = _core(rng, length)
        secret = build(core)
        planted.append(Planted(location, kind, secret, core))
        return secret

    headers = {name: plant("header", name) for name in ROUND_THREE_HEADERS}
    query = {name: plant("query", name) for name in ROUND_THREE_QUERY}
    body: dict[str, Any] = {name: plant("json", name) for name in ROUND_THREE_JSON}
    body["api_keys"] = [plant("json", "api_keys[0]"), plant("json", "api_keys[1]")]
    body["env"] = [{"name": "MISTRAL_API_KEY", "value": plant("json", "sibling env")}]
    body["Parameter"] = {"Name": "/prod/db/password", "Type": "SecureString", "Value": plant("json", "ssm")}
    document = base64.b64encode(f"DB_PASSWORD={plant('base64 text', 'document')}\n".encode()).decode()
    body["attachments"] = [
        {"type": "base64", "media_type": "text/plain", "data": document},
        {
            "file_data": "data:text/plain;base64,"
            + base64.b64encode(f"api_key: {plant('base64 text', 'data url')}".encode()).decode()
        },
    ]
    shapes = [plant("prompt", kind, build, 40) for kind, build in ROUND_THREE_SHAPES.items()]
    redis = plant("prompt", "redis empty user", length=20)
    hashed = plant("prompt", "password with # and ?", length=20)
    env_line = plant("prompt", "API_KEY= line", length=24)
    yaml_line = plant("prompt", "api_key: line", length=24)
    aws_secret = plant("prompt", "aws secret beside its key id", lambda c: c[:40], 40)
    prompt = (
        "Summarise this config file:\n"
        f"OPENAI_API_KEY={env_line}\n  api_key: {yaml_line}\n"
        f"url: redis://:{redis}@cache.internal:6379/0\n"
        f"db: postgres://app:{hashed[:8]}#{hashed[8:14]}?{hashed[14:]}@db.internal/app\n"
        f"aws: AKIAQ7ABCDEFGHIJKLMN {aws_secret}\n" + "\n".join(shapes) + "\n" + KEPT_PROMPT
    )
    response_secret = plant("response", "SecretString answer")
    login_token = plant("response", "learned too late: login key then Token auth")
    upstream = Upstream().start()
    upstream.routes["/v1/chat/completions"] = openai_reply
    upstream.routes["/v1/messages"] = anthropic_reply
    upstream.routes["/v1/login"] = lambda received: Reply.json({"key": login_token, "user": "ann"})
    upstream.routes["/v1/secret"] = lambda received: Reply.json(
        {"ARN": "arn:aws:secretsmanager:eu-west-1:1:secret:x", "Name": "prod/db", "SecretString": response_secret}
    )
    upstream.routes["/"] = lambda received: Reply.json({"ok": True})
    if sdk.is_async:
        transport: Any = vcr_transport.AsyncRecordingTransport(httpx2.AsyncHTTPTransport(), cassette)
    else:
        transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)
    http = httpx2.AsyncClient(transport=transport) if sdk.is_async else httpx2.Client(transport=transport)
    common: dict[str, Any] = {"http_client": http, "max_retries": 0, "default_headers": headers}
    if sdk.name == "openai":
        cls: Any = openai.AsyncOpenAI if sdk.is_async else openai.OpenAI
        client = cls(api_key="sk-proj-TESTKEYabcdefghijklmnopqrstuvwxyz0123", base_url=upstream.url + "/v1", **common)
    else:
        cls = anthropic.AsyncAnthropic if sdk.is_async else anthropic.Anthropic
        client = cls(api_key="sk-ant-api03-TESTKEYabcdefghijklmnopqrstuvwxyz0123", base_url=upstream.url, **common)
    path = "/login" if sdk.name == "openai" else "/v1/login"
    prefix = "" if sdk.name == "openai" else "/v1"

    async def run() -> None:
        async def done(result: Any) -> Any:
            return await result if sdk.is_async else result

        messages = [{"role": "user", "content": prompt}]
        extra = {"extra_body": body | KEPT_JSON, "extra_query": query | KEPT_QUERY}
        if sdk.name == "openai":
            await done(client.chat.completions.create(model="m", messages=messages, **extra))
        else:
            await done(client.messages.create(model="m", max_tokens=9, messages=messages, **extra))
        await done(client.post(path, cast_to=object, body={"username": "ann"}))
        await done(client.post(prefix + "/secret", cast_to=object, body={"SecretId": "prod/db"}))
        await done(
            client.get(prefix + "/me", cast_to=object, options={"headers": {"Authorization": f"Token {login_token}"}})
        )
        if sdk.is_async:
            await client.close()
            await transport.aclose()

    try:
        asyncio.run(run())
        if not sdk.is_async:
            client.close()
            transport.close()
    finally:
        upstream.stop()
    haystack = _haystack(cassette)
    # Base64 runs anywhere in the cassette (documents, data URLs), decoded.
    for run in re.findall(r"[A-Za-z0-9+/]{24,}={0,2}", haystack):
        try:
            haystack += "\n" + base64.b64decode(run + "=" * (-len(run) % 4)).decode("utf-8", "replace")
        except ValueError:
            pass
    return planted, haystack


def _round_three_ids() -> list[Any]:
    return [pytest.param(sdk, id=sdk.id) for sdk in SDKS if sdk.library is httpx2 and sdk.name != "genai"]


@pytest.mark.parametrize("sdk", _round_three_ids())
def test_round_three_secrets_never_reach_the_cassette_and_look_alikes_stay(sdk: Sdk, tmp_path: Path) -> None:
    planted, haystack = _round_three(sdk, tmp_path / "c.jsonl")
    leaked = [f"{p.location}/{p.format}" for p in _leaked(planted, haystack)]
    kept = [value for value in KEPT_JSON.values() if isinstance(value, str)]
    kept += ["KEEP-debug-level", "KEEP-prose-author", "KEEP-prose-tokenizer", "Key: the main point"]
    kept += [f"{name}={value}" for name, value in KEPT_QUERY.items()]
    over_redacted = [value for value in kept if value not in haystack]
    figures = f"{len(leaked)} of {len(planted)} leaked, {len(over_redacted)} of {len(kept)} over-redacted"
    print(f"{sdk.id} round three: {figures}")
    assert leaked == [], f"{len(leaked)} of {len(planted)} planted secrets leaked: {leaked}"
    assert over_redacted == [], f"look-alikes removed: {over_redacted}"
    assert '"max_tokens":77' in haystack.replace(" ", "") and '"token_count":12345' in haystack.replace(" ", "")


def test_messages_and_the_requests_a_test_reads_hold_only_redacted_values(tmp_path: Path) -> None:
    """Outside the cassette: the NetworkBlockedError of an ignored host names the URL redacted, and the
    requests a test reads (``vcr_cassette.requests``) hold redacted URLs, headers and bodies, since a
    failing assert prints them into CI logs."""
    key, password = "Q7ignoredHostKey0123456789", "Q7passwordInTheBody01234"
    cassette = tmp_path / "c.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record") as recorded:
        with httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200))) as client:
            client.post(f"https://api.example.test/one?key={key}", json={"user": "ann", "password": password})
        requests = recorded.requests
    assert requests and all(key not in r.url and password.encode() not in r.body for r in requests)
    assert b"ann" in requests[0].body, "the rest of the body is kept"
    replay = vcr_transport.ReplayTransport(cassette, ignore_hosts=["localhost"])
    with httpx2.Client(transport=replay) as client, pytest.raises(vcr_transport.NetworkBlockedError) as caught:
        client.get(f"http://localhost/x?api_key={key}&q=1")
    assert key not in str(caught.value) and "q=1" in str(caught.value)


def _compressed(encoding: str, data: bytes) -> bytes:
    import zlib

    if encoding == "gzip":
        return gzip.compress(data)
    if encoding == "deflate":
        return zlib.compress(data)
    import brotli

    return bytes(brotli.compress(data))


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
def test_import_redacts_compressed_bodies_and_the_sdk_replays_them(encoding: str, tmp_path: Path) -> None:
    """vcrpy keeps a compressed response as ``!!binary``: ``vcr-transport import`` searches it decoded, removes
    the secret the model repeated and the one learned from a later login, encodes it again, and the openai SDK
    replays the imported cassette offline."""
    import openai
    import yaml

    from vcr_transport._tools._cli import main

    rng = random.Random("import-" + encoding)
    repeated, learned = "sk-proj-" + _core(rng, 40), _core(rng, 32)
    request = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    completion = openai_reply(Received("POST", "/v1/chat/completions", {}, request))
    reply = json.loads(completion.chunks[0])
    reply["choices"][0]["message"]["content"] = f"Your key is {repeated} and the session {learned}."
    interactions = [
        {
            "request": {
                "method": "POST",
                "uri": "https://api.openai.com/v1/chat/completions",
                "body": '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
                "headers": {"Content-Type": ["application/json"], "Authorization": [f"Bearer {repeated}"]},
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"Content-Type": ["application/json"], "Content-Encoding": [encoding]},
                "body": {"string": _compressed(encoding, json.dumps(reply).encode())},
            },
        },
        {
            "request": {"method": "GET", "uri": "https://api.openai.com/v1/me", "body": None, "headers": {}},
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"Content-Type": ["application/json"]},
                "body": {"string": json.dumps({"access_token": learned}).encode()},
            },
        },
    ]
    source = tmp_path / "vcrpy" / "chat.yaml"
    source.parent.mkdir()
    source.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    assert "!!binary" in source.read_text()
    assert main(["import", str(source), "--out", str(tmp_path / "out")]) == 0
    cassette = tmp_path / "out" / "chat.jsonl"
    haystack = _haystack(cassette)
    events = [json.loads(line) for line in cassette.read_text().splitlines() if '"type":"event"' in line]
    body = decode_stacked(b"".join(base64.b64decode(e["base64"]) for e in events if e["call_index"] == 0), [encoding])
    assert body is not None and b"[secret removed]" in body, "the stored body is still the encoding it says"
    haystack += body.decode()
    assert repeated not in haystack and learned not in haystack
    replay = vcr_transport.ReplayTransport(cassette)
    with httpx2.Client(transport=replay) as http:
        client = openai.OpenAI(api_key="sk-proj-REPLAYKEY0123456789", http_client=http, max_retries=0)
        answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content == "Your key is [secret removed] and the session [secret removed]."


# --- `scan` is a superset of recording -------------------------------------------------------------------


def _raw_cassette(exchanges: list[tuple[Received, Reply]], url: str) -> str:
    """The traffic as a cassette with nothing redacted: what the recorder would have written without its
    rules (requests as the upstream received them, replies as it sent them, gzip included)."""
    lines: list[dict[str, Any]] = [{"type": "header", "format_version": 1}]
    for index, (received, reply) in enumerate(exchanges):
        try:
            body: Any = {"json": json.loads(received.body)} if received.body else None
        except ValueError:
            try:
                body = {"text": received.body.decode()}
            except UnicodeDecodeError:
                body = {"base64": base64.b64encode(received.body).decode()}
        headers = [[name, value] for name, value in received.headers.items()]
        lines.append(
            {"type": "request", "call_index": index, "method": received.method, "url": url + received.path}
            | {"headers": headers, "body": body}
        )
        response_headers = [list(pair) for pair in reply.headers] + ([["content-encoding", "gzip"]] * bool(reply.gzip))
        lines.append({"type": "response", "call_index": index, "status": reply.status, "http_version": "HTTP/1.1"})
        lines[-1]["headers"] = response_headers
        # An encoded body as one chunk, as the recorder keeps one it redacted.
        chunks = [gzip.compress(b"".join(reply.chunks))] if reply.gzip else reply.chunks
        if content_encodings([tuple(pair) for pair in response_headers]):
            chunks = [b"".join(chunks)]
        for number, chunk in enumerate(chunks):
            event: dict[str, Any] = {"type": "event", "call_index": index, "event_index": number, "t": 0}
            try:
                event["text"] = chunk.decode()
            except UnicodeDecodeError:
                event["base64"] = base64.b64encode(chunk).decode()
            lines.append(event)
        lines.append({"type": "call_end", "call_index": index, "event_count": len(chunks), "outcome": "complete"})
    return "".join(json.dumps(line) + "\n" for line in lines)


def _as_yaml_and_text(exchanges: list[tuple[Received, Reply]]) -> tuple[str, str]:
    """The JSON request bodies as one YAML document, and as indented JSON text (a file pasted somewhere)."""
    import yaml

    bodies = []
    for received, _ in exchanges:
        try:
            bodies.append(json.loads(received.body))
        except ValueError:
            continue
    return yaml.safe_dump({"requests": bodies}, width=10_000), json.dumps(bodies, indent=2)


@pytest.mark.parametrize("sdk", _sdk_ids())
@pytest.mark.slow
def test_scan_flags_everything_the_recorder_removes(sdk: Sdk, tmp_path: Path) -> None:
    """The whole corpus through the SDK twice over: recorded (with the rules) and written raw. Every planted
    secret the recorder removed from its cassette, ``scan`` flags in the raw cassette; every one it removed
    from a JSON request body, ``scan`` flags in that body written as YAML and as text."""
    server = Upstream().start()
    exchanges: list[tuple[Received, Reply]] = []
    answer = server.reply_for

    def captured(received: Received) -> Reply:
        reply = answer(received)
        exchanges.append((received, reply))
        return reply

    server.reply_for = captured  # type: ignore[method-assign]
    try:
        corpus = _record(sdk, server, tmp_path / "recorded.jsonl")
    finally:
        server.stop()
    raw = _raw_cassette(exchanges, server.url)
    recorded = _haystack(tmp_path / "recorded.jsonl")
    (tmp_path / "raw.jsonl").write_text(raw)
    raw_haystack, trivially_found = _haystack_of(raw), _leaked(corpus.planted, "")
    in_raw = [p for p in corpus.planted if p not in trivially_found and _leaked([p], raw_haystack)]
    removed = [p for p in in_raw if not _leaked([p], recorded)]
    assert len(removed) >= 0.9 * len(in_raw) > 0, "the raw cassette holds the corpus, the recorded one doesn't"
    redactor = Redactor()
    flagged = _found_in(removed, [secret for _, secret in scan_document(redactor, raw)])
    missed = [f"{p.location}/{p.format}" for p in removed if p not in flagged]
    yaml_text, text = _as_yaml_and_text(exchanges)
    in_bodies = [p for p in removed if _leaked([p], text)]
    found = [secret for document in (yaml_text, text) for _, secret in scan_document(Redactor(), document)]
    yaml_missed = [f"{p.location}/{p.format}" for p in in_bodies if p not in _found_in(in_bodies, found)]
    print(
        f"{sdk.id}: the recorder removed {len(removed)} of {len(in_raw)} planted; scan flagged "
        f"{len(removed) - len(missed)} of them in the raw cassette, "
        f"{len(in_bodies) - len(yaml_missed)} of {len(in_bodies)} in the bodies as YAML and text"
    )
    assert missed == [], f"removed by the recorder, not flagged by scan: {missed}"
    assert yaml_missed == [], f"not flagged in YAML or text: {yaml_missed}"


def _haystack_of(raw: str) -> str:
    """``_haystack`` of a cassette's text."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.jsonl"
        path.write_text(raw)
        return _haystack(path)


def test_the_projects_own_rules_reach_scan_and_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shape the catalogue lacks, added in ``[tool.vcr_transport]`` as recording reads it: ``scan`` flags it
    and ``import`` removes it."""
    import yaml

    from vcr_transport._tools._cli import main

    (tmp_path / "pyproject.toml").write_text('[tool.vcr_transport]\nredact_patterns = ["acme_[0-9]{8}"]\n')
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("the deploy uses acme_12345678 today\n")
    assert main(["scan", "notes.txt"]) == 1
    assert "notes.txt:1" in capsys.readouterr().out
    interaction = {
        "request": {"method": "GET", "uri": "https://a.test/v1?q=acme_87654321", "body": None, "headers": {}},
        "response": {"status": {"code": 200}, "headers": {}, "body": {"string": "ok acme_87654321"}},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}))
    assert main(["import", "c.yaml", "--out", "out"]) == 0
    written = (tmp_path / "out" / "c.jsonl").read_text()
    assert "acme_87654321" not in written and "[secret removed]" in written
