"""The replay engine: concurrency groups from the cassette's line order, the three orderings, repeats, and
what a mismatch says (every difference, its kind, the option that replays it)."""

from __future__ import annotations

import gc
import json
import random
import re
import threading
import weakref
from pathlib import Path
from typing import Any

import httpx2
import msgspec
import pytest

import vcr_transport
from vcr_transport import ReplayMismatch
from vcr_transport._core.engine import _engine as _engine_module
from vcr_transport._core.engine._engine import ReplayEngine
from vcr_transport._core.engine._explain import reordered_lists, volatile_suggestion
from vcr_transport._core.engine._matching import RequestMatcher
from vcr_transport._core.engine._options import Options
from vcr_transport._core.format._format import (
    Cassette,
    call_end_line,
    encode_line,
    event_lines,
    header_line,
    lines_of_calls,
    overlap_groups,
    request_line,
    response_line,
)
from vcr_transport._display import side_by_side

URL = "https://api.example.test/v1/chat"
HEADERS = [("accept", "*/*"), ("content-type", "application/json")]


def _write(path: Path, order: list[tuple[str, int]], bodies: dict[int, Any]) -> Path:
    """A cassette whose lines come in ``order``: ("start", n) writes call n's request and response lines,
    ("end", n) its call_end line, as a recorder writes them while calls run."""
    lines = [encode_line(header_line())]
    for step, index in order:
        if step == "start":
            lines.append(encode_line(request_line(index, "POST", URL, HEADERS, {"json": bodies[index]})))
            lines.append(encode_line(response_line(index, 200, [("content-type", "application/json")])))
        else:
            lines.append(encode_line(call_end_line(index, 0, "complete")))
    path.write_bytes(b"".join(lines))
    return path


def _sequential(count: int) -> list[tuple[str, int]]:
    return [step for index in range(count) for step in (("start", index), ("end", index))]


def test_groups_come_from_the_line_order(tmp_path: Path) -> None:
    bodies = {i: {"q": i} for i in range(6)}
    order = [("start", 0), ("end", 0), ("start", 1), ("start", 2), ("end", 1), ("start", 3), ("end", 2)]
    order += [("end", 3), ("start", 4), ("end", 4), ("start", 5), ("end", 5)]
    cassette = Cassette.parse(_write(tmp_path / "c.jsonl", order, bodies).read_bytes(), "c")
    # 1 and 2 overlap; 3 starts after 1 ended but before 2 did: one group of three. 4 and 5 ran alone.
    assert overlap_groups(cassette.calls) == [0, 1, 1, 1, 2, 3]


def test_a_group_replays_in_any_order_and_the_rest_in_recorded_order(tmp_path: Path) -> None:
    bodies = {i: {"q": f"q{i}"} for i in range(6)}
    order = [("start", 0), ("end", 0), *[("start", i) for i in range(1, 5)], *[("end", i) for i in range(1, 5)]]
    path = _write(tmp_path / "c.jsonl", [*order, ("start", 5), ("end", 5)], bodies)
    shuffler = random.Random(25)
    for _ in range(20):
        middle = [1, 2, 3, 4]
        shuffler.shuffle(middle)
        transport = vcr_transport.ReplayTransport(path)
        with httpx2.Client(transport=transport) as client:
            for index in [0, *middle, 5]:
                assert client.post(URL, json=bodies[index]).status_code == 200
        assert transport.unplayed_calls() == []


@pytest.mark.parametrize("order", ["recorded", "reversed"])
def test_the_engine_keeps_a_few_calls_compared_fields_not_all(tmp_path: Path, order: str) -> None:
    """A long conversation's requests each repeat its history: decoded and kept for every call, its replay held
    5.6 times the file (8.5 MB: 47 MB). A few are kept; a call's key finds it in any order all the same."""
    bodies = {turn: {"messages": [f"turn {earlier}" for earlier in range(turn + 1)]} for turn in range(60)}
    at_once = [("start", turn) for turn in bodies] + [("end", turn) for turn in bodies]
    path = _write(tmp_path / "c.jsonl", _sequential(60) if order == "recorded" else at_once, bodies)
    chosen = Options.from_arguments({}, where="test")
    engine = ReplayEngine(Cassette.parse(path.read_bytes(), str(path)), chosen.matcher(), chosen.redactor())
    kept = []
    for turn in sorted(bodies, reverse=order == "reversed"):
        incoming = engine.incoming_fields("POST", URL, HEADERS, json.dumps(bodies[turn]).encode())
        assert engine.select(incoming).index == turn
        kept.append(len(engine._recorded))
    assert max(kept) <= _engine_module._FIELDS_KEPT < len(bodies)
    assert engine.all_played(range(60))


@pytest.mark.parametrize("order", ["recorded", "reversed"])
def test_a_replayed_cassette_is_freed_when_its_last_reference_goes(tmp_path: Path, order: str) -> None:
    """No reference cycle holds a cassette: the parser kept its own bound methods, and the engine's indexes its
    ``_call_key``, so each test's calls stayed in memory until the collector ran (58 objects a test)."""
    bodies = {turn: {"q": turn} for turn in range(4)}
    at_once = [("start", turn) for turn in bodies] + [("end", turn) for turn in bodies]
    path = _write(tmp_path / "c.jsonl", _sequential(4) if order == "recorded" else at_once, bodies)
    chosen = Options.from_arguments({}, where="test")
    collecting = gc.isenabled()
    gc.disable()
    try:
        cassette = Cassette.parse(path.read_bytes(), str(path))
        engine = ReplayEngine(cassette, chosen.matcher(), chosen.redactor(), repeats=True)
        del cassette
        for turn in [*sorted(bodies, reverse=order == "reversed"), 0]:
            incoming = engine.incoming_fields("POST", URL, HEADERS, json.dumps(bodies[turn]).encode())
            assert engine.select(incoming).index == turn
        freed = weakref.ref(engine.cassette)
        del engine
        assert freed() is None, "the cassette waits for the cycle collector"
    finally:
        if collecting:
            gc.enable()


def test_order_between_groups_is_still_checked(tmp_path: Path) -> None:
    bodies = {i: {"q": f"q{i}"} for i in range(3)}
    path = _write(tmp_path / "c.jsonl", _sequential(3), bodies)
    with httpx2.Client(transport=vcr_transport.ReplayTransport(path)) as client:
        client.post(URL, json=bodies[0])
        with pytest.raises(ReplayMismatch) as caught:
            client.post(URL, json=bodies[2])
    message = str(caught.value)
    assert message.splitlines()[0] == "replay mismatch at call 1, field body.q: recorded 'q1', incoming 'q2'"
    assert "the request is recorded call 2 exactly: the calls came in another order" in message
    assert "ordered=False" in message
    assert "to re-record" not in message  # the order differs: re-recording is not the fix


def test_strict_and_free_orderings_stay_available(tmp_path: Path) -> None:
    bodies = {i: {"q": f"q{i}"} for i in range(2)}
    path = _write(tmp_path / "c.jsonl", [("start", 0), ("start", 1), ("end", 0), ("end", 1)], bodies)
    with httpx2.Client(transport=vcr_transport.ReplayTransport(path, ordered=True)) as client:
        with pytest.raises(ReplayMismatch, match="ordered=True checks every call's place"):
            client.post(URL, json=bodies[1])
    sequential = _write(tmp_path / "s.jsonl", _sequential(2), bodies)
    with httpx2.Client(transport=vcr_transport.ReplayTransport(sequential, ordered=False)) as client:
        client.post(URL, json=bodies[1])
        client.post(URL, json=bodies[0])


def test_identical_requests_in_a_group_are_answered_in_recorded_order(tmp_path: Path) -> None:
    bodies = {0: {"q": "same"}, 1: {"q": "same"}, 2: {"q": "other"}}
    path = _write(
        tmp_path / "c.jsonl", [("start", 0), ("start", 1), ("start", 2), ("end", 0), ("end", 1), ("end", 2)], bodies
    )
    transport = vcr_transport.ReplayTransport(path)
    seen = []
    with httpx2.Client(transport=transport) as client:
        for body in ({"q": "same"}, {"q": "other"}, {"q": "same"}):
            client.post(URL, json=body)
            seen.append(list(transport.engine.played))
    assert seen == [[True, False, False], [True, False, True], [True, True, True]]


def test_repeats_answer_again_with_the_last_recorded_answer_only_when_asked(tmp_path: Path) -> None:
    bodies = {0: {"poll": 1}, 1: {"poll": 1}}
    path = _write(tmp_path / "c.jsonl", _sequential(2), bodies)
    with httpx2.Client(transport=vcr_transport.ReplayTransport(path)) as client:
        client.post(URL, json=bodies[0])
        client.post(URL, json=bodies[0])
        with pytest.raises(ReplayMismatch, match="field call_index"):
            client.post(URL, json=bodies[0])
    transport = vcr_transport.ReplayTransport(path, allow_playback_repeats=True)
    with httpx2.Client(transport=transport) as client:
        for _ in range(4):
            assert client.post(URL, json=bodies[0]).status_code == 200
    with pytest.raises(TypeError, match="allow_playback_repeats must be True or False"):
        vcr_transport.ReplayTransport(path, allow_playback_repeats="yes")


def test_every_differing_field_is_reported_with_the_full_values_on_the_exception(tmp_path: Path) -> None:
    recorded = {"model": "m1", "temperature": 0.1, "messages": [{"role": "user", "content": "hi"}]}
    path = _write(tmp_path / "c.jsonl", _sequential(1), {0: recorded})
    incoming = {"model": "m2", "temperature": 0.7, "messages": [{"role": "user", "content": "bye"}]}
    with httpx2.Client(transport=vcr_transport.ReplayTransport(path)) as client:
        with pytest.raises(ReplayMismatch) as caught:
            client.post(URL, json=incoming)
    error = caught.value
    lines = str(error).splitlines()
    assert lines[0] == "replay mismatch at call 0, field body.messages[0].content: recorded 'hi', incoming 'bye'"
    assert lines[1] == "3 fields differ from recorded call 0:"
    assert lines[2:5] == [
        "  body.messages[0].content: recorded 'hi', incoming 'bye'",
        "  body.model: recorded 'm1', incoming 'm2'",
        "  body.temperature: recorded 0.1, incoming 0.7",
    ]
    assert error.differences == [
        ("body.messages[0].content", "hi", "bye"),
        ("body.model", "m1", "m2"),
        ("body.temperature", 0.1, 0.7),
    ]
    assert (error.call_index, error.field_path, error.recorded, error.incoming) == (
        0,
        "body.messages[0].content",
        "hi",
        "bye",
    )
    assert "recorded 'm1'\n  incoming 'm2'" in error.full_values()


def test_the_list_is_bounded(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", _sequential(1), {0: {f"k{i:02}": i for i in range(14)}})
    with httpx2.Client(transport=vcr_transport.ReplayTransport(path)) as client:
        with pytest.raises(ReplayMismatch) as caught:
            client.post(URL, json={f"k{i:02}": -i - 1 for i in range(14)})
    message = str(caught.value)
    assert "14 fields differ" in message and "  and 4 more (all of them: the exception's differences)" in message
    assert "body.k09" in message and "body.k10" not in message
    assert len(caught.value.differences) == 14


def test_a_changed_word_in_a_long_prompt_is_shown_in_a_window_on_both_sides() -> None:
    before = "You are a helpful assistant. " * 40
    recorded = before + "Be concise. Answer in English." + before
    incoming = before + "Be verbose. Answer in English." + before
    shown_recorded, shown_incoming = side_by_side(recorded, incoming)
    assert "Be [concise]. Answer" in shown_recorded and "Be [verbose]. Answer" in shown_incoming
    assert shown_recorded.startswith("'...") and shown_recorded.endswith("...'")
    assert len(shown_recorded) < 120
    assert side_by_side("short", "other") == ("'short'", "'other'")


def test_a_list_in_another_order_is_named() -> None:
    recorded = {"body": {"messages": [{"tool": "a"}, {"tool": "b"}, {"tool": "c"}]}}
    incoming = {"body": {"messages": [{"tool": "b"}, {"tool": "a"}, {"tool": "c"}]}}
    assert reordered_lists(recorded, incoming, ["body.messages[0].tool", "body.messages[1].tool"]) == ["body.messages"]
    assert reordered_lists(recorded, {"body": {"messages": [{"tool": "x"}] * 3}}, ["body.messages[0].tool"]) == []


@pytest.mark.parametrize(
    ("recorded", "incoming", "says"),
    [
        ("1b4e28ba-2fa1-11d2-883f-0016d3cca427", "6fa459ea-ee8a-3ca4-894e-db77e160355e", "looks like a UUID"),
        ("Now: 2024-05-01T10:00:00Z. Hi", "Now: 2026-12-02T01:12:03Z. Hi", "holds an ISO timestamp"),
        ("on Wed, 01 May 2024 10:00:00 GMT", "on Thu, 02 Dec 2026 01:12:03 GMT", "holds a timestamp"),
        (1714557600, 1796000000, "looks like a Unix-epoch time"),
        ("see /tmp/pytest-1/run3/a.txt", "see /tmp/pytest-7/run9/a.txt", "holds a temporary path"),
        ("upload tmpk3j2_8xz.wav", "upload tmpa9b8c7d6.wav", "holds a temporary path"),
        ("id 0123456789abcdef0123", "id fedcba98765432100123", "holds a hex id"),
    ],
)
def test_volatile_values_are_recognised(recorded: Any, incoming: Any, says: str) -> None:
    assert says in volatile_suggestion("body.x", recorded, incoming)


def test_plain_changes_get_no_volatile_suggestion() -> None:
    assert volatile_suggestion("body.x", "Be concise", "Be verbose") == ""
    assert volatile_suggestion("body.n", 3, 4) == ""


def _suggested(message: str) -> dict[str, Any]:
    """The options a mismatch suggests, as written in it, evaluated as keyword arguments."""
    found = re.findall(r"to replay it, pass (\w+=.*)$", message, re.MULTILINE)
    assert found, message
    return {name: value for text in found for name, value in eval(f"dict({text})").items()}  # noqa: S307


def test_suggestions_applied_as_written_make_it_replay(tmp_path: Path) -> None:
    recorded = {
        "messages": [{"content": "The time is 2024-05-01T10:00:00.123456+00:00. Plan the day."}],
        "metadata": {"run_id": "1b4e28ba-2fa1-11d2-883f-0016d3cca427"},
    }
    incoming = {
        "messages": [{"content": "The time is 2026-12-02T01:12:03.000001+00:00. Plan the day."}],
        "metadata": {"run_id": "6fa459ea-ee8a-3ca4-894e-db77e160355e"},
    }
    path = _write(tmp_path / "c.jsonl", _sequential(1), {0: recorded})
    with httpx2.Client(transport=vcr_transport.ReplayTransport(path)) as client:
        with pytest.raises(ReplayMismatch) as caught:
            client.post(URL, json=incoming)
    options = _suggested(str(caught.value))
    assert set(options) == {"ignore_fields", "normalize_patterns"}
    assert options["ignore_fields"] == ["body.metadata.run_id"]
    with httpx2.Client(transport=vcr_transport.ReplayTransport(path, **options)) as client:
        assert client.post(URL, json=incoming).status_code == 200
    stored = json.loads(path.read_text().splitlines()[1])["body"]["json"]
    assert stored == recorded, "normalisers never change what is stored"


def test_normalize_with_gets_paths_and_values_and_both_sides(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", _sequential(1), {0: {"seed": 1, "tools": ["b", "a"]}})
    seen: list[str] = []

    def normalise(field: str, value: Any) -> Any:
        seen.append(field)
        if field == "body.seed":
            return 0
        return sorted(value) if field == "body.tools" else value

    with httpx2.Client(transport=vcr_transport.ReplayTransport(path, normalize_with=[normalise])) as client:
        assert client.post(URL, json={"seed": 99, "tools": ["a", "b"]}).status_code == 200
    assert {"", "body", "body.seed", "body.tools", "body.tools[0]", "method", "url.path"} <= set(seen)
    with pytest.raises(TypeError, match="normalize_with must be a list of functions"):
        vcr_transport.ReplayTransport(path, normalize_with=["not callable"])
    with pytest.raises(ValueError, match="is not a regular expression"):
        vcr_transport.ReplayTransport(path, normalize_patterns=[("(", "x")])


def test_record_on_miss_keeps_the_played_calls_renumbered_and_holds_the_open_ones_ends(tmp_path: Path) -> None:
    bodies = {i: {"q": f"q{i}"} for i in range(5)}
    order = [("start", 0), ("end", 0), *[("start", i) for i in range(1, 5)], *[("end", i) for i in range(1, 5)]]
    data = _write(tmp_path / "c.jsonl", order, bodies).read_bytes()
    kept, deferred = lines_of_calls(data, [0, 2, 4], open_calls=[2, 4])
    places = [(json.loads(line)["type"], json.loads(line)["call_index"]) for line in kept]
    assert places == [
        ("request", 0),
        ("response", 0),
        ("call_end", 0),
        ("request", 1),
        ("response", 1),
        ("request", 2),
        ("response", 2),
    ]
    assert [json.loads(line)["call_index"] for line in deferred] == [1, 2]
    assert kept[0] == data.split(b"\n")[1], "a call whose number stays is kept byte for byte"


def _held_stream_cassette(
    path: Path, event: bytes = b": ping\n\n", outcome: str = "closed_early", closed_in_2: bool = False
) -> Path:
    """MCP's shape: a GET event stream (call 0) that ended (``outcome``) at the session's end, with two POSTs
    that ran while it was open (1, 2), then a call after it closed (3). ``closed_in_2``: it ended while call
    2 was running (as MCP's server closes it while answering the DELETE)."""
    sse = [("content-type", "text/event-stream")]
    lines = [encode_line(header_line())]
    lines.append(encode_line(request_line(0, "GET", URL, [("accept", "text/event-stream")], None)))
    lines.append(encode_line(response_line(0, 200, sse)))
    lines.append(event_lines(0, 0, [(event, 1_000)], 0))
    stream_end = encode_line(call_end_line(0, 1, outcome))
    for index in (1, 2):
        lines.append(encode_line(request_line(index, "POST", URL, HEADERS, {"json": {"q": index}})))
        lines.append(encode_line(response_line(index, 200, [("content-type", "application/json")])))
        if index == 2 and closed_in_2:
            lines.append(stream_end)
        lines.append(encode_line(call_end_line(index, 0, "complete")))
    if not closed_in_2:
        lines.append(stream_end)
    lines.append(encode_line(request_line(3, "POST", URL, HEADERS, {"json": {"q": 3}})))
    lines.append(encode_line(response_line(3, 200, [("content-type", "application/json")])))
    lines.append(encode_line(call_end_line(3, 0, "complete")))
    path.write_bytes(b"".join(lines))
    return path


def test_an_open_ended_stream_stays_open_for_the_calls_that_ran_beside_it(tmp_path: Path) -> None:
    """Fixed: MCP's GET stream ended at once in replay, as if its server had closed it, so the client opened
    another a second later, a GET the cassette doesn't have (a mismatch in any session that lasted over a
    second). It stays open until the calls that started while it was open have been played, then ends."""
    path = _held_stream_cassette(tmp_path / "c.jsonl")
    transport = vcr_transport.ReplayTransport(path)
    transport.sleep = lambda seconds: None  # the seam skips recorded waits; the hold's waits are real
    assert [transport.engine.holds(i) for i in range(4)] == [(1, 2), (), (), ()]
    seen: list[tuple[bytes, list[bool]]] = []
    with httpx2.Client(transport=transport) as client:
        with client.stream("GET", URL, headers={"accept": "text/event-stream"}) as response:
            chunks = response.iter_raw()
            seen.append((next(chunks), list(transport.engine.played)))

            def posts() -> None:
                for index in (2, 1):
                    client.post(URL, json={"q": index})

            worker = threading.Thread(target=posts)
            worker.start()
            seen.append((b"".join(chunks), list(transport.engine.played)))  # the end: once 1 and 2 are played
            worker.join()
        client.post(URL, json={"q": 3})
    assert seen == [(b": ping\n\n", [True, False, False, False]), (b"", [True, True, True, False])]
    assert transport.unplayed_calls() == []


def test_which_streams_stay_open_for_the_calls_beside_them(tmp_path: Path) -> None:
    """An event stream with no end of its protocol: cut by its client, for the calls that started while it
    was open; closed by its server, for the calls running then (MCP's server closes the GET stream when it
    answers the DELETE). Not one whose protocol ended (openai's streams run together with asyncio.gather)."""

    def holds(event: bytes, outcome: str) -> tuple[int, ...]:  # ended after 1 and 2 had ended
        path = _held_stream_cassette(tmp_path / "c.jsonl", event, outcome)
        return vcr_transport.ReplayTransport(path).engine.holds(0)

    # Closed by its server after 1 and 2 had ended: with data, it outlived them (any order, as before); with
    # none (MCP's GET stream, whose end and the DELETE's reach the client in either order), it waits for them.
    assert holds(b'data: {"n": 1}\n\n', "complete") == ()
    assert holds(b": ping\n\n", "complete") == (1, 2)
    assert holds(b'data: {"jsonrpc": "2.0", "method": "notifications/message"}\n\n', "closed_early") == (1, 2)
    assert holds(b"data: [DONE]\n\n", "complete") == ()
    # A JSON-RPC response ends the stream answering a POST, not a GET's (MCP's older SSE transport).
    assert holds(b'data: {"jsonrpc": "2.0", "id": 1, "result": {}}\n\n', "closed_early") == (1, 2)
    path = _held_stream_cassette(tmp_path / "c.jsonl", b'data: {"n": 1}\n\n', "complete", closed_in_2=True)
    assert vcr_transport.ReplayTransport(path).engine.holds(0) == (2,), "its server closed it answering 2"


def test_a_held_stream_with_no_call_to_wait_for_times_out_as_a_silent_server_does(tmp_path: Path) -> None:
    path = _held_stream_cassette(tmp_path / "c.jsonl")
    with httpx2.Client(transport=vcr_transport.ReplayTransport(path), timeout=httpx2.Timeout(5, read=0.05)) as client:
        with client.stream("GET", URL, headers={"accept": "text/event-stream"}) as response:
            with pytest.raises(httpx2.ReadTimeout):
                response.read()
    chosen = Options.from_arguments({}, where="test")
    cassette = Cassette.parse(path.read_bytes(), "c")
    served = ReplayEngine(cassette, chosen.matcher(), chosen.redactor(), ordered=False, reuse=True)
    assert served.holds(0) == (), "serve answers any number of runs: nothing to wait for"


def test_the_streams_of_a_sequential_app_are_not_decoded_to_know_what_they_hold(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Each call of a sequential app ends before the next starts: ``holds`` knows from the line order that
    its stream holds nothing open, without reading its events (it ran the SSE decoder over every body
    first: binary answers replayed at 18 MB/s)."""
    sse = [("content-type", "text/event-stream")]
    lines = [encode_line(header_line())]
    for index in range(20):
        lines.append(encode_line(request_line(index, "POST", URL, HEADERS, {"json": {"q": index}})))
        lines.append(encode_line(response_line(index, 200, sse)))
        lines.append(event_lines(index, 0, [(b": ping\n\n", 1_000)], 0))
        lines.append(encode_line(call_end_line(index, 1, "complete")))
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(lines))
    read: list[int] = []
    monkeypatch.setattr(_engine_module, "data_of", lambda body: read.append(len(body)) or "")
    monkeypatch.setattr(_engine_module, "_open_ended", lambda call: read.append(call.index) or True)
    engine = vcr_transport.ReplayTransport(path).engine
    assert [engine.holds(i) for i in range(20)] == [()] * 20
    assert read == [], "no stream read"
    held = vcr_transport.ReplayTransport(_held_stream_cassette(tmp_path / "held.jsonl")).engine
    assert held.holds(0) == (1, 2) and read == [0], "a stream beside other calls is read, once"
    assert held.holds(0) == (1, 2) and read == [0]


def _together(count: int) -> list[tuple[str, int]]:
    """Calls that all ran at once (an asyncio.gather): every request line, then every end."""
    return [("start", index) for index in range(count)] + [("end", index) for index in range(count)]


def _engine(path: Path, **options: Any) -> ReplayEngine:
    chosen = Options.from_arguments(options, where="test")
    return ReplayEngine(
        Cassette.parse(path.read_bytes(), str(path)),
        chosen.matcher(),
        chosen.redactor(),
        ordered=chosen.ordered,
        repeats=chosen.allow_playback_repeats,
        normalizer=chosen.normalizer(),
    )


def _ask(engine: ReplayEngine, body: Any) -> int:
    return engine.select(engine.incoming_fields("POST", URL, HEADERS, json.dumps(body).encode())).index


@pytest.mark.parametrize("order", ["recorded", "reversed", "shuffled"])
def test_a_group_answers_each_request_with_its_own_call_in_any_order(tmp_path: Path, order: str) -> None:
    # Two identical requests among them: the first of them asked gets the first recorded.
    bodies: dict[int, Any] = {i: {"q": f"document {i}"} for i in range(40)}
    bodies[7] = bodies[30] = {"q": "same"}
    engine = _engine(_write(tmp_path / "c.jsonl", _together(40), bodies))
    asked = list(range(40))
    if order == "reversed":
        asked.reverse()
    elif order == "shuffled":
        random.Random(38).shuffle(asked)
    answers = {i: _ask(engine, bodies[i]) for i in asked}
    first_same, second_same = sorted((7, 30), key=asked.index)
    assert answers == {**{i: i for i in range(40)}, first_same: 7, second_same: 30}
    assert engine.unplayed() == []
    with pytest.raises(ReplayMismatch, match="field call_index"):
        _ask(engine, bodies[0])


def test_a_group_in_reverse_compares_each_request_with_one_call(tmp_path: Path, monkeypatch: Any) -> None:
    count = 300
    bodies = {i: {"q": f"document {i}", "history": ["turn"] * 5} for i in range(count)}
    engine = _engine(_write(tmp_path / "c.jsonl", _together(count), bodies))
    compared = 0
    compare = RequestMatcher.difference

    def counted(matcher: RequestMatcher, recorded: Any, incoming: Any) -> Any:
        nonlocal compared
        compared += 1
        return compare(matcher, recorded, incoming)

    monkeypatch.setattr(RequestMatcher, "difference", counted)
    for index in reversed(range(count)):
        assert _ask(engine, bodies[index]) == index
    # One full comparison a request (the call its key finds); comparing every unplayed call made 45,150.
    assert compared == count


def test_a_conversation_encodes_each_body_once_a_side(tmp_path: Path, monkeypatch: Any) -> None:
    """Each turn's request carries the whole history: its body is encoded once for the request and once for
    its call (the check for skipped keys), and comparing them reuses those (they were encoded twice each)."""
    history = [{"role": "system", "content": "rules " * 1_000}]  # every body large
    bodies = {}
    for turn in range(20):
        history.append({"role": "user", "content": f"turn {turn}"})
        bodies[turn] = {"model": "m", "messages": list(history)}
    engine = _engine(_write(tmp_path / "c.jsonl", _sequential(20), bodies))
    encoded: list[Any] = []
    encode = msgspec.json.encode

    def counted(value: Any, *rest: Any, **options: Any) -> bytes:
        text = encode(value, *rest, **options)
        if b'"messages":' in text:  # the body, or a request holding it
            encoded.append(value)
        return text

    monkeypatch.setattr(msgspec.json, "encode", counted)
    assert [_ask(engine, bodies[turn]) for turn in range(20)] == list(range(20))
    assert len(encoded) == 2 * 20


def test_repeats_answer_from_a_group_replayed_out_of_order(tmp_path: Path) -> None:
    bodies = {i: {"q": f"q{i % 3}"} for i in range(6)}  # each request three times: 0 and 3, 1 and 4, 2 and 5
    path = _write(tmp_path / "c.jsonl", [*_together(6), ("start", 6), ("end", 6)], {**bodies, 6: {"q": "last"}})
    engine = _engine(path, allow_playback_repeats=True)
    assert [_ask(engine, bodies[i]) for i in (5, 4, 3, 2, 1, 0)] == [2, 1, 0, 5, 4, 3]
    assert _ask(engine, bodies[1]) == 4, "a repeat gets the last played call that matches"
    assert _ask(engine, {"q": "last"}) == 6
    assert _ask(engine, bodies[0]) == 3
    with pytest.raises(ReplayMismatch, match="field call_index"):
        _ask(engine, {"q": "never recorded"})


def test_normalize_with_still_decides_in_a_group(tmp_path: Path) -> None:
    bodies = {i: {"q": f"q{i}", "run_id": f"recorded-{i}"} for i in range(20)}
    path = _write(tmp_path / "c.jsonl", _together(20), bodies)
    run_ids = re.compile(r"(recorded|live)-\d+")
    engine = _engine(path, normalize_with=[lambda path, value: "<run>" if path == "body.run_id" else value])
    assert [_ask(engine, {"q": f"q{i}", "run_id": f"live-{i}"}) for i in reversed(range(20))] == list(
        reversed(range(20))
    )
    strict = _engine(path)
    with pytest.raises(ReplayMismatch, match="body.run_id") as raised:
        _ask(strict, {"q": "q19", "run_id": "live-19"})
    assert raised.value.call_index == 19 and run_ids.fullmatch(raised.value.incoming)


def test_a_recorded_placeholder_matches_an_unlearned_secret_in_a_group(tmp_path: Path) -> None:
    bodies = {i: {"q": f"q{i}", "token": vcr_transport.PLACEHOLDER} for i in range(10)}
    engine = _engine(_write(tmp_path / "c.jsonl", _together(10), bodies))
    assert [_ask(engine, {"q": f"q{i}", "token": f"tok-{i}"}) for i in (9, 3, 0, 5)] == [9, 3, 0, 5]
    assert _ask(engine, {"q": "q1"}) == 1, "a field the recording holds as the placeholder may be missing"
