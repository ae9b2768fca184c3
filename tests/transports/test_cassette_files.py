"""The cassette file itself: a re-record keeps the older file's mode; a file that is something else (a BOM,
a git merge conflict, a Git LFS pointer) gets its own message and fix wherever it is read (replay, verify,
show); verify reads a huge line with bounded memory (measured in a child process); a redact_with function
that fails is a CassetteError at the end of the recording while the live call goes on; patterns that match
the empty string are refused when given."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from upstream import Upstream
from vendors import OPENAI_KEY

import vcr_transport
from vcr_transport._core.format._format import HELD_LINE_BYTES, MAX_LINE_BYTES
from vcr_transport._core.rules import _known

PROMPT = [{"role": "user", "content": "hello"}]
CLI = [sys.executable, "-m", "vcr_transport"]


def record(cassette: Path, upstream: Upstream, prompt: str = "hello", **options: Any) -> str:
    transport = vcr_transport.transport(cassette, mode="record", **options)
    http = httpx2.Client(transport=transport)
    with openai.OpenAI(api_key=OPENAI_KEY, base_url=upstream.url + "/v1", http_client=http, max_retries=0) as client:
        answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    return str(answer.choices[0].message.content)


def replay(cassette: Path, upstream: Upstream) -> None:
    http = httpx2.Client(transport=vcr_transport.transport(cassette, mode="replay"))
    with openai.OpenAI(api_key=OPENAI_KEY, base_url=upstream.url + "/v1", http_client=http, max_retries=0) as client:
        client.chat.completions.create(model="m", messages=PROMPT)


def cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(Path(vcr_transport.__file__).parent.parent)}
    return subprocess.run([*CLI, *arguments], capture_output=True, text=True, env=environment, timeout=120)


# --- file mode --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600])
def test_a_re_record_keeps_the_older_files_mode(mode: int, upstream: Upstream, cassette: Path) -> None:
    record(cassette, upstream, "first")
    assert stat.S_IMODE(cassette.stat().st_mode) == 0o600, "a new cassette is private"
    cassette.chmod(mode)
    before = cassette.read_bytes()
    record(cassette, upstream, "second")  # a different call: the file is replaced
    assert cassette.read_bytes() != before
    assert stat.S_IMODE(cassette.stat().st_mode) == mode


# --- files that are something else ------------------------------------------------------------------------


def conflicted(good: bytes) -> bytes:
    lines = good.splitlines(keepends=True)
    return b"".join([b"<<<<<<< HEAD\n", *lines, b"=======\n", *lines, b">>>>>>> feature/other-prompt\n"])


FOREIGN = {
    "bom": (lambda good: b"\xef\xbb\xbf" + good, 1, "byte order mark", "remove the BOM"),
    "conflict": (conflicted, 1, "git merge-conflict marker", "resolve the conflict"),
    "conflict-inside": (
        lambda good: good.splitlines(keepends=True)[0] + b"<<<<<<< ours\n" + good + b">>>>>>> theirs\n",
        2,
        "git merge-conflict marker",
        "resolve the conflict",
    ),
    "lfs": (
        lambda good: b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"4" * 64 + b"\nsize 12345\n",
        1,
        "Git LFS pointer",
        "git lfs pull",
    ),
}


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_file_that_is_something_else_says_what_it_is_wherever_it_is_read(
    kind: str, upstream: Upstream, cassette: Path
) -> None:
    make, line, problem, fix = FOREIGN[kind]
    record(cassette, upstream)
    cassette.write_bytes(make(cassette.read_bytes()))
    with pytest.raises(vcr_transport.CassetteError) as raised:
        replay(cassette, upstream)
    error = raised.value
    assert (error.line, problem in error.problem, fix in error.fix) == (line, True, True), str(error)
    assert "not valid JSON" not in str(error)
    for command in ("verify", "show"):
        done = cli(command, str(cassette))
        assert done.returncode != 0
        output = done.stdout + done.stderr
        assert problem in output and fix in output, output
        assert output.count(problem) == 1, f"{command} reported the file more than once:\n{output}"
        assert "not valid JSON" not in output


# --- a huge line, bounded ---------------------------------------------------------------------------------

MEASURE = """
import resource, sys
from vcr_transport._storage import check_cassette
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
findings = list(check_cassette(sys.argv[1]))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024)
for finding in findings:
    print(finding)
"""


def peak_of_verify(path: Path) -> tuple[int, list[str]]:
    """Peak memory (bytes) verify's reader took in a child process, and what it found."""
    environment = {**os.environ, "PYTHONPATH": str(Path(vcr_transport.__file__).parent.parent)}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True, env=environment, timeout=300
    )
    assert done.returncode == 0, done.stderr
    first, *findings = done.stdout.splitlines()
    return int(first), findings


@pytest.mark.slow
def test_verify_reads_a_2_gb_line_with_bounded_memory(upstream: Upstream, cassette: Path) -> None:
    record(cassette, upstream)
    header = cassette.read_bytes().splitlines(keepends=True)[0]
    size = 2 * 1024**3
    with cassette.open("wb") as file:  # a header, then one line of 2 GB (sparse: zeros the disk doesn't hold)
        file.write(header + b'{"type": "event", "text": "')
        file.truncate(size)
    peak, findings = peak_of_verify(cassette)
    assert findings[0].startswith(f"{cassette}:2: line 2 is longer than {MAX_LINE_BYTES:,} bytes"), findings
    assert "fix:" in findings[1] and "restore it from version control" in findings[1]
    assert peak < size // 4
    assert peak < MAX_LINE_BYTES // 4, f"verify took {peak:,} bytes for one endless line"


def test_verify_reads_a_long_line_within_the_limit_again_from_the_file(upstream: Upstream, cassette: Path) -> None:
    # A line past what is held (HELD_LINE_BYTES) but within the limit is read again and checked like any other.
    record(cassette, upstream)
    header, request, *rest = cassette.read_bytes().splitlines(keepends=True)
    long_body = b'{"type": "request", "call_index": 0, "method": "POST", "url": "http://x/", "headers": [], '
    long_body += b'"body": {"text": "' + b"x" * (HELD_LINE_BYTES * 2) + b'"}}\n'
    cassette.write_bytes(header + long_body + b"".join(rest))
    peak, findings = peak_of_verify(cassette)
    assert findings == [], findings
    damaged = header + long_body[:-3] + b"\n" + b"".join(rest)  # the long line, no longer JSON
    cassette.write_bytes(damaged)
    _, findings = peak_of_verify(cassette)
    assert findings and findings[0].startswith(f"{cassette}:2: unreadable line: not valid JSON"), findings


# --- redact_with that fails -------------------------------------------------------------------------------


def returns_none(text: str) -> str:
    return None  # type: ignore[return-value]


def raises(text: str) -> str:
    raise KeyError(text)


@pytest.mark.parametrize(
    ("function", "said"), [(returns_none, "returned NoneType, not a string"), (raises, "raised KeyError")]
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_failing_redact_with_is_a_cassette_error_at_the_end_and_the_live_call_is_unharmed(
    function: Any, said: str, stream: bool, upstream: Upstream, cassette: Path
) -> None:
    record(cassette, upstream)
    before = cassette.read_bytes()
    transport = vcr_transport.transport(cassette, mode="record", redact_with=[function])
    http = httpx2.Client(transport=transport)
    client = openai.OpenAI(api_key=OPENAI_KEY, base_url=upstream.url + "/v1", http_client=http, max_retries=0)
    if stream:
        events = client.chat.completions.create(model="m", messages=PROMPT, stream=True)
        text = "".join(e.choices[0].delta.content or "" for e in events if e.choices)
    else:
        text = str(client.chat.completions.create(model="m", messages=PROMPT).choices[0].message.content)
    assert text.startswith("echo:hello")
    with pytest.raises(vcr_transport.CassetteError) as raised:
        client.close()
    message = str(raised.value)
    assert f"redact_with function {__name__}.{function.__name__} {said}" in message
    assert "fix: make the function return the string" in message
    assert OPENAI_KEY not in message
    assert cassette.read_bytes() == before


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_recording_with_more_secrets_than_a_redactor_remembers_is_not_saved_and_the_call_is_unharmed(
    stream: bool, upstream: Upstream, cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each distinct secret is remembered, to be removed wherever it shows again; a hostile answer bringing
    thousands would take unbounded memory. Past ``MAX_LEARNED_CHARACTERS`` (made small here) the recording is
    not saved, and says why, and the live call goes on."""
    record(cassette, upstream)
    before = cassette.read_bytes()
    monkeypatch.setattr(_known, "MAX_LEARNED_CHARACTERS", 2_000)
    prompt = " ".join(f"password={index:04d}Kq7Wx2Lm9Pq3" for index in range(60))
    transport = vcr_transport.transport(cassette, mode="record")
    http = httpx2.Client(transport=transport)
    client = openai.OpenAI(api_key=OPENAI_KEY, base_url=upstream.url + "/v1", http_client=http, max_retries=0)
    messages: Any = [{"role": "user", "content": prompt}]
    if stream:
        events = client.chat.completions.create(model="m", messages=messages, stream=True)
        text = "".join(e.choices[0].delta.content or "" for e in events if e.choices)
    else:
        text = str(client.chat.completions.create(model="m", messages=messages).choices[0].message.content)
    assert text.startswith("echo:" + prompt)
    with pytest.raises(vcr_transport.CassetteError) as raised:
        client.close()
    message = str(raised.value)
    assert "more distinct secrets to remember than a redactor holds (2,000 characters" in message
    assert "records too much in one cassette: split its calls over several" in message
    assert "0000Kq7Wx2Lm9Pq3" not in message and OPENAI_KEY not in message
    assert cassette.read_bytes() == before


# --- patterns that match the empty string -----------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["", "a*", "(sk-)?", "^", r"\b", "(?=sk-)"])
@pytest.mark.parametrize("option", ["redact_patterns", "normalize_patterns"])
def test_a_pattern_that_matches_the_empty_string_is_refused_when_given(
    pattern: str, option: str, cassette: Path
) -> None:
    value: Any = [pattern] if option == "redact_patterns" else [(pattern, "x")]
    with pytest.raises(ValueError, match=f"option {option}: pattern .* matches the empty string") as raised:
        vcr_transport.transport(cassette, mode="record", **{option: value})
    assert repr(pattern) in str(raised.value)
    vcr_transport.transport(
        cassette, mode="record", **{option: [r"sk-\w+"] if option == "redact_patterns" else [(r"\d+", "N")]}
    )


@pytest.mark.slow
def test_an_empty_pattern_in_pyproject_is_refused_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.vcr_transport]\nredact_patterns = ["x?"]\n')
    pytester.makepyfile(
        """
        import vcr_transport

        def test_opens():
            vcr_transport.transport("c.jsonl", mode="record")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*redact_patterns*pattern 'x?' matches the empty string*"])


# --- symlinks: a cassette is never written out of the project (_write_paths) --------------------------------

CHAT_TEST = """
import openai, pytest

@pytest.mark.vcr_transport(path={path!r}, mode="record")
def test_chat():
    with openai.OpenAI(api_key={key!r}, base_url={url!r}, max_retries=0) as client:
        client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "hello"}}])
"""


def record_in_project(pytester: pytest.Pytester, upstream: Upstream) -> pytest.RunResult:
    """A project (pyproject.toml, the rootdir) whose one test records ``cassettes/a.jsonl`` through the
    real openai SDK against the loopback upstream, in record mode."""
    pytester.makefile(".toml", pyproject="[tool.pytest.ini_options]\n")
    pytester.makepyfile(CHAT_TEST.format(path="cassettes/a.jsonl", key=OPENAI_KEY, url=upstream.url + "/v1"))
    return pytester.runpytest("-p", "no:cacheprovider")


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory, upstream: Upstream) -> Path:
    """A folder out of the test's project, holding a text file and a cassette."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / "notes.txt").write_text("keep me\n")
    record(folder / "elsewhere.jsonl", upstream, "elsewhere")
    upstream.received.clear()
    return folder


@pytest.mark.parametrize("name", ["notes.txt", "elsewhere.jsonl"])
def test_a_cassette_linked_out_of_the_project_is_refused_and_its_target_unchanged(
    name: str, pytester: pytest.Pytester, upstream: Upstream, outside: Path
) -> None:
    target = outside / name
    before = target.read_bytes()
    link = pytester.path / "cassettes" / "a.jsonl"
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(target, link.parent))  # as git checks a committed link out
    result = record_in_project(pytester, upstream)
    assert result.ret != 0
    output = result.stdout.str()
    assert f"{link}: " in output and str(target) in output, output  # both paths named
    assert target.read_bytes() == before and link.is_symlink()
    assert upstream.received == [], "refused before any call was sent"
    assert sorted(p.name for p in outside.iterdir()) == ["elsewhere.jsonl", "notes.txt"]


def test_a_dangling_cassette_link_creates_nothing_where_it_points(
    pytester: pytest.Pytester, upstream: Upstream, outside: Path
) -> None:
    link = pytester.path / "cassettes" / "a.jsonl"
    link.parent.mkdir()
    link.symlink_to(outside / "planted.jsonl")
    result = record_in_project(pytester, upstream)
    assert result.ret != 0 and "not written through: no such file" in result.stdout.str()
    assert not (outside / "planted.jsonl").exists() and link.is_symlink()


def test_a_cassette_folder_linked_out_of_the_project_is_refused(
    pytester: pytest.Pytester, upstream: Upstream, outside: Path
) -> None:
    (pytester.path / "cassettes").symlink_to(outside, target_is_directory=True)
    result = record_in_project(pytester, upstream)
    assert result.ret != 0
    assert f"leads out of the project {pytester.path.resolve()} through a symlink" in result.stdout.str()
    assert sorted(p.name for p in outside.iterdir()) == ["elsewhere.jsonl", "notes.txt"]


def test_a_link_to_a_cassette_inside_the_project_is_still_written_through(
    pytester: pytest.Pytester, upstream: Upstream
) -> None:
    target = pytester.path / "recorded" / "real.jsonl"
    target.parent.mkdir()
    record(target, upstream, "older")
    target.chmod(0o644)
    before = target.read_bytes()
    link = pytester.path / "cassettes" / "a.jsonl"
    link.parent.mkdir()
    link.symlink_to("../recorded/real.jsonl")
    result = record_in_project(pytester, upstream)
    result.assert_outcomes(passed=1)
    assert link.is_symlink() and target.read_bytes() != before
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(os.listdir(target.parent)) == ["real.jsonl"]
