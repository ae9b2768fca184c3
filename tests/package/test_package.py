"""The package surface: exports, import without side effects, the shipped cassette and demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

import vcr_transport

ROOT = Path(__file__).resolve().parents[2]


def test_all_is_sorted_complete_and_public() -> None:
    names = vcr_transport.__all__
    assert sorted(names, key=lambda n: (not n.isupper(), n)) == names
    public = {n for n in dir(vcr_transport) if n.isidentifier() and not n.startswith("_")}
    assert public - set(names) == set(), "every public name is exported on purpose"
    for name in names:
        obj = getattr(vcr_transport, name)
        if isinstance(obj, type):
            assert obj.__module__ == "vcr_transport"


def test_every_exception_derives_from_one_base_and_is_drawn_in_the_tree() -> None:
    from vcr_transport import _exceptions

    exceptions = [
        obj
        for name in vcr_transport.__all__
        if isinstance(obj := getattr(vcr_transport, name), type) and issubclass(obj, BaseException)
    ]
    assert len(exceptions) >= 8
    for exception in exceptions:
        assert exception.__name__ in (_exceptions.__doc__ or ""), f"{exception.__name__} is missing from the tree"
        if issubclass(exception, Warning):
            assert issubclass(exception, UserWarning), exception
            continue
        assert issubclass(exception, vcr_transport.VcrTransportError), exception


def test_the_exceptions_module_holds_the_tree_only() -> None:
    from vcr_transport import _exceptions

    public = {name for name in vars(_exceptions) if name.isidentifier() and not name.startswith("_")}
    public -= {"annotations", "Any"}
    assert public == set(_exceptions.__all__)
    assert all(issubclass(getattr(_exceptions, name), BaseException) for name in public)


def test_importing_patches_nothing_reads_no_environment_and_opens_no_file() -> None:
    probe = """
import builtins, io, os, sys
import httpx2
opened, read = [], []
real_open = builtins.open
builtins.open = lambda *a, **k: (opened.append(a[0]), real_open(*a, **k))[1]
io.open = builtins.open
class Env(dict):
    def __getitem__(self, k): read.append(k); return super().__getitem__(k)
    def get(self, k, d=None): read.append(k); return super().get(k, d)
os.environ = Env(os.environ)
before = (httpx2.HTTPTransport.handle_request, httpx2.AsyncHTTPTransport.handle_async_request)
import vcr_transport
after = (httpx2.HTTPTransport.handle_request, httpx2.AsyncHTTPTransport.handle_async_request)
print(before == after, [f for f in opened if 'vcr_transport' not in str(f) and not str(f).endswith('.py')], read)
"""
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "True [] []"


def test_a_replay_loads_only_what_replay_needs() -> None:
    """Mode check's module, the WebSocket shells and the CLI's views load only when used."""
    probe = """
import sys
import vcr_transport
with vcr_transport.use_cassette("cassettes/openai_demo.jsonl", mode="replay", unplayed="ignore"):
    pass
print(sorted(m for m in ("vcr_transport._check", "vcr_transport._websocket", "vcr_transport._tools._cli",
                         "vcr_transport._tools._html", "vcr_transport._tools._har") if m in sys.modules))
"""
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert result.stdout.strip() == "[]"


REPLAY_SKIPS = (
    "vcr_transport._recording",
    "vcr_transport._core.engine._call_recording",
    "vcr_transport._core.engine._quiet",
    "vcr_transport._core.engine._explain",
    "vcr_transport._core.engine._faults",
    "vcr_transport._core.engine._websocket",
    "vcr_transport._core.format._lint",
    "vcr_transport._core.rules._hosts",
    "vcr_transport._core.rules._stream",
    "vcr_transport._core.views._conversation",
)


def test_a_plain_replay_imports_no_recording_view_or_explanation(tmp_path: Path) -> None:
    """A process that only replays (a replayed call, the cassette closed) loads nothing of recording, the
    views, the quiet re-record, WebSocket playback, verify's lint, the faults, the host rules or a mismatch's
    explanation; a mismatch loads the explanation then."""
    cassette = tmp_path / "c.jsonl"
    answer = httpx2.MockTransport(lambda request: httpx2.Response(200, json={"ok": True}))
    recorder = vcr_transport.RecordingTransport(answer, cassette)
    with httpx2.Client(transport=recorder) as client:
        client.post("https://api.openai.com/v1/chat/completions", json={"model": "m"})
    recorder.close()
    probe = f"""
import sys
import httpx2
import vcr_transport
path = sys.argv[1]
with httpx2.Client(transport=vcr_transport.ReplayTransport(path)) as client:
    assert client.post("https://api.openai.com/v1/chat/completions", json={{"model": "m"}}).json() == {{"ok": True}}
with vcr_transport.use_cassette(path, mode="replay"), httpx2.Client() as client:
    assert client.post("https://api.openai.com/v1/chat/completions", json={{"model": "m"}}).json() == {{"ok": True}}
print(sorted(m for m in {REPLAY_SKIPS!r} if m in sys.modules))
with httpx2.Client(transport=vcr_transport.ReplayTransport(path)) as client:
    try:
        client.post("https://api.openai.com/v1/chat/completions", json={{"model": "other"}})
    except vcr_transport.ReplayMismatch:
        pass
print("vcr_transport._core.engine._explain" in sys.modules)
"""
    result = subprocess.run(
        [sys.executable, "-c", probe, str(cassette)], capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "True"]


def test_py_typed_is_shipped() -> None:
    assert (ROOT / "vcr_transport" / "py.typed").is_file()


def test_the_shipped_demo_cassette_replays_offline() -> None:
    cassette = ROOT / "cassettes" / "openai_demo.jsonl"
    first = json.loads(cassette.read_text().splitlines()[1])
    base_url = first["url"].rsplit("/chat/completions", 1)[0]
    transport = vcr_transport.ReplayTransport(cassette)
    import openai

    with httpx2.Client(transport=transport) as http:
        client = openai.OpenAI(api_key="sk-any-000000000000000000000000", base_url=base_url, http_client=http)
        answer = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "hello"}])
        stream = client.chat.completions.create(
            model="demo", messages=[{"role": "user", "content": "stream me some words"}], stream=True
        )
        words = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert answer.choices[0].message.content == "echo: hello"
    assert words.split() == ["echo:", "stream", "me", "some", "words"]
    transport.assert_all_played()


@pytest.mark.slow
def test_the_demo_runs() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "identical, boundaries included" in result.stdout
    assert "no, redacted" in result.stdout


def test_the_docs_pre_commit_snippet_is_a_whole_config() -> None:
    yaml = __import__("yaml")
    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    block = page.split("`scan` as a pre-commit hook", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    config = yaml.safe_load(block)
    hook = config["repos"][0]["hooks"][0]
    assert config["repos"][0]["repo"] == "local" and hook["entry"] == "vcr-transport scan"
    assert {"id", "name", "entry", "language", "files"} <= set(hook)


def test_the_readme_commands_use_the_project_virtualenv() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = [line.strip() for line in readme.splitlines() if "python examples/" in line or "pip install" in line]
    assert commands
    for command in commands:
        assert "python examples/" not in command or ".venv/bin/python examples/" in command, command
