"""Modes, the environment switch, the mode-aware factories and the use_cassette context manager."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from helpers import call_ends, cassette_lines
from real_wire import vendor_mock
from upstream import Upstream
from vendors import SDKS, Sdk

import vcr_transport
from vcr_transport import use_cassette
from vcr_transport._config import PytestRun, ResolvedMode, published_run, resolve_mode

OPENAI = next(s for s in SDKS if s.name == "openai" and s.library is httpx2 and s.side == "sync")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above the tests' working directory


def test_precedence_argument_option_environment_pyproject_default(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.vcr_transport]\nmode = "off"\n')
    env = {"VCR_TRANSPORT_MODE": "record"}
    resolve = resolve_mode
    with published_run(PytestRun("record")):
        assert resolve("replay", environ=env, pyproject=pyproject) == ResolvedMode("replay", "argument")
    with published_run(PytestRun("record-on-miss")):
        assert resolve(None, environ=env, pyproject=pyproject).mode == "record-on-miss"
    with published_run(PytestRun(None)):  # a pytest run without --vcr-mode
        assert resolve(None, environ=env, pyproject=pyproject).mode == "record"
    assert resolve(None, environ=env, pyproject=pyproject).source == "environment VCR_TRANSPORT_MODE"
    assert resolve(None, environ={}, pyproject=pyproject) == ResolvedMode("off", f"{pyproject} [tool.vcr_transport]")
    pyproject.write_text('[project]\nname = "x"\n')
    assert resolve(None, environ={}, pyproject=pyproject) == ResolvedMode("auto", "default")


@pytest.mark.parametrize(
    "table",
    [
        '[tool.vcr_transport]\nmode = "replay"',
        '[tool."vcr\\u005ftransport"]\nmode = "replay"',
        'tool.vcr_transport.mode = "replay"',
    ],
)
def test_the_settings_are_read_in_every_spelling_toml_allows(tmp_path: Path, table: str) -> None:
    """An escaped or dotted key names the table as the plain one does, and a setting's typo there stops the
    run."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"{table}\n")
    assert resolve_mode(None, environ={}, pyproject=pyproject).mode == "replay"
    pyproject.write_text(f"{table.replace('mode', 'mdoe')}\n")
    with pytest.raises(vcr_transport.VcrTransportError, match="has no setting mdoe; did you mean mode"):
        resolve_mode(None, environ={}, pyproject=pyproject)


def test_an_unknown_mode_lists_the_valid_ones() -> None:
    with pytest.raises(vcr_transport.ModeError) as caught:
        resolve_mode(None, environ={"VCR_TRANSPORT_MODE": "replya"})
    assert "'replya'" in str(caught.value) and "off, record, replay, record-on-miss, auto" in str(caught.value)


def test_the_environment_flips_record_and_replay_without_code_change(
    upstream: Upstream, cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def script() -> list[Any]:
        transport = vcr_transport.transport(cassette)
        return OPENAI.run(transport, upstream.url, [("chat", ["hi"]), ("stream", ["hi", "echo:hi", "go"])])

    monkeypatch.setenv("VCR_TRANSPORT_MODE", "record")
    live = script()
    upstream.stop()
    monkeypatch.setenv("VCR_TRANSPORT_MODE", "replay")
    assert script() == live
    monkeypatch.setenv("VCR_TRANSPORT_MODE", "off")
    with pytest.raises(Exception, match="Connection"):
        OPENAI.run(vcr_transport.transport(cassette), upstream.url, [("chat", ["hi"])], max_retries=0)


def test_auto_records_a_missing_cassette_then_replays_it(upstream: Upstream, cassette: Path) -> None:
    first = vcr_transport.transport(cassette)
    assert first.mode == "record"
    live = OPENAI.run(first, upstream.url, [("chat", ["hi"])])
    upstream.stop()
    second = vcr_transport.transport(cassette)
    assert second.mode == "replay"
    assert OPENAI.run(second, upstream.url, [("chat", ["hi"])]) == live


def test_auto_in_ci_never_records_and_says_how(cassette: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(vcr_transport.CassetteError) as caught:
        vcr_transport.transport(cassette)
    assert "auto mode never records when CI is set" in str(caught.value)
    assert "VCR_TRANSPORT_MODE=record" in str(caught.value)
    assert not cassette.exists()


def test_off_touches_no_cassette(upstream: Upstream, cassette: Path) -> None:
    assert OPENAI.run(vcr_transport.transport(cassette, mode="off"), upstream.url, [("chat", ["hi"])]) == ["echo:hi"]
    assert not cassette.exists() and list(cassette.parent.iterdir()) == []


def test_factories_default_to_httpx2_or_httpx_when_asked(cassette: Path) -> None:
    assert isinstance(vcr_transport.transport(cassette, mode="off").inner, httpx2.HTTPTransport)
    assert isinstance(vcr_transport.async_transport(cassette, mode="off").async_inner, httpx2.AsyncHTTPTransport)
    assert isinstance(vcr_transport.transport(cassette, mode="off", library="httpx").inner, httpx.HTTPTransport)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_record_on_miss_keeps_the_calls_before_and_rerecords_from_the_miss(
    upstream: Upstream, cassette: Path, is_async: bool
) -> None:
    sdk = next(s for s in SDKS if s.name == "openai" and s.library is httpx2 and s.is_async == is_async)
    factory = vcr_transport.async_transport if is_async else vcr_transport.transport
    old = [("chat", ["one"]), ("chat", ["two"]), ("chat", ["three"]), ("chat", ["four"])]
    sdk.run(factory(cassette, mode="record"), upstream.url, old)
    before = cassette.read_bytes().split(b"\n")
    served = len(upstream.received)
    new = [("chat", ["one"]), ("chat", ["two"]), ("chat", ["THREE"]), ("chat", ["five"])]
    assert sdk.run(factory(cassette, mode="record-on-miss"), upstream.url, new) == [
        "echo:one",
        "echo:two",
        "echo:THREE",
        "echo:five",
    ]
    assert len(upstream.received) == served + 2, "only the call that missed and the ones after went to the network"
    after = cassette.read_bytes().split(b"\n")
    kept = [line for line in before[1:] if line and json.loads(line)["call_index"] < 2]
    assert after[1 : 1 + len(kept)] == kept, "calls before the miss stay byte-identical"
    bodies = [
        line["body"]["json"]["messages"][0]["content"] for line in cassette_lines(cassette) if line["type"] == "request"
    ]
    assert bodies == ["one", "two", "THREE", "five"]
    assert [end["outcome"] for end in call_ends(cassette)] == ["complete"] * 4
    upstream.stop()
    assert sdk.run(factory(cassette, mode="replay"), upstream.url, new)[2] == "echo:THREE"


def test_record_on_miss_with_no_cassette_records(upstream: Upstream, cassette: Path) -> None:
    assert OPENAI.run(vcr_transport.transport(cassette, mode="record-on-miss"), upstream.url, [("chat", ["x"])]) == [
        "echo:x"
    ]
    assert len(call_ends(cassette)) == 1


# --- use_cassette ---------------------------------------------------------------------------------------


def _originals() -> list[Any]:
    """What use_cassette patches: the clients' transport lookup, and google-genai's aiohttp switch."""
    from google.genai import _api_client

    classes = (httpx.Client, httpx.AsyncClient, httpx2.Client, httpx2.AsyncClient)
    return [*(cls.__dict__["_transport_for_url"] for cls in classes), _api_client.has_aiohttp]


def test_use_cassette_reaches_the_sdks_own_clients(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    steps = [("chat", ["hi"]), ("stream", ["hi", "echo:hi", "stream"])]
    before = _originals()
    with vcr_transport.use_cassette(cassette, mode="record") as recording:
        assert recording.mode == "record"
        live = sdk.run(None, upstream.url, steps)
    assert _originals() == before
    upstream.stop()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert sdk.run(None, upstream.url, steps) == live
    assert _originals() == before


def test_use_cassette_wraps_clients_created_before_the_block_and_custom_transports(
    upstream: Upstream, cassette: Path
) -> None:
    from openai._vendor.httpx_aiohttp import AiohttpTransport

    sync_client = httpx.Client()
    sse = upstream.url + "/v1/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}

    async def aiohttp_call() -> bytes:
        async with httpx2.AsyncClient(transport=AiohttpTransport()) as client:
            return (await client.post(sse, json=body)).content

    with vcr_transport.use_cassette(cassette, mode="record"):
        live = [sync_client.post(sse, json=body).content, asyncio.run(aiohttp_call())]
    upstream.stop()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert [sync_client.post(sse, json=body).content, asyncio.run(aiohttp_call())] == live
    sync_client.close()


def test_use_cassette_restores_on_exceptions_and_nests(upstream: Upstream, tmp_path: Path) -> None:
    before = _originals()
    outer, inner = tmp_path / "outer.jsonl", tmp_path / "inner.jsonl"
    with pytest.raises(RuntimeError, match="boom") as raised:
        with vcr_transport.use_cassette(outer, mode="record"):
            with httpx2.Client() as client:
                client.get(upstream.url + "/plain/a")
                with vcr_transport.use_cassette(inner, mode="record"):
                    client.get(upstream.url + "/plain/b")
                client.get(upstream.url + "/plain/c")
            raise RuntimeError("boom")
    assert _originals() == before
    urls = lambda path: [line["url"].rsplit("/", 1)[1] for line in cassette_lines(path) if line["type"] == "request"]  # noqa: E731
    assert urls(inner) == ["b"]
    assert not outer.exists(), "a block that raised is not a recording"
    assert any(f"cassette {outer} was not saved" in note for note in raised.value.__notes__)


def test_two_threads_with_two_cassettes_never_mix(upstream: Upstream, tmp_path: Path) -> None:
    barrier = threading.Barrier(2)

    def worker(name: str) -> None:
        with vcr_transport.use_cassette(tmp_path / f"{name}.jsonl", mode="record"):
            barrier.wait()
            with httpx2.Client() as client:
                for n in range(5):
                    client.get(f"{upstream.url}/plain/{name}-{n}")
            barrier.wait()

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name in ("a", "b"):
        urls = [line["url"] for line in cassette_lines(tmp_path / f"{name}.jsonl") if line["type"] == "request"]
        assert [u.rsplit("/", 1)[1] for u in urls] == [f"{name}-{n}" for n in range(5)]
    assert _originals()[2] is httpx2.Client.__dict__["_transport_for_url"]


def test_two_tasks_with_two_cassettes_never_mix(upstream: Upstream, tmp_path: Path) -> None:
    async def task(name: str, client: httpx2.AsyncClient) -> None:
        async with vcr_transport.use_cassette(tmp_path / f"{name}.jsonl", mode="record"):
            for n in range(4):
                await client.get(f"{upstream.url}/plain/{name}-{n}")
                await asyncio.sleep(0)

    async def main() -> None:
        async with httpx2.AsyncClient() as client:
            await asyncio.gather(task("a", client), task("b", client))

    asyncio.run(main())
    for name in ("a", "b"):
        urls = [line["url"] for line in cassette_lines(tmp_path / f"{name}.jsonl") if line["type"] == "request"]
        assert [u.rsplit("/", 1)[1] for u in urls] == [f"{name}-{n}" for n in range(4)]


def test_a_request_whose_owner_cant_be_told_fails_closed(upstream: Upstream, tmp_path: Path) -> None:
    opened = threading.Event()
    done = threading.Event()

    def holder() -> None:
        with vcr_transport.use_cassette(tmp_path / "other.jsonl", mode="record"):
            opened.set()
            done.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    opened.wait(5)
    errors: list[BaseException] = []
    try:
        with vcr_transport.use_cassette(tmp_path / "mine.jsonl", mode="record"):

            def ownerless() -> None:
                try:
                    httpx2.get(upstream.url + "/plain/x")
                except BaseException as exc:
                    errors.append(exc)

            stray = threading.Thread(target=ownerless)
            stray.start()
            stray.join()
    finally:
        done.set()
        thread.join()
    assert len(errors) == 1 and isinstance(errors[0], vcr_transport.CassetteOwnerError)
    assert "several are open" in str(errors[0])


def test_a_thread_started_inside_the_only_open_cassette_belongs_to_it(upstream: Upstream, cassette: Path) -> None:
    with vcr_transport.use_cassette(cassette, mode="record"):
        thread = threading.Thread(target=lambda: httpx2.get(upstream.url + "/plain/t"))
        thread.start()
        thread.join()
    assert [line["url"].rsplit("/", 1)[1] for line in cassette_lines(cassette) if line["type"] == "request"] == ["t"]


def test_decorator_on_sync_and_async_functions(upstream: Upstream, tmp_path: Path) -> None:
    @vcr_transport.use_cassette(tmp_path / "sync.jsonl", mode="record")
    def sync_function() -> int:
        return httpx2.get(upstream.url + "/plain/s").status_code

    @vcr_transport.use_cassette(tmp_path / "async.jsonl", mode="record")
    async def async_function() -> int:
        async with httpx2.AsyncClient() as client:
            return (await client.get(upstream.url + "/plain/a")).status_code

    assert sync_function() == 404 and asyncio.run(async_function()) == 404
    assert len(call_ends(tmp_path / "sync.jsonl")) == len(call_ends(tmp_path / "async.jsonl")) == 1


def test_exit_reraises_a_mismatch_the_sdk_swallowed(upstream: Upstream, cassette: Path) -> None:
    anthropic_sdk = next(s for s in SDKS if s.name == "anthropic" and s.side == "sync")
    with vcr_transport.use_cassette(cassette, mode="record"):
        anthropic_sdk.run(None, upstream.url, [("chat", ["hi"])])
    upstream.stop()
    with pytest.raises(vcr_transport.ReplayMismatch) as caught:
        with vcr_transport.use_cassette(cassette, mode="replay"):
            try:
                anthropic_sdk.run(None, upstream.url, [("chat", ["bye"])])
            except Exception as swallowed:
                assert "replay mismatch at call 0" in str(swallowed)
    assert str(caught.value).startswith(
        "replay mismatch at call 0, field body.messages[0].content[0].text: recorded 'hi', incoming 'bye'"
    )


def _swallowing_client() -> httpx2.Client:
    return httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json={"ok": True})))


def _ask(prompt: str) -> str:
    """An app that turns every error into an empty answer, as crewAI's trace exporter and litellm's price-list
    fetch do."""
    with _swallowing_client() as client:
        try:
            return client.post("https://api.example.test/v1/chat", json={"prompt": prompt}).text
        except Exception:
            return ""


def test_caught_mismatch_raise_or_ignore(tmp_path: Path) -> None:
    cassette = tmp_path / "caught.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _ask("hi") == '{"ok":true}'
    with pytest.raises(vcr_transport.ReplayMismatch, match="field body.prompt: recorded 'hi', incoming 'bye'"):
        with vcr_transport.use_cassette(cassette, mode="replay"):  # the default: raise
            assert _ask("bye") == ""
    with pytest.raises(vcr_transport.ReplayMismatch, match="field body.prompt"):
        with vcr_transport.use_cassette(cassette, mode="replay", caught_mismatch="raise"):
            _ask("bye")
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="ignore", caught_mismatch="ignore") as block:
        assert _ask("bye") == ""  # the app handled it: the block ends quietly
    assert block.session is not None and block.session.first_mismatch is not None  # still there to look at
    # Left alone, the mismatched call is an unplayed one: the unplayed check still reports it.
    with pytest.raises(vcr_transport.UnplayedCallsError, match="call 0: POST"):
        with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error", caught_mismatch="ignore"):
            _ask("bye")


def test_caught_mismatch_from_pyproject_and_refused_values(tmp_path: Path) -> None:
    cassette = tmp_path / "caught.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        _ask("hi")
    (tmp_path / "pyproject.toml").write_text('[tool.vcr_transport]\ncaught_mismatch = "ignore"\n')
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="ignore"):
        assert _ask("bye") == ""
    with pytest.raises(
        ValueError, match="use_cassette\\(\\): option caught_mismatch must be one of 'raise', 'ignore', not 'swallow'"
    ):
        vcr_transport.use_cassette(cassette, caught_mismatch="swallow")
    (tmp_path / "pyproject.toml").write_text('[tool.vcr_transport]\ncaught_mismatch = "never"\n')
    with pytest.raises(
        ValueError,
        match="pyproject.toml \\[tool.vcr_transport\\]: option caught_mismatch must be "
        "one of 'raise', 'ignore', not 'never'",
    ):
        with vcr_transport.use_cassette(cassette, mode="replay"):
            pass


def test_unplayed_calls_warn_error_or_are_ignored(upstream: Upstream, cassette: Path) -> None:
    with vcr_transport.use_cassette(cassette, mode="record"):
        OPENAI.run(None, upstream.url, [("chat", ["a"]), ("chat", ["b"])])
    upstream.stop()
    with pytest.warns(vcr_transport.UnplayedCallsWarning, match="call 1: POST"):
        with vcr_transport.use_cassette(cassette, mode="replay", unplayed="warn"):
            OPENAI.run(None, upstream.url, [("chat", ["a"])])
    with pytest.raises(vcr_transport.UnplayedCallsError, match="1 recorded call"):
        with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
            OPENAI.run(None, upstream.url, [("chat", ["a"])])
    with pytest.raises(vcr_transport.UnplayedCallsError, match="1 recorded call"):  # the default, as under pytest
        with vcr_transport.use_cassette(cassette, mode="replay"):
            OPENAI.run(None, upstream.url, [("chat", ["a"])])
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="ignore"):
        OPENAI.run(None, upstream.url, [("chat", ["a"])])


def test_pyproject_settings_add_redaction_names(upstream: Upstream, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.vcr_transport]\nmode = "record"\nredact_names = ["customer_ref"]\n')
    cassette = tmp_path / "c.jsonl"
    with vcr_transport.use_cassette(cassette):
        httpx2.post(upstream.url + "/plain/x", json={"customer_ref": "CUST-12345", "password": "pw"})
    text = cassette.read_text()
    assert "CUST-12345" not in text and '"customer_ref":"[secret removed]"' in text


@pytest.mark.parametrize("mode", ["replay", "record-on-miss", "auto"])
def test_a_broken_cassette_fails_as_itself_before_any_request(
    sdk: Sdk, upstream: Upstream, cassette: Path, mode: str
) -> None:
    """Never as an answer the SDK reads as the vendor's (a 400 'cassette_error'), nor after retries."""
    cassette.write_text('{"type": "header", "format_version": 1}\n{"type": "request", "call_in')
    served = len(upstream.received)
    options = {} if sdk.name == "genai" else {"max_retries": 0}
    with pytest.raises(vcr_transport.CassetteError) as caught:
        with vcr_transport.use_cassette(cassette, mode=mode):
            sdk.run(None, upstream.url, [("chat", ["hi"])], **options)
    assert str(caught.value).startswith(f"cassette {cassette}:2: the last line is cut off")
    assert len(upstream.received) == served, "no request reached the network"
    with pytest.raises(vcr_transport.CassetteError, match=":2: the last line is cut off"):
        vcr_transport.transport(cassette, mode=mode)
    assert len(upstream.received) == served


def _on_cycles(garbage: list[Any]) -> list[str]:
    """The types of vcr_transport's objects that lie on a reference cycle among ``garbage`` (httpx's own
    response and stream hold each other: what they hold waits for the collector too, but it is not ours)."""
    members = {id(o): o for o in garbage}
    found = set()
    for start in garbage:
        if not type(start).__module__.startswith("vcr_transport"):
            continue
        seen, stack = set(), [start]
        while stack:
            item = stack.pop()
            if item is start and seen:
                found.add(type(start).__qualname__)
                break
            if id(item) not in seen:
                seen.add(id(item))
                stack += [r for r in gc.get_referents(item) if id(r) in members]
    return sorted(found)


def _block_garbage(library: Any, path: Path, mode: str, side: str) -> list[str]:
    """The types of vcr_transport's objects on a reference cycle after one ``use_cassette`` block with one
    streamed call (none: reference counting frees a test's cassette as its block ends)."""
    answer = b'data: {"x": 1}\n\ndata: [DONE]\n\n'
    transport = vendor_mock(library, lambda request: (200, [("content-type", "text/event-stream")], answer))
    url, ask = "https://api.openai.com/v1/chat/completions", {"model": "m", "stream": True}

    async def call_async() -> None:
        async with use_cassette(path, mode=mode), library.AsyncClient(transport=transport) as client:
            await (await client.post(url, json=ask)).aread()

    def call_sync() -> None:
        with use_cassette(path, mode=mode), library.Client(transport=transport) as client:
            client.post(url, json=ask).read()

    run = call_sync if side == "sync" else lambda: asyncio.run(call_async())
    run()  # the first block's imports and memos
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        gc.collect()
        return _on_cycles(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
@pytest.mark.parametrize("side", ["sync", "async"])
def test_a_block_leaves_no_reference_cycle(tmp_path: Path, library: Any, side: str) -> None:
    """A recorded request's transport held its own bound method, and a replay's parser and engine theirs: each
    block's cassette waited for the collector (its whole recording, for a long conversation)."""
    path = tmp_path / "c.jsonl"
    assert _block_garbage(library, path, "record", side) == []
    assert _block_garbage(library, path, "replay", side) == []
