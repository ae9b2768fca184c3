"""``vcr-transport import`` against hostile and malformed vcrpy YAML: a clear error for each (file, line,
what, fix), never a traceback; alias bombs refused under a bound; two inputs for one output refused;
folders converted into a mirrored tree; a symlink planted at the old predictable temp name not written
through; YAML that is no cassette skipped in one line; bytes header values imported; every file read back
before it is put in place; vcrpy cassettes that kept the vendors' real Set-Cookie headers imported, checked
with ``verify --strict`` and replayed through the real SDKs. The command runs in-process."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from real_wire import COOKIE_SETS, real_headers
from upstream import Received
from vendors import SDKS, VENDOR_ROUTES, Sdk

from vcr_transport._core.rules import _known
from vcr_transport._storage import read_cassette
from vcr_transport._tools._cli import main
from vcr_transport._tools._vcrpy import ALIAS_BUDGET


def interaction(**changes: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "request": {
            "body": '{"model": "m"}',
            "headers": {"Content-Type": ["application/json"], "Authorization": ["Bearer sk-proj-ABCDEF1234567890abcd"]},
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions",
        },
        "response": {
            "body": {"string": b'{"ok": true}'},
            "headers": {"Content-Type": ["application/json"]},
            "status": {"code": 200, "message": "OK"},
        },
    }
    for path, value in changes.items():
        side, _, field = path.partition("__")
        if not field:
            found[side] = value
        elif value is ...:
            del found[side][field]
        else:
            found[side][field] = value
    return found


def vcrpy_file(path: Path, interactions: Any, **extra: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1, **extra}))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["import", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_vcrpy_cassette_converts_and_is_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = vcrpy_file(tmp_path / "chat.yaml", [interaction(), interaction(response__status={"code": 429})])
    code, out, _ = run(capsys, str(source), "--out", str(tmp_path / "out"))
    target = tmp_path / "out" / "chat.jsonl"
    assert code == 0 and f"imported 2 calls: {source} -> {target}" in out
    cassette = read_cassette(target)
    assert [call.status for call in cassette.calls] == [200, 429]
    assert b"".join(cassette.calls[0].events) == b'{"ok": true}'
    assert "sk-proj-ABCDEF" not in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


ALIAS_BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"{name}: &{name} [{', '.join(['*' + previous] * 9)}]"
            for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
        ),
        "interactions: [{request: *i, response: *i}]",
    ]
)


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "bomb.yaml"
    source.write_text(ALIAS_BOMB)
    code, _, err = run(capsys, str(source), "--out", str(tmp_path / "out"))
    assert code == 1 and "alias bomb" in err and f"more than the {ALIAS_BUDGET:,}" in err and str(source) in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_one_long_string_aliased_many_times_is_refused_by_the_text_it_would_repeat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The budget counts what aliases add in characters, not nodes: one 1 MB anchored response body aliased by
    300 interactions adds 300 nodes but 300 MB, and is refused before anything is written (before: 301 MB)."""
    source = tmp_path / "long.yaml"
    text = yaml.safe_dump({"interactions": [interaction(response__body={"string": "BODY"}) for _ in range(301)]})
    first = text.index("string: BODY")
    source.write_text(
        text[:first] + f"string: &big '{'x' * 1_000_000}'" + text[first + 12 :].replace("string: BODY", "string: *big")
    )
    code, _, err = run(capsys, str(source), "--out", str(tmp_path / "out"))
    assert code == 1 and "alias bomb" in err and f"more than the {ALIAS_BUDGET:,}" in err and str(source) in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_file_with_more_secrets_than_a_redactor_remembers_is_refused_naming_the_interaction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each secret import removes is remembered, to be removed everywhere: a hostile file bringing thousands is
    refused past the redactor's limit (made small here), naming the file and the interaction; nothing is written."""
    monkeypatch.setattr(_known, "MAX_LEARNED_CHARACTERS", 2_000)
    secrets = [f"Bearer sk-proj-{index:04d}ABCDEF1234567890abcd" for index in range(60)]
    source = vcrpy_file(tmp_path / "many.yaml", [interaction(request__headers={"Authorization": [s]}) for s in secrets])
    code, _, err = run(capsys, str(source), "--out", str(tmp_path / "out"))
    assert code == 1 and f"{source}:" in err and "more distinct secrets to remember than a redactor holds" in err
    assert "damaged or hostile" in err and "Traceback" not in err and "1234567890abcd" not in err
    assert not (tmp_path / "out").exists()


def test_a_few_aliases_within_the_budget_are_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "shared.yaml"
    source.write_text(
        yaml.safe_dump({"interactions": [interaction()]}).replace("Content-Type:\n", "Content-Type: &ct\n", 1)
        + "extra: [*ct, *ct]\n"
    )
    code, out, err = run(capsys, str(source))
    assert code == 0, err
    assert "imported 1 call" in out


def test_an_alias_that_contains_itself_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "loop.yaml"
    source.write_text("interactions: &x [*x]\n")
    code, _, err = run(capsys, str(source))
    assert code == 1 and "refers to the node that contains it" in err and f"{source}:1" in err


MALFORMED: dict[str, tuple[Any, str]] = {
    "interactions not a list": ({"interactions": {"a": 1}}, "'interactions' is dict, not a list"),
    "interactions null": ({"interactions": None, "version": 1}, "'interactions' is NoneType, not a list"),
    "interaction not a mapping": ({"interactions": ["text"]}, "interaction 0: is a str"),
    "no request": ({"interactions": [interaction(request=None)]}, "interaction 0: has no request mapping"),
    "no response": ({"interactions": [interaction(response="x")]}, "interaction 0: has no response mapping"),
    "no method": ({"interactions": [interaction(request__method=...)]}, "request.method is None, not text"),
    "no uri": ({"interactions": [interaction(), interaction(request__uri=...)]}, "interaction 1: request.uri is None"),
    "uri not text": ({"interactions": [interaction(request__uri=["x"])]}, "request.uri is ['x'], not text"),
    "status text": ({"interactions": [interaction(response__status={"code": "abc"})]}, "status.code is 'abc'"),
    "status out of range": ({"interactions": [interaction(response__status={"code": 700})]}, "code is 700"),
    "status a bool": ({"interactions": [interaction(response__status={"code": True})]}, "code is True"),
    "status missing": ({"interactions": [interaction(response__status=...)]}, "code is None"),
    "headers a list": ({"interactions": [interaction(request__headers=["a"])]}, "request.headers is a list"),
    "header value a mapping": (
        {"interactions": [interaction(response__headers={"x": [{"a": 1}]})]},
        "response.headers['x'] holds {'a': 1}",
    ),
    "body a list": ({"interactions": [interaction(request__body=[1, 2])]}, "request.body is a list"),
    "body an int": ({"interactions": [interaction(response__body=5)]}, "response.body is a int"),
    "body mapping without string": (
        {"interactions": [interaction(response__body={"bytes": "x"})]},
        "response.body is a mapping without 'string'",
    ),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_each_malformed_document_gets_a_clear_error(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document, expected = MALFORMED[case]
    source = tmp_path / "bad.yaml"
    source.write_text(yaml.safe_dump(document))
    code, _, err = run(capsys, str(source), "--out", str(tmp_path / "out"))
    assert code == 1 and expected in err, err
    assert f"cassette {source}" in err and "fix:" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_an_interaction_error_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = vcrpy_file(tmp_path / "bad.yaml", [interaction(), interaction(response__status={"code": 1000})])
    code, _, err = run(capsys, str(source))
    second = [n for n, line in enumerate(source.read_text().splitlines(), 1) if line.startswith("- ")][1]
    assert code == 1 and f"cassette {source}:{second}: interaction 1: response.status.code is 1000" in err


def test_not_yaml_at_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "broken.yaml"
    source.write_text("interactions:\n  - [unclosed\n")
    code, _, err = run(capsys, str(source))
    assert code == 1 and "not a YAML file vcr_transport can read" in err and "Traceback" not in err


def test_two_inputs_for_one_output_are_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = vcrpy_file(tmp_path / "one" / "chat.yaml", [interaction()])
    second = vcrpy_file(tmp_path / "two" / "chat.yaml", [interaction()])
    code, _, err = run(capsys, str(first), str(second), "--out", str(tmp_path / "out"))
    assert code == 2 and "would both be written to" in err and not (tmp_path / "out").exists()
    vcrpy_file(tmp_path / "same" / "chat.yml", [interaction()])
    vcrpy_file(tmp_path / "same" / "chat.yaml", [interaction()])
    code, _, err = run(capsys, str(tmp_path / "same"))
    assert code == 2 and "chat.jsonl" in err and not list((tmp_path / "same").glob("*.jsonl"))


def test_folders_are_converted_into_a_mirrored_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "vcr"
    vcrpy_file(tree / "top.yaml", [interaction()])
    vcrpy_file(tree / "api" / "deep" / "inner.yml", [interaction(), interaction()])
    (tree / "notes.txt").write_text("not yaml")
    code, out, err = run(capsys, str(tree), "--out", str(tmp_path / "out"))
    assert code == 0, err
    made = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*.jsonl"))
    assert made == ["api/deep/inner.jsonl", "top.jsonl"]
    assert len(read_cassette(tmp_path / "out" / "api" / "deep" / "inner.jsonl").calls) == 2
    assert out.count("imported ") == 2
    code, _, err = run(capsys, str(tmp_path / "empty-dir-does-not-exist"))
    assert code == 2 and "no such file or folder" in err
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, str(tmp_path / "empty"))
    assert code == 2 and "no .yaml or .yml file" in err


def planted_link(tmp_path: Path, planted: str) -> tuple[Path, Path, Path]:
    """(a file outside the output folder, the output folder holding a link to it named ``planted``, a source)."""
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    os.chmod(outside, 0o644)
    out = tmp_path / "out"
    out.mkdir()
    (out / planted).symlink_to(outside)
    return outside, out, vcrpy_file(tmp_path / "chat.yaml", [interaction()])


def test_a_symlink_planted_at_the_old_temporary_name_is_never_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside, out, source = planted_link(tmp_path, ".chat.jsonl.partial")
    code, _, err = run(capsys, str(source), "--out", str(out))
    assert code == 0, err
    assert outside.read_text() == "keep me" and stat.S_IMODE(outside.stat().st_mode) == 0o644
    target = out / "chat.jsonl"
    assert not target.is_symlink() and len(read_cassette(target).calls) == 1
    assert not [p for p in out.iterdir() if p.name.endswith(".partial") and not p.is_symlink()]


def test_an_output_that_is_a_symlink_to_no_cassette_is_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One rule for every writer (``_write_paths``): a link is written through only to a cassette."""
    outside, out, source = planted_link(tmp_path, "chat.jsonl")
    code, _, err = run(capsys, str(source), "--out", str(out))
    assert code == 2 and f"{out / 'chat.jsonl'}: is a symlink to {outside}, not written through" in err, err
    assert outside.read_text() == "keep me" and stat.S_IMODE(outside.stat().st_mode) == 0o644
    assert (out / "chat.jsonl").is_symlink() and os.listdir(out) == ["chat.jsonl"]


# --- YAML that is no cassette, bytes headers, read-back ---------------------------------------------------

AGENTS_YAML = """researcher:
  role: Senior researcher
  goal: Find what is new in {topic}
  backstory: >
    A curious mind.
writer:
  role: Writer
  goal: Write it up
"""


def test_yaml_that_is_no_vcrpy_cassette_is_skipped_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """crewAI keeps its agents' YAML configuration under tests/: each such file gets one line, and the run
    exits 0 when every cassette converted."""
    tree = tmp_path / "tests"
    vcrpy_file(tree / "cassettes" / "test_chat.yaml", [interaction()])
    (tree / "config").mkdir(parents=True)
    (tree / "config" / "agents.yaml").write_text(AGENTS_YAML)
    (tree / "config" / "list.yml").write_text("- one\n- two\n")
    (tree / "config" / "empty.yaml").write_text("")
    (tree / "config" / "two_documents.yaml").write_text("a: 1\n---\nb: 2\n")
    (tree / "config" / "template.yaml").write_text("name: {{ name }\n")
    code, out, err = run(capsys, str(tree), "--out", str(tmp_path / "out"))
    assert code == 0 and err == "", err
    config = tree / "config"
    converted = tmp_path / "out" / "cassettes" / "test_chat.jsonl"
    # What PyYAML says of a file it can't load depends on its build (libyaml or not): shown as (…) here.
    lines = [re.sub(r"one document \(.*\), with", "one document (…), with", line) for line in out.splitlines()]
    assert lines == [
        f"imported 1 call: {tree / 'cassettes' / 'test_chat.yaml'} -> {converted}",
        f"skipped: {config / 'agents.yaml'}: not a vcrpy cassette (a mapping without 'interactions', keys: "
        "researcher, writer)",
        f"skipped: {config / 'empty.yaml'}: not a vcrpy cassette (an empty YAML document)",
        f"skipped: {config / 'list.yml'}: not a vcrpy cassette (the document is a list, not a mapping with "
        "'interactions')",
        f"skipped: {config / 'template.yaml'}: not a vcrpy cassette (YAML that doesn't load as one document (…), "
        "with no 'interactions')",
        f"skipped: {config / 'two_documents.yaml'}: not a vcrpy cassette (YAML that doesn't load as one document "
        "(…), with no 'interactions')",
        "note: vcrpy keeps no chunk boundaries, so each body came in whole, as one chunk; re-record to get them",
        "note: these cassettes match as vcrpy did (match_on in their header); see the docs to tighten it",
        "summary: 1 file converted (1 call), 0 refused; 5 skipped (not vcrpy cassettes)",
    ]
    assert sorted(p.name for p in (tmp_path / "out").rglob("*.jsonl")) == ["test_chat.jsonl"]


GRPC_RECORDING = {
    "interactions": [
        {"method": "/agents.v1.Memory/Save", "request": {"key": "k", "value": "v"}, "response": {"ok": True}},
        {"method": "/agents.v1.Memory/Load", "request": {"key": "k"}, "response": {"value": "v"}},
    ]
}
WEBSOCKET_RECORDING = {"interactions": [{"direction": "send", "text": "hello"}, {"direction": "recv", "text": "hi"}]}


def test_another_tools_recordings_are_skipped_and_clients_replay_cannot_serve_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A project's own gRPC and WebSocket recordings (an ``interactions`` list, but no vcrpy exchange) are
    skipped in one line each, the run exiting 0; a cassette's calls from requests are said to replay in the
    compatibility mode only, and those of clients replay never serves (urllib.request, aiohttp) are named."""
    tree = tmp_path / "tests"
    agents = {"User-Agent": ["python-requests/2.32.3"]}
    calls = [
        interaction(),
        interaction(request__headers=agents, request__method="GET", request__uri="https://example.test/a.png"),
        interaction(request__headers={"user-agent": "Python-urllib/3.12"}, request__uri="https://example.test/x"),
        interaction(request__headers={"User-Agent": ["Python/3.12 aiohttp/3.10.5"]}),
        interaction(request__headers={"User-Agent": ["Python/3.12 aiohttp/3.10.5"]}),
    ]
    source = vcrpy_file(tree / "cassettes" / "test_agent.yaml", calls)
    (tree / "recordings").mkdir()
    (tree / "recordings" / "memory_grpc.yaml").write_text(yaml.safe_dump(GRPC_RECORDING))
    (tree / "recordings" / "chat_ws.yaml").write_text(yaml.safe_dump(WEBSOCKET_RECORDING))
    code, out, err = run(capsys, str(tree))
    assert (code, err) == (0, ""), err
    lines = out.splitlines()
    assert lines[:4] == [
        f"imported 5 calls: {source} -> {source.with_suffix('.jsonl')}",
        "  note: 1 call from requests, replayed in the pytest-recording compatibility mode only "
        "(vcr_transport_compat = pytest-recording); never recorded",
        "  can't serve: 2 calls from aiohttp: replay answers httpx and httpx2 (and, in the compatibility mode, "
        "urllib3 and requests); a test making it meets the network guard: send it through one of those clients, "
        "or mock it",
        "  can't serve: 1 call from urllib.request (http.client): replay answers httpx and httpx2 (and, in the "
        "compatibility mode, urllib3 and requests); a test making it meets the network guard: send it through "
        "one of those clients, or mock it",
    ]
    recordings = tree / "recordings"
    assert lines[4:6] == [
        f"skipped: {recordings / 'chat_ws.yaml'}: not a vcrpy cassette (its 'interactions' hold no HTTP exchange "
        "as vcrpy writes one (a request with a uri, a response with a status), the first has keys "
        "['direction', 'text']: another tool's recording)",
        f"skipped: {recordings / 'memory_grpc.yaml'}: not a vcrpy cassette (its 'interactions' hold no HTTP "
        "exchange as vcrpy writes one (a request with a uri, a response with a status), the first has keys "
        "['method', 'request', 'response']: another tool's recording)",
    ]
    assert lines[-1] == "summary: 1 file converted (5 calls), 0 refused; 2 skipped (not vcrpy cassettes)"
    assert not list(recordings.glob("*.jsonl"))


def test_a_run_that_finds_no_cassette_at_all_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "agents.yaml").write_text(AGENTS_YAML)
    code, out, err = run(capsys, str(tmp_path))
    assert code == 1 and err == ""
    assert out.splitlines()[-1] == (
        "summary: 0 files converted (0 calls), 0 refused; 1 skipped (not vcrpy cassettes): none of the YAML files "
        "is a vcrpy cassette, nothing was imported"
    )


def test_header_values_vcrpy_stored_as_bytes_are_imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """botocore's header values are bytes, which vcrpy writes as YAML !!binary (Bedrock cassettes); they are the
    bytes they were, and the call replays with them."""
    import httpx2

    from vcr_transport import ReplayTransport

    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2/invoke"
    source = vcrpy_file(
        tmp_path / "bedrock.yaml",
        [
            interaction(
                request__uri=url,
                request__headers={
                    "Content-Type": [b"application/json"],
                    "X-Amz-Date": [b"20250101T000000Z"],
                    "amz-sdk-invocation-id": [b"4b0d1ca2-5d3e-4c1a-9a0e-3f1f2b6c7d8e"],
                    "Authorization": [b"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20250101/us-east-1/bedrock"],
                },
                response__headers={
                    "Content-Type": ["application/json"],
                    "x-amzn-RequestId": [b"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"],
                    "x-note": [b"caf\xe9"],
                },
            )
        ],
    )
    assert source.read_text().count("!!binary") == 7  # the six header values, and the body
    code, out, err = run(capsys, str(source))
    assert code == 0, err
    target = source.with_suffix(".jsonl")
    call = read_cassette(target).calls[0]
    assert ("X-Amz-Date", "20250101T000000Z") in call.request_headers
    assert dict(call.response_headers)["x-note"] == "caf\xe9"
    assert "AKIAIOSFODNN7EXAMPLE" not in target.read_text()
    with httpx2.Client(transport=ReplayTransport(target)) as client:
        response = client.post(url, json={"model": "m"})
    assert response.json() == {"ok": True}
    assert response.headers.raw[-1] == (b"x-note", b"caf\xe9")
    assert response.headers["x-amzn-requestid"] == "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


def test_a_header_of_no_header_shape_is_refused_with_a_fix_about_headers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = vcrpy_file(tmp_path / "bad.yaml", [interaction(request__headers={"X-Flag": [True]})])
    code, _, err = run(capsys, str(source))
    line = next(n for n, text in enumerate(source.read_text().splitlines(), 1) if text.startswith("- "))
    assert code == 1
    assert err.splitlines() == [
        f"refused: cassette {source}:{line}: interaction 0: request.headers['X-Flag'] holds True; a header is a "
        "name with a text (or bytes) value or a list of them; fix: vcrpy stores headers as a mapping of each name "
        "to a list of text (or !!binary) values: correct that header in the YAML, or re-record the test"
    ]


def test_a_conversion_that_would_not_read_back_is_refused_and_replaces_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each file is read back by the strict parser before it is moved into place: one that would not read is a
    refusal naming the interaction, and the cassette already at the target stays byte for byte."""
    out = tmp_path / "out"
    good = vcrpy_file(tmp_path / "first" / "chat.yaml", [interaction()])
    assert run(capsys, str(good), "--out", str(out))[0] == 0
    target = out / "chat.jsonl"
    before = target.read_bytes()
    source = vcrpy_file(
        tmp_path / "chat.yaml", [interaction(), interaction(request__uri="ftp://files.example.test/data")]
    )
    code, out_text, err = run(capsys, str(source), "--out", str(out))
    second = [n for n, text in enumerate(source.read_text().splitlines(), 1) if text.startswith("- ")][1]
    assert code == 1
    assert err.splitlines() == [
        f"refused: cassette {source}:{second}: interaction 1: converted, it would not read back (line 6 of the "
        "converted cassette: malformed request line: url 'ftp://files.example.test/data' is not an absolute http, "
        f"https, ws or wss URL); {target} was left as it was; fix: correct that interaction in the YAML, or "
        "re-record the test; if the YAML is what vcrpy wrote, this is a bug in vcr-transport import: please report "
        "it with the interaction (credentials removed)"
    ]
    assert out_text.splitlines()[-1].startswith("summary: 0 files converted (0 calls), 1 refused: 1 x converted,")
    assert target.read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["chat.jsonl"], "no temporary file is left"


# --- vcrpy cassettes that kept the vendors' real Set-Cookie headers ---------------------------------------

DEFAULT_HOSTS = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}
COOKIE_STEPS = [("chat", ["hi"]), ("stream", ["hi", "echo:hi", "more"]), ("chat", ["again"])]
# Each SDK (httpx2, sync and async) with each of its vendor's header sets whose cookies carry attributes.
COOKIE_CASES = [
    (sdk, number)
    for sdk in SDKS
    if sdk.name in DEFAULT_HOSTS and sdk.library.__name__ == "httpx2"
    for number in COOKIE_SETS[sdk.name] or [0]
]


def _grouped(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Headers as vcrpy writes them: each name with the list of its values (two Set-Cookie, one entry)."""
    grouped: dict[str, list[str]] = {}
    for name, value in pairs:
        grouped.setdefault(name, []).append(value)
    return grouped


def vcrpy_recorded(sdk: Sdk, header_set: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """What vcrpy writes while ``sdk`` talks to its vendor at the default host, answered with the vendor's real
    header set ``header_set`` (``__cf_bm``/``_cfuvid`` with Domain, Path, Expires; the SDK's cookie jar sends
    them back from the second call on), and what the SDK returned."""
    import httpx2

    route = VENDOR_ROUTES[sdk.name][1]
    extra = real_headers(sdk.name, header_set)
    interactions: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        reply = route(Received(request.method, request.url.raw_path.decode(), dict(request.headers), body))
        own = {name.lower() for name, _ in reply.headers}
        headers = [(n, v) for n, v in extra if n.lower() not in own] + reply.headers
        content = b"".join(reply.chunks)
        interactions.append(
            {
                "request": {
                    "body": body.decode(),
                    "headers": _grouped(list(request.headers.multi_items())),
                    "method": request.method,
                    "uri": str(request.url),
                },
                "response": {
                    "body": {"string": content.decode()},
                    "headers": _grouped(headers),
                    "status": {"code": reply.status, "message": "OK"},
                },
            }
        )
        return httpx2.Response(reply.status, headers=headers, content=content)

    live = sdk.run(httpx2.MockTransport(handler), DEFAULT_HOSTS[sdk.name], COOKIE_STEPS, max_retries=0)
    return interactions, live


@pytest.mark.parametrize(("sdk", "header_set"), COOKIE_CASES, ids=[f"{s.id}-set{n}" for s, n in COOKIE_CASES])
def test_a_vcrpy_cassette_with_real_set_cookie_headers_imports_verifies_and_replays(
    sdk: Sdk, header_set: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vcr_transport import ReplayTransport

    interactions, live = vcrpy_recorded(sdk, header_set)
    cookies = [
        value
        for entry in interactions
        for name, values in entry["response"]["headers"].items()
        if name.lower() == "set-cookie"
        for value in values
    ]
    assert len(cookies) >= len(COOKIE_STEPS) and all("; path=/" in c.lower() for c in cookies), cookies
    assert any(name.lower() == "cookie" for entry in interactions[1:] for name in entry["request"]["headers"]), (
        "the SDK's cookie jar sends the cookies back"
    )
    source = vcrpy_file(tmp_path / "tests" / "cassettes" / "session.yaml", interactions)

    code, out, err = run(capsys, str(source))
    assert (code, err) == (0, ""), err
    assert f"summary: 1 file converted ({len(COOKIE_STEPS)} calls), 0 refused" in out.splitlines()
    target = source.with_suffix(".jsonl")
    assert main(["verify", "--strict", str(target)]) == 0, capsys.readouterr()
    capsys.readouterr()
    text = target.read_text()
    values = [cookie.partition("=")[2].partition(";")[0] for cookie in cookies]
    assert all(len(value) >= 8 for value in values) and not [v for v in values if v in text], "values redacted"
    assert all(call.url.startswith(DEFAULT_HOSTS[sdk.name] + "/v1/") for call in read_cassette(target).calls)

    assert sdk.run(ReplayTransport(target), DEFAULT_HOSTS[sdk.name], COOKIE_STEPS, max_retries=0) == live


def test_a_gzip_bomb_body_is_refused_naming_its_interaction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recorded gzip body that decodes past the bound can't be searched for secrets: refused, not written."""
    import gzip

    from vcr_transport._core.format import _bodies

    monkeypatch.setattr(_bodies, "MAX_DECODED_BYTES", 1024 * 1024, raising=False)
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), mtime=0)
    fine = interaction()
    source = vcrpy_file(
        tmp_path / "bomb.yaml",
        [
            fine,
            interaction(
                response__body={"string": bomb},
                response__headers={"Content-Type": ["application/json"], "Content-Encoding": ["gzip"]},
            ),
        ],
    )
    code, _, err = run(capsys, str(source), "--out", str(tmp_path / "out"))
    assert code == 1 and "interaction 1: response: the gzip body decodes past 1,048,576 bytes" in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
