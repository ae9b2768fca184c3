"""``vcr-transport drift``: each recorded request sent again to a live upstream, the answer's shape compared with
the recording's. The upstreams are loopback servers with the vendors' real header sets (``upstream``); one
serves the API as recorded, one a changed API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from helpers import recording
from test_cli import ANTHROPIC, OPENAI, cli
from upstream import Received, Reply, Upstream
from vendors import VENDOR_ROUTES, openai_reply, sse

from vcr_transport._core._shape import Shape, answer_shape, compare_shapes
from vcr_transport._core._view import call_view
from vcr_transport._storage import read_cassette


def _changed_openai(received: Received) -> Reply:
    """The chat API after a change: ``usage.prompt_tokens`` a string, a new ``service_tier``, and streams
    with a new event type before the last."""
    body = received.json()
    if not body.get("stream"):
        reply = openai_reply(received)
        answer = json.loads(b"".join(reply.chunks))
        answer["usage"]["prompt_tokens"] = "1"
        answer["service_tier"] = "default"
        return Reply.json(answer)
    events: list[tuple[str | None, Any]] = [
        (None, {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "echo"}}]}),
        ("response.keepalive", {"type": "keepalive"}),
        (None, "[DONE]"),
    ]
    return Reply(200, [("content-type", "text/event-stream")], [sse(events)])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with an openai cassette (a chat and a stream) and an anthropic one (a stream)."""
    folder = tmp_path_factory.mktemp("drift")
    server = Upstream()
    for prefix, reply in VENDOR_ROUTES.values():
        server.routes[prefix] = reply
    server.start()
    try:
        OPENAI.run(
            recording(httpx2, False, folder / "openai.jsonl"), server.url, [("chat", ["hi"]), ("stream", ["hi"])]
        )
        ANTHROPIC.run(recording(httpx2, True, folder / "anthropic.jsonl"), server.url, [("stream", ["hello"])])
    finally:
        server.stop()
    return folder


@pytest.fixture
def same_api() -> Any:
    server = Upstream()
    for prefix, reply in VENDOR_ROUTES.values():
        server.routes[prefix] = reply
    yield server.start()
    server.stop()


@pytest.fixture
def changed_api() -> Any:
    server = Upstream()
    server.routes["/v1/chat/completions"] = _changed_openai
    yield server.start()
    server.stop()


KEYS = {"OPENAI_API_KEY": "sk-live-openai-key", "ANTHROPIC_API_KEY": "sk-ant-live-key"}


def test_an_api_answering_as_recorded_has_an_identical_shape(recorded: Path, same_api: Upstream) -> None:
    before = {path.name: path.read_bytes() for path in recorded.iterdir()}
    result = cli(
        recorded,
        "drift",
        "openai.jsonl",
        "anthropic.jsonl",
        "--upstream",
        f"openai={same_api.url}",
        "--upstream",
        f"anthropic={same_api.url}",
        env=KEYS,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        f"openai.jsonl call 0: POST {_url(recorded / 'openai.jsonl', 0)}: identical shape",
        f"openai.jsonl call 1: POST {_url(recorded / 'openai.jsonl', 1)}: identical shape",
        f"anthropic.jsonl call 0: POST {_url(recorded / 'anthropic.jsonl', 0)}: identical shape",
    ]
    assert lines[-1] == "3 calls in 2 cassettes: 3 identical, 0 changed, 0 not checked"
    # Each removed credential was put back from the environment, and nothing was written.
    assert [r.headers.get("authorization") for r in same_api.received if "chat" in r.path] == [
        "Bearer sk-live-openai-key"
    ] * 2
    assert [r.headers.get("authorization") for r in same_api.received if "messages" in r.path] == [
        "Bearer sk-ant-live-key"  # as recorded: this client authenticates with a token, not x-api-key
    ]
    assert [r.json()["messages"][-1]["content"] for r in same_api.received if "chat" in r.path] == ["hi", "hi"]
    assert {path.name: path.read_bytes() for path in recorded.iterdir()} == before


def _url(path: Path, index: int) -> str:
    return read_cassette(path).calls[index].url


def test_a_changed_api_is_reported_by_field_path(recorded: Path, changed_api: Upstream) -> None:
    result = cli(recorded, "drift", "openai.jsonl", "--upstream", f"openai={changed_api.url}", env=KEYS)
    assert result.returncode == 1, result.stdout + result.stderr
    text = result.stdout
    assert "openai.jsonl call 0: POST" in text and "changed shape" in text
    assert "  body.usage.prompt_tokens: integer -> string" in text
    assert "  body.service_tier: - -> string" in text
    assert "  events[response.keepalive]: - -> object" in text  # a new event type
    assert "  events[chat.completion.chunk].choices[*].finish_reason: null|string -> -" in text
    document = json.loads(
        cli(recorded, "drift", "openai.jsonl", "--upstream", f"openai={changed_api.url}", "--json", env=KEYS).stdout
    )
    assert document["json_version"] == 1 and document["cassettes"] == 1
    first = document["calls"][0]
    assert first["path"] == "openai.jsonl" and first["call"] == 0 and first["outcome"] == "changed"
    assert {"field_path": "body.usage.prompt_tokens", "recorded": "integer", "live": "string"} in first["changes"]


def test_a_removed_credential_without_a_key_is_not_sent(recorded: Path, same_api: Upstream) -> None:
    env = {"OPENAI_API_KEY": "", "AZURE_OPENAI_API_KEY": ""}
    result = cli(recorded, "drift", "openai.jsonl", "--upstream", f"openai={same_api.url}", env=env)
    assert result.returncode == 2
    assert "not checked: its authorization was removed and none of OPENAI_API_KEY" in result.stdout
    assert same_api.received == []


def test_an_upstream_that_refuses_connections_is_trouble(recorded: Path) -> None:
    from upstream import free_port

    result = cli(recorded, "drift", "openai.jsonl", "--upstream", f"openai=http://127.0.0.1:{free_port()}", env=KEYS)
    assert result.returncode == 2 and "not checked: ConnectError" in result.stdout


@pytest.mark.parametrize(
    ("upstream", "problem"),
    [("mistral=http://127.0.0.1:1", "the vendor is one of"), ("openai=ftp://x", "give scheme, host")],
)
def test_a_bad_upstream_is_refused_before_anything_is_sent(recorded: Path, upstream: str, problem: str) -> None:
    result = cli(recorded, "drift", "openai.jsonl", "--upstream", upstream, env=KEYS)
    assert result.returncode == 2 and problem in result.stderr


def test_a_missing_cassette_is_trouble(tmp_path: Path) -> None:
    result = cli(tmp_path, "drift", "nothing.jsonl", env=KEYS)
    assert result.returncode == 2 and "nothing.jsonl" in result.stderr


def test_shapes_compare_types_per_path_not_values(recorded: Path) -> None:
    call = read_cassette(recorded / "openai.jsonl").calls[0]
    shape = answer_shape(call_view(call))
    assert shape.status == 200 and shape.media_type == "application/json"
    assert shape.fields["body.choices[*].message.content"] == {"string"}
    assert shape.fields["body.usage.prompt_tokens"] == {"integer"}
    # Other values, the same types: no change.
    assert compare_shapes(shape, Shape(200, "application/json", dict(shape.fields))) == []
    changed = compare_shapes(shape, Shape(500, "text/html", {}))
    assert [c.path for c in changed[:2]] == ["status", "content-type"]
    assert all(c.live == "-" for c in changed[2:])


def test_a_dry_run_lists_what_would_be_sent_and_where_and_sends_nothing(recorded: Path, same_api: Upstream) -> None:
    before = {path.name: path.read_bytes() for path in recorded.iterdir()}
    env = {**KEYS, "ANTHROPIC_API_KEY": ""}
    result = cli(
        recorded,
        "drift",
        "--dry-run",
        "openai.jsonl",
        "anthropic.jsonl",
        "--upstream",
        f"openai={same_api.url}",
        env=env,
    )
    assert result.returncode == 2, result.stdout + result.stderr  # the anthropic call has no key to carry
    host = same_api.url.removeprefix("http://")
    anthropic_url = _url(recorded / "anthropic.jsonl", 0)
    assert result.stdout.splitlines() == [
        f"openai.jsonl call 0: POST {same_api.url}/v1/chat/completions (key from OPENAI_API_KEY)",
        f"openai.jsonl call 1: POST {same_api.url}/v1/chat/completions (key from OPENAI_API_KEY)",
        f"anthropic.jsonl call 0: POST {anthropic_url}: would not be sent: its credential was removed and none "
        "of ANTHROPIC_API_KEY is set: set one",
        f"dry run: 2 calls of 3 calls in 2 cassettes would be sent to {host}; nothing was sent",
    ]
    assert "sk-live-openai-key" not in result.stdout
    assert same_api.received == []
    assert {path.name: path.read_bytes() for path in recorded.iterdir()} == before
    document = json.loads(cli(recorded, "drift", "--dry-run", "--json", "openai.jsonl", env=KEYS).stdout)
    assert document["dry_run"] is True and document["cassettes"] == 1
    assert document["calls"][0] == {
        "path": "openai.jsonl",
        "call": 0,
        "method": "POST",
        "url": _url(recorded / "openai.jsonl", 0),
        "host": urlsplit(_url(recorded / "openai.jsonl", 0)).netloc,
        "key_from": "OPENAI_API_KEY",
        "error": None,
    }
    assert same_api.received == []
