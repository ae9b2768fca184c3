"""Agent-shaped traffic through the real SDKs against the loopback vendor (which answers with the vendors'
real header sets): concurrent calls recorded together replay in any order (asyncio, threads, trio), a
sequential app's swapped calls still fail naming the call, a mismatch reports every difference readably
with suggestions that work as written, and record-on-miss of one changed concurrent prompt writes a
cassette that replays."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
import trio
from google import genai
from google.genai import types as genai_types
from upstream import Received, Reply, Upstream
from vendors import ANTHROPIC_KEY, GOOGLE_KEY, MODEL, OPENAI_KEY, VENDOR_ROUTES

import vcr_transport

VENDORS = ("openai", "anthropic", "genai")
PROMPTS = [f"sub-agent {n}: summarise part {n}" for n in range(5)]
RUNS = 20


def _slow(upstream: Upstream, name: str, seconds: float = 0.2) -> None:
    """The vendor takes ``seconds`` to answer, as a real one does: calls started together overlap."""
    prefix, reply = VENDOR_ROUTES[name]

    def answer(received: Received) -> Reply:
        time.sleep(seconds)
        return reply(received)

    upstream.routes[prefix] = answer


def _client(name: str, base_url: str, *, is_async: bool) -> Any:
    if name == "openai":
        cls = openai.AsyncOpenAI if is_async else openai.OpenAI
        return cls(api_key=OPENAI_KEY, base_url=base_url + "/v1", max_retries=0)
    if name == "anthropic":
        cls = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        return cls(api_key=ANTHROPIC_KEY, base_url=base_url, max_retries=0)
    return genai.Client(api_key=GOOGLE_KEY, http_options=genai_types.HttpOptions(base_url=base_url))


def _chat(name: str, client: Any, prompt: str) -> str:
    if name == "openai":
        reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": prompt}])
        return str(reply.choices[0].message.content)
    if name == "anthropic":
        message = client.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": prompt}])
        return str(message.content[0].text)
    return str(client.models.generate_content(model=MODEL, contents=prompt).text)


async def _achat(name: str, client: Any, prompt: str) -> str:
    if name == "openai":
        reply = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": prompt}])
        return str(reply.choices[0].message.content)
    if name == "anthropic":
        message = await client.messages.create(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": prompt}]
        )
        return str(message.content[0].text)
    return str((await client.aio.models.generate_content(model=MODEL, contents=prompt)).text)


async def _aclose(name: str, client: Any) -> None:
    await (client.aio.aclose() if name == "genai" else client.close())


def _gather(name: str, base_url: str, prompts: list[str], delays: list[float]) -> dict[str, str]:
    """The prompts sent together with asyncio.gather, each after its start delay: prompt -> answer."""

    async def one(client: Any, prompt: str, delay: float) -> str:
        await asyncio.sleep(delay)
        return await _achat(name, client, prompt)

    async def run() -> dict[str, str]:
        client = _client(name, base_url, is_async=True)
        try:
            answers = await asyncio.gather(*(one(client, p, d) for p, d in zip(prompts, delays, strict=True)))
        finally:
            await _aclose(name, client)
        return dict(zip(prompts, answers, strict=True))

    return asyncio.run(run())


def _threads(name: str, base_url: str, prompts: list[str], delays: list[float]) -> dict[str, str]:
    client = _client(name, base_url, is_async=False)

    def one(prompt: str, delay: float) -> str:
        time.sleep(delay)
        return _chat(name, client, prompt)

    with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        answers = list(pool.map(one, prompts, delays))
    client.close()
    return dict(zip(prompts, answers, strict=True))


def _trio(name: str, base_url: str, prompts: list[str], delays: list[float]) -> dict[str, str]:
    answers: dict[str, str] = {}

    async def run() -> None:
        client = _client(name, base_url, is_async=True)

        async def one(prompt: str, delay: float) -> None:
            await trio.sleep(delay)
            answers[prompt] = await _achat(name, client, prompt)

        async with trio.open_nursery() as nursery:
            for prompt, delay in zip(prompts, delays, strict=True):
                nursery.start_soon(one, prompt, delay)
        await _aclose(name, client)

    trio.run(run)
    return answers


Runner = Callable[[str, str, list[str], list[float]], dict[str, str]]


def _replays(runner: Runner, name: str, base_url: str, path: Path, prompts: list[str], seed: int) -> None:
    """``RUNS`` replays of the prompts, each in a shuffled order with random start delays: every one answers
    every prompt with its own recorded answer."""
    shuffler = random.Random(seed)
    for run in range(RUNS):
        order = list(prompts)
        shuffler.shuffle(order)
        delays = [shuffler.uniform(0, 0.004) for _ in order]
        with vcr_transport.use_cassette(path, mode="replay"):
            answers = runner(name, base_url, order, delays)
        assert answers == {prompt: f"echo:{prompt}" for prompt in prompts}, f"replay {run}, order {order}"


@pytest.mark.parametrize("name", VENDORS)
@pytest.mark.parametrize("runner", [_gather, _threads, _trio], ids=["asyncio-gather", "thread-pool", "trio-nursery"])
@pytest.mark.slow
def test_concurrent_calls_replay_in_any_order_20_runs_out_of_20(
    name: str, runner: Runner, upstream: Upstream, tmp_path: Path
) -> None:
    if runner is _trio and name == "genai":
        pytest.skip("google-genai's async client runs on asyncio only")
    _slow(upstream, name)
    path = tmp_path / "agents.jsonl"
    with vcr_transport.use_cassette(path, mode="record"):
        live = runner(name, upstream.url, PROMPTS, [0.0] * len(PROMPTS))
    assert live == {prompt: f"echo:{prompt}" for prompt in PROMPTS}
    upstream.stop()
    _replays(runner, name, upstream.url, path, PROMPTS, seed=25)


@pytest.mark.parametrize("name", VENDORS)
def test_a_sequential_app_that_swaps_two_calls_gets_a_mismatch_naming_the_call(
    name: str, upstream: Upstream, tmp_path: Path
) -> None:
    path = tmp_path / "steps.jsonl"
    client = _client(name, upstream.url, is_async=False)
    with vcr_transport.use_cassette(path, mode="record"):
        for prompt in PROMPTS[:3]:
            _chat(name, client, prompt)
    upstream.stop()
    with vcr_transport.use_cassette(path, mode="replay", caught_mismatch="ignore", unplayed="ignore"):
        assert _chat(name, client, PROMPTS[0]) == f"echo:{PROMPTS[0]}"
        with pytest.raises(Exception, match=r"replay mismatch at call 1, field body\.") as caught:
            _chat(name, client, PROMPTS[2])
    assert "the request is recorded call 2 exactly: the calls came in another order" in str(caught.value)


LONG_PROMPT = ("You are a careful assistant for a travel agency. " * 20) + "Be concise. " + ("Answer politely. " * 60)


def test_three_changed_fields_are_all_reported_and_a_changed_word_in_a_long_prompt_is_visible(
    upstream: Upstream, tmp_path: Path
) -> None:
    assert len(LONG_PROMPT) > 2000
    path = tmp_path / "long.jsonl"
    client = _client("openai", upstream.url, is_async=False)

    def ask(prompt: str, model: str, temperature: float) -> None:
        client.chat.completions.create(
            model=model, temperature=temperature, messages=[{"role": "user", "content": prompt}]
        )

    with vcr_transport.use_cassette(path, mode="record"):
        ask(LONG_PROMPT, "gpt-a", 0.1)
    upstream.stop()
    with vcr_transport.use_cassette(path, mode="replay", caught_mismatch="ignore", unplayed="ignore"):
        with pytest.raises(vcr_transport.ReplayMismatch) as caught:
            ask(LONG_PROMPT.replace("Be concise.", "Be verbose."), "gpt-b", 0.9)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("replay mismatch at call 0, field body.messages[0].content: recorded '...")
    assert lines[1] == "3 fields differ from recorded call 0:"
    assert lines[2].startswith("  body.messages[0].content: ")
    assert "Be [concise]. Answer" in lines[2] and "Be [verbose]. Answer" in lines[2]
    assert lines[3] == "  body.model: recorded 'gpt-a', incoming 'gpt-b'"
    assert lines[4] == "  body.temperature: recorded 0.1, incoming 0.9"
    assert caught.value.differences[0][1] == LONG_PROMPT, "the full values stay on the exception"


def _suggested(message: str) -> dict[str, Any]:
    """The options a mismatch suggests, exactly as written in it, evaluated as keyword arguments."""
    found = re.findall(r"to replay it, pass (\w+=.*)$", message, re.MULTILINE)
    assert found, message
    options: dict[str, Any] = {}
    for text in found:
        options.update(eval(f"dict({text})"))  # noqa: S307 - the test reads what the message tells a user
    return options


@pytest.mark.parametrize(
    ("change", "option"),
    [("timestamp", "normalize_patterns"), ("uuid", "ignore_fields")],
    ids=["timestamp-in-the-prompt", "uuid-in-metadata"],
)
def test_a_volatile_value_gets_a_suggestion_that_applied_as_written_replays(
    change: str, option: str, upstream: Upstream, tmp_path: Path
) -> None:
    path = tmp_path / "volatile.jsonl"
    client = _client("openai", upstream.url, is_async=False)

    def ask(now: str, run_id: str) -> str:
        reply = client.chat.completions.create(
            model=MODEL,
            metadata={"run_id": run_id},
            messages=[{"role": "user", "content": f"It is {now}. Plan my day."}],
        )
        return str(reply.choices[0].message.content)

    first_id, second_id = str(uuid.UUID(int=1)), str(uuid.uuid4())
    with vcr_transport.use_cassette(path, mode="record"):
        ask("2024-05-01T10:00:00+00:00", first_id)
    upstream.stop()
    now = "2026-12-02T01:12:03+00:00" if change == "timestamp" else "2024-05-01T10:00:00+00:00"
    run_id = second_id if change == "uuid" else first_id
    with vcr_transport.use_cassette(path, mode="replay", caught_mismatch="ignore", unplayed="ignore"):
        with pytest.raises(vcr_transport.ReplayMismatch) as caught:
            ask(now, run_id)
    options = _suggested(str(caught.value))
    assert list(options) == [option]
    with vcr_transport.use_cassette(path, mode="replay", **options):
        assert ask(now, run_id) == "echo:It is 2024-05-01T10:00:00+00:00. Plan my day."


@pytest.mark.parametrize("name", VENDORS)
@pytest.mark.parametrize("ordered", ["concurrent", False])
@pytest.mark.slow
def test_record_on_miss_of_one_changed_concurrent_prompt_writes_a_cassette_that_replays(
    name: str, ordered: Any, upstream: Upstream, tmp_path: Path
) -> None:
    _slow(upstream, name)
    path = tmp_path / "agents.jsonl"
    prompts = PROMPTS[:4]
    with vcr_transport.use_cassette(path, mode="record"):
        _gather(name, upstream.url, prompts, [0.0] * 4)
    changed = [*prompts[:2], "sub-agent 2: summarise part 2 in French", prompts[3]]
    shuffler = random.Random(9)
    order = list(changed)
    shuffler.shuffle(order)
    with vcr_transport.use_cassette(path, mode="record-on-miss", ordered=ordered):
        answers = _gather(name, upstream.url, order, [shuffler.uniform(0, 0.004) for _ in order])
    assert answers == {prompt: f"echo:{prompt}" for prompt in changed}
    requests = [json.loads(line) for line in path.read_text().splitlines() if '"type":"request"' in line]
    assert sorted(json.dumps(r["body"]) for r in requests) == sorted({json.dumps(r["body"]) for r in requests}), (
        "no stale call is kept twice"
    )
    assert len(requests) == 4
    assert [r["call_index"] for r in requests] == [0, 1, 2, 3]
    upstream.stop()
    _replays(_gather, name, upstream.url, path, changed, seed=3)


MARKER_TESTS = """
import asyncio
import os
import random

import openai
import pytest

PROMPTS = {prompts!r}


def gather(order):
    async def run():
        client = openai.AsyncOpenAI(api_key="sk-not-a-key-0000", base_url=os.environ["VENDOR"] + "/v1", max_retries=0)
        replies = await asyncio.gather(
            *(client.chat.completions.create(model="m", messages=[{{"role": "user", "content": p}}]) for p in order)
        )
        await client.close()
        return [reply.choices[0].message.content for reply in replies]

    return asyncio.run(run())


@pytest.mark.vcr_transport(path="cassettes/agents.jsonl", mode="record")
def test_record():
    gather(PROMPTS)


@pytest.mark.vcr_transport(path="cassettes/agents.jsonl", mode="replay")
@pytest.mark.parametrize("seed", range(10))
def test_replay(seed):
    order = list(PROMPTS)
    random.Random(seed).shuffle(order)
    assert gather(order) == ["echo:" + p for p in order]
"""


@pytest.mark.slow
def test_the_marker_replays_concurrent_calls_in_any_order(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, upstream: Upstream
) -> None:
    _slow(upstream, "openai")
    monkeypatch.setenv("VENDOR", upstream.url)
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    pytester.makepyfile(test_agents=MARKER_TESTS.format(prompts=PROMPTS))
    pytester.runpytest_inprocess("-p", "no:randomly", "-k", "test_record").assert_outcomes(passed=1)
    upstream.stop()
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-k", "test_replay")
    result.assert_outcomes(passed=10)
