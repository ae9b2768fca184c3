"""WebSocket sessions in the core: their lines in the format, redaction that leaves media alone, the
comparison of client messages, and replay's order of delivery."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from vcr_transport import CassetteError, ReplayMismatch
from vcr_transport._core.engine._call_recording import CallBook
from vcr_transport._core.engine._matching import Normalizer, RequestMatcher
from vcr_transport._core.engine._websocket import MessageMatcher, SessionPlayback, SessionRecording, stored_message
from vcr_transport._core.format._format import MAX_SECONDS, Cassette, RecordedCall, encode_line, problems
from vcr_transport._core.rules._redaction import PLACEHOLDER, Redactor

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
AUDIO = base64.b64encode(bytes(range(256)) * 4).decode("ascii")


def _session(messages: list[tuple[str, str | bytes]], close: Any = (1000, "", "client")) -> bytes:
    """A cassette of one WebSocket session recorded through ``SessionRecording``."""
    recording = SessionRecording(CallBook(), Redactor(), 0)
    lines = [encode_line({"type": "header", "format_version": 1})]
    lines += recording.handshake("wss://api.example/v1/realtime?key=" + KEY, [("Authorization", f"Bearer {KEY}")])
    lines += recording.accepted(101, [("Upgrade", "websocket"), ("Sec-WebSocket-Accept", "random")])
    for number, (side, data) in enumerate(messages):
        lines += recording.message(side, data, (number + 1) * 1_000_000)
    lines += recording.end("complete", close)
    return b"".join(lines)


def _call(data: bytes) -> RecordedCall:
    return Cassette.parse(data, "c.jsonl").calls[0]


def test_a_session_is_written_as_lines_that_read_back_redacted() -> None:
    data = _session([("client", '{"type":"a"}'), ("server", b"\x00\xff"), ("server", '{"type":"b"}')])
    assert KEY.encode() not in data
    assert b"Sec-WebSocket-Accept" not in data  # random per connection: not recorded
    call = _call(data)
    assert call.websocket and call.status == 101
    assert call.url == f"wss://api.example/v1/realtime?key={PLACEHOLDER}"
    assert call.messages == [
        ("client", '{"type":"a"}', 0.001),
        ("server", b"\x00\xff", 0.002),
        ("server", '{"type":"b"}', 0.003),
    ]
    assert call.close == (1000, "", "client")
    assert list(problems("c.jsonl", [data])) == []


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


def _written(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(encode_line(line) for line in lines)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda lines: lines[3].update(message_index=5), "message_index 5 of call 0, expected 0"),
        (lambda lines: lines[3].update({"from": "proxy"}), "field 'from'"),
        (lambda lines: lines[3].update(base64="AAAA"), "exactly one of 'text' and 'base64'"),
        (lambda lines: lines[2].update(status=200), "not an open WebSocket session"),
        (lambda lines: lines[-1]["close"].update(code=99), "field 'close.code'"),
    ],
)
def test_a_malformed_session_is_refused_naming_the_line(change: Any, words: str) -> None:
    lines = _lines(_session([("client", "hello"), ("server", "hi")]))
    change(lines)
    with pytest.raises(CassetteError, match=words):
        Cassette.parse(_written(lines), "c.jsonl")


def test_a_close_on_an_http_call_is_refused() -> None:
    lines = [
        {"type": "header", "format_version": 1},
        {"type": "request", "call_index": 0, "method": "GET", "url": "https://h/x", "headers": []},
        {"type": "response", "call_index": 0, "status": 200, "headers": []},
        {"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "complete", "close": {"code": 1000}},
    ]
    with pytest.raises(CassetteError, match=r"c.jsonl:4: call 0 is not a WebSocket session"):
        Cassette.parse(_written(lines), "c.jsonl")


def test_redaction_removes_secrets_from_json_messages_and_never_touches_media() -> None:
    redactor = Redactor()
    # an audio string that holds a key-shaped run of characters stays byte for byte
    audio = AUDIO[:100] + "AKIAIOSFODNN7EXAMPLE" + AUDIO[100:]
    message = json.dumps({"type": "input_audio_buffer.append", "audio": audio, "api_key": KEY})
    stored = stored_message(message, redactor)
    assert isinstance(stored, str)
    assert KEY not in stored and json.loads(stored)["audio"] == audio
    clean = json.dumps({"type": "input_audio_buffer.append", "audio": audio})
    assert stored_message(clean, redactor) is clean  # nothing to remove: as it came
    assert stored_message(b"\x00" + KEY.encode(), redactor) == b"\x00" + KEY.encode()  # binary is media


def test_a_client_message_differs_by_field_path_with_ignored_fields_and_normalisers() -> None:
    redactor = Redactor()
    matcher = MessageMatcher(RequestMatcher(ignore_fields=["event_id"]), redactor)
    recorded = '{"type":"session.update","event_id":"a","session":{"instructions":"be brief"}}'
    assert matcher.differences(4, recorded, recorded.replace('"a"', '"b"')) == []
    changed = recorded.replace("be brief", "be long")
    assert matcher.differences(4, recorded, changed) == [("message[4].session.instructions", "be brief", "be long")]
    lowered = Normalizer(
        functions=[lambda path, value: value.lower() if path == "body.session.instructions" else value]
    )
    assert (
        MessageMatcher(RequestMatcher(), redactor, lowered).differences(0, recorded, recorded.replace("be", "BE")) == []
    )


def _playback(messages: list[tuple[str, str | bytes]], close: Any = (1000, "", "client")) -> SessionPlayback:
    call = _call(_session(messages, close))
    return SessionPlayback(call, MessageMatcher(RequestMatcher(), Redactor()), cassette="c.jsonl")


def test_server_messages_before_the_next_send_are_delivered_without_it() -> None:
    playback = _playback([("server", "created"), ("server", "hello"), ("client", "update"), ("server", "updated")])
    assert playback.delivered(playback.next_server() or 0) == "created"
    assert playback.delivered(playback.next_server() or 0) == "hello"
    assert playback.next_server() is None  # "updated" came after the client's send: it waits for it
    playback.sent("update")
    assert playback.delivered(playback.next_server() or 0) == "updated"
    assert playback.next_server() is None  # the client closed the recording: the server stays quiet
    assert playback.unplayed() == ""


def test_a_server_message_recorded_after_a_client_message_waits_for_it_and_says_what_it_waits_for() -> None:
    """The order the CI hang came from: the client's message recorded before session.created arrived. Replay
    holds session.created back until that message is sent; ``awaited`` names what the session waits for."""
    playback = _playback([("client", "item"), ("server", "created"), ("server", "added")])
    assert (playback.next_server(), playback.awaited()) == (None, "client message 0")
    playback.sent("item")
    assert playback.delivered(playback.next_server() or 0) == "created"
    playback.delivered(playback.next_server() or 0)
    assert (playback.next_server(), playback.awaited()) == (None, "the client's close")


def test_a_recorded_server_close_is_delivered_after_the_last_message() -> None:
    playback = _playback([("client", "bye"), ("server", "ok")], close=(1011, "overloaded", "server"))
    playback.sent("bye")
    playback.delivered(playback.next_server() or 0)
    assert playback.next_server() == SessionPlayback.CLOSED


def test_a_different_or_extra_client_message_raises_a_mismatch_naming_the_message() -> None:
    playback = _playback([("client", '{"n":1}'), ("server", "ok")])
    with pytest.raises(ReplayMismatch) as caught:
        playback.sent('{"n":2}')
    assert caught.value.field_path == "message[0].n"
    assert caught.value.call_index == 0
    playback.sent('{"n":1}')
    with pytest.raises(ReplayMismatch, match="no more client messages"):
        playback.sent('{"n":3}')
    assert playback.unplayed() == "0 client and 1 server message(s) of the session not played"


def test_pace_waits_the_recorded_gaps_scaled() -> None:
    playback = _playback([("server", "a"), ("server", "b")])
    first = playback.next_server() or 0
    assert playback.delay(first, None) == 0.0
    assert playback.delay(first, 2.0) == pytest.approx(0.002)  # recorded at +1 ms, from the handshake
    playback.delivered(first)
    assert playback.delay(playback.next_server() or 0, 2.0) == pytest.approx(0.002)


def test_the_resend_plan_waits_for_the_recorded_server_messages_before_each_client_message() -> None:
    playback = _playback(
        [
            ("server", "created"),
            ("client", "update"),
            ("server", "updated"),
            ("server", "added"),
            ("client", '{"n":1}'),
            ("server", "done"),
        ]
    )
    playback.delivered(playback.next_server() or 0)
    playback.sent("update")
    playback.delivered(playback.next_server() or 0)  # "updated"; "added" not received yet
    with pytest.raises(ReplayMismatch):
        playback.sent('{"n":2}')
    # "update" went after 1 server message, the differing one after 3; the client was given 2.
    assert playback.resend_plan() == ([1, 3], 2)


def test_the_resend_plan_of_a_message_beyond_the_recording() -> None:
    playback = _playback([("client", "a"), ("server", "b"), ("server", "c")])
    playback.sent("a")
    with pytest.raises(ReplayMismatch, match="no more client messages"):
        playback.sent("extra")
    assert playback.resend_plan() == ([0, 2], 0)


def test_a_session_miss_ends_replay_with_the_session_not_played() -> None:
    from vcr_transport._core.engine._engine import ReplayEngine

    data = _session([("client", "a")])
    cassette = Cassette.parse(data + data.split(b"\n", 1)[1].replace(b'"call_index":0', b'"call_index":1'), "c.jsonl")
    engine = ReplayEngine(cassette, RequestMatcher(), Redactor())
    assert engine.end_at_session_miss(0) is False  # not record-on-miss: the mismatch is raised
    engine.stop_at_miss = True
    first = engine.select(engine.incoming_fields("GET", cassette.calls[0].url, [], b""))
    assert first.index == 0
    engine.select(engine.incoming_fields("GET", cassette.calls[1].url, [], b""))
    assert engine.end_at_session_miss(1) is True
    assert engine.kept == (0,) and not engine.played[1]
    assert engine.end_at_session_miss(0) is False  # replay has ended: session 0's lines are kept as they are


def test_pace_waits_for_the_latest_time_reached_so_a_session_waits_at_most_the_bound() -> None:
    """Server messages at an hour, 0, an hour, 0...: the first waits an hour, the others nothing (before: an hour
    for every rise)."""
    recording = SessionRecording(CallBook(), Redactor(), 0)
    lines = [encode_line({"type": "header", "format_version": 1})]
    lines += recording.handshake("wss://api.example/v1/realtime", [])
    lines += recording.accepted(101, [("Upgrade", "websocket")])
    for number in range(10):
        lines += recording.message("server", f"m{number}", (number + 1) % 2 * int(MAX_SECONDS * 1e9))
    lines += recording.end("complete", (1000, "", "server"))
    playback = SessionPlayback(_call(b"".join(lines)), MessageMatcher(RequestMatcher(), Redactor()), cassette="c")
    waits = []
    while (position := playback.next_server()) is not None and position != SessionPlayback.CLOSED:
        waits.append(playback.delay(position, 1.0))
        playback.delivered(position)
    assert waits == [MAX_SECONDS] + [0.0] * 9


def _delta(kind: str, piece: str) -> str:
    return json.dumps({"type": kind, "item_id": "i", "output_index": 0, "content_index": 0, "delta": piece})


def test_server_pieces_of_text_are_held_and_lose_their_parts_of_a_secret_in_order() -> None:
    """Text deltas are held until another message (or the end) and searched together: a key spread over them
    goes from each; an audio delta is not held (nor searched); the messages keep their order and times."""
    pieces = [KEY[start : start + 5] for start in range(0, len(KEY), 5)]
    recording = SessionRecording(CallBook(), Redactor(), 0)
    recording.handshake("wss://api.example/v1/realtime", [])
    recording.accepted(101, [])
    assert recording.message("server", _delta("response.output_text.delta", "key "), 1_000_000) == []
    held = [recording.message("server", _delta("response.output_text.delta", p), 2_000_000) for p in pieces]
    assert held == [[]] * len(pieces), "held until another message comes"
    lines = recording.message("server", _delta("response.output_audio.delta", AUDIO), 3_000_000)
    lines += recording.message("server", _delta("response.output_text.delta", " done"), 4_000_000)
    lines += recording.end("complete", (1000, "", "client"))
    messages = [json.loads(line) for line in lines if b'"message"' in line]
    assert [message["message_index"] for message in messages] == list(range(len(pieces) + 3))
    texts = [json.loads(message["text"]) for message in messages]
    assert "".join(t["delta"] for t in texts if t["type"].endswith("text.delta")) == f"key {PLACEHOLDER} done"
    assert texts[len(pieces) + 1]["delta"] == AUDIO and [m["t"] for m in messages][-2:] == [0.003, 0.004]


def test_a_transcript_s_pieces_between_audio_pieces_lose_their_parts_of_a_secret() -> None:
    """Realtime interleaves ``response.output_audio_transcript.delta`` with ``response.output_audio.delta``: the
    audio between the pieces is held with them (it released them, and each piece was redacted alone)."""
    pieces = [KEY[start : start + 5] for start in range(0, len(KEY), 5)]
    recording = SessionRecording(CallBook(), Redactor(), 0)
    recording.handshake("wss://api.example/v1/realtime", [])
    recording.accepted(101, [])
    lines: list[bytes] = []
    for number, piece in enumerate(pieces):
        lines += recording.message("server", _delta("response.output_audio_transcript.delta", piece), number)
        lines += recording.message("server", _delta("response.output_audio.delta", AUDIO), number)
    lines += recording.message("server", json.dumps({"type": "response.done"}), len(pieces))
    texts = [json.loads(json.loads(line)["text"]) for line in lines if b'"message"' in line]
    transcript = "".join(t["delta"] for t in texts if t["type"].endswith("transcript.delta"))
    assert transcript == PLACEHOLDER and [t["delta"] for t in texts if t["type"].endswith("audio.delta")] == [
        AUDIO
    ] * len(pieces)
