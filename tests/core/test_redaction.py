"""Redaction: no secret reaches a cassette, in any position, and nothing else is damaged."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import string
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from helpers import finishes_within, recording
from hypothesis import given, settings
from hypothesis import strategies as st
from real_wire import vendor_traffic
from test_catalogue import FAKES, PLANTED
from upstream import Received, Reply, Upstream
from vendors import VENDOR_ROUTES, Sdk

import vcr_transport
from vcr_transport import PLACEHOLDER, Redactor, remove_secret_values
from vcr_transport._core.format._bodies import _redact_json, redact_url, stored_body
from vcr_transport._core.rules._stream import StreamRedactor, delta_texts, redact_body

SECRET_NAMES = [
    "authorization",
    "Proxy-Authorization",
    "api_key",
    "API-KEY",
    "x-api-key",
    "X-Goog-Api-Key",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "Cookie",
    "set-cookie",
    "secret",
    "client_secret",
    "password",
    "session_key",
    "github_token",
    "stripe_secret_key",
    "db_password",
    "X-Custom-Api-Key",
    "client-secret",
    "accessToken",
    "apiKey",
    "private_key",
]
NOT_SECRET_NAMES = [
    "max_tokens",
    "input_tokens",
    "cache_read_input_tokens",
    "num_keys",
    "next_page_token",
    "pageToken",
    "totalTokenCount",
    "token_type",
    "keys",
    "cache_key",
    "idempotency-key",
    "model",
    "key",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names_lose_their_whole_value(name: str) -> None:
    assert Redactor().is_secret_name(name)
    assert remove_secret_values({name: {"nested": ["anything"]}, "keep": 1}) == {name: PLACEHOLDER, "keep": 1}


@pytest.mark.parametrize("name", NOT_SECRET_NAMES)
def test_counters_and_cursors_are_not_secrets(name: str) -> None:
    assert not Redactor().is_secret_name(name)
    assert remove_secret_values({name: 42}) == {name: 42}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.DEF-123_456~xyz", "Authorization: Bearer [secret removed]"),
        ("key sk-abcdefghijklmnopqrstuvwxyz012345 end", "key [secret removed] end"),
        ("sk-proj-AbC123abcdefghijklmnopqrstuvwxyz_-", "[secret removed]"),
        ("x=sk-ant-api03-AbC123abcdefghijklmnopqrstuvwxyz_-;", "x=[secret removed];"),
        ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "[secret removed]"),
        ("https://h.test/v1?key=abc&alt=sse", "https://h.test/v1?key=[secret removed]&alt=sse"),
        ('{"key": "source_url", "stringValue": "x"}', '{"key": "source_url", "stringValue": "x"}'),
        (
            "GET /x?api_key=abc&access_token=def&token=ghi&q=1",
            "GET /x?api_key=[secret removed]&access_token=[secret removed]&token=[secret removed]&q=1",
        ),
        ("https://user:pa55@h.test/path", "https://[secret removed]@h.test/path"),
        ('{"password": "hunter2", "user": "ann"}', '{"password": "[secret removed]", "user": "ann"}'),
    ],
)
def test_secret_shapes_in_free_text(text: str, expected: str) -> None:
    assert Redactor().redact_text(text) == expected
    assert Redactor().redact_text(expected) == expected


def test_shapes_match_on_token_boundaries_only() -> None:
    blob = (
        "QV-LkkeZmLtcyacM9K3K4kiGbeqEcrsk-zshBfrWRcwrRDeRmFQ91RiniL8HCCu3wu"
        "+/sk-abcdefghijklmnopqrstuvwx/AIzaSyA1234567890abcdefghijklmnopqrstuvX"
    )
    assert Redactor().redact_text(blob) == blob


def test_bare_token_in_a_response_is_removed_only_when_it_looks_like_a_credential() -> None:
    logprobs = {
        "logprobs": {
            "content": [{"token": " Hello", "logprob": -0.1, "top_logprobs": [{"token": "Hi", "logprob": -2}]}]
        }
    }
    assert Redactor().redact_value(logprobs, response=True) == logprobs
    oauth = {"token": "ya29.a0AfH6SMBx3k9Qz7Lr2Tq", "token_type": "Bearer"}
    assert Redactor().redact_value(oauth, response=True) == {"token": PLACEHOLDER, "token_type": "Bearer"}
    text = json.dumps(logprobs)
    assert Redactor().redact_text(text, response=True) == text
    assert Redactor().redact_value({"token": " Hello"}) == {"token": PLACEHOLDER}, "in a request, token is a credential"


def test_user_rules_add_to_the_defaults() -> None:
    redactor = Redactor(
        names=["customer_id"], patterns=[r"[\w.]+@example\.com"], callables=[lambda s: s.replace("ACME-7", "[id]")]
    )
    got = redactor.redact_value({"customer_id": "c1", "note": "mail ann@example.com ACME-7", "api_key": "k"})
    assert got == {"customer_id": PLACEHOLDER, "note": f"mail {PLACEHOLDER} [id]", "api_key": PLACEHOLDER}


def test_a_secret_split_across_chunks_does_not_leak_and_boundaries_stay() -> None:
    secret = "sk-proj-SPLITabcdefghijklmnopqrstuvwxyz"
    data = f'data: {{"delta": "{secret}"}}\n\ndata: {{"delta": "ok"}}\n\n'.encode()
    for size in (1, 3, 7, 16, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        redactor = StreamRedactor(Redactor())
        out: list[tuple[bytes, Any]] = []
        for index, chunk in enumerate(chunks):
            out += redactor.feed(chunk, index)
        out += redactor.finish()
        assert [tag for _, tag in out] == list(range(len(chunks))), "every chunk comes out once, in order"
        joined = b"".join(chunk for chunk, _ in out)
        assert joined == data.replace(secret.encode(), PLACEHOLDER.encode())
        tail = data.index(b'\n\ndata: {"delta": "ok"}')
        original_ends = [sum(map(len, chunks[: i + 1])) for i in range(len(chunks))]
        new_ends = [sum(len(c) for c, _ in out[: i + 1]) for i in range(len(out))]
        shift = len(PLACEHOLDER) - len(secret)
        assert [e + shift for e in original_ends if e > tail] == [e for e in new_ends if e > tail + shift]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_a_secret_spread_over_deltas_is_removed_whatever_ends_the_lines(newline: str) -> None:
    """Fixed for CR: the delta search read lines at LF only, so a stream whose lines end with CR alone (which
    the SSE standard allows) had its deltas never reassembled, and a key sent over three deltas was kept."""
    from vcr_transport._core.rules._stream import redact_body

    secret = "sk-proj-CRLINESabcdefghijklmnopqrstuvwxyz0123"
    pieces = [" " + secret[:10], secret[10:25], secret[25:]]
    body = "".join(
        f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': piece}}]})}{newline}{newline}"
        for piece in [" hi", *pieces, " bye"]
    ).encode()
    redacted = redact_body(body, Redactor())
    assert not any(piece.encode() in redacted for piece in pieces)
    assert PLACEHOLDER.encode() in redacted and redacted.count(newline.encode()) == body.count(newline.encode())


json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(alphabet=string.ascii_letters + " .,!?é", max_size=20)
)
safe_keys = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8).filter(
    lambda k: not Redactor().is_secret_name(k)
)
json_values = st.recursive(
    json_leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(safe_keys, c, max_size=4), max_leaves=20
)
any_json = st.recursive(
    json_leaf | st.sampled_from(["sk-abcdefghijklmnopqrstuvwxyz01", "Bearer abcdefgh12345", "https://u:p@h/x?key=1"]),
    lambda c: (
        st.lists(c, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "password", "token", "max_tokens", "x"]), c, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(any_json)
@pytest.mark.slow
def test_redaction_is_idempotent(value: Any) -> None:
    once = remove_secret_values(value)
    assert remove_secret_values(once) == once
    text = json.dumps(value)
    assert Redactor().redact_text(Redactor().redact_text(text)) == Redactor().redact_text(text)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_json_without_secrets_comes_through_unchanged(value: Any) -> None:
    assert remove_secret_values(value) == value
    text = json.dumps(value)
    assert Redactor().redact_text(text, response=True) == text


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=600), st.booleans())
def test_base64_blobs_survive(blob: bytes, urlsafe: bool) -> None:
    encoded = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(b"\x00" + blob).decode()
    document = {"inline_data": {"mime_type": "image/png", "data": encoded}}
    assert remove_secret_values(document) == document


def test_vendor_corpus_bodies_survive_redaction_intact() -> None:
    """Real traffic (tests/fixtures/wire): base64 media (some holding 'sk-z...' by chance), logprob tokens,
    metadata keys. The only values that change are the OAuth credentials of one exchange (already scrubbed
    there)."""
    changed = []
    bodies = [json.dumps([e["request"]["body"], e["response"]["body"]]) for _, e in vendor_traffic()]
    assert any("sk-" in body for body in bodies), "the fixtures hold media with a key's prefix in it by chance"
    for _, interaction in vendor_traffic():
        for side, is_response in (("request", False), ("response", True)):
            body = interaction[side]["body"]
            value = body.get("json", body.get("text"))
            redacted = Redactor().redact_value(value, response=is_response)
            if "application/x-www-form-urlencoded" in str(interaction[side]["headers"]).lower():
                redacted = Redactor().redact_form(value)
            while (difference := vcr_transport.find_first_difference(value, redacted)) is not None:
                path, before, _ = difference
                changed.append((path or before.split("=")[0], before))
                value = redacted if not path else _set(value, path, difference[2])
    assert changed
    assert all(before == "scrubbed" or "=scrubbed" in before for _, before in changed), changed
    assert {path.split("&")[0] for path, _ in changed} <= {"access_token", "id_token", "grant_type"}


def _set(value: Any, path: str, new: Any) -> Any:
    copy = json.loads(json.dumps(value))
    target = copy
    keys = re.findall(r"[^.\[\]]+", path)
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    last = keys[-1]
    target[int(last) if isinstance(target, list) else last] = new
    return copy


def test_vendor_corpus_still_loses_planted_credentials() -> None:
    body = vendor_traffic("test_anthropic")[0][1]["request"]["body"]["json"]
    planted = {**body, "metadata": {"token": "plain-credential-value", "api_key": "k"}}
    cleaned = remove_secret_values(planted)
    assert cleaned["metadata"] == {"token": PLACEHOLDER, "api_key": PLACEHOLDER}


# --- planted secrets through the real SDKs --------------------------------------------------------------


def _secret(seed: str, n: int, shape: str = "plain") -> str:
    digest = hashlib.sha256(f"{seed}-{n}".encode()).hexdigest()
    return {
        "plain": f"PlAnTeD{digest[:20]}",
        "sk": f"sk-proj-{digest[:32]}",
        "ant": f"sk-ant-api03-{digest[:32]}",
        "google": "AIza" + (digest + digest)[:35],
        "bearer": f"Bear3r{digest[:24]}",
    }[shape]


NESTED_NAMES = [
    "db_password",
    "client_secret",
    "github_token",
    "stripe_secret_key",
    "session_key",
    "refresh_token",
    "api_key",
    "apiKey",
    "x-api-key",
    "password",
    "private_key",
    "access_key",
    "id_token",
    "secret",
    "X-Custom-Api-Key",
    "client-secret",
    "accessToken",
    "passwd",
    "aws_secret_access_key",
    "slack_token",
    "authToken",
    "smtp_password",
]


def _planted_upstream(upstream: Upstream, sdk: Sdk, secrets: list[str]) -> None:
    seed = sdk.id
    response_headers = [("set-cookie", f"sid={_secret(seed, 900)}; Path=/"), ("x-api-key", _secret(seed, 901))]
    secrets += [_secret(seed, 900), _secret(seed, 901)]
    token_response = {
        "access_token": _secret(seed, 910),
        "refresh_token": _secret(seed, 911),
        "id_token": _secret(seed, 912),
        "token": _secret(seed, 913) + "x9",
        "token_type": "Bearer",
        "expires_in": 3600,
        "credentials": {"password": _secret(seed, 914), "client_secret": _secret(seed, 915)},
        "note": f"issued Bearer {_secret(seed, 916)} for https://svc:{_secret(seed, 917)}@auth.test/",
    }
    secrets += [_secret(seed, n) for n in range(910, 918)]
    prefix, vendor = VENDOR_ROUTES[sdk.name]

    def with_headers(reply: Reply) -> Reply:
        reply.headers = [*reply.headers, *response_headers]
        return reply

    upstream.routes[prefix] = lambda received: with_headers(vendor(received, split=7, pause=0.0005))
    upstream.routes["/planted/json"] = upstream.routes["/v1/planted/json"] = lambda r: with_headers(
        Reply.json(token_response)
    )
    upstream.routes["/planted/error"] = upstream.routes["/v1/planted/error"] = lambda r: Reply.json(
        {
            "error": {
                "message": f"Incorrect API key provided: {_sent_key(r)}.",
                "type": "invalid_request_error",
            }
        },
        status=401,
    )


def _sent_key(received: Received) -> str:
    return received.headers.get("authorization") or received.headers.get("x-goog-api-key", "")


def _cassette_text(path: Path) -> str:
    """Every byte of the cassette, with base64-stored chunks and bodies decoded, lower-cased."""
    parts = [path.read_text()]
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        encoded = obj.get("base64") or (obj.get("body") or {}).get("base64")
        if encoded:
            parts.append(base64.b64decode(encoded).decode("utf-8", "replace"))
    return "\n".join(parts).lower()


def test_planted_secrets_never_reach_the_cassette(sdk: Sdk, upstream: Upstream, tmp_path: Path) -> None:
    seed = sdk.id
    secrets: list[str] = []
    _planted_upstream(upstream, sdk, secrets)
    key = _secret(seed, 1, {"openai": "sk", "anthropic": "ant", "genai": "google"}[sdk.name])
    userinfo_password = _secret(seed, 2)
    headers = {
        "X-Custom-Api-Key": _secret(seed, 3),
        "Cookie": f"session={_secret(seed, 4)}",
        "Proxy-Authorization": f"Basic {_secret(seed, 5)}",
        "x-github-token": _secret(seed, 6),
        "x-trace-note": f"Bearer {_secret(seed, 7)}",
    }
    secrets += [key, userinfo_password, *(_secret(seed, n) for n in range(3, 8))]
    options: dict[str, Any] = {"api_key": key}
    if sdk.name == "genai":
        options["http_options"] = {"headers": headers}
    else:
        options["default_headers"] = headers
        options["default_query"] = {"access_token": _secret(seed, 8), "key": _secret(seed, 9)}
        secrets += [_secret(seed, 8), _secret(seed, 9)]
    nested = {name: _secret(seed, 100 + i) for i, name in enumerate(NESTED_NAMES)}
    secrets += list(nested.values())
    body = {"grant_type": "refresh", "metadata": {"deep": [{"inner": nested}]}, "max_tokens": 5}
    prompt_secrets = [_secret(seed, 200, "sk"), _secret(seed, 201, "google"), _secret(seed, 202, "ant")]
    secrets += prompt_secrets
    prompt = f"keys {prompt_secrets[0]} and {prompt_secrets[1]} then {prompt_secrets[2]} done"
    base_url = upstream.url.replace("http://", f"http://user:{userinfo_password}@")
    path = "planted/json" if sdk.name == "genai" else "/planted/json"

    cassette = tmp_path / "planted.jsonl"
    results = sdk.run(
        recording(sdk.library, sdk.is_async, cassette),
        base_url,
        [("stream", [prompt]), ("post", [path, json.dumps(body)])],
        **options,
    )
    assert prompt_secrets[0] in "".join(results[0]), "the caller still sees the live bytes"
    assert results[1]["access_token"] == _secret(seed, 910)
    errors = tmp_path / "error.jsonl"
    with pytest.raises(Exception, match="Incorrect API key"):
        sdk.run(
            recording(sdk.library, sdk.is_async, errors, keep_failures=True),
            base_url,
            [("post", [path.replace("json", "error"), "{}"])],
            **options,
            **({} if sdk.name == "genai" else {"max_retries": 0}),
        )

    assert len(set(secrets)) >= 40
    for written in (cassette, errors):
        text = _cassette_text(written)
        leaked = [s for s in secrets if s.lower() in text]
        assert leaked == []
        assert PLACEHOLDER in text


def test_form_bodies_and_exception_messages_are_redacted(tmp_path: Path) -> None:
    cassette = tmp_path / "form.jsonl"
    with httpx2.Client(
        transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette, keep_failures=True)
    ) as client:
        with pytest.raises(httpx2.ConnectError):
            client.post(
                "http://127.0.0.1:1/token?key=AIzaQUERYSECRET0123456789abcdefghijklm",
                data={"password": "FORMSECRET1", "api_key": "FORMSECRET2", "user": "ann"},
            )
    text = cassette.read_text()
    assert "FORMSECRET" not in text and "QUERYSECRET" not in text
    assert "user=ann" in text


def test_key_a_recorded_key_b_replayed_still_matches(upstream: Upstream, tmp_path: Path) -> None:
    from vendors import SDKS

    sdk = next(s for s in SDKS if s.name == "openai" and s.side == "sync")
    cassette = tmp_path / "keys.jsonl"
    sdk.run(
        recording(sdk.library, False, cassette),
        upstream.url,
        [("chat", ["hi"])],
        api_key="sk-proj-KEYAabcdefghijklmnopqrstuvwxyz",
    )
    upstream.stop()
    replay = vcr_transport.ReplayTransport(cassette)
    assert sdk.run(replay, upstream.url, [("chat", ["hi"])], api_key="sk-proj-KEYBzyxwvutsrqponmlkjihgfedcba") == [
        "echo:hi"
    ]
    assert "KEYA" not in cassette.read_text()


def test_response_content_length_stays_true_when_redaction_changes_the_length(tmp_path: Path) -> None:
    secret = b'{"access_token": "abcdefghijklmnopqrstuvwxyz0123456789"}'
    cassette = tmp_path / "len.jsonl"

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200,
            headers={"content-type": "application/json", "content-length": str(len(secret))},
            stream=httpx2.ByteStream(secret),
        )

    with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.MockTransport(handler), cassette)) as client:
        client.get("https://a.test/")
    with httpx2.Client(transport=vcr_transport.ReplayTransport(cassette)) as client:
        response = client.get("https://a.test/")
    assert response.json() == {"access_token": PLACEHOLDER}
    assert int(response.headers["content-length"]) == len(response.content)
    assert re.search(rb"abcdefghij", cassette.read_bytes()) is None


@pytest.mark.parametrize("library_name", ["httpx", "httpx2"])
def test_secrets_in_a_gzip_response_are_removed_and_replay_stays_consistent(tmp_path: Path, library_name: str) -> None:
    import gzip as gzip_module

    library = __import__(library_name)
    token = b'{"access_token": "ya29.GZIPPEDSECRET0123456789abcdef", "token_type": "Bearer", "expires_in": 3599}'
    compressed = gzip_module.compress(token)
    pieces = [compressed[:10], compressed[10:25], compressed[25:]]

    class Pieces(library.SyncByteStream):  # type: ignore[misc, name-defined]
        def __iter__(self) -> Any:
            yield from pieces

    def handler(request: Any) -> Any:
        headers = {
            "content-type": "application/json",
            "content-encoding": "gzip",
            "content-length": str(len(compressed)),
        }
        return library.Response(200, headers=headers, stream=Pieces())

    cassette = tmp_path / "gzip.jsonl"
    with library.Client(transport=vcr_transport.RecordingTransport(library.MockTransport(handler), cassette)) as client:
        assert client.post("https://auth.test/token").json()["access_token"].startswith("ya29.GZIPPED"), (
            "live is untouched"
        )
    events = [json.loads(line) for line in cassette.read_text().splitlines() if '"event"' in line]
    stored = b"".join(base64.b64decode(e["base64"]) for e in events)
    assert b"GZIPPEDSECRET" not in gzip_module.decompress(stored)
    assert len(events) == 1, "a rewritten body is stored as one chunk"
    with library.Client(transport=vcr_transport.ReplayTransport(cassette)) as client:
        response = client.post("https://auth.test/token")
    assert response.json() == {"access_token": PLACEHOLDER, "token_type": "Bearer", "expires_in": 3599}
    assert response.headers["content-length"] == str(len(stored))


def test_a_gzip_body_without_secrets_keeps_its_bytes_and_boundaries(tmp_path: Path) -> None:
    import gzip as gzip_module

    compressed = gzip_module.compress(b'{"ok": true, "max_tokens": 5}')
    pieces = [compressed[:7], compressed[7:]]

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-encoding": "gzip"}, stream=ChunkList(pieces))

    cassette = tmp_path / "gzip-clean.jsonl"
    with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.MockTransport(handler), cassette)) as client:
        client.get("https://a.test/")
    assert list(vcr_transport._storage.read_cassette(cassette).calls[0].events) == pieces


class ChunkList(httpx2.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Any:
        yield from self.chunks


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"client_secret": {"value": "abc", "n": [1, 2]}, "x": 1}', '{"client_secret": "[secret removed]", "x": 1}'),
        ('{"password": 1234, "ok": "y"}', '{"password": "[secret removed]", "ok": "y"}'),
        ('{"api_key": [{"a": "}"}], "b": "c"}', '{"api_key": "[secret removed]", "b": "c"}'),
        ('{"note": "he said \\\\"password\\\\": 5"}', '{"note": "he said \\\\"password\\\\": 5"}'),
        ('data: {"token": " Hello", "logprob": -1}\n\n', 'data: {"token": " Hello", "logprob": -1}\n\n'),
    ],
)
def test_json_text_loses_the_whole_value_of_a_secret_key(text: str, expected: str) -> None:
    """Response bodies are redacted as text, so nested values under a secret name go whole there too."""
    assert Redactor().redact_text(text, response=True) == expected
    assert Redactor().redact_text(expected, response=True) == expected


SECRET_SAMPLES = [
    "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "Bearer abcdEFGH1234ijklMNOP",
    '"access_token": "opaque-credential-value-1"',
    "https://u:hunter2@db.test/",
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(SECRET_SAMPLES), st.text(alphabet=string.ascii_letters + " é✓{}:,", max_size=30)),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30),
)
def test_stream_redaction_catches_secrets_however_the_stream_is_split(parts: list[str], cuts: list[int]) -> None:
    lines = [f"data: {part}\n\n" for part in parts]
    data = "".join(lines).encode()
    chunks, position = [], 0
    for size in cuts * (len(data) // max(1, sum(cuts)) + 1):
        if position >= len(data):
            break
        chunks.append(data[position : position + size])
        position += size
    redactor = StreamRedactor(Redactor())
    out: list[tuple[bytes, Any]] = []
    for index, chunk in enumerate(chunks):
        out += redactor.feed(chunk, index)
    out += redactor.finish()
    assert [tag for _, tag in out] == list(range(len(chunks)))
    joined = b"".join(chunk for chunk, _ in out).decode()
    assert joined == Redactor().redact_text(data.decode(), response=True)
    for secret in ("ABCDEFGHIJKLMNOP", "1234567890abcdefghij", "abcdEFGH1234", "opaque-credential", "hunter2"):
        assert secret not in joined


# --- the prefilter --------------------------------------------------------------------------------------
# ``Redactor.could_redact``, the prefilter that lets replay (and recording) skip redacting a request body or
# URL: whenever it answers False, redacting the text, any piece of it, or the JSON it holds changes nothing.
# Proved on thousands of generated texts built from near misses: secret names, catalogue samples and their
# prefixes, URL and query punctuation, escapes, learned values and their encodings.

LEARNED = "Zq7learnedSecretValue42"
NAMES = ["api_key", "apiKey", "password", "token", "max_tokens", "next_page_token", "key", "code", "sig", "X-Api-Key"]
WORDS = ["hello", "world", "model", "messages", "content", "role", "user", "tokens", "monkey", "keyboard"]
PUNCTUATION = [" ", "\n", "/", "://", "@", "?", "&", "#", ";", "=", ":", '"', "{", "}", "[", "]", ",", "\\n", "\\\\"]
ESCAPES = ["%41", "%2F", "%e9", "%C3%A9", "\\u0041", "\\u00e9", "\\/", '\\"', "\u0130", "\u212a", "\u017f", "é"]
NEAR_MISSES = [
    "sk-",
    "sk",
    "AK",
    "AC",
    "SK",
    "eyJ",
    "ghp",
    "basic ",
    "bearer ",
    "Bearer abc",
    "aws",
    "password=",
    "basically",
]


def _fragments(rng: random.Random) -> list[str]:
    samples = [fake(rng)[0] for fake in FAKES.values()]
    learned = [LEARNED, LEARNED[:12], base64.b64encode(LEARNED.encode()).decode(), LEARNED.upper()]
    return [*NAMES, *WORDS, *PUNCTUATION, *ESCAPES, *NEAR_MISSES, *samples, *learned]


def _text(rng: random.Random, fragments: list[str], rate: float = 0.25) -> str:
    # Mostly plain words, so that a good share of the texts can't be redacted and the claim is tested.
    plain = [*WORDS, " ", "/", ",", ":", "\n"]
    pieces = [rng.choice(fragments if rng.random() < rate else plain) for _ in range(rng.randint(1, 12))]
    return "".join(pieces)


def _json_value(rng: random.Random, fragments: list[str], depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.25:
        return {_key(rng, fragments): _json_value(rng, fragments, depth + 1) for _ in range(rng.randint(1, 4))}
    if depth < 3 and roll < 0.35:
        return [_json_value(rng, fragments, depth + 1) for _ in range(rng.randint(0, 3))]
    if roll < 0.45:
        return rng.choice([True, False, None, 7, 2.5])
    if roll < 0.5:  # JSON text inside a JSON string, as a tool call's arguments
        return json.dumps({_key(rng, fragments): _text(rng, fragments, 0.03)})
    return _text(rng, fragments, 0.03)


def _key(rng: random.Random, fragments: list[str]) -> str:
    return rng.choice(NAMES) if rng.random() < 0.03 else _text(rng, fragments, 0.03)[:24] or "k"


def _redactor(rng: random.Random) -> Redactor:
    redactor = Redactor()
    if rng.random() < 0.5:
        redactor.learn(LEARNED)
    return redactor


@pytest.mark.slow
def test_could_redact_false_means_redact_text_changes_nothing_in_the_text_or_any_piece() -> None:
    rng = random.Random(20261130)
    fragments = _fragments(rng)
    texts = [_text(rng, fragments) for _ in range(4000)]
    texts += [carried for _, _, carried, _ in PLANTED]
    unredactable = 0
    for text in texts:
        seed = rng.random()
        if _redactor(random.Random(seed)).could_redact(text):
            continue
        unredactable += 1
        assert _redactor(random.Random(seed)).redact_text(text) == text, text
        start = rng.randrange(len(text) + 1)
        piece = text[start : rng.randint(start, len(text))]
        assert _redactor(random.Random(seed)).redact_text(piece) == piece, (text, piece)
        url = "https://h.test/" + text.replace(" ", "/")
        if not _redactor(random.Random(seed)).could_redact(url):
            assert redact_url(url, _redactor(random.Random(seed))) == url
    # Enough texts pass the prefilter for the claim to be tested, and enough fail it for it to filter.
    assert 1000 < unredactable < len(texts) - 1000


@pytest.mark.slow
def test_could_redact_false_means_a_json_body_keeps_every_key_and_string() -> None:
    rng = random.Random(11302026)
    fragments = _fragments(rng)
    unredactable = 0
    for number in range(2000):
        document = {_key(rng, fragments): _json_value(rng, fragments) for _ in range(rng.randint(1, 5))}
        text = json.dumps(document, ensure_ascii=number % 2 == 0)
        seed = rng.random()
        if _redactor(random.Random(seed)).could_redact(text):
            continue
        unredactable += 1
        assert _redactor(random.Random(seed)).redact_value(document) == document, text
        assert _redact_json(json.loads(text), _redactor(random.Random(seed))) == document, text
        stored = stored_body(text.encode(), "application/json", _redactor(random.Random(seed)))
        assert stored == {"json": document}
    assert 300 < unredactable < 1700


def test_every_catalogue_sample_and_secret_named_json_key_could_be_redacted() -> None:
    redactor = Redactor()
    for name, position, carried, _ in PLANTED:
        assert redactor.could_redact(carried), (name, position)
    for name in ("api_key", "apiKey", "password", "token", "X-Api-Key"):
        assert redactor.could_redact(json.dumps({"a": {name: "value-of-it"}})), name


def test_a_learned_value_or_a_user_rule_makes_any_text_redactable() -> None:
    redactor = Redactor()
    plain = f"the value {base64.b64encode(LEARNED.encode()).decode()} here"
    assert not redactor.could_redact(plain)
    redactor.learn(LEARNED)
    assert redactor.could_redact(plain)
    assert Redactor(patterns=[r"nothing"]).could_redact("hello")
    assert Redactor(callables=[str.upper]).could_redact("hello")


# --- names that generalise, siblings, free text, userinfo, the final pass -------------------------------

ANY_WORD_SECRETS = ["X-Auth-Key", "accesstoken", "clientsecret", "privatekey", "private_key_pem", "auth"]
ANY_WORD_SECRETS += ["credentials", "api_keys", "SecretString", "hapikey", "app_key", "license_key", "userPassword"]
ANY_WORD_SECRETS += ["access_tokens", "xsrftoken", "auth_token_value", "DB_PASSWORDS", "masterKey"]
ANY_WORD_KEPT = ["max_tokens", "token_type", "tokenizer", "author", "monkey", "keywords", "secret_name"]
ANY_WORD_KEPT += ["api_key_id", "password_hint", "token_count", "tokenBudget", "prompt_cache_key", "public_key"]
ANY_WORD_KEPT += ["eos_token_id", "pagetoken", "maxtokens", "hotkeys", "authority", "sort_key"]


@pytest.mark.parametrize("name", ANY_WORD_SECRETS)
def test_a_secret_word_anywhere_makes_a_name_secret(name: str) -> None:
    assert Redactor().is_secret_name(name)
    assert remove_secret_values({name: "value-of-it"}) == {name: PLACEHOLDER}


@pytest.mark.parametrize("name", ANY_WORD_KEPT)
def test_descriptors_counters_and_look_alikes_stay_kept(name: str) -> None:
    assert not Redactor().is_secret_name(name)
    assert remove_secret_values({name: "value-of-it"}) == {name: "value-of-it"}


def test_key_is_a_secret_anywhere_in_a_header_or_query_name_but_not_in_json() -> None:
    redactor = Redactor()
    for name in ("Fastly-Key", "x-rapidapi-key", "DD-APPLICATION-KEY", "x-portkey-virtual-key"):
        assert redactor.is_secret_name(name, header=True) and redactor.is_secret_name(name, query=True), name
    assert not redactor.is_secret_name("Fastly-Key"), "in JSON, 'key' after a word that isn't a qualifier is data"
    assert not redactor.is_secret_name("Idempotency-Key", header=True)
    assert not redactor.is_secret_name("x-ratelimit-remaining-tokens", header=True)
    assert redactor.redact_headers([("X-Honeycomb-Team", "hc-team-key-0123")]) == [("X-Honeycomb-Team", PLACEHOLDER)]
    url = "https://api.openweathermap.org/data/2.5/weather?q=Paris&appid=0123abcd4567efgh"
    assert Redactor().redact_text(url) == url.replace("0123abcd4567efgh", PLACEHOLDER)


def test_a_value_named_by_its_sibling_is_a_secret() -> None:
    env = {"env": [{"name": "MISTRAL_API_KEY", "value": "mistral-9f8e7d6c"}, {"name": "DEBUG", "value": "1"}]}
    expected = {"env": [{"name": "MISTRAL_API_KEY", "value": PLACEHOLDER}, {"name": "DEBUG", "value": "1"}]}
    assert Redactor().redact_value(env) == expected
    assert json.loads(Redactor().redact_text(json.dumps(env))) == expected
    ssm = {"Parameter": {"Name": "/prod/db/password", "Type": "SecureString", "Value": "s3cr3t-v4lue", "Version": 3}}
    assert json.loads(Redactor().redact_text(json.dumps(ssm)))["Parameter"]["Value"] == PLACEHOLDER
    assert Redactor().could_redact(json.dumps(ssm))
    metadata = {"key": "source_url", "value": "https://example.test/a"}
    assert Redactor().redact_value(metadata) == metadata


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("config:\nOPENAI_API_KEY=Zq7abc123def456\nDEBUG=1", "Zq7abc123def456"),
        ("  api_key: Zq7abc123def456\n", "Zq7abc123def456"),
        ('{"content": "my file:\\nexport GROQ_TOKEN=Zq7abc123def456\\n"}', "Zq7abc123def456"),
        ("password: hunter22", "hunter22"),
        ("redis://:Zq7redisPassw0rd@cache.internal:6379", "Zq7redisPassw0rd"),
        ("postgres://app:pa#ss?w0rd@db.internal/app", "pa#ss?w0rd"),
    ],
)
def test_assignments_in_free_text_and_userinfo_lose_their_value(text: str, secret: str) -> None:
    redactor = Redactor()
    assert redactor.could_redact(text)
    redacted = redactor.redact_text(text)
    assert secret not in redacted and PLACEHOLDER in redacted
    assert redactor.redact_text(redacted) == redacted


@pytest.mark.parametrize("text", ["Key: the main point", "author: Jane Austen", "max_tokens=4096", "Tokens: many"])
def test_prose_and_counters_that_look_like_assignments_stay(text: str) -> None:
    assert Redactor().redact_text(text) == text


def test_the_final_pass_removes_a_value_learned_after_its_line_was_written() -> None:
    redactor = Redactor()
    token = "Zq9loginTokenValue1234567"
    early = (json.dumps({"type": "event", "text": json.dumps({"key": token})}) + "\n").encode()
    payload = base64.b64encode(f"data: {token}\n".encode()).decode()
    binary = (json.dumps({"type": "event", "base64": payload}) + "\n").encode()
    assert redactor.redact_text(early.decode()) == early.decode(), "a 'key' in JSON is data: nothing is learned"
    assert redactor.final_pass(early) == early
    redactor.redact_headers([("authorization", f"Token {token}")])
    cleaned = redactor.final_pass(early)
    assert token not in cleaned.decode() and PLACEHOLDER in json.loads(cleaned)["text"]
    decoded = base64.b64decode(json.loads(redactor.final_pass(binary))["base64"])
    assert token.encode() not in decoded and PLACEHOLDER.encode() in decoded
    assert redactor.holds_learned(early) and not redactor.holds_learned(cleaned)


def test_base64_text_documents_are_searched_decoded_and_encoded_again() -> None:
    text = b"notes\nDB_PASSWORD=Zq7hunter2222\nkey sk-proj-abcdefghijklmnopqrstuvwxyz012345\n"
    doc = base64.b64encode(text).decode()
    image = base64.b64encode(b"\x89PNG\r\n DB_PASSWORD=elsewhere0 sk-proj-notLearnedHere0123456789abcdefgh").decode()
    body = {
        "anthropic": {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": doc}},
        "openai": {"type": "file", "file": {"file_data": "data:text/plain;base64," + doc}},
        "gemini": {"inline_data": {"mime_type": "text/markdown", "data": doc}},
        "image": {"type": "base64", "media_type": "image/png", "data": image},
    }
    redactor = Redactor()
    assert redactor.could_redact(json.dumps(body))
    out = redactor.redact_value(body)
    payloads = [
        out["anthropic"]["source"]["data"],
        out["openai"]["file"]["file_data"].partition(",")[2],
        out["gemini"]["inline_data"]["data"],
    ]
    for payload in payloads:
        decoded = base64.b64decode(payload)
        assert b"Zq7hunter2222" not in decoded and b"sk-proj-" not in decoded and decoded.startswith(b"notes\n")
    assert out["image"] == body["image"], "a binary media type is kept as it came"


# --- every stream protocol reassembled, whatever the reads ---------------------------------------------

STREAM_SECRET = "sk-proj-Q7streamKEYabcdefghijklmnopqrstuvwxyz0123"


def _pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    return b"".join(
        (f"event: {name}\n".encode() if name else b"") + b"data: " + json.dumps(data).encode() + b"\n\n"
        for name, data in events
    )


PROSE = "the key is " + STREAM_SECRET + " as asked"
STREAMS: dict[str, tuple[bytes, bool]] = {
    "ollama chat ndjson": (
        b"".join(
            json.dumps({"model": "llama3", "message": {"role": "assistant", "content": p}, "done": False}).encode()
            + b"\n"
            for p in _pieces(PROSE)
        )
        + b'{"model": "llama3", "done": true}\n',
        True,
    ),
    "ollama generate ndjson": (
        b"".join(json.dumps({"response": p, "done": False}).encode() + b"\n" for p in _pieces(PROSE)),
        True,
    ),
    "legacy completions text": (_sse([(None, {"choices": [{"text": p, "index": 0}]}) for p in _pieces(PROSE)]), True),
    "reasoning_content": (
        _sse([(None, {"choices": [{"delta": {"reasoning_content": p}, "index": 0}]}) for p in _pieces(PROSE)]),
        True,
    ),
    "openrouter reasoning": (
        _sse([(None, {"choices": [{"delta": {"reasoning": p, "content": None}, "index": 0}]}) for p in _pieces(PROSE)]),
        True,
    ),
    "cohere v2 content-delta": (
        _sse(
            [
                ("content-delta", {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": p}}}})
                for p in _pieces(PROSE)
            ]
        ),
        True,
    ),
    "anthropic input_json_delta": (
        _sse(
            [
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 1,
                        "delta": {"type": "input_json_delta", "partial_json": p},
                    },  # noqa: E501
                )
                for p in _pieces(json.dumps({"query": PROSE}))
            ]
        ),
        True,
    ),
    "pretty-printed json": (
        json.dumps({"id": "x", "credentials": {"api_key": STREAM_SECRET[8:]}}, indent=2)
        .replace(": {", ":\n{")
        .encode(),
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(STREAMS))
@pytest.mark.slow
def test_every_stream_protocol_is_reassembled_at_every_split_point(name: str) -> None:
    """The secret a model repeats piece by piece, in every protocol, is removed however the body is cut in
    two reads, and in as many reads as it has bytes; a JSON value waits for its line to end."""
    body, deltas = STREAMS[name]
    secret = STREAM_SECRET[8:] if name == "pretty-printed json" else STREAM_SECRET
    cuts: list[list[bytes]] = [[body[:i], body[i:]] for i in range(1, len(body))]
    cuts.append([body[i : i + 1] for i in range(len(body))])
    for reads in cuts:
        stream = StreamRedactor(Redactor(), deltas=deltas)
        out = [piece for index, read in enumerate(reads) for piece in stream.feed(read, index)] + stream.finish()
        written = b"".join(piece for piece, _ in out)
        assert [tag for _, tag in out] == list(range(len(reads))), "every read comes out once, in order"
        reassembled = "".join(piece for pieces in delta_texts(written).values() for piece in pieces)
        assert secret not in written.decode() + reassembled, (name, len(reads))
        assert PLACEHOLDER in written.decode() + reassembled


XML_SECRETS = [
    (
        "<AssumeRoleResponse><Credentials><SecretAccessKey>Q7wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY"
        "</SecretAccessKey><SessionToken>Q7FwoGZXIvYXdzEJrwEaDQ7session</SessionToken></Credentials>"
        "</AssumeRoleResponse>",
        ["Q7wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY", "Q7FwoGZXIvYXdzEJrwEaDQ7session"],
    ),
    (
        '<soap:Envelope><wsse:UsernameToken><wsse:Username>ann</wsse:Username><wsse:Password Type="PasswordText">'
        "Q7hunter2secret</wsse:Password></wsse:UsernameToken></soap:Envelope>",
        ["Q7hunter2secret"],
    ),
    (
        '<configuration><api_key>Q7apikeyvalue123</api_key><add key="ClearTextPassword" value="Q7nugetpass99"/>'
        '<db password="Q7attrpass1234" host="db.internal"/></configuration>',
        ["Q7apikeyvalue123", "Q7nugetpass99", "Q7attrpass1234"],
    ),
]


@pytest.mark.parametrize(("xml", "secrets"), XML_SECRETS, ids=["sts", "soap", "config"])
def test_xml_bodies_get_the_name_rules(xml: str, secrets: list[str], tmp_path: Path) -> None:
    """Secret-named XML elements and attributes lose their text, in a request and a response body recorded
    through a real client; the markup and the other values stay."""
    redacted = Redactor().redact_text(xml)
    assert not any(secret in redacted for secret in secrets)
    assert redacted.count(PLACEHOLDER) == len(secrets)
    assert re.sub(r"\[secret removed\]", "", redacted) == re.sub("|".join(secrets), "", xml)
    cassette = tmp_path / "c.jsonl"

    def reply(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/xml"}, content=xml.encode())

    transport = vcr_transport.RecordingTransport(httpx2.MockTransport(reply), cassette)
    with httpx2.Client(transport=transport) as client:
        assert client.post("https://sts.example.test/", content=xml, headers={"content-type": "text/xml"}).text == xml
    transport.close()
    written = cassette.read_text()
    assert not any(secret in written for secret in secrets)
    assert written.count(xml[:12]) == 2, "the markup of both bodies is kept"


def test_xml_look_alikes_stay() -> None:
    text = "<s>hello</s> <token_count>12</token_count> <password_hint>a pet</password_hint> <max_tokens>9</max_tokens>"
    assert Redactor().redact_text(text) == text


def test_binary_bodies_and_parts_are_searched_as_bytes_and_text_data_urls_decoded(tmp_path: Path) -> None:
    """An octet-stream upload and a multipart file part with bytes that aren't UTF-8 lose a catalogued key
    (the other bytes kept); a base64 data URL of a text type inside a text body is searched decoded and
    encoded again; an image without a key is stored byte-identical."""
    key = "ghp_Q7binaryKEYabcdefghijklmnopqrstuvwxyz01"
    octets = b"\x00\x01\xff upload " + key.encode() + b" \xfe\x00"
    part = b"\xff\xd8\xff " + key.encode() + b" \x00"
    multipart = (
        b'--B\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + part + b"\r\n--B--\r\n"
    )
    document = base64.b64encode(b"DB_PASSWORD=Q7documentSecret1234\n").decode()
    text = f"summarise data:text/plain;base64,{document} please"
    image = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64
    cassette = tmp_path / "c.jsonl"
    transport = vcr_transport.RecordingTransport(httpx2.MockTransport(lambda request: httpx2.Response(204)), cassette)
    with httpx2.Client(transport=transport) as client:
        client.post("https://h.test/a", content=octets, headers={"content-type": "application/octet-stream"})
        client.post("https://h.test/b", content=multipart, headers={"content-type": "multipart/form-data; boundary=B"})
        client.post("https://h.test/c", content=text.encode(), headers={"content-type": "text/plain"})
        client.post("https://h.test/d", content=image, headers={"content-type": "image/png"})
    transport.close()
    bodies = [json.loads(line)["body"] for line in cassette.read_text().splitlines() if '"type":"request"' in line]
    stored = [base64.b64decode(body["base64"]) if "base64" in body else body["text"].encode() for body in bodies]
    assert stored[0] == b"\x00\x01\xff upload [secret removed] \xfe\x00"
    assert part.replace(key.encode(), b"[secret removed]") in stored[1] and key.encode() not in stored[1]
    payload = stored[2].decode().split("base64,")[1].split()[0]
    assert base64.b64decode(payload) == b"DB_PASSWORD=[secret removed]\n"
    assert stored[3] == image


def test_learned_values_that_overlap_behind_an_escape_go_whole() -> None:
    """Each value was replaced in turn, in the order of a set (PYTHONHASHSEED): the first left part of the
    other, which no longer matched; now the text loses both together."""
    redactor = Redactor()
    redactor.learn("q7Wx2Lm9Zr4T")
    redactor.learn("2Lm9Zr4TpK8v")
    assert redactor.redact_text("id=%71 q7Wx2Lm9Zr4TpK8v") == f"id=%71 {PLACEHOLDER}"


def test_many_secrets_in_text_with_escapes_are_removed_in_linear_time() -> None:
    """Each value found behind escapes was searched for in the whole text, one after the other."""
    named = [{"name": "DB_PASSWORD", "value": f"s3cr3t-{index:05d}"} for index in range(20_000)]
    text = json.dumps(named) + " and s3cr3t%2D00042 \\u0041"
    results: list[str] = []
    finishes_within(60, lambda: results.append(Redactor().redact_text(text, response=True)))
    assert results[0].count(PLACEHOLDER) == 20_001 and "s3cr3t" not in results[0]


@pytest.mark.parametrize("library_name", ["httpx", "httpx2"])
def test_a_streamed_value_its_sibling_names_in_any_spelling_is_recorded_redacted(
    tmp_path: Path, library_name: str
) -> None:
    """A stream's events are redacted as text, whose rule knew only some spellings of the sibling keys that the
    parsed path compares folded: ``{"NAME": "DB_PASSWORD", "VALUE": ...}`` was recorded in clear."""
    from real_wire import vendor_mock

    from vcr_transport._core.rules._scan import scan_document

    library = __import__(library_name)
    secrets = ["s3cr3t-v4lue-0001", "s3cr3t-v4lue-0002", "s3cr3t-v4lue-0003"]
    events = [
        {"NAME": "DB_PASSWORD", "VALUE": secrets[0]},
        {"parameter_name": "prod/api_token", "parameter_value": secrets[1]},
        {"ENV_VAR": "OPENAI_API_KEY", "Value": secrets[2], "region": "eu-west-1"},
    ]
    body = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
    assert [found for _, found in scan_document(Redactor(), body.decode())] == secrets, "scan flags the same"
    stream = [("content-type", "text/event-stream")]
    cassette = tmp_path / "siblings.jsonl"
    recorder = vcr_transport.RecordingTransport(vendor_mock(library, lambda _: (200, stream, body)), cassette)
    with library.Client(transport=recorder) as client:
        assert client.get("https://api.openai.com/v1/vars").content == body, "the caller sees the live bytes"
    text = cassette.read_text()
    assert [secret for secret in secrets if secret in text] == []
    assert text.count(PLACEHOLDER) >= 3 and "eu-west-1" in text
    assert list(scan_document(Redactor(), text)) == []


def test_a_cookie_keeps_its_spacing_also_when_its_value_is_blank() -> None:
    """An item of spaces only was written as its leading and its trailing space, twice over."""
    headers = [("cookie", "a=  ; b= s3cr3t-1 ;c=x"), ("set-cookie", "sid=  ; Path=/")]
    headers += [("set-cookie", "id=abc ; Path=/")]
    assert Redactor().redact_headers(headers) == [
        ("cookie", f"a=  ; b= {PLACEHOLDER} ;c={PLACEHOLDER}"),
        ("set-cookie", "sid=  ; Path=/"),
        ("set-cookie", f"id={PLACEHOLDER} ; Path=/"),
    ]


def test_a_redactor_shared_by_threads_learns_every_value_each_brings() -> None:
    """One redactor serves a cassette's concurrent calls. Eight threads each bring 300 new secrets at once, past
    the size of one level (levels merged while other threads learn): every value is learned, none lost to a
    race, and each is removed where it appears bare."""
    redactor = Redactor()
    secrets = [[f"Th{thread}v{index:04d}q7Wx2Lm9" for index in range(300)] for thread in range(8)]
    kept: list[str] = []

    def bring(mine: list[str]) -> None:
        for secret in mine:
            if secret in redactor.redact_text(json.dumps({"note": "a call", "password": secret})):
                kept.append(secret)

    threads = [threading.Thread(target=bring, args=(mine,)) for mine in secrets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads) and kept == []
    every = [secret for mine in secrets for secret in mine]
    assert redactor.redact_text(" ".join(every)) == " ".join([PLACEHOLDER] * len(every))


_RUN = 400_000


def _delta(text: str) -> str:
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
    return "event: content_block_delta\ndata: " + json.dumps(delta) + "\n\n"


_LONG_RUNS: dict[str, Callable[[], object]] = {
    "a JSON string under a secret name": lambda: Redactor().redact_text(json.dumps({"password": "x" * _RUN})),
    "JSON in a tool call's arguments": lambda: Redactor().redact_text(
        json.dumps({"arguments": json.dumps({"api_key": "k" * _RUN})})
    ),
    "a run before an HTML entity": lambda: Redactor().redact_text("a" * _RUN + "&#65;"),
    "a run before a \\x escape": lambda: Redactor().redact_text("a" * _RUN + "\\x41"),
    "a run before a double percent-escape": lambda: Redactor().redact_text("a" * _RUN + "%2541"),
    "a secret behind %XX escapes": lambda: Redactor().redact_text("password=" + "x" * _RUN + "%41&api_key%3Dy"),
    "a stream's long delta": lambda: redact_body((_delta("password=") + _delta("x" * _RUN)).encode(), Redactor()),
    "secret parameters each inside the last's value": lambda: Redactor().redact_text(
        ("?token=" + "?a=" * 20) * (_RUN // 67)
    ),
}


@pytest.mark.parametrize("work", _LONG_RUNS.values(), ids=list(_LONG_RUNS))
def test_a_long_run_takes_memory_of_a_few_times_its_length(work: Callable[[], object]) -> None:
    """The rules' patterns read a JSON string, a run of key characters or a stream's string by repeating a group
    of alternatives, and Python's engine kept a backtracking point per character: 114 bytes each, 127 to 286
    times the text at peak (a 50 MB answer with a secret name took gigabytes to record). Possessive now: the
    peak is a few copies of the text. A text behind ``%XX`` escapes kept where each decoded byte is written in a
    list (56 times the text); an array of 8-byte offsets now."""
    tracemalloc.start()
    try:
        work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * _RUN
