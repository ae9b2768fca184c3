"""Recording per chunk in batches: the caller gets every chunk at once, the cassette's copy is redacted and
written a batch at a time, and what the cassette gets is what taking the chunks in one by one gives."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import httpx2
import pytest
from upstream import Received, Reply, Upstream, split_events
from vendors import MODEL, SDKS, sse

import vcr_transport
from vcr_transport._core.format._format import event_lines
from vcr_transport._core.rules._redaction import PLACEHOLDER, Redactor
from vcr_transport._core.rules._stream import BATCH, StreamRedactor
from vcr_transport._storage import read_cassette

SECRET = "sk-proj-BATCHEDabcdefghijklmnopqrstuvwxyz0123"
LEARNED = "opaque-LEARNED-value-0123456789"

# Plain pieces of text, and pieces that set off (or nearly set off) each rule of the redactor.
PLAIN = [" word", " tok", " and", "\n", "\n\n", "\r\n", "data: ", '{"a": "', '"}', ", ", "é", "日本", "✓"]
TRIGGERS = [
    *("sk-", "sk", "SK", "AC", "ac", "ghp_", "AKIA", "eyJ", "xox", "hf_", "Bearer ", "basic ", "bearer x1y2z3w4v5"),
    *("token", '"token": "', '"api_key": "', '"Authorization": "', "key", "secret", "password", "pass word"),
    *("%41", "%2", "\\u0041", "\\u00", "\\/", "\\n", "https://", "u:p@", "?", "&", "=", "?api_key=", "#token="),
    *("\u212a", "\u0130", "İ", LEARNED, LEARNED[:9], SECRET, SECRET[:12], "PRIVATE KEY-", "AccountKey="),
]
BAD_UTF8 = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x84"]


def _redactor(learned: bool) -> Redactor:
    redactor = Redactor()
    if learned:
        redactor.learn(LEARNED)
    return redactor


def _data(rng: random.Random) -> bytes:
    parts = [rng.choice(PLAIN if rng.random() < 0.85 else TRIGGERS).encode() for _ in range(rng.randint(1, 12))]
    if rng.random() < 0.1:
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(BAD_UTF8))
    return b"".join(parts)


@pytest.mark.slow
def test_could_redact_of_bytes_answers_as_of_their_text_and_a_no_changes_nothing() -> None:
    """The one prefilter, asked of bytes (a batch of chunks) or of their text: the same answer, and a no
    means that redacting the text or any piece of it changes nothing."""
    rng = random.Random(20261130)
    cleared = 0
    for _ in range(3000):
        learned = rng.random() < 0.5
        data = _data(rng)
        text = data.decode("utf-8", "surrogateescape")
        answer = _redactor(learned).could_redact(data)
        assert answer == _redactor(learned).could_redact(text), data
        if not answer:
            cleared += 1
            start = rng.randrange(len(text) + 1)
            piece = text[start : rng.randint(start, len(text))]
            for sample in (text, piece):
                assert _redactor(learned).redact_text(sample, response=True) == sample, (data, sample)
    assert cleared > 1000  # enough texts are cleared for the claim to be tested


class _OneByOne(StreamRedactor):
    """Every chunk taken in on its own, with the full rules: the reference for the batches."""

    def _clear(self, batch: list[tuple[bytes, Any]]) -> bool:
        return False


def _run(redactor: StreamRedactor, chunks: list[bytes], seed: int = 0) -> list[tuple[bytes, Any]]:
    """The chunks taken in as the recorder hands them over: in batches (here of random sizes, a batch of one
    chunk now and then), the last with ``finish``."""
    rng = random.Random(seed)
    tagged = list(enumerate(chunks))
    out: list[tuple[bytes, Any]] = []
    while tagged:
        size = rng.choice([1, 2, 10, 100, 400])
        batch, tagged = tagged[:size], tagged[size:]
        batch = [(chunk, tag) for tag, chunk in batch]
        if not tagged and rng.random() < 0.5:
            return out + redactor.finish(batch)
        out += redactor.feed_many(batch)
    return out + redactor.finish()


def _stream(rng: random.Random) -> bytes:
    """SSE events of openai text deltas, some carrying a piece of a secret, with a long line now and then."""
    events = []
    count = rng.randint(400, 1500)
    secret_at, long_at = rng.randrange(count), rng.randrange(2 * count)  # a long line in half the streams
    for number in range(count):
        text = _data(rng).decode("utf-8", "replace") if rng.random() < 0.05 else f" word{number}"
        if number == secret_at:
            text = SECRET[: rng.randint(1, 20)]
        elif number == secret_at + 1:
            text = SECRET[len(SECRET) - rng.randint(1, 20) :]
        event = {"choices": [{"index": 0, "delta": {"content": text}}]}
        events.append(b"data: " + json.dumps(event, ensure_ascii=rng.random() < 0.5).encode() + b"\n\n")
        if number == long_at:
            events.append(b"x" * rng.randint(60_000, 140_000) + b"\n")
    return b"".join(events)


@pytest.mark.parametrize("seed", range(6))
def test_batches_give_the_cassette_what_one_chunk_at_a_time_gives(seed: int) -> None:
    rng = random.Random(seed)
    body = _stream(rng)
    cuts = sorted(rng.sample(range(1, len(body)), rng.randint(len(body) // 4000, len(body) // 90)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    chunks.insert(rng.randrange(len(chunks)), b"")
    for options in ({}, {"deltas": False}, {"max_hold": rng.randint(50_000, 300_000)}):
        learned = rng.random() < 0.5
        batched = _run(StreamRedactor(_redactor(learned), **options), chunks, seed)
        assert batched == _run(_OneByOne(_redactor(learned), **options), chunks, seed), options
        assert [tag for _, tag in batched] == list(range(len(chunks)))


def _long_openai_reply(received: Received) -> Reply:
    """A stream of many small events, over several batches, with a secret spread over three deltas."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": MODEL}
    texts = [f" word{n}" for n in range(1500)]
    texts[900:900] = [" " + SECRET[:10], SECRET[10:25], SECRET[25:]]
    events: list[tuple[str | None, Any]] = [
        (None, {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}) for text in texts
    ]
    events += [(None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), (None, "[DONE]")]
    return Reply(200, [("content-type", "text/event-stream")], split_events(sse(events)))


@pytest.mark.parametrize("sdk", [s for s in SDKS if s.name == "openai" and s.library is httpx2], ids=lambda s: s.id)
def test_a_long_stream_is_recorded_by_batches_and_its_secret_removed_from_every_piece(
    sdk: Any, upstream: Upstream, cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.routes["/v1/chat/completions"] = _long_openai_reply
    batches: list[list[tuple[bytes, Any]]] = []
    feed_many = StreamRedactor.feed_many

    def counted(self: StreamRedactor, chunks: list[tuple[bytes, Any]]) -> list[tuple[bytes, Any]]:
        batches.append(list(chunks))
        return feed_many(self, chunks)

    finish = StreamRedactor.finish

    def counted_finish(self: StreamRedactor, last: list[tuple[bytes, Any]]) -> list[tuple[bytes, Any]]:
        batches.append(list(last))  # the last batch goes with the finish
        return finish(self, last)

    monkeypatch.setattr(StreamRedactor, "feed_many", counted)
    monkeypatch.setattr(StreamRedactor, "finish", counted_finish)
    transport = vcr_transport.RecordingTransport(
        httpx2.HTTPTransport(), cassette, async_inner=httpx2.AsyncHTTPTransport()
    )
    [live] = sdk.run(transport, upstream.url, [("stream", ["go"])])
    assert SECRET in "".join(live)  # the caller gets the stream as it came
    chunks = sum(len(batch) for batch in batches)
    assert len(batches) < chunks / 20, "the cassette's copy is taken in by batches, not chunk by chunk"
    biggest = max(len(data) for batch in batches for data, _ in batch)
    assert all(sum(len(data) for data, _ in batch) < BATCH + biggest for batch in batches), "memory stays bounded"
    [call] = read_cassette(cassette).calls
    recorded = b"".join(call.chunks).decode()
    assert call.outcome == "complete"
    assert len(call.chunks) == chunks, "every chunk keeps its boundary"
    for piece in (SECRET[:10], SECRET[10:25], SECRET[25:]):
        assert piece not in recorded
    assert PLACEHOLDER in recorded


def test_the_held_part_is_released_where_one_chunk_at_a_time_releases_it() -> None:
    """A stream longer than ``max_hold`` is searched for deltas per held part: the parts must be the same."""
    texts = [f" word{n}" for n in range(400)]
    texts[200:200] = [" s", SECRET[1:]]  # neither piece is anything the line pass could remove
    chunks = [b"data: " + json.dumps({"choices": [{"delta": {"content": t}}]}).encode() + b"\n\n" for t in texts]
    boundary = sum(map(len, chunks[:201]))  # the secret's first piece is in chunk 200, the rest in chunk 201
    results = set()
    for max_hold in (boundary - 1, boundary - len(chunks[200]) - 1, boundary + len(chunks[201])):
        batched = _run(StreamRedactor(Redactor(), max_hold=max_hold), chunks)
        assert batched == _run(_OneByOne(Redactor(), max_hold=max_hold), chunks), max_hold
        results.add(PLACEHOLDER.encode() in b"".join(piece for piece, _ in batched))
    assert results == {True, False}, "a part cut between the pieces leaves them; one holding both removes them"


def test_event_offsets_are_the_arrivals_from_the_start_rounded_half_up_to_the_microsecond() -> None:
    """Arrivals are integer nanoseconds; ``t`` is the offset in seconds, rounded to the microsecond (exact
    ties upward), whatever the chunk (text, or base64 when it isn't UTF-8), and at most ``MAX_SECONDS`` (a
    later arrival is written at the bound, so that the file reads back)."""
    from decimal import ROUND_HALF_UP, Decimal

    from vcr_transport._core.format._format import MAX_SECONDS

    started = 987_654_321_000_123
    gaps = [0, 1, 499, 500, 501, 1_499, 1_500, 999_999_999, 3_600_000_000_500, 7_000_000_000_499]
    gaps += [random.Random(5).randrange(10**13) for _ in range(200)]
    chunks = [(b"\xff\xfe" if n % 3 == 0 else b"text %d" % n, started + gap) for n, gap in enumerate(gaps)]
    lines = event_lines(4, 10, chunks, started).splitlines()
    assert len(lines) == len(chunks)
    for n, (line, (chunk, arrived)) in enumerate(zip(lines, chunks, strict=True)):
        event = json.loads(line)
        micro = (Decimal(arrived - started) / 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP)
        assert event["t"] == min(float(micro / 1_000_000), MAX_SECONDS), (n, event["t"])
        assert (event["call_index"], event["event_index"]) == (4, 10 + n)
        assert ("base64" in event) == (chunk == b"\xff\xfe")


def test_event_lines_are_written_in_groups_that_each_reach_the_batch_size(tmp_path: Path) -> None:
    """A held stream comes out whole: its events are encoded and written a group at a time, each group
    closed by the chunk that brings it to ``BATCH`` bytes, and the file holds every chunk once, in order."""
    sizes = [random.Random(7).choice([1, 10, 700, 5_000, BATCH - 1, BATCH, 3 * BATCH]) for _ in range(300)]
    body = [b"x" * size for size in sizes]
    recorder = vcr_transport.CassetteRecorder(tmp_path / "groups.jsonl")
    call = recorder.start("GET", "https://api.test/stream", [], b"")
    call.response(200, [("content-type", "text/event-stream")], "HTTP/1.1")
    groups: list[list[int]] = []
    writer = call.recording._writer
    assert writer is not None, "the request line opened the file"
    write_lines = writer.write_lines

    def counting(lines: bytes, flush: bool = False) -> None:
        groups.append([len(json.loads(line)["text"]) for line in lines.splitlines() if b'"event"' in line])
        write_lines(lines, flush)

    writer.write_lines = counting  # type: ignore[method-assign]
    for chunk in body:
        call.chunk(chunk)
    call.end("complete")
    recorder.close()
    assert [size for group in groups for size in group] == sizes
    for group in groups[:-1]:
        assert sum(group) >= BATCH and sum(group[:-1]) < BATCH, group
    (recorded,) = read_cassette(tmp_path / "groups.jsonl").calls
    assert recorded.chunks == body


def test_chunks_taken_after_the_call_ended_are_not_recorded(tmp_path: Path) -> None:
    """A chunk that comes after the call's end (a stream closed from another thread while it is read)
    writes nothing after call_end, however many come: they are dropped a batch at a time."""
    recorder = vcr_transport.CassetteRecorder(tmp_path / "late.jsonl")
    call = recorder.start("GET", "https://api.test/stream", [], b"")
    call.response(200, [("content-type", "text/plain")], "HTTP/1.1")
    call.chunk(b"before\n")
    call.end("closed_early")
    for _ in range(3 * BATCH // 1000):
        call.chunk(b"y" * 1000)
    assert len(call.core.pending) <= BATCH // 1000 + 1  # bounded: each batch of them is dropped
    recorder.close()
    (recorded,) = read_cassette(tmp_path / "late.jsonl").calls
    assert (recorded.chunks, recorded.outcome) == ([b"before\n"], "closed_early")


@pytest.mark.parametrize("events", [10, 9_000])  # a few KB; past the bytes after which chunks are watched
@pytest.mark.parametrize("done", [True, False])
def test_a_stream_stopped_after_its_protocol_ended_is_complete_however_long(
    tmp_path: Path, events: int, done: bool
) -> None:
    """The protocol's end is looked for only when a stream stops before its own end, over every chunk
    recorded (those already shown to the watcher, past a MiB, and the rest)."""
    recorder = vcr_transport.CassetteRecorder(tmp_path / "stop.jsonl")
    call = recorder.start("POST", "https://api.test/v1/chat/completions", [], b"{}")
    call.response(200, [("content-type", "text/event-stream")], "HTTP/1.1")
    deltas = [(None, {"choices": [{"index": 0, "delta": {"content": f" word{n}" * 20}}]}) for n in range(events)]
    body = sse([*deltas, (None, "[DONE]" if done else "[NOT DONE]")])
    assert done == body.endswith(b"data: [DONE]\n\n")
    for chunk in split_events(body):
        call.chunk(chunk)
    call.stop()
    recorder.close()
    (recorded,) = read_cassette(tmp_path / "stop.jsonl").calls
    assert recorded.outcome == ("complete" if done else "closed_early")
    assert b"".join(recorded.chunks) == body


# --- the shortcuts: a body handed to finish, a pending line asked again, delta text read by msgspec -----

VALUE = "opaque-LATE-learned-0123456789"


def _at_once(redactor: StreamRedactor, chunks: list[bytes]) -> list[tuple[bytes, Any]]:
    return redactor.finish([(chunk, index) for index, chunk in enumerate(chunks)])


@pytest.mark.parametrize("seed", range(3))
def test_a_body_handed_to_finish_is_recorded_as_chunk_by_chunk(seed: int) -> None:
    rng = random.Random(seed)
    taken = 0
    for _ in range(400):
        chunks = [_data(rng) for _ in range(rng.randint(1, 4))]
        learned = rng.random() < 0.5
        options: dict[str, Any] = rng.choice([{}, {"deltas": False}])
        at_once = _at_once(StreamRedactor(_redactor(learned), **options), chunks)
        assert at_once == _run(_OneByOne(_redactor(learned), **options), chunks), chunks
        taken += at_once != [(chunk, index) for index, chunk in enumerate(chunks)]
    assert taken > 0, "some bodies had something redacted"


def test_a_value_learned_after_a_line_was_found_clear_is_still_removed_from_it() -> None:
    redactor = Redactor()
    stream = StreamRedactor(redactor, deltas=False)
    line = f'{{"note": "{VALUE}'.encode()
    assert stream.feed_many([(line, 0)]) == []  # found clear, and pending: no line break yet
    redactor.learn(VALUE)  # another call's header, say
    [(recorded, tag)] = stream.finish()
    assert VALUE.encode() not in recorded and PLACEHOLDER.encode() in recorded
    assert tag == 0


def test_a_line_found_clear_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A body whose text no rule could change passes as it came, never redacted line by line; a pending
    line is asked again at the end, so a value learned since that it doesn't hold changes nothing."""
    redactor = Redactor()
    searched: list[str] = []
    redact_text = Redactor.redact_text

    def counted(self: Redactor, text: str, *, response: bool = False) -> str:
        searched.append(text)
        return redact_text(self, text, response=response)

    monkeypatch.setattr(Redactor, "redact_text", counted)
    stream = StreamRedactor(redactor, deltas=False)
    body = b'{"choices": [{"message": {"content": "' + b"word " * 200 + b'"}}]}'
    assert stream.finish([(body[:100], 0), (body[100:], 1)]) == [(body[:100], 0), (body[100:], 1)]
    assert searched == []
    stream = StreamRedactor(redactor, deltas=False)
    stream.feed_many([(body, 0)])
    redactor.learn(VALUE)
    assert stream.finish() == [(body, 0)]
    assert searched == []


def _chat_stream(rng: random.Random) -> bytes:
    """openai chat chunks, now and then one the msgspec reading leaves to the general one (tool calls, two
    choices, an escaped lone surrogate, a huge index, other events, other lines)."""
    events: list[tuple[str | None, Any]] = []
    odd = rng.random() < 0.5  # else every event is one the msgspec reading takes
    for number in range(rng.randint(1, 60)):
        roll = rng.random() if odd else 0.5
        delta: dict[str, Any] = {"content": rng.choice([f" w{number}", "é", "\\u00e9", "", SECRET[:9]])}
        choice: dict[str, Any] = {"index": rng.choice([0, 0, 1]), "delta": delta}
        if roll < 0.03:
            delta["tool_calls"] = [{"index": 0, "function": {"arguments": '{"a": 1'}}]
        elif roll < 0.05:
            choice = {"index": 2**70, "delta": delta}
        event: Any = {"choices": [choice]}
        if roll > 0.97:
            event = {"choices": [choice, {"index": 1, "delta": {"content": "b"}}]}
        elif 0.95 < roll <= 0.97:
            event = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "t"}}
        elif 0.93 < roll <= 0.95:
            event = {"candidates": [{"content": {"parts": [{"text": "g"}]}}]}
        events.append((None, event))
    body = sse([*events, (None, "[DONE]")] if rng.random() < 0.8 else events)
    if odd and rng.random() < 0.1:
        body = body.replace(b"\\u00e9", b"\\ud800")
    if odd and rng.random() < 0.1:
        body = b": keep-alive\n\n" + body
    return body


def test_delta_text_read_by_msgspec_is_what_the_general_reading_finds() -> None:
    from vcr_transport._core.rules._stream import delta_channels, delta_texts

    rng = random.Random(24)
    for _ in range(2000):
        body = _chat_stream(rng)
        general = {channel: [value for _, _, value in pieces] for channel, pieces in delta_channels(body).items()}
        assert delta_texts(body) == general, body


# --- the bytes prefilter, attacked ------------------------------------------------------------------------


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
