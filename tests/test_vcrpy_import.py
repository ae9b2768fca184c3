"""``vcr-transport import`` against hostile and malformed vcrpy YAML: a clear error for each (file, line,
what, fix), never a traceback; alias bombs refused under a bound; two inputs for one output refused;
folders converted into a mirrored tree; a symlink planted at the old predictable temp name not written
through. The command runs in-process."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from vcr_transport._cli import main
from vcr_transport._storage import read_cassette
from vcr_transport._vcrpy import ALIAS_BUDGET


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
    assert code == 1 and "alias bomb" in err and f"beyond the {ALIAS_BUDGET}" in err and str(source) in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


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
    "not a mapping": (["a", "list"], "the document is list, not a mapping"),
    "interactions not a list": ({"interactions": {"a": 1}}, "'interactions' is dict, not a list"),
    "no interactions": ({"version": 1}, "'interactions' is NoneType, not a list"),
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


@pytest.mark.parametrize("planted", [".chat.jsonl.partial", "chat.jsonl"])
def test_a_planted_symlink_is_never_written_through(
    planted: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    os.chmod(outside, 0o644)
    out = tmp_path / "out"
    out.mkdir()
    (out / planted).symlink_to(outside)
    source = vcrpy_file(tmp_path / "chat.yaml", [interaction()])
    code, _, err = run(capsys, str(source), "--out", str(out))
    assert code == 0, err
    assert outside.read_text() == "keep me" and stat.S_IMODE(outside.stat().st_mode) == 0o644
    target = out / "chat.jsonl"
    assert not target.is_symlink() and len(read_cassette(target).calls) == 1
    assert not [p for p in out.iterdir() if p.name.endswith(".partial") and not p.is_symlink()]
