"""The network guard under the pytest plugin, inside a network namespace (``unshare -rn``, 10.99.0.1 on
``lo`` standing for a remote host, a server there): ``--vcr-block-network=session`` (and its ini and
``[tool.vcr_transport]`` forms) keeps a replayed test's thread and ``atexit`` hook offline after the test,
``block_network=False`` on the marker turns the guard off for a test, and ``allowed_hosts`` (marker, ini,
``[tool.vcr_transport]``) let a replayed test reach those hosts."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from netns_attack import namespace_unavailable

CONFTEST = """
import socket, threading

server = socket.create_server(("10.99.0.1", 8080))

def serve():
    while True:
        connection, _ = server.accept()
        with connection:
            connection.settimeout(5)
            connection.recv(10)
            connection.sendall(b"hello")

threading.Thread(target=serve, daemon=True).start()
"""

REACH = """
import pathlib, socket

def attempt(name=None):
    try:
        with socket.create_connection(("10.99.0.1", 8080), timeout=5) as sock:
            sock.sendall(b"x")
            result = "reached " + sock.recv(10).decode()
    except Exception as error:
        result = type(error).__name__
    if name:
        (pathlib.Path(__file__).parent / f"{name}.out").write_text(result)
    return result
"""

LATE = """
import atexit, threading
import pytest
from reach import attempt

go = threading.Event()
thread = threading.Thread(target=lambda: (go.wait(30), attempt("thread")))

@pytest.mark.vcr_transport(path="empty.jsonl")
def test_replayed_leaves_a_thread_and_an_atexit_hook():
    assert attempt() == "NetworkBlockedError"
    thread.start()
    atexit.register(attempt, "atexit")

def test_later_the_thread_connects():
    go.set()
    thread.join()
"""


def _pytest_in_namespace(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    setup = 'ip addr add 10.99.0.1/32 dev lo && ip link set lo up && exec "$@"'
    command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", *args]
    return pytester.run("unshare", "-rn", "sh", "-c", setup, "sh", *command, timeout=120)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    why = namespace_unavailable()
    if why:
        pytest.skip(f"no network namespace: {why}")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(reach=REACH)
    (pytester.path / "empty.jsonl").write_text(json.dumps({"type": "header", "format_version": 1}) + "\n")
    return pytester


def _outcome(folder: Path, name: str) -> str:
    return (folder / f"{name}.out").read_text()


@pytest.mark.parametrize("where", ["command line", "ini", "pyproject"])
@pytest.mark.slow
def test_session_guard_keeps_threads_and_atexit_hooks_of_replayed_tests_offline(
    project: pytest.Pytester, where: str
) -> None:
    project.makepyfile(test_late=LATE)
    args = ["--vcr-mode=replay"]
    if where == "command line":
        args.append("--vcr-block-network=session")
    elif where == "ini":
        project.makeini("[pytest]\nvcr_block_network = session\n")
    else:
        project.makepyprojecttoml('[tool.vcr_transport]\nblock_network = "session"\n')
    result = _pytest_in_namespace(project, *args)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert _outcome(project.path, "thread") == "NetworkBlockedError"
    assert _outcome(project.path, "atexit") == "NetworkBlockedError"


@pytest.mark.slow
def test_without_the_session_guard_the_thread_and_the_atexit_hook_reach_the_host(project: pytest.Pytester) -> None:
    """The attack is real: with the per-test guard (the default), both reach the server once the test is over."""
    project.makepyfile(test_late=LATE)
    result = _pytest_in_namespace(project, "--vcr-mode=replay", "--vcr-block-network=true")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert _outcome(project.path, "thread") == "reached hello"
    assert _outcome(project.path, "atexit") == "reached hello"


@pytest.mark.slow
def test_session_guard_pauses_for_a_test_that_records_or_turns_it_off(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_order="""
        import httpx2
        import pytest
        from reach import attempt

        @pytest.mark.vcr_transport(path="empty.jsonl")
        def test_1_replayed():
            assert attempt() == "NetworkBlockedError"

        def test_2_unmarked_after_a_replayed_test_is_guarded():
            assert attempt() == "NetworkBlockedError"

        @pytest.mark.vcr_transport(path="new.jsonl", mode="record")
        def test_3_recording_reaches_the_network():
            assert attempt() == "reached hello"
            answer = lambda request: httpx2.Response(200, json={"ok": True})
            with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
                assert client.get("https://api.example.test/v1/models").json() == {"ok": True}

        @pytest.mark.vcr_transport(path="empty.jsonl", block_network=False)
        def test_4_guard_off_reaches_the_network():
            assert attempt() == "reached hello"

        def test_5_guarded_again():
            assert attempt() == "NetworkBlockedError"
        """
    )
    result = _pytest_in_namespace(project, "--vcr-mode=replay", "--vcr-block-network=session")
    result.assert_outcomes(passed=5)


@pytest.mark.slow
def test_marker_ini_and_pyproject_allowed_hosts_and_block_network_false(project: pytest.Pytester) -> None:
    project.makepyprojecttoml(
        textwrap.dedent(
            """
            [tool.vcr_transport]
            allowed_hosts = ["10.99.0.2"]

            [tool.pytest.ini_options]
            vcr_allowed_hosts = "10.99.0.3 *.internal"
            """
        )
    )
    project.makepyfile(
        test_hosts=textwrap.dedent(
            """
            import socket
            import pytest
            from vcr_transport import NetworkBlockedError
            from vcr_transport import _guard
            from reach import attempt

            @pytest.mark.vcr_transport(path="empty.jsonl")
            def test_blocked_by_default():
                assert attempt() == "NetworkBlockedError"

            @pytest.mark.vcr_transport(path="empty.jsonl", allowed_hosts=["10.99.0.1:8080"])
            def test_marker_allows_the_host_and_port():
                assert attempt() == "reached hello"
                with pytest.raises(NetworkBlockedError):
                    socket.create_connection(("10.99.0.1", 8081))

            @pytest.mark.vcr_transport(path="empty.jsonl", block_network=False)
            def test_marker_turns_the_guard_off():
                assert attempt() == "reached hello"

            @pytest.mark.vcr_transport(path="empty.jsonl")
            def test_ini_and_pyproject_hosts_are_allowed():
                rules = {rule.text for start in _guard._starts for rule in start.rules}
                assert rules == {"10.99.0.2", "10.99.0.3", "*.internal"}
                assert attempt() == "NetworkBlockedError"
            """
        )
    )
    result = _pytest_in_namespace(project, "--vcr-mode=replay")
    result.assert_outcomes(passed=4)


def test_a_wrong_block_network_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_wrong="""
        import pytest

        @pytest.mark.vcr_transport(path="empty.jsonl", block_network="always")
        def test_it():
            pass
        """
    )
    result = pytester.runpytest("--vcr-mode=replay")
    result.stdout.fnmatch_lines(["*block_network*must be one of true, false, session, not 'always'*"])


@pytest.mark.slow
def test_the_readmes_namespace_one_liner_keeps_loopback_and_closes_what_the_guard_cannot_see(
    pytester: pytest.Pytester,
) -> None:
    """README: ``unshare -rn sh -c 'ip link set lo up && pytest'``: loopback servers work, and a subprocess
    (out of the guard's reach) can't reach a remote address."""
    why = namespace_unavailable()
    if why:
        pytest.skip(f"no network namespace: {why}")
    pytester.makepyfile(
        test_closed="""
        import socket, subprocess, sys

        def test_loopback_works_and_a_subprocess_reaches_nothing():
            with socket.create_server(("127.0.0.1", 0)) as server:
                socket.create_connection(server.getsockname(), timeout=5).close()
            leak = "import socket; socket.create_connection(('192.0.2.1', 80), timeout=5)"
            child = subprocess.run([sys.executable, "-c", leak], capture_output=True, text=True)
            assert child.returncode != 0 and "Network is unreachable" in child.stderr
        """
    )
    command = f"ip link set lo up && {sys.executable} -m pytest -p no:randomly -p no:cacheprovider"
    result = pytester.run("unshare", "-rn", "sh", "-c", command, timeout=120)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*1 passed*"])
