"""The transports themselves, over httpx and httpx2, sync and async, against a loopback server."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import httpx2
import pytest
from helpers import call_ends, cassette_lines, recording
from real_wire import vendor_of, with_real_headers
from upstream import Received, Reply, Upstream

import vcr_transport
from vcr_transport._core.engine._faults import corrupt_chunk
from vcr_transport._core.engine._modes import Decision


@dataclass(frozen=True)
class Side:
    library: ModuleType
    is_async: bool

    def recording(self, path: Path) -> Any:
        return recording(self.library, self.is_async, path)

    def fetch(self, transport: Any, url: str, *, stop_after: int | None = None, on_first: Any = None) -> list[bytes]:
        """Stream one GET through a client on ``transport``; the client is closed afterwards."""
        if self.is_async:
            return asyncio.run(self._fetch_async(transport, url, stop_after, on_first))
        chunks: list[bytes] = []
        with self.library.Client(transport=transport) as client, client.stream("GET", url) as response:
            for chunk in response.iter_raw():
                chunks.append(chunk)
                if on_first and len(chunks) == 1:
                    on_first()
                if stop_after is not None and len(chunks) >= stop_after:
                    break
        return chunks

    async def _fetch_async(self, transport: Any, url: str, stop_after: int | None, on_first: Any) -> list[bytes]:
        chunks: list[bytes] = []
        async with self.library.AsyncClient(transport=transport) as client, client.stream("GET", url) as response:
            async for chunk in response.aiter_raw():
                chunks.append(chunk)
                if on_first and len(chunks) == 1:
                    on_first()
                if stop_after is not None and len(chunks) >= stop_after:
                    break
        return chunks

    def iterate_twice(self, transport: Any, url: str, first_pass: int) -> tuple[list[bytes], list[bytes]]:
        """Read ``first_pass`` chunks of the transport's stream, stop, then iterate it again to the end."""
        request = self.library.Request("GET", url)
        if self.is_async:

            async def run() -> tuple[list[bytes], list[bytes]]:
                response = await transport.handle_async_request(request)
                first: list[bytes] = []
                async for chunk in response.stream:
                    first.append(chunk)
                    if len(first) == first_pass:
                        break
                second = [chunk async for chunk in response.stream]
                await response.stream.aclose()
                await transport.aclose()
                return first, second

            return asyncio.run(run())
        response = transport.handle_request(request)
        first = []
        for chunk in response.stream:
            first.append(chunk)
            if len(first) == first_pass:
                break
        second = list(response.stream)
        response.stream.close()
        transport.close()
        return first, second


SIDES = [Side(library, is_async) for library in (httpx, httpx2) for is_async in (False, True)]


@pytest.fixture(params=SIDES, ids=lambda s: f"{s.library.__name__}-{'async' if s.is_async else 'sync'}")
def side(request: pytest.FixtureRequest) -> Side:
    return request.param  # type: ignore[no-any-return]


CHUNKS = [b"data: one\n\n", b"data: tw", "o é\n\n".encode()[:3], "o é\n\n".encode()[3:], b"data: three\n\n"]


def test_first_chunk_reaches_the_caller_before_the_stream_ends(side: Side, upstream: Upstream, cassette: Path) -> None:
    gate = threading.Event()
    released_by_caller: list[bool] = []

    def gated(received: Received) -> Reply:
        return Reply(200, [("content-type", "text/event-stream")], CHUNKS)

    upstream.routes["/gated"] = gated
    original = upstream.server.RequestHandlerClass

    # The server sends the first chunk, then waits for the caller to say it got it.
    class GatedHandler(original):  # type: ignore[misc, valid-type]
        def _send(self, reply: Reply, path: str, key: bytes) -> None:
            first, rest = reply.chunks[:1], reply.chunks[1:]
            self.send_response_only(200)
            for name, value in with_real_headers(reply.headers, vendor_of(path), key, self.date_time_string()):
                self.send_header(name, value)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(first[0]), first[0]))
            self.wfile.flush()
            released_by_caller.append(gate.wait(timeout=5))
            for chunk in rest:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    upstream.server.RequestHandlerClass = GatedHandler
    chunks = side.fetch(side.recording(cassette), upstream.url + "/gated", on_first=gate.set)
    assert released_by_caller == [True], "the first chunk was held back until the stream ended"
    assert b"".join(chunks) == b"".join(CHUNKS)


def test_replay_gives_every_chunk_byte_exact(side: Side, upstream: Upstream, cassette: Path) -> None:
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS, pause=0.01)
    live = side.fetch(side.recording(cassette), upstream.url + "/sse")
    upstream.stop()
    replayed = side.fetch(vcr_transport.ReplayTransport(cassette), upstream.url + "/sse")
    assert replayed == live
    assert b"".join(replayed) == b"".join(CHUNKS)
    events = [line for line in cassette_lines(cassette) if line["type"] == "event"]
    assert [e["event_index"] for e in events] == list(range(len(live)))
    assert all("base64" in e or "text" in e for e in events)
    assert any("base64" in e for e in events), "a chunk ending mid UTF-8 character is stored as base64"


def test_an_iteration_dropped_before_the_end_closes_the_stream_as_the_live_transport_does(
    side: Side, upstream: Upstream, cassette: Path
) -> None:
    """Breaking out of a stream's iteration closes it: iterating again fails with the library's ReadError,
    through the recording transport as through the library's own."""
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS, pause=0.01)
    transport = side.library.AsyncHTTPTransport() if side.is_async else side.library.HTTPTransport()
    with pytest.raises(side.library.ReadError):
        side.iterate_twice(transport, upstream.url + "/sse", first_pass=2)
    recording = side.recording(cassette)
    with pytest.raises(side.library.ReadError):
        side.iterate_twice(recording, upstream.url + "/sse", first_pass=2)
    asyncio.run(recording.aclose()) if side.is_async else recording.close()
    (end,) = call_ends(cassette)
    assert (end["outcome"], end["event_count"]) == ("closed_early", 2)


def test_a_second_replayed_iteration_continues_where_the_first_stopped(
    side: Side, upstream: Upstream, cassette: Path
) -> None:
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS, pause=0.01)
    side.iterate_twice(side.recording(cassette), upstream.url + "/sse", first_pass=len(CHUNKS) + 1)
    assert call_ends(cassette)[0]["outcome"] == "complete"
    upstream.stop()
    replay_first, replay_second = side.iterate_twice(vcr_transport.ReplayTransport(cassette), upstream.url + "/sse", 2)
    assert (replay_first, replay_second) == (CHUNKS[:2], CHUNKS[2:])


@pytest.mark.parametrize("faults", [["corrupt:chunk=1"], ["stall:after=2,seconds=0.01", "corrupt:chunk=4"]])
def test_a_second_iteration_continues_where_the_first_stopped_around_faults(
    side: Side, upstream: Upstream, cassette: Path, faults: list[str]
) -> None:
    """A fault splits the stream into runs of chunks; an iteration that stops inside one leaves the rest of it
    to the next."""
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS)
    side.iterate_twice(side.recording(cassette), upstream.url + "/sse", first_pass=len(CHUNKS) + 1)
    upstream.stop()
    replay = vcr_transport.ReplayTransport(cassette, faults=faults)
    slept: list[float] = []
    replay.sleep = slept.append

    async def waiting(seconds: float) -> None:
        slept.append(seconds)

    replay.async_sleep = waiting
    expected = list(CHUNKS)
    for fault in faults:
        if fault.startswith("corrupt"):
            position = int(fault.rpartition("=")[2])
            expected[position] = corrupt_chunk(CHUNKS[position]) or b"!" + CHUNKS[position][1:]
    first, second = side.iterate_twice(replay, upstream.url + "/sse", 3)
    assert (first, second) == (expected[:3], expected[3:])
    assert slept == ([0.01] if len(faults) > 1 else [])


@pytest.mark.parametrize("entry", ["ReplayTransport", "transport", "use_cassette", "record-on-miss"])
def test_each_request_is_decided_once(upstream: Upstream, cassette: Path, entry: str, monkeypatch: Any) -> None:
    """The session's decision is the only one a request meets, whichever transport carries it."""
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS)
    with httpx2.Client(transport=recording(httpx2, False, cassette)) as client:
        for _ in range(2):
            client.get(upstream.url + "/sse")
    decided: list[str] = []
    step_for = Decision.step_for

    def counting(self: Any, url: str) -> Any:
        decided.append(url)
        return step_for(self, url)

    monkeypatch.setattr(Decision, "step_for", counting)
    if entry == "use_cassette":
        with vcr_transport.use_cassette(cassette, mode="replay"), httpx2.Client() as client:
            replies = [client.get(upstream.url + "/sse") for _ in range(2)]
    else:
        mode = "replay" if entry != "record-on-miss" else "record-on-miss"
        transport: Any = (
            vcr_transport.ReplayTransport(cassette)
            if entry == "ReplayTransport"
            else vcr_transport.transport(cassette, mode=mode)
        )
        with httpx2.Client(transport=transport) as client:
            replies = [client.get(upstream.url + "/sse") for _ in range(2)]
    assert [reply.content for reply in replies] == [b"".join(CHUNKS)] * 2
    assert decided == [upstream.url + "/sse"] * 2


def test_caller_closing_early_is_recorded_and_replayed_as_closed_early(
    side: Side, upstream: Upstream, cassette: Path
) -> None:
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS, pause=0.01)
    live = side.fetch(side.recording(cassette), upstream.url + "/sse", stop_after=2)
    (end,) = call_ends(cassette)
    assert (end["outcome"], end["event_count"]) == ("closed_early", 2)
    upstream.stop()
    replayed = side.fetch(vcr_transport.ReplayTransport(cassette), upstream.url + "/sse")
    assert replayed == live, "an incomplete call replays only what was recorded"


def test_a_stream_never_closed_is_finalised_when_the_cassette_closes(
    side: Side, upstream: Upstream, cassette: Path
) -> None:
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS, pause=0.01)
    transport = side.recording(cassette)
    request = side.library.Request("GET", upstream.url + "/sse")
    if side.is_async:

        async def run() -> Any:
            response = await transport.handle_async_request(request)
            await response.stream.__aiter__().__anext__()
            await transport.aclose()
            await transport.aclose()
            return response

        kept = asyncio.run(run())
    else:
        kept = transport.handle_request(request)
        next(iter(kept.stream))
        transport.close()
        transport.close()
    (end,) = call_ends(cassette)
    assert (end["outcome"], end["event_count"]) == ("closed_early", 1)
    del kept


@pytest.mark.slow
def test_concurrent_calls_keep_their_own_lines(side: Side, upstream: Upstream, cassette: Path) -> None:
    def numbered(received: Received) -> Reply:
        n = received.path.rsplit("/", 1)[1]
        return Reply(200, [("content-type", "text/plain")], [f"{n}-{i};".encode() for i in range(5)], pause=0.002)

    upstream.routes["/n/"] = numbered
    transport = side.recording(cassette)
    urls = [f"{upstream.url}/n/{i}" for i in range(8)]
    if side.is_async:

        async def run() -> list[bytes]:
            async with side.library.AsyncClient(transport=transport) as client:
                responses = await asyncio.gather(*(client.get(url) for url in urls))
                return [r.content for r in responses]

        bodies = asyncio.run(run())
    else:
        results: dict[str, bytes] = {}
        with side.library.Client(transport=transport) as client:
            threads = [
                threading.Thread(target=lambda u=url: results.__setitem__(u, client.get(u).content)) for url in urls
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        bodies = [results[url] for url in urls]
    assert bodies == ["".join(f"{i}-{j};" for j in range(5)).encode() for i in range(8)]
    cassette_obj = vcr_transport._storage.read_cassette(cassette)
    for call in cassette_obj.calls:
        n = call.url.rsplit("/", 1)[1]
        assert b"".join(call.chunks) == "".join(f"{n}-{j};" for j in range(5)).encode()
        assert call.outcome == "complete"


def test_one_replay_transport_serves_both_libraries_and_both_sides(upstream: Upstream, cassette: Path) -> None:
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS)
    steps = [Side(httpx2, False), Side(httpx, True), Side(httpx, False), Side(httpx2, True)]
    transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)
    with httpx2.Client(transport=transport) as client:
        for _ in steps:
            client.get(upstream.url + "/sse")
    upstream.stop()
    replay = vcr_transport.ReplayTransport(cassette)
    for step in steps:
        assert b"".join(step.fetch(replay, upstream.url + "/sse")) == b"".join(CHUNKS)
    assert replay.unplayed_calls() == []


def test_recording_wraps_a_transport_of_the_other_library(upstream: Upstream, cassette: Path) -> None:
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS)
    transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)
    with httpx.Client(transport=transport) as client:
        response = client.get(upstream.url + "/sse")
    assert isinstance(response, httpx.Response) and response.content == b"".join(CHUNKS)
    refused = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette, keep_failures=True)
    with httpx.Client(transport=refused) as client:
        with pytest.raises(httpx.ConnectError):
            client.get("http://127.0.0.1:1/refused")


def test_pace_reproduces_recorded_gaps(
    side: Side, upstream: Upstream, cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS, pause=0.02)
    side.fetch(side.recording(cassette), upstream.url + "/sse")
    offsets = vcr_transport._storage.read_cassette(cassette).calls[0].offsets
    assert offsets == sorted(offsets) and offsets[-1] > offsets[0], "the recorded offsets keep the gaps' order"
    upstream.stop()
    slept: list[float] = []

    async def fake_async_sleep(seconds: float) -> None:
        slept.append(seconds)

    replay = vcr_transport.ReplayTransport(cassette, pace=0.5)
    monkeypatch.setattr(replay, "sleep", slept.append)
    monkeypatch.setattr(replay, "async_sleep", fake_async_sleep)
    replayed = side.fetch(replay, upstream.url + "/sse")
    assert b"".join(replayed) == b"".join(CHUNKS)
    assert slept == pytest.approx([(b - a) * 0.5 for a, b in zip([0.0, *offsets[:-1]], offsets, strict=True)])


def test_respx_mocked_upstream_needs_no_socket(cassette: Path) -> None:
    import respx

    with respx.mock(assert_all_called=True) as mock:
        mock.post("https://api.example.test/v1/echo").respond(200, json={"echo": "hi"})
        with httpx.Client(transport=vcr_transport.RecordingTransport(httpx.HTTPTransport(), cassette)) as client:
            live = client.post("https://api.example.test/v1/echo", json={"say": "hi"}).json()
    with httpx.Client(transport=vcr_transport.ReplayTransport(cassette)) as client:
        replayed = client.post("https://api.example.test/v1/echo", json={"say": "hi"}).json()
    assert live == replayed == {"echo": "hi"}


def test_one_recording_serves_sync_and_async_and_commits_when_both_are_closed(
    upstream: Upstream, cassette: Path
) -> None:
    upstream.routes["/sse"] = lambda r: Reply(200, [("content-type", "text/event-stream")], CHUNKS)
    transport = vcr_transport.RecordingTransport(
        httpx2.HTTPTransport(), cassette, async_inner=httpx2.AsyncHTTPTransport()
    )
    sync_client = httpx2.Client(transport=transport)
    sync_client.get(upstream.url + "/sse")

    async def async_calls() -> None:
        async with httpx2.AsyncClient(transport=transport) as client:
            await client.get(upstream.url + "/sse")
            sync_client.close()  # the sync side closes first: the async side is still recording
            assert not cassette.exists()
            await client.get(upstream.url + "/sse")

    asyncio.run(async_calls())
    assert [end["call_index"] for end in call_ends(cassette)] == [0, 1, 2]
    with pytest.raises(vcr_transport.VcrTransportError, match="already closed"):
        httpx2.Client(transport=transport).get(upstream.url + "/sse")


def _chat_stream_cassette(times: list[float]) -> bytes:
    """An openai chat stream as a pull request could bring it: one event per time in ``times`` (its ``t``)."""
    chunks = [
        "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                               "choices": [{"index": 0, "delta": {"content": f"{n} "}, "finish_reason": None}]})
        + "\n\n"
        for n in range(len(times) - 1)
    ] + ["data: [DONE]\n\n"]  # fmt: skip
    lines: list[dict[str, Any]] = [
        {"type": "header", "format_version": 1},
        {"type": "request", "call_index": 0, "method": "POST", "url": "https://api.openai.com/v1/chat/completions",
         "headers": [["content-type", "application/json"]],
         "body": {"json": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}}},
        {"type": "response", "call_index": 0, "status": 200, "headers": [["content-type", "text/event-stream"]],
         "http_version": "HTTP/1.1"},
        *({"type": "event", "call_index": 0, "event_index": n, "t": t, "text": chunk}
          for n, (t, chunk) in enumerate(zip(times, chunks, strict=True))),
        {"type": "call_end", "call_index": 0, "event_count": len(times), "outcome": "complete"},
    ]  # fmt: skip
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _paced_openai_stream(cassette: Path, slept: list[float]) -> str:
    import openai

    replay = vcr_transport.ReplayTransport(cassette, pace=1.0, match_on=("method", "uri", "body"))
    replay.sleep = slept.append  # the seam pace waits with: nothing here waits for real
    client = openai.OpenAI(api_key="sk-test", http_client=httpx.Client(transport=replay), max_retries=0)
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream)


def test_a_recorded_time_beyond_the_bound_is_refused_before_pace_waits(tmp_path: Path) -> None:
    """An event at t = 1e9 s (31 years) is out of the format's range (MAX_SECONDS, an hour): verify reports the
    file, line and field, and a paced replay through the openai SDK refuses the cassette without a wait (before:
    it slept 31 years)."""
    from vcr_transport._core.format._format import MAX_SECONDS
    from vcr_transport._tools._cli import main as cli_main

    cassette = tmp_path / "late.jsonl"
    cassette.write_bytes(_chat_stream_cassette([0.0, 1e9]))
    slept: list[float] = []
    with pytest.raises(vcr_transport.CassetteError) as refused:
        _paced_openai_stream(cassette, slept)
    assert f"{cassette}:5" in str(refused.value) and "field 't'" in str(refused.value)
    assert str(MAX_SECONDS) in str(refused.value) and slept == []
    assert cli_main(["verify", str(cassette)]) == 1


def test_pace_waits_for_the_latest_recorded_time_so_times_that_go_up_and_down_wait_no_longer(tmp_path: Path) -> None:
    """Times going 0, an hour, 0, an hour... wait an hour in all (before: an hour for every rise)."""
    from vcr_transport._core.format._format import MAX_SECONDS

    cassette = tmp_path / "sawtooth.jsonl"
    cassette.write_bytes(_chat_stream_cassette([0.0, MAX_SECONDS] * 20))
    slept: list[float] = []
    assert _paced_openai_stream(cassette, slept) == "".join(f"{n} " for n in range(39))
    assert sum(slept) == MAX_SECONDS
