"""Cassettes a reviewer can read: a call read as a conversation (checked against what the real SDKs got), the
``show --textconv`` view driving a real ``git diff``, and the ``show --html`` page in a real headless browser
with networking off."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from browser import Browser, find_chromium
from helpers import recording
from real_wire import vendor_traffic
from test_cli import cli
from upstream import Received, Upstream
from upstream import Reply as UpstreamReply
from vendors import SDKS, Sdk

from vcr_transport._core.format._format import Cassette, RecordedCall, encode_line
from vcr_transport._core.views._conversation import (
    Message,
    Reply,
    ToolCall,
    call_label,
    request_messages,
    request_tools,
)
from vcr_transport._core.views._view import NOT_JSON, call_view
from vcr_transport._storage import read_cassette

ROOT = Path(__file__).resolve().parents[2]
OPENAI = next(s for s in SDKS if s.name == "openai" and s.library is httpx2 and s.side == "sync")
CHROMIUM = find_chromium()
needs_browser = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium installed (apt-get install chromium); the page is checked in a real browser"
)


# --- the conversation, per vendor protocol ---------------------------------------------------------------


def test_a_recorded_call_reads_as_the_conversation_the_sdk_had(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    steps = [("chat", ["what is up"]), ("stream", ["hi", "echo:hi", "tell me more"])]
    live = sdk.run(recording(sdk.library, sdk.is_async, cassette), upstream.url, steps)
    calls = read_cassette(cassette).calls
    assert call_view(calls[0]).reply.text == live[0]
    streamed = call_view(calls[1])
    assert streamed.reply.text == "".join(live[1]) and streamed.stream, "the stream's text, reassembled from its events"
    messages = request_messages(calls[1].body["json"] if calls[1].body else None)
    assert [m.text for m in messages if m.role != "system"] == ["hi", "echo:hi", "tell me more"]
    assert messages[1].role in ("assistant", "model")


def _corpus_calls(prefix: str) -> list[tuple[str, RecordedCall]]:
    """The real vendor exchanges (tests/fixtures/wire) as recorded calls (built by hand: this checks the core
    alone)."""
    found = []
    for number, (name, interaction) in enumerate(vendor_traffic(prefix)):
        request, response = interaction["request"], interaction["response"]
        body = response["body"]
        data = body["text"].encode() if "text" in body else json.dumps(body.get("json")).encode()
        call = RecordedCall(
            number, request["method"], request["uri"], list(request["headers"].items()), request.get("body")
        )
        call.status, call.response_headers = response["status"], list(response["headers"].items())
        call.chunks, call.outcome = [data], "complete"
        found.append((name, call))
    return found


def test_responses_api_streams_reassemble_to_the_completed_response() -> None:
    checked = 0
    for name, call in _corpus_calls("test_openai_responses"):
        view = call_view(call)
        reply = view.reply
        if view.stream is None:
            continue
        completed = [json.loads(e.data) for e in view.stream if e.name == "response.completed"]
        if not completed:
            continue
        whole = RecordedCall(0, "POST", call.url, [], None, 200, [("content-type", "application/json")])
        whole.chunks, whole.outcome = [json.dumps(completed[0]["response"]).encode()], "complete"
        expected = call_view(whole).reply
        assert reply.text == expected.text, name
        assert [t.name for t in reply.tool_calls] == [t.name for t in expected.tool_calls], name
        assert [json.loads(t.arguments) for t in reply.tool_calls] == [
            json.loads(t.arguments) for t in expected.tool_calls
        ], name
        checked += bool(expected.text or expected.tool_calls)
    assert checked >= 3, "the corpus has Responses API streams with text or tool calls"


def test_anthropic_and_gemini_tool_calls_and_tools_are_read() -> None:
    seen: dict[str, int] = {"anthropic tool call": 0, "gemini tool call": 0, "tools": 0}
    for name, call in _corpus_calls("test_anthropic") + _corpus_calls("test_google"):
        body = call.body["json"] if call.body and "json" in call.body else None
        offered = request_tools(body)
        seen["tools"] += bool(offered)
        for tool_call in call_view(call).reply.tool_calls:
            assert tool_call.name, name
            json.loads(tool_call.arguments or "{}")  # whole JSON once the stream's pieces are joined
            if tool_call.name in offered:
                seen["anthropic tool call" if "anthropic" in name else "gemini tool call"] += 1
    assert all(seen.values()), seen


def _call(headers: list[tuple[str, str]], *chunks: bytes, status: int | None = 200) -> RecordedCall:
    call = RecordedCall(0, "POST", "https://x.invalid/v1/x", [], None, status, headers)
    call.chunks, call.offsets, call.outcome = list(chunks), [0.01 * n for n in range(len(chunks))], "complete"
    return call


def test_one_stream_joins_whatever_protocol_each_event_speaks() -> None:
    events = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hel"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "name": "look"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"a":'}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "2}"}},
        {"type": "content_block_delta", "index": 5, "delta": {"type": "input_json_delta", "partial_json": "lost"}},
        {"type": "response.output_item.added", "item": {"type": "function_call", "id": "fc", "name": "find"}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc", "delta": "{}"},
        {"type": "response.output_text.delta", "delta": " world"},
        {"choices": [{"delta": {"content": "!", "tool_calls": [{"function": {"name": "f", "arguments": "1"}}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "hidden", "thought": True}, {"text": "?"}]}}]},
        {"type": "message", "error": {"message": "not anthropic's whole message: no content list"}},
    ]
    data = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    view = call_view(_call([("content-type", "text/event-stream")], data.encode()))
    assert view.reply.text == "Hello world!?error: not anthropic's whole message: no content list"
    assert [(t.name, t.arguments) for t in view.reply.tool_calls] == [("look", '{"a":2}'), ("find", "{}"), ("f", "1")]
    assert view.stream is not None and len(view.stream) == len(events) + 1 and view.json is NOT_JSON


def test_a_body_that_is_not_utf8_is_shown_by_its_size_beside_the_reply_and_parsed_for_json() -> None:
    view = call_view(_call([("content-type", "application/json")], b'{"a": "\xff"}'))
    assert view.binary and view.json == {"a": "\ufffd"}, "show --json parses the text with the byte replaced"
    assert view.reply.text == "" and view.reply_body == "[10 bytes of binary data]"
    stream = call_view(_call([("content-type", "text/event-stream")], b"data: \xff\n\n"))
    assert (
        stream.stream is not None and stream.readable_stream is None and stream.reply_body == "[9 bytes of binary data]"
    )
    blank = call_view(_call([("content-type", "application/json")], b"  "))
    assert blank.json is NOT_JSON and blank.reply_body is None and blank.text == "  "


def test_each_call_is_read_once_for_the_page_with_its_differences(monkeypatch: pytest.MonkeyPatch) -> None:
    from vcr_transport._core.views import _view
    from vcr_transport._tools._html import html_page

    readings: list[int] = []
    real = _view.decoded_body
    monkeypatch.setattr(
        _view, "decoded_body", lambda chunks, headers, budget: readings.append(1) or real(chunks, headers, budget)
    )
    reply = json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode()
    before = Cassette("a.jsonl", {"format_version": 1}, [_call([("content-type", "application/json")], reply)] * 2)
    after = Cassette("b.jsonl", {"format_version": 1}, [_call([("content-type", "application/json")], reply)] * 3)
    html_page(before, after)
    assert len(readings) == 5, "two calls of A, three of B: each viewed once, for the differences and the page"


# --- git diff through the textconv driver --------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo), "PYTHONPATH": str(ROOT)}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_diff_through_textconv_shows_the_changed_words(upstream: Upstream, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    cassette = repo / "tests" / "cassettes" / "test_chat" / "test_stream.jsonl"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.invalid")
    _git(repo, "config", "user.name", "t")
    (repo / ".gitattributes").write_text("**/cassettes/**/*.jsonl diff=vcr\n")
    _git(repo, "config", "diff.vcr.textconv", f"{sys.executable} -m vcr_transport show --textconv")
    OPENAI.run(recording(httpx2, False, cassette), upstream.url, [("stream", ["tell me about apples"])])
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first recording")
    OPENAI.run(recording(httpx2, False, cassette), upstream.url, [("stream", ["tell me about bananas"])])

    diff = _git(repo, "diff").splitlines()
    removed = [line for line in diff if line.startswith("-") and not line.startswith("---")]
    added = [line for line in diff if line.startswith("+") and not line.startswith("+++")]
    assert any("request.messages[0].user: tell me about apples" in line for line in removed), diff
    assert any("request.messages[0].user: tell me about bananas" in line for line in added), diff
    assert any(line.startswith("-  response.text: echo:tell me about apples") for line in removed), diff
    assert any(line.startswith("+  response.text: echo:tell me about bananas") for line in added), diff
    raw = _git(repo, "diff", "--no-textconv").splitlines()
    assert max(map(len, diff)) < max(map(len, raw)), "the driver's lines are shorter than the raw JSONL's"


def test_textconv_shows_a_file_that_is_no_cassette_as_it_is(tmp_path: Path) -> None:
    broken = tmp_path / "notes.jsonl"
    broken.write_text('{"hello": "world"}\n')
    result = cli(tmp_path, "show", "--textconv", str(broken))
    assert result.returncode == 0
    first, rest = result.stdout.split("\n", 1)
    assert first.startswith("(not a readable cassette: ") and str(broken) in first
    assert rest == broken.read_text()


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["show", "A", "B"], "a second cassette is shown with --html only"),
        (["show", "A", "-o", "x.html"], "-o/--output is for --html"),
        (["show", "A", "--json", "--html"], "choose one of --json, --textconv, --html"),
        (["show", "A", "--textconv", "--call", "0"], "drop --call"),
        (["show", "A", "--json", "--volatile"], "--volatile is for --textconv"),
        (["show", "A", "B", "--json"], "a second cassette is shown with --html only"),
    ],
)
def test_show_options_that_do_not_go_together_are_refused(tmp_path: Path, args: list[str], problem: str) -> None:
    result = cli(tmp_path, *args)
    assert result.returncode == 2 and problem in result.stderr


# --- the HTML page in a real browser ---------------------------------------------------------------------


@pytest.fixture
def browser() -> Any:
    assert CHROMIUM is not None
    opened = Browser(CHROMIUM)
    yield opened
    opened.close()


def _visible(browser: Browser, selector: str) -> int:
    """How many elements matching ``selector`` take up room on the page and are rendered (not folded away)."""
    return int(
        browser.evaluate(
            f"[...document.querySelectorAll({json.dumps(selector)})]"
            ".filter(e => {const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0"
            " && e.checkVisibility({contentVisibilityAuto: true, visibilityProperty: true});}).length"
        )
    )


@needs_browser
def test_the_page_shows_calls_timeline_secrets_and_differences(
    upstream: Upstream, tmp_path: Path, browser: Browser
) -> None:
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    steps: list[tuple[str, list[str]]] = [("chat", ["hello"]), ("stream", ["hi", "echo:hi", "count to five"])]
    OPENAI.run(recording(httpx2, False, before), upstream.url, steps)
    steps[1] = ("stream", ["hi", "echo:hi", "count to six"])
    OPENAI.run(recording(httpx2, False, after), upstream.url, steps)
    page = tmp_path / "page.html"
    result = cli(tmp_path, "show", "--html", str(before), str(after), "-o", str(page))
    assert result.returncode == 0 and str(page) in result.stdout

    browser.open(page)
    assert browser.requests == [page.resolve().as_uri()], "the page loads nothing but itself"
    # A B opens on the changed calls, their cards open.
    assert _ids(browser, "tr.row") == ["row-1"] and _ids(browser, "article.call") == ["call-1"]
    assert browser.evaluate("document.getElementById('changed-only').checked") is True
    text = browser.evaluate("document.body.innerText")
    assert "echo:count to six" in text, "the stream's reply reassembled"
    stream_chunks = len(read_cassette(after).calls[1].events)
    assert _visible(browser, "#call-1 .timeline svg rect.tick") == stream_chunks > 1
    assert _visible(browser, "#call-1 .badge.chg") == 1
    assert "count to five" in browser.evaluate("document.getElementById('diffs').innerText")
    # The credential header's removal is expected: grey, in the folded headers, never a red badge.
    assert _visible(browser, "#call-1 .badge.quiet") == 1 and _visible(browser, "#call-1 mark.secret") == 0
    assert _visible(browser, "#call-1 details table.h") == 0, "headers start folded"
    browser.evaluate("document.querySelector('#call-1 details:not(.earlier)').open = true")
    assert _visible(browser, "#call-1 details table.h") == 1 and _visible(browser, "#call-1 mark.secret.expected") == 1
    # Every call again; a row's click opens its card, a JSON answer has no timeline.
    browser.evaluate("const c = document.getElementById('changed-only'); c.click()")
    assert _ids(browser, "tr.row") == ["row-0", "row-1"]
    browser.evaluate("document.getElementById('row-0').click()")
    assert "echo:hello" in browser.evaluate("document.getElementById('call-0').innerText")
    assert _visible(browser, "#call-0 .timeline") == 0
    shot = browser.screenshot(tmp_path / "page.png")
    print(f"screenshot: {shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _ids(browser: Browser, selector: str) -> list[str]:
    return list(browser.evaluate(f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.id)"))


def _open_at(browser: Browser, page: Path, fragment: str) -> None:
    browser.send("Page.navigate", url=page.resolve().as_uri() + fragment)
    for _ in range(200):
        if browser.evaluate("document.readyState") == "complete":
            return
        browser.evaluate("new Promise(r => setTimeout(r, 50))")


def _big_cassette(path: Path, calls: int) -> None:
    """A cassette of ``calls`` openai streams, written line by line as a recording would."""
    lines = [encode_line({"type": "header", "format_version": 1})]
    for index in range(calls):
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"question {index}"}]}
        lines.append(
            encode_line(
                {
                    "type": "request",
                    "call_index": index,
                    "method": "POST",
                    "url": "https://api.openai.com/v1/chat/completions",
                    "headers": [["content-type", "application/json"], ["authorization", "[secret removed]"]],
                    "body": {"json": body},
                }
            )
        )
        lines.append(
            encode_line(
                {
                    "type": "response",
                    "call_index": index,
                    "status": 200,
                    "headers": [["content-type", "text/event-stream"]],
                    "http_version": "HTTP/1.1",
                }
            )
        )
        words = ["answer ", f"{index} ", "done"]
        for number, word in enumerate(words):
            chunk = {"choices": [{"index": 0, "delta": {"content": word}}]}
            lines.append(
                encode_line(
                    {
                        "type": "event",
                        "call_index": index,
                        "event_index": number,
                        "t": 0.01 * (number + 1),
                        "text": f"data: {json.dumps(chunk)}\n\n",
                    }
                )
            )
        lines.append(encode_line({"type": "call_end", "call_index": index, "event_count": 3, "outcome": "complete"}))
    path.write_bytes(b"".join(lines))


@needs_browser
def test_a_10000_call_cassette_is_an_overview_of_100_rows_a_page(tmp_path: Path, browser: Browser) -> None:
    cassette, page = tmp_path / "big.jsonl", tmp_path / "big.html"
    _big_cassette(cassette, 10_000)
    assert cli(tmp_path, "show", "--html", str(cassette), "-o", str(page)).returncode == 0
    print(f"10,000-call page: {page.stat().st_size} bytes from a {cassette.stat().st_size}-byte cassette")
    browser.open(page)
    assert _visible(browser, "tr.row") == 100 and _visible(browser, "article.call") == 0, "cards open on demand"
    assert "page 1 of 100" in browser.evaluate("document.getElementById('where').innerText")
    row = browser.evaluate("document.getElementById('row-7').innerText").split("\t")
    assert row[:7] == ["7", "POST", "/v1/chat/completions", "m", '"question 7"', "200", "complete"]
    assert row[7] == "30 ms"
    browser.evaluate("document.getElementById('next').click()")
    assert _ids(browser, "tr.row") == [f"row-{i}" for i in range(100, 200)]
    browser.evaluate(
        "const f = document.getElementById('filter'); f.value = 'question 9999'; f.dispatchEvent(new Event('input'))"
    )
    assert _ids(browser, "tr.row") == ["row-9999"]
    browser.screenshot(tmp_path / "big.png")
    print(f"screenshot: {tmp_path / 'big.png'}")


@needs_browser
def test_deep_links_and_j_k_navigation(tmp_path: Path, browser: Browser) -> None:
    cassette, page = tmp_path / "big.jsonl", tmp_path / "big.html"
    _big_cassette(cassette, 1_000)
    assert cli(tmp_path, "show", "--html", str(cassette), "-o", str(page)).returncode == 0
    _open_at(browser, page, "#call-517")
    assert _ids(browser, "article.call") == ["call-517"], "the link opens its call, on its page"
    assert "page 6 of 10" in browser.evaluate("document.getElementById('where').innerText")
    assert "answer 517 done" in browser.evaluate("document.getElementById('call-517').innerText")
    assert browser.evaluate("document.getElementById('row-517').getBoundingClientRect().top") < 200, "scrolled to"
    press = "document.dispatchEvent(new KeyboardEvent('keydown', {key: %s}))"
    browser.evaluate(press % "'j'")
    assert _ids(browser, "article.call") == ["call-518"] and browser.evaluate("location.hash") == "#call-518"
    browser.evaluate(press % "'k'")
    browser.evaluate(press % "'k'")
    assert _ids(browser, "article.call") == ["call-516"]
    browser.evaluate(press % "'Enter'")
    assert _ids(browser, "article.call") == [], "Enter folds the selected call"
    browser.evaluate("location.hash = '#call-3'")
    browser.evaluate("new Promise(r => setTimeout(r, 50))")
    assert "call-3" in _ids(browser, "article.call") and "page 1 of 10" in browser.evaluate(
        "document.getElementById('where').innerText"
    )


@needs_browser
def test_a_1000_call_page_renders_within_a_generous_bound(tmp_path: Path, browser: Browser) -> None:
    """The issue asks for under a second; measured in the browser, from the script's start to the overview
    drawn, with a generous bound for a shared machine."""
    cassette, page = tmp_path / "big.jsonl", tmp_path / "big.html"
    _big_cassette(cassette, 1_000)
    assert cli(tmp_path, "show", "--html", str(cassette), "-o", str(page)).returncode == 0
    browser.open(page)
    rendered = browser.evaluate("window.RENDERED_MS")
    print(f"1,000-call page rendered in {rendered:.0f} ms")
    assert _visible(browser, "tr.row") == 100 and 0 < rendered < 3000


def _agent_cassette(path: Path) -> None:
    """An agent loop of three calls, each resending the history; a tool named in mixed case; an image in the
    second request; a secret removed inside the third's body; and a multipart upload."""
    picture = "data:image/png;base64," + base64.b64encode(_PNG).decode()
    history: list[dict[str, Any]] = [{"role": "user", "content": "what is the weather in Paris?"}]
    tools = [{"type": "function", "function": {"name": "get_Weather", "parameters": {}}}]
    bodies = [
        {"model": "gpt-4o", "messages": list(history), "tools": tools},
        {"model": "gpt-4o", "messages": [*history, {"role": "assistant", "content": "let me look"},
         {"role": "user", "content": [{"type": "text", "text": "this picture"},
                                      {"type": "image_url", "image_url": {"url": picture}}]}], "tools": tools},
        {"model": "gpt-4o-mini", "messages": [*history, {"role": "assistant", "content": "let me look"},
         {"role": "user", "content": "my key is [secret removed], is that fine?"}]},
    ]  # fmt: skip
    lines = [{"type": "header", "format_version": 1}]
    for index, body in enumerate(bodies):
        lines += _json_call(index, "https://api.openai.com/v1/chat/completions", [], {"json": body})
    boundary = "b0undary"
    upload = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nvision\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="cat.png"\r\n'
            "Content-Type: image/png\r\n\r\n"
        ).encode()
        + _PNG
        + f"\r\n--{boundary}--\r\n".encode()
    )
    headers = [["content-type", f"multipart/form-data; boundary={boundary}"]]
    lines += _json_call(3, "https://api.openai.com/v1/files", headers, {"base64": base64.b64encode(upload).decode()})
    path.write_bytes(b"".join(encode_line(line) for line in lines))


# A 2x2 PNG, so that the page has a real image to draw.
_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg=="
)


def _json_call(index: int, url: str, headers: list[list[str]], body: Any) -> list[dict[str, Any]]:
    answer = {"model": "gpt-4o", "choices": [{"message": {"role": "assistant", "content": f"answer {index}"}}],
              "usage": {"prompt_tokens": 10 + index, "completion_tokens": 3}}  # fmt: skip
    return [
        {
            "type": "request",
            "call_index": index,
            "method": "POST",
            "url": url,
            "headers": [["authorization", "[secret removed]"], *headers],
            "body": body,
        },  # fmt: skip
        {
            "type": "response",
            "call_index": index,
            "status": 200,
            "headers": [["content-type", "application/json"]],
            "http_version": "HTTP/1.1",
        },  # fmt: skip
        {"type": "event", "call_index": index, "event_index": 0, "t": 0.2 * (index + 1), "text": json.dumps(answer)},
        {"type": "call_end", "call_index": index, "event_count": 1, "outcome": "complete"},
    ]


@needs_browser
def test_a_card_shows_what_is_new_images_parts_and_identifiers_as_written(tmp_path: Path, browser: Browser) -> None:
    cassette, page = tmp_path / "agent.jsonl", tmp_path / "agent.html"
    _agent_cassette(cassette)
    assert cli(tmp_path, "show", "--html", str(cassette), "-o", str(page)).returncode == 0
    browser.open(page)
    row = browser.evaluate("document.getElementById('row-2').innerText").split("\t")
    assert row[3] == "gpt-4o-mini" and row[8:10] == ["12", "3"], "the model and tokens in and out"
    for index in range(4):
        browser.evaluate(f"document.getElementById('row-{index}').click()")
    # Call 1 resends call 0's message: folded, and the new ones shown.
    assert _visible(browser, "#call-1 details.earlier") == 1 and _visible(browser, "#call-1 .msg.new") == 2
    assert "1 earlier message" in browser.evaluate("document.querySelector('#call-1 details.earlier').innerText")
    assert _visible(browser, "#call-1 .msg.user:not(.new)") == 0, "the earlier message is folded away"
    assert "tools: get_Weather" in browser.evaluate("document.getElementById('call-0').innerText")
    # Images drawn as images, from the page itself.
    width = browser.evaluate("document.querySelector('#call-1 img.shown').naturalWidth")
    assert width == 2
    assert _visible(browser, "#call-3 table.parts tr.part") == 2
    parts = browser.evaluate("document.querySelector('#call-3 table.parts').innerText")
    assert "cat.png" in parts and "image/png" in parts and "vision" in parts
    assert browser.evaluate("document.querySelector('#call-3 table.parts img.shown').naturalWidth") == 2
    # A secret removed inside a body is red; the credential header's removal is grey.
    assert _visible(browser, "#call-2 mark.secret:not(.expected)") == 2  # the badge and the message's mark
    assert "1 secret removed from bodies" in browser.evaluate("document.getElementById('call-2').innerText")
    assert _visible(browser, "#call-0 mark.secret:not(.expected)") == 0
    fetched = [url for url in browser.requests if not url.startswith("data:image/png;base64,")]
    assert fetched == [page.resolve().as_uri()], "images come from the page itself, nothing else is fetched"
    shot = browser.screenshot(tmp_path / "agent.png", full_page=True)
    print(f"screenshot: {shot}")


TRIAGE = "You are the triage agent. Hand weather questions to the weather agent."
WEATHER = "Weather agent </script><script>alert(1)</script> answers in one line, with the temperature."
TRANSFER = "transfer_to_weather_agent"


def _agents_route(received: Received) -> UpstreamReply:
    """One model behind two agents: the triage agent's turn hands off (a tool call), the weather agent's answers."""
    body = received.json()
    if body["messages"][0]["content"] == TRIAGE:
        call = {"id": "call_1", "type": "function", "function": {"name": TRANSFER, "arguments": "{}"}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
    else:
        message = {"role": "assistant", "content": "Sunny in Paris."}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}
    return UpstreamReply.json({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
                               "choices": [choice]})  # fmt: skip


def _embedded_data(page: str) -> Any:
    start = page.index('<script type="application/json" id="data">') + len('<script type="application/json" id="data">')
    return json.loads(page[start : page.index("</script>", start)])


def test_the_overview_tells_a_triage_agent_from_the_agent_it_hands_off_to(tmp_path: Path) -> None:
    """Two agents on one path and one model (issue 39): each row says the first words of its system prompt and
    the tool its reply calls; a system prompt that closes the script element stays text."""
    upstream = Upstream()
    upstream.routes["/v1/chat/completions"] = _agents_route
    upstream.start()
    cassette, page_file = tmp_path / "agents.jsonl", tmp_path / "agents.html"
    try:
        with httpx2.Client(transport=recording(httpx2, False, cassette), timeout=10) as http:
            client = openai.OpenAI(api_key="sk-test", base_url=upstream.url + "/v1", http_client=http, max_retries=0)
            question: Any = {"role": "user", "content": "What is the weather in Paris?"}
            triage = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "system", "content": TRIAGE}, question]
            )
            handed = triage.choices[0].message.model_dump(exclude_none=True)
            answer: Any = {"role": "tool", "tool_call_id": "call_1", "content": "{}"}
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "system", "content": WEATHER}, question, handed, answer]
            )
    finally:
        upstream.stop()
    assert cli(tmp_path, "show", "--html", str(cassette), "-o", str(page_file)).returncode == 0
    page = page_file.read_text()
    calls = _embedded_data(page)["calls"]
    assert [(c["p"], c["mdl"]) for c in calls] == [("/v1/chat/completions", "gpt-4o-mini")] * 2
    triage_label, weather_label = calls[0]["lbl"], calls[1]["lbl"]
    assert triage_label.startswith('"You are the triage agent.') and triage_label.endswith(f"-> {TRANSFER}")
    assert weather_label == '"Weather agent </script><script>alert(1)</script> answers ..."'
    assert TRANSFER not in weather_label and len(triage_label) <= 70 and len(weather_label) <= 70
    # Inert: the prompt is in the page only escaped, the script element closed where the page closes it.
    assert "<script>alert(1)" not in page and page.count("</script>") == 2
    assert "\\u003c/script>\\u003cscript>alert(1)\\u003c/script>" in page


@pytest.mark.parametrize(
    ("body", "label"),
    [
        ({"instructions": "Triage the ask.", "input": "hi"}, '"Triage the ask."'),  # the Responses API
        ({"system": [{"type": "text", "text": "Be a cat."}], "messages": []}, '"Be a cat."'),  # anthropic
        ({"messages": [{"role": "developer", "content": "Be brief."}]}, '"Be brief."'),
        ({"messages": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]}, '"two"'),
        ({"messages": []}, ""),
    ],
)
def test_a_call_label_is_the_system_prompt_else_the_last_user_message(body: Any, label: str) -> None:
    assert call_label(request_messages(body), Reply()) == label


def test_every_part_of_a_message_content_reads_as_text_or_a_tool_call() -> None:
    """Text as it is, a tool's result as its text or JSON, a tool call as a call (no text), another part by its
    type, an empty part or one that is no part as nothing."""
    content = [
        "plain",
        {"type": "text", "text": "typed"},
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "72F"}]},
        {"functionResponse": {"name": "weather", "response": {"temp": 72}}},
        {"type": "tool_use", "name": "weather", "input": {"city": "Oslo"}},
        {"functionCall": {"name": "forecast", "args": {}}},
        {"type": "image", "source": {}},
        {"inlineData": {"mimeType": "image/png"}},
        {},
        7,
    ]
    [message] = request_messages({"messages": [{"role": "user", "content": content}]})
    assert message.text.split("\n") == [
        "plain",
        "typed",
        "72F",
        '{"name": "weather", "response": {"temp": 72}}',
        "[image]",
        "[inlineData]",
    ]
    assert message.tool_calls == [ToolCall("weather", '{"city": "Oslo"}'), ToolCall("forecast", "{}")]
    assert request_messages("not a body") == [] and request_messages({"input": "hi"}) == [Message("user", "hi")]


def test_a_call_label_stays_short_on_a_hostile_call() -> None:
    """A prompt of a million words and a reply of 100,000 tool calls: a label of about 60 characters."""
    calls = [ToolCall("t" * 100)] + [ToolCall(f"t{n}") for n in range(100_000)]
    label = call_label([Message("system", "word " * 1_000_000)], Reply(tool_calls=calls))
    assert len(label) <= 70 and label.endswith("...") and label.startswith('"word word')
    assert call_label([Message("user", "x" * 1_000_000)], Reply()) == '"' + "x" * 56 + ' ..."'


def test_the_page_embeds_its_data_safely(tmp_path: Path) -> None:
    """Text that looks like HTML or a closing script tag stays text."""
    from vcr_transport._tools._html import html_page

    call = RecordedCall(0, "POST", "https://x.invalid/v1/chat/completions", [], {"json": {"messages": []}})
    call.status, call.outcome = 200, "complete"
    call.response_headers = [("content-type", "application/json")]
    call.chunks = [json.dumps({"choices": [{"message": {"content": "</script><b>bold</b>"}}]}).encode()]
    page = html_page(Cassette("x.jsonl", {"format_version": 1}, [call]))
    assert "</script><b>" not in page and page.count("</script>") == 2


# --- a decompression bomb: every view finishes, in bounded memory, with a note ----------------------------

BOUND = 16 * 1024 * 1024  # MAX_DECODED_BYTES for these tests: a bomb past it is cheap to make and to stop
BOMB_MEMBER = 16 * 1024 * 1024


def _gzip_bomb(declared: int) -> bytes:
    """Concatenated gzip members of zeros declaring ``declared`` bytes (16 KB stored for each 16 MiB)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    zero = b"\0" * (1024 * 1024)
    member = b"".join(compressor.compress(zero) for _ in range(BOMB_MEMBER // len(zero))) + compressor.flush()
    return member * (declared // BOMB_MEMBER)


def _bomb_cassette(path: Path, declared: int) -> Path:
    """A cassette as the recorder writes it: a chat call whose gzip answer declares ``declared`` bytes, in
    chunks, then a call with a plain answer."""
    from vcr_transport._core.format._format import call_end_line, event_lines, header_line, request_line, response_line

    bomb = _gzip_bomb(declared)
    chunks = [(bomb[i : i + 256 * 1024], 1_000_000 * n) for n, i in enumerate(range(0, len(bomb), 256 * 1024))]
    gzip_headers = [("content-type", "application/json"), ("content-encoding", "gzip")]
    plain = [(json.dumps({"choices": [{"message": {"content": "fine"}}]}).encode(), 1_000_000)]
    lines = [encode_line(header_line())]
    for index, (headers, body) in enumerate([(gzip_headers, chunks), ([("content-type", "application/json")], plain)]):
        lines.append(encode_line(request_line(index, "POST", "https://api.openai.com/v1/chat/completions", [], None)))
        lines.append(encode_line(response_line(index, 200, headers)))
        lines.append(event_lines(index, 0, body, 0))
        lines.append(encode_line(call_end_line(index, len(body), "complete")))
    path.write_bytes(b"".join(lines))
    return path


BOMB_COMMANDS: dict[str, tuple[list[str], int, str]] = {
    "show": (["show", "{a}"], 0, "body: application/json, {size} bytes, sha256 "),
    "show --json": (["show", "--json", "{a}"], 0, '"response_note": "gzip body decodes past'),
    "show --textconv": (["show", "--textconv", "{a}"], 0, "response.body: application/json, {size} bytes"),
    "show --html": (["show", "--html", "{a}"], 0, "bytes of binary data; gzip body decodes past"),
    "show --har -": (["show", "--har", "-", "{a}"], 0, '"comment": "gzip body decodes past'),
    "diff": (["diff", "{a}", "{b}"], 1, "call 0"),
    "scan": (["scan", "{a}"], 1, "searched as stored, not decoded"),
    "verify": (["verify", "{a}"], 0, ""),
}


@pytest.mark.parametrize("command", BOMB_COMMANDS)
def test_a_gzip_bomb_is_shown_encoded_with_a_note_in_bounded_memory(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A body declaring 16 times the bound (256 MiB here, the same as 10 GB against the real bound): every
    command that reads it finishes, names the bound, and holds less than twice the bound."""
    from vcr_transport._core.format import _bodies

    monkeypatch.setattr(_bodies, "MAX_DECODED_BYTES", BOUND, raising=False)
    a = _bomb_cassette(tmp_path / "a.jsonl", 16 * BOUND)
    b = _bomb_cassette(tmp_path / "b.jsonl", 17 * BOUND)
    args, code, expected = BOMB_COMMANDS[command]
    size = len(_gzip_bomb(16 * BOUND))
    tracemalloc.start()
    try:
        done = cli(tmp_path, *[arg.format(a=a, b=b) for arg in args])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert done.returncode == code, done.stdout + done.stderr
    assert expected.format(size=size) in done.stdout + done.stderr
    note = f"gzip body decodes past {BOUND:,} bytes"
    if command not in ("diff", "verify"):
        assert note in done.stdout + done.stderr
    assert peak < 2 * BOUND + 16 * size, f"{peak:,} bytes held for a bound of {BOUND:,} (the body stored: {size:,})"


def test_a_gzip_bomb_replays_its_recorded_bytes_as_they_are(tmp_path: Path) -> None:
    """The bound is the readers': replay hands the client the stored bytes, never decoding them."""
    import vcr_transport

    cassette = _bomb_cassette(tmp_path / "a.jsonl", 16 * BOUND)
    replaying = vcr_transport.use_cassette(cassette, mode="replay", ignore_headers=("*",), unplayed="ignore")
    with replaying, httpx2.Client() as client:
        with client.stream("POST", "https://api.openai.com/v1/chat/completions") as response:
            raw = b"".join(response.iter_raw())
    assert raw == _gzip_bomb(16 * BOUND) and response.headers["content-encoding"] == "gzip"


# --- one call as show --json and the textconv lines print it ---------------------------------------------


def _shown_calls() -> list[RecordedCall]:
    """A WebSocket session (a text and a binary message), an SSE stream, a binary body that failed mid-way,
    and a call that never got a response."""
    session = RecordedCall(
        3, "GET", "wss://x.invalid/v1/realtime", [("authorization", "Bearer x"), ("x-a", "1")], None, 101
    )
    session.response_headers, session.owner = [("date", "now")], "tests/test_a.py::test_b"
    session.messages = [("client", '{"type":"hello"}', 0.5), ("server", b"\x00\x01", 0.75)]
    session.close, session.outcome = (1000, "bye", "client"), "complete"
    stream = RecordedCall(
        1, "POST", "https://x.invalid/v1/chat", [("content-type", "application/json")], {"json": {"a": 1}}
    )
    stream.status, stream.response_headers = 200, [("content-type", "text/event-stream")]
    stream.chunks, stream.offsets, stream.outcome = [b'data: {"x": 1}\n\n', b"data: [DONE]\n\n"], [0.1, 0.2], "complete"
    binary = RecordedCall(
        2, "POST", "https://x.invalid/v1/audio", [], {"text": "hi"}, 200, [("content-type", "audio/mpeg")]
    )
    binary.chunks, binary.outcome = [bytes(range(256))], "error"
    binary.error_class, binary.error_message = "ReadTimeout", "slow"
    failed = RecordedCall(4, "POST", "https://x.invalid/v1/x", [], None)
    failed.outcome, failed.error_class, failed.error_message = "error", "ConnectError", "refused"
    return [session, stream, binary, failed]


def test_show_json_of_a_session_a_stream_a_binary_body_and_a_failed_call() -> None:
    from vcr_transport._tools._render import call_json

    session, stream, binary, failed = (call_json(call_view(call)) for call in _shown_calls())
    assert list(session)[-3:] == ["test", "messages", "close"]
    assert session["messages"] == [
        {"from": "client", "t": 0.5, "text": '{"type":"hello"}'},
        {"from": "server", "t": 0.75, "base64": "AAE="},
    ]
    assert session["close"] == {"code": 1000, "reason": "bye", "by": "client"}
    assert "response_text" not in session and "sse_events" not in session
    assert stream["sse_events"] == ['data: {"x": 1}', "data: [DONE]"]
    assert (stream["first_chunk_s"], stream["last_chunk_s"], stream["events"]) == (0.1, 0.2, 2)
    assert list(binary)[-2:] == ["error", "response_text"]
    assert binary["error"] == {"class": "ReadTimeout", "message": "slow"}
    assert base64.b64decode(binary["response_text"]) == bytes(range(256))
    assert (failed["status"], failed["response_text"], failed["error"]["class"]) == (None, "", "ConnectError")


def test_textconv_lines_of_a_session_a_stream_a_binary_body_and_a_failed_call() -> None:
    from vcr_transport._tools._render import call_lines

    session, stream, binary, failed = (list(call_lines(call_view(call))) for call in _shown_calls())
    assert session == [
        "call 3: GET wss://x.invalid/v1/realtime",
        "  test: tests/test_a.py::test_b",
        "  request.headers.authorization: Bearer x",
        "  request.headers.x-a: 1",
        "  response.status: 101 HTTP/1.1",
        '  message[0].client: {"type": "hello"}',
        "  message[1].server: binary, 2 bytes, sha256 b413f47d13ee",
        "  close: 1000 'bye' by the client",
        "  outcome: complete",
    ]
    assert stream[-4:] == [
        "  response.stream: 2 events in 2 chunks",
        '  response.stream[0]: data: {"x": 1}',
        "  response.stream[1]: data: [DONE]",
        "  outcome: complete",
    ]
    assert binary == [
        "call 2: POST https://x.invalid/v1/audio",
        "  request.body.text: hi",
        "  response.status: 200 HTTP/1.1",
        "  response.headers.content-type: audio/mpeg",
        "  response.body: audio/mpeg, 256 bytes, sha256 40aff2e9d2d8",
        "  outcome: error: ReadTimeout: slow",
    ]
    assert failed == ["call 4: POST https://x.invalid/v1/x", "  error: ConnectError: refused"]
