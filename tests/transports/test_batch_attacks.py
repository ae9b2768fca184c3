"""Attacks on the first round's fast paths: chunk batches at exit, under a signal and at garbage
collection; the bytes prefilter; msgspec lines against json's; the forwarded request copy; the parse cache
and the replay caches. Real child processes where a signal or an exit is involved, a real loopback upstream."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
from upstream import Reply, Upstream, split_bytes
from vendors import MODEL, OPENAI_KEY, sse

import vcr_transport
from vcr_transport._core.format._format import encode_line
from vcr_transport._core.rules._redaction import PLACEHOLDER, Redactor
from vcr_transport._core.rules._stream import StreamRedactor
from vcr_transport._storage import read_cassette

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


def test_encode_line_writes_what_json_dumps_writes() -> None:
    odd = [0.0, -0.0, 1e16, 1e15 + 0.5, 1e-05, 0.0001, 5e-324, 1.7976931348623157e308, 2**63, 2**64, -(10**30)]
    odd += ["\u2028\u2029", "\x00\x1f\x7f\x85", "\U0001f600", "\ufeff", '"\\/</script>', True, None, {}, []]
    for value in odd:
        line = {"type": "event", "v": value, "l": [value, {"n": value}]}
        expected = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        assert encode_line(line) == expected, value
    for value in (float("nan"), float("inf"), -float("inf")):
        line = {"v": value}
        assert encode_line(line) == (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def test_the_bytes_prefilter_says_yes_to_case_folded_and_escaped_secret_names() -> None:
    redactor = Redactor()
    learned = Redactor()
    learned.redact_headers([("authorization", "Bearer Zq9xLmN0pR7sT2uVwX")])
    texts = [
        '{"api_\u212aey": "hunter2hunter2"}',  # Kelvin sign
        '{"p\u0130n": "x"} "\u0130"',
        '{"\\u0061pi_key": "hunter2hunter2"}',
        '{"api%5Fkey": "hunter2hunter2"}',
        "ba\u017fic dXNlcjpwYXNzd29yZA==",
        "https://user:pa55word@example.com/",
    ]
    for text in texts:
        data = text.encode()
        if Redactor().redact_text(text) != text:
            assert redactor.could_redact(data), text
    for form in ("Zq9xLmN0pR7sT2uVwX", "Zq9xLmN0pR7sT2uVwX".upper(), "%5A%71%39xLmN0pR7sT2uVwX"):
        assert learned.could_redact(f"say {form} now \u00e9".encode()), form


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


_LOADS_ONCE = """
    import sys
    from vcr_transport._storage import read_cassette
    calls = read_cassette(sys.argv[1], cache=True).calls
    print(len(calls), sum(len(b"".join(call.chunks)) for call in calls), flush=True)
"""


@pytest.mark.slow
def test_the_parse_cache_survives_parallel_writers_a_swapped_entry_and_a_folder_that_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_parse_cache import CHUNKS, _entries, _record, _replay

    from vcr_transport import _parse_cache
    from vcr_transport._core.format import _format

    folder = tmp_path / "cache"
    monkeypatch.setenv("VCR_TRANSPORT_CACHE_DIR", str(folder))
    monkeypatch.delenv("VCR_TRANSPORT_PARSE_CACHE", raising=False)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    _record(first, CHUNKS)
    _record(second, CHUNKS[::-1])
    _replay(first)  # its bytes marked seen: each child's open then writes the entry, racing the others
    children = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_LOADS_ONCE), str(first)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(vcr_transport.__file__).parent.parent)},
        )
        for _ in range(4)
    ]
    outputs = {child.communicate(timeout=60)[0] for child in children}
    assert outputs == {f"1 {sum(map(len, CHUNKS))}\n"} and all(child.returncode == 0 for child in children)
    [entry] = _entries(folder)
    assert not [p for p in folder.iterdir() if p.suffix == ".tmp"], "every writer renamed its temporary file"
    parses: list[str] = []
    original = _format.Cassette.parse.__func__  # type: ignore[attr-defined]

    def counting(cls: type[_format.Cassette], data: bytes, path: str) -> _format.Cassette:
        parses.append(path)
        return original(cls, data, path)  # type: ignore[no-any-return]

    monkeypatch.setattr(_format.Cassette, "parse", classmethod(counting))
    assert _replay(first) == CHUNKS and parses == [], "the entry the racing writers left is whole"
    # The first cassette's entry put where the second's is looked for: never used for the other bytes.
    _parse_cache.entry_path(str(second)).write_bytes(entry.read_bytes())
    assert _replay(second) == CHUNKS[::-1] and parses == [str(second)]
    # A cache folder that is a file: every open parses, none fails.
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.write_bytes(b"not a folder")
    assert _replay(first) == CHUNKS and _replay(first) == CHUNKS
    assert parses == [str(second), str(first), str(first)]
    assert folder.read_bytes() == b"not a folder"


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
