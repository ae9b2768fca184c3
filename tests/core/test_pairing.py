"""Mode check's pairing (``_core._pairing``): a live request stands for the recorded call it matches exactly,
else for the one at its place in the conversation (ids and text masked), else for none, with why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vcr_transport._core.engine._engine import ReplayEngine
from vcr_transport._core.engine._options import Options
from vcr_transport._core.format._format import (
    Cassette,
    call_end_line,
    encode_line,
    header_line,
    request_line,
    response_line,
)
from vcr_transport._core.views._pairing import LivePairing, Unpaired, position

URL = "https://api.example.test/v1/chat/completions"
HEADERS = [("content-type", "application/json")]


def _turn(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "stream": False, "messages": list(messages)}


USER = {"role": "user", "content": "What is 2 + 3?"}


def _called(call_id: str, text: str) -> list[dict[str, Any]]:
    tool_call = {"id": call_id, "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
    return [
        {"role": "assistant", "content": text, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": call_id, "content": "5"},
    ]


def _pairing(tmp_path: Path, bodies: list[dict[str, Any]]) -> tuple[LivePairing, ReplayEngine]:
    lines = [encode_line(header_line())]
    for index, body in enumerate(bodies):
        lines.append(encode_line(request_line(index, "POST", URL, HEADERS, {"json": body})))
        lines.append(encode_line(response_line(index, 200, [("content-type", "application/json")])))
        lines.append(encode_line(call_end_line(index, 0, "complete")))
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(lines))
    chosen = Options.from_arguments({}, where="test")
    engine = ReplayEngine(Cassette.parse(path.read_bytes(), str(path)), chosen.matcher(), chosen.redactor())
    return LivePairing(engine), engine


def _incoming(engine: ReplayEngine, body: dict[str, Any], url: str = URL) -> dict[str, Any]:
    return engine.incoming_fields("POST", url, HEADERS, json.dumps(body).encode())


def test_position_masks_text_ids_and_numbers_and_keeps_roles_types_flags_and_lengths() -> None:
    masked = position({"stream": True, "n": 2, "stop": None, "messages": [USER, *_called("call_1", "Adding.")]})
    assert masked["stream"] is True and masked["n"] == "<number>" and masked["stop"] is None
    assert masked["messages"][0] == {"role": "user", "content": "<text>"}
    assert masked["messages"][1]["tool_calls"][0]["type"] == "function"
    assert masked["messages"][1]["tool_calls"][0]["id"] == "<text>"
    assert position(_turn(USER, *_called("call_1", "a"))) == position(_turn(USER, *_called("call_LIVE", "b")))


def test_turn_2_with_the_live_ids_and_text_stands_for_the_recorded_turn_2(tmp_path: Path) -> None:
    pairing, engine = _pairing(tmp_path, [_turn(USER), _turn(USER, *_called("call_rec", "Adding."))])
    first = pairing.pair(_incoming(engine, _turn(USER)))
    second = pairing.pair(_incoming(engine, _turn(USER, *_called("call_live9", "Let me add."))))
    assert not isinstance(first, Unpaired) and first.index == 0
    assert not isinstance(second, Unpaired) and second.index == 1


def test_an_exact_match_comes_first_whatever_the_order(tmp_path: Path) -> None:
    later = _turn({"role": "user", "content": "other"})
    pairing, engine = _pairing(tmp_path, [_turn(USER), later])
    paired = pairing.pair(_incoming(engine, later))
    assert not isinstance(paired, Unpaired) and paired.index == 1
    rest = pairing.pair(_incoming(engine, _turn({"role": "user", "content": "a third text"})))
    assert not isinstance(rest, Unpaired) and rest.index == 0  # at the same place: the call left


def test_a_request_at_no_recorded_place_is_unpaired_with_the_field_path_that_differs(tmp_path: Path) -> None:
    pairing, engine = _pairing(tmp_path, [_turn(USER), _turn(USER, *_called("call_rec", "Adding."))])
    assert not isinstance(pairing.pair(_incoming(engine, _turn(USER))), Unpaired)
    two = _called("call_a", "x")
    two[0]["tool_calls"].append({**two[0]["tool_calls"][0], "id": "call_b"})
    unpaired = pairing.pair(_incoming(engine, _turn(USER, *two, {"role": "tool", "tool_call_id": "call_b"})))
    assert isinstance(unpaired, Unpaired)
    assert unpaired.why.startswith("no unpaired recorded call of this method and path is at its place")
    assert "(the next, call 1, differs at body.messages[1].tool_calls[1]: recorded <missing>, live {" in unpaired.why


def test_a_stream_request_never_stands_for_a_recorded_non_stream_one(tmp_path: Path) -> None:
    pairing, engine = _pairing(tmp_path, [_turn(USER)])
    unpaired = pairing.pair(_incoming(engine, {**_turn(USER), "stream": True}))
    assert isinstance(unpaired, Unpaired) and "differs at body.stream: recorded False, live True" in unpaired.why


def test_each_recorded_call_is_paired_once_and_another_route_never(tmp_path: Path) -> None:
    pairing, engine = _pairing(tmp_path, [_turn(USER)])
    other = pairing.pair(_incoming(engine, _turn(USER), url="https://api.example.test/v1/embeddings"))
    assert other == Unpaired("the recording has no call of this method and path")
    assert not isinstance(pairing.pair(_incoming(engine, _turn(USER))), Unpaired)
    again = pairing.pair(_incoming(engine, _turn(USER)))
    assert again == Unpaired("the recording's 1 call(s) of this method and path were paired with earlier requests")


def test_a_recorded_call_at_another_host_stands_for_the_request_by_method_and_path(tmp_path: Path) -> None:
    pairing, engine = _pairing(tmp_path, [_turn(USER)])
    paired = pairing.pair(_incoming(engine, _turn(USER), url="http://127.0.0.1:9/v1/chat/completions"))
    assert not isinstance(paired, Unpaired) and paired.index == 0


def test_a_cassettes_key_in_why_is_shown_escaped(tmp_path: Path) -> None:
    pairing, engine = _pairing(tmp_path, [{**_turn(USER), "\x1b[2Jclear": 1}])
    unpaired = pairing.pair(_incoming(engine, _turn(USER)))
    assert isinstance(unpaired, Unpaired) and "\x1b" not in unpaired.why
    assert "differs at body.\\x1b[2Jclear: recorded '<number>', live <missing>" in unpaired.why
