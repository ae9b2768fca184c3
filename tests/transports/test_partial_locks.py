"""A recording's temporary file belongs to whoever holds its lock, not to a process id: a second recorder's
cleanup keeps the partial of a live recorder in another process (also one in another PID namespace, whose
pid means nothing here) and removes the partial of one that was killed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from upstream import Reply, Upstream

import vcr_transport
from vcr_transport._storage import read_cassette

# A live recorder: it records one call, says which partial file it writes and its own pid, then waits.
HOLDER = """
import os, sys, httpx2, vcr_transport
cassette, url = sys.argv[1], sys.argv[2]
client = httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette))
client.get(url)
folder = os.path.dirname(cassette)
partial = [n for n in os.listdir(folder) if n.endswith(".partial")]
print(os.getpid(), *partial, flush=True)
sys.stdin.readline()
client.close()
print("closed", flush=True)
"""


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(["unshare", "-rpf", "--mount-proc", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def start_holder(cassette: Path, url: str, *, namespace: bool = False) -> tuple[subprocess.Popen[str], int, str]:
    """A recorder in another process (in a PID namespace of its own with ``namespace``): the process, the pid
    it sees for itself, and the name of its partial file."""
    environment = {**os.environ, "PYTHONPATH": str(Path(vcr_transport.__file__).parent.parent)}
    prefix: list[str] = []
    if namespace:
        # Inside, the recorder gets the pid of a process that has just died out here: a pid guess made out here
        # ("is process N alive?") says its partial is stale.
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        script = 'echo "$0" > /proc/sys/kernel/ns_last_pid && "$@"; status=$?; exit $status'
        prefix = ["unshare", "-rpf", "--mount-proc", "sh", "-c", script, str(dead.pid - 1)]
    child = subprocess.Popen(
        [*prefix, sys.executable, "-c", HOLDER, str(cassette), url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    assert child.stdout is not None
    line = child.stdout.readline().split()
    assert len(line) == 2, child.communicate(timeout=30)
    return child, int(line[0]), line[1]


def record_again(cassette: Path, url: str) -> None:
    """A second recorder of the same cassette: its writer cleans up stale partials when it starts."""
    with httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)) as client:
        client.get(url)


def partials(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


@pytest.fixture
def short(upstream: Upstream) -> str:
    upstream.routes["/short"] = lambda r: Reply(200, [("content-type", "text/event-stream")], [b"data: 1\n\n"])
    return upstream.url + "/short"


@pytest.mark.parametrize(
    "namespace",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.skipif(not _unshare_works(), reason="unshare -rpf --mount-proc does not work here"),
        ),
    ],
    ids=["other-process", "other-pid-namespace"],
)
def test_a_live_recorders_partial_survives_another_recorders_cleanup(
    namespace: bool, short: str, tmp_path: Path
) -> None:
    cassette = tmp_path / "chat.jsonl"
    child, own_pid, partial = start_holder(cassette, short, namespace=namespace)
    try:
        assert partial.startswith(f".chat.jsonl.{own_pid}.")
        if namespace:  # the pid in its name is the namespace's: no process of ours has it
            assert own_pid != child.pid and not Path(f"/proc/{own_pid}").exists()
        record_again(cassette, short)
        assert partial in partials(tmp_path), "the live recorder's partial file was removed"
        out, err = child.communicate("\n", timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate(timeout=30)
    assert out.strip() == "closed", err
    assert partials(tmp_path) == [], "the live recorder committed its partial file"
    assert len(read_cassette(cassette).calls) == 1


def test_a_killed_recorders_partial_is_removed_by_the_next_recording(short: str, tmp_path: Path) -> None:
    cassette = tmp_path / "chat.jsonl"
    child, _, partial = start_holder(cassette, short)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert partials(tmp_path) == [partial], "SIGKILL left the partial file behind"
    record_again(cassette, short)
    assert partials(tmp_path) == []
    assert len(read_cassette(cassette).calls) == 1


def test_a_recorder_in_this_process_keeps_its_partial_while_another_cleans_up(short: str, tmp_path: Path) -> None:
    cassette = tmp_path / "chat.jsonl"
    first = httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette))
    first.get(short)
    [held] = partials(tmp_path)
    record_again(cassette, short)  # the same cassette, a second recorder: it must not take the first's file
    assert held in partials(tmp_path)
    first.close()
    assert partials(tmp_path) == []
    assert len(read_cassette(cassette).calls) == 1
