"""The vcr-transport command, run in-process (``main(argv)``) on cassettes recorded from the real SDKs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from helpers import recording
from upstream import Reply, Upstream
from vendors import SDKS, VENDOR_ROUTES

import vcr_transport
from vcr_transport._config import MODES
from vcr_transport._core.rules import _known
from vcr_transport._tools._cli import main

OPENAI = next(s for s in SDKS if s.name == "openai" and s.library is httpx2 and s.side == "sync")
ANTHROPIC = next(s for s in SDKS if s.name == "anthropic" and s.side == "async")


def cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``vcr-transport ARGS`` run in this process, in ``cwd``, with ``env`` added to an environment that has
    no VCR_TRANSPORT_MODE or CI; what it printed and its exit code."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        for name in ("VCR_TRANSPORT_MODE", "CI"):
            patch.delenv(name, raising=False)
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = main(list(args))
            except SystemExit as exit:  # argparse's --help and usage errors
                code = exit.code if isinstance(exit.code, int) else 2
    return subprocess.CompletedProcess(["vcr-transport", *args], code, stdout.getvalue(), stderr.getvalue())


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory)


def make_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with cassettes recorded from openai and anthropic, plus a truncated and a wrong-version one
    (each test module that uses it makes its own, with its own ``project`` fixture)."""
    root = tmp_path_factory.mktemp("project")
    (root / "pyproject.toml").write_text('[project]\nname = "demo"  # keep me\n\n[tool.ruff]\nline-length = 99\n')
    folder = root / "tests" / "cassettes"
    server = Upstream()
    for prefix, reply in VENDOR_ROUTES.values():
        server.routes[prefix] = reply
    server.routes["/v1/zipped"] = lambda r: Reply(
        200, [("content-type", "application/json")], [b'{"zipped": "yes"}'], gzip=True
    )
    server.start()
    try:
        OPENAI.run(
            recording(httpx2, False, folder / "openai.jsonl"),
            server.url,
            [("chat", ["hi"]), ("stream", ["hi", "echo:hi", "cats"])],
        )
        OPENAI.run(
            recording(httpx2, False, folder / "openai_dogs.jsonl"),
            server.url,
            [("chat", ["hi"]), ("stream", ["hi", "echo:hi", "dogs"])],
        )
        ANTHROPIC.run(recording(httpx2, True, folder / "anthropic.jsonl"), server.url, [("stream", ["hello"])])
        # The caller stops after the first delta: the one call ends closed_early.
        OPENAI.run(recording(httpx2, False, folder / "openai_early.jsonl"), server.url, [("first", ["hi"])])
        with httpx2.Client(
            transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), folder / "zipped.jsonl")
        ) as client:
            client.get(server.url + "/v1/zipped")
    finally:
        server.stop()
    good = (folder / "openai.jsonl").read_bytes()
    (folder / "truncated.jsonl").write_bytes(good[: len(good) - 40])
    (folder / "wrong_version.jsonl").write_bytes(good.replace(b'"format_version":1', b'"format_version":7', 1))
    return root


def test_status_shows_mode_source_and_counts_even_with_broken_cassettes(project: Path) -> None:
    result = cli(project, "status")
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == "mode: auto  (from default)"
    assert f"cassette folders: {project / 'tests' / 'cassettes'}" in result.stdout
    assert "cassettes: 7 (7 calls), 2 unreadable: run 'vcr-transport verify'" in result.stdout
    assert cli(project, "status", env={"VCR_TRANSPORT_MODE": "replay"}).stdout.startswith(
        "mode: replay  (from environment VCR_TRANSPORT_MODE)"
    )
    assert json.loads(cli(project, "status", "--json").stdout)["broken"] == 2


@pytest.mark.parametrize("mode", ["record", "replay", "off", "auto", "record-on-miss"])
def test_config_set_mode_keeps_the_rest_of_pyproject(project: Path, mode: str) -> None:
    before = (project / "pyproject.toml").read_text()
    result = cli(project, "config", "set", "mode", mode)
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.splitlines()[0] == f'mode = "{mode}" saved in {project / "pyproject.toml"} [tool.vcr_transport]'
    )
    after = (project / "pyproject.toml").read_text()
    assert 'name = "demo"  # keep me' in after and "line-length = 99" in after
    assert after.count("[tool.vcr_transport]") == 1 and after.count("mode = ") == 1
    assert cli(project, "config", "get", "mode").stdout == f'mode = "{mode}"\n'
    assert (
        cli(project, "status").stdout.splitlines()[0]
        == f"mode: {mode}  (from {project / 'pyproject.toml'} [tool.vcr_transport])"
    )
    assert cli(project, "config", "unset", "mode").returncode == 0
    assert (project / "pyproject.toml").read_text() == before, "the emptied table goes; the rest is as it was"


def test_config_edits_a_dotted_key_pyproject_and_keeps_inline_comments(project: Path) -> None:
    pyproject = project / "pyproject.toml"
    before = pyproject.read_text()
    pyproject.write_text('[project]\nname = "demo"\n\n[tool]\nvcr_transport.mode = "record"  # why: see #12\n')
    assert cli(project, "config", "set", "mode", "replay").returncode == 0
    assert (
        pyproject.read_text() == '[project]\nname = "demo"\n\n[tool]\nvcr_transport.mode = "replay"  # why: see #12\n'
    )
    assert cli(project, "config", "set", "redact_names", '["customer_secret"]').returncode == 0
    assert 'redact_names = ["customer_secret"]' in pyproject.read_text()
    assert cli(project, "status").returncode == 0, "the edited file still reads"
    pyproject.write_text(before)


def test_config_refuses_unknown_keys_and_wrong_values_and_old_mode_commands_are_gone(project: Path) -> None:
    pyproject = project / "pyproject.toml"
    before = pyproject.read_text()
    result = cli(project, "config", "set", "redact_name", '["x"]')
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"vcr-transport config: {pyproject}: [tool.vcr_transport] has no setting redact_name; did you mean "
        "redact_names? valid: "
    )
    assert cli(project, "config", "set", "mode", "recrod").stderr == (
        "vcr-transport config: unknown vcr_transport mode 'recrod' (from config set mode); valid modes: off, "
        "record, replay, record-on-miss, auto, check\n"
    )
    assert pyproject.read_text() == before
    assert cli(project, "record").returncode == 2, "the old top-level mode commands are removed"


@pytest.mark.parametrize(
    ("rest_before", "rest_after", "left"),
    [  # the blank line before a last table goes with it: set put it there
        ('[project]\nname = "demo"\n\n', "", '[project]\nname = "demo"\n'),
        (
            '[project]\nname = "demo"\n\n',
            "\n[tool.ruff]\nline-length = 99  # why\n",
            '[project]\nname = "demo"\n\n[tool.ruff]\nline-length = 99  # why\n',
        ),
        ("", "", ""),
    ],
    ids=["last-table", "between-tables", "only-table"],
)
def test_unset_of_the_last_key_removes_the_table_and_keeps_the_file_byte_for_byte(
    tmp_path: Path, rest_before: str, rest_after: str, left: str
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f'{rest_before}[tool.vcr_transport]\nmode = "replay"\n{rest_after}')
    result = cli(tmp_path, "config", "unset", "mode")
    assert result.stdout == f"mode removed from {pyproject} [tool.vcr_transport]\n", result.stderr
    assert pyproject.read_text() == left
    assert cli(tmp_path, "config", "get").stdout.startswith(f"nothing set in {pyproject} [tool.vcr_transport]")


def test_set_then_unset_gives_the_file_back_and_a_table_with_a_comment_stays(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    before = '[project]\nname = "demo"  # keep me\n\n[tool.ruff]\nline-length = 99\n'
    pyproject.write_text(before)
    assert cli(tmp_path, "config", "set", "redact_names", '["x"]').returncode == 0
    assert cli(tmp_path, "config", "unset", "redact_names").returncode == 0
    assert pyproject.read_text() == before
    pyproject.write_text('[tool.vcr_transport]\n# mode = "record"  when the API changes\nmode = "replay"\n')
    assert cli(tmp_path, "config", "unset", "mode").returncode == 0
    assert pyproject.read_text() == '[tool.vcr_transport]\n# mode = "record"  when the API changes\n'


def test_config_alone_lists_the_settings_and_says_when_none_is_set(tmp_path: Path) -> None:
    result = cli(tmp_path, "config")
    assert (result.returncode, result.stdout) == (
        0,
        f"nothing set: no pyproject.toml in {tmp_path.resolve()} or above; e.g. vcr-transport config set mode "
        "replay creates it\n",
    )
    assert not (tmp_path / "pyproject.toml").exists(), "reading creates nothing"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    assert cli(tmp_path, "config", "get").stdout == (
        f"nothing set in {tmp_path.resolve() / 'pyproject.toml'} [tool.vcr_transport]; e.g. vcr-transport config "
        "set mode replay\n"
    )
    assert cli(tmp_path, "config", "set", "mode", "replay").returncode == 0
    assert cli(tmp_path, "config", "set", "cassette_dir", "tests/tapes").returncode == 0
    listing = 'cassette_dir = "tests/tapes"\nmode = "replay"\n'
    assert cli(tmp_path, "config").stdout == cli(tmp_path, "config", "get").stdout == listing
    unknown = cli(tmp_path, "config", "mode")
    assert unknown.returncode == 2 and "invalid choice: 'mode' (choose from 'get', 'set', 'unset')" in unknown.stderr


def test_an_unknown_key_in_pyproject_is_an_error_wherever_the_file_is_read(project: Path) -> None:
    pyproject = project / "pyproject.toml"
    before = pyproject.read_text()
    pyproject.write_text(before + '\n[tool.vcr_transport]\nredact_name = ["customer_secret"]\n')
    result = cli(project, "status")
    pyproject.write_text(before)
    assert result.returncode == 2
    assert result.stderr == (
        f"vcr-transport status: {pyproject}: [tool.vcr_transport] has no setting redact_name; did you mean "
        "redact_names? valid: caught_mismatch, match_on, ignore_headers, compare_headers, ignore_fields, "
        "normalize_patterns, passthrough, ignore_hosts, passthrough_replay, parse_cache, redact_names, "
        "redact_patterns, mode, max_age, on_expiry, block_network, allowed_hosts, cassette_dir, drift_hosts\n"
    )


def test_list_gives_one_line_per_cassette(project: Path) -> None:
    result = cli(project, "list")
    assert result.returncode == 0
    lines = {line.split()[0]: line for line in result.stdout.splitlines()}
    openai_line = lines["tests/cassettes/openai.jsonl"]
    assert " v1  2 calls " in openai_line and "all complete" in openai_line and "127.0.0.1:" in openai_line
    assert "incomplete calls [0]" in lines["tests/cassettes/openai_early.jsonl"]
    assert (
        "v1  1 call " in lines["tests/cassettes/anthropic.jsonl"]
        and "all complete" in lines["tests/cassettes/anthropic.jsonl"]
    )
    assert "UNREADABLE: cassette" in lines["tests/cassettes/truncated.jsonl"]
    assert "format_version 7 is not supported" in lines["tests/cassettes/wrong_version.jsonl"]
    listed = json.loads(cli(project, "list", "--json").stdout)
    assert listed["json_version"] == 1
    rows = listed["cassettes"]
    assert all(not row["path"].startswith("/") for row in rows), "paths relative, as in the text"
    assert {row["path"].rsplit("/", 1)[1]: row.get("calls") for row in rows}["openai.jsonl"] == 2


def test_show_renders_calls_streams_and_gzip(project: Path) -> None:
    result = cli(project, "show", "tests/cassettes/openai.jsonl")
    out = result.stdout
    assert result.returncode == 0
    assert "call 0: POST http://127.0.0.1:" in out and "/v1/chat/completions" in out
    assert '          "content": "hi"\n' in out, "the request body is indented JSON"
    assert "call 1: POST" in out and "[INCOMPLETE" not in out, "openai's sync stream read to [DONE] is complete"
    early = cli(project, "show", "tests/cassettes/openai_early.jsonl").stdout
    assert "call 0: POST" in early and "[INCOMPLETE: closed_early]" in early
    assert "  response: 200 HTTP/1.1" in out and "    content-type: text/event-stream" in out
    assert "  timing: " in out and " chunks, first at +" in out
    assert "    data: [DONE]" in out
    assert sum(1 for line in out.splitlines() if line.startswith('    data: {"id": "chatcmpl-1"')) == 5
    anthropic_out = cli(project, "show", "tests/cassettes/anthropic.jsonl").stdout
    assert '    event: message_stop | data: {"type": "message_stop"}' in anthropic_out
    zipped = cli(project, "show", "tests/cassettes/zipped.jsonl").stdout
    assert '      "zipped": "yes"' in zipped and "content-encoding: gzip" in zipped
    one = json.loads(cli(project, "show", "tests/cassettes/openai.jsonl", "--call", "1", "--json").stdout)
    assert [c["call_index"] for c in one["calls"]] == [1] and one["calls"][0]["outcome"] == "complete"
    missing = cli(project, "show", "tests/cassettes/openai.jsonl", "--call", "9")
    assert missing.returncode == 2 and "there is no call 9" in missing.stderr
    broken = cli(project, "show", "tests/cassettes/truncated.jsonl")
    assert broken.returncode == 2 and "truncated.jsonl:" in broken.stderr and "cut off" in broken.stderr


def test_diff_names_fields_call_by_call(project: Path) -> None:
    result = cli(project, "diff", "tests/cassettes/openai.jsonl", "tests/cassettes/openai_dogs.jsonl")
    assert result.returncode == 1
    assert "call 1, field body.messages[2].content: 'cats' -> 'dogs'" in result.stdout
    # The stream is compared as its reassembled text: the changed word shows once, with its context.
    text_lines = [line for line in result.stdout.splitlines() if line.startswith("call 1, field response.text:")]
    assert text_lines == ["call 1, field response.text: echo:[-cats-]{+dogs+} héllo ✓ 日本"], result.stdout
    whole = json.loads(cli(project, "diff", "--json", *result.args[2:4]).stdout)
    assert whole["json_version"] == 1 and whole["same"] is False
    assert whole["a"] == {"path": "tests/cassettes/openai.jsonl", "calls": 2}
    assert {
        "a_call": 1,
        "b_call": 1,
        "field_path": "response.text",
        "kind": "changed",
        "a": "echo:cats héllo ✓ 日本",
        "b": "echo:dogs héllo ✓ 日本",
    } in whole["differences"]
    assert not any(line.startswith("call 0,") for line in result.stdout.splitlines())
    same = cli(project, "diff", "tests/cassettes/openai.jsonl", "tests/cassettes/openai.jsonl")
    assert same.returncode == 0 and same.stdout.startswith("0 differences")


def test_verify_checks_structure_for_ci(project: Path) -> None:
    good = cli(project, "verify", "tests/cassettes/openai.jsonl", "tests/cassettes/anthropic.jsonl")
    assert good.returncode == 0
    assert "note" not in good.stdout and "2 cassettes checked, 0 with problems" in good.stdout
    assert cli(project, "verify", "--strict", "tests/cassettes/openai.jsonl").returncode == 0
    early = cli(project, "verify", "tests/cassettes/openai_early.jsonl")
    assert early.returncode == 0 and "note    tests/cassettes/openai_early.jsonl: call 0 (POST" in early.stdout
    assert "ended closed_early" in early.stdout
    assert cli(project, "verify", "--strict", "tests/cassettes/openai_early.jsonl").returncode == 1
    folder = cli(project, "verify", "tests/cassettes")
    assert folder.returncode == 1
    lines = folder.stdout.splitlines()
    assert any(line.startswith("PROBLEM tests/cassettes/truncated.jsonl:") and "cut off" in line for line in lines)
    assert any(line.startswith("PROBLEM tests/cassettes/wrong_version.jsonl:1: format_version 7") for line in lines)
    assert "7 cassettes checked, 2 with problems, format version 1" in folder.stdout


def test_verify_lists_every_unreadable_line_and_orphans(project: Path, tmp_path: Path) -> None:
    lines = (project / "tests" / "cassettes" / "anthropic.jsonl").read_text().splitlines()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join([lines[0], "{oops", *lines[1:3], "not json either", *lines[3:]]) + "\n")
    result = cli(project, "verify", str(damaged))
    assert result.returncode == 1
    assert (
        f"PROBLEM {damaged}:2: unreadable line" in result.stdout
        and f"PROBLEM {damaged}:5: unreadable line" in result.stdout
    )
    orphan = tmp_path / "orphan.jsonl"
    orphan.write_text("\n".join([lines[0], *lines[1:], lines[2]]) + "\n")
    result = cli(project, "verify", str(orphan))
    assert result.returncode == 1 and f"PROBLEM {orphan}:{len(lines) + 1}:" in result.stdout


def test_scan_finds_every_shape_redaction_knows(project: Path, tmp_path: Path) -> None:
    leaky = tmp_path / "notes.txt"
    samples = {
        "bearer": "Authorization: Bearer abcdEFGH1234ijkl",
        "sk": "key=sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
        "anthropic": "x sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345 y",
        "google": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "query": "https://h.test/v1?api_key=s3cr3tvalue&x=1",
        "userinfo": "https://bob:hunter2@db.test/x",
        "json name": '{"client_secret": "very-secret-value"}',
    }
    leaky.write_text("\n".join(samples.values()) + "\nnothing here\n")
    result = cli(project, "scan", str(leaky))
    assert result.returncode == 1
    found_lines = [line for line in result.stdout.splitlines() if "secret-shaped value" in line]
    assert [int(line.split(":")[1]) for line in found_lines] == list(range(1, len(samples) + 1))
    assert "hunter2" not in result.stdout and "ABCDEFGHIJKLMNOP" not in result.stdout, "findings are masked"
    assert f"1 file scanned, {len(samples)} secrets found" in result.stdout
    clean = cli(project, "scan", "tests/cassettes/openai.jsonl", "tests/cassettes/anthropic.jsonl")
    assert clean.returncode == 0 and "2 files scanned, 0 secrets found" in clean.stdout


def test_scan_of_a_file_with_more_secrets_than_it_remembers_exits_1_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hostile file whose every line brings a new secret would make ``scan`` remember each: past the redactor's
    limit (made small here) the file is flagged at the line where the search stopped, with the fix, and the
    files after it are still scanned."""
    monkeypatch.setattr(_known, "MAX_LEARNED_CHARACTERS", 2_000)
    hostile = tmp_path / "a_hostile.jsonl"
    hostile.write_text("".join(json.dumps({"password": f"Pw{index:06d}q7Wx2Lm9"}) + "\n" for index in range(100)))
    later = tmp_path / "b_later.txt"
    later.write_text("nothing to see\n")
    assert main(["scan", str(hostile), str(later)]) == 1
    out = capsys.readouterr().out
    problem = next(line for line in out.splitlines() if "the rest of the file was not searched" in line)
    assert problem.startswith(f"PROBLEM {hostile}:") and "more distinct secrets to remember" in problem
    assert "fix: a file with this many distinct secrets is damaged or hostile: delete it" in out
    assert "2 files scanned" in out and "q7Wx2Lm9" not in out


def test_scan_reads_cassette_lines_by_name_and_base64(project: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "hand_edited.jsonl"
    chunk = __import__("base64").b64encode(b'\xff{"note": "Bearer leakedTOKEN12345"}').decode()
    cassette.write_text(
        json.dumps({"type": "header", "format_version": 1})
        + "\n"
        + json.dumps(
            {
                "type": "request",
                "call_index": 0,
                "method": "GET",
                "url": "https://a.test/",
                "headers": [["X-Api-Key", "plain-secret-value"]],
                "body": None,
            }
        )
        + "\n"
        + json.dumps({"type": "response", "call_index": 0, "status": 200, "headers": [], "http_version": "HTTP/1.1"})
        + "\n"
        + json.dumps({"type": "event", "call_index": 0, "event_index": 0, "t": 0, "base64": chunk})
        + "\n"
    )
    result = cli(project, "scan", str(cassette))
    assert result.returncode == 1
    assert (
        f"{cassette}:2: secret-shaped value plai" in result.stdout
        and f"{cassette}:4: secret-shaped value leak" in result.stdout
    )


def test_delete_and_prune_are_dry_runs_unless_yes(project: Path, tmp_path: Path) -> None:
    root = tmp_path / "p"
    folder = root / "cassettes"
    folder.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    source = project / "tests" / "cassettes" / "anthropic.jsonl"
    for name in ("used", "unused", "old"):
        (folder / f"{name}.jsonl").write_bytes(source.read_bytes())
    dry = cli(root, "delete", "cassettes/old.jsonl")
    assert (
        "would delete cassettes/old.jsonl" in dry.stdout
        and "add --yes" in dry.stdout
        and (folder / "old.jsonl").exists()
    )
    no_ledger = cli(root, "prune")
    assert no_ledger.returncode == 2 and "no usage ledger" in no_ledger.stderr
    from vcr_transport._ledger import new_ledger, write_ledger

    ledger = new_ledger("a-run")
    ledger.complete = True
    ledger.cassettes = {folder / "used.jsonl", folder / "old.jsonl"}
    write_ledger(root, ledger)
    dry = cli(root, "prune")
    assert (
        "would delete " in dry.stdout
        and "unused.jsonl" in dry.stdout
        and "used.jsonl  (" not in dry.stdout.replace("unused.jsonl", "")
    )
    assert (folder / "unused.jsonl").exists()
    done = cli(root, "prune", "--yes")
    assert done.returncode == 0 and not (folder / "unused.jsonl").exists() and (folder / "used.jsonl").exists()
    os.utime(folder / "old.jsonl", (1_000_000_000, 1_000_000_000))
    aged = cli(root, "prune", "--older-than", "30", "--yes")
    assert "deleted " in aged.stdout and "older than 30 days" in aged.stdout
    assert not (folder / "old.jsonl").exists() and (folder / "used.jsonl").exists()
    deleted = cli(root, "delete", "cassettes/used.jsonl", "--yes")
    assert deleted.returncode == 0 and not (folder / "used.jsonl").exists()


def test_import_converts_a_vcrpy_cassette_that_then_replays(tmp_path: Path, upstream: Upstream) -> None:
    vcr = pytest.importorskip("vcr")
    yaml_path = tmp_path / "openai_vcrpy.yaml"
    steps = [("chat", ["from vcrpy"]), ("stream", ["hi", "echo:hi", "stream it"])]
    with vcr.VCR().use_cassette(str(yaml_path)):
        live = OPENAI.run(httpx2.HTTPTransport(), upstream.url, steps)
    assert "sk-proj-TESTKEY" in yaml_path.read_text(), "vcrpy itself kept the key"
    result = cli(tmp_path, "import", str(yaml_path), "--out", str(tmp_path / "converted"))
    assert result.returncode == 0
    assert f"imported 2 calls: {yaml_path} -> {tmp_path / 'converted' / 'openai_vcrpy.jsonl'}" in result.stdout
    assert "each body came in whole, as one chunk" in result.stdout
    converted = tmp_path / "converted" / "openai_vcrpy.jsonl"
    assert "sk-proj-TESTKEY" not in converted.read_text()
    upstream.stop()
    assert OPENAI.run(vcr_transport.ReplayTransport(converted), upstream.url, steps) == live


def test_management_commands_never_touch_the_network(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[str] = []

    def refuse(name: str) -> Any:
        def refused(*args: object, **kwargs: object) -> None:
            attempts.append(name)
            raise OSError(f"{name}: the network was used")

        return refused

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    before = sorted(p.name for p in (project / "tests" / "cassettes").iterdir())
    for args in (
        ["status"],
        ["list"],
        ["verify", "tests/cassettes"],
        ["show", "tests/cassettes/openai.jsonl"],
        ["diff", "tests/cassettes/openai.jsonl", "tests/cassettes/openai_dogs.jsonl"],
        ["scan", "tests/cassettes"],
        ["prune", "--older-than", "1"],
    ):
        result = cli(project, *args)
        assert result.returncode in (0, 1), (args, result.stderr)
    assert attempts == []
    assert sorted(p.name for p in (project / "tests" / "cassettes").iterdir()) == before


def test_the_module_entry_point_runs_the_command() -> None:
    """One real process: ``python -m vcr_transport`` is wired to the same main."""
    result = subprocess.run(
        [sys.executable, "-m", "vcr_transport", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0 and "usage: vcr-transport" in result.stdout


def test_version_is_the_package_version(tmp_path: Path) -> None:
    result = cli(tmp_path, "--version")
    assert result.returncode == 0 and result.stdout.strip() == f"vcr-transport {vcr_transport.__version__}"


@pytest.mark.parametrize("command", [[], ["show"], ["prune"], ["diff"], ["verify"]])
def test_help_is_written_for_the_terminal(tmp_path: Path, command: list[str]) -> None:
    result = cli(tmp_path, *command, "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage: vcr-transport")
    assert "``" not in result.stdout, "no reStructuredText markup"
    if not command:  # the description is whole sentences, not a docstring's first line cut short
        words = " ".join(result.stdout.split())
        assert (
            "See, check, manage and serve vcr_transport cassettes. "
            "Only serve, as a recording proxy, records; only serve and drift use the network." in words
        )


# --- config set replaces pyproject.toml whole (_write_paths.replace_file) ------------------------------------

PADDED = '[project]\nname = "demo"\n\n[tool.other]\n' + "".join(f'key_{n} = "{"x" * 60}"\n' for n in range(400))


def test_config_set_never_shows_a_reader_a_cut_file_and_keeps_its_mode(tmp_path: Path) -> None:
    import threading
    import tomllib

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(PADDED)
    pyproject.chmod(0o640)
    environment = {**os.environ, "PYTHONPATH": str(Path(vcr_transport.__file__).parent.parent)}
    environment.pop("VCR_TRANSPORT_MODE", None)
    writers = [
        subprocess.Popen(
            [sys.executable, "-m", "vcr_transport", "config", "set", "mode", mode],
            cwd=tmp_path,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for mode in ["record", "replay", "off", "auto", "record-on-miss", "replay", "auto"]
    ]
    cut: list[str] = []
    reads = 0

    def read_until_done() -> None:
        nonlocal reads
        while any(writer.poll() is None for writer in writers) and reads < 200_000:
            text = pyproject.read_text()
            reads += 1
            try:
                if "other" not in tomllib.loads(text).get("tool", {}):
                    cut.append(text[-80:])
            except tomllib.TOMLDecodeError:
                cut.append(text[-80:])

    readers = [threading.Thread(target=read_until_done) for _ in range(2)]
    for reader in readers:
        reader.start()
    for writer in writers:
        assert writer.wait(timeout=300) == 0, writer.stderr.read() if writer.stderr else ""
        if writer.stderr:
            writer.stderr.close()
    for reader in readers:
        reader.join(timeout=60)
    assert reads > 0 and cut == [], f"{len(cut)} of {reads} reads saw a cut file"
    assert stat.S_IMODE(pyproject.stat().st_mode) == 0o640
    assert tomllib.loads(pyproject.read_text())["tool"]["vcr_transport"]["mode"] in MODES
    assert [p.name for p in tmp_path.iterdir()] == ["pyproject.toml"]


def test_config_set_writes_through_a_pyproject_link_only_inside_the_project(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    project = tmp_path / "project"
    (project / "config").mkdir(parents=True)
    (project / "config" / "pyproject.toml").write_text(PADDED)
    (project / "pyproject.toml").symlink_to("config/pyproject.toml")
    assert cli(project, "config", "set", "mode", "replay").returncode == 0
    assert (project / "pyproject.toml").is_symlink()
    assert 'mode = "replay"' in (project / "config" / "pyproject.toml").read_text()
    outside = tmp_path_factory.mktemp("outside") / "pyproject.toml"
    outside.write_text(PADDED)
    (project / "pyproject.toml").unlink()
    (project / "pyproject.toml").symlink_to(outside)
    result = cli(project, "config", "set", "mode", "record")
    assert result.returncode != 0 and f"leads out of the project {project} through a symlink, to {outside}" in (
        result.stderr
    ), result.stderr
    assert outside.read_text() == PADDED
