"""A recording never damages, truncates or fakes a cassette: signals, exceptions, failed calls, concurrent
streams, a full disk and symlinks, with real child processes and a real loopback upstream."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from helpers import call_ends, cassette_lines
from upstream import Reply, Upstream, free_port, split_bytes
from vendors import MODEL, OPENAI_KEY, SDKS, VENDOR_ROUTES, sse

import vcr_transport
from vcr_transport._core.format._sse import ProtocolEnd
from vcr_transport._core.rules._redaction import PLACEHOLDER
from vcr_transport._core.rules._stream import StreamRedactor
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


# --- attacks on chunk batches: at exit, under a signal, at garbage collection, cut at a key ---------------


SECRET = "sk-proj-EXITBATCHabcdefghijklmnopqrstuvwxyz0123"


PIECES = (" " + SECRET[:10], SECRET[10:25], SECRET[25:])


def _openai_events(texts: list[str], *, done: bool = True) -> bytes:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": MODEL}
    events: list[tuple[str | None, Any]] = [
        (None, {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}) for text in texts
    ]
    if done:
        events += [(None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), (None, "[DONE]")]
    return sse(events)


def _child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(Path(vcr_transport.__file__).parent.parent)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )


# A child that records a stream through a client it never closes, reads CHUNKS chunks, and exits normally:
# the exit hook finishes the recording, whose last batch is far from full.
_EXITS_MID_STREAM = """
    import json, sys
    import httpx2
    import vcr_transport

    cassette, url, wanted = sys.argv[1], sys.argv[2], int(sys.argv[3])
    client = httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette))
    response = client.send(client.build_request("GET", url), stream=True)
    received = []
    for chunk in response.iter_raw():
        received.append(chunk.decode("latin-1"))
        if len(received) == wanted:
            break
    print(json.dumps(received), flush=True)
    # no close: the interpreter exits with the stream and the client open
"""


def test_a_process_exiting_mid_batch_saves_what_the_caller_got_with_split_secrets_removed(
    upstream: Upstream, tmp_path: Path
) -> None:
    texts = [f" word{n}" for n in range(40)]
    texts[20:20] = list(PIECES)  # the secret spread over three deltas
    body = _openai_events(texts)
    chunks = split_bytes(body, 97)  # events cut mid-line, the secret's pieces across chunk boundaries
    secret_end = body.index(PIECES[2].encode()) + len(PIECES[2])
    wanted = secret_end // 97 + 3  # past the secret, well before the protocol's end, far under one batch
    assert sum(map(len, chunks[:wanted])) < 32 * 1024 and wanted < len(chunks) - 5
    upstream.routes["/slow"] = lambda r: Reply(200, [("content-type", "text/event-stream")], chunks, pause=0.002)
    cassette = tmp_path / "exit.jsonl"
    done = _child(_EXITS_MID_STREAM, str(cassette), upstream.url + "/slow", str(wanted))
    assert done.returncode == 0, done.stderr
    received = [chunk.encode("latin-1") for chunk in json.loads(done.stdout)]
    assert len(received) == wanted and all(piece.encode() in b"".join(received) for piece in PIECES)
    [call] = read_cassette(cassette).calls
    assert call.outcome == "closed_early"
    assert len(call.chunks) == len(received), "every chunk the caller got is in the cassette, boundaries kept"
    recorded = b"".join(call.chunks).decode()
    for piece in PIECES:
        assert piece.strip() not in recorded
    assert PLACEHOLDER in recorded
    for stored, got in zip(call.chunks, received, strict=True):  # only the chunks holding the secret differ
        assert stored == got or any(p.encode()[:4] in got or p.encode()[-4:] in got for p in PIECES), (stored, got)


# A child whose recorder is hit by a real SIGINT while it records a batch (sent from inside the batch's
# redaction, so that it lands there). The program catches Ctrl-C, as an interactive tool does to stop a
# stream, and closes its client normally.
_SIGINT_IN_A_BATCH = """
    import os, signal, sys, warnings
    import httpx2
    import vcr_transport
    from vcr_transport._core.rules._stream import StreamRedactor

    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if the run was started with SIGINT ignored
    cassette, url = sys.argv[1], sys.argv[2]
    feed_many = StreamRedactor.feed_many
    def interrupted_once(self, chunks):
        if not getattr(StreamRedactor, "signalled", False):
            StreamRedactor.signalled = True
            os.kill(os.getpid(), signal.SIGINT)
        return feed_many(self, chunks)
    StreamRedactor.feed_many = interrupted_once
    received = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)) as client:
            with client.stream("GET", url) as response:
                try:
                    for chunk in response.iter_raw():
                        received += 1
                except KeyboardInterrupt:
                    print("ctrl-c after", received, flush=True)
    print("warnings", [str(w.message) for w in caught], flush=True)
"""


def test_ctrl_c_inside_the_recorders_batch_work_never_saves_a_cassette_missing_chunks(
    upstream: Upstream, tmp_path: Path
) -> None:
    body = _openai_events([f" word{n} {'x' * 200}" for n in range(400)])
    chunks = split_bytes(body, 1000)
    upstream.routes["/long"] = lambda r: Reply(200, [("content-type", "text/event-stream")], chunks)
    upstream.routes["/short"] = lambda r: Reply(200, [("content-type", "text/event-stream")], chunks[:2])
    cassette = tmp_path / "interrupted.jsonl"
    with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)) as client:
        client.get(upstream.url + "/short")
    before = cassette.read_bytes()
    done = _child(_SIGINT_IN_A_BATCH, str(cassette), upstream.url + "/long")
    assert done.returncode == 0, done.stderr
    assert "ctrl-c after" in done.stdout, done.stdout
    got = int(done.stdout.split("ctrl-c after ")[1].split()[0])
    assert got > 0, "the signal came in mid-stream"
    after = cassette.read_bytes()
    if after != before:  # what was saved lost the batch the signal cut
        [call] = read_cassette(cassette).calls
        raise AssertionError(f"Ctrl-C replaced the cassette: the caller got {got} chunks, it holds {len(call.chunks)}")
    assert "was not saved" in done.stdout and "KeyboardInterrupt" in done.stdout, done.stdout


@pytest.mark.slow
def test_a_stream_dropped_unclosed_records_its_last_batch_when_collected(upstream: Upstream, cassette: Path) -> None:
    texts = [f" w{n}" for n in range(60)]
    texts[30:30] = list(PIECES)
    body = _openai_events(texts)
    upstream.routes["/v1/chat/completions"] = lambda r: Reply(
        200, [("content-type", "text/event-stream")], split_bytes(body, 61)
    )
    transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)
    client = openai.OpenAI(
        api_key=OPENAI_KEY, base_url=upstream.url + "/v1", http_client=httpx2.Client(transport=transport)
    )
    stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "go"}], stream=True)
    seen = ""
    for event in stream:
        seen += event.choices[0].delta.content or ""
        if SECRET in seen:
            break
    del stream, event
    gc.collect()
    partial = [p for p in cassette.parent.iterdir() if p.name.endswith(".partial")]
    [written] = partial
    lines = [json.loads(line) for line in written.read_bytes().splitlines()]
    ends = [line for line in lines if line["type"] == "call_end"]
    assert [end["outcome"] for end in ends] == ["closed_early"], "collecting the stream ended its call"
    events = [line for line in lines if line["type"] == "event"]
    assert ends[0]["event_count"] == len(events) > 0
    transport.close()
    [call] = read_cassette(cassette).calls
    recorded = b"".join(call.chunks).decode()
    assert SECRET[10:25] not in recorded and PLACEHOLDER in recorded
    assert body.startswith(b"".join(call.chunks).replace(PLACEHOLDER.encode(), b"")[:100])


def _straddling_body() -> tuple[list[bytes], int]:
    """An openai stream whose chunks reach the recorder's batch size (32 KiB) exactly 12 bytes into a key
    written whole in one delta, then carry a key spread over two deltas; the number of chunks up to the
    second key's end."""
    batch = 32 * 1024

    def body(padding: int) -> bytes:
        filler = [f" filler{n:05d}" for n in range(150)] + [" " + "p" * padding]
        return _openai_events(filler, done=False) + _openai_events([" " + SECRET], done=False) + spread

    spread = _openai_events([" " + SECRET[:20], SECRET[20:]])
    padding = batch - (body(0).index(SECRET.encode()) + 12)
    assert padding > 0
    data = body(padding)
    boundary = data.index(SECRET.encode()) + 12
    assert boundary == batch
    head = data[:boundary]
    first = [head[max(0, end - 1024) : end] for end in range(boundary, 0, -1024)][::-1]  # the last ends there
    rest = split_bytes(data[boundary:], 500)
    second_key_end = data.rindex(SECRET[20:].encode()) + len(SECRET) - 20
    upto = len(first) + 1 + (second_key_end - boundary) // 500
    return first + rest, upto


@pytest.mark.parametrize("ending", ["read_to_the_end", "caller_raises"])
def test_a_key_cut_at_the_batch_boundary_is_removed_whole(
    ending: str, upstream: Upstream, cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunks, upto = _straddling_body()
    batches: list[int] = []
    feed_many = StreamRedactor.feed_many

    def counted(self: StreamRedactor, batch: list[tuple[bytes, Any]]) -> list[tuple[bytes, Any]]:
        batches.append(sum(len(data) for data, _ in batch))
        return feed_many(self, batch)

    monkeypatch.setattr(StreamRedactor, "feed_many", counted)
    upstream.routes["/v1/chat/completions"] = lambda r: Reply(200, [("content-type", "text/event-stream")], chunks)
    transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette, keep_failures=True)
    seen = ""
    try:
        with httpx2.Client(transport=transport) as http:
            client = openai.OpenAI(api_key=OPENAI_KEY, base_url=upstream.url + "/v1", http_client=http)
            stream = client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "go"}], stream=True
            )
            for event in stream:
                seen += event.choices[0].delta.content or "" if event.choices else ""
                if ending == "caller_raises" and seen.count(SECRET) == 2:
                    raise RuntimeError("the caller's own bug")
    except RuntimeError:
        assert ending == "caller_raises"
    assert seen.count(SECRET) == 2
    assert batches[0] == 32 * 1024, "the first batch ends inside the first key"
    [call] = read_cassette(cassette).calls
    recorded = b"".join(call.chunks)
    assert call.outcome == ("complete" if ending == "read_to_the_end" else "closed_early")
    assert len(call.chunks) >= upto, "every chunk up to the second key is in the cassette"
    for piece in (SECRET, SECRET[:12], SECRET[12:], SECRET[:20], SECRET[20:]):
        assert piece.encode() not in recorded, piece
    assert recorded.count(PLACEHOLDER.encode()) >= 2


def test_closing_the_cassette_under_an_open_async_stream_keeps_its_partial_batch(
    upstream: Upstream, cassette: Path
) -> None:
    body = _openai_events([f" w{n}" for n in range(30)])
    chunks = split_bytes(body, 150)
    upstream.routes["/v1/chat/completions"] = lambda r: Reply(200, [("content-type", "text/event-stream")], chunks)
    transport = vcr_transport.AsyncRecordingTransport(httpx2.AsyncHTTPTransport(), cassette)

    async def main() -> tuple[int, bytes]:
        async with httpx2.AsyncClient(transport=transport) as client:
            request = client.build_request("POST", upstream.url + "/v1/chat/completions", json={"stream": True})
            response = await client.send(request, stream=True)
            raw = response.aiter_raw()
            got = [await raw.__anext__() for _ in range(3)]
            transport.recorder.close()  # the cassette closes with the stream open
            got += [chunk async for chunk in raw]  # the caller reads on, unharmed
            await response.aclose()
            return 3, b"".join(got)

    before_close, everything = asyncio.run(main())
    assert everything == body
    [call] = read_cassette(cassette).calls
    assert call.outcome == "closed_early"
    assert b"".join(call.chunks) == body[: len(b"".join(call.chunks))] and len(call.chunks) >= before_close
