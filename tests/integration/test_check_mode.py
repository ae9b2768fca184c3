"""Mode ``check``: each call goes to the live upstream (the app gets the live answer), its answer's shape is
compared with the recorded call's, and nothing is written. Driven through the openai SDK (sync and async,
streaming and not) against the loopback upstream serving the API as recorded and a changed API, through
``transport()``, ``use_cassette``, ``VCR_TRANSPORT_MODE`` and the pytest marker (pytester)."""

from __future__ import annotations

import functools
import json
import os
import warnings
from pathlib import Path
from typing import Any

import httpx2
import pytest
from helpers import recording
from test_drift import _changed_openai
from tool_agents import ToolApi, anthropic_agent, genai_agent, openai_agent
from upstream import Upstream
from vendors import SDKS, VENDOR_ROUTES

import vcr_transport
from vcr_transport import ShapeDriftError, ShapeDriftWarning

OPENAI = {sdk.side: sdk for sdk in SDKS if sdk.name == "openai" and sdk.library is httpx2}
STEPS = [("chat", ["hi"]), ("stream", ["hi"])]


class Api(Upstream):
    """The loopback upstream at one address, serving the API as recorded until ``change()``."""

    def __init__(self) -> None:
        super().__init__()
        for prefix, reply in VENDOR_ROUTES.values():
            self.routes[prefix] = reply

    def change(self) -> None:
        self.routes["/v1/chat/completions"] = _changed_openai
        self.received.clear()


@pytest.fixture
def api() -> Any:
    server = Api()
    yield server.start()
    server.stop()


@pytest.fixture
def chat_cassette(tmp_path: Path, api: Api) -> Path:
    """An openai cassette of a chat and a stream, recorded from the API as it was."""
    path = tmp_path / "chat.jsonl"
    OPENAI["sync"].run(recording(httpx2, False, path), api.url, STEPS)
    api.received.clear()
    return path


@pytest.fixture(autouse=True)
def _no_mode_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)


def _folder(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.parent.iterdir()}


@pytest.mark.parametrize("side", ["sync", "async"])
def test_a_changed_api_reaches_the_app_live_and_its_shape_change_is_raised_at_the_end(
    side: str, chat_cassette: Path, api: Api
) -> None:
    api.change()
    before = _folder(chat_cassette)
    with pytest.raises(ShapeDriftError) as raised:
        with vcr_transport.use_cassette(chat_cassette, mode="check"):
            replies = OPENAI[side].run(None, api.url, STEPS)
    # The app got the live answers (the changed API's), both calls went out, nothing was written.
    assert replies[1] == ["echo"]
    assert [r.json()["stream"] if "stream" in r.json() else False for r in api.received] == [False, True]
    assert _folder(chat_cassette) == before
    error = raised.value
    assert [call[0] for call in error.calls] == [0, 1]
    chat_changes = {path: (was, now) for path, was, now in error.calls[0][3]}
    assert chat_changes["body.usage.prompt_tokens"] == ("integer", "string")
    assert chat_changes["body.service_tier"] == ("-", "string")
    stream_paths = [path for path, _, _ in error.calls[1][3]]
    assert "events[response.keepalive]" in stream_paths
    text = str(error)
    assert text.splitlines()[0] == f"2 live answer(s) differ in shape from cassette {chat_cassette}:"
    assert "    body.usage.prompt_tokens: recorded integer, live string" in text


@pytest.mark.parametrize("side", ["sync", "async"])
def test_an_api_answering_as_recorded_passes_the_check(side: str, chat_cassette: Path, api: Api) -> None:
    before = _folder(chat_cassette)
    with vcr_transport.use_cassette(chat_cassette, mode="check") as block:
        replies = OPENAI[side].run(None, api.url, STEPS)
    assert block.mode == "check"
    assert block.session is not None and block.session.checker is not None
    assert block.session.checker.checked == 2 and block.session.outcome() == "checked"
    assert replies[0] == "echo:hi" and replies[1][0] == "echo:hi"
    assert len(api.received) == 2
    assert _folder(chat_cassette) == before


def test_the_environment_variable_turns_check_on(
    chat_cassette: Path, api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.change()
    monkeypatch.setenv("VCR_TRANSPORT_MODE", "check")
    monkeypatch.setenv("CI", "1")  # check records nothing, so CI allows it
    with pytest.raises(ShapeDriftError, match="body.service_tier: recorded -, live string"):
        with vcr_transport.use_cassette(chat_cassette):
            OPENAI["sync"].run(None, api.url, STEPS[:1])
    assert len(api.received) == 1


@pytest.mark.parametrize("side", ["sync", "async"])
def test_a_transport_warns_as_each_changed_answer_ends(side: str, chat_cassette: Path, api: Api) -> None:
    api.change()
    before = _folder(chat_cassette)
    make = vcr_transport.async_transport if side == "async" else vcr_transport.transport
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replies = OPENAI[side].run(make(chat_cassette, mode="check"), api.url, STEPS)
    assert replies[1] == ["echo"]
    drift = [w for w in caught if issubclass(w.category, ShapeDriftWarning)]
    assert len(drift) == 2
    assert "call 0 (POST " in str(drift[0].message) and "body.usage.prompt_tokens" in str(drift[0].message)
    assert "call 1 (POST " in str(drift[1].message) and "events[response.keepalive]" in str(drift[1].message)
    assert _folder(chat_cassette) == before


def test_a_request_at_a_recorded_place_is_compared_and_one_no_recorded_call_stands_for_is_not(
    chat_cassette: Path, api: Api
) -> None:
    """A first turn whose text changed stands for the recorded chat (its place in the conversation) and is
    compared; a longer conversation the recording never had goes live and is not compared: no drift, the
    block passes, and the checker says why."""
    with vcr_transport.use_cassette(chat_cassette, mode="check") as block:
        replies = OPENAI["sync"].run(None, api.url, [("chat", ["bye"]), ("chat", ["hi", "echo:hi", "more"])])
    assert replies == ["echo:bye", "echo:more"]
    assert len(api.received) == 2
    checker = block.session.checker if block.session is not None else None
    assert checker is not None and checker.checked == 1 and checker.findings == []
    assert block.session is not None and block.session.outcome() == "checked"
    [(number, method, _, why)] = checker.not_compared
    assert (number, method) == (1, "POST")
    assert why.startswith("no unpaired recorded call of this method and path is at its place in the conversation")
    live = "{'role': 'assistant', 'content': '<text>'}"
    assert why.endswith(f"(the next, call 1, differs at body.messages[1]: recorded <missing>, live {live})")


def test_a_missing_cassette_refuses_in_check_mode(tmp_path: Path, api: Api) -> None:
    with pytest.raises(Exception, match="no such cassette"):
        with vcr_transport.use_cassette(tmp_path / "none.jsonl", mode="check"):
            OPENAI["sync"].run(None, api.url, STEPS[:1], max_retries=0)
    assert api.received == []
    assert list(tmp_path.iterdir()) == []


MARKED_TEST = """
import os

import openai
import pytest


@pytest.mark.vcr_transport(path="cassettes/chat.jsonl")
def test_chat():
    client = openai.OpenAI(api_key="sk-test", base_url=os.environ["UPSTREAM"] + "/v1")
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content
"""


def test_the_marker_fails_a_test_whose_live_answer_changed_shape(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    api: Api,
) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\n")
    pytester.makepyfile(test_chat=MARKED_TEST)
    monkeypatch.setenv("UPSTREAM", api.url)
    pytester.runpytest("--vcr-mode=record").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "chat.jsonl"
    before = cassette.read_bytes()

    passed = pytester.runpytest("--vcr-mode=check")
    passed.assert_outcomes(passed=1)
    passed.stdout.fnmatch_lines(["cassettes: 1 checked live, same shape*"])

    api.change()
    result = pytester.runpytest("--vcr-mode=check", "-rf")
    result.assert_outcomes(failed=1)
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "live answer(s) differ in shape" in line)
    url = json.loads(before.splitlines()[1])["url"]
    assert lines[start : start + 6] == [
        "E   1 live answer(s) differ in shape from cassette cassettes/chat.jsonl:",
        f"E     call 0 (POST {url}):",
        "E       body.service_tier: recorded -, live string",
        "E       body.usage.prompt_tokens: recorded integer, live string",
        "E   the API changed under the cassette; if the new shape is intended, re-record this test:",
        'E       pytest --vcr-mode=record "test_chat.py::test_chat"',
    ]
    result.stdout.fnmatch_lines(
        [
            "cassettes: 1 with a changed shape (mode check)*",
            "FAILED test_chat.py::test_chat - shape changed at call 0, body.service_tier*",
        ]
    )
    assert len(api.received) == 1
    assert cassette.read_bytes() == before
    assert sorted(p.name for p in cassette.parent.iterdir()) == ["chat.jsonl"]
    assert os.environ.get("VCR_TRANSPORT_MODE") is None


# --- multi-turn agents: the live vendor returns new tool-call ids and new text, the app sends them back ---

AGENT_RUNS = {
    "openai-sync": functools.partial(openai_agent, side="sync"),
    "openai-async": functools.partial(openai_agent, side="async"),
    "anthropic": anthropic_agent,
    "genai": genai_agent,
}
USAGE = {"openai-sync": "usage", "openai-async": "usage", "anthropic": "usage", "genai": "usageMetadata"}


@pytest.fixture
def tools() -> Any:
    server = ToolApi()
    yield server.start()
    server.stop()


def _recorded_agent(tools: ToolApi, path: Path, agent: Any) -> None:
    """Record the agent's two turns from the API's recording run, then let the API answer as a live run."""
    with vcr_transport.use_cassette(path, mode="record"):
        assert agent(tools.url) == "The sum is 5 (rec run)."
    tools.received.clear()
    tools.run = "live"


@pytest.mark.parametrize("agent", AGENT_RUNS)
def test_a_multi_turn_agent_passes_the_check_when_only_its_ids_and_text_changed(
    agent: str, tools: ToolApi, tmp_path: Path
) -> None:
    cassette = tmp_path / "agent.jsonl"
    _recorded_agent(tools, cassette, AGENT_RUNS[agent])
    before = _folder(cassette)
    with vcr_transport.use_cassette(cassette, mode="check") as block:
        assert AGENT_RUNS[agent](tools.url) == "The sum is 5 (live run)."
    # Turn 2 carried the live tool-call id back (no recorded call matches it), and was compared all the same.
    assert len(tools.received) == 2
    assert b"live" in tools.received[1].body and b"rec" not in tools.received[1].body
    checker = block.session.checker if block.session is not None else None
    assert checker is not None and checker.checked == 2
    assert checker.findings == [] and checker.not_compared == []
    assert block.session is not None and block.session.outcome() == "checked"
    assert _folder(cassette) == before


@pytest.mark.parametrize("agent", AGENT_RUNS)
def test_a_changed_shape_in_turn_2_of_an_agent_is_drift_naming_turn_2s_field(
    agent: str, tools: ToolApi, tmp_path: Path
) -> None:
    cassette = tmp_path / "agent.jsonl"
    _recorded_agent(tools, cassette, AGENT_RUNS[agent])
    tools.drop = USAGE[agent]
    with pytest.raises(ShapeDriftError) as raised:
        with vcr_transport.use_cassette(cassette, mode="check"):
            AGENT_RUNS[agent](tools.url)
            AGENT_RUNS[agent](tools.url)  # again: the recording has no more calls to pair it with
    error = raised.value
    assert [index for index, _, _, _ in error.calls] == [1]  # turn 2 only: turn 1 kept its shape
    assert (f"body.{USAGE[agent]}", "object", "-") in error.calls[0][3]
    assert [line.split(" (")[0] for line in error.not_compared] == ["request 2", "request 3"]
    lines = str(error).splitlines()
    assert f"    body.{USAGE[agent]}: recorded object, live -" in lines
    at = lines.index("2 request(s) not compared (not drift):")
    assert lines[at + 1].startswith("  request 2 (POST ")
    assert lines[at + 1].endswith(
        "): the recording's 2 call(s) of this method and path were paired with earlier requests"
    )
    assert lines[-1].startswith("the API changed under the cassette")


@pytest.mark.parametrize("agent", ["openai-sync", "anthropic", "genai"])
def test_requests_the_recording_never_had_are_not_compared_and_are_no_drift(
    agent: str, tools: ToolApi, tmp_path: Path
) -> None:
    """Live, turn 1 calls the tool twice: turn 2 then has a place in the conversation the recording never had.
    The agent runs again: its turn 1 finds recorded call 0 paired already, its turn 2 stands for call 1; a third
    run finds every recorded call paired. What has no recorded call is not compared, and the block passes."""
    cassette = tmp_path / "agent.jsonl"
    _recorded_agent(tools, cassette, AGENT_RUNS[agent])
    tools.parallel = True
    with vcr_transport.use_cassette(cassette, mode="check") as block:
        AGENT_RUNS[agent](tools.url)
        tools.parallel = False
        AGENT_RUNS[agent](tools.url)
        AGENT_RUNS[agent](tools.url)
    assert len(tools.received) == 6
    checker = block.session.checker if block.session is not None else None
    assert checker is not None and checker.checked == 2 and checker.findings == []
    assert [(number, method) for number, method, _, _ in checker.not_compared] == [(n, "POST") for n in (1, 2, 4, 5)]
    whys = [why for _, _, _, why in checker.not_compared]
    at_no_place = "no unpaired recorded call of this method and path is at its place in the conversation"
    assert whys[0].startswith(at_no_place) and whys[1].startswith(at_no_place)
    assert "(the next, call 1, differs at body." in whys[0] and ": recorded <missing>, live " in whys[0]
    assert whys[2:] == ["the recording's 2 call(s) of this method and path were paired with earlier requests"] * 2
    assert block.session is not None and block.session.outcome() == "checked"


def test_check_sends_the_apps_own_request_where_its_client_sends_it(
    tools: ToolApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cassette names another host (where it was recorded) and the environment holds a key for the
    vendor: the check sends each request to the app's own base URL with the app's own key, and nothing to the
    cassette's host."""
    cassette = tmp_path / "agent.jsonl"
    elsewhere = ToolApi().start()
    try:
        with vcr_transport.use_cassette(cassette, mode="record"):
            openai_agent(elsewhere.url, api_key="sk-proj-RECORDEDKEYabcdefghijklmnopqrstu")
        elsewhere.received.clear()
        assert f"127.0.0.1:{elsewhere.port}" in cassette.read_text()
        env_key = "sk-proj-ENVIRONMENTKEYabcdefghijklmnopq"
        for name in ("OPENAI_API_KEY", "VCR_TRANSPORT_OPENAI_API_KEY", "API_KEY"):
            monkeypatch.setenv(name, env_key)
        tools.run = "live"
        with vcr_transport.use_cassette(cassette, mode="check") as block:
            assert openai_agent(tools.url, api_key="sk-app-own-key") == "The sum is 5 (live run)."
        assert elsewhere.received == []
    finally:
        elsewhere.stop()
    assert [r.headers["authorization"] for r in tools.received] == ["Bearer sk-app-own-key"] * 2
    assert [r.headers["host"] for r in tools.received] == [f"127.0.0.1:{tools.port}"] * 2
    for received in tools.received:
        assert env_key not in repr(received.headers) and env_key.encode() not in received.body
        assert "RECORDEDKEY" not in repr(received.headers) and b"REDACTED" not in received.body
    # Paired by method and path: the answers were compared although the recorded URLs name another host.
    checker = block.session.checker if block.session is not None else None
    assert checker is not None and checker.checked == 2 and checker.not_compared == []


AGENT_TEST = """
import os

from tool_agents import openai_agent


@pytest.mark.vcr_transport(path="cassettes/agent.jsonl")
def test_agent():
    assert openai_agent(os.environ["UPSTREAM"]).startswith("The sum is 5")
"""


def test_the_run_summary_says_what_was_compared_and_what_was_not(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tools: ToolApi
) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\n")
    pytester.makepyfile(test_agent="import pytest\n" + AGENT_TEST)
    monkeypatch.setenv("UPSTREAM", tools.url)
    pytester.runpytest("--vcr-mode=record").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "agent.jsonl"
    before = cassette.read_bytes()
    url = f"{tools.url}/v1/chat/completions"

    tools.run = "live"
    same = pytester.runpytest("--vcr-mode=check")
    same.assert_outcomes(passed=1)
    same.stdout.fnmatch_lines(
        ["cassettes: 1 checked live, same shape*", "live answers (mode check): 2 compared with their recorded calls"]
    )

    tools.parallel = True
    extra = pytester.runpytest("--vcr-mode=check")
    extra.assert_outcomes(passed=1)
    lines = extra.stdout.lines
    start = lines.index("live answers (mode check): 1 compared with their recorded calls, 1 not compared (not drift):")
    assert lines[start + 1].startswith(
        f"  cassettes/agent.jsonl: request 1 (POST {url}): no unpaired recorded call of this method and path is at "
        "its place in the conversation (the next, call 1, differs at body.messages[1].tool_calls[1]: recorded "
        "<missing>, live "
    )

    tools.parallel, tools.drop = False, "usage"
    changed = pytester.runpytest("--vcr-mode=check", "-rf")
    changed.assert_outcomes(failed=1)
    lines = changed.stdout.lines
    start = next(i for i, line in enumerate(lines) if "live answer(s) differ in shape" in line)
    assert lines[start : start + 3] == [
        "E   1 live answer(s) differ in shape from cassette cassettes/agent.jsonl:",
        f"E     call 1 (POST {url}):",
        "E       body.usage: recorded object, live -",
    ]
    assert "not compared" not in changed.stdout.str()
    changed.stdout.fnmatch_lines(
        [
            "E   the API changed under the cassette; if the new shape is intended, re-record this test:",
            "cassettes: 1 with a changed shape (mode check)*",
            "live answers (mode check): 2 compared with their recorded calls",
        ]
    )
    assert cassette.read_bytes() == before
