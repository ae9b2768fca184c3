"""Sessions on the real wire: the SDKs at their default hosts, answered with every header set the vendors
really send (tests/fixtures/wire/headers: Cloudflare cookies with Domain, Path, Expires; HSTS with max-age),
four calls on one client (so that the client's cookie jar sends the cookies back), recorded, checked with
``verify --strict`` and replayed offline."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx2
import pytest
from helpers import verify_strict
from real_wire import COOKIE_SETS, FIXTURES, HEADER_SETS, at_vendor_host, real_headers, vendor_of, vendor_traffic
from upstream import Received
from vendors import SDKS, VENDOR_ROUTES, Sdk

from vcr_transport import PLACEHOLDER, RecordingTransport, ReplayTransport

DEFAULT_HOSTS = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "genai": "https://generativelanguage.googleapis.com",
}
STEPS = [("chat", ["hi"]), ("stream", ["hi", "echo:hi", "more"]), ("chat", ["again"]), ("stream", ["last"])]
HEADER_SET_IDS = [(vendor, number) for vendor, sets in HEADER_SETS.items() for number in range(len(sets))]


def answering(sdk: Sdk, header_set: tuple[str, int]) -> Any:
    """The inner transport: the vendor's own reply at its default host, with header set ``header_set``."""
    route = VENDOR_ROUTES[sdk.name][1]
    extra = real_headers(*header_set)

    def handler(request: Any) -> Any:
        body = request.read()
        received = Received(request.method, request.url.raw_path.decode(), dict(request.headers), body)
        reply = route(received)
        own = {name.lower() for name, _ in reply.headers}
        headers = [(n, v) for n, v in extra if n.lower() not in own] + reply.headers
        return sdk.library.Response(reply.status, headers=headers, content=b"".join(reply.chunks))

    return sdk.library.MockTransport(handler)


def _run(sdk: Sdk, transport: Any) -> list[Any]:
    return sdk.run(transport, DEFAULT_HOSTS[sdk.name], STEPS, **({"max_retries": 0} if sdk.name != "genai" else {}))


@pytest.mark.parametrize("header_set", HEADER_SET_IDS, ids=[f"{v}-{n}" for v, n in HEADER_SET_IDS])
def test_a_session_at_the_default_host_verifies_and_replays(
    sdk: Sdk, header_set: tuple[str, int], tmp_path: Path
) -> None:
    cassette = tmp_path / "session.jsonl"
    inner = answering(sdk, header_set)
    recorder: Any = RecordingTransport(inner, cassette) if not sdk.is_async else None
    if sdk.is_async:
        from vcr_transport import AsyncRecordingTransport

        recorder = AsyncRecordingTransport(inner, cassette)
    live = _run(sdk, recorder)

    code, printed = verify_strict(cassette)
    assert code == 0, printed
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    requests = [line for line in lines if line["type"] == "request"]
    assert len(requests) == len(STEPS)
    for request in requests:
        assert request["url"].startswith(DEFAULT_HOSTS[sdk.name] + "/"), request["url"]
        hosts = [value for name, value in request["headers"] if name.lower() == "host"]
        assert hosts == [DEFAULT_HOSTS[sdk.name].removeprefix("https://")]
    sent = dict((n.lower(), v) for n, v in real_headers(*header_set))
    for response in (line for line in lines if line["type"] == "response"):
        kept = {name.lower(): value for name, value in response["headers"]}
        if "strict-transport-security" in sent:  # not a secret: kept as sent
            assert kept["strict-transport-security"] == sent["strict-transport-security"]
        cookies = [value for name, value in response["headers"] if name.lower() == "set-cookie"]
        originals = [value for name, value in real_headers(*header_set) if name.lower() == "set-cookie"]
        assert len(cookies) == len(originals)
        for cookie, original in zip(cookies, originals, strict=True):
            name, _, rest = original.partition("=")
            _, _, attributes = rest.partition(";")
            assert cookie.startswith(name + "="), cookie
            assert cookie.endswith(attributes), cookie  # Domain, Path, Expires... as sent
            if len(rest.partition(";")[0]) >= 8:
                assert rest.partition(";")[0] not in cassette.read_text()

    replayed = _run(sdk, ReplayTransport(cassette))
    assert replayed == live


def test_every_header_set_is_served_by_the_test_upstream() -> None:
    assert vendor_of("/v1/messages") == "anthropic" and vendor_of("/v1/chat/completions") == "openai"
    assert sum(map(len, HEADER_SETS.values())) >= 2
    assert any(PLACEHOLDER not in value for sets in HEADER_SETS.values() for s in sets for _, value in s)


# --- the fixtures: in the repository, whole, and the only source ---------------------------------------


def test_the_fixture_header_sets_are_real_answers_of_each_kind() -> None:
    """Each header set has the Date and Server a real answer has (tests compare answers that differ in them
    alone); each vendor has sets with real cookies, and sets for JSON answers and for event streams."""
    for vendor, sets in HEADER_SETS.items():
        assert all({"date", "server"} <= {name.lower() for name, _ in headers} for headers in sets), vendor
        assert COOKIE_SETS[vendor], f"{vendor}: no set with a real cookie"
        kinds = {entry["content_type"] for entry in json.loads((FIXTURES / "headers" / f"{vendor}.json").read_text())}
        assert "application/json" in kinds and any("event-stream" in kind for kind in kinds), (vendor, kinds)


def _vendor_and_kinds(exchange: dict[str, Any]) -> set[tuple[str, Any]]:
    host = urlsplit(exchange["request"]["uri"]).hostname or ""
    vendor = next((v for v in ("openai", "anthropic", "googleapis") if v in host), host)
    types = [v for k, v in exchange["response"]["headers"].items() if k.lower() == "content-type"]
    return {
        (vendor, "sse" if types and "event-stream" in str(types[0]) else "json"),
        (vendor, exchange["response"]["status"]),
    }


def test_the_fixture_traffic_has_json_streams_and_errors_of_each_vendor() -> None:
    seen = set().union(*(_vendor_and_kinds(exchange) for _, exchange in vendor_traffic()))
    wanted = {(v, kind) for v in ("openai", "anthropic", "googleapis") for kind in ("json", "sse", 200)}
    assert wanted | {("openai", 400), ("anthropic", 400)} <= seen, seen
    assert "tools/make_wire_fixtures.py" in (FIXTURES / "README.md").read_text()


def test_no_test_reads_the_captures_beside_the_checkout(tmp_path: Path) -> None:
    """The suite's guard (tests/conftest.py) refuses a read of the captures' folder beside the checkout, whether
    or not it is there, and no test module names it."""
    outside = Path(__file__).resolve().parents[3] / "shared"  # tests/conftest.py's OUTSIDE_THE_CLONE
    for read in (
        lambda: open(outside / "vendor-headers" / "openai.json"),  # noqa: SIM115
        lambda: os.listdir(outside / "vendor-traffic"),
        lambda: os.scandir(outside),
    ):
        with pytest.raises(PermissionError, match="tests/fixtures/wire"):
            read()
    (tmp_path / "shared-elsewhere").mkdir()
    assert os.listdir(tmp_path) == ["shared-elsewhere"], "a folder of that name elsewhere is read as any other"
    named = re.compile("shared" + r"""(?:/|["']\s*/\s*["'])vendor-""")  # the path, written or built
    tests = Path(__file__).resolve().parents[1]
    assert [p for p in tests.rglob("*.py") if named.search(p.read_text(encoding="utf-8"))] == []


COOKIE = "__cf_bm=Ab3.x-17; _cfuvid=Zz9_q-604800000"


def _capture(path: str, reply: Any, kind: str = "application/json", tools: Any = None) -> dict[str, Any]:
    body = {"json": {"tools": tools}} if tools else {"json": {"p": 1}}
    request = {"method": "POST", "uri": f"https://api.anthropic.com{path}", "headers": {"cookie": COOKIE}}
    response = {"status": 200, "headers": {"content-type": kind}, "body": reply}
    return {"request": {**request, "body": body}, "response": response}


def _generator() -> Any:
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("make_wire_fixtures", root / "tools" / "make_wire_fixtures.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    return generator


def _write_captures(shared: Path) -> dict[str, Any]:
    """Captures in the shared folder's shape: header sets; an exchange twice (in two files), a bigger one of
    the same endpoint, a stream, an answer calling the tool its request offered (returned)."""
    (shared / "vendor-headers").mkdir(parents=True)
    for vendor in ("openai", "anthropic"):
        (shared / "vendor-headers" / f"{vendor}.json").write_text(f'[{{"vendor": "{vendor}"}}]')
    small, big = _capture("/v1/messages", {"json": {"a": 1}}), _capture("/v1/messages", {"json": {"a": "x" * 99}})
    stream = _capture("/v1/messages", {"text": "data: {}\n\n"}, "text/event-stream")
    tool = {"json": {"content": [{"type": "tool_use", "name": "look", "input": {}}], "pad": "y" * 200}}
    called = _capture("/v1/messages", tool, tools=[{"name": "look"}])
    (shared / "vendor-traffic").mkdir()
    (shared / "vendor-traffic" / "a.json").write_text(json.dumps({"source": "s", "interactions": [big, small]}))
    (shared / "vendor-traffic" / "b.json").write_text(
        json.dumps({"source": "s", "interactions": [small, stream, called]})
    )
    return tool


def _shape(value: str) -> str:
    return re.sub("[a-z]", "a", re.sub("[A-Z]", "A", re.sub("[0-9]", "0", value)))


def test_the_generator_keeps_one_of_each_kind_whole_and_fakes_cookies(tmp_path: Path) -> None:
    """tools/make_wire_fixtures.py on small captures: the header sets copied as they are; of the traffic, the
    smallest exchange of each endpoint and kind, every small stream, an answer calling an offered tool, each
    repeated exchange once; request cookies replaced by text of the same shape; a rerun writes the same bytes."""
    generator, shared, tool = _generator(), tmp_path / "captures", _write_captures(tmp_path / "captures")
    output = tmp_path / "wire"
    assert generator.main(["--shared", str(shared), "--output", str(output)]) == 0
    assert json.loads((output / "headers" / "anthropic.json").read_text()) == [{"vendor": "anthropic"}]
    first = (output / "traffic.ndjson").read_bytes()
    kept = {line["name"]: line for line in map(json.loads, first.splitlines())}
    assert list(kept) == ["a#1", "b#1", "b#2"]
    assert [kept["a#1"]["source"], kept["b#2"]["response"]["body"]] == ["s", tool], "bodies are kept whole"
    faked = kept["a#1"]["request"]["headers"]["cookie"]
    assert (faked.partition("=")[0], faked.partition("; ")[2].partition("=")[0], faked != COOKIE) == (
        "__cf_bm",
        "_cfuvid",
        True,
    )
    assert _shape(faked) == _shape(COOKIE) == "__aa_aa=Aa0.a-00; _aaaaaa=Aa0_a-000000000", "names and shape kept"
    rerun = generator.main(["--shared", str(shared), "--output", str(output)])
    assert (rerun, (output / "traffic.ndjson").read_bytes()) == (0, first), "a rerun writes the same bytes"
    assert generator.main(["--shared", str(tmp_path / "nowhere"), "--output", str(output)]) == 2


@pytest.mark.parametrize("library", [httpx, httpx2], ids=lambda library: library.__name__)
def test_async_session_sets_cookies_before_concurrent_calls(library: Any, tmp_path: Path) -> None:
    """Calls started together leave before any answer set a cookie while recording; on replay, the answers
    come at once. Whether a request carries the server's cookie depends on timing: it is not compared."""
    sdk = next(s for s in SDKS if s.name == "openai" and s.library is library and s.is_async)
    cassette = tmp_path / "gathered.jsonl"
    import openai

    from vcr_transport import AsyncRecordingTransport

    async def gathered(transport: Any, order: list[int]) -> list[str]:
        async with library.AsyncClient(transport=transport) as http:
            client = openai.AsyncOpenAI(
                api_key="sk-proj-" + "a1" * 20, base_url="https://api.openai.com/v1", http_client=http, max_retries=0
            )
            first = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "first"}])

            async def ask(number: int) -> str:
                reply = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": f"q{number}"}]
                )
                return str(reply.choices[0].message.content)

            return [str(first.choices[0].message.content), *await asyncio.gather(*(ask(n) for n in order))]

    live = asyncio.run(gathered(AsyncRecordingTransport(answering(sdk, ("openai", 0)), cassette), [0, 1, 2]))
    assert verify_strict(cassette)[0] == 0
    assert asyncio.run(gathered(ReplayTransport(cassette), [0, 1, 2])) == live


def _openai_answer(request: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """Chat completions and embeddings, as api.openai.com answers them."""
    if request.url.path.endswith("/embeddings"):
        body: dict[str, Any] = {
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5]}],
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
    else:
        prompt = json.loads(request.content)["messages"][-1]["content"]
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": f"echo:{prompt}"}, "finish_reason": "stop"}
            ],
        }
    return 200, [("content-type", "application/json")], json.dumps(body).encode()


def _cookie_mock(library: Any) -> Any:
    """api.openai.com's header set 0: ``__cf_bm`` (expired by now: the jar drops it) and ``_cfuvid`` (a
    session cookie for ``Path=/``, sent back on every later request)."""
    headers = real_headers("openai", 0)

    def handler(request: Any) -> Any:
        status, own, body = _openai_answer(request)
        return library.Response(status, headers=headers + own, content=body)

    return library.MockTransport(handler)


@pytest.mark.parametrize("library", [httpx, httpx2], ids=lambda library: library.__name__)
def test_chat_then_embeddings_on_one_client_replays(library: Any, tmp_path: Path) -> None:
    """The chat answer sets a cookie for ``Path=/``: the embeddings request carries it. Replayed, the
    cookie keeps its attributes, so the jar sends it to the other endpoint family as it did live."""
    import openai

    cassette = tmp_path / "chat-embeddings.jsonl"

    def run(transport: Any) -> list[Any]:
        with library.Client(transport=transport) as http:
            client = openai.OpenAI(api_key="sk-proj-" + "b2" * 20, http_client=http, max_retries=0)
            chat = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            vector = client.embeddings.create(model="text-embedding-3-small", input="hi")
            return [chat.choices[0].message.content, vector.data[0].embedding, dict(http.cookies)]

    live = run(RecordingTransport(_cookie_mock(library), cassette))
    assert "_cfuvid" in live[2]
    requests = [json.loads(line) for line in cassette.read_text().splitlines() if '"type":"request"' in line]
    assert [name.lower() for name, _ in requests[1]["headers"]].count("cookie") == 1
    assert ["cookie", "_cfuvid=[secret removed]"] in [[n.lower(), v] for n, v in requests[1]["headers"]]
    replayed = run(ReplayTransport(cassette))
    assert replayed[:2] == live[:2]
    assert replayed[2] == {"_cfuvid": PLACEHOLDER}, "the replayed cookie keeps its name and Path=/"


@pytest.mark.parametrize("library", [httpx, httpx2], ids=lambda library: library.__name__)
def test_concurrent_calls_over_real_sockets_replay_whatever_the_cookies(library: Any, tmp_path: Path) -> None:
    """Calls started together over a slow upstream all leave before any answer set a cookie; on replay
    the first answer comes at once and its cookie goes with the next requests. The server's cookies are
    not compared, so the replay matches."""
    import openai
    from upstream import Upstream

    from vcr_transport import AsyncRecordingTransport

    server = Upstream()
    server.routes["/v1/chat/completions"] = lambda received: _slow_chat(received)
    server.start()
    cassette = tmp_path / "gathered.jsonl"

    async def gathered(transport: Any) -> list[str]:
        async with library.AsyncClient(transport=transport) as http:
            client = openai.AsyncOpenAI(
                api_key="sk-proj-" + "c3" * 20, base_url="https://api.openai.com/v1", http_client=http, max_retries=0
            )

            async def ask(number: int) -> str:
                reply = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": f"q{number}"}]
                )
                return str(reply.choices[0].message.content)

            answers = list(await asyncio.gather(*(ask(n) for n in range(3))))
            answers.append(await ask(9))  # after the gathered ones: it carries the cookie, live and replayed
            return answers

    try:
        inner = at_vendor_host(library, server.url, is_async=True)
        live = asyncio.run(gathered(AsyncRecordingTransport(inner, cassette)))
    finally:
        server.stop()
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    carried = [any(n.lower() == "cookie" for n, _ in line["headers"]) for line in lines if line["type"] == "request"]
    assert carried == [False, False, False, True], "the gathered requests left before any cookie was set"
    assert verify_strict(cassette)[0] == 0
    assert asyncio.run(gathered(ReplayTransport(cassette))) == live


def _slow_chat(received: Received) -> Any:
    """An answer that takes a moment (so that requests started together overlap), with cookies for any
    host: ``Domain`` as api.openai.com sends it."""
    import time

    from upstream import Reply

    time.sleep(0.05)
    prompt = received.json()["messages"][-1]["content"]
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": f"echo:{prompt}"}, "finish_reason": "stop"}
        ],
    }
    headers = [*real_headers("openai", 0), ("content-type", "application/json")]
    return Reply(200, headers, [json.dumps(body).encode()], content_length=True, real_headers=False)
