"""The documentation under docs/: its generated parts are current, its code blocks run, its cassette schema
holds for every cassette in the repository.

A code block's kind comes from a comment on the line before its fence (``tests/doc_blocks.py`` reads them):

- no comment, or ``<!-- doc-test: run -->``: a Python block is run. The Python blocks of a page run in order
  in one namespace, in a folder holding a copy of the repository's cassettes, offline, under the network
  guard;
- ``<!-- doc-test: pytest -->``: the block is a test file; pytest runs it, and every test passes;
- ``<!-- doc-test: tutorial -->``: the tutorial's test file, which ``test_the_tutorial`` walks through;
- ``<!-- doc-test: live -->``: it needs a live key or the network, ``<!-- doc-test: sketch -->``: it uses names
  the reader supplies; either is compiled, not run;
- ``<!-- doc-test: cassette -->``: a ``json`` block whose lines are a cassette; the strict parser reads it.

Besides, ``package/typecheck.py`` (a step of .ci/run) type-checks the Python blocks with mypy --strict and pyright;
``<!-- doc-test: KIND untyped -->`` keeps a block that shows an error on purpose out of it.

Blocks in other languages are checked by what they are: ``toml``, ``yaml``, ``ini`` and ``json`` parse,
``[tool.vcr_transport]`` tables pass the options' own checks, and every ``vcr-transport`` command line of a
``console`` block parses with the command's parser.
"""

from __future__ import annotations

import argparse
import configparser
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from doc_blocks import DOCS, KINDS, ROOT, Block, blocks
from doc_blocks import docs_gen as _gen

from vcr_transport import Options, RecordingNotSavedWarning
from vcr_transport._core.format import _format, _schema
from vcr_transport._guard import NetworkGuard
from vcr_transport._stand_in_keys import KEY_VARIABLES
from vcr_transport._tools._cli import build_parser

KEY_VARIABLE_NAMES = [name for variable in KEY_VARIABLES for name in variable.names]

# Cassette names the docs use, and the committed cassettes that stand in for them.
STAND_INS = {"chat.jsonl": "openai/constructor.jsonl", "gemini.jsonl": "genai/constructor.jsonl"}


PAGES = sorted(DOCS.rglob("*.md"))
BLOCKS = [block for page in [ROOT / "README.md", *PAGES] for block in blocks(page)]
PYTHON = [block for block in BLOCKS if block.lang == "python"]


def _ids(blocks: list[Block]) -> list[str]:
    return [block.where for block in blocks]


def test_the_docs_have_code_blocks_of_every_kind() -> None:
    assert {block.kind for block in BLOCKS} == set(KINDS)
    unknown = [block.where for block in BLOCKS if block.kind not in KINDS]
    assert not unknown


# --- generated parts ----------------------------------------------------------------------------------------


def test_the_generated_parts_are_what_the_code_gives() -> None:
    """Options, the CLI parser and the format's types give the committed pages; `python docs/_gen.py`
    rewrites them."""
    assert _gen().stale() == [], "run: .venv/bin/python docs/_gen.py"


def test_every_generated_block_is_in_a_page() -> None:
    gen = _gen()
    names = [name for page in PAGES for name in gen.generated_names(page.read_text("utf-8"))]
    assert sorted(names) == sorted(gen.GENERATORS)


def test_the_configuration_table_has_every_option() -> None:
    page = (DOCS / "reference" / "configuration.md").read_text("utf-8")
    for name in Options.names():
        assert f"| `{name}` |" in page, name


def test_the_cli_reference_has_every_command_and_flag() -> None:
    page = (DOCS / "reference" / "cli.md").read_text("utf-8")
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        assert f"### `{name}`" in page, name
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in page, (name, flag)


# --- the cassette schema ---------------------------------------------------------------------------------


def _cassettes() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.jsonl"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    return [ROOT / name for name in listed] if listed else sorted(ROOT.glob("cassettes/**/*.jsonl"))


def _validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((DOCS / "reference" / "cassette-schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_every_cassette_in_the_repository_validates_against_the_schema() -> None:
    validator = _validator()
    cassettes = _cassettes()
    assert len(cassettes) >= 10
    lines = 0
    for cassette in cassettes:
        for number, line in enumerate(cassette.read_text("utf-8").splitlines(), 1):
            errors = [error.message for error in validator.iter_errors(json.loads(line))]
            assert not errors, f"{cassette.relative_to(ROOT)}:{number}: {errors}"
            lines += 1
    assert lines > 50


def test_the_docs_example_cassette_validates_against_the_schema() -> None:
    validator = _validator()
    (example,) = [block for block in BLOCKS if block.kind == "cassette"]
    for line in example.code.splitlines():
        assert not list(validator.iter_errors(json.loads(line))), line


@pytest.mark.parametrize(
    "line",
    [
        {"type": "response", "call_index": 0, "status": True, "headers": []},
        {"type": "response", "call_index": 0, "status": 200, "headers": [], "extra": 1},
        {"type": "event", "call_index": -1, "event_index": 0, "text": "x"},
        {"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "finished"},
        {"type": "request", "call_index": 0, "method": "GET", "url": "http://a", "headers": [["a"]]},
        {"type": "video", "call_index": 0},
    ],
)
def test_the_schema_refuses_what_the_types_refuse(line: dict[str, Any]) -> None:
    assert list(_validator().iter_errors(line))
    with pytest.raises(Exception):  # noqa: B017 - the parser refuses it too (msgspec's own error)
        _schema.LINE_DECODER.decode(json.dumps(line))


# --- code blocks ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", PYTHON, ids=_ids(PYTHON))
def test_every_python_block_compiles(block: Block) -> None:
    compile(block.code, block.where, "exec")


def _sandbox(folder: Path) -> Path:
    shutil.copytree(ROOT / "cassettes", folder / "cassettes")
    for name, stand_in in STAND_INS.items():
        shutil.copy(ROOT / "cassettes" / stand_in, folder / "cassettes" / name)
    return folder


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder with the repository's cassettes, fake keys, the mode left to each block, and no network."""
    monkeypatch.chdir(_sandbox(tmp_path))
    for variable in ("VCR_TRANSPORT_MODE", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test-not-a-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-docs-test-not-a-key")
    monkeypatch.setenv("GOOGLE_API_KEY", "docs-test-not-a-key")
    with NetworkGuard(reason="a docs test"):
        yield tmp_path


RUN_PAGES = sorted({block.page for block in PYTHON if block.kind == "run"})


@pytest.mark.parametrize("page", RUN_PAGES, ids=[str(page.relative_to(DOCS)) for page in RUN_PAGES])
def test_the_python_blocks_of_a_page_run(page: Path, offline: Path, capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for block in (block for block in PYTHON if block.page == page and block.kind == "run"):
        try:
            exec(compile(block.code, block.where, "exec"), namespace)  # noqa: S102 - the docs' own code
        except Exception as error:
            raise AssertionError(f"{block.where}: the block raised {error!r}") from error
    with warnings.catch_warnings(record=True) as caught:  # what the page built is finished as it is let go
        warnings.simplefilter("always")
        namespace.clear()
    unsaved = [str(w.message) for w in caught if issubclass(w.category, RecordingNotSavedWarning)]
    assert len(unsaved) == len(caught), [str(w.message) for w in caught]
    assert all("no call went through the recording transport" in message for message in unsaved), unsaved


PYTEST_BLOCKS = [block for block in PYTHON if block.kind == "pytest"]


@pytest.mark.docs
def test_the_test_files_of_the_docs_pass(pytester: pytest.Pytester) -> None:
    """Every test file of the docs, in one pytest run (in replay, offline): each passes."""
    assert PYTEST_BLOCKS
    _sandbox(pytester.path)
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\n")
    files = {f"test_doc_{number}": block for number, block in enumerate(PYTEST_BLOCKS)}
    pytester.makepyfile(**{name: block.code for name, block in files.items()})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vcr-mode=replay", "-v")
    output = result.stdout.str()
    for name, block in files.items():
        assert re.search(rf"^{name}\.py::\S+ PASSED", output, re.M), (block.where, output)
        assert not re.search(rf"^{name}\.py::\S+ (FAILED|ERROR)", output, re.M), (block.where, output)
    outcomes = result.parseoutcomes()
    assert set(outcomes) <= {"passed", "warnings"}, output


def _local_vendor() -> ModuleType:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import local_vendor
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return local_vendor


def _tutorial_recorded(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, test_code: str) -> Path:
    """Step 2 of the tutorial: its test file recorded against a vendor-shaped server, which is then stopped;
    the key is gone from the environment afterwards (its base URL stays: the cassette's URL). The cassette."""
    tests = pytester.mkdir("tests")
    (tests / "test_chat.py").write_text(test_code)
    for variable in ("VCR_TRANSPORT_MODE", "CI", *KEY_VARIABLE_NAMES):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-tutorial-not-a-real-key-0000")
    with _local_vendor().running(port=0) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url + "/v1")
        recorded = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    monkeypatch.delenv("OPENAI_API_KEY")
    recorded.assert_outcomes(passed=1)
    assert "cassettes: 1 recorded" in recorded.stdout.str()
    return tests / "cassettes" / "test_chat" / "test_greeting.jsonl"


@pytest.mark.docs
def test_the_tutorial(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Record against a vendor-shaped server, replay with it stopped and no key at all, change the prompt, see
    the mismatch the page shows."""
    page = DOCS / "tutorial" / "index.md"
    (test_file,) = [block for block in blocks(page) if block.kind == "tutorial"]
    text = page.read_text("utf-8")
    cassette = _tutorial_recorded(pytester, monkeypatch, test_file.code)
    assert f"`{cassette.relative_to(pytester.path)}`" in text
    assert "sk-tutorial" not in cassette.read_text()

    assert "with no key at all" in text.split("## 3.", 1)[1]
    replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=1)
    assert "cassettes: 1 replayed" in replayed.stdout.str()

    (pytester.path / "tests" / "test_chat.py").write_text(
        test_file.code.replace('"Say hello"', '"Say hello in French"')
    )
    mismatched = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    mismatched.assert_outcomes(failed=1)
    shown = re.search(r"```text\n(.*?)```", text.split("## 4.", 1)[1], re.S)
    assert shown
    output = mismatched.stdout.str()
    for line in shown[1].splitlines():
        # The count of hidden frames follows the SDK's and our own code: any number stands for it.
        pattern = re.escape(line).replace("hidden:\\ 44", r"hidden:\ \d+")
        assert re.search(pattern, output), line


def _workflow_steps() -> list[str]:
    """The ``run:`` steps of the CI page's GitHub Actions job."""
    yaml = pytest.importorskip("yaml")
    (job,) = [block for block in blocks(DOCS / "how-to" / "ci.md") if block.lang == "yaml"]
    steps = yaml.safe_load(job.code)["jobs"]["test"]["steps"]
    return [step["run"] for step in steps if "run" in step]


def test_the_ci_pages_install_step_names_what_can_be_installed() -> None:
    """The install step (offline, it can't run): every requirement parses, and vcr_transport comes from this
    repository (the project's own URL), not from the package index, where it is not yet."""
    from packaging.requirements import Requirement

    install = shlex.split(_workflow_steps()[0])
    assert install[:4] == ["pip", "install", "-e", "."]
    requirements = {requirement.name: requirement for requirement in map(Requirement, install[4:])}
    repository = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    assert requirements["vcr_transport"].url == f"git+{repository}"
    assert {"pytest", "pytest-xdist"} <= set(requirements)


@pytest.mark.docs
def test_the_ci_pages_workflow_runs_after_the_install(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every step of the CI page's job after the install, run as written in a project holding the tutorial's
    recorded test, under CI, with no key in the environment (this checkout stands for the installed package)."""
    (test_file,) = [block for block in blocks(DOCS / "tutorial" / "index.md") if block.kind == "tutorial"]
    _tutorial_recorded(pytester, monkeypatch, test_file.code)
    monkeypatch.setenv("CI", "true")
    commands = {"vcr-transport": [sys.executable, "-m", "vcr_transport"], "pytest": [sys.executable, "-m", "pytest"]}
    for step in _workflow_steps()[1:]:
        program, *arguments = shlex.split(step)
        done = subprocess.run(
            [*commands[program], *arguments], cwd=pytester.path, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (step, done.stdout, done.stderr)
        if program == "pytest":
            assert "cassettes: 1 replayed" in done.stdout and "1 passed" in done.stdout, done.stdout


# --- blocks in other languages -----------------------------------------------------------------------------


def _settings_names() -> set[str]:
    from vcr_transport._core.engine._options import SETTINGS

    options = {name for name in Options.names() if Options.knob(name).pyproject}
    return options | {setting.name for setting in SETTINGS if setting.pyproject}


TOML = [block for block in BLOCKS if block.lang == "toml"]


def _ini_names() -> set[str]:
    from vcr_transport._registration import COMPAT_INI, INI_OPTIONS

    return {COMPAT_INI} | {ini for _, ini, *_ in INI_OPTIONS}


@pytest.mark.parametrize("block", TOML, ids=_ids(TOML))
def test_the_toml_blocks_are_valid_settings(block: Block) -> None:
    tool = tomllib.loads(block.code)["tool"]
    ini = tool.get("pytest", {}).get("ini_options", {})  # the plugin's ini settings, in pyproject.toml
    assert set(ini) <= _ini_names() and (ini or "vcr_transport" in tool), block.where
    settings = tool.get("vcr_transport", {})
    assert set(settings) <= _settings_names(), block.where
    options = {name: value for name, value in settings.items() if name not in ("mode", "cassette_dir")}
    Options().with_settings(options, where=block.where)


OTHER = [block for block in BLOCKS if block.lang in ("yaml", "ini", "json")]


@pytest.mark.parametrize("block", OTHER, ids=_ids(OTHER))
def test_the_yaml_ini_and_json_blocks_parse(block: Block) -> None:
    if block.lang == "yaml":
        yaml = pytest.importorskip("yaml")
        assert yaml.safe_load(block.code), block.where
    elif block.lang == "ini":
        configparser.ConfigParser().read_string(block.code)
    elif block.kind == "cassette":
        data = block.code.encode()
        assert list(_format.problems(block.where, [data])) == []
    else:
        try:
            json.loads(block.code)
        except json.JSONDecodeError:
            for line in block.code.splitlines():
                json.loads(line)


def _command_lines() -> Iterator[tuple[str, list[str]]]:
    """Every ``vcr-transport`` command of a shell block: (where, its arguments)."""
    for block in BLOCKS:
        if block.lang not in ("console", "bash", "sh", "shell"):
            continue
        lines = block.code.replace("\\\n", " ").splitlines()
        for line in lines:
            if block.lang == "console" and not line.startswith("$ "):
                continue
            lexer = shlex.shlex(line.removeprefix("$ "), posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            command: list[str] = []
            for word in [*lexer, ";"]:
                if word not in ("&&", "||", ";", "|", ">", ">>"):
                    command.append(word)
                    continue
                while command and re.match(r"^[A-Z_]+=", command[0]):
                    command.pop(0)
                if command and command[0] == "vcr-transport":
                    yield f"{block.where}: {shlex.join(command)}", command[1:]
                command = []


COMMANDS = list(_command_lines())


def test_the_docs_show_commands() -> None:
    assert len(COMMANDS) >= 8


@pytest.mark.parametrize("arguments", [arguments for _, arguments in COMMANDS], ids=[where for where, _ in COMMANDS])
def test_every_command_line_in_the_docs_parses(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        build_parser().parse_args(arguments)
    except SystemExit as stop:
        raise AssertionError(f"vcr-transport {' '.join(arguments)}: {capsys.readouterr().err}") from stop


def test_the_docs_sandbox_stands_in_for_every_cassette_the_python_blocks_replay() -> None:
    named = {name for block in PYTHON for name in re.findall(r'"cassettes/([\w/.-]+\.jsonl)"', block.code)}
    missing = {name for name in named if not (ROOT / "cassettes" / name).exists() and name not in STAND_INS}
    # Cassettes the blocks only record into (or that a marker replays into nothing) need no stand-in.
    assert missing <= {"run.jsonl", "agent.jsonl", "shared.jsonl", "x.jsonl", "mcp_tools.jsonl", "gemini_live.jsonl"}, (
        missing
    )


def test_no_block_needs_a_key_from_the_environment() -> None:
    assert all("os.environ[" not in block.code for block in PYTHON)
