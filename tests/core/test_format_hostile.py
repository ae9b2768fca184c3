"""Broken and hostile cassettes: every one is refused with a CassetteError naming its line, or replays exactly
what its lines say. Nothing is coerced, nothing hangs, no reader shows a traceback."""

from __future__ import annotations

import base64
import json
import os
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest

import vcr_transport
import vcr_transport._core.format._format as model
from vcr_transport._core.format import _format, _parser
from vcr_transport._exceptions import VcrTransportError
from vcr_transport._storage import read_cassette
from vcr_transport._tools._cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
# The HTTP cassettes (these tests replay them through an httpx2 client; WebSocket sessions have their own tests).
CASSETTES = sorted(p for p in (ROOT / "cassettes").rglob("*.jsonl") if b'"type":"message"' not in p.read_bytes())
SEED = 20_240_611
MUTANTS = 2_000


class Raw(str):
    """A JSON token written as is (Infinity, NaN, 1e999999, deep nesting), not as a string."""


DEEP = Raw("[" * 5000 + "]" * 5000)
WRONG_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    10**30,
    "",
    "x",
    "HTTP/9",
    "http://h:3w753/",
    [],
    {},
    [["a", "b"]],
    [["a", 1]],
    {"ab": 1},
    {"json": 1, "text": "x"},
    {"base64": "!!"},
    Raw("Infinity"),
    Raw("-Infinity"),
    Raw("NaN"),
    Raw("1e999999"),
    Raw("-1e999999"),
    DEEP,
]


def dump(obj: Any) -> bytes:
    """One line as json.dumps writes it, with Raw tokens spliced in unquoted."""
    raws: list[str] = []

    def mark(value: Any) -> Any:
        if isinstance(value, Raw):
            raws.append(str(value))
            return f"\x00raw{len(raws) - 1}\x00"
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        return value

    text = json.dumps(mark(obj), ensure_ascii=False)
    for number, raw in enumerate(raws):
        text = text.replace(f'"\\u0000raw{number}\\u0000"', raw)
    return text.encode()


def _places(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of a line, nested ones too (headers[0][1], body.json..., error.class)."""
    found = [path] if path else []
    if isinstance(obj, dict):
        for key, value in obj.items():
            found += _places(value, (*path, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj[:3]):
            found += _places(value, (*path, index))
    return found


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def mutate(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    lines = data.split(b"\n")[:-1]
    kind = rng.choice(["field"] * 8 + ["truncate", "flip", "delete", "duplicate", "swap", "non-utf8", "remove-key"])
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data))]
    if kind == "flip":
        position = rng.randrange(len(data))
        return kind, data[:position] + bytes([rng.randrange(256)]) + data[position + 1 :]
    if kind == "non-utf8":
        position = rng.randrange(len(data))
        return kind, data[:position] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xfe\xfe"]) + data[position:]
    number = rng.randrange(len(lines))
    if kind == "delete":
        del lines[number]
    elif kind == "duplicate":
        lines.insert(number, lines[number])
    elif kind == "swap":
        other = rng.randrange(len(lines))
        lines[number], lines[other] = lines[other], lines[number]
    else:
        obj = json.loads(lines[number])
        places = _places(obj)
        place = rng.choice(places)
        if kind == "remove-key":
            parent = obj
            for key in place[:-1]:
                parent = parent[key]
            if isinstance(parent, dict):
                del parent[place[-1]]
            else:
                parent.pop(place[-1])
        else:
            _set(obj, place, rng.choice(WRONG_VALUES))
        lines[number] = dump(obj)
        kind = f"{kind} {'.'.join(map(str, place))}"
    return kind, b"".join(line + b"\n" for line in lines)


@dataclass
class Expected:
    """One call as the mutant's own lines say it, read with the standard library's json."""

    method: str = ""
    url: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Any = None
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)
    outcome: str = ""
    error_class: str = ""


def expected_calls(data: bytes) -> list[Expected]:
    calls: dict[int, Expected] = {}
    for line in data.split(b"\n")[1:-1]:
        obj = json.loads(line)
        call = calls.setdefault(obj["call_index"], Expected())
        if obj["type"] == "request":
            call.method, call.url, call.body = obj["method"], obj["url"], obj.get("body")
            call.headers = [tuple(pair) for pair in obj["headers"]]
        elif obj["type"] == "response":
            call.status, call.response_headers = obj["status"], [tuple(p) for p in obj["headers"]]
        elif obj["type"] == "event":
            call.chunks.append(obj["text"].encode() if "text" in obj else base64.b64decode(obj["base64"]))
        else:
            call.outcome = obj["outcome"]
            call.error_class = obj["error"]["class"] if "error" in obj else ""
    return [calls[index] for index in range(len(calls))]


def _send(client: httpx2.Client, call: Expected) -> httpx2.Response:
    headers = [(k, v) for k, v in call.headers if k.lower() not in ("content-type", "content-length")]
    body = call.body or {}
    if "json" in body:
        content, content_type = json.dumps(body["json"]).encode(), "application/json"
    elif "text" in body:
        content, content_type = body["text"].encode(), "text/plain"
    else:
        content, content_type = base64.b64decode(body.get("base64", "")), "application/octet-stream"
    request = client.build_request(
        call.method, call.url, headers=[*headers, ("content-type", content_type)], content=content
    )
    return client.send(request, stream=True)


def replays_as_written(path: Path, data: bytes) -> str:
    """Replays every call and compares status, headers and chunks with the lines. Returns "identical", or
    "unsendable" when an httpx2 client can't send the recorded request as written (it normalizes the URL)."""
    calls = expected_calls(data)
    transport = vcr_transport.ReplayTransport(path, ignore_headers=["*"], max_retry_after=None, on_mismatch="raise")
    with httpx2.Client(transport=transport) as client:
        for call in calls:
            try:
                response = _send(client, call)
            except vcr_transport.ReplayMismatch:
                return "unsendable"
            except httpx2.InvalidURL:
                return "unsendable"
            except (httpx2.HTTPError, VcrTransportError, OSError, ValueError) as error:
                # a recorded failure before any response: the recorded class, of httpx2 or builtins, or ours
                assert call.status is None and call.outcome == "error", error
                assert type(error).__name__ == call.error_class.rpartition(".")[2] or isinstance(
                    error, vcr_transport.RecordedError
                )
                continue
            assert response.status_code == call.status
            size = sum(map(len, call.chunks))
            headers = [
                (k, str(size) if call.outcome == "complete" and k.lower() == "content-length" else v)
                for k, v in call.response_headers
            ]
            assert response.headers.raw == [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
            received: list[bytes] = []
            try:
                for chunk in response.iter_raw():
                    received.append(chunk)
            except Exception as error:  # the recorded failure, after the recorded chunks
                assert call.outcome == "error", error
                assert type(error).__name__ == call.error_class.rpartition(".")[2] or isinstance(
                    error, vcr_transport.RecordedError
                )
            else:
                assert call.outcome != "error"
            assert received == [chunk for chunk in call.chunks if chunk]
            response.close()
    return "identical"


def cli_refuses(path: Path, capsys: pytest.CaptureFixture[str], listing: bool = True) -> None:
    """verify exits 1 (a problem found), show 2 (trouble: it can't show it), each with a message naming the file,
    never a traceback; list marks it unreadable."""
    for command, expected in ((["verify", str(path)], 1), (["show", str(path)], 2)):
        capsys.readouterr()
        assert cli_main(command) == expected, command
        captured = capsys.readouterr()
        assert str(path) in captured.out + captured.err and "Traceback" not in captured.out + captured.err
    if listing:
        assert cli_main(["list", str(path)]) == 0
        assert "UNREADABLE" in capsys.readouterr().out


@pytest.mark.slow
def test_a_thousand_mutants_are_refused_by_line_or_replay_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(SEED)
    originals = [path.read_bytes() for path in CASSETTES]
    tally: dict[str, int] = {"refused": 0, "identical": 0, "unsendable": 0}
    for number in range(MUTANTS):
        kind, data = mutate(rng, rng.choice(originals))
        path = tmp_path / f"mutant{number}.jsonl"  # a new file each time: truncating one is slow on some disks
        path.write_bytes(data)
        try:
            vcr_transport.ReplayTransport(path)
        except vcr_transport.CassetteError as error:
            assert error.line is not None, (number, kind, str(error))
            assert f"{path}:{error.line}" in str(error)
            tally["refused"] += 1
            cli_refuses(path, capsys, listing=tally["refused"] % 8 == 0)
            continue
        try:
            tally[replays_as_written(path, data)] += 1
        except AssertionError as error:
            raise AssertionError(f"mutant {number} ({kind}) was accepted but replays otherwise: {error}") from None
    print(f"\nmutants {MUTANTS}: {tally}")
    assert sum(tally.values()) == MUTANTS
    assert tally["refused"] > MUTANTS // 2 and tally["identical"] > MUTANTS // 20, tally


@pytest.mark.parametrize(
    ("field_path", "value"),
    [
        (("status",), True),
        (("status",), 1.5),
        (("status",), -1),
        (("status",), 10**30),
        (("status",), Raw("Infinity")),
        (("status",), Raw("1e999999")),
        (("headers",), ""),
        (("headers",), {}),
        (("headers",), {"ab": 1}),
        (("headers",), [["a", 1]]),
        (("http_version",), "HTTP/\u00e9"),
        (("call_index",), True),
        (("call_index",), DEEP),
    ],
)
def test_a_wrong_response_value_is_refused_never_coerced(
    tmp_path: Path, field_path: tuple[str, ...], value: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = CASSETTES[0].read_bytes().split(b"\n")[:-1]
    number = next(i for i, line in enumerate(lines) if b'"type":"response"' in line.replace(b" ", b""))
    obj = json.loads(lines[number])
    _set(obj, field_path, value)
    lines[number] = dump(obj)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    with pytest.raises(vcr_transport.CassetteError) as caught:
        vcr_transport.ReplayTransport(path)
    assert caught.value.line == number + 1
    cli_refuses(path, capsys)


@pytest.mark.parametrize("blank", [b"", b" ", b"\t", b"\r", b" \t "])
@pytest.mark.parametrize("joiner", [b"", b" ", b"\t"])
def test_two_lines_written_on_one_are_refused_even_with_a_blank_line_to_balance_the_count(
    tmp_path: Path, blank: bytes, joiner: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bulk decode reads two values on one line and skips blank lines: counting alone would accept this
    file with every later line paired with the wrong object."""
    lines = CASSETTES[0].read_bytes().split(b"\n")[:-1]
    lines[1:3] = [lines[1] + joiner + lines[2]]  # the request and its response on line 2
    lines.append(blank)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    with pytest.raises(vcr_transport.CassetteError) as caught:
        vcr_transport.ReplayTransport(path, parse_cache=False)
    assert caught.value.line == 2
    cli_refuses(path, capsys)


@pytest.mark.parametrize(
    ("url", "words"),
    [("http://127.0.0.1:3w753/v1", "port"), ("ftp://h/x", "http, https, ws or wss"), ("/relative", "http, https")],
)
def test_a_request_url_that_does_not_parse_is_refused(tmp_path: Path, url: str, words: str) -> None:
    lines = CASSETTES[0].read_bytes().split(b"\n")[:-1]
    obj = json.loads(lines[1])
    obj["url"] = url
    lines[1] = dump(obj)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    with pytest.raises(vcr_transport.CassetteError, match=words) as caught:
        vcr_transport.ReplayTransport(path)
    assert caught.value.line == 2


@pytest.mark.parametrize("number", ["9" * 5_000, "1e999999999", "-1e400"])
def test_a_request_body_number_no_reader_holds_is_refused_naming_the_line(tmp_path: Path, number: str) -> None:
    """A request body's JSON is read once its line is checked; a number past what it can hold was reported as
    "expected a JSON object, found NoneType". No recording writes one (Python reads 4,300 digits at most)."""
    lines = CASSETTES[0].read_bytes().split(b"\n")[:-1]
    obj = json.loads(lines[1])
    obj["body"] = {"json": {"n": Raw(number)}}
    lines[1] = dump(obj)
    path = tmp_path / "number.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    with pytest.raises(vcr_transport.CassetteError, match="out of range") as caught:
        vcr_transport.ReplayTransport(path)
    assert caught.value.line == 2 and "over 4,300 digits, or past 1e308" in str(caught.value)
    assert "damaged or hostile" in str(caught.value) and "NoneType" not in str(caught.value)


def test_a_line_over_the_limit_is_refused_before_it_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_parser, "MAX_LINE_BYTES", 4096)
    import vcr_transport._storage as storage

    monkeypatch.setattr(storage, "BLOCK_BYTES", 1024)
    path = tmp_path / "long.jsonl"
    good = CASSETTES[0].read_bytes()
    path.write_bytes(good + b'{"type":"event","text":"' + b"x" * 100_000 + b'"}\n')
    reads: list[int] = []
    real_read = os.read

    def counting_read(descriptor: int, size: int) -> bytes:
        reads.append(size)
        return real_read(descriptor, size)

    monkeypatch.setattr(storage.os, "read", counting_read)
    with pytest.raises(vcr_transport.CassetteError, match="longer than 4,096 bytes") as caught:
        storage.read_cassette(path, lazy=True)
    assert caught.value.line == good.count(b"\n") + 1
    assert sum(reads) < len(good) + 8 * 1024, "the reader stopped soon after the line passed the limit"
    assert cli_main(["verify", str(path)]) == 1
    assert "longer than" in capsys.readouterr().out


def _finishes(function: Callable[[], Any], seconds: float = 20.0) -> Any:
    """Runs ``function`` in a thread; a hang fails the test instead of blocking the suite."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(("ok", function()))
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(("raised", error))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"{function} did not finish: it blocked"
    return outcome[0]


@pytest.fixture(params=["fifo", "dev-zero-symlink", "directory", "directory-symlink"])
def odd_path(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "odd.jsonl"
    if request.param == "fifo":
        os.mkfifo(path)
    elif request.param == "dev-zero-symlink":
        path.symlink_to("/dev/zero")
    elif request.param == "directory":
        path.mkdir()
    else:
        (tmp_path / "real").mkdir()
        path.symlink_to(tmp_path / "real")
    return path


def test_a_path_that_is_not_a_regular_file_is_refused_without_blocking(
    odd_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, error = _finishes(lambda: vcr_transport.ReplayTransport(odd_path))
    assert status == "raised" and isinstance(error, vcr_transport.CassetteError), error
    assert str(odd_path) in str(error) and "not a cassette file" in str(error)
    status, code = _finishes(lambda: cli_main(["show", str(odd_path)]))
    assert (status, code) == ("ok", 2) and "not a cassette file" in capsys.readouterr().err
    status, code = _finishes(lambda: cli_main(["verify", str(odd_path)]))
    out = capsys.readouterr().out
    assert (status, code) == ("ok", 1), out
    assert "not a cassette file" in out or "no cassette (*.jsonl) in this folder" in out
    status, code = _finishes(lambda: cli_main(["list", str(odd_path)]))
    out = capsys.readouterr().out
    assert (status, code) == ("ok", 0)
    assert "UNREADABLE" in out or "no cassettes found" in out


def test_verify_on_a_folder_without_cassettes_says_so_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["verify", str(tmp_path)]) == 1
    assert f"PROBLEM {tmp_path}: no cassette (*.jsonl) in this folder" in capsys.readouterr().out


def test_verify_reads_a_cassette_in_bounded_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify never asks for the whole file at once: it reads blocks of BLOCK_BYTES."""
    import vcr_transport._storage as storage

    path = tmp_path / "big.jsonl"
    path.write_bytes(CASSETTES[0].read_bytes() * 1)
    monkeypatch.setattr(storage, "BLOCK_BYTES", 256)
    sizes: list[int] = []
    real_read = os.read
    monkeypatch.setattr(storage.os, "read", lambda fd, size: sizes.append(size) or real_read(fd, size))
    assert cli_main(["verify", str(path)]) == 0
    assert sizes and max(sizes) == 256 and len(sizes) > path.stat().st_size // 256
    assert "1 cassette checked, 0 with problems" in capsys.readouterr().out


def test_a_cassette_held_in_memory_is_read_in_small_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay that holds its cassette in memory never holds the whole file beside what it keeps: it reads blocks
    of HELD_BLOCK_BYTES (a conversation's request bodies are most of its file: the two peaked at twice it)."""
    import vcr_transport._storage as storage

    path = tmp_path / "held.jsonl"
    path.write_bytes(CASSETTES[0].read_bytes())
    monkeypatch.setattr(storage, "HELD_BLOCK_BYTES", 128)
    sizes: list[int] = []
    real_read = os.read
    monkeypatch.setattr(storage.os, "read", lambda fd, size: sizes.append(size) or real_read(fd, size))
    held = storage.read_cassette(path, lazy=False)
    assert set(sizes) == {128} and len(sizes) > path.stat().st_size // 128
    assert [call.events for call in held.calls] == [
        call.events for call in _format.Cassette.parse(path.read_bytes(), "x").calls
    ]


# --- JSON decoded at view time: a response body, an SSE data line, a WebSocket message ------------------------


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _deep_cassette(kind: str, depth: int, model_name: str = "m") -> bytes:
    """A cassette as a pull request could bring it: it passes verify, and its response (or message) holds JSON
    nested ``depth`` levels deep, which no line schema checks (it is recorded text)."""
    deep = _nested(depth)
    lines: list[dict[str, Any]] = [{"type": "header", "format_version": 1}]
    if kind == "websocket":
        lines += [
            {"type": "request", "call_index": 0, "method": "GET", "url": "wss://api.openai.com/v1/realtime",
             "headers": [["x-model", model_name]], "body": None},
            {"type": "response", "call_index": 0, "status": 101, "headers": [], "http_version": "HTTP/1.1"},
            {"type": "message", "call_index": 0, "message_index": 0, "t": 0.0, "from": "server", "text": deep},
            {"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "complete",
             "close": {"code": 1000, "reason": "", "by": "client"}},
        ]  # fmt: skip
    else:
        content_type, text = ("text/event-stream", f"data: {deep}\n\n") if kind == "sse" else ("application/json", deep)
        lines += [
            {"type": "request", "call_index": 0, "method": "POST", "url": "https://api.openai.com/v1/chat/completions",
             "headers": [["content-type", "application/json"]], "body": {"json": {"model": model_name}}},
            {"type": "response", "call_index": 0, "status": 200, "headers": [["content-type", content_type]],
             "http_version": "HTTP/1.1"},
            {"type": "event", "call_index": 0, "event_index": 0, "t": 0.0, "text": text},
            {"type": "call_end", "call_index": 0, "event_count": 1, "outcome": "complete"},
        ]  # fmt: skip
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


@pytest.mark.parametrize("depth", [model.MAX_NESTING + 1, 900, 5_000])
@pytest.mark.parametrize("kind", ["body", "sse", "websocket"])
def test_json_nested_deeper_than_the_limit_is_shown_and_compared_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, depth: int
) -> None:
    """Every view decodes recorded JSON through ``decode_json``: deeper than MAX_NESTING it is text, so show (each
    format), textconv, diff and the HTML review finish (before: a RecursionError traceback, and git diff broke)."""
    path, other = tmp_path / "deep.jsonl", tmp_path / "other.jsonl"
    path.write_bytes(_deep_cassette(kind, depth))
    other.write_bytes(_deep_cassette(kind, depth, model_name="n"))
    commands: list[tuple[list[str], int]] = [
        (["verify", str(path)], 0),
        *(
            ([*view, str(path)], 0)
            for view in (["show"], ["show", "--json"], ["show", "--textconv"], ["show", "--html"])
        ),
        (["show", "--har", "-", str(path)], 0),
        (["show", "--html", str(path), str(other)], 0),
        (["diff", str(path), str(other)], 1),
    ]
    for command, expected in commands:
        capsys.readouterr()
        assert cli_main(command) == expected, command
        captured = capsys.readouterr()
        assert "Traceback" not in captured.out + captured.err, command
    capsys.readouterr()
    assert cli_main(["show", "--textconv", str(path)]) == 0
    assert '{"a":{"a":' in capsys.readouterr().out  # shown, as the text it is


@pytest.mark.parametrize("lazy", [False, True])
def test_a_json_request_body_is_held_as_its_bytes_and_read_when_asked_for(lazy: bool) -> None:
    """Decoded, a long conversation's request bodies (each repeating the history) are several times the file."""
    path = CASSETTES[0]
    requests = [json.loads(line) for line in path.read_bytes().splitlines() if b'"type":"request"' in line]
    bodies = {line["call_index"]: line["body"] for line in requests if "json" in (line.get("body") or {})}
    assert bodies, "the fixture has a JSON request body"
    cassette = read_cassette(path, lazy=lazy)
    for index, body in bodies.items():
        call = cassette.calls[index]
        assert type(model.held_body(call)) is bytes
        assert call.body == body and call.body is not call.body, "decoded anew each time it is asked for"
