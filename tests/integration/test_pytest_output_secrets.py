"""What pytest prints of a failing test holds no credential of ours: a failing assert on
``vcr_cassette.requests`` (record mode: redacted values), and under ``-l`` or a long traceback our own frames
(the transports, ``_context``, ``_session``, ``_replay``, ``_recording``) show no argument or local
(``_pytest_reports.hide_our_values``). Through pytester and the OpenAI SDK at a MockTransport that answers
with OpenAI's real headers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from real_wire import real_headers

import vcr_transport

KEY = "sk-proj-" + "Zq7RkLm2Nx4Vb8Tc1Wd5Yf9Hg3Js6Pa0Ue" * 2
PASSWORD = "Q7passwordInTheBody01234"
CLIENT_SECRET = "Q7clientSecretInTheForm5678"
SECRETS = (KEY, PASSWORD, CLIENT_SECRET)

TESTS = f"""
import os

import httpx
import openai
import pytest

HEADERS = {real_headers("openai")!r}
ANSWER = {{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
    {{"index": 0, "finish_reason": "stop", "message": {{"role": "assistant", "content": "hi"}}}}]}}

def send():  # the secrets live in this frame alone, which has returned when the test fails
    mock = httpx.MockTransport(lambda request: httpx.Response(200, json=ANSWER, headers=HEADERS))
    with httpx.Client(transport=mock) as http:
        client = openai.OpenAI(api_key={KEY!r}, http_client=http, max_retries=0)
        client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "hi"}}])
        http.post("https://auth.example.test/login", json={{"user": "ann", "password": {PASSWORD!r}}})
        http.post("https://auth.example.test/token", data={{"grant_type": "x", "client_secret": {CLIENT_SECRET!r}}})

def ask(prompt):
    mock = httpx.MockTransport(lambda request: httpx.Response(200, json=ANSWER, headers=HEADERS))
    client = openai.OpenAI(api_key=os.environ["THE_KEY"], http_client=httpx.Client(transport=mock), max_retries=0)
    client.chat.completions.create(model="m", messages=[{{"role": "user", "content": prompt}}])

@pytest.mark.vcr_transport
def test_requests(vcr_cassette):
    send()
    assert vcr_cassette.requests == []

@pytest.mark.vcr_transport
@pytest.mark.parametrize("api_key", [{KEY!r}])
def test_mismatch(api_key):
    ask(os.environ.get("PROMPT", "recorded"))
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("THE_KEY", KEY)
    pytester.makepyfile(test_secrets=TESTS)
    return pytester


# This package's folder: a checkout named vcr_transport has the SDKs' frames (its .venv) under "vcr_transport/" too.
_PACKAGE = Path(vcr_transport.__file__).resolve().parent


def _ours(path: str) -> bool:
    return Path(path).resolve().is_relative_to(_PACKAGE)


_LOCATION = re.compile(r"^(?P<path>\S+\.py):\d+:(?P<short> in \S+)?")
_SEPARATOR = re.compile(r"^(?:_ )+_?$")


def _our_frames(output: str) -> list[str]:
    """The traceback entries whose location is in the package: a long entry ends with its location (after a
    separator line), a short one starts with it (``path:line: in function``)."""
    frames, lines = [], output.splitlines()
    start = 0
    for number, line in enumerate(lines):
        location = _LOCATION.match(line)
        if _SEPARATOR.match(line):
            start = number
        elif location and location["short"]:
            end = next((n for n in range(number + 1, len(lines)) if _LOCATION.match(lines[n])), len(lines))
            if _ours(location["path"]):
                frames.append("\n".join(lines[number:end]))
            start = end
        elif location:
            if _ours(location["path"]):
                frames.append("\n".join(lines[start : number + 1]))
            start = number
    return frames


@pytest.mark.slow
def test_a_failing_assert_on_the_requests_shows_redacted_values(project: pytest.Pytester) -> None:
    result = project.runpytest("--vcr-mode=record", "-k", "test_requests", "-l", "-vv", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "password" in output and "client_secret" in output and "[secret removed]" in output
    assert not [secret for secret in SECRETS if secret in output]


@pytest.mark.slow
@pytest.mark.parametrize("flags", [("-l",), ("-l", "--tb=long"), ("-l", "-vv")])
def test_our_frames_show_no_argument_or_local(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, flags: tuple[str, ...]
) -> None:
    project.runpytest("--vcr-mode=record", "-k", "test_mismatch", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    monkeypatch.setenv("PROMPT", "a prompt the cassette never saw")
    result = project.runpytest("--vcr-mode=replay", "-k", "test_mismatch", *flags, "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    ours = _our_frames(output)
    if flags != ("-l",):  # pytest's long traceback: our frames are there, without their values
        assert len(ours) >= 3 and all("(not shown" in entry for entry in ours)
    assert not [entry for entry in ours if KEY in entry or KEY[:20] in entry]
    if flags == ("-l",):  # our short report: the command that records the test again names it without the key
        hint = [line for line in output.splitlines() if "--vcr-mode=record-on-miss" in line]
        assert hint and not [line for line in hint if KEY in line], hint
        assert any('"test_secrets.py::test_mismatch"' in line for line in hint), hint


CONTEXT_TEST = (
    TESTS.split("@pytest.mark.vcr_transport")[0].replace("import pytest\n", "import vcr_transport\n")
    + """
def test_context_mismatch():
    with vcr_transport.use_cassette("cassettes/context.jsonl"):
        ask(os.environ.get("PROMPT", "recorded"))
"""
)


@pytest.mark.slow
def test_our_frames_show_no_value_when_no_test_is_marked(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suite that marks no test and opens its cassettes with ``use_cassette()``: the hooks that hide our frames'
    values come with the first cassette it opens."""
    project.makepyfile(test_secrets=CONTEXT_TEST)
    project.runpytest("--vcr-mode=record", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    monkeypatch.setenv("PROMPT", "a prompt the cassette never saw")
    result = project.runpytest("--vcr-mode=replay", "-l", "--tb=long", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    ours = _our_frames(result.stdout.str())
    assert len(ours) >= 3 and all("(not shown" in entry for entry in ours)
    assert not [entry for entry in ours if KEY in entry or KEY[:20] in entry]
