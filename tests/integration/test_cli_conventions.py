"""The conventions every ``vcr-transport`` command keeps: exit status 0/1/2, ``--json`` documents with a
``json_version`` and paths as the text gives them, problems as ``{path, line, field, message, fix}``, help with
a description, examples and the exit status, colour only when wanted, completion scripts generated from the
parser, and ``git-setup``'s driver working without an active virtualenv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import completions
import pytest
from test_cli import cli, make_project

VCRPY_YAML = """interactions:
- request:
    body: null
    headers: {}
    method: GET
    uri: https://api.example.test/v1/models
  response:
    body: {string: '{"data": []}'}
    headers: {Content-Type: [application/json]}
    status: {code: 200, message: OK}
version: 1
"""


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["show", "missing.jsonl"], 2),
        (["diff", "missing.jsonl", "tests/cassettes/openai.jsonl"], 2),
        (["diff", "tests/cassettes/openai.jsonl", "tests/cassettes/openai.jsonl"], 0),
        (["diff", "tests/cassettes/openai.jsonl", "tests/cassettes/openai_dogs.jsonl"], 1),
        (["show", "tests/cassettes/openai.jsonl", "--call", "9"], 2),
        (["verify", "tests/cassettes/openai.jsonl"], 0),
        (["verify", "tests/cassettes/truncated.jsonl"], 1),
        (["scan", "missing-folder"], 2),
        (["scan", "tests/cassettes/openai.jsonl"], 0),
        (["delete", "pyproject.toml"], 2),
        (["show", "tests/cassettes/openai.jsonl", "--json", "--html"], 2),
        (["list", "--no-such-flag"], 2),
    ],
)
def test_exit_status_is_0_same_1_differ_2_trouble(project: Path, args: list[str], code: int) -> None:
    result = cli(project, *args)
    assert result.returncode == code, result.stdout + result.stderr
    if code == 2:
        assert result.stderr, "trouble is said on stderr"


@pytest.mark.parametrize("command", ["status", "list", "show", "diff", "verify", "scan", "delete", "prune", "import",
                                     "drift", "serve", "git-setup", "completion"])  # fmt: skip
def test_each_command_has_a_description_examples_and_its_exit_status(tmp_path: Path, command: str) -> None:
    result = cli(tmp_path, command, "--help")
    assert result.returncode == 0
    text = result.stdout
    usage, _, rest = text.partition("\n\n")
    description = rest.split("\n\n", 1)[0]
    assert usage.startswith(f"usage: vcr-transport {command}") and len(description.split()) >= 8, text
    assert "\nexamples:\n  vcr-transport " in text and "\nexit status:\n  0  " in text and "\n  2  trouble" in text


def test_options_with_a_default_say_it(tmp_path: Path) -> None:
    assert "(default: 60)" in cli(tmp_path, "drift", "--help").stdout
    assert "(default: 127.0.0.1)" in cli(tmp_path, "serve", "--help").stdout
    assert "(default: every call)" in cli(tmp_path, "show", "--help").stdout


def test_every_json_document_is_versioned_with_relative_paths(project: Path) -> None:
    documents = {
        "status": ["status", "--json"],
        "list": ["list", "--json"],
        "show": ["show", "tests/cassettes/openai.jsonl", "--json"],
        "diff": ["diff", "tests/cassettes/openai.jsonl", "tests/cassettes/openai_dogs.jsonl", "--json"],
        "verify": ["verify", "tests/cassettes", "--json"],
        "scan": ["scan", "tests/cassettes", "--json"],
        "delete": ["delete", "tests/cassettes/openai.jsonl", "--json"],
        "prune": ["prune", "tests/cassettes", "--older-than", "10000", "--json"],
    }
    for name, args in documents.items():
        text = cli(project, *args).stdout
        document = json.loads(text)
        assert isinstance(document, dict) and document["json_version"] == 1, name
        assert str(project) not in text, f"{name}: paths relative, as in the text"
    delete = json.loads(cli(project, "delete", "tests/cassettes/openai.jsonl", "--json").stdout)
    assert delete == {
        "json_version": 1,
        "deleted": False,
        "cassettes": [{"path": "tests/cassettes/openai.jsonl", "why": "named"}],
        "skipped": [],
        "calls_of_removed_tests": [],
    }
    assert (project / "tests" / "cassettes" / "openai.jsonl").exists()


def test_verify_problems_are_path_line_field_message_fix(project: Path) -> None:
    document = json.loads(cli(project, "verify", "tests/cassettes", "--json").stdout)
    problems = {problem["path"]: problem for problem in document["problems"]}
    truncated = problems["tests/cassettes/truncated.jsonl"]
    assert set(truncated) == {"path", "line", "field", "message", "fix"}
    assert isinstance(truncated["line"], int) and "cut off" in truncated["message"] and truncated["fix"]
    wrong = problems["tests/cassettes/wrong_version.jsonl"]
    assert wrong["line"] == 1 and "format_version 7" in wrong["message"]


def test_import_reports_each_file_in_json(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(VCRPY_YAML)
    (tmp_path / "config.yaml").write_text("agents: [researcher]\n")
    result = cli(tmp_path, "import", "a.yaml", "config.yaml", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["json_version"] == 1 and document["converted"] == 1 and document["calls"] == 1
    outcomes = {entry["source"]: entry for entry in document["files"]}
    assert outcomes["a.yaml"] == {
        "source": "a.yaml",
        "outcome": "imported",
        "target": "a.jsonl",
        "calls": 1,
        "compat_only_clients": {},
        "unserved_clients": {},
    }
    assert outcomes["config.yaml"]["outcome"] == "skipped"


def test_colour_only_when_wanted(project: Path) -> None:
    args = ["diff", "tests/cassettes/openai.jsonl", "tests/cassettes/openai_dogs.jsonl"]
    assert "\x1b[" not in cli(project, *args).stdout  # not a terminal
    forced = cli(project, *args, env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[31m[-cats-]\x1b[0m\x1b[32m{+dogs+}\x1b[0m" in forced
    assert "\x1b[" not in cli(project, *args, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert "\x1b[" not in cli(project, *args, "--json", env={"FORCE_COLOR": "1"}).stdout


@pytest.mark.parametrize("shell", completions.SHELLS)
def test_the_shipped_completion_scripts_are_generated_from_the_parser(tmp_path: Path, shell: str) -> None:
    shipped = cli(tmp_path, "completion", shell).stdout
    assert shipped == completions.script(shell), "stale: run .venv/bin/python tests/completions.py"
    assert "drift" in shipped and "git-setup" in shipped


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_subcommands_and_options(tmp_path: Path) -> None:
    script = completions.FOLDER / "vcr-transport.bash"
    probe = (
        f"source {script}; COMP_WORDS=(vcr-transport dr); COMP_CWORD=1; _shtab_vcr_transport; echo ${{COMPREPLY[@]}};"
        " COMP_WORDS=(vcr-transport drift --up); COMP_CWORD=2; _shtab_vcr_transport; echo ${COMPREPLY[@]}"
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split("\n")[:2] == ["drift", "--upstream"]


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_git_setup_gives_a_driver_that_works_without_the_virtualenv(project: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests" / "cassettes").mkdir(parents=True)
    _git(repo, "init", "-q")
    dry = cli(repo, "git-setup", "--dry-run")
    assert dry.returncode == 0 and "would add" in dry.stdout and not (repo / ".gitattributes").exists()
    result = cli(repo, "git-setup")
    assert result.returncode == 0, result.stderr
    assert (repo / ".gitattributes").read_text() == "**/cassettes/**/*.jsonl diff=vcr\n"
    command = _git(repo, "config", "diff.vcr.textconv").strip()
    assert command == f"{Path(sys.executable).absolute()} -m vcr_transport show --textconv"
    assert "already has" in cli(repo, "git-setup").stdout  # run twice: the line is not added again
    assert (repo / ".gitattributes").read_text().count("diff=vcr") == 1
    cassette = repo / "tests" / "cassettes" / "chat.jsonl"
    shutil.copy(project / "tests" / "cassettes" / "openai.jsonl", cassette)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    shutil.copy(project / "tests" / "cassettes" / "openai_dogs.jsonl", cassette)
    # No virtualenv on PATH, none active: git runs the driver by its absolute path.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    diff = _git(repo, "diff", env=env | {k: v for k, v in os.environ.items() if k == "LANG"})
    assert "+  response.text: echo:dogs héllo ✓ 日本" in diff, diff


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cassettes of ``test_cli``'s project, recorded for this module."""
    return make_project(tmp_path_factory)
