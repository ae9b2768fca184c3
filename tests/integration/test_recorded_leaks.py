"""The leaks of issue 36, recorded: each secret goes through a real SDK (openai, anthropic) or a recording
transport at the vendor's host with the vendor's headers, to a MockTransport; the written cassette must not
hold it, ``vcr-transport scan`` must flag it in a cassette written by hand with it left in, and what must
stay (base64 media, OAuth's ``token_type``, Anthropic's thinking ``signature``, MCP's session id) stays."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import random
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import openai
import pytest

import vcr_transport
from vcr_transport._tools._cli import main as cli

KEY = "sk-proj-4fJ9kQ2mXv7LpR8sT1uW3yZ5aB6cD0eF9gH2iJ4kLm"
AWS_ID, AWS_SECRET = "AKIAIOSFODNN7EXAMPL3", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB_TOKEN = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
SLACK_SECRET = "abcdefGHIJKLmnopQRSTuvwx"
OPENAI_HEADERS = {"openai-organization": "org-test", "openai-processing-ms": "321", "x-request-id": "req_1"}
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "noted"}}],
}
# The encodings of item 1, each of the key.
ENCODINGS = {
    "hex": KEY.encode().hex(),
    "entities": "".join(f"&#{ord(c)};" for c in KEY),
    "hex entities": "".join(f"&#x{ord(c):x};" for c in KEY),
    "escapes": "".join(f"\\x{ord(c):02x}" for c in KEY),
    "double percent": "".join(f"%25{ord(c):02X}" if c == "-" else c for c in KEY),
    "base64 in prose": base64.b64encode(f"the key is {KEY}".encode()).decode(),
}
# A PNG whose bytes hold the key prefixes the rule's search looks for in base64 and hex (``sk-proj-``, ``ghp_``,
# ``AKIA``, and the hex of ``sk-proj-`` as text) at every alignment: it decodes to bytes that aren't text,
# media kept byte for byte.
_LOOK_ALIKES = b"sk-proj-" + b"x" + b"ghp_" + b"yz" + b"AKIA" + b"736b2d70726f6a2d" + b"&#115;\\x73%2573"
PNG = base64.b64encode(
    b"\x89PNG\r\n\x1a\n" + random.Random(7).randbytes(300) + _LOOK_ALIKES * 3 + random.Random(8).randbytes(300)
).decode()


def _openai(path: Path, handler: Any = None) -> openai.OpenAI:
    mock = httpx.MockTransport(handler or (lambda request: httpx.Response(200, json=ANSWER, headers=OPENAI_HEADERS)))
    http = httpx.Client(transport=vcr_transport.RecordingTransport(mock, path))
    return openai.OpenAI(api_key="sk-proj-TESTKEYabcdefghijklmnopqrstuvwxyz0123", http_client=http, max_retries=0)


def _ask(path: Path, content: Any) -> None:
    client = _openai(path)
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": content}])
    client.close()


def _scan(path: Path) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli(["scan", str(path)])
    return code, out.getvalue()


def _planted(tmp_path: Path, value: str) -> Path:
    """A cassette written by hand (never recorded) with ``value`` in a prompt: what a reviewer runs scan on."""
    lines = [
        {"type": "header", "format_version": 1},
        {
            "type": "request",
            "call_index": 0,
            "method": "POST",
            "url": "https://api.openai.com/v1/chat/completions",
            "headers": [["content-type", "application/json"]],
            "body": {"json": {"model": "m", "messages": [{"role": "user", "content": value}]}},
        },
    ]
    path = tmp_path / "planted.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_a_key_written_encoded_in_a_prompt_is_removed_and_media_beside_it_stays(tmp_path: Path, encoding: str) -> None:
    encoded = ENCODINGS[encoding]
    path = tmp_path / "c.jsonl"
    content = [
        {"type": "text", "text": f"debug this: {encoded} please"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]
    _ask(path, content)
    written = path.read_text()
    assert encoded not in written and "[secret removed] please" in written
    assert f"data:image/png;base64,{PNG}" in written, "the media is byte-identical"
    assert _scan(path)[0] == 0
    code, report = _scan(_planted(tmp_path, f"debug this: {encoded} please"))
    assert code == 1 and "planted.jsonl:2:" in report


def test_base64_media_in_responses_stays_byte_identical(tmp_path: Path) -> None:
    """An image's ``b64_json`` and audio's ``data`` whose bytes hold a key: recorded as they came."""
    audio = {**ANSWER, "choices": [{**ANSWER["choices"][0], "message": {"role": "assistant", "content": None}}]}
    audio["choices"][0]["message"]["audio"] = {"id": "audio_1", "data": PNG, "expires_at": 1, "transcript": "hi"}
    path = tmp_path / "c.jsonl"

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/images/generations"):
            return httpx.Response(200, json={"created": 1, "data": [{"b64_json": PNG}]}, headers=OPENAI_HEADERS)
        return httpx.Response(200, json=audio, headers=OPENAI_HEADERS)

    client = _openai(path, handler)
    image = client.images.generate(model="gpt-image-1", prompt="a cat")
    spoken = client.chat.completions.create(model="gpt-4o-audio-preview", messages=[{"role": "user", "content": "hi"}])
    client.close()
    assert image.data and image.data[0].b64_json == PNG and spoken.choices[0].message.audio
    assert path.read_text().count(PNG) == 2
    with httpx.Client(transport=vcr_transport.ReplayTransport(path)) as http:
        replayed = openai.OpenAI(api_key="sk-proj-TESTKEYabcdefghijklmnopqrstuvwxyz0123", http_client=http)
        assert replayed.images.generate(model="gpt-image-1", prompt="a cat").data[0].b64_json == PNG  # type: ignore[index]


def test_a_slack_webhook_keeps_its_ids_and_replays_with_another_secret(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    ids = "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/"
    mock = httpx.MockTransport(lambda request: httpx.Response(200, text="ok", headers={"x-slack-req-id": "r1"}))
    with httpx.Client(transport=vcr_transport.RecordingTransport(mock, path)) as client:
        client.post(ids + SLACK_SECRET, json={"text": "deployed"})
    written = path.read_text()
    assert SLACK_SECRET not in written and f'"url":"{ids}[secret removed]"' in written
    with httpx.Client(transport=vcr_transport.ReplayTransport(path)) as client:
        assert client.post(ids + "zyxwvuTSRQPOnmlkJIHGfedc", json={"text": "deployed"}).text == "ok"
    code, report = _scan(_planted(tmp_path, f"post to {ids}{SLACK_SECRET}"))
    assert code == 1 and f"{SLACK_SECRET[:4]}…({len(SLACK_SECRET)} chars)" in report


def test_a_slack_webhook_only_its_rule_finds_is_removed_from_both_bodies(tmp_path: Path) -> None:
    """Written ``Hooks.Slack.com`` (the catalogue's slack shape is lower case) with plain secrets, a webhook in a
    body is the Slack rule's alone; the prefilter probes it by ``SLACK_HOOKS`` in the lower case, so recording
    removes it from the request's JSON and, another secret, from the response's."""
    path, sent, echoed = tmp_path / "c.jsonl", "deployhookforchannel", "anotherhookforchannel"
    hook = "https://Hooks.Slack.com/services/T0123ABCD/B0456EFGH/"
    mock = httpx.MockTransport(lambda request: httpx.Response(200, json={"ok": True, "hook": hook + echoed}))
    with httpx.Client(transport=vcr_transport.RecordingTransport(mock, path)) as client:
        assert client.post("https://api.test/notify", json={"text": f"post to {hook}{sent} now"}).json()["ok"]
    written = path.read_text()
    assert sent not in written and echoed not in written and written.count("B0456EFGH/[secret removed]") == 2


def test_an_aws_secret_in_prose_goes_only_with_an_aws_context(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    _ask(path, f"my aws_secret_access_key is {AWS_SECRET}, and {AWS_ID} {AWS_SECRET[::-1]} too")
    written = path.read_text()
    assert AWS_SECRET not in written and AWS_SECRET[::-1] not in written and AWS_ID not in written
    alone = "a checksum: " + AWS_SECRET[:20] + AWS_SECRET[:20].lower()
    _ask(path, alone)
    assert alone in path.read_text(), "40 base64 characters with no AWS context are data"


def test_a_yaml_api_key_line_in_a_prompt_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    prompt = "Why does this fail?\nservice:\n  api_key: x7Hq92LmPzQ\n  region: eu-west-1\n"
    _ask(path, prompt)
    written = path.read_text()
    assert "x7Hq92LmPzQ" not in written and "api_key: [secret removed]" in written and "region: eu-west-1" in written
    code, report = _scan(_planted(tmp_path, prompt))
    assert code == 1 and "x7Hq…(11 chars)" in report


def test_an_oauth_answer_keeps_its_token_type_and_expiry(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    token = "ya29.a0AfH6SMBx1234567890abcdefghijklmnop"
    answer = {"access_token": token, "token_type": "Bearer", "expires_in": 3599, "scope": "openid"}
    mock = httpx.MockTransport(lambda request: httpx.Response(200, json=answer))
    with httpx.Client(transport=vcr_transport.RecordingTransport(mock, path)) as client:
        client.post(
            "https://oauth2.googleapis.com/token", data={"grant_type": "refresh_token", "refresh_token": "1//0gQ7x"}
        )
    [event] = [line for line in map(json.loads, path.read_text().splitlines()) if line["type"] == "event"]
    assert json.loads(event["text"]) == {**answer, "access_token": "[secret removed]"}


SIGNATURE = (
    "Eq8CCkYICxgCKkDdadQOXMzNBqjrNVAKWsgUfg49NpPg026zBGxIIGwEHVCq0JTW/P9fKHjZdjgO8Dyx03YDw6hN0w1HucifXFggEgzo"
    "VS5Gogi9nvJSOA8aDDYuCAX4nGGkeHQLayIw+MWbf/"
)  # the shape of a real one (base64 of a signed protobuf), cut short


def test_an_anthropic_thinking_signature_is_kept_and_a_continued_conversation_replays(tmp_path: Path) -> None:
    """Decided: a JSON ``signature`` is data (docs/explanation/redaction.md). Anthropic's thinking blocks carry
    one, which the next turn sends back and the API checks: removed, a conversation replayed and then
    continued live (record-on-miss) would be refused. It grants nothing, and the thinking it signs is in the
    cassette anyway."""
    path = tmp_path / "c.jsonl"
    thinking = {"type": "thinking", "thinking": "Two and two.", "signature": SIGNATURE}
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [thinking, {"type": "text", "text": "4"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 20},
    }
    headers = {"request-id": "req_1", "anthropic-organization-id": "org-1"}
    mock = httpx.MockTransport(lambda request: httpx.Response(200, json=answer, headers=headers))

    def conversation(http: httpx.Client) -> list[Any]:
        client = anthropic.Anthropic(api_key="sk-ant-api03-TESTKEYabcdefghijklmnopqrstuvwxyz0123", http_client=http)
        asked = [{"role": "user", "content": "2+2?"}]
        first = client.messages.create(model="claude-sonnet-4-5", max_tokens=2000, messages=asked)  # type: ignore[arg-type]
        asked += [{"role": "assistant", "content": first.content}, {"role": "user", "content": "and 3+3?"}]  # type: ignore[list-item]
        second = client.messages.create(model="claude-sonnet-4-5", max_tokens=2000, messages=asked)  # type: ignore[arg-type]
        return [first.content[0].signature, second.content[0].signature]  # type: ignore[union-attr]

    with httpx.Client(transport=vcr_transport.RecordingTransport(mock, path)) as http:
        assert conversation(http) == [SIGNATURE, SIGNATURE]
    assert path.read_text().count(SIGNATURE) == 3, "two answers and the block sent back"
    with httpx.Client(transport=vcr_transport.ReplayTransport(path)) as http:
        assert conversation(http) == [SIGNATURE, SIGNATURE]
    assert _scan(path)[0] == 0


def test_an_mcp_session_id_is_kept_and_not_flagged(tmp_path: Path) -> None:
    """Decided: ``mcp-session-id`` is kept (docs/explanation/redaction.md): MCP forbids sessions as
    authentication, a recorded session ends with its DELETE, and the id tells one recording from the next."""
    path = tmp_path / "c.jsonl"
    session = "2b340d77e0594a45b85e5fafce71d0b4"
    mock = httpx.MockTransport(
        lambda request: httpx.Response(
            200, json={"jsonrpc": "2.0", "id": 1, "result": {}}, headers={"mcp-session-id": session}
        )
    )
    with httpx.Client(transport=vcr_transport.RecordingTransport(mock, path)) as client:
        client.post("http://127.0.0.1:8000/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize"})
        client.post(
            "http://127.0.0.1:8000/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={"mcp-session-id": session},
        )
    assert path.read_text().count(session) == 3
    assert _scan(path)[0] == 0


@pytest.mark.parametrize("encoding", ["hex", "entities", "base64 in prose"])
def test_a_key_written_encoded_across_stream_deltas_is_removed(tmp_path: Path, encoding: str) -> None:
    """The model answers with the key encoded, cut across three deltas: the app gets it whole, the cassette
    holds none of its pieces."""
    encoded = ENCODINGS[encoding]
    third = len(encoded) // 3
    pieces = ["Your key: ", encoded[:third], encoded[third : 2 * third], encoded[2 * third :], " done"]

    def event(content: str) -> str:
        delta = {"index": 0, "delta": {"content": content}, "finish_reason": None}
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [delta]}
        return f"data: {json.dumps(chunk)}\n\n"

    body = ("".join(map(event, pieces)) + "data: [DONE]\n\n").encode()
    path = tmp_path / "c.jsonl"
    client = _openai(
        path, lambda request: httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    )
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "key?"}], stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream) == "".join(pieces)
    client.close()
    written = path.read_text()
    assert not [piece for piece in pieces[1:4] if piece in written]


def _stream_of(pieces: list[str]) -> bytes:
    def event(content: str) -> str:
        delta = {"index": 0, "delta": {"content": content}, "finish_reason": None}
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [delta]}
        return f"data: {json.dumps(chunk)}\n\n"

    return ("".join(map(event, pieces)) + "data: [DONE]\n\n").encode()


@pytest.mark.parametrize("cut", [30, 40, 60])
def test_a_key_cut_after_a_first_piece_of_its_shape_leaves_none_of_its_rest(tmp_path: Path, cut: int) -> None:
    """The first delta holds enough of the key to be a key's shape on its own: its line loses it, and the rest,
    which the next deltas carry and which alone is no key's shape, goes too (it was written as it came)."""
    from real_wire import real_headers

    key = "sk-proj-Xq7Lm2Pz9Rt4Vb6Nc1Kd8Hw3Js5Gf0Ay2Eu9Oi4TyT3BlbkFJMn6Bv8Cx1Za3Sd5Fg7Hj9Kl2Qw4Er6Ty8Ui0Op2As4Df6"
    pieces = ["Your key is ", key[:cut], key[cut : cut + 20], key[cut + 20 :], ". Keep it safe."]
    body = _stream_of(pieces)
    headers = [*real_headers("openai"), ("content-type", "text/event-stream")]
    path = tmp_path / "c.jsonl"
    client = _openai(path, lambda request: httpx.Response(200, content=body, headers=headers))
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "key?"}], stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream) == "".join(pieces)
    client.close()
    written = path.read_text()
    assert key[cut + 4 :][:8] not in written and key[-8:] not in written
    sse = "".join(json.loads(line)["text"] for line in written.splitlines() if '"event"' in line)
    chunks = [json.loads(event[6:]) for event in sse.split("\n\n") if event.startswith("data: {")]
    assert (
        "".join(chunk["choices"][0]["delta"]["content"] for chunk in chunks)
        == "Your key is [secret removed]. Keep it safe."
    )
    empty = '\\"content\\": \\"\\"'  # the first piece of the rest, emptied: the rest put back there by hand
    leaked = tmp_path / "leaked.jsonl"
    leaked.write_text(written.replace(empty, empty[:-2] + key[cut:] + '\\"', 1))
    code, out = _scan(leaked)
    assert code == 1 and key[cut : cut + 4] in out


def _coded(encoding: str, data: bytes, undo: bool = False) -> bytes:
    """``data`` encoded by ``encoding``'s codings in order (``undo``: decoded, last first)."""
    import gzip
    import zlib

    import brotli

    encode = {"gzip": lambda d: gzip.compress(d, mtime=0), "deflate": zlib.compress, "br": brotli.compress}
    decode = {"gzip": gzip.decompress, "deflate": zlib.decompress, "br": brotli.decompress}
    names = [part.strip() for part in encoding.split(",") if part.strip()]
    for name in reversed(names) if undo else names:
        data = (decode if undo else encode)[name](data)
    return data


OPAQUE = "Zq8Rm3Tn6Wp1Ks4Lv7Hx2Cd5Fb9Gj0Ny"  # no shape: removed by its field's name only


def _recorded(tmp_path: Path, method: str, url: str, **request: Any) -> Path:
    """A cassette of one request, recorded through a transport answered with openai's real headers."""
    from real_wire import real_headers

    path = tmp_path / "c.jsonl"
    answer = [*real_headers("openai"), ("content-type", "application/json")]
    mock = httpx.MockTransport(lambda _: httpx.Response(200, json=ANSWER, headers=answer))
    with httpx.Client(transport=vcr_transport.RecordingTransport(mock, path)) as client:
        client.request(method, url, **request)
    return path


_FORM = "application/x-www-form-urlencoded"
BODIES = {
    "deflate json": ({"content-type": "application/json", "content-encoding": "deflate"}, json.dumps({"note": KEY})),
    "br json": ({"content-type": "application/json", "content-encoding": "br"}, json.dumps({"note": KEY})),
    "gzip, gzip json": ({"content-type": "application/json", "content-encoding": "gzip, gzip"}, json.dumps({"k": KEY})),
    "form client+secret": ({"content-type": _FORM}, f"grant=x&client+secret={OPAQUE}"),
    "form user[password]": ({"content-type": _FORM}, f"user[password]={OPAQUE}&a=b"),
    "form token[]": ({"content-type": _FORM}, f"token[]={OPAQUE}"),
    "multipart api_key": (
        {"content-type": "multipart/form-data; boundary=xyz"},
        f'--xyz\r\nContent-Disposition: form-data; name="api_key"\r\n\r\n{OPAQUE}\r\n--xyz--\r\n',
    ),
}


@pytest.mark.parametrize("kind", list(BODIES))
def test_scan_flags_what_recording_removes_from_a_request_body_of_every_kind(tmp_path: Path, kind: str) -> None:
    """Recording stores a request body by its type and encoding (decoded, redacted, encoded again; a form by its
    fields' names; multipart by its parts'): scan reads the body the same way, so a value put back is flagged.
    It read only gzip, and forms and multipart as free text."""
    headers, text = BODIES[kind]
    secret = KEY if KEY in text else OPAQUE
    encoding = headers.get("content-encoding", "")
    path = _recorded(
        tmp_path, "POST", "https://api.openai.com/v1/files", content=_coded(encoding, text.encode()), headers=headers
    )
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    body = lines[1]["body"]
    stored = _coded(encoding, base64.b64decode(body["base64"]), undo=True).decode() if encoding else body["text"]
    assert secret not in stored and "[secret removed]" in stored
    planted = stored.replace("[secret removed]", secret)
    packed = base64.b64encode(_coded(encoding, planted.encode())).decode()
    lines[1]["body"] = {"base64": packed} if encoding else {"text": planted}
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out = _scan(path)
    assert code == 1 and secret[:4] in out


QUERIES = {
    "inside a redirect, percent-encoded": "/oauth/cb?redirect=https%3A%2F%2Fapp.test%2F%3Faccess_token%3D{}",
    "inside a next path, percent-encoded": "/login?next=%2Fcb%3Ftoken%3D{}",
    "inside a redirect": "/oauth/cb?redirect=https://app.test/?token={}&state=1",
    "a bracketed name": "/x?user[password]={}&a=b",
    "an array name": "/x?token[]={}",
}


@pytest.mark.parametrize("where", list(QUERIES))
def test_a_secret_named_query_parameter_anywhere_in_the_url_loses_its_value(tmp_path: Path, where: str) -> None:
    """A parameter inside another's value (a redirect URL's, escaped or not) and a bracketed name (``a[b]``,
    ``a[]``, which forms already read) lose their values; scan flags them put back."""
    path = _recorded(tmp_path, "GET", "https://api.example.com" + QUERIES[where].format(OPAQUE))
    written = path.read_text()
    assert OPAQUE not in written and "[secret removed]" in json.loads(written.splitlines()[1])["url"]
    path.write_text(written.replace("[secret removed]", OPAQUE))
    code, out = _scan(path)
    assert code == 1 and OPAQUE[:4] in out


NAMED_IN_CODE = {
    "a quoted YAML name": "config:\n  'api_key': '{}'\n",
    "a Python dict": "settings = {{'model': 'm', 'api_key': '{}'}}",
    "a keyword argument": "client = Mistral(api_key='{}', timeout=3)",
    "os.environ": 'os.environ["OPENAI_API_KEY"] = "{}"',
    "a declaration": 'const apiKey = "{}";',
    "a sigil": "$password = '{}'",
    "XML CDATA": "<creds><password><![CDATA[{}]]></password></creds>",
    "a command-line flag": "$ cohere chat --api-key {} --model command-r",
}


@pytest.mark.parametrize("form", list(NAMED_IN_CODE))
def test_a_value_under_a_secret_name_in_code_in_a_prompt_is_removed(tmp_path: Path, form: str) -> None:
    """A prompt quoting code or config: the value a secret name is given goes, whatever the language writes
    around the name; scan flags it in a cassette holding it."""
    prompt = "Why does this fail?\n" + NAMED_IN_CODE[form].format(OPAQUE)
    path = tmp_path / "c.jsonl"
    _ask(path, prompt)
    written = path.read_text()
    assert OPAQUE not in written and "[secret removed]" in written
    code, report = _scan(_planted(tmp_path, prompt))
    assert code == 1 and f"{OPAQUE[:4]}…" in report


@pytest.mark.parametrize(
    "key", [GITHUB_TOKEN, AWS_ID, "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"], ids=["ghp", "akia", "aiza"]
)
@pytest.mark.parametrize("pad", ["", "x", "xy"], ids=["aligned", "one after", "two after"])
def test_a_four_character_prefix_in_base64_prose_is_found_at_every_alignment(
    tmp_path: Path, key: str, pad: str
) -> None:
    """A four-character prefix fixes only four base64 characters at one of the three alignments: those were
    not searched for (ghp_, AKIA, AIza in base64 text at that alignment were kept)."""
    encoded = base64.b64encode(f"{pad}token {key} end".encode()).decode()
    path = tmp_path / "c.jsonl"
    _ask(path, f"decode this: {encoded}")
    assert encoded not in path.read_text()
    assert _scan(_planted(tmp_path, f"decode this: {encoded}"))[0] == 1


def test_a_sentence_under_a_secret_name_in_quoted_code_is_kept_and_not_learned(tmp_path: Path) -> None:
    """An error message under a secret name (``{'token': 'Authentication required'}``) is a message: its first
    word was taken for a secret, learned, and removed from the whole recording, the answer included."""
    prompt = "Why a 401? return JsonResponse({'token': 'Authentication required'}, status=401)"
    said = "Authentication middleware must run first. Check Authentication classes."
    message = {"role": "assistant", "content": said}
    answer = {**ANSWER, "choices": [{**ANSWER["choices"][0], "message": message}]}
    path = tmp_path / "c.jsonl"
    from real_wire import real_headers

    headers = [*real_headers("openai"), ("content-type", "application/json")]
    client = _openai(path, lambda request: httpx.Response(200, json=answer, headers=headers))
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    client.close()
    written = path.read_text()
    lines = [json.loads(line) for line in written.splitlines()]
    asked, said_back = lines[1]["body"]["json"]["messages"][0]["content"], lines[3]["text"]
    assert asked == prompt and "[secret removed]" not in said_back and written.count("Authentication") == 3
    assert reply.choices[0].message.content == said
