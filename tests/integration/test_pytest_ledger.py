"""The usage ledger and ``prune``: a run is complete only if it collected the whole suite, in one process and
under pytest-xdist (where the controller, which writes the ledger, decides from what its workers saw)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from upstream import Upstream
from vendors import OPENAI_KEY

import vcr_transport

PYPROJECT = """[tool.pytest.ini_options]
filterwarnings = ['error']
testpaths = ['tests']
markers = ['slow: a slow test']
"""
MARKED = "import pytest\n\n@pytest.mark.vcr_transport\ndef test_{name}():\n    pass\n"
# Plugins a subprocess run doesn't need: each xdist worker would import them (seconds a run).
LEAN = ("-p", "no:hypothesispytest", "-p", "no:cassetter", "-p", "no:randomly")


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """tests/test_a.py (test_one, test_two, the second marked slow), tests/test_left.py, tests/sub/test_sub.py,
    each test claiming a cassette, and a stale cassette no test names."""
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyprojecttoml(PYPROJECT)
    tests = pytester.path / "tests"
    (tests / "sub").mkdir(parents=True)
    (tests / "test_a.py").write_text(
        MARKED.format(name="one") + "\n\n@pytest.mark.slow\n" + MARKED.format(name="two").split("\n", 2)[2]
    )
    (tests / "test_left.py").write_text(MARKED.format(name="left"))
    (tests / "sub" / "test_sub.py").write_text(MARKED.format(name="sub"))
    (tests / "cassettes").mkdir()
    (tests / "cassettes" / "stale.jsonl").write_text(
        '{"type": "header", "format_version": 1, "created": "2026-01-01T00:00:00+00:00"}\n'
    )
    return pytester


def ledger(project: pytest.Pytester) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((project.path / ".vcr_transport" / "ledger.json").read_text())
    return document


def prune(project: pytest.Pytester, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from vcr_transport._tools._cli import main

    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.path)
        code = main(["prune", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _ignore_in_conftest(project: pytest.Pytester) -> None:
    (project.path / "tests" / "conftest.py").write_text('collect_ignore = ["test_left.py"]\n')


def _ignore_glob_in_conftest(project: pytest.Pytester) -> None:
    (project.path / "tests" / "conftest.py").write_text('collect_ignore_glob = ["test_le*.py"]\n')


def _optional_sdk(project: pytest.Pytester) -> None:
    (project.path / "tests" / "test_optional.py").write_text(
        'import pytest\n\npytest.importorskip("vcr_no_such_sdk")\n\n' + MARKED.format(name="optional")
    )


def _in_subfolder(project: pytest.Pytester) -> None:
    os.chdir(project.path / "tests" / "sub")


def _failed_last_time(project: pytest.Pytester) -> None:
    failing = project.path / "tests" / "test_flaky.py"
    failing.write_text("def test_flaky():\n    assert False\n")
    project.runpytest_subprocess(*LEAN).assert_outcomes(passed=4, failed=1)
    failing.write_text("def test_flaky():\n    pass\n")


# Each way a run leaves part of the suite out: (how the suite is set up, the arguments, why the ledger says
# the run was partial).
def _nothing(project: pytest.Pytester) -> None:
    """Nothing to prepare: the arguments leave part of the suite out."""


PARTIAL_RUNS = {
    "importorskip": (
        _optional_sdk,
        [],
        "tests/test_optional.py was skipped at collection "
        "(could not import 'vcr_no_such_sdk': No module named 'vcr_no_such_sdk')",
    ),
    "collect_ignore": (
        _ignore_in_conftest,
        [],
        "tests/test_left.py was left out (collect_ignore in tests/conftest.py)",
    ),
    "collect_ignore_glob": (
        _ignore_glob_in_conftest,
        [],
        "tests/test_left.py was left out (collect_ignore_glob in tests/conftest.py)",
    ),
    "ignore": (
        _nothing,
        ["--ignore=tests/test_left.py"],
        "tests/test_left.py was left out (--ignore=tests/test_left.py)",
    ),
    "ignore-glob": (
        _nothing,
        ["--ignore-glob=*/test_left.py"],
        "tests/test_left.py was left out (--ignore-glob=*/test_left.py)",
    ),
    "deselect": (
        _nothing,
        ["--deselect", "tests/test_a.py::test_one"],
        "1 test(s) were deselected (--deselect tests/test_a.py::test_one)",
    ),
    "-k": (_nothing, ["-k", "one or sub"], "2 test(s) were deselected (-k 'one or sub')"),
    "-m": (_nothing, ["-m", "not slow"], "1 test(s) were deselected (-m 'not slow')"),
    "lf": (_failed_last_time, ["--lf"], "--lf ran only the tests that failed last time"),
    "a subfolder": (_nothing, ["tests/sub"], "the run was given tests/sub, only part of the suite (tests)"),
    "a file": (_nothing, ["tests/test_a.py"], "the run was given tests/test_a.py, only part of the suite (tests)"),
    "a test id": (
        _nothing,
        ["tests/test_a.py::test_one"],
        "the run was given tests/test_a.py::test_one, one test of the suite",
    ),
    "a start in a subfolder": (
        _in_subfolder,
        [],
        "the run started in tests/sub with no test path given, so it collected only that folder of the suite (tests)",
    ),
}


@pytest.mark.parametrize("xdist", [False, True], ids=["one process", "xdist"])
@pytest.mark.parametrize("case", list(PARTIAL_RUNS))
@pytest.mark.slow
def test_prune_refuses_after_a_run_that_left_part_of_the_suite_out(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, case: str, xdist: bool
) -> None:
    prepare, arguments, why = PARTIAL_RUNS[case]
    monkeypatch.chdir(suite.path)
    if xdist:
        pytest.importorskip("xdist")
        arguments = [*LEAN, "-p", "xdist", "-n", "2", *arguments]
    prepare(suite)
    result = (suite.runpytest_subprocess if xdist else suite.runpytest)(*arguments)
    assert result.ret == 0, result.stdout.str()
    written = ledger(suite)
    assert written["complete"] is False
    assert written["why_incomplete"].split("; ")[0] == why, written
    assert written["command"].startswith("pytest ")
    code, out, err = prune(suite, capsys, "--yes")
    assert code == 2 and out == ""
    assert err.startswith(f"vcr-transport prune: the last test run ({written['command']}, started "), err
    assert f"was partial: {written['why_incomplete']}. Its unused cassettes may belong to tests it did not run" in err
    assert (suite.path / "tests" / "cassettes" / "stale.jsonl").exists()


@pytest.mark.parametrize("xdist", [False, True], ids=["one process", "xdist"])
@pytest.mark.slow
def test_a_complete_run_still_allows_prune(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, xdist: bool
) -> None:
    """What leaves no test of the suite out keeps the run complete: a conftest ignoring a file that holds no
    test, the test paths given by name, a marker expression that deselects nothing, a start in the rootdir."""
    monkeypatch.chdir(suite.path)
    (suite.path / "tests" / "setup.py").write_text("raise SystemExit('not a test module')\n")
    (suite.path / "tests" / "conftest.py").write_text('collect_ignore = ["setup.py"]\n')
    arguments = ["tests", "-m", "not nothing_is_marked_so", "-p", "no:randomly"]
    if xdist:
        pytest.importorskip("xdist")
        arguments = [*LEAN, "-p", "xdist", "-n", "2", *arguments]
    result = (suite.runpytest_subprocess if xdist else suite.runpytest)(*arguments)
    result.assert_outcomes(passed=4)
    written = ledger(suite)
    assert (written["complete"], written["why_incomplete"]) == (True, "")
    assert len(written["cassettes"]) == 4
    code, out, err = prune(suite, capsys)
    assert (code, err) == (0, "")
    assert "stale.jsonl" in out and "test_one" not in out
    code, out, err = prune(suite, capsys, "--yes")
    assert code == 0 and not (suite.path / "tests" / "cassettes" / "stale.jsonl").exists()


@pytest.mark.slow
def test_a_k_run_under_xdist_names_the_run_in_the_refusal(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case: a ``-k`` run under xdist (the workers deselect; the controller writes the ledger)."""
    pytest.importorskip("xdist")
    monkeypatch.chdir(suite.path)
    suite.runpytest_subprocess(*LEAN, "-p", "xdist", "-n", "2", "-k", "sub").assert_outcomes(passed=1)
    command = ledger(suite)["command"]
    assert command.startswith("pytest ") and command.endswith(" -p xdist -n 2 -k sub")
    code, _, err = prune(suite, capsys, "--yes")
    assert code == 2
    assert err.startswith(f"vcr-transport prune: the last test run ({command}, started ")
    assert "was partial: 3 test(s) were deselected (-k sub). " in err
    assert Path(suite.path / "tests" / "cassettes" / "stale.jsonl").exists()


@pytest.mark.slow
def test_a_worker_that_crashes_makes_the_run_partial_and_a_run_xdist_keeps_in_process_does_not(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The controller hears of each worker going down: one that dies mid-run (``os._exit``) leaves the run's
    ledger partial, naming it. With xdist loaded and ``-n 0`` the run stays in this process, and is complete."""
    pytest.importorskip("xdist")
    monkeypatch.chdir(suite.path)
    suite.runpytest_subprocess(*LEAN, "-p", "xdist", "-n", "0").assert_outcomes(passed=4)
    assert (ledger(suite)["complete"], ledger(suite)["why_incomplete"]) == (True, "")
    (suite.path / "tests" / "test_dies.py").write_text("import os\n\ndef test_dies():\n    os._exit(3)\n")
    result = suite.runpytest_subprocess(*LEAN, "-p", "xdist", "-n", "2", "--max-worker-restart", "0")
    assert result.ret != 0
    assert ledger(suite)["complete"] is False
    assert "crashed" in ledger(suite)["why_incomplete"], ledger(suite)["why_incomplete"]


def test_a_start_in_the_folder_that_holds_every_test_is_complete(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``testpaths``: the suite is wherever the test modules are. Started in the one folder that holds them
    all, the run is complete; a test module elsewhere under the rootdir makes it partial."""
    suite.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\nmarkers = ['slow: slow']\n")
    (suite.path / "docs").mkdir()
    (suite.path / "docs" / "conf.py").write_text("project = 'not a test module'\n")
    monkeypatch.chdir(suite.path / "tests")
    suite.runpytest().assert_outcomes(passed=4)
    assert (ledger(suite)["complete"], ledger(suite)["why_incomplete"]) == (True, "")
    (suite.path / "test_top.py").write_text(MARKED.format(name="top"))
    suite.runpytest().assert_outcomes(passed=4)
    assert ledger(suite)["why_incomplete"] == (
        "the run started in tests with no test path given, so it collected only that folder of the suite (.)"
    )


def test_prune_from_a_subfolder_reads_the_ledger_the_run_wrote_at_the_project_root(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project marked by ``.git`` and ``pytest.ini``, no pyproject.toml: the run writes its ledger at the
    rootdir, and ``prune`` started in a subfolder finds the same project (one finder, ``enclosing_project``)."""
    (suite.path / "pyproject.toml").unlink()
    (suite.path / ".git").mkdir()
    (suite.path / "pytest.ini").write_text("[pytest]\ntestpaths = tests\nmarkers = slow: a slow test\n")
    monkeypatch.chdir(suite.path)
    suite.runpytest("-p", "no:randomly").assert_outcomes(passed=4)
    assert ledger(suite)["complete"] is True
    capsys.readouterr()
    monkeypatch.chdir(suite.path / "tests" / "sub")
    from vcr_transport._tools._cli import main

    code = main(["prune"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "stale.jsonl" in out and "test_one" not in out


# --- a project the run can't write to -------------------------------------------------------------------------

RECORDED_TEST = """
import openai, pytest

@pytest.mark.vcr_transport(path="cassettes/chat.jsonl")
def test_chat():
    with openai.OpenAI(api_key={key!r}, base_url={url!r}, max_retries=0) as client:
        client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "hello"}}])
"""
# Inside a user and mount namespace, ``folder`` bound read-only over itself: writes there fail with EROFS for
# root too (permission bits would not stop root), then the command runs.
READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


def read_only_unavailable() -> str:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed (util-linux)"
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, text=True, check=False, timeout=60)
    return f"unshare -rm is refused here: {probe.stderr.strip()}" if probe.returncode else ""


@pytest.mark.parametrize("read_only", ["the project", ".vcr_transport"])
def test_replay_in_a_read_only_checkout_passes_with_one_line_about_the_ledger(
    read_only: str, pytester: pytest.Pytester, upstream: Upstream
) -> None:
    why = read_only_unavailable()
    if why:
        pytest.skip(f"no read-only bind mount: {why}")
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    pytester.makepyfile(test_chat=RECORDED_TEST.format(key=OPENAI_KEY, url=upstream.url + "/v1"))
    pytester.runpytest_subprocess("--vcr-mode=record", *LEAN).assert_outcomes(passed=1)
    state = pytester.path / ".vcr_transport"
    written = (state / "ledger.json").read_bytes()
    folder = pytester.path if read_only == "the project" else state
    environment = {**os.environ, "PYTHONPATH": str(Path(vcr_transport.__file__).parent.parent)}
    command = [sys.executable, "-m", "pytest", "--vcr-mode=replay", "-p", "no:cacheprovider", *LEAN]
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", READ_ONLY, str(folder), *command],
        cwd=pytester.path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    said = [line for line in done.stdout.splitlines() if line.startswith("vcr_transport: ")]
    assert said == [
        f"vcr_transport: the usage ledger was not written ({state / 'ledger.json'}: Read-only file system); "
        "prune needs a run that wrote it"
    ], done.stdout
    assert (state / "ledger.json").read_bytes() == written


def test_a_state_folder_linked_out_of_the_project_is_not_written_through(
    suite: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (suite.path / ".vcr_transport").symlink_to(outside, target_is_directory=True)
    result = suite.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=4)
    said = [line for line in result.outlines if line.startswith("vcr_transport: ")]
    assert len(said) == 1 and "leads out of the project" in said[0] and str(outside) in said[0], said
    assert list(outside.iterdir()) == []
