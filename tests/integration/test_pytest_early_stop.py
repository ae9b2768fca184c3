"""Intended early stops: a test that stops a stream on purpose says so (``early_stop_ok=True``, recorded on the
call's ``call_end``), or ``verify --allow-early-stop`` names the call; ``verify --strict`` passes on those and
still fails on an accidental early stop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

TEST_FILE = """
import httpx2
import pytest

def events():
    for n in range(5):
        yield ('data: {"n": %d}\\n\\n' % n).encode()

def answer(request):
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=events())

def first_event():
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        with client.stream("POST", "https://api.example.test/v1/chat", json={"stream": True}) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    return line  # the app has what it needs: it stops the stream here

@pytest.mark.vcr_transport(MARKER)
def test_stops_on_purpose():
    assert first_event() == 'data: {"n": 0}'

@pytest.mark.vcr_transport
def test_stops_by_accident():
    assert first_event() == 'data: {"n": 0}'
"""
FOLDER = Path("cassettes") / "test_stream"


def call_ends(cassette: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    return [line for line in lines if line["type"] == "call_end"]


def verify(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, list[str], list[str]]:
    from vcr_transport._tools._cli import main

    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.path)
        code = main(["verify", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def test_an_intended_early_stop_passes_verify_strict_and_an_accidental_one_fails_it(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    project.makepyfile(test_stream=TEST_FILE.replace("MARKER", "early_stop_ok=True"))
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=2)
    intended, accidental = (
        project.path / FOLDER / "test_stops_on_purpose.jsonl",
        FOLDER / "test_stops_by_accident.jsonl",
    )
    assert call_ends(intended) == [
        {"type": "call_end", "call_index": 0, "event_count": 1, "outcome": "closed_early", "early_stop": "intended"}
    ]
    assert call_ends(project.path / accidental) == [
        {"type": "call_end", "call_index": 0, "event_count": 1, "outcome": "closed_early"}
    ]
    # Both replay as recorded.
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=2)
    code, out, _ = verify(project, capsys, "--strict")
    assert code == 1
    assert out == [
        f"PROBLEM {accidental}: call 0 (POST https://api.example.test/v1/chat) ended closed_early",
        "2 cassettes checked, 1 with problems, format version 1",
    ]
    # Without --strict the accidental one is a note, the intended one not even that.
    code, out, _ = verify(project, capsys)
    assert code == 0
    assert not any("test_stops_on_purpose" in line for line in out), out
    # The accidental one let through by name (the cassette and its call), or the cassette by a glob.
    for allowed in (f"{accidental}:0", "cassettes/*/test_stops_by_*.jsonl"):
        code, out, _ = verify(project, capsys, "--strict", "--allow-early-stop", allowed)
        assert code == 0, out
        assert not any("closed_early" in line for line in out), out
    code, out, _ = verify(project, capsys, "--strict", "--allow-early-stop", f"{accidental}:1")
    assert code == 1, "another call of the cassette is not let through"
    code, _, err = verify(project, capsys, "--strict", "--allow-early-stop", "cassettes/test_strem/*.jsonl")
    assert code == 2
    assert err == [
        "vcr-transport verify: --allow-early-stop cassettes/test_strem/*.jsonl: "
        "names none of the 2 cassette(s) verified"
    ]


def test_a_re_record_without_the_intent_drops_it(project: pytest.Pytester) -> None:
    """The intent belongs to the recording: re-recorded by a test that no longer says so, the call is an
    accidental early stop again (the quiet re-record does not keep the old line)."""
    project.makepyfile(test_stream=TEST_FILE.replace("MARKER", "early_stop_ok=True"))
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=2)
    project.makepyfile(test_stream=TEST_FILE.replace("MARKER", ""))
    project.runpytest("--vcr-mode=record", "-k", "on_purpose").assert_outcomes(passed=1)
    assert call_ends(project.path / FOLDER / "test_stops_on_purpose.jsonl") == [
        {"type": "call_end", "call_index": 0, "event_count": 1, "outcome": "closed_early"}
    ]
