"""What the compatibility work added to the core: per-request headers of cloud clients ignored, path-scoped
field ignores, passthrough rules, and a mismatch that reaches a Stainless SDK fast whatever its User-Agent."""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx2
import pytest
from helpers import recording
from upstream import Upstream

import vcr_transport
from vcr_transport._core.engine._matching import RequestMatcher
from vcr_transport._core.engine._modes import Decision, Step
from vcr_transport._core.engine._options import Options


def _fields(matcher: RequestMatcher, body: dict[str, object], headers: list[tuple[str, str]] = []) -> dict:  # noqa: B006
    return matcher.comparable("POST", "https://h/v1/x", headers, {"json": body})


def test_sigv4_and_azure_per_request_headers_are_not_compared() -> None:
    matcher = RequestMatcher()
    one = [("X-Amz-Date", "20260101T000000Z"), ("amz-sdk-invocation-id", "a"), ("x-ms-client-request-id", "1")]
    two = [("X-Amz-Date", "20260101T000001Z"), ("amz-sdk-invocation-id", "b"), ("x-ms-client-request-id", "2")]
    assert matcher.difference(_fields(matcher, {}, one), _fields(matcher, {}, two)) is None
    # A header not in the volatile set still counts.
    other = [("anthropic-version", "1")]
    assert matcher.difference(_fields(matcher, {}, other), _fields(matcher, {}, []))[0] == "headers.anthropic-version"  # type: ignore[index]


def test_a_path_ignores_only_the_fields_it_names() -> None:
    matcher = Options.from_arguments({"ignore_fields": ["body.contents[*].parts[*].functionCall.id"]}).matcher()

    def body(call_id: str, other_id: str) -> dict[str, object]:
        return {"id": other_id, "contents": [{"parts": [{"functionCall": {"id": call_id, "name": "add"}}]}]}

    assert matcher.difference(_fields(matcher, body("a", "x")), _fields(matcher, body("b", "x"))) is None
    assert matcher.difference(_fields(matcher, body("a", "x")), _fields(matcher, body("a", "y")))[0] == "body.id"  # type: ignore[index]
    # A bare name still means that key at any depth; a list position named by a path keeps its place.
    bare = Options.from_arguments({"ignore_fields": ["id", "body.items[0]"]}).matcher()
    assert bare.difference(_fields(bare, body("a", "x")), _fields(bare, body("b", "y"))) is None
    moved = bare.difference(_fields(bare, {"items": [1, 2]}), _fields(bare, {"items": [9, 3]}))
    assert moved == ("body.items[1]", 2, 3)


@pytest.mark.parametrize("bad", ["headers.x-id", "body.a[x]", "body..a"])
def test_a_malformed_path_is_refused_naming_the_option(bad: str) -> None:
    with pytest.raises(ValueError, match=r"use_cassette\(\): option ignore_fields: .*" + bad.split(".")[0]):
        Options.from_arguments({"ignore_fields": [bad]}, where="use_cassette()")


@pytest.mark.parametrize(
    ("mode", "exists", "answer", "step"),
    [
        ("off", True, "empty", Step.PASS_THROUGH),
        ("record", False, "empty", Step.PASS_THROUGH),
        ("record-on-miss", False, "empty", Step.PASS_THROUGH),
        ("replay", True, "empty", Step.EMPTY),
        ("replay", True, "block", Step.BLOCK),
        ("record-on-miss", True, "block", Step.BLOCK),
    ],
)
def test_passthrough_step(mode: str, exists: bool, answer: str, step: Step) -> None:
    decision = Decision(
        mode, readable=True, exists=exists, passthrough=["127.0.0.1:*/telemetry/*"], passthrough_replay=answer
    )
    assert decision.step_for("https://api.openai.com/v1/traces/ingest") is step  # a shipped default
    assert decision.step_for("http://127.0.0.1:8123/telemetry/batch") is step
    assert decision.step_for("https://api.openai.com/v1/chat/completions") is decision.next_step()


def test_replay_answers_or_blocks_a_passthrough_request(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    cassette.write_text('{"type": "header", "format_version": 1}\n')
    request = httpx2.Request("POST", "https://api.openai.com/v1/traces/ingest", content=b"{}")
    assert vcr_transport.ReplayTransport(cassette).handle_request(request).status_code == 204
    blocked = vcr_transport.ReplayTransport(cassette, passthrough_replay="block")
    with pytest.raises(vcr_transport.NetworkBlockedError, match="traces/ingest matches a passthrough rule"):
        blocked.handle_request(request)
    with pytest.raises(ValueError, match="passthrough_replay must be one of 'empty', 'block'"):
        vcr_transport.ReplayTransport(cassette, passthrough_replay="drop")


def test_anthropic_under_a_framework_user_agent_sees_the_field_at_once(upstream: Upstream, cassette: Path) -> None:
    """pydantic-ai and langchain-anthropic replace the User-Agent; the x-stainless headers still tell."""
    headers = {"User-Agent": "pydantic-ai/2.68.0"}

    def ask(transport: object, prompt: str) -> str:
        with httpx2.Client(transport=transport) as http:  # type: ignore[arg-type]
            client = anthropic.Anthropic(
                api_key="sk-ant-api03-X", base_url=upstream.url, http_client=http, default_headers=headers
            )
            reply = client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": prompt}])
            return str(reply.content[0].text)

    ask(recording(httpx2, False, cassette), "cats")
    upstream.stop()
    replay = vcr_transport.ReplayTransport(cassette)
    answered: list[int] = []
    respond = replay.respond
    replay.respond = lambda request, body: answered.append(1) or respond(request, body)  # type: ignore[method-assign]
    with pytest.raises(anthropic.BadRequestError, match="field body.messages\\[0\\].content: recorded 'cats'"):
        ask(replay, "dogs")
    assert answered == [1]  # no retry reached the transport
