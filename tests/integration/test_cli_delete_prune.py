"""``delete`` and ``prune`` only ever delete cassettes: a file whose first line is a cassette header. Anything
else (a README, a JSONL that is not a cassette, a FIFO, a folder) is refused with a message, whatever the
flags. The command runs in-process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vcr_transport._tools._cli import main

HEADER = json.dumps({"type": "header", "format_version": 1}) + "\n"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "cassette.jsonl").write_text(HEADER)
    (tmp_path / "README.md").write_text("# keep me\n")
    (tmp_path / "events.jsonl").write_text(json.dumps({"event": "click"}) + "\n")
    return tmp_path


@pytest.mark.parametrize("name", ["README.md", "events.jsonl", "missing.jsonl", "."])
def test_delete_refuses_anything_but_a_cassette(name: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "delete", str(folder / "cassette.jsonl"), str(folder / name), "--yes")
    assert code == 2 and "refused, nothing was deleted" in err and "is not a cassette" in err
    assert (folder / "cassette.jsonl").exists() and (folder / "README.md").exists() and "deleted" not in out


def test_a_header_nested_past_what_a_reader_holds_is_refused_not_a_traceback(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = folder / "deep.jsonl"
    deep.write_text('{"type": "header", "format_version": 1, "versions": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    for command in (["delete", str(deep), "--yes"], ["prune", str(folder), "--older-than", "1", "--yes"]):
        code, _, err = run(capsys, *command)
        assert "Traceback" not in err and deep.exists()
        assert code == 2 if command[0] == "delete" else code in (0, 2)


def test_delete_refuses_a_fifo_without_blocking_on_it(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = folder / "pipe.jsonl"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "delete", str(fifo), "--yes")
    assert code == 2 and "not a regular file" in err and fifo.exists()


def test_delete_refuses_a_symlink_to_a_cassette(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = folder / "link.jsonl"
    link.symlink_to(folder / "cassette.jsonl")
    code, _, err = run(capsys, "delete", str(link), "--yes")
    assert code == 2 and "not a regular file" in err and link.is_symlink()


def test_delete_deletes_a_cassette(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "delete", str(folder / "cassette.jsonl"), "--yes")
    assert code == 0 and "deleted" in out and not (folder / "cassette.jsonl").exists()


def test_prune_skips_non_cassettes_whatever_the_flags(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(folder / "pipe.jsonl")
    for path in folder.iterdir():
        os.utime(path, (1_000_000_000, 1_000_000_000), follow_symlinks=False)
    code, out, _ = run(capsys, "prune", str(folder), "--older-than", "0", "--yes")
    assert code == 0
    assert f"skipped {folder / 'events.jsonl'}: not a cassette" in out
    assert f"skipped {folder / 'pipe.jsonl'}: not a cassette (not a regular file)" in out
    assert (folder / "events.jsonl").exists() and (folder / "pipe.jsonl").exists() and (folder / "README.md").exists()
    assert not (folder / "cassette.jsonl").exists()
