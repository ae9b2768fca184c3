"""A recording survives forks: a forked child's calls are refused at once, naming the cassette and how to
record with workers, and whatever the child does (calls, exits by os._exit, sys.exit or the program's end,
with atexit hooks and finalizers) the parent's cassette holds the parent's calls exactly once and replays.
Real openai clients in real processes (multiprocessing fork workers, ProcessPoolExecutor, os.fork) against
the loopback upstream."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2
import openai
import pytest
from helpers import cassette_lines
from upstream import Upstream
from vendors import OPENAI_KEY

import vcr_transport
from vcr_transport._storage import read_cassette

CHILD = Path(__file__).resolve().parents[1] / "fork_recording_child.py"
WAYS = ["pool", "executor", "os_exit", "sys_exit", "return", "silent", "mid_stream", "miss"]


def run(way: str, cassette: Path, url: str) -> list[str]:
    environment = {**os.environ, "PYTHONPATH": str(Path(vcr_transport.__file__).parent.parent)}
    done = subprocess.run(
        [sys.executable, "-W", "error", str(CHILD), way, str(cassette), url],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.slow
def test_a_forked_childs_calls_are_refused_and_the_parents_cassette_is_whole(
    way: str, upstream: Upstream, tmp_path: Path
) -> None:
    cassette = tmp_path / "chat.jsonl"
    out = run(way, cassette, upstream.url)
    assert out[-1] == "parent done"
    refusals = [line for line in out if line.startswith("refused")]
    assert not [line for line in out if line.startswith("answered")], "a child's call went through"
    expected = {"pool": 3, "executor": 3, "silent": 0, "mid_stream": 1}.get(way, 1)
    assert len(refusals) == expected
    for refusal in refusals:
        assert str(cassette) in refusal and "is a fork of it" in refusal
        assert "a cassette of its own" in refusal and "'spawn'" in refusal
    if way == "mid_stream":
        assert any(line.startswith("streamed") and "echo:streamed" in line for line in out)
    if way == "miss":
        assert "replayed echo:first" in out, "a forked child replays from its parent's session"

    # The upstream saw the parent's calls only: no child's request left its process.
    prompts = [r.json()["messages"][-1]["content"] for r in upstream.received]
    parents = ["first", *(["streamed"] if way == "mid_stream" else []), "second"]
    assert prompts == parents

    # One request line per call index, in order, and the file reads and replays.
    requests = [line["call_index"] for line in cassette_lines(cassette) if line["type"] == "request"]
    assert requests == list(range(len(parents)))
    assert [call.outcome for call in read_cassette(cassette).calls] == ["complete"] * len(parents)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    replay = httpx2.Client(transport=vcr_transport.transport(cassette, mode="replay"))
    with openai.OpenAI(api_key=OPENAI_KEY, base_url=upstream.url + "/v1", http_client=replay) as client:
        for prompt in parents:
            kwargs = {"stream": True} if prompt == "streamed" else {}
            answer = client.chat.completions.create(
                model="test-model", messages=[{"role": "user", "content": prompt}], **kwargs
            )
            if prompt != "streamed":
                assert answer.choices[0].message.content == f"echo:{prompt}"  # type: ignore[union-attr]
            else:
                list(answer)  # type: ignore[call-overload]
    assert len(upstream.received) == len(parents), "replay reached the upstream"
