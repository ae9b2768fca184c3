"""A credential in a test's parameters (``@pytest.mark.parametrize("api_key", [KEY])``) stays out of what we
write: the cassette's file name, a shared cassette's owners, the usage ledger (``_test_ids``), through
pytester and the OpenAI SDK at a MockTransport. A cassette written before, named with the key, still replays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vcr_transport._pytest_cassette import cassette_name
from vcr_transport._test_ids import MARK, recorded_owner, without_credentials

KEYS = ["sk-proj-" + "Zq7RkLm2Nx4Vb8Tc1Wd5Yf9Hg3Js6Pa0Ue" * 2, "sk-proj-" + "Hg3Js6Pa0UeZq7RkLm2Nx4Vb8Tc1Wd5Yf9" * 2]

TESTS = """
import httpx
import openai
import pytest

KEYS = {keys!r}

def ask(api_key, prompt):
    answer = {{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {{"index": 0, "finish_reason": "stop", "message": {{"role": "assistant", "content": prompt}}}}]}}
    mock = httpx.MockTransport(lambda request: httpx.Response(200, json=answer))
    client = openai.OpenAI(api_key=api_key, http_client=httpx.Client(transport=mock), max_retries=0)
    reply = client.chat.completions.create(model="m", messages=[{{"role": "user", "content": prompt}}])
    return reply.choices[0].message.content

@pytest.mark.vcr_transport
@pytest.mark.parametrize("api_key", KEYS)
def test_own(api_key):
    assert ask(api_key, "own " + str(KEYS.index(api_key))) == "own " + str(KEYS.index(api_key))

@pytest.mark.vcr_transport(path="cassettes/shared.jsonl")
@pytest.mark.parametrize("api_key", KEYS)
def test_shared(api_key):
    assert ask(api_key, "shared " + str(KEYS.index(api_key))) == "shared " + str(KEYS.index(api_key))
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\n")
    pytester.makepyfile(test_keys=TESTS.format(keys=KEYS))
    return pytester


def _written(root: Path) -> list[tuple[str, str]]:
    """(path, text) of everything the run wrote: cassettes and the ledger (not the test file)."""
    return [
        (str(path.relative_to(root)), path.read_text(errors="replace"))
        for path in sorted(root.rglob("*"))
        if path.is_file()
        and path.suffix != ".py"
        and "__pycache__" not in path.parts
        and ".pytest_cache" not in path.parts
    ]


def test_names_owners_and_the_ledger_hold_no_key_and_replay_finds_them(project: pytest.Pytester) -> None:
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=4)
    written = _written(project.path)
    assert any(name.startswith(".vcr_transport") for name, _ in written)  # the ledger is among them
    for name, text in written:
        for key in KEYS:
            assert key not in name and key[:16] not in name
            assert key not in text, name
    own = sorted(p.name for p in (project.path / "cassettes" / "test_keys").iterdir())
    assert len(own) == 2 and all(name.startswith(f"test_own_{MARK}") for name in own)  # two keys: two files
    shared = project.path / "cassettes" / "shared.jsonl"
    owners = {line["test"] for line in map(json.loads, shared.read_text().splitlines()) if line["type"] == "request"}
    assert len(owners) == 2 and all(f"test_shared[{MARK}" in owner for owner in owners)
    result = project.runpytest("--vcr-mode=replay")
    result.assert_outcomes(passed=4)
    assert not any(key in result.stdout.str() for key in KEYS)


def test_a_cassette_named_and_owned_by_the_raw_id_still_replays(project: pytest.Pytester) -> None:
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=4)
    folder = project.path / "cassettes" / "test_keys"
    for key in KEYS:  # as a version before named them: by the raw id
        test = f"test_keys.py::test_own[{key}]"
        (folder / f"{cassette_name(without_credentials(test).split('::')[1])}.jsonl").rename(
            folder / f"test_own_{key}.jsonl"
        )
    shared = project.path / "cassettes" / "shared.jsonl"
    text = shared.read_text()
    for key in KEYS:
        text = text.replace(
            without_credentials(f"test_keys.py::test_shared[{key}]"), f"test_keys.py::test_shared[{key}]"
        )
    shared.write_text(text)
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=4)  # each test its own calls, as before
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=4)  # re-recorded: the new names and owners
    assert not any(key in shared.read_text() for key in KEYS)
    assert sum(line.count('"type":"request"') for line in shared.read_text().splitlines()) == 2


def test_an_id_without_a_credential_is_kept_and_one_with_one_is_stable() -> None:
    assert without_credentials("tests/test_a.py::test_x[gpt-4o-mini-2024-07-18]") == (
        "tests/test_a.py::test_x[gpt-4o-mini-2024-07-18]"
    )
    first, second = (without_credentials(f"t.py::test_x[{key}]") for key in KEYS)
    assert first != second and first == without_credentials(f"t.py::test_x[{KEYS[0]}]")
    assert KEYS[0] not in first and first.startswith(f"t.py::test_x[{MARK}")
    assert without_credentials("tests/test_secrets.py::test_token") == "tests/test_secrets.py::test_token"
    joined = without_credentials(f"t.py::TestA::test_x[gpt-4o-{KEYS[0]}]")  # pytest joins parameters with -
    assert joined.startswith(f"t.py::TestA::test_x[gpt-4o-{MARK}") and KEYS[0] not in joined
    assert recorded_owner([f"t.py::test_x[{KEYS[0]}]", "t.py::other"], first) == f"t.py::test_x[{KEYS[0]}]"
    assert recorded_owner(["t.py::other"], first) == first
