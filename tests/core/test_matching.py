"""Matching: what is compared, what is not, in what order, and how a difference is named."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from helpers import recording
from hypothesis import given, settings
from hypothesis import strategies as st
from upstream import Upstream

import vcr_transport
from vcr_transport import ReplayMismatch, find_first_difference
from vcr_transport._core.engine import _matching
from vcr_transport._core.engine._engine import ReplayEngine, replay_headers
from vcr_transport._core.engine._matching import SERVER_ASSIGNED, RequestMatcher, _drop_fields, echoed_headers
from vcr_transport._core.engine._modes import Decision, Step
from vcr_transport._core.engine._options import Options
from vcr_transport._core.format._format import Cassette, RecordedCall


def test_first_difference_in_nested_lists() -> None:
    recorded = {"messages": [{"content": [{"text": "a"}]}, {"content": [{"text": "hi"}]}]}
    incoming = {"messages": [{"content": [{"text": "a"}]}, {"content": [{"text": "bye"}]}]}
    assert find_first_difference(recorded, incoming) == ("messages[1].content[0].text", "hi", "bye")


def test_missing_keys_and_list_items_are_reported_as_missing() -> None:
    assert find_first_difference({"a": 1, "b": 2}, {"a": 1}) == ("b", 2, "<missing>")
    assert find_first_difference({"a": 1}, {"a": 1, "c": 3}) == ("c", "<missing>", 3)
    assert find_first_difference([1, 2], [1, 2, 3]) == ("[2]", "<missing>", 3)


def test_a_type_change_is_a_difference() -> None:
    assert find_first_difference({"n": 1}, {"n": "1"}) == ("n", 1, "1")
    assert find_first_difference({"n": 1}, {"n": 1.0}) == ("n", 1, 1.0)
    assert find_first_difference({"x": [1]}, {"x": {"0": 1}}) == ("x", [1], {"0": 1})


def test_keys_are_walked_in_sorted_order_so_paths_are_stable() -> None:
    recorded = {"z": 1, "a": 1}
    incoming = {"a": 2, "z": 2}
    assert find_first_difference(recorded, incoming) == ("a", 1, 2)
    assert find_first_difference(dict(reversed(list(recorded.items()))), incoming) == ("a", 1, 2)


def test_equal_structures_have_no_difference() -> None:
    assert find_first_difference({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}) is None
    assert find_first_difference("same text", "same text") is None
    assert find_first_difference("text a", "text b") == ("", "text a", "text b")


def _record(path: Path, requests: list[dict[str, Any]], respond: Any = None) -> None:
    handler = respond or (lambda r: httpx2.Response(200, json={"n": len(r.content)}))
    with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.MockTransport(handler), path)) as client:
        for request in requests:
            client.request(**request)


def _replay(path: Path, requests: list[dict[str, Any]], **options: Any) -> list[httpx2.Response]:
    with httpx2.Client(transport=vcr_transport.ReplayTransport(path, **options)) as client:
        return [client.request(**request) for request in requests]


def test_json_bodies_compare_structurally(cassette: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.5}
    _record(cassette, [{"method": "POST", "url": "https://a.test/v1", "json": body}])
    respaced = json.dumps(dict(reversed(list(body.items()))), indent=3, separators=(" , ", " :  ")).encode()
    (response,) = _replay(
        cassette,
        [
            {
                "method": "POST",
                "url": "https://a.test/v1",
                "content": respaced,
                "headers": {"content-type": "application/json"},
            }
        ],
    )
    assert response.status_code == 200


def test_form_fields_compare_by_name(cassette: Path) -> None:
    _record(cassette, [{"method": "POST", "url": "https://a.test/f", "data": {"a": "1", "b": "2"}}])
    _replay(
        cassette,
        [
            {
                "method": "POST",
                "url": "https://a.test/f",
                "content": b"b=2&a=1",
                "headers": {"content-type": "application/x-www-form-urlencoded"},
            }
        ],
    )
    with pytest.raises(vcr_transport.ReplayMismatch) as caught:
        _replay(cassette, [{"method": "POST", "url": "https://a.test/f", "data": {"a": "1", "b": "3"}}])
    assert caught.value.field_path == "body.b"


def test_other_bodies_compare_as_bytes(cassette: Path) -> None:
    _record(
        cassette,
        [
            {
                "method": "POST",
                "url": "https://a.test/t",
                "content": b"exact text",
                "headers": {"content-type": "text/plain"},
            }
        ],
    )
    with pytest.raises(vcr_transport.ReplayMismatch) as caught:
        _replay(
            cassette,
            [
                {
                    "method": "POST",
                    "url": "https://a.test/t",
                    "content": b"exact text!",
                    "headers": {"content-type": "text/plain"},
                }
            ],
        )
    assert (caught.value.field_path, caught.value.recorded, caught.value.incoming) == (
        "body",
        "exact text",
        "exact text!",
    )


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"method": "PUT"}, "method"),
        ({"url": "http://a.test/v1?q=1"}, "url.scheme"),
        ({"url": "https://b.test/v1?q=1"}, "url.host"),
        ({"url": "https://a.test/v2?q=1"}, "url.path"),
        ({"url": "https://a.test/v1?q=2"}, "url.query.q"),
        ({"headers": {"x-tenant": "b"}}, "headers.x-tenant"),
        ({"json": {"timestamp": 1, "k": "w"}}, "body.k"),
    ],
)
def test_paths_name_each_part_of_a_request(cassette: Path, change: dict[str, Any], path: str) -> None:
    base = {
        "method": "POST",
        "url": "https://a.test/v1?q=1",
        "headers": {"x-tenant": "a"},
        "json": {"timestamp": 0, "k": "v"},
    }
    _record(cassette, [base])
    with pytest.raises(vcr_transport.ReplayMismatch) as caught:
        _replay(cassette, [{**base, **change}])
    assert caught.value.field_path == path
    assert str(caught.value).startswith(f"replay mismatch at call 0, field {path}: recorded ")
    assert str(cassette) in str(caught.value) and "VCR_TRANSPORT_MODE=record" in str(caught.value)


def test_non_deterministic_fields_are_skipped_and_the_list_extends(cassette: Path) -> None:
    base = {
        "method": "POST",
        "url": "https://a.test/v1",
        "json": {"meta": {"timestamp": 1, "request_id": "a"}, "k": "v"},
    }
    _record(cassette, [base])
    moved = {**base, "json": {"meta": {"timestamp": 2, "request_id": "b"}, "k": "v"}}
    with pytest.raises(vcr_transport.ReplayMismatch, match="body.meta.request_id"):
        _replay(cassette, [moved])
    _replay(cassette, [moved], ignore_fields=["request_id"])
    assert "timestamp" in vcr_transport.NON_DETERMINISTIC_FIELD_NAMES


def test_volatile_headers_are_ignored_and_the_set_is_adjustable(cassette: Path) -> None:
    base = {
        "method": "GET",
        "url": "https://a.test/",
        "headers": {"x-stainless-os": "Linux", "user-agent": "a/1", "x-run": "1"},
    }
    _record(cassette, [base])
    varied = {**base, "headers": {"x-stainless-os": "MacOS", "user-agent": "b/2", "x-run": "1"}}
    _replay(cassette, [varied])
    with pytest.raises(vcr_transport.ReplayMismatch, match="headers.x-stainless-os"):
        _replay(cassette, [varied], compare_headers=["x-stainless-os"])
    _replay(cassette, [{**base, "headers": {"x-run": "2"}}], ignore_headers=["x-run"])
    assert {"user-agent", "x-stainless-*", "traceparent"} <= vcr_transport.VOLATILE_HEADERS


def test_running_past_the_end_says_how_many_calls_were_recorded(cassette: Path) -> None:
    request = {"method": "GET", "url": "https://a.test/"}
    _record(cassette, [request, request])
    with pytest.raises(vcr_transport.ReplayMismatch) as caught:
        _replay(cassette, [request, request, request])
    assert caught.value.field_path == "call_index" and caught.value.call_index == 2
    assert "the cassette recorded 2 call(s)" in str(caught.value)


def test_a_mismatch_does_not_consume_the_recorded_call(cassette: Path) -> None:
    _record(cassette, [{"method": "GET", "url": "https://a.test/1"}, {"method": "GET", "url": "https://a.test/2"}])
    transport = vcr_transport.ReplayTransport(cassette)
    with httpx2.Client(transport=transport) as client:
        with pytest.raises(vcr_transport.ReplayMismatch):
            client.get("https://a.test/2")
        assert client.get("https://a.test/1").status_code == 200
        assert client.get("https://a.test/2").status_code == 200
    assert transport.unplayed_calls() == []


def test_unordered_pairs_each_request_with_the_first_unplayed_match(cassette: Path) -> None:
    urls = [f"https://a.test/item/{i}" for i in range(6)]
    _record(
        cassette, [{"method": "GET", "url": u} for u in urls], respond=lambda r: httpx2.Response(200, text=r.url.path)
    )
    transport = vcr_transport.ReplayTransport(cassette, ordered=False)
    got: dict[str, str] = {}
    with httpx2.Client(transport=transport) as client:
        threads = [threading.Thread(target=lambda u=u: got.__setitem__(u, client.get(u).text)) for u in reversed(urls)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert got == {u: u.removeprefix("https://a.test") for u in urls}


def test_unordered_miss_reports_against_the_closest_candidate(cassette: Path) -> None:
    _record(
        cassette,
        [
            {"method": "GET", "url": "https://a.test/other"},
            {"method": "POST", "url": "https://a.test/chat", "json": {"p": "hi"}},
        ],
    )
    with pytest.raises(vcr_transport.ReplayMismatch) as caught:
        _replay(cassette, [{"method": "POST", "url": "https://a.test/chat", "json": {"p": "bye"}}], ordered=False)
    assert (caught.value.call_index, caught.value.field_path) == (1, "body.p")


def test_identical_requests_are_answered_in_recorded_order(cassette: Path) -> None:
    answers = iter(["first", "second", "third"])
    _record(
        cassette,
        [{"method": "GET", "url": "https://a.test/same"}] * 3,
        respond=lambda r: httpx2.Response(200, text=next(answers)),
    )
    for ordered in (True, False):
        responses = _replay(cassette, [{"method": "GET", "url": "https://a.test/same"}] * 3, ordered=ordered)
        assert [r.text for r in responses] == ["first", "second", "third"]


def test_unplayed_calls_are_listed(cassette: Path) -> None:
    _record(cassette, [{"method": "GET", "url": "https://a.test/1"}, {"method": "POST", "url": "https://a.test/2"}])
    transport = vcr_transport.ReplayTransport(cassette)
    with httpx2.Client(transport=transport) as client:
        client.get("https://a.test/1")
    assert transport.unplayed_calls() == [(1, "POST", "https://a.test/2")]
    with pytest.raises(vcr_transport.UnplayedCallsError) as caught:
        transport.assert_all_played()
    assert "call 1: POST https://a.test/2" in str(caught.value)


def test_long_values_are_shortened_in_the_message_but_whole_on_the_attributes(cassette: Path) -> None:
    long_a, long_b = "a" * 500, "a" * 499 + "b"
    _record(cassette, [{"method": "POST", "url": "https://a.test/", "json": {"p": long_a}}])
    with pytest.raises(vcr_transport.ReplayMismatch) as caught:
        _replay(cassette, [{"method": "POST", "url": "https://a.test/", "json": {"p": long_b}}])
    assert caught.value.recorded == long_a and caught.value.incoming == long_b
    assert len(str(caught.value).splitlines()[0]) < 250


def test_mismatch_values_in_the_message_are_redacted(cassette: Path) -> None:
    _record(cassette, [{"method": "POST", "url": "https://a.test/", "json": {"p": "x"}}])
    with pytest.raises(vcr_transport.ReplayMismatch) as caught:
        _replay(
            cassette,
            [{"method": "POST", "url": "https://a.test/", "json": {"p": "key sk-abcdefghijklmnopqrstuvwxyz0123"}}],
        )
    assert "sk-abc" not in str(caught.value) and "[secret removed]" in str(caught.value)


def _call(status: int, headers: list[tuple[str, str]]) -> Any:
    from vcr_transport._core.format._format import RecordedCall

    return RecordedCall(
        0, "GET", "https://a.test/", [], None, status=status, response_headers=headers, outcome="complete"
    )


def test_recorded_retry_delays_are_shortened_but_never_past_what_the_sdk_honours() -> None:
    shortened = dict(replay_headers(_call(429, [("retry-after", "30")]), 0.01))
    assert shortened == {"retry-after": "0.01", "retry-after-ms": "10"}
    assert dict(replay_headers(_call(429, [("retry-after", "300")]), 0.01)) == {"retry-after": "300"}
    assert dict(replay_headers(_call(429, [("retry-after", "30")]), None)) == {"retry-after": "30"}
    assert dict(replay_headers(_call(200, [("retry-after", "30")]), 0.01)) == {"retry-after": "30"}
    assert dict(replay_headers(_call(503, []), 0.01)) == {"retry-after": "0.01", "retry-after-ms": "10"}


def test_a_body_the_replay_redacts_never_matches_its_unredacted_recording() -> None:
    """A cassette recorded without a rule the replay has: the replay's redaction changes the incoming body,
    so it no longer matches what was recorded unredacted."""
    url = "https://api.test/v1/chat/completions"
    call = RecordedCall(0, "POST", url, [("content-type", "application/json")], {"json": {"k": "hello"}})
    cassette = Cassette("c.jsonl", {}, [call])
    headers = [("content-type", "application/json")]
    chosen = Options.from_arguments({"redact_patterns": ["hello"]}, where="test")
    engine = ReplayEngine(cassette, chosen.matcher(), chosen.redactor())
    with pytest.raises(ReplayMismatch) as raised:
        engine.select(engine.incoming_fields("POST", url, headers, b'{"k":"hello"}'))
    assert raised.value.field_path == "body.k"
    plain = Options.from_arguments({}, where="test")
    engine = ReplayEngine(cassette, plain.matcher(), plain.redactor())
    assert engine.select(engine.incoming_fields("POST", url, headers, b'{"k":"hello"}')) is call


def _mcp_session(session_id: str) -> list[RecordedCall]:
    """An MCP session's calls as recorded: ``initialize`` assigns the id, every later request sends it back."""
    url = "http://127.0.0.1:8000/mcp"
    json_type = ("content-type", "application/json")
    assigned = [json_type, ("mcp-session-id", session_id)]
    calls = [RecordedCall(0, "POST", url, [json_type], {"json": {"id": 1, "method": "initialize"}})]
    calls[0].response_headers = [("content-type", "text/event-stream"), *assigned[1:]]
    for index, method in ((1, "tools/list"), (2, "tools/call")):
        call = RecordedCall(index, "POST", url, assigned, {"json": {"id": index + 1, "method": method}})
        call.response_headers = [("content-type", "text/event-stream"), *assigned[1:]]
        calls.append(call)
    return calls


def test_a_header_the_server_assigned_and_its_client_echoes_is_found() -> None:
    session = _mcp_session("2b340d77e0594a45b85e5fafce71d0b4")
    exchanges = [(c.request_headers, c.response_headers) for c in session]
    assert echoed_headers(exchanges) == {"mcp-session-id"}
    # A value the client sent before any response carried it is the client's own (openai-organization).
    own = [([("openai-organization", "org-1")], [("openai-organization", "org-1")])] * 2
    assert echoed_headers(own) == frozenset()
    # A header HTTP defines both ways is no echo: a POST's content-type after a GET answered with it.
    both_ways = [([], [("content-type", "application/json")]), ([("content-type", "application/json")], [])]
    assert echoed_headers(both_ways) == frozenset()
    # A volatile response header (a request id) sent back is not counted either.
    assert echoed_headers([([], [("x-request-id", "r1")]), ([("x-request-id", "r1")], [])]) == frozenset()


def test_a_server_assigned_header_is_compared_as_sent_not_by_its_value() -> None:
    """MCP's session id is the server's choice, a new one each session: a session whose id came from
    elsewhere (another server, a fixture's session) replays; one that stopped sending it doesn't."""
    session = _mcp_session("2b340d77e0594a45b85e5fafce71d0b4")
    chosen = Options.from_arguments({}, where="test")
    engine = ReplayEngine(Cassette("c.jsonl", {}, session), chosen.matcher(), chosen.redactor())
    url = session[0].url
    engine.select(engine.incoming_fields("POST", url, session[0].request_headers, b'{"id":1,"method":"initialize"}'))
    other_id = [("content-type", "application/json"), ("mcp-session-id", "f00d")]
    assert engine.select(engine.incoming_fields("POST", url, other_id, b'{"id":2,"method":"tools/list"}')).index == 1
    without = [("content-type", "application/json")]
    with pytest.raises(ReplayMismatch) as raised:
        engine.select(engine.incoming_fields("POST", url, without, b'{"id":3,"method":"tools/call"}'))
    assert raised.value.field_path == "headers.mcp-session-id"
    assert str(raised.value).splitlines()[0] == (
        f"replay mismatch at call 2, field headers.mcp-session-id: recorded '{SERVER_ASSIGNED}', incoming <missing>"
    )


_KEYS = st.sampled_from(["timestamp", "ts", "q", '"timestamp":', "tïmestamp"])
_BODIES = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(max_size=4), _KEYS),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(_KEYS, children, max_size=3)),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(_BODIES, st.sampled_from([(), ("ts",), ("tïmestamp", "q")]))
def test_a_body_without_the_skipped_keys_is_compared_as_it_is(body: Any, ignored: tuple[str, ...]) -> None:
    # The encoding decides whether the body is rebuilt: it never misses a key the rebuild would drop.
    matcher = RequestMatcher(ignore_fields=ignored)
    fields = matcher.comparable("POST", "https://api.test/v1", [], {"json": body})
    assert fields["body"] == _drop_fields(body, frozenset({"timestamp", *ignored}))


def test_a_long_conversation_is_compared_without_rebuilding_its_body(monkeypatch: Any) -> None:
    """A request carrying a long history and no skipped key is compared as the very object the client's JSON
    became: no copy of it (rebuilding each body to drop ``timestamp`` keys that weren't there made a
    1,000-turn conversation 3.7 times the floor). One that holds a skipped key is rebuilt without it."""
    rebuilt: list[Any] = []
    monkeypatch.setattr(_matching, "_drop_fields", lambda value, *rest: rebuilt.append(value) or value)
    history = [{"role": "user", "content": f"turn {turn}: {'word ' * 10}"} for turn in range(1_000)]
    body = {"model": "m", "messages": history}
    matcher = RequestMatcher()
    assert matcher.comparable("POST", "https://api.test/v1", [], {"json": body})["body"] is body
    assert rebuilt == []
    stamped = {**body, "metadata": {"timestamp": 1}}
    matcher.comparable("POST", "https://api.test/v1", [], {"json": stamped})
    assert rebuilt == [stamped]


# --- cloud clients' per-request headers, path-scoped field ignores, passthrough, a mismatch under any User-Agent ---


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


@pytest.mark.parametrize(("recorded", "incoming"), [(0, False), (1, True), (1, 1.0)])
def test_equal_values_of_another_type_are_a_difference(recorded: Any, incoming: Any) -> None:
    # Python finds 0 == False and 1 == 1.0; the JSON a request sends does not, and neither does the index's key.
    def request(value: Any) -> dict[str, Any]:
        url = {"scheme": "https", "host": "api.test", "path": "/v1", "query": {}}
        return {"method": "POST", "url": url, "headers": {}, "body": {"m": value}}

    matcher = RequestMatcher()
    assert matcher.difference(request(recorded), request(incoming)) == ("body.m", recorded, incoming)
    assert matcher.differences(request(recorded), request(incoming)) == [("body.m", recorded, incoming)]
    assert matcher.difference(request(recorded), request(recorded)) is None


@pytest.mark.parametrize("where", ["headers", "query", "form"])
def test_a_name_repeated_many_times_is_compared_in_linear_time(where: str) -> None:
    """A cassette may repeat a header name, a query key or a form field 400,000 times: each repeat rebuilt the
    list of the values before it (85 s to replay one such request); grouped in one pass now."""
    from helpers import finishes_within

    count = 400_000
    headers = [("x-a", "1")] * count if where == "headers" else []
    url = "https://a.test/v1" + ("?" + "a=1&" * count if where == "query" else "")
    body = {"text": "a=1&" * count} if where == "form" else None
    if where == "form":
        headers = [("content-type", "application/x-www-form-urlencoded")]
    found: list[dict[str, Any]] = []
    finishes_within(30, lambda: found.append(RequestMatcher().comparable("POST", url, headers, body)))
    fields = found[0]
    values = {"headers": fields["headers"].get("x-a"), "query": fields["url"]["query"].get("a"),
              "form": fields["body"].get("a") if isinstance(fields["body"], dict) else None}[where]  # fmt: skip
    assert (values.split(", ") if where == "headers" else values) == ["1"] * count  # headers: joined, as HTTP does
