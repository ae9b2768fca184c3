"""A recording never damages, truncates or fakes a cassette: signals, exceptions, failed calls, concurrent
streams, a full disk and symlinks, with real child processes and a real loopback upstream."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from helpers import call_ends, cassette_lines
from upstream import Reply, Upstream, free_port
from vendors import OPENAI_KEY, SDKS, VENDOR_ROUTES

import vcr_transport
from vcr_transport._core.format._sse import ProtocolEnd
from vcr_transport._storage import read_cassette

CHILD = Path(__file__).resolve().parents[1] / "recording_child.py"
LONG = [f"data: chunk {n:03d} {'x' * 40}\n\n".encode() for n in range(60)]
KILLS_PER_SIGNAL = 10


def long_stream(received: Any) -> Reply:
    return Reply(200, [("content-type", "text/event-stream")], LONG, pause=0.005)


def old_cassette(path: Path, upstream: Upstream) -> bytes:
    """A good cassette at ``path``, recorded from a short stream; its bytes."""
    upstream.routes["/short"] = lambda r: Reply(200, [("content-type", "text/event-stream")], LONG[:3])
    with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), path)) as client:
        client.get(upstream.url + "/short")
    return path.read_bytes()


def spawn(way: str, cassette: Path, url: str, ready_after: int, *limit: int) -> subprocess.Popen[str]:
    environment = {**os.environ, "PYTHONPATH": str(Path(vcr_transport.__file__).parent.parent)}
    return subprocess.Popen(
        [sys.executable, str(CHILD), way, str(cassette), url, str(ready_after), *map(str, limit)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )


def strays(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
@pytest.mark.slow
def test_a_signal_at_a_random_point_keeps_the_old_cassette(
    signal_number: signal.Signals, upstream: Upstream, tmp_path: Path
) -> None:
    upstream.routes["/long"] = long_stream
    chooser = random.Random(f"kills-{signal_number.name}")
    plans = []
    for n in range(KILLS_PER_SIGNAL):
        folder = tmp_path / f"run{n}"
        folder.mkdir()
        cassette = folder / "chat.jsonl"
        before = old_cassette(cassette, upstream)
        way = chooser.choice(["use_cassette", "client_with", "bare"])
        plans.append((cassette, before, way, chooser.randint(1, len(LONG) - 20)))

    def signal_when_ready(child: subprocess.Popen[str]) -> None:
        assert child.stdout is not None
        if child.stdout.readline() == "ready\n":
            child.send_signal(signal_number)
        child.communicate(timeout=30)

    runs, waiters = [], []
    for cassette, before, way, ready_after in plans:  # every child has its waiter from the start
        child = spawn(way, cassette, upstream.url + "/long", ready_after)
        runs.append((cassette, before, way, child))
        waiters.append(threading.Thread(target=signal_when_ready, args=(child,)))
        waiters[-1].start()
    for waiter in waiters:
        waiter.join()
    held = 0
    for cassette, before, way, child in runs:
        assert child.returncode == -signal_number, f"{way}: the child ended with {child.returncode}, not the signal"
        after = cassette.read_bytes()
        assert after == before, f"{way}: {signal_number.name} changed the old cassette: {before!r} -> {after!r}"
        assert read_cassette(cassette).calls[0].chunks == LONG[:3]
        held += 1
    # The next recording of each cassette removes what the dead writers left behind.
    left_by_dead = sum(len(strays(cassette.parent)) for cassette, _, _, _ in runs)
    left_after_next = 0
    for cassette, _, _, _ in runs:
        old_cassette(cassette, upstream)
        left_after_next += len(strays(cassette.parent))
    print(
        f"\n{signal_number.name}: {len(runs)} tried, {held} held; {left_by_dead} stray file(s) after the kills, "
        f"{left_after_next} after the next run"
    )
    assert held == len(runs) and left_after_next == 0


def test_a_full_disk_keeps_the_live_call_and_the_old_cassette(upstream: Upstream, tmp_path: Path) -> None:
    upstream.routes["/long"] = long_stream
    cassette = tmp_path / "chat.jsonl"
    before = old_cassette(cassette, upstream)
    child = spawn("client_with", cassette, upstream.url + "/long", 10**6, 4096)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    live, error, fix = out.splitlines()
    assert live.endswith(f" {sum(map(len, LONG))}"), "the caller read the whole stream"
    assert error.startswith(f"error cassette {cassette}: was not saved: writing the recording failed (File too large)")
    assert fix == "  fix: free disk space or fix the folder's permissions, then record again"
    assert cassette.read_bytes() == before and strays(tmp_path) == []


def test_an_exception_leaving_use_cassette_keeps_the_old_cassette(upstream: Upstream, cassette: Path) -> None:
    before = old_cassette(cassette, upstream)
    upstream.routes["/long"] = long_stream
    with pytest.raises(RuntimeError) as raised:
        with vcr_transport.use_cassette(cassette, mode="record"), httpx2.Client() as client:
            with client.stream("GET", upstream.url + "/long") as response:
                for _ in response.iter_raw():
                    raise RuntimeError("the test failed half-way")
    assert cassette.read_bytes() == before
    assert any(f"cassette {cassette} was not saved" in note for note in raised.value.__notes__)
    assert strays(cassette.parent) == []


def test_an_exception_leaving_a_decorated_function_keeps_the_old_cassette(upstream: Upstream, cassette: Path) -> None:
    before = old_cassette(cassette, upstream)

    @vcr_transport.use_cassette(cassette, mode="record")
    async def run() -> None:
        async with httpx2.AsyncClient() as client:
            await client.get(upstream.url + "/short")
            raise ValueError("assertion in the test")

    with pytest.raises(ValueError):
        asyncio.run(run())
    assert cassette.read_bytes() == before


def test_an_exception_leaving_a_clients_with_block_keeps_the_old_cassette(upstream: Upstream, cassette: Path) -> None:
    before = old_cassette(cassette, upstream)
    transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)
    with pytest.raises(KeyError):
        with httpx2.Client(transport=transport) as client:
            client.get(upstream.url + "/short")
            raise KeyError("boom")
    assert cassette.read_bytes() == before


def test_a_deliberate_break_in_a_block_that_ends_normally_is_recorded_closed_early(
    upstream: Upstream, cassette: Path
) -> None:
    upstream.routes["/long"] = long_stream
    with vcr_transport.use_cassette(cassette, mode="record"), httpx2.Client() as client:
        with client.stream("GET", upstream.url + "/long") as response:
            for n, _ in enumerate(response.iter_raw(), start=1):
                if n == 4:
                    break
    (end,) = call_ends(cassette)
    assert (end["outcome"], end["event_count"]) == ("closed_early", 4)


def test_a_transport_that_sent_nothing_overwrites_nothing(upstream: Upstream, cassette: Path) -> None:
    before = old_cassette(cassette, upstream)
    with pytest.warns(vcr_transport.RecordingNotSavedWarning, match="no call went through"):
        vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette).close()
    assert cassette.read_bytes() == before
    fresh = cassette.with_name("fresh.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), fresh)):
            pass
    assert not fresh.exists() and strays(cassette.parent) == []


def _openai(transport: Any, base_url: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(api_key=OPENAI_KEY, base_url=base_url + "/v1", http_client=httpx2.Client(transport=transport))


@pytest.mark.slow
def test_the_vendor_down_is_not_recorded_unless_asked(cassette: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    messages = [{"role": "user", "content": "hi"}]
    client = _openai(vcr_transport.transport(cassette, mode="record"), url)
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=messages)
    with pytest.warns(vcr_transport.RecordingNotSavedWarning, match=r"call 0 got no response \(httpx2.ConnectError"):
        client.close()
    assert not cassette.exists(), "three refused attempts are not a cassette"
    kept = _openai(vcr_transport.transport(cassette, mode="record", keep_failures=True), url, max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        kept.chat.completions.create(model="m", messages=messages)
    kept.close()
    assert [end["outcome"] for end in call_ends(cassette)] == ["error"] * 3


def test_a_refused_key_is_not_recorded(upstream: Upstream, cassette: Path) -> None:
    before = old_cassette(cassette, upstream)
    upstream.routes["/v1/chat/completions"] = lambda r: Reply.json({"error": {"message": "bad key"}}, status=401)
    client = _openai(vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette), upstream.url)
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    with pytest.warns(vcr_transport.RecordingNotSavedWarning, match="refused for its credentials"):
        client.close()
    assert cassette.read_bytes() == before


@pytest.mark.parametrize("sdk", [s for s in SDKS if s.library is httpx2 and s.side == "sync"], ids=lambda s: s.name)
def test_a_stream_read_to_its_protocol_end_ends_complete(sdk: Any, upstream: Upstream, cassette: Path) -> None:
    prefix, reply = VENDOR_ROUTES[sdk.name]
    upstream.routes[prefix] = lambda received: reply(received, pause=0.002)
    transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)
    sdk.run(transport, upstream.url, [("stream", ["hi"]), ("first", ["stop early"])])
    assert [end["outcome"] for end in call_ends(cassette)] == ["complete", "closed_early"]


def test_protocol_ends_are_found_across_chunk_boundaries() -> None:
    cases = {
        b"data: {}\r\n\r\ndata: [DONE]\r\n\r\n": True,
        b'event: message_stop\ndata: {"type": "message_stop"}\n\n': True,
        b'event: response.completed\ndata: {"type": "response.completed", "response": {}}\n\n': True,
        b'data: {"candidates": [{"finishReason": "STOP"}]}\r\n\r\n': True,
        b'data: {"candidates": [{"content": {}}]}\n\n': False,
        b"data: [DONE]\n": False,  # no blank line yet
        b'data: {"text": "the word message_stop in a delta"}\n\n': False,
    }
    for stream, ends in cases.items():
        for size in (1, 3, len(stream)):
            watcher = ProtocolEnd()
            for start in range(0, len(stream), size):
                watcher.feed(stream[start : start + size])
            assert watcher.ended is ends, (stream, size)


def _overlapping(library_backend: str, url: str, cassette: Path) -> list[bytes]:
    """Two tasks stream at once, interleaving their reads; each returns what it read."""

    async def one(client: httpx2.AsyncClient, path: str, results: dict[str, bytes]) -> None:
        async with client.stream("GET", url + path) as response:
            results[path] = b"".join([chunk async for chunk in response.aiter_raw()])

    async def both() -> list[bytes]:
        results: dict[str, bytes] = {}
        transport = vcr_transport.AsyncRecordingTransport(httpx2.AsyncHTTPTransport(), cassette)
        async with httpx2.AsyncClient(transport=transport) as client:
            if library_backend == "trio":
                import trio

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(one, client, "/a", results)
                    nursery.start_soon(one, client, "/b", results)
            else:
                await asyncio.gather(one(client, "/a", results), one(client, "/b", results))
        return [results["/a"], results["/b"]]

    if library_backend == "trio":
        import trio

        return trio.run(both)
    return asyncio.run(both())


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_overlapping_async_streams_are_recorded_whole(backend: str, upstream: Upstream, cassette: Path) -> None:
    pytest.importorskip(backend)
    for path in ("/a", "/b"):
        upstream.routes[path] = lambda r, p=path: Reply(
            200, [("content-type", "text/plain")], [f"{p}-{n};".encode() for n in range(8)], pause=0.003
        )
    live = _overlapping(backend, upstream.url, cassette)
    assert live == [b"".join(f"{p}-{n};".encode() for n in range(8)) for p in ("/a", "/b")]
    recorded = read_cassette(cassette)
    assert [call.outcome for call in recorded.calls] == ["complete", "complete"]
    assert sorted(b"".join(call.chunks) for call in recorded.calls) == sorted(live)


def test_one_thread_with_two_open_streams_records_both_whole(upstream: Upstream, cassette: Path) -> None:
    upstream.routes["/long"] = long_stream
    transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)
    with httpx2.Client(transport=transport) as client:
        with client.stream("GET", upstream.url + "/long") as first:
            chunks = first.iter_raw()
            a = [next(chunks)]
            b = client.get(upstream.url + "/long").content  # a second call while the first is open
            a += list(chunks)
    assert b"".join(a) == b == b"".join(LONG)
    ends = call_ends(cassette)
    assert [(e["outcome"], e["event_count"]) for e in ends] == [("complete", len(a)), ("complete", len(LONG))]
    replay = vcr_transport.ReplayTransport(cassette)
    with httpx2.Client(transport=replay) as client:
        with client.stream("GET", upstream.url + "/long") as first:
            replayed = list(first.iter_raw())
        assert client.get(upstream.url + "/long").content == b
    assert replayed == a


def test_a_call_racing_to_end_writes_one_call_end(upstream: Upstream, cassette: Path) -> None:
    upstream.routes["/long"] = long_stream
    transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)
    response = transport.handle_request(httpx2.Request("GET", upstream.url + "/long"))
    next(iter(response.stream))
    barrier = threading.Barrier(8)

    def close() -> None:
        barrier.wait()
        response.stream.close()

    threads = [threading.Thread(target=close) for _ in range(7)]
    for thread in threads:
        thread.start()
    barrier.wait()
    transport.close()
    for thread in threads:
        thread.join()
    assert [line["type"] for line in cassette_lines(cassette)].count("call_end") == 1


def test_a_symlinked_cassette_is_replaced_at_its_target(upstream: Upstream, tmp_path: Path) -> None:
    target = tmp_path / "store" / "real.jsonl"
    target.parent.mkdir()
    before = old_cassette(target, upstream)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    upstream.routes["/long"] = long_stream
    with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), link)) as client:
        client.get(upstream.url + "/long")
    assert link.is_symlink() and link.resolve() == target
    assert target.read_bytes() != before and read_cassette(link).calls[0].chunks == LONG


def test_only_this_cassettes_unheld_temporary_files_are_removed(upstream: Upstream, cassette: Path) -> None:
    # Nobody holds the lock of a planted file: this cassette's goes, another cassette's stays. (Files a live
    # writer holds: tests/transports/test_partial_locks.py.)
    folder = cassette.parent
    left_by_dead = folder / f".{cassette.name}.{os.getpid()}.abc123.partial"
    someone_elses = folder / f".other.jsonl.{os.getpid()}.abc123.partial"
    for path in (left_by_dead, someone_elses):
        path.write_text("{}\n")
    old_cassette(cassette, upstream)
    assert strays(folder) == [someone_elses.name]


@pytest.mark.slow
def test_a_failing_marked_test_keeps_the_old_cassette(
    pytester: pytest.Pytester, upstream: Upstream, tmp_path: Path
) -> None:
    cassette = tmp_path / "marked.jsonl"
    before = old_cassette(cassette, upstream)
    pytester.makepyfile(
        f"""
        import httpx2, pytest

        @pytest.mark.vcr_transport(path={str(cassette)!r}, mode="record")
        def test_fails_half_way():
            httpx2.get({upstream.url + "/short"!r})
            assert False, "the code under test broke"
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    assert cassette.read_bytes() == before
