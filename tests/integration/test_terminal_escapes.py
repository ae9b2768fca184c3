"""A hostile cassette reaches no terminal raw: every text view (``show``, its textconv, ``diff``, ``verify``,
``scan``, ``list``, ``drift --dry-run``), an error message, a replay mismatch, the pytest report and ``serve``'s
log show its control and bidi characters escaped (``_core._display.visible``); ``--json``, the HAR and the HTML
page hold the values as they are, escaped by their own formats."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from test_cli import cli
from test_serve import served

import vcr_transport
from vcr_transport._core.format._format import (
    call_end_line,
    encode_line,
    event_lines,
    header_line,
    message_line,
    request_line,
    response_line,
)
from vcr_transport._display import visible

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # writes the clipboard
OSC8 = "\x1b]8;;http://evil.example/\x1b\\click me\x1b]8;;\x1b\\"  # a hyperlink
ERASE = "\r\x1b[2K\x1b[1A\x1b[2K"  # erases its own line and the one above
C1 = "\x9b2K\x85"  # CSI as one C1 character; NEL
BIDI = "\u202eevil\u202c\u2066x\u2069\u200f"  # Trojan Source
ATTACK = OSC52 + OSC8 + ERASE + C1 + BIDI
LATIN1 = OSC52 + ERASE + C1  # what a header (latin-1) can carry
ATTACKER_URL = "http://attacker.example/exfil?d=1"
URL = ATTACKER_URL + ERASE
FAILING_URL = "http://attacker.example/fail"  # one an HTTP client can send
OWNER = "tests/test_x.py::test_" + OSC52 + "owner"
FILE_NAME = "hostile" + OSC52 + "\u202e.jsonl"

# Never on the screen raw: C0 (but the newline and tab), DEL, C1, and what reorders or hides text.
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def assert_shown_escaped(text: str) -> None:
    """No raw control or bidi character in ``text``."""
    found = _RAW.search(text)
    assert found is None, (
        f"raw {found[0]!r} at {found.start()}: {text[max(0, found.start() - 60) : found.end() + 60]!r}"
    )


def hostile_lines(reply: str = "reply ") -> list[bytes]:
    """A cassette's lines, as recording writes them, with the attack in every recorded text: the URL, a header
    name and value, the owner, a request message, a tool name, a reply, an SSE line, a WebSocket message and a
    recorded error."""
    body = {
        "model": "gpt-4o" + BIDI,
        "messages": [{"role": "user", "content": "hi " + ATTACK}],
        "tools": [{"type": "function", "function": {"name": "get_" + OSC52 + "weather" + BIDI, "parameters": {}}}],
    }
    answer = {"choices": [{"message": {"role": "assistant", "content": reply + ATTACK}}]}
    started = 0
    lines = [encode_line(header_line(shared=True))]
    request = request_line(
        0, "POST", URL, [("x-" + LATIN1, "v" + LATIN1), ("content-type", "application/json")], {"json": body}
    )
    lines += [encode_line(request | {"test": OWNER})]
    lines.append(encode_line(response_line(0, 200, [("content-type", "application/json"), ("x-r" + LATIN1, LATIN1)])))
    lines.append(event_lines(0, 0, [(json.dumps(answer, ensure_ascii=False).encode(), 1000)], started))
    lines.append(encode_line(call_end_line(0, 1, "complete")))
    # A stream: one JSON event, one plain line.
    stream = {"model": "gpt-4o", "messages": [{"role": "user", "content": "stream " + ATTACK}], "stream": True}
    lines.append(encode_line(request_line(1, "POST", URL, [], {"json": stream})))
    lines.append(encode_line(response_line(1, 200, [("content-type", "text/event-stream")])))
    chunk = {"choices": [{"delta": {"content": reply + ATTACK}}]}
    events = f"data: {json.dumps(chunk, ensure_ascii=False)}\n\ndata: plain {OSC52}{BIDI}{ERASE}\n\n"
    lines.append(event_lines(1, 0, [(events.encode(), 2000)], started))
    lines.append(encode_line(call_end_line(1, 1, "complete")))
    # A plain text body.
    leaked = [("x-leaked", "sk-proj-" + "Ab3dE6gH9jK2mN5pQ8rS1tU4vW7xY0zA3bC6dE9fG2hJ5kL8")]  # for scan to report
    lines.append(encode_line(request_line(2, "GET", URL, leaked, {"text": "text " + ATTACK})))
    lines.append(encode_line(response_line(2, 200, [("content-type", "text/plain")])))
    lines.append(event_lines(2, 0, [(("plain " + ATTACK).encode(), 1000)], started))
    lines.append(encode_line(call_end_line(2, 1, "complete")))
    # A WebSocket session.
    lines.append(encode_line(request_line(3, "GET", "wss://api.example.com/realtime" + ERASE, [], None)))
    lines.append(encode_line(response_line(3, 101, [("upgrade", "websocket")])))
    lines.append(encode_line(message_line(3, 0, 0.1, "client", "ws " + ATTACK)))
    lines.append(encode_line(message_line(3, 1, 0.2, "server", json.dumps({"text": "ws " + ATTACK}))))
    lines.append(encode_line(call_end_line(3, 0, "complete", close=(1000, "bye " + ATTACK, "server"))))
    # A recorded failure.
    lines.append(encode_line(request_line(4, "GET", FAILING_URL, [], None)))
    lines.append(encode_line(call_end_line(4, 0, "error", error=("httpx.ConnectError", "refused " + ATTACK))))
    return lines


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    path = tmp_path / FILE_NAME
    path.write_bytes(b"".join(hostile_lines()))
    return path


def _checked(text: str) -> str:
    assert_shown_escaped(text)
    assert visible(OSC52) in text, "the attack is shown, escaped"
    return text


@pytest.mark.parametrize("command", [["show"], ["show", "--textconv"], ["show", "--textconv", "--volatile"]])
def test_show_and_textconv_escape_every_recorded_text(hostile: Path, command: list[str]) -> None:
    result = cli(hostile.parent, *command, str(hostile))
    assert result.returncode == 0, result.stderr
    out = _checked(result.stdout)
    assert ATTACKER_URL + "\\r\\x1b[2K\\x1b[1A\\x1b[2K" in out, "the URL's erase sequence is shown, not run"
    for seen in ("\\x1b]8;;http://evil.example/", "\\x9b2K", "\\u202eevil", "refused "):
        assert seen in out
    if command == ["show"]:
        assert "  body: plain " + visible(OSC52) in out, "a text body of one line, on its line"
    if "--textconv" in command:
        assert "test: " + visible(OWNER) in out and "get_" + visible(OSC52) in out
        assert "plain " + visible(OSC52) in out, "the SSE line that is no JSON"
        assert cli(hostile.parent, *command, str(hostile)).stdout == out, "the same cassette, the same text"


def test_an_unreadable_cassette_is_shown_escaped_to_git(tmp_path: Path) -> None:
    broken = tmp_path / FILE_NAME
    broken.write_text("not a cassette " + ATTACK + "\nsecond line\n", encoding="utf-8")
    out = _checked(cli(tmp_path, "show", "--textconv", str(broken)).stdout)
    assert "second line" in out


def test_diff_of_two_hostile_cassettes(tmp_path: Path) -> None:
    a, b = tmp_path / ("a" + FILE_NAME), tmp_path / ("b" + FILE_NAME)
    a.write_bytes(b"".join(hostile_lines("first reply ")))
    b.write_bytes(b"".join(hostile_lines("second " + OSC8 + " reply ")))
    for env in ({}, {"FORCE_COLOR": "1"}):
        result = cli(tmp_path, "diff", str(a), str(b), env=env)
        assert result.returncode == 1, result.stderr
        out = result.stdout
        if env:  # our own colour codes, and only them
            assert "\x1b[31m" in out
            out = re.sub(r"\x1b\[(?:31|32|33|2|1|0)m", "", out)
        _checked(out)


@pytest.mark.parametrize("command", [["verify"], ["scan"], ["list"], ["drift", "--dry-run"]])
def test_management_commands_escape_paths_and_values(hostile: Path, command: list[str]) -> None:
    extra = ["--upstream", "openai=http://127.0.0.1:9"] if command[0] == "drift" else []
    result = cli(hostile.parent, *command, *extra, str(hostile), env={"FORCE_COLOR": "1"})
    out = re.sub(r"\x1b\[(?:31|32|33|2|1|0)m", "", result.stdout + result.stderr)
    _checked(out)


def test_a_cassette_error_quoting_the_file_is_escaped(tmp_path: Path) -> None:
    broken = tmp_path / FILE_NAME
    lines = hostile_lines()
    broken.write_bytes(b"".join(lines[:3]) + b'{"type": "' + ATTACK.encode() + b'"}\n')
    for command in (["show"], ["verify"], ["list"]):
        result = cli(tmp_path, *command, str(broken))
        _checked(result.stdout + result.stderr)


def test_json_har_and_html_hold_the_values_as_they_are(hostile: Path, tmp_path: Path) -> None:
    printed = cli(tmp_path, "show", "--json", str(hostile)).stdout
    assert_shown_escaped(printed)
    shown = json.loads(printed)
    assert shown["calls"][0]["url"] == URL and shown["calls"][0]["test"] == OWNER
    assert shown["calls"][0]["request_headers"][0] == ["x-" + LATIN1, "v" + LATIN1]
    printed = cli(tmp_path, "show", "--har", "-", str(hostile)).stdout
    assert_shown_escaped(printed)
    har = json.loads(printed)
    assert har["log"]["entries"][0]["request"]["url"] == URL
    page = cli(tmp_path, "show", "--html", str(hostile)).stdout
    _checked(page)
    data = page.split('<script type="application/json" id="data">')[1].split("</script>")[0]
    assert json.loads(data)["calls"][0]["u"] == URL, "the page's data holds the URL as it is"


def test_a_replay_mismatch_names_the_hostile_field_escaped(hostile: Path) -> None:
    """The recorded body holds the attack in a value and in a key the request lacks: the message (what
    pytest, a log or a terminal prints) shows both escaped; the exception's attributes keep them whole."""
    import openai

    replay = vcr_transport.ReplayTransport(hostile)
    client = openai.OpenAI(api_key="sk-test", base_url=ATTACKER_URL, http_client=httpx2.Client(transport=replay))
    with pytest.raises(Exception):  # noqa: B017 - whatever the SDK made of it
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    mismatch = replay.first_mismatch
    assert mismatch is not None
    _checked(str(mismatch) + mismatch.full_values())
    assert ("body.messages[0].content", "hi " + ATTACK, "hi") in mismatch.differences, "the attributes: whole"


def test_a_replayed_failure_says_its_recorded_message_escaped(tmp_path: Path) -> None:
    failing = tmp_path / "failing.jsonl"
    failing.write_bytes(
        encode_line(header_line())
        + encode_line(request_line(0, "GET", FAILING_URL, [], None))
        + encode_line(call_end_line(0, 0, "error", error=("httpx.ConnectError", "refused " + ATTACK)))
    )
    replay = vcr_transport.ReplayTransport(failing, ignore_headers=["*"])
    with httpx2.Client(transport=replay) as client, pytest.raises(httpx2.ConnectError) as caught:
        client.get(FAILING_URL)
    assert "refused " in _checked(str(caught.value))


def test_the_pytest_report_of_unplayed_hostile_calls_is_escaped(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\n")
    folder = pytester.path / "cassettes" / "test_llm"
    folder.mkdir(parents=True)
    lines = hostile_lines()
    (folder / "test_chat.jsonl").write_bytes(b"".join(lines))
    pytester.makepyfile(
        test_llm="""
import pytest

@pytest.mark.vcr_transport(mode="replay")
def test_chat():
    pass
"""
    )
    result = pytester.runpytest("-rf")
    result.assert_outcomes(failed=1)
    assert_shown_escaped(result.stdout.str())
    assert "never played" in result.stdout.str()
    assert ATTACKER_URL + "\\r\\x1b[2K" in result.stdout.str()


def test_serve_logs_a_hostile_mismatch_escaped(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    body = {"prompt": "recorded", "a" + ATTACK: 1}
    path.write_bytes(
        encode_line(header_line())
        + encode_line(request_line(0, "POST", "https://api.openai.com/v1/chat", [], {"json": body}))
        + encode_line(response_line(0, 200, [("content-type", "application/json")]))
        + event_lines(0, 0, [(b'{"ok": true}', 1000)], 0)
        + encode_line(call_end_line(0, 1, "complete"))
    )
    with served(str(path)) as child:
        answer = httpx2.post(child.url + "/v1/chat", json={"prompt": "recorded"}, timeout=10)
        assert answer.status_code >= 400
    log = child.output + child.errors
    assert "replay mismatch" in log
    _checked(log)


def test_visible_is_idempotent_and_keeps_text_readable() -> None:
    text = "naïve café 😀 ‍ \t" + ATTACK
    once = visible(text)
    assert visible(once) == once and once.startswith("naïve café 😀 ‍ \t")
    assert visible("a\nb", newlines=True) == "a\nb" and visible("a\nb") == "a\\nb"
    assert visible("\ud800") == "\\ud800", "a lone surrogate, which no terminal encoding writes"
    assert visible("\U000e0041") == "\\U000e0041", "a Unicode tag: invisible ASCII"
    assert once.encode("utf-8"), "encodable: no lone surrogate left"


def test_a_reply_s_newlines_still_break_it_into_lines_and_its_cr_shows(tmp_path: Path) -> None:
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(
        encode_line(header_line())
        + encode_line(request_line(0, "GET", "https://api.example.com/v1/x", [], None))
        + encode_line(response_line(0, 200, [("content-type", "text/plain")]))
        + event_lines(0, 0, [(b"one\r\ntwo" + ERASE.encode() + b"\nthree", 1000)], 0)
        + encode_line(call_end_line(0, 1, "complete"))
    )
    for command in (["show"], ["show", "--textconv"]):
        lines = cli(tmp_path, *command, str(path)).stdout.splitlines()
        assert [
            line.split("| ")[-1] for line in lines if line.endswith(("one\\r", "two" + visible(ERASE), "three"))
        ] == [
            "one\\r",
            "two\\r\\x1b[2K\\x1b[1A\\x1b[2K",
            "three",
        ], lines


def test_every_invisible_format_character_is_escaped(tmp_path: Path) -> None:
    """Unicode's format characters (category Cf) hide or reorder text: the soft hyphen (``ad\\u00admin`` reads
    as ``admin``), Arabic number signs, musical formatting, tags. Each is escaped, but the joiners emoji need."""
    import unicodedata

    joiners = {"\u200c", "\u200d"}
    hidden = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf" and chr(c) not in joiners]
    assert [c for c in hidden if visible(c) == c] == []
    path = tmp_path / "shy.jsonl"
    lines = [
        {"type": "header", "format_version": 1},
        {"type": "request", "call_index": 0, "method": "GET", "url": "https://a.test/?user=ad\u00admin",
         "headers": [], "body": {"text": "pay\u00adpal \u0600 \U0001d173"}},
        {"type": "response", "call_index": 0, "status": 200, "headers": [], "http_version": "HTTP/1.1"},
        {"type": "event", "call_index": 0, "event_index": 0, "t": 0.0, "text": "ad\u00admin"},
        {"type": "call_end", "call_index": 0, "event_count": 1, "outcome": "complete"},
    ]  # fmt: skip
    path.write_bytes(b"".join(map(encode_line, lines)))
    for command in (["show"], ["show", "--textconv"], ["show", "--json"]):
        out = cli(tmp_path, *command, str(path)).stdout
        assert "ad\\xadmin" in out or "ad\\u00admin" in out  # as repr writes it, or as JSON does
        assert not [c for c in hidden if c in out], command


@pytest.mark.parametrize("kind", ["a device", "a FIFO", "a folder", "a missing path"])
def test_textconv_of_what_is_no_regular_file_says_so_and_reads_nothing(tmp_path: Path, kind: str) -> None:
    """git's textconv shows a file that is no cassette as it is: a regular file's start only (it read a link to
    /dev/zero until memory ran out, waited forever on a FIFO, and gave tracebacks for a folder or a missing path)."""
    import os

    path = tmp_path / "cassettes" / "c.jsonl"
    path.parent.mkdir()
    if kind == "a device":
        path.symlink_to("/dev/zero")
    elif kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "a folder":
        path.mkdir()
    command = [sys.executable, "-m", "vcr_transport", "show", "--textconv", str(path)]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and result.stdout.startswith("(not a readable cassette: ")
    assert len(result.stdout.splitlines()) <= 2 and not result.stderr


def test_textconv_shows_at_most_a_mebibyte_of_a_file_that_is_no_cassette(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text("Q" * (3 * 1024 * 1024))
    out = cli(tmp_path, "show", "--textconv", str(path)).stdout
    assert out.count("Q") == 1024 * 1024 and "(cut at 1,048,576 bytes)" in out
