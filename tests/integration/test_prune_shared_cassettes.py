"""``prune`` on shared cassettes, attacked: parametrized ids, classes and a renamed test whose name is a
prefix of another, two modules on one cassette, tests skipped by conftest hooks and fixtures, collection
errors, a run from another folder, a module-level ``pytestmark``, a test outside the test paths. Nothing of a
test that still exists is removed; a removed test's calls go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PRELUDE = """
import httpx2
import pytest

def answer(request):
    return httpx2.Response(200, json={"echo": request.read().decode()})

def send(*prompts):
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        return [client.post("https://api.example.test/v1/chat", json={"prompt": p}).json() for p in prompts]

SHARED = pytest.mark.vcr_transport(path="cassettes/shared.jsonl")
"""


def _prune(where: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    from vcr_transport._tools._cli import main

    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(where)
        code = main(["prune", *args])
    return code, capsys.readouterr().out


def _owners(path: Path) -> list[tuple[str, str]]:
    return [
        (line.get("test", ""), line["body"]["json"]["prompt"])
        for line in map(json.loads, path.read_text().splitlines())
        if line["type"] == "request"
    ]


def test_prune_parametrized_ids(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    body = (
        PRELUDE
        + """
@SHARED
@pytest.mark.parametrize("p", {params})
def test_p(p):
    assert len(send(p)) == 1
"""
    )
    params = ["x", "y::z", "a b", "[w]", "ü"]
    project.makepyfile(test_shared=body.replace("{params}", repr(params)))
    project.runpytest("--vcr-mode=record", "-p", "no:randomly").assert_outcomes(passed=5)
    cassette = project.path / "cassettes" / "shared.jsonl"
    assert len(_owners(cassette)) == 5
    project.makepyfile(test_shared=body.replace("{params}", repr(params[:-2])))
    project.runpytest("-p", "no:randomly").assert_outcomes(passed=3)
    code, out = _prune(project.path, capsys, "--yes")
    assert code == 0, out
    assert sorted(prompt for _, prompt in _owners(cassette)) == sorted(params[:-2]), out
    project.runpytest("--vcr-mode=replay", "-p", "no:randomly").assert_outcomes(passed=3)


def test_prune_test_class_and_prefix_rename(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    body = (
        PRELUDE
        + """
class TestChat:
    @SHARED
    def test_a(self):
        assert send("a")

    @SHARED
    def test_ab(self):
        assert send("ab")

@SHARED
def test_a():
    assert send("top")
"""
    )
    project.makepyfile(test_shared=body)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    cassette = project.path / "cassettes" / "shared.jsonl"
    # TestChat::test_ab is renamed test_a_b; TestChat::test_a renamed TestChat::test_
    renamed = body.replace("def test_ab(self)", "def test_a_b(self)").replace("def test_a(self)", "def test_(self)")
    project.makepyfile(test_shared=renamed)
    project.runpytest().assert_outcomes(passed=3)  # auto: the renamed tests record
    code, out = _prune(project.path, capsys, "--yes")
    assert code == 0, out
    owners = _owners(cassette)
    assert sorted(owners) == sorted(
        [
            ("test_shared.py::TestChat::test_", "a"),
            ("test_shared.py::TestChat::test_a_b", "ab"),
            ("test_shared.py::test_a", "top"),
        ]
    ), out
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=3)


def test_prune_two_modules_share_one_cassette(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    one = PRELUDE + '\n@SHARED\ndef test_one():\n    assert send("one")\n'
    two = (
        PRELUDE
        + '\n@SHARED\ndef test_two():\n    assert send("two")\n\n@SHARED\ndef test_gone():\n    assert send("gone")\n'
    )
    project.makepyfile(test_one=one, test_two=two)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    cassette = project.path / "cassettes" / "shared.jsonl"
    project.makepyfile(test_two=two.split("\n@SHARED\ndef test_gone")[0])
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=2)
    code, out = _prune(project.path, capsys, "--yes")
    assert code == 0, out
    assert sorted(_owners(cassette)) == [("test_one.py::test_one", "one"), ("test_two.py::test_two", "two")], out


def test_prune_conftest_skips_keep_their_calls(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    body = PRELUDE + "".join(f'\n@SHARED\ndef test_{n}():\n    assert send("{n}")\n' for n in "abcd")
    project.makepyfile(test_shared=body)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=4)
    cassette = project.path / "cassettes" / "shared.jsonl"
    before = cassette.read_bytes()
    project.makeconftest("""
import pytest

def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.name == "test_b":
            item.add_marker(pytest.mark.skip(reason="not today"))

def pytest_runtest_setup(item):
    if item.name == "test_c":
        pytest.skip("no network")

@pytest.fixture(autouse=True)
def _maybe(request):
    if request.node.name == "test_d":
        pytest.skip("fixture skip")
""")
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=1, skipped=3)
    code, out = _prune(project.path, capsys, "--yes")
    assert code == 0
    assert cassette.read_bytes() == before, out


def test_prune_run_with_continue_on_collection_errors(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    one = PRELUDE + '\n@SHARED\ndef test_one():\n    assert send("one")\n'
    two = PRELUDE + '\n@SHARED\ndef test_two():\n    assert send("two")\n'
    project.makepyfile(test_one=one, test_two=two)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=2)
    cassette = project.path / "cassettes" / "shared.jsonl"
    before = cassette.read_bytes()
    project.makepyfile(test_two=two + "\nimport not_installed_module\n")
    project.runpytest("--continue-on-collection-errors", "--vcr-mode=replay").assert_outcomes(passed=1, errors=1)
    _prune(project.path, capsys, "--yes")
    assert cassette.read_bytes() == before


@pytest.mark.slow
def test_prune_after_running_from_another_directory(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No pytest config file: the rootdir, hence the node ids, follow where pytest is started. Tests recorded
    from the project folder and one added from the tests folder; then the complete run from the tests folder."""
    import subprocess
    import sys

    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    tests = pytester.path / "tests"
    tests.mkdir()
    body = PRELUDE + "".join(f'\n@SHARED\ndef test_{n}():\n    assert send("{n}")\n' for n in "ab")
    (tests / "test_shared.py").write_text(body)

    def run(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", *args]
        return subprocess.run(command, cwd=where, capture_output=True, text=True)

    first = run(pytester.path, "--vcr-mode=record")
    assert first.returncode == 0, first.stdout
    (tests / "test_shared.py").write_text(body + '\n@SHARED\ndef test_c():\n    assert send("c")\n')
    second = run(tests)  # auto: test_c records
    assert second.returncode == 0, second.stdout
    cassette = tests / "cassettes" / "shared.jsonl"
    # Observation: from tests/ every node id changed (no rootdir config), so auto recorded a and b again.
    current = [("test_shared.py::test_a", "a"), ("test_shared.py::test_b", "b"), ("test_shared.py::test_c", "c")]
    assert all(owner in _owners(cassette) for owner in current)
    code, out = _prune(tests, capsys, "--yes")
    assert code == 0, out
    assert _owners(cassette) == current, out  # only the calls under the old ids went
    again = run(tests, "--vcr-mode=replay")
    assert again.returncode == 0, again.stdout


def test_prune_module_level_pytestmark(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    body = PRELUDE.replace("SHARED = ", "pytestmark = ") + "".join(
        f'\ndef test_{n}():\n    assert send("{n}")\n' for n in "abc"
    )
    project.makepyfile(test_shared=body)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    cassette = project.path / "cassettes" / "shared.jsonl"
    project.makepyfile(test_shared=body.replace('\ndef test_b():\n    assert send("b")\n', ""))
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=2)
    code, out = _prune(project.path, capsys, "--yes")
    assert code == 0, out
    assert [owner for owner, _ in _owners(cassette)] == ["test_shared.py::test_a", "test_shared.py::test_c"], out


def test_prune_keeps_calls_of_a_test_outside_testpaths(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """testpaths = ["tests"]; a slower folder (e2e/) is run on its own (pytest e2e) and its tests share the
    cassette through a path up one folder. The complete default run collects tests/ only: the e2e test
    still exists."""
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\ntestpaths = ['tests']\n")
    shared = PRELUDE.replace('path="cassettes/shared.jsonl"', 'path="../cassettes/shared.jsonl"')
    (pytester.path / "tests").mkdir()
    (pytester.path / "e2e").mkdir()
    (pytester.path / "tests" / "test_unit.py").write_text(
        shared + '\n@SHARED\ndef test_a():\n    assert send("a")\n\n@SHARED\ndef test_b():\n    assert send("b")\n'
    )
    (pytester.path / "e2e" / "test_e2e.py").write_text(shared + '\n@SHARED\ndef test_e():\n    assert send("e")\n')
    pytester.runpytest("--vcr-mode=record", "tests", "e2e").assert_outcomes(passed=3)
    cassette = pytester.path / "cassettes" / "shared.jsonl"
    before = _owners(cassette)
    assert ("e2e/test_e2e.py::test_e", "e") in before
    pytester.runpytest("--vcr-mode=replay").assert_outcomes(passed=2)  # the default run: testpaths
    code, out = _prune(pytester.path, capsys, "--yes")
    assert _owners(cassette) == before, out
