"""Several tests on one cassette path (``@pytest.mark.vcr_transport(path="cassettes/shared.jsonl")``), through
pytester: each test's calls are kept (in the order the run committed them), a re-record of one test replaces
only its own calls, each test replays only its own calls, under xdist too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

SHARED_TESTS = """
import httpx2
import pytest

def answer(request):
    return httpx2.Response(200, json={"echo": request.read().decode()})

def send(*prompts):
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        return [client.post("https://api.example.test/v1/chat", json={"prompt": p}).json() for p in prompts]

PROMPTS = {prompts}
SHARED = pytest.mark.vcr_transport(path="cassettes/shared.jsonl")

@SHARED
def test_a():
    assert len(send(*PROMPTS["a"])) == len(PROMPTS["a"])

@SHARED
def test_b():
    assert len(send(*PROMPTS["b"])) == len(PROMPTS["b"])

@SHARED
def test_c():
    assert len(send(*PROMPTS["c"])) == len(PROMPTS["c"])
"""

PROMPTS = {"a": ["a1", "a2"], "b": ["b1"], "c": ["c1", "c2"]}
LEAN = ("-p", "no:hypothesispytest", "-p", "no:cassetter")


def write_tests(pytester: pytest.Pytester, prompts: dict[str, list[str]]) -> None:
    pytester.makepyfile(test_shared=SHARED_TESTS.replace("{prompts}", repr(prompts)))


def _requests(path: Path) -> list[dict[str, Any]]:
    return [line for line in map(json.loads, path.read_text().splitlines()) if line["type"] == "request"]


def _owned(path: Path) -> list[tuple[int, str, str]]:
    """(call index, owner, prompt) of each request line, in file order."""
    return [(line["call_index"], line.get("test", ""), line["body"]["json"]["prompt"]) for line in _requests(path)]


def _lines_not_of(path: Path, owner: str) -> list[bytes]:
    """The lines (header left out) of the calls that ``owner`` did not make."""
    owners: dict[int, str] = {}
    found = []
    for line in path.read_bytes().splitlines()[1:]:
        obj = json.loads(line)
        if obj["type"] == "request":
            owners[obj["call_index"]] = obj.get("test", "")
        if owners[obj["call_index"]] != owner:
            found.append(line)
    return found


def _unnumbered(line: bytes) -> bytes:
    obj = json.loads(line)
    obj.pop("call_index", None)
    return json.dumps(obj).encode()


def test_two_tests_on_one_path_record_and_replay_and_the_hint_for_one_does_not_loop(project: pytest.Pytester) -> None:
    write_tests(project, PROMPTS)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    cassette = project.path / "cassettes" / "shared.jsonl"
    a, b, c = (f"test_shared.py::test_{name}" for name in "abc")
    assert _owned(cassette) == [(0, a, "a1"), (1, a, "a2"), (2, b, "b1"), (3, c, "c1"), (4, c, "c2")]
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=3)

    # test_b changes: its replay fails, naming the cheap fix, and following it fixes test_b alone.
    write_tests(project, {**PROMPTS, "b": ["b1", "b2"]})
    failed = project.runpytest("--vcr-mode=replay")
    failed.assert_outcomes(passed=2, failed=1)
    failed.stdout.fnmatch_lines(['*pytest --vcr-mode=record-on-miss "test_shared.py::test_b"'])
    others = _lines_not_of(cassette, b)
    project.runpytest("--vcr-mode=record-on-miss", "test_shared.py::test_b").assert_outcomes(passed=1)
    assert _owned(cassette) == [
        (0, a, "a1"),
        (1, a, "a2"),
        (2, b, "b1"),
        (3, b, "b2"),
        (4, c, "c1"),
        (5, c, "c2"),
    ]
    # The other tests' lines are as they were, but for the call numbers after test_b's new call.
    kept = _lines_not_of(cassette, b)
    assert [_unnumbered(line) for line in kept] == [_unnumbered(line) for line in others]
    assert kept[:6] == others[:6]  # test_a's two calls, before test_b's: byte for byte
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=3)

    # A re-record of one test (record) replaces its calls only, in their place.
    write_tests(project, {**PROMPTS, "b": ["b3"]})
    project.runpytest("--vcr-mode=record", "test_shared.py::test_b").assert_outcomes(passed=1)
    assert _owned(cassette) == [(0, a, "a1"), (1, a, "a2"), (2, b, "b3"), (3, c, "c1"), (4, c, "c2")]
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=3)


def test_a_test_replays_only_its_own_calls(project: pytest.Pytester) -> None:
    write_tests(project, PROMPTS)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    # One test alone replays: the others' calls are not its unplayed calls, and its order is its own.
    project.runpytest("--vcr-mode=replay", "test_shared.py::test_c").assert_outcomes(passed=1)
    # A test whose calls are fewer than recorded still fails on its own unplayed call, and only on that.
    write_tests(project, {**PROMPTS, "a": ["a1"]})
    result = project.runpytest("--vcr-mode=replay")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*1 recorded call(s) were never played from cassettes/shared.jsonl:*"])


@pytest.mark.slow
def test_xdist_workers_merge_into_one_shared_cassette(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    many = {name: [f"{name}{i}" for i in range(3)] for name in "abc"}
    write_tests(project, many)
    project.runpytest_subprocess(*LEAN, "-n", "2", "--vcr-mode=record").assert_outcomes(passed=3)
    cassette = project.path / "cassettes" / "shared.jsonl"
    owned = _owned(cassette)
    assert [index for index, _, _ in owned] == list(range(9))
    # Each test's calls together, in its own order; the tests in the order their workers committed them.
    owners = [owner for _, owner, _ in owned]
    assert sorted(set(owners)) == [f"test_shared.py::test_{name}" for name in "abc"]
    for owner in set(owners):
        spots = [i for i, o in enumerate(owners) if o == owner]
        assert spots == list(range(spots[0], spots[0] + 3))
        assert [owned[i][2] for i in spots] == many[owner[-1]]
    assert sorted(p.name for p in cassette.parent.iterdir()) == ["shared.jsonl"]
    project.runpytest_subprocess(*LEAN, "-n", "2", "--vcr-mode=replay").assert_outcomes(passed=3)


def test_auto_records_each_test_of_a_new_shared_cassette_then_replays_them(project: pytest.Pytester) -> None:
    write_tests(project, PROMPTS)
    first = project.runpytest()  # auto: the cassette exists for a test once it holds that test's calls
    first.assert_outcomes(passed=3)
    first.stdout.fnmatch_lines(["cassettes: 1 recorded*"])
    cassette = project.path / "cassettes" / "shared.jsonl"
    assert [owner[-1] for _, owner, _ in _owned(cassette)] == ["a", "a", "b", "c", "c"]
    before = cassette.read_bytes()
    second = project.runpytest()
    second.assert_outcomes(passed=3)
    second.stdout.fnmatch_lines(["cassettes: 1 replayed*"])
    assert cassette.read_bytes() == before
    # Re-recording one test that gets the same answers leaves the shared file as it was (a quiet re-record).
    third = project.runpytest("--vcr-mode=record", "test_shared.py::test_a")
    third.assert_outcomes(passed=1)
    third.stdout.fnmatch_lines(["cassettes: 1 recorded unchanged*"])
    assert cassette.read_bytes() == before


def test_a_run_of_one_test_by_keyword_still_records_it_as_shared(project: pytest.Pytester) -> None:
    write_tests(project, PROMPTS)
    project.runpytest("--vcr-mode=record", "-k", "test_b").assert_outcomes(passed=1, deselected=2)
    cassette = project.path / "cassettes" / "shared.jsonl"
    assert [owner for _, owner, _ in _owned(cassette)] == ["test_shared.py::test_b"]
    project.runpytest().assert_outcomes(passed=3)  # auto: a and c record beside b, b replays
    assert [owner[-1] for _, owner, _ in _owned(cassette)] == ["b", "a", "a", "c", "c"]


def test_the_views_name_the_test_that_recorded_each_call(project: pytest.Pytester) -> None:
    import subprocess
    import sys

    from vcr_transport._core.format._format import Cassette
    from vcr_transport._core.views._view import call_view
    from vcr_transport._tools._html import call_data

    write_tests(project, PROMPTS)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    cassette = project.path / "cassettes" / "shared.jsonl"

    def show(*options: str) -> str:
        command = [sys.executable, "-m", "vcr_transport", "show", *options, str(cassette)]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout

    owners = [f"test_shared.py::test_{name}" for name in "aabcc"]
    assert [line.split(": ", 1)[1] for line in show().splitlines() if "recorded by:" in line] == owners
    assert [call["test"] for call in json.loads(show("--json"))["calls"]] == owners
    assert [line.split(": ", 1)[1] for line in show("--textconv").splitlines() if line.startswith("  test:")] == owners
    calls = Cassette.parse(cassette.read_bytes(), str(cassette)).calls
    assert [call_data(call_view(call))["own"] for call in calls] == owners


def _prune(project: pytest.Pytester, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    from vcr_transport._tools._cli import main

    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.path)
        code = main(["prune", *args])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("xdist", [False, True], ids=["one-process", "xdist"])
@pytest.mark.slow
def test_prune_removes_the_calls_of_a_removed_test_from_a_shared_cassette(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str], xdist: bool
) -> None:
    write_tests(project, PROMPTS)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    cassette = project.path / "cassettes" / "shared.jsonl"
    a, b, c = (f"test_shared.py::test_{name}" for name in "abc")
    others = _lines_not_of(cassette, b)
    # test_b is removed; test_c is skipped this run, and still claims its calls.
    source = SHARED_TESTS.replace("{prompts}", repr(PROMPTS))
    source = source.replace('@SHARED\ndef test_b():\n    assert len(send(*PROMPTS["b"])) == len(PROMPTS["b"])\n', "")
    source = source.replace("@SHARED\ndef test_c", "@pytest.mark.skip\n@SHARED\ndef test_c")
    project.makepyfile(test_shared=source)
    if xdist:
        pytest.importorskip("xdist")
        run = project.runpytest_subprocess(*LEAN, "-p", "xdist", "-n", "2", "-p", "no:randomly")
    else:
        run = project.runpytest("-p", "no:randomly")
    run.assert_outcomes(passed=1, skipped=1)
    before = cassette.read_bytes()
    code, out = _prune(project, capsys)
    assert code == 0
    assert "would remove 1 call of test_shared.py::test_b from cassettes/shared.jsonl" in out
    assert cassette.read_bytes() == before  # a dry run
    code, out = _prune(project, capsys, "--json")
    assert json.loads(out)["calls_of_removed_tests"] == [{"path": "cassettes/shared.jsonl", "test": b, "calls": 1}]
    code, out = _prune(project, capsys, "--yes")
    assert code == 0 and "removed 1 call of test_shared.py::test_b" in out
    assert _owned(cassette) == [(0, a, "a1"), (1, a, "a2"), (2, c, "c1"), (3, c, "c2")]
    assert [_unnumbered(line) for line in _lines_not_of(cassette, b)] == [_unnumbered(line) for line in others]
    project.makepyfile(test_shared=source.replace("@pytest.mark.skip\n", ""))
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=2)
    code, out = _prune(project, capsys)
    assert "nothing to delete" in out


def test_prune_keeps_a_shared_cassettes_calls_after_a_partial_run(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tests(project, PROMPTS)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    cassette = project.path / "cassettes" / "shared.jsonl"
    before = cassette.read_bytes()
    project.runpytest("-k", "test_a").assert_outcomes(passed=1, deselected=2)
    code, out = _prune(project, capsys, "--yes")
    assert code == 2 and cassette.read_bytes() == before  # refused: the run left tests out


def test_prune_keeps_the_calls_of_a_test_the_run_did_not_collect_and_drops_a_deleted_files(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """``testpaths = ['tests']``; e2e/ is run on its own and shares the cassette. The default run collects
    tests/ only: its e2e test still exists, and keeps its calls. A test file that is deleted loses its calls."""
    project.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\ntestpaths = ['tests']\n")
    module = SHARED_TESTS.replace("{prompts}", repr(PROMPTS)).replace('"cassettes/', '"../cassettes/')
    for folder, name in (("tests", "test_unit"), ("tests", "test_gone"), ("e2e", "test_e2e")):
        (project.path / folder).mkdir(exist_ok=True)
        (project.path / folder / f"{name}.py").write_text(module)
    project.runpytest("--vcr-mode=record", "tests", "e2e").assert_outcomes(passed=9)
    cassette = project.path / "cassettes" / "shared.jsonl"
    (project.path / "tests" / "test_gone.py").unlink()
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=3)  # the default run: tests/ only
    code, out = _prune(project, capsys, "--yes")
    assert code == 0, out
    owners = {owner.split("::")[0] for _, owner, _ in _owned(cassette)}
    assert owners == {"tests/test_unit.py", "e2e/test_e2e.py"}, out
    assert "removed 2 calls of tests/test_gone.py::test_a" in out
    project.runpytest("--vcr-mode=replay", "tests", "e2e").assert_outcomes(passed=6)
