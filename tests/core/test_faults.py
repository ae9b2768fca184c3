"""Faults injected into replay, through the real SDKs (ReplayTransport, use_cassette, the marker), and
the fault spec's parsing and aiming."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google.genai import errors as genai_errors
from upstream import Upstream
from vendors import SDKS, VENDOR_ROUTES, Sdk

from vcr_transport import Fault, Options, RecordingTransport, ReplayTransport, use_cassette

PROMPT = ["hello there friend"]
EXPECTED = ["echo:hello", " there", " friend", " héllo", " ✓", " 日本"]
ONE_PER_VENDOR = [s for s in SDKS if s.library is httpx2 and s.side == "sync"] + [
    s for s in SDKS if s.library is httpx2 and s.side == "async" and s.name == "anthropic"
]


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A stream call of each vendor, recorded from the fake vendors."""
    folder = tmp_path_factory.mktemp("faults")
    server = Upstream()
    for prefix, reply in VENDOR_ROUTES.values():
        server.routes[prefix] = reply
    server.start()
    paths = {}
    try:
        for sdk in [s for s in SDKS if s.library is httpx2 and s.side == "sync"]:
            paths[sdk.name] = folder / f"{sdk.name}.jsonl"
            transport = RecordingTransport(httpx2.HTTPTransport(), paths[sdk.name])
            assert sdk.run(transport, server.url, [("stream", PROMPT)]) == [EXPECTED]
            transport.close()
    finally:
        server.stop()
    return paths


def replay(sdk: Sdk, path: Path, fault: str, **client: Any) -> tuple[ReplayTransport, list[float], list[str], Any]:
    """Run the stream through a ReplayTransport with ``fault``: (transport, sleeps, deltas seen, outcome)."""
    transport = ReplayTransport(path, faults=[fault], ignore_headers=["x-server-timeout"])
    slept: list[float] = []
    transport.sleep = slept.append

    async def no_wait(seconds: float) -> None:
        slept.append(seconds)

    transport.async_sleep = no_wait
    seen: list[str] = []
    try:
        outcome: Any = _stream(sdk, transport, seen, client)
    except Exception as error:
        outcome = error
    return transport, slept, seen, outcome


def _stream(sdk: Sdk, transport: ReplayTransport, seen: list[str], options: dict[str, Any]) -> str:
    """The SDK's stream, each delta appended to ``seen`` as it comes, so that a failure keeps them."""
    if sdk.is_async:
        return asyncio.run(_stream_async(sdk, transport, seen, options))
    with httpx2.Client(transport=transport) as http:
        client = sdk._client(http, None, origin(transport.path), dict(options))
        if sdk.name == "genai":
            for chunk in client.models.generate_content_stream(model="test-model", contents=PROMPT[0]):
                seen.append(chunk.text)
        else:
            if sdk.name == "openai":
                stream = client.chat.completions.create(
                    model="test-model", messages=[{"role": "user", "content": PROMPT[0]}], stream=True
                )
                for c in stream:
                    if c.choices and c.choices[0].delta.content:
                        seen.append(c.choices[0].delta.content)
            else:
                stream = client.messages.create(
                    model="test-model",
                    max_tokens=64,
                    messages=[{"role": "user", "content": [{"type": "text", "text": PROMPT[0]}]}],
                    stream=True,
                )
                seen.extend(e.delta.text for e in stream if e.type == "content_block_delta")
    return "done"


async def _stream_async(sdk: Sdk, transport: ReplayTransport, seen: list[str], options: dict[str, Any]) -> str:
    async with httpx2.AsyncClient(transport=transport) as http:
        client = sdk._client(None, http, origin(transport.path), dict(options))
        stream = await client.messages.create(
            model="test-model",
            max_tokens=64,
            messages=[{"role": "user", "content": [{"type": "text", "text": PROMPT[0]}]}],
            stream=True,
        )
        async for event in stream:
            if event.type == "content_block_delta":
                seen.append(event.delta.text)
    return "done"


def origin(path: Path) -> str:
    """Where the cassette's calls went (the fake vendor's URL when it was recorded)."""
    scheme, _, rest = ReplayTransport(path).engine.cassette.calls[0].url.partition("://")
    return f"{scheme}://{rest.split('/')[0]}"


TIMEOUT = {
    "openai": {"timeout": 1.0, "max_retries": 0},
    "anthropic": {"timeout": 1.0, "max_retries": 0},
    "genai": {"http_options": {"timeout": 1000}},
}


@pytest.mark.parametrize("sdk", ONE_PER_VENDOR, ids=lambda s: s.id)
def test_a_429_then_the_recording(sdk: Sdk, streams: dict[str, Path]) -> None:
    transport, slept, seen, outcome = replay(sdk, streams[sdk.name], "status:code=429,retry_after=0.01")
    if sdk.name == "genai":  # google-genai retries nothing unless told: the 429 is its error
        assert isinstance(outcome, genai_errors.ClientError) and outcome.code == 429
        assert transport.unplayed_calls() == [(0, "POST", transport.engine.cassette.calls[0].url)]
    else:  # the Stainless SDKs retry the 429, then get the recorded stream
        assert outcome == "done" and seen == EXPECTED
        assert transport.unplayed_calls() == []


@pytest.mark.parametrize("sdk", ONE_PER_VENDOR, ids=lambda s: s.id)
def test_a_cut_stream_raises_the_libraries_error_after_the_chunks_before_it(sdk: Sdk, streams: dict[str, Path]) -> None:
    _, _, seen, outcome = replay(sdk, streams[sdk.name], "cut:after=4")
    errors = (httpx2.RemoteProtocolError, openai.APIConnectionError, anthropic.APIConnectionError)
    assert isinstance(outcome, errors), outcome
    assert 0 < len(seen) < len(EXPECTED) and seen == EXPECTED[: len(seen)]


@pytest.mark.parametrize("sdk", ONE_PER_VENDOR, ids=lambda s: s.id)
@pytest.mark.parametrize("fault", ["delay:seconds=5", "stall:after=2,seconds=30"])
def test_a_wait_past_the_read_timeout_raises_a_timeout(sdk: Sdk, fault: str, streams: dict[str, Path]) -> None:
    _, slept, seen, outcome = replay(sdk, streams[sdk.name], fault, **TIMEOUT[sdk.name])
    assert slept == [1.0]  # waited as long as the client's read timeout, not the stall
    timeouts = (httpx2.ReadTimeout, openai.APITimeoutError, anthropic.APITimeoutError)
    assert isinstance(outcome, timeouts), outcome
    if fault.startswith("delay"):
        assert seen == []


@pytest.mark.parametrize("sdk", ONE_PER_VENDOR, ids=lambda s: s.id)
def test_a_short_delay_is_waited_and_the_recording_follows(sdk: Sdk, streams: dict[str, Path]) -> None:
    _, slept, seen, outcome = replay(sdk, streams[sdk.name], "delay:seconds=0.5", **TIMEOUT[sdk.name])
    assert slept == [0.5] and outcome == "done" and seen == EXPECTED


@pytest.mark.parametrize("sdk", ONE_PER_VENDOR, ids=lambda s: s.id)
def test_a_corrupt_chunk_breaks_the_sdks_json(sdk: Sdk, streams: dict[str, Path]) -> None:
    _, _, seen, outcome = replay(sdk, streams[sdk.name], "corrupt")
    assert isinstance(outcome, ValueError), outcome  # json.JSONDecodeError, or the SDK's own ValueError
    assert seen == []


def test_faults_through_use_cassette_aim_at_one_call(streams: dict[str, Path]) -> None:
    sdk = next(s for s in SDKS if s.name == "openai" and s.library is httpx2 and s.side == "sync")
    # Aimed at call 1 only: the recorded call 0 streams whole.
    with use_cassette(streams["openai"], mode="replay", faults=["cut:after=1,call=1"]):
        assert sdk.run(None, origin(streams["openai"]), [("stream", PROMPT)], max_retries=0) == [EXPECTED]


def test_the_marker_takes_faults(pytester: pytest.Pytester, streams: dict[str, Path]) -> None:
    pytester.makepyfile(
        f"""
        import openai, pytest

        @pytest.mark.vcr_transport(path={str(streams["openai"])!r}, mode="replay", faults=["cut:after=2"])
        def test_app_survives_a_cut_stream():
            client = openai.OpenAI(api_key="sk-test", base_url={origin(streams["openai"]) + "/v1"!r}, max_retries=0)
            stream = client.chat.completions.create(
                model="test-model", messages=[{{"role": "user", "content": "hello there friend"}}], stream=True
            )
            with pytest.raises(openai.APIConnectionError):
                list(stream)
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_probability_is_seeded_and_aiming_is_exact() -> None:
    fault = Fault(kind="cut", probability=0.5, seed=7)
    draws = [fault.hits(index, "/v1/x") for index in range(40)]
    assert draws == [Fault(kind="cut", probability=0.5, seed=7).hits(index, "/v1/x") for index in range(40)]
    assert 5 < sum(draws) < 35
    assert draws != [Fault(kind="cut", probability=0.5, seed=8).hits(index, "/v1/x") for index in range(40)]
    aimed = Fault(kind="cut", calls=(2,), path="/v1/messages*")
    assert [aimed.hits(i, "/v1/messages") for i in range(4)] == [False, False, True, False]
    assert not aimed.hits(2, "/v1/chat/completions")


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("explode", "unknown kind 'explode'; valid: cut, status, delay, stall, corrupt"),
        ("cut:after=x", "after='x' is not a number"),
        ("cut:seconds=3", "seconds not understood by cut; valid: after, call, path, probability, seed"),
        ("status:code=200", "code must be an HTTP error status (400-599), not 200"),
        ("stall:after=2", "seconds must be given, and more than 0"),
        ("delay:seconds=1,probability=2", "probability must be a number from 0 to 1, not 2"),
        ("cut:after", "'after' is not key=value"),
    ],
)
def test_a_wrong_fault_is_refused_naming_the_option_and_the_fix(spec: str, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        Options.from_arguments({"faults": [spec]}, where="use_cassette()")
    assert str(caught.value).startswith("use_cassette(): option faults: fault ")
    assert problem in str(caught.value)


def test_the_text_form_round_trips() -> None:
    for spec in ["cut:after=3", "status:code=429,retry_after=1,times=2,call=0|2", "stall:after=2,seconds=30"]:
        fault = Options.from_arguments({"faults": [spec]}).faults[0]
        assert Options.from_arguments({"faults": [fault.text()]}).faults[0] == fault
    assert Options.from_arguments({"faults": [{"kind": "delay", "seconds": 2}]}).faults == (
        Fault(kind="delay", seconds=2),
    )


def test_a_fault_is_text_a_mapping_or_a_fault_and_a_mapping_names_only_its_kinds_keys() -> None:
    from vcr_transport._core.engine._faults import parse_fault

    fault = Fault(kind="cut", after=2)
    assert parse_fault(fault) is fault
    assert parse_fault({"kind": "cut", "after": 2}) == fault == parse_fault(" cut : after = 2 ")
    with pytest.raises(TypeError, match=r"^a fault is text like 'cut:after=3', a mapping or a Fault, not 3$"):
        parse_fault(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^fault \{'kind': 'cut', 'code': 500\}: code not understood by cut; valid: "):
        parse_fault({"kind": "cut", "code": 500})
    with pytest.raises(ValueError, match=r"^fault \{'after': 1\}: unknown kind None; valid: cut, "):
        parse_fault({"after": 1})
