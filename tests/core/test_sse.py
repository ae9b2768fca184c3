"""The one SSE decoder (``vcr_transport._core.format._sse``) against a plain reading of the WHATWG HTML standard's
"Parsing an event stream" and "Interpreting an event stream", fed in random chunkings; what serves
redaction (``data_of``), the protocol end (``ProtocolEnd``) and the views (``parse_sse``) read on it."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from vendors import sse

from vcr_transport._core.format._sse import ProtocolEnd, SseDecoder, data_of, decode_events
from vcr_transport._core.views._conversation import SseEvent, parse_sse

Dispatched = tuple[str, str, str]  # (type, data, last event ID) of an event the standard dispatches


def reference(stream: bytes) -> tuple[list[Dispatched], list[int]]:
    """The standard, step by step, over the decoded text: the events it dispatches and each reconnection
    time it sets. (Its "message" default type is left as ""; a reconnection time is counted once the blank
    line after it comes, as the decoder reads an event's fields then, and gives the unfinished one's with
    ``close``, and each event gives the last it set.)"""
    text = stream.decode("utf-8", "surrogateescape")
    if text.startswith("\ufeff"):
        text = text[1:]
    events: list[Dispatched] = []
    retries: list[int] = []
    kind, data, last_id = "", "", ""
    line, position = "", 0
    lines: list[str] = []
    while position < len(text):  # collect lines: CRLF, LF or CR ends one; what is left at the end is none
        char = text[position]
        position += 1
        if char == "\r":
            if text[position : position + 1] == "\n":
                position += 1
            lines.append(line)
            line = ""
        elif char == "\n":
            lines.append(line)
            line = ""
        else:
            line += char
    pending: list[int] = []
    for line in lines:
        if line == "":
            retries += pending
            pending = []
            if data == "":  # dispatch: nothing when the data buffer is empty
                kind = ""
                continue
            events.append((kind, data[:-1] if data.endswith("\n") else data, last_id))
            kind, data = "", ""
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
        else:
            field, value = line, ""
        if field == "event":
            kind = value
        elif field == "data":
            data += value + "\n"
        elif field == "id":
            if "\0" not in value:
                last_id = value
        elif field == "retry" and value and all(c in "0123456789" for c in value):
            pending = [int(value)]  # the event's: the last it sets
    return events, retries


def _decoded(stream: bytes, cuts: list[int]) -> tuple[list[Dispatched], list[int]]:
    decoder = SseDecoder()
    events = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        events += decoder.feed(stream[start:end])
    text = lambda field: field.decode("utf-8", "surrogateescape")  # noqa: E731
    dispatched = [(text(e.type), text(e.data), text(e.id)) for e in events if e.dispatched]
    return dispatched, [e.retry for e in events if e.retry is not None]


PIECES = [
    *("data", "data:", "data: ", "event:", "event: ", "id:", "id: ", "retry:", "retry: ", ":", ": comment"),
    *("\r", "\n", "\r\n", "\n\n", "\r\r", "\r\n\r\n", "\n\r\n", " ", "  ", "\ufeff", "\0", "x", "é", "日本"),
    *("1", "250", "-3", "[DONE]", "message_stop", '{"a": 1}', "other:", "Data:", "dat", "a:"),
]


@st.composite
def streams(draw: Any) -> tuple[bytes, list[int]]:
    pieces = draw(st.lists(st.sampled_from(PIECES), max_size=60))
    stream = "".join(pieces).encode()
    if draw(st.booleans()):
        stream = b"\xef\xbb\xbf" + stream
    if draw(st.integers(0, 9)) == 0:
        stream += b"\xff\xc3"  # bytes that aren't UTF-8 pass as they are
    cuts = sorted(set(draw(st.lists(st.integers(0, len(stream)), max_size=12))))
    return stream, cuts


@settings(max_examples=3000, deadline=None)
@given(streams())
@example((b"\xef\xbb\xbfdata\r\rdata\n\r\xff\xc3", [13]))  # a blank line's CR not at the chunk's end
@example((b"data: a\r", [8]))
@example((b"data: a\r\r\ndata: b\r\n\r\n", [9, 10, 20]))
@pytest.mark.slow
def test_the_decoder_fed_in_any_chunks_dispatches_what_the_standard_does(case: tuple[bytes, list[int]]) -> None:
    stream, cuts = case
    assert _decoded(stream, cuts) == reference(stream)


@settings(max_examples=1000, deadline=None)
@given(streams(), st.sampled_from([b"[DONE]", b"message_stop", b"x", b"1"]))
@pytest.mark.slow
def test_with_a_marker_only_events_before_the_first_that_holds_it_are_passed_over(
    case: tuple[bytes, list[int]], marker: bytes
) -> None:
    import ahocorasick_rs

    stream, cuts = case
    wanted = ahocorasick_rs.BytesAhoCorasick([marker])
    every, some = SseDecoder(), SseDecoder()
    all_events, found = [], []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        all_events += every.feed(stream[start:end])
        found += some.feed(stream[start:end], wanted)
    # Each read as it is without the marker (but for the ID, which events passed over don't set), in order,
    # and every one holding the marker read.
    fields = lambda event: (event.type, event.data, event.lines, event.start, event.end)  # noqa: E731
    read = {(event.start, event.end) for event in found}
    assert [fields(e) for e in all_events if (e.start, e.end) in read] == [fields(e) for e in found]
    assert all((e.start, e.end) in read for e in all_events if marker in stream[e.start : e.end])


@settings(max_examples=1000, deadline=None)
@given(streams())
@pytest.mark.slow
def test_each_event_knows_where_its_bytes_are(case: tuple[bytes, list[int]]) -> None:
    stream, _ = case
    for event in decode_events(stream):
        block = stream[event.start : event.end]
        assert tuple(line for line in block.splitlines() if line) == event.lines


def test_a_crlf_split_between_chunks_is_one_line_end_and_a_leading_bom_is_skipped() -> None:
    decoder = SseDecoder()
    events = []
    for piece in (b"\xef", b"\xbb", b"\xbf", b"data: a\r", b"\n", b"\r", b"\n", b"id: 7\r", b"\ndata: b\r\r"):
        events += decoder.feed(piece)
    assert [(e.data, e.id) for e in events] == [(b"a", b""), (b"b", b"7")]
    assert decoder.close() is None


def test_the_event_a_stream_ends_in_is_not_dispatched_but_close_gives_it() -> None:
    decoder = SseDecoder()
    [first] = decoder.feed(b"data: a\n\nevent: x\ndata: b")
    assert first.data == b"a"
    last = decoder.close()
    assert last is not None and (last.type, last.data, last.lines) == (b"x", b"b", (b"event: x", b"data: b"))
    assert [e.data for e in decode_events(b"data: a\n\nevent: x\ndata: b")] == [b"a", b"b"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["x", "{}", " ", "é", "a:b", ""]), max_size=30), st.booleans())
@example(["x"], False)  # one event: its first piece is its last
def test_data_of_an_openai_shaped_stream_is_what_the_decoder_reads(values: list[str], odd: bool) -> None:
    body = b"".join(b"data: " + value.encode() + b"\n\n" for value in values)
    if odd and body:  # any other line: read by the decoder
        body = body.replace(b"\n\n", b"\n: c\n\n", 1)
    assert data_of(body) == [e.data for e in decode_events(body) if e.dispatched]
    if not odd:
        assert data_of(body) == [value.encode() for value in values]


def _protocol_streams(rng: random.Random) -> bytes:
    newline = rng.choice(["\n", "\r\n", "\r"])
    kinds = [
        (None, {"choices": [{"delta": {"content": "a [DONE] message_stop finishReason"}}]}),
        (None, {"candidates": [{"content": {}}]}),
        ("content_block_delta", {"type": "content_block_delta"}),
        ("message_stop", {"type": "message_stop"}),
        (None, {"type": "response.completed"}),
        (None, {"candidates": [{"finishReason": "STOP"}]}),
        (None, "[DONE]"),
        ("message", {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}),
        ("message", {"jsonrpc": "2.0", "id": 3, "result": {"content": []}}),
    ]
    weights = [40, 10, 10, 1, 1, 1, 1, 5, 1]
    return sse(rng.choices(kinds, weights, k=rng.randint(1, 300)), newline).replace(b"\n\n\n", b"\n\n")


def test_protocol_end_passing_over_events_says_what_reading_every_line_says() -> None:
    rng = random.Random(17)
    for _ in range(300):
        stream = _protocol_streams(rng)
        watcher, reference_watcher = ProtocolEnd(), ProtocolEnd()
        position = 0
        while position < len(stream):
            step = stream[position : position + rng.choice([1, 7, 300, 5000, 40_000])]
            watcher.feed(step)
            for byte in range(len(step)):  # one byte at a time: no event is ever passed over
                reference_watcher.feed(step[byte : byte + 1])
            position += len(step)
            assert watcher.ended is reference_watcher.ended, (stream, position)


def test_the_protocol_end_is_read_by_the_standards_rules() -> None:
    def ends(stream: bytes) -> bool:
        watcher = ProtocolEnd()
        watcher.feed(stream)
        return watcher.ended

    assert ends(b"\xef\xbb\xbfdata: [DONE]\n\n")  # a byte order mark before it
    assert ends(b"data: x\rdata: y\r\rdata: [DONE]\r\r")  # CR line ends
    assert ends(b'event: message_stop\ndata: {"type": "message_stop"}\n\n')
    assert not ends(b"data: [DONE]\n")  # its blank line hasn't come
    assert not ends(b": data: [DONE]\n\n")  # a comment


def test_an_mcp_servers_answer_ends_its_stream_and_its_requests_and_notifications_do_not() -> None:
    """An MCP server answers a POSTed request with an event stream whose last event is the JSON-RPC response
    (its client closes the stream there); requests and notifications it sends before that (a progress
    notification, a sampling request with its own id) don't end it."""

    def ends(*messages: dict[str, object]) -> bool:
        watcher = ProtocolEnd()
        watcher.feed(b"".join(b"event: message\r\ndata: " + json.dumps(m).encode() + b"\r\n\r\n" for m in messages))
        return watcher.ended

    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    sampling = {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {}}
    assert not ends(progress, sampling)
    assert ends(progress, {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}})
    assert ends({"jsonrpc": "2.0", "id": "a", "error": {"code": -32601, "message": "no such method"}})
    assert not ends({"jsonrpc": "1.0", "id": 2, "result": {}})  # not JSON-RPC 2.0
    # A GET's stream (MCP's older SSE transport answers every POST on it) goes on after a response.
    on_a_get = ProtocolEnd(answers_post=False)
    on_a_get.feed(b'event: message\ndata: {"jsonrpc": "2.0", "id": 1, "result": {}}\n\n')
    assert not on_a_get.ended


def test_parse_sse_shows_every_event_with_its_lines() -> None:
    text = "event: a\ndata: x\ndata: y\n\n: ping\n\nid: 3\nretry: 10\ndata:  z\r\n\r\nevent: cut\ndata: w"
    assert parse_sse(text) == [
        SseEvent("a", "x\ny", "event: a | data: x | data: y"),
        SseEvent("", "", ": ping"),
        SseEvent("", " z", "id: 3 | retry: 10 | data:  z"),
        SseEvent("cut", "w", "event: cut | data: w"),
    ]


def test_parse_sse_skips_a_leading_byte_order_mark() -> None:
    """Fixed: the first event's ``data`` field was read as a field named "\\ufeffdata", so a view of a
    stream starting with a BOM lost the first event's data (and ``reply_of`` its text)."""
    [event] = parse_sse('\ufeffdata: {"choices": [{"delta": {"content": "hi"}}]}\n\n')
    assert json.loads(event.data)["choices"][0]["delta"]["content"] == "hi"


def test_parse_sse_ends_an_event_at_any_blank_line() -> None:
    """Fixed: a blank line made of two different line ends (LF then CRLF, CRLF then CR...) did not end the
    event, so the view showed two events as one, whose data then read as no JSON."""
    for blank in ("\n\r\n", "\r\n\r", "\n\r", "\r\r\n"):
        events = parse_sse(f"data: 1{blank}data: 2\n\n")
        assert [event.data for event in events] == ["1", "2"], repr(blank)
