"""Cassette files: refused loudly when they can't be replayed faithfully, written safely."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import httpx2
import pytest
from helpers import call_lines

import vcr_transport
from vcr_transport._storage import CassetteWriter, read_cassette

HEADER = {"type": "header", "format_version": 1}
REQUEST = {
    "type": "request",
    "call_index": 0,
    "method": "GET",
    "url": "https://a.test/x",
    "headers": [["accept", "*/*"]],
    "body": None,
}
RESPONSE = {
    "type": "response",
    "call_index": 0,
    "status": 200,
    "headers": [["content-type", "text/plain"]],
    "http_version": "HTTP/1.1",
}
EVENT = {"type": "event", "call_index": 0, "event_index": 0, "t": 0.001, "text": "hello"}
END = {"type": "call_end", "call_index": 0, "event_count": 1, "outcome": "complete"}
GOOD = [HEADER, REQUEST, RESPONSE, EVENT, END]


@pytest.fixture(autouse=True, params=["in-memory", "lazy"])
def loading(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs twice: chunks held in memory, and chunks read from the file when replayed."""
    import vcr_transport._storage as storage

    if request.param == "lazy":
        monkeypatch.setattr(storage, "LAZY_LOAD_BYTES", 0)
    return request.param  # type: ignore[no-any-return]


def write(path: Path, lines: list[object], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + tail)
    return path


def refused(path: Path) -> vcr_transport.CassetteError:
    with pytest.raises(vcr_transport.CassetteError) as caught:
        vcr_transport.ReplayTransport(path)
    assert str(path) in str(caught.value)
    return caught.value


def test_format_version_is_one() -> None:
    assert vcr_transport.FORMAT_VERSION == 1


def test_a_good_cassette_replays(cassette: Path, loading: str) -> None:
    write(cassette, GOOD)
    with httpx2.Client(transport=vcr_transport.ReplayTransport(cassette)) as client:
        assert client.get("https://a.test/x").text == "hello"
    call = read_cassette(cassette).calls[0]
    assert (call.lazy is not None) == (loading == "lazy")
    assert list(call.events) == [b"hello"] and call.size == 5


def test_unknown_optional_header_keys_are_ignored(cassette: Path) -> None:
    write(cassette, [{**HEADER, "future_metadata": {"x": 1}}, *GOOD[1:]])
    assert len(read_cassette(cassette).calls) == 1


@pytest.mark.parametrize(
    ("lines", "tail", "line", "words"),
    [
        ([{**HEADER, "format_version": 2}, *GOOD[1:]], "", 1, "format_version 2 is not supported"),
        ([{"type": "header"}, *GOOD[1:]], "", 1, "format_version None is not supported"),
        (GOOD[1:], "", 1, "line 1 is not a header line"),
        ([*GOOD[:3], {**EVENT, "type": "telemetry"}, *GOOD[3:]], "", 4, "unknown line type 'telemetry'"),
        ([*GOOD[:3], HEADER, *GOOD[3:]], "", 4, "a second header line"),
        (GOOD[:4], '{"type": "call_end", "call_in', 5, "the last line is cut off"),
        (GOOD, "not json\n", 6, "not valid JSON"),
        (GOOD[:4], "", 2, "call 0 has no call_end line"),
        ([*GOOD[:4], {**END, "event_count": 3}], "", 5, "event_count 3 but has 1 events"),
        ([*GOOD[:3], {**EVENT, "event_index": 4}, END], "", 4, "event_index 4 of call 0, expected 0"),
        ([*GOOD[:3], {k: v for k, v in EVENT.items() if k != "call_index"}, END], "", 4, "malformed event line"),
        ([*GOOD[:3], {**EVENT, "text": None, "base64": "!!"}, END], "", 4, "malformed event line"),
        ([*GOOD, {**EVENT}], "", 6, "after its call_end"),
        ([HEADER, RESPONSE], "", 2, "call 0 has no request line"),
        ([*GOOD[:4], {**END, "outcome": "fine"}], "", 5, "unknown outcome 'fine'"),
    ],
    ids=[
        "wrong-version",
        "no-version",
        "no-header",
        "unknown-type",
        "second-header",
        "cut-off-last-line",
        "malformed-json",
        "missing-call-end",
        "event-count",
        "event-order",
        "missing-field",
        "bad-base64",
        "line-after-end",
        "orphan-response",
        "unknown-outcome",
    ],
)
def test_bad_cassettes_are_refused_naming_file_and_line(
    cassette: Path, lines: list[object], tail: str, line: int, words: str
) -> None:
    write(cassette, lines, tail)
    error = refused(cassette)
    assert error.line == line
    assert f"{cassette}:{line}" in str(error)
    assert words in str(error)


def test_a_missing_cassette_says_how_to_record_it(tmp_path: Path) -> None:
    error = refused(tmp_path / "nope.jsonl")
    assert "no such cassette" in str(error) and "RecordingTransport or in mode 'record'" in str(error)


def test_an_empty_file_is_refused(cassette: Path) -> None:
    cassette.write_text("")
    assert "empty" in str(refused(cassette))


def test_an_incomplete_call_replays_as_recorded_never_as_complete(cassette: Path) -> None:
    write(
        cassette,
        [*GOOD[:4], {**END, "outcome": "error", "error": {"class": "httpx2.ReadError", "message": "peer reset"}}],
    )
    for library in ("httpx", "httpx2"):
        module = __import__(library)
        with module.Client(transport=vcr_transport.ReplayTransport(cassette)) as client:
            with client.stream("GET", "https://a.test/x") as response:
                received = []
                with pytest.raises(module.ReadError, match="peer reset"):
                    for chunk in response.iter_raw():
                        received.append(chunk)
                assert received == [b"hello"]


def test_writer_creates_a_private_file_and_keeps_the_old_one_until_commit(cassette: Path) -> None:
    cassette.write_text("old cassette\n")
    cassette.chmod(0o640)
    writer = CassetteWriter(cassette, HEADER)
    writer.write(REQUEST, flush=True)
    assert cassette.read_text() == "old cassette\n"
    partial = writer.temporary.read_text().splitlines()
    assert [json.loads(line)["type"] for line in partial] == ["header", "request"]
    assert stat.S_IMODE(os.stat(writer.temporary).st_mode) == 0o600
    for line in GOOD[2:]:
        writer.write(line)
    writer.commit()
    writer.commit()
    assert stat.S_IMODE(os.stat(cassette).st_mode) == 0o640, "the cassette replaced keeps its file's mode"
    assert [json.loads(line)["type"] for line in cassette.read_text().splitlines()] == [
        "header",
        "request",
        "response",
        "event",
        "call_end",
    ]
    assert not writer.temporary.exists()


@pytest.mark.parametrize(
    ("lines", "line", "problem"),
    [
        ([REQUEST], 2, "call 0 has no call_end line"),
        ([REQUEST, {**RESPONSE, "status": "200"}], 3, "malformed response line"),
        ([{**REQUEST, "url": "https://[secret removed]/v1/x"}, RESPONSE, EVENT, END], 2, "malformed request line"),
    ],
    ids=["cut-off", "wrong-type", "unparsable-url"],
)
def test_a_writer_never_puts_in_place_a_file_it_cannot_read_back(
    cassette: Path, lines: list[dict[str, object]], line: int, problem: str
) -> None:
    write(cassette, GOOD)
    before = cassette.read_bytes()
    writer = CassetteWriter(cassette, HEADER)
    for each in lines:
        writer.write(each)
    with pytest.raises(vcr_transport.CassetteError) as caught:
        writer.commit()
    assert caught.value.line == line and problem in caught.value.problem, caught.value
    assert "was not saved" in str(caught.value) and "the older cassette, if any, is unchanged" in str(caught.value)
    assert cassette.read_bytes() == before
    assert list(cassette.parent.glob("*.partial")) == []


def test_recording_over_a_cassette_replaces_it_only_at_close(cassette: Path) -> None:
    write(cassette, GOOD)
    before = cassette.read_bytes()
    transport = vcr_transport.RecordingTransport(
        httpx2.MockTransport(lambda r: httpx2.Response(200, text="new")), cassette
    )
    with httpx2.Client(transport=transport) as client:
        client.get("https://a.test/x")
        assert cassette.read_bytes() == before
    assert b"new" in cassette.read_bytes()
    assert list(cassette.parent.glob("*.partial")) == []


def test_body_storage_forms(cassette: Path) -> None:
    transport = vcr_transport.RecordingTransport(
        httpx2.MockTransport(lambda r: httpx2.Response(200, content=b"\xff\x00")), cassette
    )
    with httpx2.Client(transport=transport) as client:
        client.post("https://a.test/j", json={"b": [1, 2], "a": "é"})
        client.post("https://a.test/t", content=b"plain text", headers={"content-type": "text/plain"})
        client.post("https://a.test/b", content=b"\x89PNG\xff", headers={"content-type": "image/png"})
        client.post("https://a.test/f", data={"user": "ann", "password": "hunter2"})
    requests = [json.loads(line) for line in cassette.read_text().splitlines() if '"request"' in line]
    assert requests[0]["body"] == {"json": {"b": [1, 2], "a": "é"}}
    assert requests[1]["body"] == {"text": "plain text"}
    assert requests[2]["body"] == {"base64": base64.b64encode(b"\x89PNG\xff").decode()}
    assert requests[3]["body"] == {"text": "user=ann&password=[secret removed]"}
    events = [json.loads(line) for line in cassette.read_text().splitlines() if '"event"' in line]
    assert events[0]["base64"] == "/wA="


def test_the_parser_reads_and_refuses_whole_and_line_by_line(cassette: Path) -> None:
    write(cassette, GOOD)
    assert list(read_cassette(cassette).calls[0].events) == [b"hello"]
    write(cassette, GOOD, "{broken\n")
    assert "not valid JSON" in str(refused(cassette))
    cassette.write_bytes(cassette.read_bytes().replace(b"hello", b"hel\xfflo"))
    assert refused(cassette).line == 4


def test_the_owner_of_a_call_is_optional_and_a_string(cassette: Path) -> None:
    write(cassette, GOOD)
    assert read_cassette(cassette).calls[0].owner == ""  # cassettes without owners stay valid
    write(cassette, [HEADER, *call_lines(0, "https://a.test/x", "t.py::test_a")])
    assert read_cassette(cassette).calls[0].owner == "t.py::test_a"
    write(cassette, [HEADER, {**REQUEST, "test": 7}, RESPONSE, EVENT, END])
    error = refused(cassette)
    assert error.line == 2 and "field 'test'" in error.problem
