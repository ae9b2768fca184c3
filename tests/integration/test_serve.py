"""``vcr-transport serve`` as a real process: curl, Node's fetch and the three SDKs against it, 100
concurrent streams, the recording proxy against a loopback fake vendor, signals, and the refusals."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai
import pytest
from helpers import READ_TIMEOUT, events, recv_event
from upstream import Upstream
from vendors import OPENAI_KEY, SDKS, VENDOR_ROUTES, openai_reply

from vcr_transport import RecordingTransport, ReplayTransport, use_cassette
from vcr_transport._core.format._format import Cassette
from vcr_transport._storage import read_cassette
from vcr_transport._tools._serve import CassetteServer, ServeConfig, _Request

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "cassettes" / "openai_demo.jsonl"
HELLO = {"model": "demo", "messages": [{"role": "user", "content": "hello"}]}
STREAM = {"model": "demo", "stream": True, "messages": [{"role": "user", "content": "stream me some words"}]}


@contextmanager
def served(*arguments: str, stop: signal.Signals = signal.SIGTERM) -> Iterator[Any]:
    """``vcr-transport serve ARGUMENTS`` in a child process; yields it with ``.url`` once it listens."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-m", "vcr_transport", "serve", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert "http://" in line, f"serve did not start: {line!r} {child.stderr.read() if child.stderr else ''}"
        child.url = line.split()[2]  # type: ignore[attr-defined]
        yield child
    finally:
        if child.poll() is None:
            child.send_signal(stop)
        child.output, child.errors = child.communicate(timeout=30)  # type: ignore[attr-defined]


def post(url: str, body: Any, **headers: str) -> httpx2.Response:
    return httpx2.post(url, json=body, headers=headers, timeout=10)


def raw_chunks(data: bytes) -> list[bytes]:
    """The chunks of a chunked HTTP body, as sent."""
    chunks = []
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return chunks
        chunks.append(data[:size])
        data = data[size + 2 :]


def recorded_chunks(path: Path, index: int) -> list[bytes]:
    return list(read_cassette(path).calls[index].events)


def test_curl_sees_each_recorded_chunk_as_its_own_http_chunk() -> None:
    with served(str(DEMO)) as server:
        raw = subprocess.run(
            ["curl", "-sS", "--raw", "-N", f"{server.url}/v1/chat/completions", "-H", "content-type: application/json"]
            + ["-d", json.dumps(STREAM)],
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout
    assert raw_chunks(raw) == recorded_chunks(DEMO, 1)


NODE_SCRIPT = """
const [url, body] = process.argv.slice(1);
const response = await fetch(url, {method: "POST", headers: {"content-type": "application/json"}, body});
const reader = response.body.getReader();
const chunks = [];
for (;;) {
  const {done, value} = await reader.read();
  if (done) break;
  chunks.push(Buffer.from(value).toString("base64"));
}
console.log(JSON.stringify({status: response.status, chunks}));
"""


def boundaries(chunks: list[bytes]) -> set[int]:
    ends, total = set(), 0
    for chunk in chunks:
        total += len(chunk)
        ends.add(total)
    return ends


@pytest.mark.slow
def test_node_fetch_sees_the_recorded_chunks(capsys: Any) -> None:
    import base64

    with served(str(DEMO), "--pace", "10") as server:
        result = subprocess.run(
            ["node", "--input-type=module", "-e", NODE_SCRIPT, f"{server.url}/v1/chat/completions", json.dumps(STREAM)],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
    seen = json.loads(result.stdout)
    assert seen["status"] == 200
    received, recorded = [base64.b64decode(chunk) for chunk in seen["chunks"]], recorded_chunks(DEMO, 1)
    assert b"".join(received) == b"".join(recorded)
    # Every boundary Node sees is a recorded one; chunks that reach its socket together arrive as one read.
    assert boundaries(received) <= boundaries(recorded)
    with capsys.disabled():
        print(f"\nnode fetch, --pace 10: {len(received)} reads for {len(recorded)} recorded chunks")


def test_a_miss_answers_the_field_path_line_against_the_nearest_call() -> None:
    with served(str(DEMO)) as server:
        response = post(f"{server.url}/v1/chat/completions", {**STREAM, "messages": [{"role": "user", "content": "x"}]})
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    # The stream request, not the first call: same path, and its body is the nearer.
    assert "at call 1, field body.messages[0].content: recorded 'stream me some words', incoming 'x'" in message


@pytest.fixture(scope="module")
def vendor_cassettes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder holding a chat and a stream call of each vendor, recorded from the fake vendors."""
    folder = tmp_path_factory.mktemp("served")
    server = Upstream()
    for prefix, reply in VENDOR_ROUTES.values():
        server.routes[prefix] = reply
    server.start()
    try:
        for sdk in [s for s in SDKS if s.library is httpx2 and s.side == "sync"]:
            transport = RecordingTransport(httpx2.HTTPTransport(), folder / f"{sdk.name}.jsonl")
            sdk.run(transport, server.url, [("chat", ["hi"]), ("stream", ["stream to me"])])
            transport.close()
    finally:
        server.stop()
    return folder


# google-genai's async client talks through aiohttp when it builds its own: one more kind of client.
@pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")
@pytest.mark.parametrize("sdk", [s for s in SDKS if s.library is httpx2], ids=lambda s: s.id)
def test_the_sdks_replay_through_serve(sdk: Any, vendor_cassettes: Path) -> None:
    with served(str(vendor_cassettes)) as server:
        chat, stream = sdk.run(None, server.url, [("chat", ["hi"]), ("stream", ["stream to me"])])
    assert chat == "echo:hi"
    assert "".join(stream).startswith("echo:stream to me")


def test_a_hundred_concurrent_streams_get_every_chunk() -> None:
    expected = b"".join(recorded_chunks(DEMO, 1))

    async def run(url: str) -> list[bytes]:
        limits = httpx2.Limits(max_connections=100)
        async with httpx2.AsyncClient(limits=limits, timeout=30) as client:

            async def one() -> bytes:
                async with client.stream("POST", f"{url}/v1/chat/completions", json=STREAM) as response:
                    return b"".join([chunk async for chunk in response.aiter_raw()])

            return await asyncio.gather(*(one() for _ in range(100)))

    with served(str(DEMO)) as server:
        bodies = asyncio.run(run(server.url))
    assert len(bodies) == 100
    assert all(body == expected for body in bodies)


def _time_to_first_chunk(base_url: str) -> float:
    client = openai.OpenAI(api_key=OPENAI_KEY, base_url=base_url + "/v1", max_retries=0)
    started = time.perf_counter()
    stream = client.chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": "one two three"}], stream=True
    )
    next(iter(stream))
    first = time.perf_counter() - started
    list(stream)
    client.close()
    return first


@pytest.mark.slow
def test_the_recording_proxy_tees_the_stream_and_keeps_no_key(tmp_path: Path, capsys: Any) -> None:
    fake = Upstream()
    fake.routes["/v1/chat/completions"] = lambda received: openai_reply(received, pause=0.05)
    fake.start()
    cassette = tmp_path / "proxied.jsonl"
    try:
        direct = min(_time_to_first_chunk(fake.url) for _ in range(3))
        with served(str(cassette), "--mode", "record", "--upstream", f"openai={fake.url}") as server:
            proxied = min(_time_to_first_chunk(server.url) for _ in range(3))
    finally:
        fake.stop()
    with capsys.disabled():
        print(
            f"\nTTFB openai stream: direct {direct * 1000:.1f} ms, through the recording proxy {proxied * 1000:.1f} ms"
        )
    assert "saved" in server.output, server.errors
    assert fake.received[-1].headers["authorization"] == f"Bearer {OPENAI_KEY}"  # forwarded
    text = cassette.read_text()
    assert OPENAI_KEY not in text and OPENAI_KEY[8:30] not in text  # never persisted
    assert stat.S_IMODE(cassette.stat().st_mode) == 0o600
    recorded: Cassette = read_cassette(cassette)
    assert len(recorded.calls) == 3
    assert recorded.calls[0].outcome == "complete" and len(recorded.calls[0].events) > 3
    with ReplayTransport(cassette) as replay:  # what was recorded replays in-process
        client = openai.OpenAI(
            api_key=OPENAI_KEY, base_url=fake.url + "/v1", http_client=httpx2.Client(transport=replay)
        )
        stream = client.chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": "one two three"}], stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices).startswith("echo:one two three")


def test_sigint_leaves_an_older_cassette_as_it_was(tmp_path: Path) -> None:
    cassette = tmp_path / "older.jsonl"
    cassette.write_bytes(DEMO.read_bytes())
    fake = Upstream()
    fake.routes["/v1/chat/completions"] = openai_reply
    fake.start()
    try:
        with served(
            str(cassette), "--mode", "record-on-miss", "--upstream", f"openai={fake.url}", stop=signal.SIGINT
        ) as server:
            assert post(f"{server.url}/v1/chat/completions", HELLO).json()["choices"][0]["message"]["content"] == (
                "echo: hello"
            )  # replayed
            missed = {"model": "m", "messages": [{"role": "user", "content": "new"}]}
            assert post(f"{server.url}/v1/chat/completions", missed).status_code == 200  # recorded
    finally:
        fake.stop()
    assert len(fake.received) == 1
    assert "not saved" in server.output
    assert cassette.read_bytes() == DEMO.read_bytes()


def test_sigterm_commits_record_on_miss_with_the_older_calls_kept(tmp_path: Path) -> None:
    cassette = tmp_path / "grown.jsonl"
    cassette.write_bytes(DEMO.read_bytes())
    fake = Upstream()
    fake.routes["/v1/chat/completions"] = openai_reply
    fake.start()
    try:
        with served(str(cassette), "--mode", "record-on-miss", "--upstream", f"openai={fake.url}") as server:
            missed = {"model": "m", "messages": [{"role": "user", "content": "new"}]}
            assert post(f"{server.url}/v1/chat/completions", missed, authorization=f"Bearer {OPENAI_KEY}").is_success
    finally:
        fake.stop()
    assert "saved" in server.output
    calls = read_cassette(cassette).calls
    assert [call.body for call in calls[:2]] == [call.body for call in read_cassette(DEMO).calls]
    assert len(calls) == 3 and calls[2].body == {"json": missed}
    assert OPENAI_KEY not in cassette.read_text()


def test_record_on_miss_appends_and_the_recorded_calls_keep_answering(tmp_path: Path) -> None:
    """serve's record-on-miss is the session's, appending: a miss is to be forwarded and recorded after every
    recorded call, and the recorded calls go on answering, each as often as it is asked for."""
    cassette = tmp_path / "grown.jsonl"
    cassette.write_bytes(DEMO.read_bytes())
    config = ServeConfig(cassettes=(cassette,), mode="record-on-miss", upstreams=(("openai", "http://127.0.0.1:9"),))
    server = CassetteServer(config, say=lambda line: None)
    recorded = read_cassette(DEMO).calls[0]
    body = json.dumps(recorded.body["json"] if recorded.body else None).encode()
    hello = _Request("POST", "/v1/chat/completions", recorded.request_headers, body, True)
    missed = _Request("POST", "/v1/chat/completions", recorded.request_headers, body.replace(b"hello", b"new"), True)
    assert server._replayed(hello)[0].status_code == 200
    assert server._replayed(missed) == (None, "forwarded, recorded")
    response, note = server._replayed(hello)  # again, after the miss
    assert response.status_code == 200 and note == f"call 0 of {cassette.name}"
    assert server.recording is not None and server.recorder is not None
    assert server.recording.diverged_at is None  # nothing cut off: every recorded call is kept
    server.recording.close(KeyboardInterrupt())
    assert cassette.read_bytes() == DEMO.read_bytes()


@pytest.mark.parametrize(
    ("arguments", "refusal"),
    [
        (["--host", "192.0.2.7"], "refusing to listen on 192.0.2.7: not a loopback address"),
        (["--mode", "record", "--upstream", "openai=https://user:pw@api.example.com"], "carries a credential"),
        (
            [
                "--mode",
                "record",
                "--upstream",
                "openai=https://x.example.com/?key=AIzaSyTESTKEY0123456789abcdefghijklmno",
            ],
            "carries a credential",
        ),
        (["--fault", "cut:after=-1"], "after must be a whole number >= 0"),
    ],
)
def test_refusals_come_before_anything_is_bound(arguments: list[str], refusal: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "vcr_transport", "serve", str(tmp_path / "c.jsonl" if "record" in arguments else DEMO)]
        + arguments,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=30,
    )
    assert result.returncode == 2
    assert refusal in result.stderr
    assert "http://" not in result.stdout  # it never listened


def test_faults_reach_sdks_through_serve() -> None:
    with served(str(DEMO), "--fault", "status:code=429,call=0", "--fault", "cut:after=2,call=1") as server:
        client = openai.OpenAI(api_key=OPENAI_KEY, base_url=server.url + "/v1", max_retries=2)
        answer = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "hello"}])
        assert answer.choices[0].message.content == "echo: hello"  # after the 429, the recording
        seen: list[str] = []
        with pytest.raises(openai.APIConnectionError):
            for chunk in client.chat.completions.create(
                model="demo", messages=[{"role": "user", "content": "stream me some words"}], stream=True
            ):
                seen.append(chunk.choices[0].delta.content or "")
        client.close()
    assert seen == ["echo: ", "stream "]  # the two chunks before the cut


def _exchange(url: str, raw: bytes) -> bytes:
    """``raw`` bytes sent to the server as they are, and everything it answers until it closes."""
    host, port = urlsplit(url).hostname, urlsplit(url).port
    with socket.create_connection((host, port), timeout=10) as connection:
        connection.sendall(raw)
        answer = b""
        while data := connection.recv(65536):
            answer += data
    return answer


HELLO_BODY = json.dumps(HELLO).encode()


@pytest.mark.parametrize(
    ("name", "raw", "problem"),
    [
        (
            "two Content-Length headers that disagree",
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ncontent-length: 5\r\n\r\nabcde",
            b"content-length",
        ),
        (
            "a chunk size that is not hex",
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
            b"zz\r\nabc\r\n0\r\n\r\n",
            b"chunk",
        ),
        ("a request line that is not HTTP", b"HELLO\r\n\r\n", b""),
        ("a header line without a colon", b"GET / HTTP/1.1\r\nhost: x\r\nnot a header\r\n\r\n", b""),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_a_malformed_request_gets_a_400_saying_why(name: str, raw: bytes, problem: bytes) -> None:
    with served(str(DEMO)) as server:
        answer = _exchange(server.url, raw)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n"), (name, answer[:200])
    assert b"bad request: " in answer and problem in answer.lower(), (name, answer)
    assert "400 bad request" in server.output, "the access log names the refusal"


def test_a_chunked_body_with_a_trailer_is_framed_and_the_connection_carries_the_next_request() -> None:
    chunked = b"%x\r\n%s\r\n0\r\nx-trailer: yes\r\n\r\n" % (len(HELLO_BODY), HELLO_BODY)
    first = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"transfer-encoding: chunked\r\n\r\n" + chunked
    )
    second = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(HELLO_BODY), HELLO_BODY)
    )
    with served(str(DEMO)) as server:
        answer = _exchange(server.url, first + second)
    assert answer.count(b"HTTP/1.1 200 ") == 2, answer[:500]
    recorded = b"".join(recorded_chunks(DEMO, 0))
    bodies = [raw_chunks(part.partition(b"\r\n\r\n")[2]) for part in answer.split(b"HTTP/1.1 200 ")[1:]]
    assert [b"".join(body) for body in bodies] == [recorded, recorded]


def test_the_access_log_has_one_line_per_request_naming_what_answered() -> None:
    secret = "sk-proj-LOGabcdefghijklmnopqrstuvwxyz0123456789"
    with served(str(DEMO)) as server:
        post(f"{server.url}/v1/chat/completions", HELLO)
        post(f"{server.url}/v1/chat/completions?api_key={secret}", HELLO)
    lines = [line for line in server.output.splitlines() if line.startswith("POST ")]
    assert len(lines) == 2, server.output
    assert lines[0] == "POST /v1/chat/completions 200 call 0 of openai_demo.jsonl"
    assert lines[1].startswith(
        "POST /v1/chat/completions?api_key=[secret removed] 400 replay mismatch at call 0, field url.query.api_key"
    )
    assert secret not in server.output, "the log redacts the query"


@pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager:DeprecationWarning")
def test_serve_answers_a_websocket_session_from_the_cassette(tmp_path: Path) -> None:
    from realtime_server import RealtimeServer
    from websockets.exceptions import ConnectionClosedError
    from websockets.sync.client import connect

    def session(base: str) -> list[str]:
        client = openai.OpenAI(api_key="sk-proj-serveTESTkey0123456789abcdefghij", websocket_base_url=f"{base}/v1")
        with client.realtime.connect(model="gpt-realtime") as connection:
            # session.created is received before the first send, so the cassette has it first: the raw client
            # below waits for it. (Sent at once, the message could be recorded before session.created had
            # arrived, on a loaded machine, and replay then rightly holds session.created back until it comes.)
            kinds = [recv_event(connection).type]
            connection.conversation.item.create(
                item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]}
            )
            connection.response.create()
            for event in events(connection):
                kinds.append(event.type)
                if event.type == "response.done":
                    return kinds
        raise AssertionError("the session closed before response.done")

    upstream = RealtimeServer(tmp_path)
    cassette = tmp_path / "realtime.jsonl"
    with use_cassette(cassette, mode="record"):
        recorded = session(upstream.url)
    upstream.close()
    with served(str(cassette)) as child:
        base = child.url.replace("http://", "ws://")
        assert session(base) == recorded
        with connect(f"{base}/v1/realtime?model=gpt-realtime") as raw:
            raw.recv(timeout=READ_TIMEOUT)  # session.created came before the first send
            raw.send(json.dumps({"type": "conversation.item.create", "item": {"type": "message", "role": "system"}}))
            with pytest.raises(ConnectionClosedError) as caught:
                raw.recv(timeout=READ_TIMEOUT)
    assert caught.value.rcvd is not None and caught.value.rcvd.code == 1008
    assert "field message[1].item" in caught.value.rcvd.reason
    assert "101 session 0 of realtime.jsonl: closed by the client" in child.output


# --- serve's own bounds: request bodies, connections, idle time, framing, what a refusal echoes -------------------


def _connect(url: str) -> socket.socket:
    connection = socket.create_connection((urlsplit(url).hostname, urlsplit(url).port), timeout=5)
    connection.settimeout(5)
    return connection


def _read_all(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes (every recv with the socket's timeout)."""
    answer = b""
    while data := connection.recv(65536):
        answer += data
    return answer


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_body_over_max_body_is_answered_413_before_it_is_all_sent(framing: str) -> None:
    """The server answers once the body passes --max-body (a declared length at once), so it never holds more
    than that: the answer comes while most of the body is still unsent (before: it read 300 MB whole, 2.1 GB)."""
    piece = b"x" * 4096
    total = 1000 * len(piece)
    head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    chunked = framing == "chunked"
    head += b"transfer-encoding: chunked\r\n\r\n" if chunked else b"content-length: %d\r\n\r\n" % total
    with served(str(DEMO), "--max-body", "65536") as server, _connect(server.url) as connection:
        connection.sendall(head)
        sent = 0
        while sent < total and not select.select([connection], [], [], 0.001)[0]:
            connection.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            sent += len(piece)
        answer = _read_all(connection)
    assert answer.startswith(b"HTTP/1.1 413 Content Too Large\r\n"), answer[:200]
    assert b"larger than 65,536 bytes (serve --max-body)" in answer
    assert sent < total // 2, "the answer came while most of the body was unsent"
    assert "413 content too large" in server.output


def test_connections_over_the_limit_are_refused_and_idle_ones_closed_so_a_real_request_is_answered() -> None:
    """With --max-connections 3, a fourth connection gets a 503 and is closed; the idle ones are closed after
    --idle-timeout; then a real request is answered (before: 1,100 idle sockets starved it)."""
    with served(str(DEMO), "--max-connections", "3", "--idle-timeout", "0.5") as server:
        idle = [_connect(server.url) for _ in range(3)]
        try:
            time.sleep(0.1)  # the three are accepted before the fourth
            with _connect(server.url) as fourth:
                refused = _read_all(fourth)
            assert refused.startswith(b"HTTP/1.1 503 Service Unavailable\r\n"), refused[:200]
            assert b"3 connections are open (serve --max-connections)" in refused
            assert [connection.recv(1) for connection in idle] == [b"", b"", b""], "closed after the idle timeout"
        finally:
            for connection in idle:
                connection.close()
        assert post(f"{server.url}/v1/chat/completions", HELLO).status_code == 200


def test_a_request_with_both_content_length_and_transfer_encoding_closes_the_connection_after_its_answer() -> None:
    """RFC 9112 6.1: the body is framed by Transfer-Encoding, the answer says connection: close and the
    connection closes, so the bytes smuggled after the body are never answered as a request (before: they were)."""
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(HELLO_BODY), HELLO_BODY)
    smuggled = b"GET /smuggled HTTP/1.1\r\nhost: x\r\n\r\n"
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\ntransfer-encoding: chunked\r\n\r\n%s%s" % (len(chunked), chunked, smuggled)
    )
    with served(str(DEMO)) as server, _connect(server.url) as connection:
        connection.sendall(request)
        answer = _read_all(connection)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.count(b"HTTP/1.1 ") == 1, answer[:500]
    assert b"connection: close\r\n" in answer.partition(b"\r\n\r\n")[0].lower()
    assert "/smuggled" not in server.output


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("Authorization Bearer sk-proj-{}", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"),
        ("x-api-key {}", "opaque0123456789opaque0123456789"),  # no known shape: its name is secret
    ],
)
def test_a_header_line_without_a_colon_is_refused_without_echoing_its_secret(line: str, secret: str) -> None:
    raw = b"GET / HTTP/1.1\r\nhost: x\r\n" + line.format(secret).encode() + b"\r\n\r\n"
    with served(str(DEMO)) as server, _connect(server.url) as connection:
        connection.sendall(raw)
        answer = _read_all(connection)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"[secret removed]" in answer, answer
    assert secret.encode() not in answer and secret not in server.output + server.errors
    assert "400 bad request: illegal header line" in server.output


def test_a_request_trickled_a_byte_at_a_time_is_answered_408_at_its_deadline() -> None:
    """A slowloris: a byte every 0.2 s keeps under --idle-timeout, and the head never ends; --request-timeout
    bounds the whole request from its first byte, so the answer (a 408) comes while most of it is unsent
    (before: the connection stayed open as long as the bytes kept coming, then closed unanswered)."""
    head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-padding: " + b"a" * 40
    with (
        served(str(DEMO), "--idle-timeout", "0.6", "--request-timeout", "1") as server,
        _connect(server.url) as connection,
    ):
        sent = 0
        while sent < len(head) and not select.select([connection], [], [], 0.2)[0]:
            connection.sendall(head[sent : sent + 1])
            sent += 1
        answer = _read_all(connection)
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer[:200]
    assert b"did not arrive whole within 1 s of its first byte (serve --request-timeout)" in answer
    assert sent < len(head), "answered at the deadline, not when the client stopped sending"
    assert "408 request timeout" in server.output


# --- WebSocket sessions over raw sockets: what the client sends when, and how many at once -----------------------

_WS_TARGET = "/v1/realtime?model=gpt-realtime"
_HELLO, _ASK, _ANSWER = '{"type":"session.created"}', '{"type":"ask"}', '{"type":"answer"}'


def _ws_cassette(tmp_path: Path) -> Path:
    """One recorded session: the server's hello, the client's ask, the server's answer, closed by the client."""
    upgrade = [["Upgrade", "websocket"], ["Connection", "Upgrade"]]
    lines: list[dict[str, Any]] = [
        {"type": "header", "format_version": 1},
        {"type": "request", "call_index": 0, "method": "GET", "url": "ws://127.0.0.1:9" + _WS_TARGET},
        {"type": "response", "call_index": 0, "status": 101, "headers": upgrade, "http_version": "HTTP/1.1"},
    ]
    lines[1].update(headers=upgrade, body=None)
    for index, (side, text) in enumerate([("server", _HELLO), ("client", _ASK), ("server", _ANSWER)]):
        lines.append({"type": "message", "call_index": 0, "message_index": index, "t": index / 100, "from": side})
        lines[-1]["text"] = text
    close = {"code": 1000, "reason": "", "by": "client"}
    lines.append({"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "complete", "close": close})
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


class _RawWebSocket:
    """A WebSocket client on a plain socket (websockets' sans-I/O protocol frames it), so a test chooses what
    goes in which packet: the handshake alone, or with the first frames after it."""

    def __init__(self, url: str, after: Sequence[Any] = ()) -> None:
        from websockets.client import ClientProtocol
        from websockets.uri import parse_uri

        self.protocol = ClientProtocol(parse_uri(url.replace("http://", "ws://") + _WS_TARGET))
        self.protocol.send_request(self.protocol.connect())
        handshake = b"".join(self.protocol.data_to_send())
        self.socket = _connect(url)
        self.socket.sendall(handshake + b"".join(self.frame(frame) for frame in after))
        self.events: list[Any] = []

    @staticmethod
    def frame(frame: Any) -> bytes:
        return bytes(frame.serialize(mask=True, extensions=[]))

    def send(self, frame: Any) -> None:
        self.socket.sendall(self.frame(frame))

    def received(self, count: int) -> list[Any]:
        """The first ``count`` things the server sent (the handshake's response, then frames), fewer if it
        closed first; each socket read waits at most READ_TIMEOUT."""
        self.socket.settimeout(READ_TIMEOUT)
        while len(self.events) < count and (data := self.socket.recv(65536)):
            self.protocol.receive_data(data)
            self.events += self.protocol.events_received()
        return [getattr(event, "status_code", None) or bytes(event.data) for event in self.events[:count]]

    def close(self) -> None:
        self.socket.close()


def _played(url: str) -> list[Any]:
    """A whole session as a conforming client plays it: the ask sent once the hello came."""
    client = _RawWebSocket(url)
    try:
        client.received(2)
        client.send(_text(_ASK))
        return client.received(3)
    finally:
        client.close()


def _text(data: str) -> Any:
    from websockets.frames import Frame, Opcode

    return Frame(Opcode.TEXT, data.encode())


def _close_frame() -> Any:
    from websockets.frames import Close, Frame, Opcode

    return Frame(Opcode.CLOSE, Close(1000, "").serialize())


def test_a_websocket_message_in_the_handshakes_packet_is_played(tmp_path: Path) -> None:
    """The client's first message sent in the same packet as its handshake is read once the session is open
    (before: h11 held it past the handshake, and websockets' events for it were dropped with the handshake's,
    so the session waited for it and the client for the answer, forever)."""
    with served(str(_ws_cassette(tmp_path))) as server:
        client = _RawWebSocket(server.url, after=[_text(_ASK)])
        try:
            assert client.received(3) == [101, _HELLO.encode(), _ANSWER.encode()]
        finally:
            client.close()
    assert server.output.count("101 session 0 of session.jsonl: closed by the client\n") == 1, server.output


def test_two_clients_play_the_same_websocket_session_at_once(tmp_path: Path) -> None:
    """Two sessions open together, each with its own cursor over the recording: both get the hello before
    either sends, then each its answer; a third, opened after they closed, gets the session again."""
    with served(str(_ws_cassette(tmp_path))) as server:
        clients = [_RawWebSocket(server.url), _RawWebSocket(server.url)]
        try:
            assert [client.received(2) for client in clients] == [[101, _HELLO.encode()]] * 2
            for client in reversed(clients):
                client.send(_text(_ASK))
                assert client.received(3)[2] == _ANSWER.encode()
        finally:
            for client in clients:
                client.close()
        assert _played(server.url) == [101, _HELLO.encode(), _ANSWER.encode()]
    assert server.output.count("101 session 0 of session.jsonl: closed by the client\n") == 3, server.output


@pytest.mark.parametrize("when", ["in the handshake's packet", "after the 101"])
def test_a_websocket_client_that_closes_before_the_hello_gets_its_close_answered(tmp_path: Path, when: str) -> None:
    """A client that closes before reading the hello: serve answers the close (1000, as RFC 6455 5.5.1 has it)
    and closes the connection, and the next client gets the whole session (before, with the close in the
    handshake's packet: nothing answered it)."""
    with served(str(_ws_cassette(tmp_path))) as server:
        early = _RawWebSocket(server.url, after=[_close_frame()] if when != "after the 101" else [])
        try:
            if when == "after the 101":
                assert early.received(1) == [101]
                early.send(_close_frame())
            early.received(4)  # to the end: 101, perhaps the hello, the close
            assert early.protocol.close_rcvd is not None and early.protocol.close_rcvd.code == 1000
        finally:
            early.close()
        assert _played(server.url) == [101, _HELLO.encode(), _ANSWER.encode()]
    assert server.output.count(": closed by the client") == 2 and not server.errors, server.output + server.errors


def test_a_websocket_handshake_with_a_body_is_refused_with_a_400(tmp_path: Path) -> None:
    """RFC 6455 4.1: the handshake has no body; one with a body is answered 400 saying why (before: websockets
    refused the handshake serve had matched, and serve dropped the connection with a traceback)."""
    handshake = (
        f"GET {_WS_TARGET} HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
        "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\ncontent-length: 1\r\n\r\nx"
    )
    with served(str(_ws_cassette(tmp_path))) as server, _connect(server.url) as connection:
        connection.sendall(handshake.encode())
        answer = _read_all(connection)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n"), answer
    assert b"a WebSocket handshake has no body" in answer and not server.errors, server.errors


def test_a_websocket_client_silent_while_the_recording_waits_for_it_is_closed_after_idle_timeout(
    tmp_path: Path,
) -> None:
    """A client that waits for a message the recording has after one of the client's (the CI hang: the cassette
    had the client's message before session.created) is closed after --idle-timeout with 1008, the reason
    saying what the recording waits for (before: the session waited for ever, the client too)."""
    with served(str(_ws_cassette(tmp_path)), "--idle-timeout", "0.5") as server:
        client = _RawWebSocket(server.url)
        try:
            assert client.received(2) == [101, _HELLO.encode()]
            client.received(3)  # to the close
        finally:
            client.close()
    close = client.protocol.close_rcvd
    assert close is not None and close.code == 1008, close
    assert close.reason == "closed after 0.5 s with nothing from the client; the recording has client message 1 next"
    assert f"101 session 0 of session.jsonl: {close.reason}; 1 client and 1 server" in server.output, server.output


def test_a_websocket_client_listening_while_serve_paces_is_not_idle(tmp_path: Path) -> None:
    """While a paced server message is due (1 s at --pace 50) the client sends nothing and is not closed for it:
    --idle-timeout times only a session that waits for the client."""
    with served(str(_ws_cassette(tmp_path)), "--idle-timeout", "0.3", "--pace", "50") as server:
        assert _played(server.url) == [101, _HELLO.encode(), _ANSWER.encode()]
    assert "101 session 0 of session.jsonl: closed by the client\n" in server.output, server.output


@pytest.mark.parametrize(
    ("header", "why"),
    [(["x-a", "v\r\nSet-Cookie: pwn=1"], "the header x-a holds a line break or NUL"),
     (["x a", "v"], "the header name 'x a' is no HTTP token")],
)  # fmt: skip
def test_a_recorded_header_no_server_can_send_is_a_502_saying_so_and_a_verify_problem(
    tmp_path: Path, header: list[str], why: str
) -> None:
    """An edited cassette's header with a line break (or a name that is no token): the connection was cut with
    a 200 in the log and nothing said; it is a 502 naming the call and the header, and verify reports it."""
    from vcr_transport._tools._cli import main as cli

    lines = [json.loads(line) for line in DEMO.read_text().splitlines()]
    response = next(line for line in lines if line["type"] == "response")
    response["headers"].append(header)
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with served(str(edited)) as server:
        answer = post(f"{server.url}/v1/chat/completions", HELLO)
    assert answer.status_code == 502 and "pwn" not in answer.headers.get("set-cookie", "")
    assert answer.json()["error"]["message"] == f"call 0 of edited.jsonl: {why}; re-record it"
    assert "POST /v1/chat/completions 502 call 0 of edited.jsonl" in server.output
    assert cli(["verify", str(edited)]) == 1
