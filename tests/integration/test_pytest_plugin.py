"""The pytest plugin, driven through pytester with exact output lines."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

TEST_FILE = """
import httpx2
import pytest

def answer(request):
    return httpx2.Response(200, json={"echo": request.read().decode()})

def send(*prompts):
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        return [client.post("https://api.example.test/v1/chat", json={"prompt": p}).json() for p in prompts]

PROMPTS = {prompts}

@pytest.mark.vcr_transport
def test_chat():
    assert len(send(*PROMPTS)) == len(PROMPTS)

@pytest.mark.vcr_transport
@pytest.mark.parametrize("model", ["gpt/4o mini", pytest.param("long", id="x" * 150)])
def test_param(model):
    send(model)
"""


def write_tests(pytester: pytest.Pytester, prompts: list[str]) -> None:
    pytester.makepyfile(test_llm=TEST_FILE.replace("{prompts}", repr(prompts)))


def test_records_then_replays_with_default_paths(project: pytest.Pytester) -> None:
    write_tests(project, ["hi", "bye"])
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    folder = project.path / "cassettes" / "test_llm"
    names = sorted(p.name for p in folder.iterdir())
    assert "test_chat.jsonl" in names and "test_param_gpt_4o_mini.jsonl" in names
    long_name = next(n for n in names if n.startswith("test_param_x"))
    assert len(long_name) <= 106 and long_name.endswith(".jsonl")
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=3)


FAILING_RECORDING = """
import httpx2
import pytest

@pytest.mark.vcr_transport{arguments}
def test_chat():
    with httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(200, json={{"n": 1}}))) as client:
        assert client.get("https://api.example.test/v1/models").json() == {{"n": 2}}
"""


def test_a_failed_tests_recording_is_not_saved_and_the_end_line_says_why(project: pytest.Pytester) -> None:
    project.makepyfile(test_llm=FAILING_RECORDING.format(arguments=""))
    result = project.runpytest("--vcr-mode=record")
    result.assert_outcomes(failed=1)
    assert "cassettes: 1 not saved as the test failed (keep_failures=True keeps them)" in result.stdout.lines
    assert not (project.path / "cassettes" / "test_llm" / "test_chat.jsonl").exists()
    project.makepyfile(test_llm=FAILING_RECORDING.format(arguments="(keep_failures=True)"))
    kept = project.runpytest("--vcr-mode=record")
    kept.assert_outcomes(failed=1)
    kept.stdout.fnmatch_lines(["cassettes: 1 recorded"])
    assert (project.path / "cassettes" / "test_llm" / "test_chat.jsonl").exists()


def test_a_mismatch_names_the_field(project: pytest.Pytester) -> None:
    write_tests(project, ["hi", "bye"])
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    write_tests(project, ["hi", "ciao"])
    result = project.runpytest("--vcr-mode=replay", "-k", "test_chat")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay mismatch at call 1, field body.prompt: recorded 'bye', incoming 'ciao'*",
            "*cassette: *test_chat.jsonl*",
        ]
    )


def test_a_missing_cassette_in_ci_says_how_to_record_it(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tests(project, ["hi"])
    monkeypatch.setenv("CI", "1")
    result = project.runpytest("-k", "test_chat")
    result.assert_outcomes(failed=1)  # at the test's first request, not an error at its setup
    result.stdout.fnmatch_lines(
        [
            "E   cassette cassettes/test_llm/test_chat.jsonl: no such cassette, and auto mode never records when CI "
            "is set",
            "E   record it where the real API is reachable, then commit it:",
            'E       pytest --vcr-mode=record-on-miss "test_llm.py::test_chat"',
        ]
    )


def test_unplayed_calls_fail_the_test_by_default_and_can_warn(project: pytest.Pytester) -> None:
    write_tests(project, ["hi", "bye"])
    project.runpytest("--vcr-mode=record", "-k", "test_chat").assert_outcomes(passed=1)
    write_tests(project, ["hi"])
    result = project.runpytest("--vcr-mode=replay", "-k", "test_chat")
    result.assert_outcomes(failed=1)  # a failure of the test, not an error at its teardown
    result.stdout.fnmatch_lines(
        [
            "E   1 recorded call(s) were never played from cassettes/test_llm/test_chat.jsonl:",
            "E     call 1: POST https://api.example.test/v1/chat",
        ]
    )
    result = project.runpytest("--vcr-mode=replay", "-k", "test_chat", "-o", "vcr_unplayed=ignore")
    result.assert_outcomes(passed=1)


def test_replay_blocks_the_network_but_not_loopback(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_net=textwrap.dedent(
            """
            import socket
            import pytest
            import vcr_transport

            @pytest.mark.vcr_transport(mode="replay", path="empty.jsonl")
            def test_outside():
                with pytest.raises(vcr_transport.VcrTransportError, match="'api.openai.com' for port 443 was blocked"):
                    socket.create_connection(("api.openai.com", 443), timeout=1)

            @pytest.mark.vcr_transport(mode="replay", path="empty.jsonl")
            def test_loopback():
                server = socket.socket()
                server.bind(("127.0.0.1", 0))
                server.listen()
                socket.create_connection(server.getsockname(), timeout=1).close()
                server.close()

            def test_unmarked_tests_are_untouched():
                assert socket.getaddrinfo.__module__ == "socket"
            """
        )
    )
    (project.path / "empty.jsonl").write_text(json.dumps({"type": "header", "format_version": 1}) + "\n")
    project.runpytest().assert_outcomes(passed=3)


def test_marker_arguments_are_checked(project: pytest.Pytester) -> None:
    project.makepyfile(test_bad="import pytest\n@pytest.mark.vcr_transport(mdoe='replay')\ndef test_x():\n    pass\n")
    result = project.runpytest()
    result.stdout.fnmatch_lines(["*@pytest.mark.vcr_transport got unknown argument(s) mdoe; valid:*"])


# Plugins a subprocess run doesn't need: each xdist worker would import them (seconds a run).
LEAN = ("-p", "no:hypothesispytest", "-p", "no:cassetter")


@pytest.mark.slow
def test_xdist_workers_write_their_own_cassettes(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_tests(project, ["a", "b", "c"])
    project.runpytest_subprocess(*LEAN, "-n", "2", "--vcr-mode=record").assert_outcomes(passed=3)
    for cassette in (project.path / "cassettes" / "test_llm").iterdir():
        lines = [json.loads(line) for line in cassette.read_text().splitlines()]
        assert lines[0]["type"] == "header" and lines[-1]["type"] == "call_end"
    project.runpytest_subprocess(*LEAN, "-n", "2", "--vcr-mode=replay").assert_outcomes(passed=3)
    ledger = json.loads((project.path / ".vcr_transport" / "ledger.json").read_text())
    assert ledger["complete"] is True, ledger
    # The state folder ignores itself, as .pytest_cache/ does.
    assert (project.path / ".vcr_transport" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (
        (project.path / ".vcr_transport" / "CACHEDIR.TAG")
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55\n")
    )
    assert len(ledger["cassettes"]) == 3, "the workers' cassettes reach the one ledger"


def test_loading_the_plugin_patches_nothing(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_plain=textwrap.dedent(
            """
            import httpx2, socket
            def test_plain():
                assert httpx2.Client._transport_for_url.__qualname__ == "Client._transport_for_url"
                assert socket.socket.connect.__qualname__ == "socket.connect"
            """
        )
    )
    project.runpytest().assert_outcomes(passed=1)
    assert not (project.path / "cassettes").exists() and not (project.path / ".vcr_transport").exists()


# What loading the plugin imports, when no test uses a cassette: what registers its options, ini settings and
# marker, and nothing of the machinery (issue 26: free when unused; benchmarks/plugin_start.py times it).
LOADED_WHEN_UNUSED = {
    "vcr_transport",
    "vcr_transport._registration",
    "vcr_transport._config",  # the project's settings, checked at the start (the exception tree only if wrong)
    "vcr_transport._run",  # the run every entry point reports to
    "vcr_transport._pytest_keys",
    "vcr_transport._pytest_run",  # the run's bookkeeping
    "vcr_transport._pytest_plugin",
}
MODULES_CONFTEST = """
import json, sys
import pytest

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    loaded = sorted(name for name in sys.modules if name.split(".")[0] == "vcr_transport")
    if config.pluginmanager.has_plugin("vcr_transport_cassettes"):
        loaded.append("the hooks around each test")
    with open("loaded.json", "w") as file:
        json.dump(loaded, file)
"""


@pytest.mark.slow
def test_a_run_that_uses_no_cassette_imports_none_of_the_machinery(project: pytest.Pytester) -> None:
    """Nor registers the hooks each test would run through (``_pytest_cassette.CassetteHooks``)."""
    project.makeconftest(MODULES_CONFTEST)
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    project.runpytest_subprocess(*LEAN, "-p", "no:randomly").assert_outcomes(passed=1)
    loaded = set(json.loads((project.path / "loaded.json").read_text()))
    assert loaded == LOADED_WHEN_UNUSED, sorted(loaded - LOADED_WHEN_UNUSED)
    # The first cassette brings the machinery in.
    project.makepyfile(test_plain="import pytest\n\n@pytest.mark.vcr_transport\ndef test_plain():\n    pass\n")
    project.runpytest_subprocess(*LEAN, "-p", "no:randomly").assert_outcomes(passed=1)
    loaded = set(json.loads((project.path / "loaded.json").read_text()))
    assert {"vcr_transport._core.engine._options", "vcr_transport._context", "vcr_transport._session"} <= loaded
    assert "the hooks around each test" in loaded


def test_help_and_option_checks_work_without_the_machinery(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*LEAN, "--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "record and replay HTTP traffic with vcr_transport:",
            "  --vcr-mode={off,record,replay,record-on-miss,auto,check}",
            "*cassette mode for this run: off, record, replay,*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["  vcr_unplayed (string):*", "*the option unplayed for every test: error, warn, ignore,*"]
    )
    result = project.runpytest_subprocess(*LEAN, "--vcr-mode=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*error: argument --vcr-mode: invalid choice: 'sometimes' (choose from*off*record*replay*auto*"]
    )


def test_a_test_failing_after_an_sdk_swallowed_the_mismatch_shows_it(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_swallow=textwrap.dedent(
            """
            import httpx2, pytest

            def ask(prompt):
                client = httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(200, text="ok")))
                try:
                    return client.post("https://api.example.test/v1", json={"p": prompt}).text
                except Exception:
                    return ""  # an SDK that turns every error into an empty answer

            @pytest.mark.vcr_transport(path="swallow.jsonl")
            def test_answer(request):
                prompt = request.config.getoption("--vcr-mode")
                assert ask(prompt) == "ok"
            """
        )
    )
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=1)
    result = project.runpytest("--vcr-mode=replay")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E   replay mismatch at call 0, field body.p: recorded 'record', incoming 'replay'",
            "E   (the test failed with AssertionError: assert '' == 'ok')",
        ]
    )
    verbose = project.runpytest("--vcr-mode=replay", "-vv")
    verbose.stdout.fnmatch_lines(
        [
            "*vcr_transport: replay mismatch*",
            "replay mismatch at call 0, field body.p: recorded 'record', incoming 'replay'",
        ]
    )


CAUGHT_FILE = """
import httpx2, pytest

def post(path, body):
    client = httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(200, text="ok")))
    return client.post("https://api.example.test" + path, json=body).text

def export_traces():
    try:  # a tracing exporter that swallows every error, as crewAI's does
        post("/v1/traces", {"spans": 1})
    except Exception:
        pass

@pytest.mark.vcr_transport(path="caught.jsonl"MARKER)
def test_answer(request):
    assert post("/v1/chat", {"p": "hi"}) == "ok"
    if request.config.getoption("--vcr-mode") == "replay":
        export_traces()  # a call the recording never had
"""


@pytest.mark.parametrize(
    ("marker", "ini", "outcome"),
    [
        ("", None, "failed"),  # the native default: raised again when the test ends
        ("", "ignore", "passed"),
        (", caught_mismatch='ignore'", None, "passed"),
        (", caught_mismatch='raise'", "ignore", "failed"),  # the marker's wins over the ini
    ],
)
def test_a_mismatch_the_code_caught_is_raised_at_teardown_unless_ignored(
    project: pytest.Pytester, marker: str, ini: str | None, outcome: str
) -> None:
    project.makepyfile(test_caught=CAUGHT_FILE.replace("MARKER", marker))
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=1)
    result = project.runpytest("--vcr-mode=replay", *(["-o", f"vcr_caught_mismatch={ini}"] if ini else []))
    if outcome == "passed":
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["cassettes: 1 with a replay mismatch"])
    else:
        result.assert_outcomes(failed=1)  # a failure of the test, not an error at its teardown
        result.stdout.fnmatch_lines(
            [
                "*_ test_answer _*",
                "E   replay mismatch at call 1, field call_index: recorded '1 call(s) (0..0)', "
                "incoming 'POST https://api.example.test/v1/traces'",
                "E   (the code under test caught it and went on; caught_mismatch='ignore' lets it)",
            ]
        )


def test_the_ini_caught_mismatch_wins_over_pyproject(project: pytest.Pytester) -> None:
    project.makepyfile(test_caught=CAUGHT_FILE.replace("MARKER", ""))
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=1)
    project.makepyprojecttoml(
        "[tool.pytest.ini_options]\nfilterwarnings = ['error']\n[tool.vcr_transport]\ncaught_mismatch = 'ignore'\n"
    )
    project.runpytest("--vcr-mode=replay").assert_outcomes(passed=1)
    result = project.runpytest("--vcr-mode=replay", "-o", "vcr_caught_mismatch=raise")
    result.assert_outcomes(failed=1)


def test_an_unknown_unplayed_is_refused_naming_where_it_came_from(project: pytest.Pytester) -> None:
    project.makepyfile(test_caught=CAUGHT_FILE.replace("MARKER", ""))
    result = project.runpytest("--vcr-mode=record", "-o", "vcr_unplayed=sometimes")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["E   *UsageError: the ini vcr_unplayed must be one of error, warn, ignore, partial, not 'sometimes'"]
    )


def test_an_unknown_caught_mismatch_is_refused(project: pytest.Pytester) -> None:
    project.makepyfile(test_caught=CAUGHT_FILE.replace("MARKER", ""))
    result = project.runpytest("--vcr-mode=record", "-o", "vcr_caught_mismatch=swallow")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["E   *UsageError: the ini vcr_caught_mismatch must be one of raise, ignore, not 'swallow'"]
    )
    project.makepyfile(test_caught=CAUGHT_FILE.replace("MARKER", ", caught_mismatch='never'"))
    result = project.runpytest("--vcr-mode=record")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["E   *UsageError: @pytest.mark.vcr_transport?caught_mismatch=...? must be one of raise, ignore, not 'never'"]
    )


ENTRY_POINTS_FILE = """
import httpx2
import vcr_transport

def answer(request):
    return httpx2.Response(200, json={"echo": request.read().decode()})

def send(transport, prompt):
    with httpx2.Client(transport=transport) as client:
        return client.post("https://api.example.test/v1/chat", json={"prompt": prompt}).json()

PROMPT = "{prompt}"

def test_use_cassette():
    with vcr_transport.use_cassette("cassettes/use_cassette.jsonl") as cassette:
        print("mode", cassette.mode)
        send(httpx2.MockTransport(answer), PROMPT)

def test_transport():
    transport = vcr_transport.transport("cassettes/transport.jsonl", inner=httpx2.MockTransport(answer))
    print("mode", transport.mode)
    send(transport, PROMPT)
"""


@pytest.mark.parametrize("entry_point", ["test_use_cassette", "test_transport"])
def test_the_vcr_mode_option_reaches_use_cassette_and_transport(
    project: pytest.Pytester, entry_point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--vcr-mode is the mode of the whole run, not only of marked tests (precedence level 2)."""
    project.makepyfile(test_entry=ENTRY_POINTS_FILE.replace("{prompt}", "hi"))
    project.runpytest("--vcr-mode=record", "-s", "-k", entry_point).stdout.fnmatch_lines(["*mode record*"])
    project.makepyfile(test_entry=ENTRY_POINTS_FILE.replace("{prompt}", "bye"))
    replayed = project.runpytest("--vcr-mode=replay", "-s", "-k", entry_point)
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(
        [
            "*mode replay*",
            "*replay mismatch at call 0, field body.prompt*",
            "*to re-record: run pytest with --vcr-mode=record; the mode record-on-miss instead of record keeps*",
        ]
    )
    rerecorded = project.runpytest("--vcr-mode=record-on-miss", "-s", "-k", entry_point)
    rerecorded.assert_outcomes(passed=1)
    # The environment is below the option: the option still wins.
    monkeypatch.setenv("VCR_TRANSPORT_MODE", "off")
    project.runpytest("--vcr-mode=replay", "-s", "-k", entry_point).assert_outcomes(passed=1)


MIXED_FILE = """
import httpx2
import pytest
import vcr_transport

def answer(request):
    return httpx2.Response(200, json={"echo": request.read().decode()})

def send(transport, prompt):
    with httpx2.Client(transport=transport) as client:
        return client.post("https://api.example.test/v1/chat", json={"prompt": prompt}).json()

@pytest.mark.vcr_transport(path="recorded/marked.jsonl")
def test_marked():
    send(httpx2.MockTransport(answer), "{prompt}")

def test_with_block():
    with vcr_transport.use_cassette("cassettes/block.jsonl"):
        send(httpx2.MockTransport(answer), "{prompt}")

def test_factory():
    send(vcr_transport.transport("cassettes/factory.jsonl", inner=httpx2.MockTransport(answer)), "{prompt}")
"""


def _mixed(project: pytest.Pytester, prompt: str) -> None:
    tests = project.path / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "test_mixed.py").write_text(MIXED_FILE.replace("{prompt}", prompt))


def test_prune_keeps_every_entry_points_cassettes_and_refuses_after_a_partial_run(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vcr_transport._tools._cli import main

    _mixed(project, "hi")
    # A run started in the test paths' folder is the whole suite (a start in any other subfolder is partial).
    project.makepyprojecttoml("[tool.pytest.ini_options]\nfilterwarnings = ['error']\ntestpaths = ['tests']\n")
    monkeypatch.chdir(project.path / "tests")  # use_cassette() and transport() paths follow the working folder
    project.runpytest("--rootdir", str(project.path), "--vcr-mode=record").assert_outcomes(passed=3)
    stale = project.path / "tests" / "cassettes" / "stale.jsonl"
    stale.write_bytes((project.path / "tests" / "cassettes" / "block.jsonl").read_bytes())
    monkeypatch.chdir(project.path)
    assert main(["prune"]) == 0
    # Only the cassette no test used is proposed: the marker's, use_cassette()'s and transport()'s are kept.
    assert main(["prune", "--yes"]) == 0
    assert not stale.exists()
    kept = {p.name for p in (project.path / "tests").rglob("*.jsonl")}
    assert kept == {"marked.jsonl", "block.jsonl", "factory.jsonl"}
    # A partial run: prune refuses and says why, --force overrides.
    monkeypatch.chdir(project.path / "tests")
    project.runpytest("--rootdir", str(project.path), "-k", "test_marked").assert_outcomes(passed=1)
    monkeypatch.chdir(project.path)
    assert main(["prune", "--yes"]) == 2
    assert {p.name for p in (project.path / "tests").rglob("*.jsonl")} == kept
    assert main(["prune", "--force"]) == 0


def test_prune_refusal_names_the_partial_run(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    from vcr_transport._tools._cli import main

    write_tests(project, ["hi"])
    project.runpytest("--vcr-mode=record", "-x", "-k", "test_chat").assert_outcomes(passed=1)
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.path)
        assert main(["prune"]) == 2
    error = capsys.readouterr().err
    assert "the last test run" in error and "was partial: 2 test(s) were deselected" in error and "--force" in error


def test_marker_paths_are_relative_to_the_test_file(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _mixed(project, "hi")
    project.runpytest("--vcr-mode=record", "-k", "test_marked").assert_outcomes(passed=1)
    assert (project.path / "tests" / "recorded" / "marked.jsonl").is_file()
    monkeypatch.chdir(project.path / "tests")  # cd tests && pytest: the same cassette replays
    project.runpytest("--rootdir", str(project.path), "--vcr-mode=replay", "-k", "test_marked").assert_outcomes(
        passed=1
    )
    assert not (project.path / "tests" / "tests").exists()


def test_end_of_run_summary_counts_what_became_of_the_cassettes(project: pytest.Pytester) -> None:
    write_tests(project, ["hi", "bye"])
    project.runpytest("--vcr-mode=record").stdout.fnmatch_lines(["*- vcr_transport -*", "cassettes: 3 recorded"])
    (project.path / "cassettes" / "test_llm" / "forgotten.jsonl").write_bytes(
        (project.path / "cassettes" / "test_llm" / "test_chat.jsonl").read_bytes()
    )
    project.runpytest("--vcr-mode=record", "-k", "test_chat").stdout.fnmatch_lines(
        ["cassettes: 1 recorded unchanged, never used: not counted in a partial run"]
    )
    write_tests(project, ["hi"])
    result = project.runpytest("--vcr-mode=replay", "-p", "no:randomly")
    result.stdout.fnmatch_lines(
        ["cassettes: 2 replayed, 1 left with unplayed calls, 1 never used ('vcr-transport prune' lists them)"]
    )


def test_a_mismatch_failure_is_short_and_its_summary_names_the_field(project: pytest.Pytester) -> None:
    write_tests(project, ["hi", "bye"])
    project.runpytest("--vcr-mode=record", "-k", "test_chat").assert_outcomes(passed=1)
    write_tests(project, ["hi", "ciao"])
    result = project.runpytest("--vcr-mode=replay", "-k", "test_chat", "-rf")
    result.assert_outcomes(failed=1)
    out = result.stdout.lines
    start = next(i for i, line in enumerate(out) if "_ test_chat _" in line)
    end = next(i for i, line in enumerate(out) if line.startswith("=") and i > start)
    failure = out[start + 1 : end]
    assert len(failure) <= 15, "\n".join(failure)
    first_error = next(line for line in failure if line.startswith("E "))
    assert first_error == "E   replay mismatch at call 1, field body.prompt: recorded 'bye', incoming 'ciao'"
    assert not any("_session.py" in line or "_replay.py" in line for line in failure)
    result.stdout.fnmatch_lines(["FAILED test_llm.py::test_chat - field body.prompt: recorded 'bye'*"])
    verbose = project.runpytest("--vcr-mode=replay", "-k", "test_chat", "-vv")
    assert any("_replay.py" in line for line in verbose.stdout.lines), "-vv keeps the whole traceback"


def test_a_marked_test_that_makes_no_call_writes_no_cassette(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_no_http=textwrap.dedent(
            """
            import pytest

            @pytest.mark.vcr_transport
            def test_no_http():
                assert 1 + 1 == 2
            """
        )
    )
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=1)
    assert not (project.path / "cassettes").exists() or not list((project.path / "cassettes").rglob("*.jsonl"))


def test_a_pinned_replay_with_no_cassette_names_the_fix_that_works(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_pinned=textwrap.dedent(
            """
            import httpx2, pytest

            @pytest.mark.vcr_transport(mode="replay")
            def test_pinned():
                with httpx2.Client() as client:
                    client.get("https://api.example.test/v1/models")
            """
        )
    )
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no such cassette*", "*fix: record it first: pass mode='record'*"])
    assert "VCR_TRANSPORT_MODE=record" not in result.stdout.str(), "the marker's mode wins over the variable"


def test_a_module_that_fails_to_collect_makes_the_run_partial(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from vcr_transport._tools._cli import main

    write_tests(project, ["hi"])
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=3)
    project.makepyfile(test_broken="def test_broken(:\n    pass\n")
    project.runpytest("--vcr-mode=replay", "--continue-on-collection-errors").assert_outcomes(passed=3, errors=1)
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.path)
        assert main(["prune"]) == 2
    assert "test_broken.py failed to collect" in capsys.readouterr().err


SESSION_CLIENT_CONFTEST = """
import json
import httpx2
import pytest

HEADERS = {headers}

def answer(request):
    if request.url.path.endswith("/embeddings"):
        body = {{"object": "list", "model": "e", "data": [{{"object": "embedding", "index": 0, "embedding": [0.5]}}],
                "usage": {{"prompt_tokens": 1, "total_tokens": 1}}}}
    else:
        prompt = json.loads(request.content)["messages"][-1]["content"]
        body = {{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
            {{"index": 0, "message": {{"role": "assistant", "content": "echo:" + prompt}}, "finish_reason": "stop"}}]}}
    return httpx2.Response(200, headers=HEADERS + [("content-type", "application/json")], json=body)

@pytest.fixture(scope="session")
def http_client():
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:  # one client for the whole run
        yield client
"""

SESSION_CLIENT_TESTS = """
import openai
import pytest

def client(http_client):
    return openai.OpenAI(api_key="sk-proj-" + "d4" * 20, http_client=http_client, max_retries=0)

@pytest.mark.vcr_transport
def test_chat(http_client):
    reply = client(http_client).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "echo:hi"

@pytest.mark.vcr_transport
def test_embed(http_client):
    assert client(http_client).embeddings.create(model="e", input="hi").data[0].embedding == [0.5]

@pytest.mark.vcr_transport
def test_chat_again(http_client):
    reply = client(http_client).chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}])
    assert reply.choices[0].message.content == "echo:again"
"""


@pytest.mark.slow
def test_a_session_scoped_client_replays_in_any_order_and_under_xdist(project: pytest.Pytester) -> None:
    """The docs' tip (one client for the run) with the cookies api.openai.com sets: whether a test's
    request carries the server's cookie depends on which test ran before it on that client."""
    from real_wire import real_headers

    project.makeconftest(SESSION_CLIENT_CONFTEST.format(headers=repr(real_headers("openai", 0))))
    project.makepyfile(test_session=SESSION_CLIENT_TESTS)
    project.runpytest("-p", "no:randomly", "--vcr-mode=record").assert_outcomes(passed=3)
    later = (project.path / "cassettes" / "test_session" / "test_chat_again.jsonl").read_text().splitlines()
    sent = [(name.lower(), value) for name, value in json.loads(later[1])["headers"]]
    assert ("cookie", "_cfuvid=[secret removed]") in sent, "recorded after another test set the cookie"
    backwards = ["test_session.py::test_chat_again", "test_session.py::test_embed", "test_session.py::test_chat"]
    project.runpytest("-p", "no:randomly", "--vcr-mode=replay", *backwards).assert_outcomes(passed=3)
    project.runpytest("--vcr-mode=replay", backwards[0]).assert_outcomes(passed=1)
    pytest.importorskip("xdist")
    project.runpytest_subprocess(*LEAN, "-n", "2", "--vcr-mode=replay").assert_outcomes(passed=3)


# --- the everyday loop, through each SDK against the loopback upstream (real vendor headers) ---------------

SDK_CLIENTS = {
    "openai": """
import openai

def ask(*prompts):
    client = openai.OpenAI(api_key="sk-test", base_url=URL + "/v1", max_retries=0)
    return [
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": p}])
        .choices[0].message.content
        for p in prompts
    ]
""",
    "anthropic": """
import anthropic

def ask(*prompts):
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=URL)
    return [
        client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=[{"role": "user", "content": p}])
        .content[0].text
        for p in prompts
    ]
""",
    "genai": """
from google import genai
from google.genai import types

def ask(*prompts):
    client = genai.Client(api_key="AIza-test", http_options=types.HttpOptions(base_url=URL))
    return [client.models.generate_content(model="gemini-2.5-flash", contents=p).text for p in prompts]
""",
}
SDK_TEST = """
import pytest

@pytest.mark.vcr_transport
def test_chat():
    assert all(reply.startswith("echo:") for reply in ask(*PROMPTS))
"""
PROMPT_FIELD = {
    "openai": "body.messages[0].content",
    "anthropic": "body.messages[0].content",
    "genai": "body.contents[0].parts[0].text",
}
SDK_MODEL = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "genai": "gemini-2.5-flash"}
SDK_NAMES = sorted(SDK_CLIENTS)


def write_sdk_tests(pytester: pytest.Pytester, sdk: str, url: str, prompts: list[str]) -> None:
    pytester.makepyfile(test_app=f"URL = {url!r}\nPROMPTS = {prompts!r}\n{SDK_CLIENTS[sdk]}{SDK_TEST}")


def failure_lines(result: pytest.RunResult, name: str = "test_chat") -> list[str]:
    """The lines of one test's report in the FAILURES section, between its title and the next section."""
    out = result.stdout.lines
    start = next(i for i, line in enumerate(out) if f"_ {name} _" in line)
    end = next(i for i, line in enumerate(out) if i > start and (line.startswith(("=", "-", "_")) or not line))
    return out[start + 1 : end]


@pytest.mark.parametrize("sdk", SDK_NAMES)
@pytest.mark.slow
def test_a_mismatch_is_short_for_every_sdk_and_names_the_cheapest_fix(
    project: pytest.Pytester, upstream: Any, sdk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the short summary line whole
    write_sdk_tests(project, sdk, upstream.url, ["hi there"])
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=1)
    upstream.stop()
    write_sdk_tests(project, sdk, upstream.url, ["hello there"])
    result = project.runpytest("--vcr-mode=replay", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    failure = failure_lines(result)
    assert len(failure) <= 15, "\n".join(failure)
    errors = [line for line in failure if line.startswith("E ")]
    headline = f"replay mismatch at call 0, field {PROMPT_FIELD[sdk]}: recorded 'hi there', incoming 'hello there'"
    assert errors[0] == f"E   {headline}"
    assert errors[1] == "E   cassette: cassettes/test_app/test_chat.jsonl"
    assert 'E       pytest --vcr-mode=record-on-miss "test_app.py::test_chat"' in errors
    assert "E   (--lf instead of the test id: every test that failed; --vcr-mode=record starts over)" in errors
    if sdk == "anthropic":  # it raises its own 400 error `from None`: named in one line
        said = [line for line in errors if line.startswith("E   (the test failed with anthropic.BadRequestError: ")]
        assert len(said) == 1 and len(said[0]) <= 100, errors
    assert not any("_base_client.py" in line or "_session.py" in line for line in failure)
    assert (
        f"FAILED test_app.py::test_chat - field {PROMPT_FIELD[sdk]}: recorded 'hi there', incoming 'hello there' "
        "(replay mismatch at call 0)" in result.stdout.lines
    )
    result.stdout.fnmatch_lines(["cassettes: 1 with a replay mismatch"])

    line = project.runpytest("--vcr-mode=replay", "--tb=line")
    line.assert_outcomes(failed=1)
    crash = [text for text in line.stdout.lines if text.startswith(str(project.path / "test_app.py:"))]
    assert [text.split(":", 2)[2] for text in crash] == [
        f" field {PROMPT_FIELD[sdk]}: recorded 'hi there', incoming 'hello there' (replay mismatch at call 0)"
    ]
    quiet = project.runpytest("--vcr-mode=replay", "--no-summary")
    quiet.assert_outcomes(failed=1)
    assert "cassettes: 1 with a replay mismatch" not in quiet.stdout.str(), "--no-summary drops our section"

    long = project.runpytest("--vcr-mode=replay", "--tb=long")
    long.assert_outcomes(failed=1)
    assert any("site-packages" in text for text in long.stdout.lines), "--tb=long keeps the SDK's frames"


@pytest.mark.parametrize("sdk", SDK_NAMES)
@pytest.mark.slow
def test_a_missing_cassette_and_a_configured_record_in_ci_are_short_failures(
    project: pytest.Pytester, upstream: Any, sdk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("CI", "1")
    write_sdk_tests(project, sdk, upstream.url, ["hi there"])
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)  # a failure at the test's first request, not an error at its setup
    failure = failure_lines(result)
    assert len(failure) <= 15, "\n".join(failure)
    problem = (
        "cassette cassettes/test_app/test_chat.jsonl: no such cassette, and auto mode never records when CI is set"
    )
    assert sdk_errors(failure) == [
        problem,
        "record it where the real API is reachable, then commit it:",
        '    pytest --vcr-mode=record-on-miss "test_app.py::test_chat"',
    ]
    assert f"FAILED test_app.py::test_chat - {problem}" in result.stdout.lines
    result.stdout.fnmatch_lines(["cassettes: 1 missing"])
    assert not upstream.received, "nothing reached the vendor"

    # A recording mode from the environment does not record under CI; the explicit option does.
    monkeypatch.setenv("VCR_TRANSPORT_MODE", "record")
    refused = project.runpytest("-p", "no:randomly")
    refused.assert_outcomes(failed=1)
    assert sdk_errors(failure_lines(refused)) == [
        "cassette cassettes/test_app/test_chat.jsonl: mode record from environment VCR_TRANSPORT_MODE never "
        "records when CI is set",
        "to record on purpose, choose it for the run (it wins over the configuration):",
        '    pytest --vcr-mode=record "test_app.py::test_chat"',
    ]
    assert not upstream.received
    project.runpytest("-p", "no:randomly", "--vcr-mode=record").assert_outcomes(passed=1)
    assert len(upstream.received) == 1, "the explicit --vcr-mode records, CI or not"


def sdk_errors(failure: list[str]) -> list[str]:
    """A report's E lines without the two that depend on the SDK: the exception it raised (anthropic's own
    400 error), and how many of its frames were hidden."""
    said = [line.removeprefix("E   ") for line in failure if line.startswith("E ")]
    return [line for line in said if not line.startswith(("(the test failed with ", "hidden: "))]


@pytest.mark.parametrize("sdk", SDK_NAMES)
def test_unplayed_calls_are_a_short_failure_told_apart_by_model_and_words(
    project: pytest.Pytester, upstream: Any, sdk: str
) -> None:
    prompts = ["hi there", "tell me about cats please, in one long sentence", "and dogs"]
    write_sdk_tests(project, sdk, upstream.url, prompts)
    project.runpytest("--vcr-mode=record").assert_outcomes(passed=1)
    upstream.stop()
    write_sdk_tests(project, sdk, upstream.url, prompts[:1])
    result = project.runpytest("--vcr-mode=replay", "-p", "no:randomly")
    result.assert_outcomes(failed=1)  # a failure, not an error at teardown
    failure = failure_lines(result)
    assert len(failure) <= 15, "\n".join(failure)
    model = SDK_MODEL[sdk]
    assert sdk_errors(failure) == [
        "2 recorded call(s) were never played from cassettes/test_app/test_chat.jsonl:",
        f'  call 1: {model} "tell me about cats please, in ..."',
        f'  call 2: {model} "and dogs"',
        "the test made fewer requests than were recorded; if that is intended, re-record it:",
        '    pytest --vcr-mode=record "test_app.py::test_chat"',
        "(or let it pass: @pytest.mark.vcr_transport(unplayed='ignore'))",
    ]
    assert not any("ERROR at teardown" in line for line in result.stdout.lines)


def test_an_unknown_pyproject_key_stops_the_run_naming_the_file_key_and_closest_name(project: pytest.Pytester) -> None:
    project.makepyprojecttoml("[tool.vcr_transport]\nredact_name = ['customer_secret']\n")
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: {project.path / 'pyproject.toml'}: ?tool.vcr_transport? has no setting redact_name; did you "
            "mean redact_names? valid: caught_mismatch, *"
        ]
    )


def test_the_state_folder_ignores_itself(project: pytest.Pytester) -> None:
    import shutil
    import subprocess

    write_tests(project, ["hi"])
    project.runpytest("--vcr-mode=record", "-k", "test_chat").assert_outcomes(passed=1)
    folder = project.path / ".vcr_transport"
    assert (folder / ".gitignore").read_text() == "# Created by vcr_transport automatically.\n*\n"
    assert (folder / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55\n")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(project.path)], check=True)
    ignored = subprocess.run(
        ["git", "-C", str(project.path), "check-ignore", ".vcr_transport/ledger.json"], capture_output=True, text=True
    )
    assert ignored.returncode == 0 and ignored.stdout.strip() == ".vcr_transport/ledger.json"


def test_a_mismatch_of_many_fields_stays_within_the_short_reports_lines() -> None:
    """The list of differing fields is cut first, with how many more; the notes and the fix stay whole."""
    from vcr_transport import ReplayMismatch
    from vcr_transport._pytest_reports import MAX_LINES, _fitted

    differences = [(f"body.k{i:02}", i, -i) for i in range(12)]
    mismatch = ReplayMismatch(
        0, "body.k00", 0, 0, cassette="c.jsonl", differences=differences, notes=["body.k01 looks like a note"]
    )
    lines = [line for line in str(mismatch).splitlines() if not line.startswith("to re-record")]
    lines += ["if the change is intended, re-record:", "    pytest --vcr-mode=record-on-miss t.py::x", "(--lf)"]
    fitted = _fitted(lines, len(differences))
    assert len(lines) > MAX_LINES - 2 >= len(fitted)
    assert fitted[:2] == lines[:2] and fitted[-5:] == lines[-5:]
    assert fitted[2:7] == [f"  body.k{i:02}: recorded {i}, incoming {-i}" for i in range(5)]
    assert fitted[7] == "  and 7 more (-vv shows them all, whole)"


FIXTURE_ORDER = """
import httpx2
import pytest


def answer(request):  # at the vendor's host, with its real headers (cookies with Domain, HSTS)
    return httpx2.Response(200, json={"echo": request.read().decode()}, headers=HEADERS)


def send(prompt):
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        return client.post("https://api.openai.com/v1/chat/completions", json={"prompt": prompt}).json()


@pytest.fixture(scope="module")
def warmed():
    return send("module")


@pytest.fixture
def greeted(warmed):
    return send("fixture")


def test_argument(greeted, vcr_cassette):
    send("body")
    assert len(vcr_cassette.requests) == 2


@pytest.mark.vcr_transport
def test_marked(greeted):
    send("body")


def test_asked_for_in_the_body(request):
    cassette = request.getfixturevalue("vcr_cassette")
    send("late")
    assert len(cassette.requests) == 1


def test_none(greeted):
    send("plain")
"""


def _prompts(path: Any) -> list[str]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line["body"]["json"]["prompt"] for line in lines if line["type"] == "request"]


def test_a_tests_cassette_opens_before_its_function_fixtures_whoever_asks_for_it(project: pytest.Pytester) -> None:
    """The marker or a ``vcr_cassette`` argument: the cassette opens after the wider fixtures and before the
    test's function-scoped ones, so a call a fixture of the test makes is the cassette's; asked for in the
    body, it opens there. A test that asks for none gets none."""
    from real_wire import real_headers

    project.makepyfile(test_order=FIXTURE_ORDER.replace("HEADERS", repr(real_headers("openai"))))
    project.runpytest("-p", "no:randomly", "--vcr-mode=record").assert_outcomes(passed=4)
    folder = project.path / "cassettes" / "test_order"
    assert _prompts(folder / "test_argument.jsonl") == ["fixture", "body"]
    assert _prompts(folder / "test_marked.jsonl") == ["fixture", "body"]
    assert _prompts(folder / "test_asked_for_in_the_body.jsonl") == ["late"]
    assert sorted(path.name for path in folder.iterdir()) == [
        "test_argument.jsonl", "test_asked_for_in_the_body.jsonl", "test_marked.jsonl"
    ]  # fmt: skip
    project.runpytest("-p", "no:randomly", "--vcr-mode=replay").assert_outcomes(passed=4)


# A runner that runs each test's protocol in a thread of its own (as pytest-parallel's --tests-per-worker does),
# the second test's started before the first's fixtures are set up, and held until the first has ended.
THREADED_RUNNER = """
import threading
import pytest

SECOND_STARTED = threading.Event()
FIRST_ENDED = threading.Event()


def run(item, ended=None):
    item.ihook.pytest_runtest_protocol(item=item, nextitem=None)
    if ended is not None:
        ended.set()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    first, second = session.items
    threads = [threading.Thread(target=run, args=(first, FIRST_ENDED)), threading.Thread(target=run, args=(second,))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item):
    if item.name == "test_two":
        SECOND_STARTED.set()
        assert FIRST_ENDED.wait(timeout=10)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if item.name == "test_one":
        assert SECOND_STARTED.wait(timeout=10)
"""
THREADED_TESTS = """
import pytest


@pytest.mark.vcr_transport
def test_one(vcr_cassette):
    assert vcr_cassette.path.name == "test_one.jsonl"


@pytest.mark.vcr_transport
def test_two(vcr_cassette):
    assert vcr_cassette.path.name == "test_two.jsonl"
"""


def test_tests_running_at_once_in_threads_each_open_their_own_cassette(project: pytest.Pytester) -> None:
    """The fixture takes its test from the protocol hook of its own thread: the second test has started (in
    another thread) when the first's fixtures run, and each still gets its own cassette."""
    project.makeconftest(THREADED_RUNNER)
    project.makepyfile(test_threads=THREADED_TESTS)
    result = project.runpytest_subprocess(*LEAN, "-p", "no:randomly", "--vcr-mode=replay")
    result.assert_outcomes(passed=2)


SETUP_IN_A_THREAD = """
import threading
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    for item in session.items:
        thread = threading.Thread(target=item.ihook.pytest_runtest_setup, kwargs={"item": item})
        thread.start()
        thread.join(timeout=30)
    return True
"""


def test_a_fixture_set_up_outside_the_protocol_hook_says_so(project: pytest.Pytester) -> None:
    """A plugin that sets a test up in another thread than its protocol hook's: the cassette fixture can't tell
    which test it serves, and says so rather than opening another test's cassette."""
    project.makeconftest(SETUP_IN_A_THREAD)
    project.makepyfile(test_threads=THREADED_TESTS.split("@pytest.mark.vcr_transport\ndef test_two")[0])
    result = project.runpytest_subprocess(*LEAN, "-p", "no:randomly", "--vcr-mode=replay")
    result.stderr.fnmatch_lines(["*cassette fixture ran outside pytest's pytest_runtest_protocol hook*"])
