"""Cassette age: ``max_age`` (days) and ``on_expiry`` (warn, fail, record-on-miss), through the pytest plugin
(pytester, exact lines) and ``use_cassette`` outside pytest."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import pytest

TEST_FILE = """
import httpx2
import pytest

def answer(request):
    return httpx2.Response(200, json={"echo": request.read().decode()})

def send(prompt):
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        return client.post("https://api.example.test/v1/chat", json={"prompt": prompt}).json()

@pytest.mark.vcr_transport(MARKER)
def test_chat():
    send(PROMPT)

@pytest.mark.vcr_transport(path="cassettes/shared.jsonl")
def test_shared_one():
    send("shared")

@pytest.mark.vcr_transport(path="cassettes/shared.jsonl")
def test_shared_two():
    send("shared")
"""
CHAT = Path("cassettes") / "test_llm" / "test_chat.jsonl"


def write_tests(project: pytest.Pytester, prompt: str = "hi", marker: str = "") -> None:
    project.makepyfile(test_llm=TEST_FILE.replace("PROMPT", repr(prompt)).replace("MARKER", marker))


def age(cassette: Path, days: float) -> str:
    """Make a cassette's header say it was recorded ``days`` ago; its new ``created``."""
    lines = cassette.read_text().splitlines()
    header = json.loads(lines[0])
    created = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=days, hours=1)
    header["created"] = created.isoformat(timespec="seconds")
    cassette.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    return str(header["created"])


def recorded(project: pytest.Pytester, days: float = 45, **marker: str) -> str:
    write_tests(project, marker=", ".join(f"{k}={v!r}" for k, v in marker.items()))
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    age(project.path / "cassettes" / "shared.jsonl", days)
    return age(project.path / CHAT, days)


def ini(project: pytest.Pytester, **settings: str) -> None:
    lines = "".join(f"{name} = {value!r}\n" for name, value in settings.items())
    project.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\n" + lines)


def test_a_stale_cassette_is_named_once_in_the_summary_with_the_command_that_re_records_it(
    project: pytest.Pytester,
) -> None:
    recorded(project)
    ini(project, vcr_transport_max_age="30")
    result = project.runpytest("--vcr-mode=replay")
    result.assert_outcomes(passed=3)
    lines = result.stdout.lines
    start = lines.index("cassettes: 2 replayed")
    assert lines[start + 1 : start + 5] == [
        "2 stale (recorded more than max_age days ago), replayed all the same:",
        "  cassettes/shared.jsonl: 45 days old (max_age 30)",
        "  cassettes/test_llm/test_chat.jsonl: 45 days old (max_age 30)",
        "re-record them: pytest --vcr-mode=record test_llm.py::test_shared_one test_llm.py::test_chat",
    ]
    assert sum("shared.jsonl" in line for line in lines) == 1, "a cassette two tests replayed is named once"
    # Younger than max_age: nothing said.
    ini(project, vcr_transport_max_age="60")
    result = project.runpytest("--vcr-mode=replay")
    result.assert_outcomes(passed=3)
    assert "cassettes: 2 replayed" in result.stdout.lines
    assert not any("max_age" in line for line in result.stdout.lines)


def test_on_expiry_fail_is_a_short_failure_naming_the_cassette_its_age_and_the_fix(project: pytest.Pytester) -> None:
    created = recorded(project, max_age=30, on_expiry="fail")
    result = project.runpytest("--vcr-mode=replay")
    result.assert_outcomes(passed=2, failed=1)
    lines = result.stdout.lines
    first = lines.index(f"E   cassette {CHAT}: stale cassette, 45 days old (max_age 30 days; recorded {created})")
    assert lines[first + 1 : first + 3] == [
        "E   re-record it against the real API (or raise max_age):",
        'E       pytest --vcr-mode=record "test_llm.py::test_chat"',
    ]
    assert lines[first + 3].startswith("E   hidden: ")
    assert "cassettes: 1 replayed, 1 failed as stale (older than max_age)" in lines
    result.stdout.fnmatch_lines(["FAILED test_llm.py::test_chat - stale cassette, 45 days old: cassettes/test_l*"])


def test_on_expiry_record_on_miss_records_what_changed_except_under_ci(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded(project)
    project.makepyprojecttoml(
        "[tool.pytest.ini_options]\nfilterwarnings = ['error']\n\n"
        '[tool.vcr_transport]\nmax_age = 30\non_expiry = "record-on-miss"\n'
    )
    write_tests(project, prompt="changed")
    cassette = project.path / CHAT
    before = cassette.read_bytes()
    monkeypatch.setenv("CI", "1")
    result = project.runpytest("--vcr-mode=replay")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*field body.prompt: recorded 'hi', incoming 'changed'*"])
    assert cassette.read_bytes() == before, "under CI a stale cassette is never re-recorded"
    monkeypatch.delenv("CI")
    result = project.runpytest("--vcr-mode=replay")
    result.assert_outcomes(passed=3)
    lines = result.stdout.lines
    start = lines.index("cassettes: 1 replayed, 1 re-recorded")
    assert lines[start + 1 : start + 4] == [
        "1 stale (recorded more than max_age days ago), replayed all the same:",
        "  cassettes/shared.jsonl: 45 days old (max_age 30)",
        "re-record them: pytest --vcr-mode=record test_llm.py::test_shared_one",
    ]
    header = json.loads(cassette.read_text().splitlines()[0])
    assert datetime.datetime.fromisoformat(header["created"]) > datetime.datetime.now(
        datetime.UTC
    ) - datetime.timedelta(days=1)
    assert '"changed"' in cassette.read_text()


def test_a_wrong_max_age_is_refused_naming_where_it_came_from(project: pytest.Pytester) -> None:
    write_tests(project)
    ini(project, vcr_transport_max_age="soon")
    result = project.runpytest("--vcr-mode=replay", "-k", "test_chat")
    result.stdout.fnmatch_lines(["E   *UsageError: the ini vcr_transport_max_age must be a number of days, not 'soon'"])
    ini(project, vcr_transport_on_expiry="shout")
    result = project.runpytest("--vcr-mode=replay", "-k", "test_chat")
    result.stdout.fnmatch_lines(
        ["E   *UsageError: the ini vcr_transport_on_expiry must be one of warn, fail, record-on-miss, not 'shout'"]
    )


OUTSIDE_PYTEST = """
import warnings, httpx2, vcr_transport

def answer(request):
    return httpx2.Response(200, json={"ok": True})

def send():
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        client.post("https://api.example.test/v1/chat", json={"prompt": "hi"})

with vcr_transport.use_cassette("chat.jsonl", mode="record"):
    send()
"""
REPLAY_OLD = """
import warnings, httpx2, vcr_transport

def answer(request):
    raise AssertionError("replay never reaches the inner transport")

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with vcr_transport.use_cassette("chat.jsonl", mode="replay", max_age=30):
        with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
            client.post("https://api.example.test/v1/chat", json={"prompt": "hi"})
for warning in caught:
    print(type(warning.message).__name__, warning.filename.endswith("replay.py"), warning.message)
"""


def test_use_cassette_outside_pytest_warns_of_a_stale_cassette(tmp_path: Path) -> None:
    (tmp_path / "record.py").write_text(OUTSIDE_PYTEST)
    (tmp_path / "replay.py").write_text(REPLAY_OLD)
    subprocess.run([sys.executable, "record.py"], cwd=tmp_path, check=True)
    created = age(tmp_path / "chat.jsonl", 45)
    out = subprocess.run([sys.executable, "replay.py"], cwd=tmp_path, check=True, capture_output=True, text=True)
    assert out.stdout.splitlines() == [
        f"CassetteExpiredWarning True cassette chat.jsonl: stale cassette, 45 days old (max_age 30 days; recorded "
        f"{created}); re-record it against the real API (pass mode='record' (the argument wins over the rest)), "
        "or raise max_age"
    ]
