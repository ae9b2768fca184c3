"""openai Realtime (sync and async) and google-genai Live through a cassette: recorded against the loopback
WebSocket server of ``tests/realtime_server.py``, then replayed with that server stopped (no socket)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from google import genai
from google.genai import types
from helpers import READ_TIMEOUT, async_events, each_within, events, recv_event
from realtime_server import (
    AUDIO_IN,
    AUDIO_OUT,
    BINARY_FRAGMENTS,
    LONG_DELTAS,
    SPOKEN_KEY,
    TEXT_FRAGMENTS,
    RealtimeServer,
)

import vcr_transport
from vcr_transport import ReplayMismatch

OPENAI_KEY = "sk-proj-realtimeTESTkey0123456789abcdefghij"
GEMINI_KEY = "AIzaSyRealtimeTestKey0123456789abcdefgh"
# openai's sync client calls websockets.sync.client.connect() outside a with block, which websockets 17.1+
# deprecates at the first send (the SDK's own warning, live as recorded).
pytestmark = pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager:DeprecationWarning")
TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RealtimeServer]:
    running = RealtimeServer(tmp_path)
    yield running
    running.close()


def _openai_client(server: RealtimeServer) -> openai.OpenAI:
    return openai.OpenAI(api_key=OPENAI_KEY, websocket_base_url=f"{server.url}/v1", max_retries=0)


def _openai_async_client(server: RealtimeServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key=OPENAI_KEY, websocket_base_url=f"{server.url}/v1", max_retries=0)


def _tool_output(temperature: int) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": "call_001", "output": json.dumps({"temperature": temperature})}


def realtime_sync(server: RealtimeServer, temperature: int = 21) -> dict[str, Any]:
    """A voice turn with a tool call: audio in, the function call and its output, text and audio out."""
    seen: dict[str, Any] = {"types": [], "text": "", "audio": "", "arguments": None}
    with _openai_client(server).realtime.connect(model="gpt-realtime") as connection:
        connection.session.update(session={"type": "realtime", "output_modalities": ["audio"], "tools": TOOLS})
        connection.input_audio_buffer.append(audio=AUDIO_IN)
        connection.conversation.item.create(
            item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]}
        )
        connection.response.create()
        for turn in range(2):
            for event in events(connection):
                seen["types"].append(event.type)
                if event.type == "response.function_call_arguments.done":
                    seen["arguments"] = json.loads(event.arguments)
                elif event.type == "response.output_text.delta":
                    seen["text"] += event.delta
                elif event.type == "response.output_audio.delta":
                    seen["audio"] += event.delta
                elif event.type == "response.done":
                    break
            if turn == 0:
                connection.conversation.item.create(item=_tool_output(temperature))  # type: ignore[arg-type]
                connection.response.create()
    return seen


async def realtime_async(server: RealtimeServer, temperature: int = 21) -> dict[str, Any]:
    seen: dict[str, Any] = {"types": [], "text": "", "audio": "", "arguments": None}
    async with _openai_async_client(server).realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(session={"type": "realtime", "output_modalities": ["audio"], "tools": TOOLS})
        await connection.input_audio_buffer.append(audio=AUDIO_IN)
        await connection.conversation.item.create(
            item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]}
        )
        await connection.response.create()
        for turn in range(2):
            async for event in async_events(connection):
                seen["types"].append(event.type)
                if event.type == "response.function_call_arguments.done":
                    seen["arguments"] = json.loads(event.arguments)
                elif event.type == "response.output_text.delta":
                    seen["text"] += event.delta
                elif event.type == "response.output_audio.delta":
                    seen["audio"] += event.delta
                elif event.type == "response.done":
                    break
            if turn == 0:
                await connection.conversation.item.create(item=_tool_output(temperature))  # type: ignore[arg-type]
                await connection.response.create()
    return seen


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_openai_realtime_sync_records_and_replays_without_a_socket(tmp_path: Path, server: RealtimeServer) -> None:
    cassette = tmp_path / "realtime.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        recorded = realtime_sync(server)
    assert recorded["arguments"] == {"city": "Paris"}
    assert recorded["text"] == "It is 21 degrees in Paris."
    assert recorded["audio"] == AUDIO_OUT
    server.close()  # replay must not need it
    opened = server.connections
    with vcr_transport.use_cassette(cassette, mode="replay", block_network=True):
        replayed = realtime_sync(server)
    assert replayed == recorded
    assert server.connections == opened
    text = cassette.read_text()
    assert OPENAI_KEY not in text
    assert AUDIO_IN in text and AUDIO_OUT in text  # media byte-exact in the file
    lines = _lines(cassette)
    assert lines[1]["url"].startswith("ws://127.0.0.1:") and lines[2]["status"] == 101
    assert lines[-1]["close"] == {"code": 1000, "reason": "", "by": "client"}


def test_openai_realtime_async_records_and_replays(tmp_path: Path, server: RealtimeServer) -> None:
    cassette = tmp_path / "realtime_async.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        recorded = asyncio.run(realtime_async(server))
    assert recorded["arguments"] == {"city": "Paris"} and recorded["audio"] == AUDIO_OUT
    server.close()
    with vcr_transport.use_cassette(cassette, mode="replay"):
        replayed = asyncio.run(realtime_async(server))
    assert replayed == recorded
    assert OPENAI_KEY not in cassette.read_text()


def test_a_changed_client_message_is_reported_by_field_path(tmp_path: Path, server: RealtimeServer) -> None:
    cassette = tmp_path / "changed.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        realtime_sync(server, temperature=21)
    with pytest.raises(ReplayMismatch) as caught:  # noqa: PT012 - the block replays until the send that differs
        with vcr_transport.use_cassette(cassette, mode="replay"):
            realtime_sync(server, temperature=30)
    error = caught.value
    assert error.field_path.endswith("].item.output")
    assert error.field_path.startswith("message[")
    assert '"temperature": 21' in error.recorded and '"temperature": 30' in error.incoming


def test_unplayed_messages_are_reported(tmp_path: Path, server: RealtimeServer) -> None:
    cassette = tmp_path / "unplayed.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        realtime_sync(server)
    with pytest.raises(vcr_transport.UnplayedCallsError, match="message"):  # noqa: PT012
        with vcr_transport.use_cassette(cassette, mode="replay"):
            with _openai_client(server).realtime.connect(model="gpt-realtime") as connection:
                connection.session.update(session={"type": "realtime", "output_modalities": ["audio"], "tools": TOOLS})


def _interrupted(server: RealtimeServer) -> list[str]:
    with _openai_client(server).realtime.connect(model="gpt-realtime") as connection:
        connection.response.create(response={"instructions": "long"})
        deltas = []
        for event in events(connection):
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
                if len(deltas) == 3:
                    break
    return deltas


def test_an_interrupted_session_replays_as_it_happened(tmp_path: Path, server: RealtimeServer) -> None:
    cassette = tmp_path / "interrupted.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        recorded = _interrupted(server)
    messages = [line for line in _lines(cassette) if line["type"] == "message"]
    server_deltas = [m for m in messages if m["from"] == "server" and "output_text.delta" in m["text"]]
    assert len(server_deltas) == 3 < LONG_DELTAS  # the client stopped reading and closed mid-response
    assert _lines(cassette)[-1]["close"]["by"] == "client"
    with vcr_transport.use_cassette(cassette, mode="replay"):  # every recorded message played: no unplayed error
        assert _interrupted(server) == recorded == ["word0 ", "word1 ", "word2 "]


async def gemini_live(server: RealtimeServer) -> dict[str, Any]:
    client = genai.Client(
        api_key=GEMINI_KEY, http_options=types.HttpOptions(base_url=f"https://127.0.0.1:{server.port}")
    )
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="get_weather",
                description="The weather in a city",
                parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}},
            )
        ]
    )
    config = types.LiveConnectConfig(response_modalities=[types.Modality.AUDIO], tools=[tool])
    seen: dict[str, Any] = {"calls": [], "text": "", "audio": b""}
    async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as session:
        await session.send_realtime_input(audio=types.Blob(data=b"\x01\x02" * 600, mime_type="audio/pcm;rate=16000"))
        await session.send_client_content(
            turns=types.Content(role="user", parts=[types.Part(text="Weather in Paris?")]), turn_complete=True
        )
        async for message in each_within(session.receive()):
            if message.tool_call and message.tool_call.function_calls:
                call = message.tool_call.function_calls[0]
                seen["calls"].append((call.name, call.args))
                await session.send_tool_response(
                    function_responses=[
                        types.FunctionResponse(id=call.id, name=call.name, response={"temperature": 21})
                    ]
                )
            content = message.server_content
            if content and content.model_turn and content.model_turn.parts:
                for part in content.model_turn.parts:
                    seen["text"] += part.text or ""
                    if part.inline_data and part.inline_data.data:
                        seen["audio"] += part.inline_data.data
    return seen


def test_gemini_live_with_a_tool_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = RealtimeServer(tmp_path, tls=True)
    monkeypatch.setenv("SSL_CERT_FILE", str(server.ca_file))
    cassette = tmp_path / "live.jsonl"
    try:
        with vcr_transport.use_cassette(cassette, mode="record"):
            recorded = asyncio.run(gemini_live(server))
    finally:
        server.close()
    assert recorded["calls"] == [("get_weather", {"city": "Paris"})]
    assert recorded["text"] == "It is 21 degrees in Paris."
    assert len(recorded["audio"]) == 3000
    with vcr_transport.use_cassette(cassette, mode="replay", block_network=True):
        replayed = asyncio.run(gemini_live(server))
    assert replayed == recorded
    text = cassette.read_text()
    assert GEMINI_KEY not in text
    assert AUDIO_OUT in text
    assert "wss://127.0.0.1:" in _lines(cassette)[1]["url"]


def test_the_mode_switch_replays_a_session(
    tmp_path: Path, server: RealtimeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "switch.jsonl"
    monkeypatch.setenv("VCR_TRANSPORT_MODE", "record")
    with vcr_transport.use_cassette(cassette):
        recorded = asyncio.run(realtime_async(server))
    server.close()
    monkeypatch.setenv("VCR_TRANSPORT_MODE", "replay")
    with vcr_transport.use_cassette(cassette) as used:
        assert asyncio.run(realtime_async(server)) == recorded
    assert used.mode == "replay"


def test_record_on_miss_records_a_session_whose_handshake_differs(tmp_path: Path, server: RealtimeServer) -> None:
    cassette = tmp_path / "miss.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        realtime_sync(server)
    opened = server.connections
    client = openai.OpenAI(api_key=OPENAI_KEY, websocket_base_url=f"{server.url}/v1", max_retries=0)
    with vcr_transport.use_cassette(cassette, mode="record-on-miss"):
        with client.realtime.connect(model="gpt-realtime-mini") as connection:
            assert recv_event(connection).type == "session.created"
    assert server.connections == opened + 1  # the miss went to the server
    (request,) = [line for line in _lines(cassette) if line["type"] == "request"]
    assert request["url"].endswith("model=gpt-realtime-mini")
    with vcr_transport.use_cassette(cassette, mode="replay"):
        with client.realtime.connect(model="gpt-realtime-mini") as connection:
            assert recv_event(connection).type == "session.created"


def _sessions(path: Path) -> list[dict[str, Any]]:
    """The cassette's WebSocket sessions: each handshake's call index, client messages and server texts."""
    lines = _lines(path)
    found = []
    for request in (line for line in lines if line["type"] == "request"):
        messages = [line for line in lines if line["type"] == "message" and line["call_index"] == request["call_index"]]
        found.append(
            {
                "call_index": request["call_index"],
                "client": [json.loads(m["text"]) for m in messages if m["from"] == "client"],
                "server": [json.loads(m["text"]) for m in messages if m["from"] == "server"],
            }
        )
    return found


def _answer_text(session: dict[str, Any]) -> str:
    return next(event["text"] for event in session["server"] if event["type"] == "response.output_text.done")


def test_record_on_miss_records_a_session_again_from_the_client_message_that_differs(
    tmp_path: Path, server: RealtimeServer
) -> None:
    cassette = tmp_path / "miss_inside.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        first = realtime_sync(server, temperature=21)
    opened = server.connections
    with vcr_transport.use_cassette(cassette, mode="record-on-miss") as used:
        again = realtime_sync(server, temperature=30)
    assert used.session is not None and used.session.diverged_at == 0
    assert server.connections == opened + 1  # the session went live at the tool output that differs
    # The client met the recorded session until the miss, then the live one, with nothing given twice.
    assert again["types"] == first["types"]
    assert again["text"] == "It is 30 degrees in Paris." and first["text"] == "It is 21 degrees in Paris."
    assert again["arguments"] == {"city": "Paris"} and again["audio"] == AUDIO_OUT
    (session,) = _sessions(cassette)  # recorded again from its handshake, replacing the old one
    assert [event["type"] for event in session["client"]] == [
        "session.update",
        "input_audio_buffer.append",
        "conversation.item.create",
        "response.create",
        "conversation.item.create",
        "response.create",
    ]
    assert json.loads(session["client"][4]["item"]["output"]) == {"temperature": 30}
    assert _answer_text(session) == "It is 30 degrees in Paris."
    assert OPENAI_KEY not in cassette.read_text()
    server.close()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert realtime_sync(server, temperature=30) == again
    with pytest.raises(ReplayMismatch, match=r"\.item\.output"):  # noqa: PT012
        with vcr_transport.use_cassette(cassette, mode="replay"):
            realtime_sync(server, temperature=21)


def test_record_on_miss_inside_an_async_session(tmp_path: Path, server: RealtimeServer) -> None:
    cassette = tmp_path / "miss_inside_async.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        first = asyncio.run(realtime_async(server, temperature=21))
    opened = server.connections
    with vcr_transport.use_cassette(cassette, mode="record-on-miss"):
        again = asyncio.run(realtime_async(server, temperature=30))
    assert server.connections == opened + 1
    assert again["types"] == first["types"] and again["text"] == "It is 30 degrees in Paris."
    (session,) = _sessions(cassette)
    assert _answer_text(session) == "It is 30 degrees in Paris."
    server.close()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert asyncio.run(realtime_async(server, temperature=30)) == again


def test_record_on_miss_with_a_message_the_recording_does_not_have(tmp_path: Path, server: RealtimeServer) -> None:
    """A client that sends one message more than recorded: the session goes live at that message."""
    cassette = tmp_path / "one_more.jsonl"
    client = _openai_client(server)
    update = {"type": "realtime", "output_modalities": ["text"]}
    with vcr_transport.use_cassette(cassette, mode="record"):
        with client.realtime.connect(model="gpt-realtime") as connection:
            connection.session.update(session=update)  # type: ignore[arg-type]
            assert recv_event(connection).type == "session.created"
            assert recv_event(connection).type == "session.updated"
    with vcr_transport.use_cassette(cassette, mode="record-on-miss"):
        with client.realtime.connect(model="gpt-realtime") as connection:
            connection.session.update(session=update)  # type: ignore[arg-type]
            connection.response.create()  # not in the recording
            received = [recv_event(connection).type for _ in range(3)]
    assert received == ["session.created", "session.updated", "response.created"]
    (session,) = _sessions(cassette)
    assert [event["type"] for event in session["client"]] == ["session.update", "response.create"]
    assert [event["type"] for event in session["server"]][:3] == received


def test_record_on_miss_keeps_the_sessions_replayed_before_the_miss(tmp_path: Path, server: RealtimeServer) -> None:
    cassette = tmp_path / "two_sessions.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        realtime_sync(server, temperature=21)
        realtime_sync(server, temperature=22)
    before = _sessions(cassette)
    opened = server.connections
    with vcr_transport.use_cassette(cassette, mode="record-on-miss"):
        assert realtime_sync(server, temperature=21)["text"] == "It is 21 degrees in Paris."  # replayed
        assert realtime_sync(server, temperature=35)["text"] == "It is 35 degrees in Paris."  # live from the miss
    assert server.connections == opened + 1
    kept, again = _sessions(cassette)
    assert kept == before[0]
    assert (kept["call_index"], again["call_index"]) == (0, 1)
    assert _answer_text(again) == "It is 35 degrees in Paris."


def test_record_on_miss_when_the_live_server_is_gone_keeps_the_cassette(tmp_path: Path, server: RealtimeServer) -> None:
    """Going live fails (nothing listens): the client's send raises the connection error, every later call
    on the connection raises it too, and the cassette is left as it was."""
    cassette = tmp_path / "gone.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        realtime_sync(server, temperature=21)
    before = cassette.read_bytes()
    server.close()
    with pytest.raises(OSError) as caught:  # noqa: PT012 - replayed until the differing send, which goes live
        with vcr_transport.use_cassette(cassette, mode="record-on-miss"):
            realtime_sync(server, temperature=30)
    assert any("not saved" in note for note in getattr(caught.value, "__notes__", [])), caught.value
    assert cassette.read_bytes() == before


def test_a_thread_waiting_in_recv_follows_the_session_live(tmp_path: Path, server: RealtimeServer) -> None:
    """A reader thread blocked in recv() while another thread's send takes the session live gets the live
    server's messages from then on, none twice."""
    import threading

    from websockets.sync.client import connect

    cassette = tmp_path / "threads.jsonl"
    created = json.dumps({"type": "conversation.item.create", "item": _tool_output(21)})

    def talk(item: dict[str, Any]) -> list[str]:
        seen: list[str] = []
        with connect(f"{server.url}/v1/realtime?model=gpt-realtime") as ws:
            assert json.loads(ws.recv(timeout=READ_TIMEOUT))["type"] == "session.created"
            reader = threading.Thread(
                target=lambda: seen.extend(json.loads(ws.recv(timeout=READ_TIMEOUT))["type"] for _ in range(2))
            )
            reader.start()
            ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
            ws.send(json.dumps({"type": "response.create"}))
            reader.join(10)
        return seen

    with vcr_transport.use_cassette(cassette, mode="record"):
        assert talk(_tool_output(21)) == ["conversation.item.added", "response.created"]
    opened = server.connections
    with vcr_transport.use_cassette(cassette, mode="record-on-miss"):
        assert talk(_tool_output(30)) == ["conversation.item.added", "response.created"]
    assert server.connections == opened + 1
    (session,) = _sessions(cassette)
    assert json.loads(session["client"][0]["item"]["output"]) == {"temperature": 30}
    assert created not in cassette.read_text()


def test_a_task_waiting_in_recv_follows_the_session_live(tmp_path: Path, server: RealtimeServer) -> None:
    """The asyncio client: a reader task waiting in recv() while another task's send takes the session
    live gets the live server's messages from then on, none twice."""
    from websockets.asyncio.client import connect

    cassette = tmp_path / "tasks.jsonl"

    async def talk(item: dict[str, Any]) -> list[str]:
        async with connect(f"{server.url}/v1/realtime?model=gpt-realtime") as ws:
            assert json.loads(await asyncio.wait_for(ws.recv(), READ_TIMEOUT))["type"] == "session.created"

            async def read() -> list[str]:
                return [json.loads(await asyncio.wait_for(ws.recv(), READ_TIMEOUT))["type"] for _ in range(2)]

            reader = asyncio.create_task(read())
            await asyncio.sleep(0)  # the reader waits in recv()
            await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
            await ws.send(json.dumps({"type": "response.create"}))
            return await asyncio.wait_for(reader, 10)

    with vcr_transport.use_cassette(cassette, mode="record"):
        assert asyncio.run(talk(_tool_output(21))) == ["conversation.item.added", "response.created"]
    opened = server.connections
    with vcr_transport.use_cassette(cassette, mode="record-on-miss"):
        assert asyncio.run(talk(_tool_output(30))) == ["conversation.item.added", "response.created"]
    assert server.connections == opened + 1
    (session,) = _sessions(cassette)
    assert json.loads(session["client"][0]["item"]["output"]) == {"temperature": 30}
    server.close()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert asyncio.run(talk(_tool_output(30))) == ["conversation.item.added", "response.created"]


def _answered(server: RealtimeServer, temperature: int) -> str:
    """A turn that waits for each answer before it sends again: its recording has one order only."""
    with _openai_client(server).realtime.connect(model="gpt-realtime") as connection:
        assert recv_event(connection).type == "session.created"
        connection.conversation.item.create(item=_tool_output(temperature))  # type: ignore[arg-type]
        assert recv_event(connection).type == "conversation.item.added"
        connection.response.create()
        text = ""
        for event in events(connection):
            if event.type == "response.output_text.done":
                text = event.text
            elif event.type == "response.done":
                break
    return text


def test_a_re_record_compares_sessions_by_their_messages(tmp_path: Path, server: RealtimeServer) -> None:
    """A quiet re-record keeps a session's old lines only when its messages are the same too, and then
    all of them."""
    cassette = tmp_path / "quiet.jsonl"

    def of_call(index: int) -> list[str]:
        return [line for line in cassette.read_text().splitlines() if json.loads(line).get("call_index") == index]

    with vcr_transport.use_cassette(cassette, mode="record"):
        assert _answered(server, 21) == "It is 21 degrees in Paris."
        assert _answered(server, 22) == "It is 22 degrees in Paris."
    first = of_call(0)
    with vcr_transport.use_cassette(cassette, mode="record") as used:
        _answered(server, 21)
        assert _answered(server, 40) == "It is 40 degrees in Paris."  # the same handshake, other messages
    assert used.session is not None and used.session.recorder is not None and not used.session.recorder.unchanged
    assert of_call(0) == first  # byte for byte, every message line included (their times too)
    kept, changed = _sessions(cassette)
    assert len(kept["server"]) == 10
    assert _answer_text(changed) == "It is 40 degrees in Paris."


def _streamed_sync(server: RealtimeServer) -> list[list[Any]]:
    from websockets.sync.client import connect

    with connect(f"{server.url}/fragments") as ws:
        return [list(ws.recv_streaming()), list(ws.recv_streaming(decode=False))]


async def _streamed_async(server: RealtimeServer) -> list[list[Any]]:
    from websockets.asyncio.client import connect

    async with connect(f"{server.url}/fragments") as ws:
        return [[part async for part in ws.recv_streaming()], [part async for part in ws.recv_streaming()]]


@pytest.mark.parametrize("client", ["sync", "async"])
def test_a_message_read_fragment_by_fragment_is_recorded_whole(
    tmp_path: Path, server: RealtimeServer, client: str
) -> None:
    cassette = tmp_path / "fragments.jsonl"

    def read() -> list[list[Any]]:
        return _streamed_sync(server) if client == "sync" else asyncio.run(_streamed_async(server))

    with vcr_transport.use_cassette(cassette, mode="record"):
        text, binary = read()
    # The client read the fragments as they came (websockets ends a fragmented message with an empty one).
    assert text[: len(TEXT_FRAGMENTS)] == TEXT_FRAGMENTS and binary[: len(BINARY_FRAGMENTS)] == BINARY_FRAGMENTS
    messages = [line for line in _lines(cassette) if line["type"] == "message"]
    assert [(m["from"], m.get("text"), m.get("base64")) for m in messages] == [
        ("server", "".join(TEXT_FRAGMENTS), None),
        ("server", None, base64.b64encode(b"".join(BINARY_FRAGMENTS)).decode()),
    ]
    server.close()
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error"):
        assert read() == [["".join(TEXT_FRAGMENTS)], [b"".join(BINARY_FRAGMENTS)]]  # whole, in one fragment


@pytest.mark.parametrize("client", ["sync", "async"])
def test_a_refused_handshake_replays_as_the_same_refusal(tmp_path: Path, server: RealtimeServer, client: str) -> None:
    """A wrong key is refused at the handshake; recorded (keep_failures: a failed last call is kept only
    when asked), it replays as the same InvalidStatus, status, headers and body, with no socket."""
    from websockets.exceptions import InvalidStatus

    cassette = tmp_path / "refused.jsonl"

    def connect() -> None:
        if client == "sync":
            sync = openai.OpenAI(api_key=OPENAI_KEY, websocket_base_url=f"{server.url}/refused/v1", max_retries=0)
            with sync.realtime.connect(model="gpt-realtime") as connection:
                recv_event(connection)
            return

        async def run() -> None:
            asynchronous = openai.AsyncOpenAI(
                api_key=OPENAI_KEY, websocket_base_url=f"{server.url}/refused/v1", max_retries=0
            )
            async with asynchronous.realtime.connect(model="gpt-realtime") as connection:
                await asyncio.wait_for(connection.recv(), READ_TIMEOUT)

        asyncio.run(run())

    with pytest.raises(InvalidStatus) as live:  # noqa: PT012
        with vcr_transport.use_cassette(cassette, mode="record", keep_failures=True):
            connect()
    server.close()
    opened = server.connections
    with pytest.raises(InvalidStatus) as replayed:  # noqa: PT012
        with vcr_transport.use_cassette(cassette, mode="replay", block_network=True):
            connect()
    assert server.connections == opened
    assert replayed.value.response.status_code == live.value.response.status_code == 401
    assert replayed.value.response.body == live.value.response.body
    assert json.loads(replayed.value.response.body)["error"]["code"] == "invalid_api_key"
    assert replayed.value.response.headers["Content-Type"] == "application/json"
    assert OPENAI_KEY not in cassette.read_text()


MARKED_TEST = """
import json

import pytest
from websockets.sync.client import connect

URL = {url!r}


@pytest.mark.vcr_transport
def test_session():
    with connect(URL + "/echo") as ws:
        ws.send(json.dumps({{"setup": {{"model": "models/live"}}}}))
        assert json.loads(ws.recv(timeout=10)) == {{"setupComplete": {{}}}}
"""


def test_the_pytest_marker_records_and_replays_a_session(pytester: pytest.Pytester, server: RealtimeServer) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\n")
    pytester.makepyfile(test_ws=MARKED_TEST.format(url=server.url))
    pytester.runpytest("--vcr-mode=record").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "test_ws" / "test_session.jsonl"
    assert '"from":"server"' in cassette.read_text()
    server.close()
    pytester.runpytest("--vcr-mode=replay").assert_outcomes(passed=1)


def test_record_on_miss_under_the_marker_re_records_from_the_changed_message(
    pytester: pytest.Pytester, server: RealtimeServer
) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\n")
    pytester.makepyfile(test_ws=MARKED_TEST.format(url=server.url))
    pytester.runpytest("--vcr-mode=record").assert_outcomes(passed=1)
    opened = server.connections
    pytester.makepyfile(test_ws=MARKED_TEST.format(url=server.url).replace("models/live", "models/live-2"))
    result = pytester.runpytest("--vcr-mode=record-on-miss")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["cassettes: 1 re-recorded*"])
    assert server.connections == opened + 1
    cassette = pytester.path / "cassettes" / "test_ws" / "test_session.jsonl"
    assert "models/live-2" in cassette.read_text() and '"models/live"' not in cassette.read_text()
    server.close()
    pytester.runpytest("--vcr-mode=replay").assert_outcomes(passed=1)


def _handshake_as(cassette: Path, changes: dict[str, str]) -> None:
    """The cassette's handshake with its headers (by lower-case name) set to ``changes``'s values."""
    lines = _lines(cassette)
    headers = [[name, changes.get(name.lower(), value)] for name, value in lines[1]["headers"]]
    named = {name.lower() for name, _ in headers}
    lines[1]["headers"] = headers + [[name, value] for name, value in changes.items() if name not in named]
    cassette.write_text("".join(json.dumps(line) + "\n" for line in lines))


LEGACY_OPENAI_KEY = "sk-" + "Xq7Lm2Pz9Rt4Vb6Nc1Kd" + "T3BlbkFJ" + "Hw8Js3Gf5Ay0Eu2Oi7Ty"
OPENAI_3_3_HANDSHAKE = {
    "accept": "*/*",
    "content-type": "text/plain",
    "user-agent": "OpenAI/Python 3.3.0",
    "x-stainless-package-version": "3.3.0",
}


def test_a_realtime_session_replays_with_another_openai_version(tmp_path: Path, server: RealtimeServer) -> None:
    cassette = tmp_path / "realtime.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        recorded = realtime_sync(server)
    server.close()
    _handshake_as(cassette, OPENAI_3_3_HANDSHAKE)  # what another openai version sends on the same connect()
    with vcr_transport.use_cassette(cassette, mode="replay"):
        assert realtime_sync(server) == recorded


@pytest.mark.parametrize(
    ("changes", "field"),
    [({}, "url.query.model"), ({"sec-websocket-protocol": "realtime"}, "headers.sec-websocket-protocol")],
    ids=["model", "subprotocol"],
)
def test_what_the_app_chose_in_a_handshake_still_mismatches(
    tmp_path: Path, server: RealtimeServer, changes: dict[str, str], field: str
) -> None:
    cassette = tmp_path / "realtime.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        realtime_sync(server)
    server.close()
    _handshake_as(cassette, {**OPENAI_3_3_HANDSHAKE, **changes})
    model = "gpt-realtime-mini" if not changes else "gpt-realtime"
    with pytest.raises(ReplayMismatch) as caught, vcr_transport.use_cassette(cassette, mode="replay"):
        with _openai_client(server).realtime.connect(model=model):
            pass
    assert caught.value.field_path == field


@pytest.mark.parametrize("kind", ["project", "legacy"])
def test_a_key_in_the_browser_subprotocol_is_not_written(tmp_path: Path, server: RealtimeServer, kind: str) -> None:
    """Realtime's browser authentication: the key in ``Sec-WebSocket-Protocol`` as ``openai-insecure-api-key.<key>``
    (glued to the word by a dot), a project key or a legacy user key; the cassette has neither, scan flags it."""
    from vcr_transport._tools._cli import main as cli

    key = {"project": "sk-proj-Xq7Lm2Pz9Rt4Vb6Nc1Kd8Hw3Js5Gf0Ay2Eu9Oi4Ty", "legacy": LEGACY_OPENAI_KEY}[kind]
    protocols = ["realtime", f"openai-insecure-api-key.{key}", "openai-beta.realtime-v1"]
    cassette = tmp_path / "browser.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        client = _openai_client(server)
        with client.realtime.connect(model="gpt-realtime", websocket_connection_options={"subprotocols": protocols}):
            pass
    written = cassette.read_text()
    assert key not in written and "openai-insecure-api-key.[secret removed]" in written
    planted = tmp_path / "planted.jsonl"
    planted.write_text(written.replace("openai-insecure-api-key.[secret removed]", f"openai-insecure-api-key.{key}"))
    assert cli(["scan", str(planted)]) == 1


def test_a_key_spoken_in_text_deltas_is_removed_from_each_piece(tmp_path: Path, server: RealtimeServer) -> None:
    """Realtime streams text in ``response.output_text.delta`` messages of a few characters: a key spread over
    them is removed from each (the first piece gets the placeholder, the others lose their part), the audio
    and the final text's message as before; scan flags the pieces put back; replay gives the redacted text."""
    from vcr_transport._tools._cli import main as cli

    def spoken() -> tuple[str, str]:
        pieces, done = [], ""
        with _openai_client(server).realtime.connect(model="gpt-realtime") as connection:
            connection.response.create(response={"instructions": "key"})
            for event in events(connection):
                if event.type == "response.output_text.delta":
                    pieces.append(event.delta)
                elif event.type == "response.output_text.done":
                    done = event.text
                elif event.type == "response.done":
                    break
        return "".join(pieces), done

    cassette = tmp_path / "spoken.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        assert spoken() == (f"Your key is {SPOKEN_KEY}.",) * 2
    written = cassette.read_text()
    deltas = [json.loads(line["text"]) for line in _lines(cassette) if line.get("from") == "server"]
    joined = "".join(d["delta"] for d in deltas if d.get("type") == "response.output_text.delta")
    assert joined == "Your key is [secret removed]." and SPOKEN_KEY[20:28] not in written
    server.close()
    with vcr_transport.use_cassette(cassette, mode="replay"):
        assert spoken() == ("Your key is [secret removed].",) * 2
    planted = tmp_path / "planted.jsonl"
    lines = _lines(cassette)
    pieces = iter(f"Your key is {SPOKEN_KEY}."[start : start + 4] for start in range(0, 200, 4))
    for line in lines:
        message = json.loads(line.get("text") or "{}") if line.get("from") == "server" else {}
        if message.get("type") == "response.output_text.delta":
            line["text"] = json.dumps({**message, "delta": next(pieces)})
    planted.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert cli(["scan", str(planted)]) == 1


def test_json_in_a_binary_frame_is_redacted_and_stays_binary(tmp_path: Path) -> None:
    """Gemini Live's server sends its JSON messages in binary frames: they were kept as media, a key the model
    wrote included. JSON in a binary frame is redacted as text JSON and written back binary; other bytes stay
    byte for byte; replay gives the client bytes, as live."""
    import threading

    from websockets.sync.client import connect
    from websockets.sync.server import serve

    key = "sk-proj-4fJ9kQ2mXv7LpR8sT1uW3yZ5aB6cD0eF9gH2iJ4kLm"
    spoken = json.dumps({"serverContent": {"modelTurn": {"parts": [{"text": f"your key is {key}"}]}}}).encode()
    media = b"\x89PNG\r\n" + bytes(range(256))

    def handler(ws: Any) -> None:
        ws.recv(timeout=READ_TIMEOUT)
        ws.send(spoken)
        ws.send(media)

    with serve(handler, "127.0.0.1", 0) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"ws://127.0.0.1:{server.socket.getsockname()[1]}/ws/live"
        cassette = tmp_path / "live.jsonl"

        def session() -> list[Any]:
            with connect(url) as ws:
                ws.send(json.dumps({"setup": {"model": "models/live"}}))
                return [ws.recv(timeout=READ_TIMEOUT), ws.recv(timeout=READ_TIMEOUT)]

        with vcr_transport.use_cassette(cassette, mode="record"):
            assert session() == [spoken, media]
        server.shutdown()
    assert key not in cassette.read_text()
    messages = [line for line in _lines(cassette) if line.get("from") == "server"]
    assert all("base64" in message for message in messages), "binary frames stay binary"
    kept = [base64.b64decode(message["base64"]) for message in messages]
    assert json.loads(kept[0])["serverContent"]["modelTurn"]["parts"][0]["text"] == "your key is [secret removed]"
    assert kept[1] == media
    with vcr_transport.use_cassette(cassette, mode="replay"):
        assert session() == kept


def test_a_key_spoken_in_gemini_live_pieces_is_removed_from_each(tmp_path: Path) -> None:
    """Gemini Live streams a model turn's text in ``serverContent`` messages of a few characters, in binary
    frames: a key spread over them is removed from each; scan flags the pieces put back."""
    import threading

    from websockets.sync.client import connect
    from websockets.sync.server import serve

    from vcr_transport._tools._cli import main as cli

    text = f"Your key is {SPOKEN_KEY}."
    pieces = [text[start : start + 5] for start in range(0, len(text), 5)]

    def message(piece: str) -> bytes:
        return json.dumps({"serverContent": {"modelTurn": {"parts": [{"text": piece}]}}}).encode()

    def handler(ws: Any) -> None:
        ws.recv(timeout=READ_TIMEOUT)
        for piece in pieces:
            ws.send(message(piece))
        ws.send(json.dumps({"serverContent": {"turnComplete": True}}).encode())

    with serve(handler, "127.0.0.1", 0) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        cassette = tmp_path / "live.jsonl"
        with vcr_transport.use_cassette(cassette, mode="record"):
            with connect(f"ws://127.0.0.1:{server.socket.getsockname()[1]}/ws/live") as ws:
                ws.send(json.dumps({"clientContent": {"turns": [{"parts": [{"text": "my key?"}]}]}}))
                got = [json.loads(ws.recv(timeout=READ_TIMEOUT)) for _ in range(len(pieces) + 1)]
        server.shutdown()
    assert "".join(m["serverContent"]["modelTurn"]["parts"][0]["text"] for m in got[:-1]) == text
    lines = _lines(cassette)
    kept = [json.loads(base64.b64decode(line["base64"])) for line in lines if line.get("from") == "server"]
    joined = "".join(m["serverContent"]["modelTurn"]["parts"][0]["text"] for m in kept[:-1])
    assert joined == "Your key is [secret removed]." and SPOKEN_KEY[20:28] not in cassette.read_text()
    planted = tmp_path / "planted.jsonl"
    server_lines = iter(pieces)
    for line in lines:
        if line.get("from") == "server" and "modelTurn" in base64.b64decode(line["base64"]).decode():
            line["base64"] = base64.b64encode(message(next(server_lines))).decode()
    planted.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert cli(["scan", str(planted)]) == 1
