"""A call's recording in the core, with no file and no HTTP library: bytes and header pairs in, encoded lines
out, which read back as the call."""

from __future__ import annotations

import gzip

import pytest

from vcr_transport._core.engine._call_recording import BATCH, CallBook, CallRecording, OlderCassette
from vcr_transport._core.format._format import Cassette, encode_line, header_line
from vcr_transport._core.rules._redaction import PLACEHOLDER, Redactor

SECRET = "sk-proj-COREabcdefghijklmnopqrstuvwxyz0123456789"
SSE = [("content-type", "text/event-stream")]


def _read(lines: list[bytes]) -> Cassette:
    return Cassette.parse(encode_line(header_line()) + b"".join(lines), "core.jsonl")


def _call(book: CallBook | None = None) -> tuple[CallRecording, list[bytes]]:
    call = CallRecording(book or CallBook(), Redactor(), started=1_000)
    headers = [("authorization", f"Bearer {SECRET}"), ("content-type", "application/json")]
    return call, call.request("POST", "https://api.test/v1/chat", headers, b'{"q": 1}')


def test_a_call_is_its_lines() -> None:
    call, lines = _call()
    lines += call.response(200, SSE, "HTTP/1.1")
    chunks = [b"data: one\n\n", f"data: {SECRET}\n\n".encode(), b"\xff not text", b"data: [DONE]\n\n"]
    for number, chunk in enumerate(chunks):
        if call.take(chunk, 2_000 + 1_000 * number):
            lines += call.batch()
    assert not call.ended
    assert call.close("complete")
    lines += call.end_lines()
    assert not call.close("complete"), "an ended call stays ended"
    [recorded] = _read(lines).calls
    assert (recorded.status, recorded.outcome, recorded.event_total) == (200, "complete", len(chunks))
    assert recorded.body == {"json": {"q": 1}} and SECRET not in str(recorded.request_headers)
    assert recorded.chunks[2] == b"\xff not text" and PLACEHOLDER.encode() in recorded.chunks[1]
    assert recorded.offsets == [0.000001, 0.000002, 0.000003, 0.000004]


def test_chunks_are_taken_in_batches_and_written_in_groups() -> None:
    call, lines = _call()
    lines += call.response(200, [("content-type", "text/plain")], "HTTP/1.1")
    chunk = b"x" * 1000
    batches = [number for number in range(3 * BATCH // 1000) if call.take(chunk, 1_000 + number)]
    assert len(batches) == 2, "a batch is full each time the chunks taken reach BATCH bytes"
    call.close("closed_early")
    ends = call.end_lines()
    assert len(ends) == 3, "a held body comes out in groups of about BATCH bytes, the call's end with the last"
    [recorded] = _read(lines + ends).calls
    assert recorded.chunks == [chunk] * (3 * BATCH // 1000) and recorded.outcome == "closed_early"


def test_nothing_is_written_after_the_end_nor_once_the_recording_is_broken() -> None:
    call, lines = _call()
    lines += call.response(200, SSE, "HTTP/1.1")
    call.close("error", ("httpx2.ReadError", "peer reset"))
    call.take(b"data: late\n\n", 5_000)
    assert call.batch() == [] and call.pending == []
    book = CallBook()
    broken, _ = _call(book)
    book.break_down("a write failed")
    assert broken.response(200, SSE, "HTTP/1.1") == []
    broken.take(b"data: x\n\n", 5_000)
    assert broken.batch() == [] and broken.pending == [], "what a broken recording takes is dropped"


def test_a_stream_that_stopped_after_its_protocol_ended_says_so() -> None:
    call, _ = _call()
    call.response(200, SSE, "HTTP/1.1")
    call.take(b"data: one\n\ndata: [DO", 2_000)
    call.batch()
    assert not call.protocol_ended()
    call.take(b"NE]\n\n", 3_000)
    call.batch()
    assert call.protocol_ended() and call.body_ended()


def test_a_body_closed_once_its_content_length_had_arrived_had_ended() -> None:
    """MCP's client closes the empty 202 that answers a notification without reading it: the whole body
    (none) had come. A body closed before its declared length arrived had not."""
    empty, _ = _call()
    empty.response(202, [("content-type", "application/json"), ("content-length", "0")], "HTTP/1.1")
    assert empty.body_ended()
    partial, _ = _call()
    partial.response(200, [("content-type", "application/json"), ("content-length", "8")], "HTTP/1.1")
    partial.take(b'{"a": ', 1_000)
    assert not partial.body_ended()
    partial.take(b"1}", 2_000)
    assert partial.body_ended()
    undeclared, _ = _call()
    undeclared.response(200, [("content-type", "application/json")], "HTTP/1.1")
    assert not undeclared.body_ended()


# --- never worse: the one rule of what a recording must be to be saved -----------------------------------


def _book(*calls: tuple[int | None, str]) -> CallBook:
    """A book whose calls got these (status, outcome)."""
    book = CallBook()
    for status, outcome in calls:
        record = book.open_call()
        record.status = status
        CallBook.end(record, outcome, "httpx2.ReadError: cut" if outcome == "error" else "")
    return book


COMPLETE_OLDER = OlderCassette({0: 200, 1: 200}, complete=True)
INCOMPLETE_OLDER = OlderCassette({0: 200, 1: 200}, complete=False)


def test_never_worse_than_a_complete_older_cassette() -> None:
    cases = [
        # (calls, older, saved?, what the reason says)
        (((200, "complete"),), COMPLETE_OLDER, True, ""),
        (((200, "closed_early"),), COMPLETE_OLDER, False, "call 0 ended closed_early"),
        (((200, "error"),), COMPLETE_OLDER, False, "call 0 ended error (httpx2.ReadError: cut)"),
        (((200, "closed_early"), (200, "complete")), COMPLETE_OLDER, False, "call 0 ended closed_early"),
        (((200, "closed_early"),), INCOMPLETE_OLDER, True, ""),
        (((200, "closed_early"),), None, True, ""),
        (((503, "complete"),), COMPLETE_OLDER, False, "call 0 got status 503, where the older cassette's got 200"),
        (((529, "complete"),), COMPLETE_OLDER, False, "status 529"),
        (((429, "complete"),), COMPLETE_OLDER, False, "status 429"),
        (((503, "complete"), (200, "complete")), COMPLETE_OLDER, True, ""),  # a retry that succeeded
        (((200, "complete"), (503, "complete")), COMPLETE_OLDER, False, "call 1 got status 503"),
        (((503, "complete"),), OlderCassette({0: 500}, complete=True), True, ""),  # no success to lose
        (((503, "complete"),), None, True, ""),
        (((401, "complete"),), None, False, "refused for its credentials"),
        (((None, "error"),), None, False, "got no response"),
        (((None, "error"), (200, "complete")), COMPLETE_OLDER, True, ""),  # a connect error, retried
    ]
    for calls, older, saved, said in cases:
        book = _book(*calls)
        reason = book.why_not_saved(keep_failures=False, older=older)
        assert (reason == "") is saved, (calls, older, reason)
        assert said in reason, (calls, reason)
        assert book.why_not_saved(keep_failures=True, older=older) == "", "keep_failures saves it"


def test_the_older_cassette_is_asked_only_about_a_call_that_could_be_worse() -> None:
    assert not _book((200, "complete"), (401, "complete"), (None, "error")).asks_older
    assert _book((200, "closed_early")).asks_older
    assert _book((503, "complete")).asks_older


def test_a_response_that_decodes_past_the_bound_breaks_the_recording_and_writes_nothing_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A gzip body that can't be searched decoded is not written as it came: it may hold a secret."""
    from vcr_transport._core.format import _bodies

    monkeypatch.setattr(_bodies, "MAX_DECODED_BYTES", 1024 * 1024, raising=False)
    book = CallBook()
    call, lines = _call(book)
    lines += call.response(200, [("content-type", "text/plain"), ("content-encoding", "gzip")], "HTTP/1.1")
    body = gzip.compress(f"key {SECRET}\n".encode() + b" " * (2 * 1024 * 1024), mtime=0)
    call.take(body, 2_000)
    assert call.close("complete")
    assert call.end_lines() == [] and call.batch() == []
    assert "call 0: the response's gzip body decodes past 1,048,576 bytes" in book.broken
    assert "httpx.MockTransport" in book.broken_fix
