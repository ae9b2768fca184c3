"""The per-call recording path and the re-record close, made cheap without changing what they do: the
request forwarded upstream is what the library's own Request would build, lines are the text json writes,
header redaction remembered per distinct list gives what redacting them again gives, and the close reads
the older cassette once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from helpers import cassette_lines
from upstream import Reply, Upstream
from vendors import SDKS, Sdk

import vcr_transport
from vcr_transport import _storage
from vcr_transport._core.engine import _quiet
from vcr_transport._core.engine._matching import RequestMatcher
from vcr_transport._core.rules._redaction import PLACEHOLDER, Redactor
from vcr_transport._http import forwarded_request
from vcr_transport._storage import read_cassette

CALL_SDKS = [
    next(s for s in SDKS if s.name == name and s.library is library and s.side == side)
    for name, library, side in (
        ("openai", httpx2, "sync"),
        ("openai", httpx2, "async"),
        ("anthropic", httpx2, "sync"),
        ("genai", httpx2, "async"),
        ("openai", httpx, "sync"),
    )
]
STEPS = [("chat", ["one"]), ("stream", ["two"])]
MESSAGES = [{"role": "user", "content": "hi"}]


def _json_text(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


class _Seen:
    """Notes each request that passes, then hands it on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[Any] = []

    def handle_request(self, request: Any) -> Any:
        self.requests.append(request)
        return self.inner.handle_request(request)

    async def handle_async_request(self, request: Any) -> Any:
        self.requests.append(request)
        return await self.inner.handle_async_request(request)

    def __enter__(self) -> _Seen:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.inner.__exit__(*exc_info)

    async def __aenter__(self) -> _Seen:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.inner.__aexit__(*exc_info)

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.inner.aclose()


def _as_built(request: Any) -> Any:
    """What the library's own Request builds from ``request`` asking for plain bodies (the reference)."""
    identity = (b"accept-encoding", b"identity")
    raw = [identity if name.lower() == b"accept-encoding" else (name, value) for name, value in request.headers.raw]
    if identity not in raw:
        raw.append(identity)
    library = httpx if isinstance(request, httpx.Request) else httpx2
    return library.Request(
        request.method, request.url, headers=raw, content=request.content, extensions=request.extensions
    )


def _same_request(got: Any, built: Any) -> None:
    assert type(got) is type(built)
    assert (got.method, str(got.url), got.headers.raw, got.content) == (
        built.method,
        str(built.url),
        built.headers.raw,
        built.content,
    )
    assert got.extensions == built.extensions and got.extensions is not built.extensions
    assert b"".join(got.stream) == built.content


@pytest.mark.parametrize("sdk", CALL_SDKS, ids=lambda sdk: sdk.id)
def test_the_forwarded_request_is_what_the_library_would_build(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    library = sdk.library
    inner = _Seen(library.AsyncHTTPTransport() if sdk.is_async else library.HTTPTransport())
    recording_class = vcr_transport.AsyncRecordingTransport if sdk.is_async else vcr_transport.RecordingTransport
    outer = _Seen(recording_class(inner, cassette))
    live = sdk.run(outer, upstream.url, STEPS)
    assert live[0] == "echo:one"
    assert len(outer.requests) == len(inner.requests) == len(STEPS)
    for original, forwarded in zip(outer.requests, inner.requests, strict=True):
        assert forwarded is not original
        _same_request(forwarded, _as_built(original))
        assert forwarded.headers.get("accept-encoding") == "identity"
        assert original.headers.get("accept-encoding") != "identity", "the caller's request is left as it is"
    assert [r.headers.get("accept-encoding") for r in upstream.received] == ["identity"] * len(STEPS)
    requests = [line for line in cassette_lines(cassette) if line["type"] == "request"]
    redactor = Redactor()
    assert [[tuple(pair) for pair in r["headers"]] for r in requests] == [
        redactor.redact_headers((name.decode("latin-1"), value.decode("latin-1")) for name, value in f.headers.raw)
        for f in inner.requests
    ]


@pytest.mark.parametrize("library", [httpx, httpx2], ids=lambda library: library.__name__)
def test_requests_the_library_would_build_differently_are_built_by_it(library: Any, tmp_path: Path) -> None:
    """A request without Host, or with a body of unknown length, gets what the library adds to one; one
    asking twice for encodings says identity twice."""
    bare = library.Request("POST", "https://api.example.test/v1/x", stream=library.ByteStream(b'{"a":1}'))
    bare.read()
    empty_get = library.Request("GET", "https://api.example.test/v1/x", headers={"accept-encoding": "gzip"})
    empty_post = library.Request("POST", "https://api.example.test/v1/x", content=b"")
    from_client = library.Client().build_request("PUT", "https://api.example.test/v1/y?q=1", content=b"body")
    twice = library.Client().build_request(
        "POST",
        "https://api.example.test/v1/z",
        content=b"{}",
        headers=[("Accept-Encoding", "gzip"), ("accept-encoding", "br")],
    )
    for request in (bare, empty_get, empty_post, from_client, twice):
        request.read()
        before = request.headers.raw
        forwarded = forwarded_request(request, library, plain=True)
        _same_request(forwarded, _as_built(request))
        assert request.headers.raw == before


def test_recorded_lines_match_json_for_bodies_with_any_numbers(upstream: Upstream, cassette: Path) -> None:
    bodies = [
        {"temperature": 0.7, "top_p": 1e-05, "seed": 2**70, "big": 1.5e300},
        {"temperature": 0.00001, "n": 12345678901234567.0, "x": -0.0},
        {"prompt": "1e5 is a number in a string", "values": [0.1, 0.25]},
        {"prompt": "long " * 200, "top_p": 1e-05, "values": [0.5, float("1e22")]},
        {"prompt": "long " * 200, "temperature": 0.7},
    ]
    with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)) as client:
        for body in bodies:
            client.post(upstream.url + "/v1/chat/completions", json={"messages": MESSAGES, **body})
        utf16 = json.dumps({"messages": MESSAGES, "top_p": 1e-05}).encode("utf-16")  # json reads it, msgspec not
        client.post(upstream.url + "/v1/chat/completions", content=utf16, headers={"content-type": "application/json"})
        bodies.append({"top_p": 1e-05})
    lines = cassette.read_bytes().split(b"\n")[1:-1]
    stored = [json.loads(line) for line in lines]
    assert [s["body"]["json"] for s in stored if s["type"] == "request"] == [
        {"messages": MESSAGES, **b} for b in bodies
    ]
    for line, obj in zip(lines, stored, strict=True):
        if obj["type"] != "event":  # events are msgspec's own lines, as they always were
            assert line + b"\n" == _json_text(obj).encode()


def test_a_json_body_with_a_lone_surrogate_is_recorded_as_its_text_and_replays(
    upstream: Upstream, cassette: Path
) -> None:
    """No UTF-8 line can hold the parsed value of ``"\\ud800"``: the body is stored as the text it came as
    (it used to break the recording at close), and the same request matches it on replay."""
    body = b'{"messages":[{"role":"user","content":"a\\ud800b"}]}'
    headers = {"content-type": "application/json"}
    with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)) as client:
        recorded = client.post(upstream.url + "/v1/chat/completions", content=body, headers=headers)
    [request] = [line for line in cassette_lines(cassette) if line["type"] == "request"]
    assert request["body"] == {"text": body.decode()}
    with httpx2.Client(transport=vcr_transport.ReplayTransport(cassette)) as client:
        replayed = client.post(upstream.url + "/v1/chat/completions", content=body, headers=headers)
    assert replayed.content == recorded.content


def test_header_lists_remembered_give_what_redacting_again_gives() -> None:
    remembering, fresh_each_time = Redactor(), None
    echo = "zq81plainvalue7342"
    steps = [
        [("x-echo", echo), ("accept", "*/*")],
        [("x-echo", echo), ("accept", "*/*")],  # the same list again
        [("x-api-key", echo), ("x-echo", echo)],  # learned here: it leaves the echo now
        [("x-echo", echo), ("accept", "*/*")],
        [("authorization", "Bearer sk-proj-" + "a1B2c3D4" * 6), ("accept", "*/*")],
    ]
    replayed: list[list[tuple[str, str]]] = []
    for step in steps:
        got = remembering.redact_headers(step)
        fresh_each_time = Redactor()
        for earlier in replayed:
            fresh_each_time.redact_headers(earlier)
        assert got == fresh_each_time.redact_headers(step), step
        replayed.append(step)
    assert remembering.redact_headers(steps[3]) == [("x-echo", PLACEHOLDER), ("accept", "*/*")]
    assert remembering.redact_headers(steps[0]) == [("x-echo", PLACEHOLDER), ("accept", "*/*")]


def test_user_callables_see_every_header_every_time() -> None:
    seen: list[str] = []

    def note(text: str) -> str:
        seen.append(text)
        return text.replace("internal-7", PLACEHOLDER)

    redactor = Redactor(callables=[note])
    headers = [("x-team", "internal-7"), ("accept", "*/*")]
    for _ in range(3):
        assert redactor.redact_headers(headers) == [("x-team", PLACEHOLDER), ("accept", "*/*")]
    assert seen.count("internal-7") == 3 and seen.count("*/*") == 3


def test_the_re_record_close_reads_the_older_cassette_once(
    upstream: Upstream, cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run() -> Any:
        transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)
        with httpx2.Client(transport=transport) as client:
            for prompt in ("a", "b", "c"):
                client.post(
                    upstream.url + "/v1/chat/completions", json={"messages": [{"role": "user", "content": prompt}]}
                )
        return transport.recorder

    run()
    before = cassette.read_bytes()
    read: list[str] = []
    runs = _quiet.Parser.runs

    def counted(self: _quiet.Parser, blocks: Any) -> Any:
        read.append(self.path)
        return runs(self, blocks)

    compared: list[Any] = []
    with_body = RequestMatcher.with_body

    def comparing(self: RequestMatcher, *args: Any) -> Any:
        compared.append(args)
        return with_body(self, *args)

    monkeypatch.setattr(_quiet.Parser, "runs", counted)
    monkeypatch.setattr(_storage, "load_streaming", lambda *a: pytest.fail("the old file is parsed a second time"))
    monkeypatch.setattr(RequestMatcher, "with_body", comparing)
    assert run().unchanged
    assert cassette.read_bytes() == before
    assert read.count(str(cassette.resolve())) == 1, read
    assert len(compared) == 3, "the old requests are read; the new ones, the same bytes, take their prints"


# --- attacks: the forwarded request, the lines, a value learned mid-replay --------------------------------


def _upload_requests(tmp_path: Path, opened: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    upload = tmp_path / "upload.bin"
    upload.write_bytes(b"file body \x00\xff" * 50)
    opened += [upload.open("rb"), upload.open("rb")]

    def pieces() -> Any:
        yield b"first "
        yield b"second"

    return [
        ("POST", {"headers": [("x-dup", "1"), ("X-Dup", "2"), ("accept-encoding", "gzip")], "content": b"{}"}),
        ("POST", {"headers": {"host": "override.example"}, "content": b"body"}),
        ("POST", {"content": pieces()}),
        ("PUT", {"content": opened[-2]}),
        (
            "POST",
            {
                "headers": {"content-type": "multipart/form-data; boundary=fixedboundary"},
                "data": {"purpose": "fine-tune", "api_key": "sk-proj-FORMFIELDabcdefghijklmnopqrstuvw"},
                "files": {"file": ("a.jsonl", opened[-1], "application/jsonl")},
            },
        ),
        ("GET", {"headers": {"accept-encoding": "br", "Accept-Encoding": "gzip"}}),
        ("DELETE", {}),
    ]


def _capturing(library: Any, seen: list[tuple[str, str, list[tuple[bytes, bytes]], bytes]]) -> tuple[Any, Any]:
    def capture(request: Any, content: bytes) -> None:
        raw = [(name, value) for name, value in request.headers.raw if name.lower() != b"accept-encoding"]
        seen.append((request.method, str(request.url), raw, content))

    class Sync(library.HTTPTransport):  # type: ignore[misc, name-defined]
        def handle_request(self, request: Any) -> Any:
            capture(request, request.read())
            return super().handle_request(request)

    class Async(library.AsyncHTTPTransport):  # type: ignore[misc, name-defined]
        async def handle_async_request(self, request: Any) -> Any:
            capture(request, await request.aread())
            return await super().handle_async_request(request)

    return Sync(), Async()


@pytest.mark.parametrize("library", [httpx, httpx2], ids=lambda m: m.__name__)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_the_forwarded_request_is_what_the_library_sends_and_the_cassette_holds_it_redacted(
    library: Any, is_async: bool, upstream: Upstream, tmp_path: Path
) -> None:
    upstream.routes["/echo"] = lambda r: Reply.json({"ok": True})
    url = upstream.url + "/echo"
    direct: list[Any] = []
    recorded: list[Any] = []
    cassette = tmp_path / "forwarded.jsonl"
    for seen, record in ((direct, False), (recorded, True)):
        sync_inner, async_inner = _capturing(library, seen)
        transport: Any = async_inner if is_async else sync_inner
        if record:
            recording = vcr_transport.AsyncRecordingTransport if is_async else vcr_transport.RecordingTransport
            transport = recording(transport, cassette)
        opened: list[Any] = []
        requests = _upload_requests(tmp_path, opened)
        if is_async:

            async def run(transport: Any = transport, requests: Any = requests) -> None:
                async with library.AsyncClient(transport=transport) as client:
                    for method, kwargs in requests:
                        if isinstance(kwargs.get("content"), type((lambda: (yield))())):
                            chunks = list(kwargs["content"])

                            async def agen(chunks: list[bytes] = chunks) -> Any:
                                for chunk in chunks:
                                    yield chunk

                            kwargs = {**kwargs, "content": agen()}
                        elif hasattr(kwargs.get("content"), "read"):
                            kwargs = {**kwargs, "content": kwargs["content"].read()}
                        assert (await client.request(method, url, **kwargs)).json() == {"ok": True}

            asyncio.run(run())
            for file in opened:
                file.close()
        else:
            with library.Client(transport=transport) as client:
                for method, kwargs in requests:
                    assert client.request(method, url, **kwargs).json() == {"ok": True}
        for file in opened:
            file.close()
    assert len(recorded) == len(direct) == 7
    for ours, theirs in zip(recorded, direct, strict=True):
        assert ours == theirs
    calls = read_cassette(cassette).calls
    assert [call.method for call in calls] == ["POST", "POST", "POST", "PUT", "POST", "GET", "DELETE"]
    stored = cassette.read_text()
    assert "FORMFIELD" not in stored and "override.example" in stored
    assert all(
        dict((k.lower(), v) for k, v in call.request_headers).get("accept-encoding") == "identity" for call in calls
    )


def test_a_value_learned_mid_replay_reaches_headers_the_replay_already_made_comparable(
    upstream: Upstream, cassette: Path
) -> None:
    value = "Zq9xLmN0pR7sT2uVwXy8"
    upstream.routes["/echo"] = lambda r: Reply.json({"ok": True})
    url = upstream.url + "/echo"
    headers = {"x-trace": value, "content-type": "application/json"}
    requests = [
        {"headers": headers, "json": {"q": 1}},
        {"json": {"api_key": value}},  # teaches the redactor the value
        {"headers": headers, "json": {"q": 1}},  # the same headers: now redacted
    ]
    with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)) as client:
        for kwargs in requests:
            client.post(url, **kwargs)
    stored = [dict(call.request_headers).get("x-trace") for call in read_cassette(cassette).calls]
    assert stored == [PLACEHOLDER, None, PLACEHOLDER], "the final pass at commit reaches the first call too"
    for match in ({}, {"compare_headers": ["content-length"]}, {"match_on": ["method", "path", "headers", "body"]}):
        with httpx2.Client(transport=vcr_transport.ReplayTransport(cassette, **match)) as client:
            for kwargs in requests:
                assert client.post(url, **kwargs).json() == {"ok": True}, match
    with httpx2.Client(transport=vcr_transport.ReplayTransport(cassette, compare_headers=["content-length"])) as client:
        client.post(url, **requests[0])
        with pytest.raises(vcr_transport.ReplayMismatch, match="content-length"):
            client.post(url, json={"api_key": value + "longer"})
