"""A replay needs no key (``_stand_in_keys.py``): the SDKs' clients, built inside a replaying cassette with no
credential in the environment, replay a cassette recorded with a real key; the environment is the same after
as before, on every path; recording, record-on-miss, check and off set nothing."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import httpx2
import pytest

import vcr_transport
from vcr_transport._core.rules._catalogue import catalogue_matches, looks_like_credential
from vcr_transport._stand_in_keys import KEY_VARIABLES, MISSING_KEY_HINT, STAND_IN, STAND_INS

EVERY_KEY = [name for variable in KEY_VARIABLES for name in variable.names]

SDK_TESTS = """
import asyncio

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

PROMPT = [{"role": "user", "content": "hi"}]


@pytest.mark.vcr_transport
def test_openai():
    client = openai.OpenAI(base_url=URL + "/v1", max_retries=0)
    assert client.chat.completions.create(model="gpt-x", messages=PROMPT).choices[0].message.content == "echo:hi"


@pytest.mark.vcr_transport
def test_openai_async():
    async def ask():
        async with openai.AsyncOpenAI(base_url=URL + "/v1", max_retries=0) as client:
            return await client.chat.completions.create(model="gpt-x", messages=PROMPT)

    assert asyncio.run(ask()).choices[0].message.content == "echo:hi"


@pytest.mark.vcr_transport
def test_azure():
    client = openai.AzureOpenAI(azure_endpoint=URL, api_version="2024-10-21", max_retries=0)
    assert client.chat.completions.create(model="gpt-x", messages=PROMPT).choices[0].message.content == "echo:hi"


@pytest.mark.vcr_transport
def test_anthropic():
    client = anthropic.Anthropic(base_url=URL, max_retries=0)
    reply = client.messages.create(model="claude-x", max_tokens=64, messages=PROMPT)
    assert reply.content[0].text == "echo:hi"


@pytest.mark.vcr_transport
def test_genai():
    client = genai.Client(http_options=types.HttpOptions(base_url=URL))
    assert client.models.generate_content(model="gemini-x", contents="hi").text == "echo:hi"
"""


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [*EVERY_KEY, "VCR_TRANSPORT_MODE", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_API_VERSION"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)


@pytest.fixture
def project(pytester: pytest.Pytester, upstream: Any, no_keys: None) -> pytest.Pytester:
    upstream.routes["/openai/deployments/gpt-x/chat/completions"] = upstream.routes["/v1/chat/completions"]
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\n")
    pytester.makepyfile(test_app=f"URL = {upstream.url!r}\n{SDK_TESTS}")
    return pytester


def test_every_sdk_replays_with_no_key_what_a_real_key_recorded(
    project: pytest.Pytester, upstream: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as keyed:
        for name, key in [
            ("OPENAI_API_KEY", "sk-proj-realkey0123456789abcdefABCDEF"),
            ("AZURE_OPENAI_API_KEY", "0123456789abcdef0123456789abcdef"),
            ("ANTHROPIC_API_KEY", "sk-ant-api03-realkey0123456789abcdef"),
            ("GOOGLE_API_KEY", "AIzaSyA0123456789abcdefghijklmnopqrstu"),
        ]:
            keyed.setenv(name, key)
        project.runpytest("--vcr-mode=record").assert_outcomes(passed=5)
    upstream.stop()
    before = dict(os.environ)
    result = project.runpytest("--vcr-mode=replay", "-p", "no:randomly")
    result.assert_outcomes(passed=5)
    assert dict(os.environ) == before, "the stand-ins are gone after the run"
    assert "Both GOOGLE_API_KEY and GEMINI_API_KEY" not in result.stdout.str() + result.stderr.str()
    # auto replays too (the mode switch): the cassettes exist
    project.runpytest("-p", "no:randomly").assert_outcomes(passed=5)
    for cassette in (project.path / "cassettes" / "test_app").iterdir():
        assert STAND_IN not in cassette.read_text()


def test_recording_with_no_key_fails_as_the_sdk_does(project: pytest.Pytester, upstream: Any) -> None:
    result = project.runpytest("--vcr-mode=record", "-k", "test_openai and not async")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*OpenAIError: Missing credentials*"])
    assert not upstream.received, "no stand-in key went to the vendor"


def test_a_run_that_opens_no_cassette_sets_nothing(pytester: pytest.Pytester, no_keys: None) -> None:
    names = repr(EVERY_KEY)
    pytester.makepyfile(f"import os\n\ndef test_plain():\n    assert not any(os.environ.get(n) for n in {names})\n")
    pytester.runpytest("--vcr-mode=replay").assert_outcomes(passed=1)


# --- use_cassette: only in replay, counted, restored on every path ----------------------------------------------


def _answer(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json={"echo": request.url.path})


def _recorded(path: Path) -> Path:
    with vcr_transport.use_cassette(path, mode="record"), httpx2.Client(transport=httpx2.MockTransport(_answer)) as c:
        c.get("https://api.example.test/v1/models")
    return path


def _send() -> None:
    with httpx2.Client(transport=httpx2.MockTransport(_answer)) as client:
        client.get("https://api.example.test/v1/models")


@pytest.mark.usefixtures("no_keys")
def test_only_replay_sets_the_stand_ins_and_only_the_unset_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = _recorded(tmp_path / "c.jsonl")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "the user's own")
    monkeypatch.setenv("GEMINI_API_KEY", "the user's gemini")
    before = dict(os.environ)
    with vcr_transport.use_cassette(cassette, mode="replay"):
        assert os.environ["OPENAI_API_KEY"] == os.environ["AZURE_OPENAI_API_KEY"] == STAND_IN
        assert "ANTHROPIC_API_KEY" not in os.environ, "its alternative is set: the SDK uses that"
        assert "GOOGLE_API_KEY" not in os.environ, "google-genai warns when both are set"
        _send()
    assert dict(os.environ) == before
    for mode in ("record", "record-on-miss", "check", "off"):
        with vcr_transport.use_cassette(tmp_path / f"{mode}.jsonl" if mode == "record" else cassette, mode=mode):
            assert "OPENAI_API_KEY" not in os.environ, mode
            _send()
        assert dict(os.environ) == before, mode


@pytest.mark.usefixtures("no_keys")
@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_nested_replays_share_the_stand_ins_and_every_path_restores(tmp_path: Path, error: type[BaseException]) -> None:
    cassette = _recorded(tmp_path / "c.jsonl")
    before = dict(os.environ)
    with pytest.raises(error), vcr_transport.use_cassette(cassette, mode="replay"):
        with vcr_transport.use_cassette(cassette, mode="replay", unplayed="ignore"):
            assert os.environ["OPENAI_API_KEY"] == STAND_IN and STAND_INS.users == 2
        assert os.environ["OPENAI_API_KEY"] == STAND_IN, "the inner block leaves them to the outer one"
        raise error
    assert dict(os.environ) == before and not STAND_INS.active


@pytest.mark.usefixtures("no_keys")
def test_two_threads_replaying_at_once_keep_the_stand_ins_until_the_last_ends(tmp_path: Path) -> None:
    cassettes = [_recorded(tmp_path / f"{n}.jsonl") for n in range(2)]
    before = dict(os.environ)
    first_in, first_out = threading.Event(), threading.Event()
    seen: list[str | None] = []

    def first() -> None:
        with vcr_transport.use_cassette(cassettes[0], mode="replay"):
            first_in.set()
            _send()
        first_out.set()

    thread = threading.Thread(target=first)
    with vcr_transport.use_cassette(cassettes[1], mode="replay"):
        thread.start()
        assert first_in.wait(10) and first_out.wait(10)
        seen.append(os.environ.get("OPENAI_API_KEY"))
        _send()
    thread.join(10)
    assert seen == [STAND_IN], "the other thread's end left this replay its stand-in"
    assert dict(os.environ) == before


def test_the_stand_in_is_no_credential_to_redaction_or_scan() -> None:
    assert not looks_like_credential(STAND_IN)
    assert catalogue_matches(STAND_IN) == [] and catalogue_matches(f"Bearer {STAND_IN}") == []


def test_a_client_built_before_the_cassette_opened_fails_with_a_hint(pytester: pytest.Pytester, no_keys: None) -> None:
    pytester.makepyfile(
        """
        import openai
        import pytest

        @pytest.fixture(scope="module")
        def client():
            return openai.OpenAI()

        @pytest.mark.vcr_transport
        def test_chat(client):
            pass

        @pytest.fixture(scope="module")
        def other_client():
            return openai.OpenAI()

        def test_unmarked(other_client):
            pass
        """
    )
    result = pytester.runpytest("--vcr-mode=replay", "-p", "no:randomly")
    result.assert_outcomes(errors=2)
    assert result.stdout.str().count(MISSING_KEY_HINT) == 1, "the marked test's error, once"
