"""Diffs a reviewer can trust (``_core._diff``, ``_core._review``, ``diff`` and textconv): calls paired by their
requests, what the matcher treats as volatile hidden unless asked, whitespace-only and padding-only changes said
so, multipart parts by name, filename, type and size, long values cut to a head, a length and a hash."""

from __future__ import annotations

import base64
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from helpers import recording
from real_wire import with_real_headers
from test_cli import OPENAI, cli
from upstream import Upstream
from vendors import VENDOR_ROUTES

import vcr_transport
from vcr_transport._core.views._review import change_kind, cut_long, request_parts
from vcr_transport._storage import read_cassette
from vcr_transport._tools._diff import MOST_CHANGED_CHARACTERS, cassette_differences, changed_words, paired_calls

CHAT = "https://api.openai.com/v1/chat/completions"


def _call(
    body: Any,
    answer: Any,
    *,
    url: str = CHAT,
    headers: list[tuple[str, str]] | None = None,
    response_headers: list[tuple[str, str]] | None = None,
    chunks: list[bytes] | None = None,
) -> dict[str, Any]:
    stored = {"json": body} if not isinstance(body, dict) or "base64" not in body else body
    return {
        "url": url,
        "headers": headers or [["content-type", "application/json"]],
        "body": stored,
        "response_headers": response_headers
        if response_headers is not None
        else with_real_headers([("content-type", "application/json")], "openai"),
        "chunks": chunks or [json.dumps(answer).encode()],
    }


def write_cassette(path: Path, calls: list[dict[str, Any]], *, interleave: bool = False) -> Path:
    """A cassette of ``calls``; ``interleave``: their lines mixed as concurrent calls leave them."""
    per_call: list[list[dict[str, Any]]] = []
    for index, call in enumerate(calls):
        lines: list[dict[str, Any]] = [
            {
                "type": "request",
                "call_index": index,
                "method": "POST",
                "url": call["url"],
                "headers": call["headers"],
                "body": call["body"],
            },  # fmt: skip
            {
                "type": "response",
                "call_index": index,
                "status": 200,
                "headers": call["response_headers"],
                "http_version": "HTTP/1.1",
            },  # fmt: skip
        ]
        for number, chunk in enumerate(call["chunks"]):
            lines.append(
                {
                    "type": "event",
                    "call_index": index,
                    "event_index": number,
                    "t": 0.01 * (number + 1),
                    "text": chunk.decode(),
                }  # fmt: skip
            )
        lines.append(
            {"type": "call_end", "call_index": index, "event_count": len(call["chunks"]), "outcome": "complete"}
        )
        per_call.append(lines)
    if interleave:
        ordered = [
            line for rank in range(max(map(len, per_call))) for lines in per_call for line in lines[rank : rank + 1]
        ]
    else:
        ordered = [line for lines in per_call for line in lines]
    header = {"type": "header", "format_version": 1}
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [header, *ordered]))
    return path


def _ask(prompt: str, model: str = "gpt-4o") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": prompt}]}


def _answer(text: str, id_: str = "chatcmpl-1") -> dict[str, Any]:
    return {"id": id_, "created": 1, "choices": [{"message": {"role": "assistant", "content": text}}]}


# --- pairing ----------------------------------------------------------------------------------------------


def test_calls_are_paired_by_their_requests_not_by_position(tmp_path: Path) -> None:
    calls = [_call(_ask(f"question {n}"), _answer(f"answer {n}")) for n in range(4)]
    a = write_cassette(tmp_path / "a.jsonl", calls, interleave=True)
    b = write_cassette(tmp_path / "b.jsonl", [calls[2], calls[0], calls[3], calls[1]], interleave=True)
    result = cli(tmp_path, "diff", "a.jsonl", "b.jsonl")
    assert result.returncode == 0, result.stdout
    assert result.stdout.startswith("0 differences between a.jsonl (4 calls) and b.jsonl (4 calls)")
    pairs = paired_calls(read_cassette(a).calls, read_cassette(b).calls)
    assert pairs == [(2, 0), (0, 1), (3, 2), (1, 3)]
    # The same in git diff: the textconv of a concurrent cassette lists its calls by request.
    assert (
        cli(tmp_path, "show", "--textconv", "a.jsonl").stdout.splitlines()[1:]
        == (cli(tmp_path, "show", "--textconv", "b.jsonl").stdout.splitlines()[1:])
    )


def test_a_call_inserted_in_the_middle_shifts_nothing(tmp_path: Path) -> None:
    calls = [_call(_ask(f"question {n}"), _answer(f"answer {n}")) for n in range(3)]
    write_cassette(tmp_path / "a.jsonl", calls)
    write_cassette(tmp_path / "b.jsonl", [calls[0], _call(_ask("new"), _answer("new")), calls[1], calls[2]])
    result = cli(tmp_path, "diff", "a.jsonl", "b.jsonl")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"call 1, field call: only in B: POST {CHAT}"
    assert lines[1].startswith("1 difference between"), result.stdout


def test_a_changed_prompt_pairs_with_its_old_call(tmp_path: Path) -> None:
    calls = [_call(_ask(f"question {n}"), _answer(f"answer {n}")) for n in range(3)]
    write_cassette(tmp_path / "a.jsonl", calls)
    changed = _call(_ask("question one, reworded"), _answer("answer 1"))
    write_cassette(tmp_path / "b.jsonl", [calls[0], calls[2], changed])
    document = json.loads(cli(tmp_path, "diff", "--json", "a.jsonl", "b.jsonl").stdout)
    assert [(d["a_call"], d["b_call"], d["field_path"]) for d in document["differences"]] == [
        (1, 2, "body.messages[0].content")
    ]


# --- volatile, whitespace, padding ------------------------------------------------------------------------


def test_a_re_recording_shows_the_changed_prompt_and_hides_the_volatile(tmp_path: Path) -> None:
    """Two real recordings through the SDK: the vendor's real headers change on every answer (dates, request
    ids, cf-ray, cookies), the user agent may too; only the prompt and the reply are differences."""
    server = Upstream()
    for prefix, reply in VENDOR_ROUTES.values():
        server.routes[prefix] = reply
    server.start()
    try:
        for name, prompt in (("a", "cats"), ("b", "dogs")):
            OPENAI.run(
                recording(httpx2, False, tmp_path / f"{name}.jsonl"),
                server.url,
                [("chat", ["hi"]), ("stream", ["hi", "echo:hi", prompt])],
            )
    finally:
        server.stop()
    result = cli(tmp_path, "diff", "a.jsonl", "b.jsonl")
    fields = [line.split(": ", 1)[0] for line in result.stdout.splitlines()[:-1]]
    # Call 0 was asked the same: its new date, request id, cf-ray and cookies are not differences.
    assert not any(field.startswith("call 0,") for field in fields), result.stdout
    assert {"call 1, field body.messages[2].content", "call 1, field response.text"} <= set(fields)
    volatile = ("date", "x-request-id", "cf-ray", "set-cookie", "openai-processing-ms", "user-agent")
    assert not any(field.endswith(f"headers.{name}") for field in fields for name in volatile), result.stdout
    assert "volatile difference" in result.stdout.splitlines()[-1] and "--volatile shows them" in result.stdout
    shown = cli(tmp_path, "diff", "--volatile", "a.jsonl", "b.jsonl").stdout
    assert "call 0, field response.headers.date" in shown or "call 0, field response.headers.cf-ray" in shown
    # textconv hides the same: the two cassettes' textconv differ only in the prompt and the reply.
    lines_a = cli(tmp_path, "show", "--textconv", "a.jsonl").stdout.splitlines()
    lines_b = cli(tmp_path, "show", "--textconv", "b.jsonl").stdout.splitlines()
    call_1 = next(n for n, line in enumerate(lines_a) if line.startswith("call 1:"))
    changed = [(x, y) for x, y in zip(lines_a[:call_1], lines_b[:call_1], strict=True) if x != y]
    assert changed == [], "call 0 was asked the same: its textconv is the same"
    assert not any(line.startswith("  response.headers.date") for line in lines_a)
    assert any(
        line.startswith("  response.headers.date")
        for line in cli(tmp_path, "show", "--textconv", "--volatile", "a.jsonl").stdout.splitlines()
    )


def test_whitespace_only_and_padding_only_changes_are_said_so(tmp_path: Path) -> None:
    def stream(text: str, padding: str) -> list[bytes]:
        events = [
            {"object": "chat.completion.chunk", "choices": [{"delta": {"content": text}}], "obfuscation": padding}
        ]
        return [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]

    sse = [("content-type", "text/event-stream")]
    a = [
        _call(_ask("tell me"), _answer("one two")),
        _call(_ask("stream"), None, response_headers=sse, chunks=stream("same", "Xq3")),
    ]
    b = [
        _call(_ask("tell me"), _answer("one  two\n")),
        _call(_ask("stream"), None, response_headers=sse, chunks=stream("same", "Zr9pq")),
    ]
    write_cassette(tmp_path / "a.jsonl", a)
    write_cassette(tmp_path / "b.jsonl", b)
    result = cli(tmp_path, "diff", "a.jsonl", "b.jsonl")
    lines = result.stdout.splitlines()
    assert (
        "call 0, field response.body.choices[0].message.content: whitespace only: 'one two' -> 'one  two\\n'" in lines
    )
    assert "call 1, field response.events: padding only: the random padding of 1 event changed" in lines
    kinds = [
        d.kind for d in cassette_differences(read_cassette(tmp_path / "a.jsonl"), read_cassette(tmp_path / "b.jsonl"))
    ]
    assert sorted(kinds) == ["padding", "whitespace"]
    assert change_kind("response.events[3].obfuscation", "a", "b") == "padding"
    assert change_kind("body.prompt", "a b", "a c") == "changed"


# --- multipart and long values ----------------------------------------------------------------------------


def _multipart(image: bytes) -> tuple[list[tuple[str, str]], dict[str, str]]:
    boundary = "----vcrboundary7MA4YWxkTrZu0gW"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="speech.png"\r\n'
            "Content-Type: image/png\r\n\r\n"
        ).encode()
        + image
        + f"\r\n--{boundary}--\r\n".encode()
    )
    headers = [("content-type", f"multipart/form-data; boundary={boundary}")]
    return headers, {"base64": base64.b64encode(body).decode()}


def test_multipart_parts_are_shown_by_name_filename_type_and_size(tmp_path: Path) -> None:
    image = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    headers, body = _multipart(image)
    url = "https://api.openai.com/v1/audio/transcriptions"
    write_cassette(tmp_path / "a.jsonl", [_call(body, {"text": "hi"}, url=url, headers=[list(h) for h in headers])])  # type: ignore[misc]
    text = cli(tmp_path, "show", "--textconv", "a.jsonl").stdout
    assert "  request.body.parts[model]: 'whisper-1'" in text
    part = next(line for line in text.splitlines() if line.startswith("  request.body.parts[file]: "))
    assert part.startswith(f"  request.body.parts[file]: filename=speech.png, image/png, {len(image)} bytes, sha256 ")
    assert "base64" not in text and max(map(len, text.splitlines())) < 300
    shown = cli(tmp_path, "show", "a.jsonl").stdout
    assert "request body: multipart, 2 parts" in shown and "filename=speech.png" in shown


def test_a_request_body_is_read_as_parts_only_when_it_is_multipart_and_holds_some() -> None:
    headers, body = _multipart(b"\x89PNG")
    parts = request_parts(body, headers)
    assert parts is not None and [(p.name, p.filename) for p in parts] == [("model", None), ("file", "speech.png")]
    assert request_parts(body, [("content-type", "application/json")]) is None  # not multipart
    assert request_parts({"json": {"model": "whisper-1"}}, headers) is None  # no bytes to split
    assert request_parts(None, headers) is None
    assert request_parts({"text": "no boundary in here"}, headers) is None  # multipart, but no part


def test_long_values_are_cut_to_a_head_a_length_and_a_hash(tmp_path: Path) -> None:
    picture = "data:image/png;base64," + base64.b64encode(b"\x00\x01" * 750_000).decode()
    body = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": picture}}]}],
    }
    write_cassette(tmp_path / "a.jsonl", [_call(body, _answer("a picture"))])
    text = cli(tmp_path, "show", "--textconv", "a.jsonl").stdout
    assert max(map(len, text.splitlines())) < 300, "no 2,000,066-character line"
    assert f"({len(picture)} chars, sha256 " in text
    assert cut_long("short") == "short" and cut_long("x" * 20_000).startswith("x" * 32 + "… (20000 chars")
    # Two images that differ show as two hashes, not two walls.
    other = picture[:-8] + "AAAAAAA="
    body_b = json.loads(json.dumps(body).replace(picture, other))
    write_cassette(tmp_path / "b.jsonl", [_call(body_b, _answer("a picture"))])
    diff = cli(tmp_path, "diff", "a.jsonl", "b.jsonl").stdout
    assert diff.count("chars, sha256") == 2 and max(map(len, diff.splitlines())) < 500


@pytest.mark.parametrize("value", ["plain words that are not base64 at all " * 10, "short"])
def test_ordinary_text_is_never_cut(value: str) -> None:
    assert cut_long(value) == value


# --- changed words ---------------------------------------------------------------------------------------


def test_changed_words_keep_context_around_a_change_and_the_new_whitespace() -> None:
    assert (
        changed_words("a b c d e f g h i j k l", "a b c d e X g h i j k l", context=2) == "a b c d e [-f-]{+X+} g h …"
    )
    assert changed_words("one  two three", "one two  four") == "one two  [-three-]{+four+}"


def test_changed_words_of_long_texts_are_compared_by_units_then_words() -> None:
    old = " ".join(f"w{i}" for i in range(5000))
    new = old.replace("w2500 ", "v2500 ").replace("w4000 ", "")
    assert changed_words(old, new, context=1) == "…w2499 [-w2500-]{+v2500+} w2501 …w3999 [-w4000 -]w4001 …"


def test_changed_words_after_the_most_changes_are_counted() -> None:
    old = " ".join(f"w{i}" for i in range(300))
    new = " ".join(f"v{i}" if i % 2 else f"w{i}" for i in range(300))
    shown = changed_words(old, new, context=0)
    assert shown.count("[-") == 100
    assert shown.endswith("[-w199-]{+v199+} w200 … (50 more changes)")


def test_a_long_changed_side_is_cut_and_counted() -> None:
    shown = changed_words("q " + "x" * 450 + " r", "q " + "y" * 401 + " r")
    removed = "x" * MOST_CHANGED_CHARACTERS + "… (50 more characters)"
    added = "y" * MOST_CHANGED_CHARACTERS + "… (1 more characters)"
    assert shown == f"q [-{removed}-]{{+{added}+}} r"


# --- bounded work on a big cassette ----------------------------------------------------------------------


def _pairing_reference(a: list[Any], b: list[Any]) -> list[tuple[int | None, int | None]]:
    """The pairing as it was written first (a list rescanned and shifted for every call of B): what
    ``paired_calls`` must still give, in linear work."""
    from vcr_transport._core.engine._matching import RequestMatcher
    from vcr_transport._tools import _diff

    matcher = RequestMatcher()
    requests_a = [_diff._request(matcher, call) for call in a]
    requests_b = [_diff._request(matcher, call) for call in b]
    pair: dict[int, int] = {}
    free = list(range(len(a)))
    for position, request in enumerate(requests_b):
        same = next((i for i in free if requests_a[i].key == request.key), None)
        if same is not None:
            pair[position] = same
            free.remove(same)
    for position, request in enumerate(requests_b):
        nearest = sorted((i for i in free if requests_a[i].route == request.route), key=lambda i: abs(i - position))
        if position in pair or not nearest[: _diff._NEAREST]:
            continue
        chosen = min(
            nearest[: _diff._NEAREST],
            key=lambda i: (
                abs(requests_a[i].messages - request.messages),
                -_diff._alike(requests_a[i].key, request.key),
                abs(i - position),
            ),
        )
        pair[position] = chosen
        free.remove(chosen)
    pairs: list[tuple[int | None, int | None]] = [
        (requests_a[pair[j]].index if j in pair else None, requests_b[j].index) for j in range(len(b))
    ]
    return pairs + [(requests_a[i].index, None) for i in free]


def _recorded(calls: list[tuple[str, str]]) -> list[Any]:
    from vcr_transport._core.format._format import RecordedCall

    return [
        RecordedCall(index, "POST", url, [], {"json": {"messages": [{"role": "user", "content": text}] * (index % 3)}})
        for index, (url, text) in enumerate(calls)
    ]


def test_pairing_is_the_same_as_before_on_random_cassettes() -> None:
    rng = random.Random(35)
    routes = [CHAT, "https://api.openai.com/v1/embeddings", "https://api.anthropic.com/v1/messages"]
    for _ in range(200):
        words = [f"w{n}" for n in range(rng.randrange(1, 8))]
        a = _recorded([(rng.choice(routes), " ".join(rng.sample(words, k=1))) for _ in range(rng.randrange(60))])
        b = _recorded([(rng.choice(routes), " ".join(rng.sample(words, k=1))) for _ in range(rng.randrange(60))])
        assert paired_calls(a, b) == _pairing_reference(a, b)


def _lines_run(module_file: str, run: Any) -> int:
    """How many lines of ``module_file`` ``run()`` executes: a count of operations, not a time."""
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename != module_file:
            return None
        count += event == "line"
        return tracer

    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
    return count


@pytest.mark.slow  # traces every line of the pairing of 6,000 calls: 11 s
def test_pairing_many_changed_calls_grows_linearly() -> None:
    """Every request changed, on one route: pairing 4 times the calls runs about 4 times the lines (before: 16
    times in the pairing itself, 7 times in all, each call of B rescanning every unpaired call of A)."""
    from vcr_transport._tools import _diff

    def lines(n: int) -> int:
        a = _recorded([(CHAT, f"question {i}") for i in range(n)])
        b = _recorded([(CHAT, f"question {i} changed") for i in range(n)])
        return _lines_run(_diff.__file__, lambda: paired_calls(a, b))

    small, big = lines(1200), lines(4800)
    assert big < 5 * small, f"{small:,} lines for 1,200 calls, {big:,} for 4,800"


# --- concurrent agents: paired by their conversation -------------------------------------------------------

CITIES = ("Tokyo", "Paris", "Berlin")


def _weather_agents(upstream: Upstream, path: Path, *, slowest_first: bool, paris_calls: int, tokyo: str) -> None:
    """Three weather agents run together with asyncio.gather through the openai SDK, each in two turns: the
    vendor answers the question with ``get_weather`` tool calls (Paris's with ``paris_calls`` of them), the
    app runs the tool (Tokyo's weather is ``tokyo``) and sends its result. The vendor answers Tokyo first,
    then Paris, then Berlin (``slowest_first``: the other way round), so the second turns start, and are
    numbered, in that order."""
    import asyncio

    import openai
    from upstream import Received, Reply
    from vendors import OPENAI_KEY

    delays = dict(zip(CITIES, (0.05, 0.25, 0.45)[:: -1 if slowest_first else 1], strict=True))

    def answer(received: Received) -> Reply:
        messages = received.json()["messages"]
        city = next(c for c in CITIES if c in messages[0]["content"])
        if messages[-1]["role"] == "user":
            time.sleep(delays[city])
            count = paris_calls if city == "Paris" else 1
            function = {"name": "get_weather", "arguments": json.dumps({"city": city})}
            calls = [{"id": f"call_{n}", "type": "function", "function": function} for n in range(count)]
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": calls}
        else:
            time.sleep(0.3)
            message = {"role": "assistant", "content": f"{city}: {messages[-1]['content']}"}
        return Reply.json({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                           "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})  # fmt: skip

    upstream.routes["/v1/chat/completions"] = answer
    weather = {"Tokyo": tokyo, "Paris": "sunny, 21C", "Berlin": "cloudy, 12C"}

    async def agent(client: Any, city: str) -> None:
        messages: list[Any] = [{"role": "user", "content": f"What is the weather in {city}?"}]
        first = await client.chat.completions.create(model="gpt-4o", messages=messages)
        calls = first.choices[0].message.tool_calls
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        messages += [{"role": "tool", "tool_call_id": call.id, "content": weather[city]} for call in calls]
        await client.chat.completions.create(model="gpt-4o", messages=messages)

    async def run() -> None:
        async with openai.AsyncOpenAI(api_key=OPENAI_KEY, base_url=upstream.url + "/v1", max_retries=0) as client:
            await asyncio.gather(*(agent(client, city) for city in CITIES))

    with vcr_transport.use_cassette(path, mode="record"):
        asyncio.run(run())


def test_re_recorded_concurrent_agents_pair_by_their_conversation(upstream: Upstream, tmp_path: Path) -> None:
    """The second turns start in another order, Paris's answer asks for one tool call where it asked for two,
    and Tokyo's weather changed: each call still pairs with its own city's (before, Paris's second turn took
    Tokyo's, which had as many messages, and Tokyo's was compared with Paris's)."""
    _weather_agents(upstream, tmp_path / "a.jsonl", slowest_first=False, paris_calls=2, tokyo="rain, 18C")
    _weather_agents(upstream, tmp_path / "b.jsonl", slowest_first=True, paris_calls=1, tokyo="clear, 19C")
    a, b = read_cassette(tmp_path / "a.jsonl"), read_cassette(tmp_path / "b.jsonl")

    def city(call: Any) -> str:
        return str(call.body["json"]["messages"][0]["content"])

    assert [city(call) for call in a.calls[3:]] != [city(call) for call in b.calls[3:]], "the order changed"
    document = json.loads(cli(tmp_path, "diff", "--json", "a.jsonl", "b.jsonl").stdout)
    pairs = {(d["a_call"], d["b_call"]) for d in document["differences"]}
    assert pairs and all(city(a.calls[i]) == city(b.calls[j]) for i, j in pairs), pairs
    # What the calls say (the loopback vendor draws its headers' ids anew for every answer, as a real one does).
    said = {
        (city(b.calls[d["b_call"]]).split()[-1], d["field_path"], d["b"] is None)
        for d in document["differences"]
        if d["field_path"].startswith(("body.", "response.body."))
    }
    assert said == {
        ("Tokyo?", "body.messages[2].content", False),  # the tool's result
        ("Tokyo?", "response.body.choices[0].message.content", False),
        ("Paris?", "response.body.choices[0].message.tool_calls[1]", True),  # one tool call, not two
        ("Paris?", "body.messages[1].tool_calls[1]", True),
        ("Paris?", "body.messages[3]", True),
    }, said
    tokyo_a, tokyo_b = (next(c.index for c in x.calls[3:] if city(c).endswith("Tokyo?")) for x in (a, b))
    text = cli(tmp_path, "diff", "a.jsonl", "b.jsonl").stdout
    assert f"call {tokyo_a} -> {tokyo_b}, field body.messages[2].content: " in text, text
