"""Migrating from vcrpy: import of the bodies custom serializers write, per-file refusal with a summary,
vcrpy's matching kept by imported cassettes (and tightened by an option), the plugin's leniencies, the
recorded requests of a test, and the pytest-recording compatibility mode (through pytester)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from vcr_transport._core.format._format import problems
from vcr_transport._storage import read_cassette
from vcr_transport._tools._cli import main

URL = "https://api.example.test/v1/chat"


def exchange(request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    return {
        "request": {"method": "POST", "uri": URL, "headers": {"content-type": ["application/json"]}, **request},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            **response,
        },
    }


def write_yaml(path: Path, interactions: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    return path


def run_import(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["import", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_parsed_json_bodies_come_back_as_the_bytes_the_client_got(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = {"id": "chatcmpl-1", "choices": [{"message": {"content": "héllo"}}]}
    source = write_yaml(
        tmp_path / "parsed.yaml",
        [
            exchange(
                {"parsed_body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}},
                {
                    "parsed_body": answer,
                    "headers": {
                        "content-type": ["application/json"],
                        "content-encoding": ["gzip"],  # stale: the serializer kept the header, not the encoding
                        "content-length": ["9"],
                    },
                },
            )
        ],
    )
    code, out, err = run_import(capsys, str(source), "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert "summary: 1 file converted (1 call), 0 refused" in out
    target = tmp_path / "out" / "parsed.jsonl"
    call = read_cassette(target).calls[0]
    assert call.body == {"json": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}
    sent = json.dumps(yaml.safe_load(source.read_text())["interactions"][0]["response"]["parsed_body"]).encode()
    assert b"".join(call.events) == sent
    headers = dict(call.response_headers)
    assert "content-encoding" not in headers and headers["content-length"] == str(len(sent))
    header = json.loads(target.read_text().splitlines()[0])
    assert header["match_on"] == ["method", "scheme", "host", "port", "path", "query"] and header["ordered"] is False


def test_a_binary_gzip_body_keeps_its_encoding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    packed = gzip.compress(b'{"ok": true}')
    source = write_yaml(
        tmp_path / "gz.yaml",
        [
            exchange(
                {"body": '{"model": "m"}'},
                {
                    "body": {"string": packed},
                    "headers": {"content-type": ["application/json"], "content-encoding": ["gzip"]},
                },
            )
        ],
    )
    assert "!!binary" in source.read_text()
    code, _, err = run_import(capsys, str(source))
    assert code == 0, err
    call = read_cassette(source.with_suffix(".jsonl")).calls[0]
    assert b"".join(call.events) == packed and dict(call.response_headers)["content-encoding"] == "gzip"


def test_a_lost_body_is_refused_a_foreign_file_skipped_and_the_others_converted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "cassettes"
    write_yaml(tree / "good.yaml", [exchange({"body": "{}"}, {"body": {"string": "{}"}})])
    write_yaml(tree / "deep" / "lost.yaml", [exchange({"body": "{}"}, {"headers": {"content-length": ["20"]}})])
    (tree / "grpc.yaml").write_text(yaml.safe_dump({"messages": [{"method": "/svc.Chat/Send"}]}))
    write_yaml(tree / "nobody.yaml", [exchange({}, {"body": {"string": "{}"}})])
    code, out, err = run_import(capsys, str(tree), "--out", str(tmp_path / "out"))
    assert code == 1
    refused = [line for line in err.splitlines() if line.startswith("refused: ")]
    assert len(refused) == 2 and len(err.splitlines()) == 2, err
    assert any("lost.yaml" in line and "response (200) has no body and no parsed body" in line for line in refused)
    assert any("nobody.yaml" in line and "a POST with a JSON content-type has no body" in line for line in refused)
    assert (
        f"skipped: {tree / 'grpc.yaml'}: not a vcrpy cassette (a mapping without 'interactions', keys: messages)"
        in (out.splitlines())
    )
    assert "summary: 1 file converted (1 call), 2 refused: " in out and out.rstrip().endswith(
        "; 1 skipped (not vcrpy cassettes)"
    )
    assert sorted(p.name for p in (tmp_path / "out").rglob("*.jsonl")) == ["good.jsonl"]


def test_verify_notes_bodies_no_real_exchange_lacks(tmp_path: Path) -> None:
    lines = [
        {"type": "header", "format_version": 1},
        {
            "type": "request",
            "call_index": 0,
            "method": "POST",
            "url": URL,
            "headers": [["content-type", "application/json"]],
            "body": None,
        },
        {
            "type": "response",
            "call_index": 0,
            "status": 200,
            "headers": [["content-type", "application/json"], ["content-length", "20"]],
            "http_version": "HTTP/1.1",
        },
        {"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "complete"},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    found = [str(finding) for finding in problems("c.jsonl", [data])]
    assert any("call 0 (POST" in f and "JSON content-type and no body" in f for f in found), found
    assert any("call 0" in f and "content-length 20 and no body" in f for f in found), found


def test_match_on_compares_only_what_it_names_and_only_kept_headers() -> None:
    from vcr_transport import Options

    loose = Options.from_arguments({"match_on": ["method", "path", "headers"]}).matcher()
    recorded = loose.comparable("POST", URL + "?a=1", [("x-kept", "1")], {"json": {"prompt": "old"}})
    same = loose.comparable("POST", URL + "?a=2", [("x-kept", "1"), ("authorization", "x")], {"json": {"p": 1}})
    assert loose.difference(recorded, same) is None  # query and body not compared; authorization was filtered
    changed = loose.comparable("POST", URL, [("x-kept", "2")], None)
    assert loose.difference(recorded, changed) == ("headers.x-kept", "1", "2")
    with pytest.raises(ValueError, match="unknown name.*'bodies'"):
        Options.from_arguments({"match_on": ["bodies"]})
    header = {"type": "header", "format_version": 1, "match_on": ["method"], "ordered": False}
    taken = Options().with_cassette_header(header, (), path="c.jsonl")
    assert taken.match_on == ("method",) and taken.ordered is False
    assert Options(match_on=None).with_cassette_header(header, ("match_on",), path="c.jsonl").match_on is None
    from vcr_transport import CassetteError

    with pytest.raises(CassetteError, match="c.jsonl:1: header field match_on"):
        Options().with_cassette_header({"match_on": "method"}, (), path="c.jsonl")


COMPAT_TESTS = """
import httpx2
import pytest

def answer(request):
    return httpx2.Response(200, json={"echo": request.read().decode()})

def send(*prompts):
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        return [client.post("https://api.example.test/v1/chat", json={"prompt": p}).json() for p in prompts]

pytestmark = pytest.mark.vcr

@pytest.fixture
def vcr_config():
    return {"filter_headers": ["x-team"], "match_on": ["method", "host", "path"]}

@pytest.mark.parametrize("who", ["a-b"])
def test_param(who, vcr):
    send(PROMPT)
    assert [(r.method, r.play_count) for r in vcr.requests] == [("POST", PLAYS)]

def test_no_request_and_no_cassette():
    pass

@pytest.fixture
def skipping():
    pytest.skip("not today")

def test_skipped_in_setup(skipping):
    send("never")
"""


def test_pytest_recording_compat_mode(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    pytester.makeini("[pytest]\nvcr_transport_compat = pytest-recording\nvcr_unplayed = partial\n")
    pytester.makepyfile(test_llm=COMPAT_TESTS.replace("PROMPT", "'hi'").replace("PLAYS", "0"))
    pytester.runpytest_inprocess("--vcr-mode=record", "-p", "no:cassetter").assert_outcomes(passed=2, skipped=1)
    cassette = pytester.path / "cassettes" / "test_llm" / "test_param[a-b].jsonl"
    assert cassette.exists() and "api.example.test" in cassette.read_text()
    assert not (pytester.path / "cassettes" / "test_llm" / "test_no_request_and_no_cassette.jsonl").exists()
    # Replay by default (pytest-recording's none); a changed body still matches, since match_on leaves it out.
    pytester.makepyfile(test_llm=COMPAT_TESTS.replace("PROMPT", "'changed'").replace("PLAYS", "1"))
    pytester.runpytest_inprocess("-p", "no:cassetter").assert_outcomes(passed=2, skipped=1)


def test_an_explicit_ordered_true_overrides_an_imported_header_through_use_cassette(tmp_path: Path) -> None:
    """ordered=True is the default, yet given explicitly it still wins over the header's ordered: false."""
    import httpx2

    import vcr_transport

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"echo": request.read().decode()})

    cassette = tmp_path / "imported.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
            for prompt in ("one", "two"):
                client.post("https://api.example.test/v1/chat", json={"prompt": prompt})
    lines = cassette.read_text().splitlines()
    header = json.loads(lines[0])
    cassette.write_text("\n".join([json.dumps({**header, "ordered": False}), *lines[1:]]) + "\n")

    def replay_out_of_order(**options: Any) -> None:
        with vcr_transport.use_cassette(cassette, mode="replay", unplayed="ignore", **options):
            with httpx2.Client() as client:
                for prompt in ("two", "one"):
                    client.post("https://api.example.test/v1/chat", json={"prompt": prompt})

    replay_out_of_order()  # the header's ordered: false pairs them by content
    with pytest.raises(vcr_transport.ReplayMismatch, match="field body.prompt: recorded 'one', incoming 'two'"):
        replay_out_of_order(ordered=True)


VCRPY_SHAPED_TESTS = """
import httpx2
import pytest

CALLED = []

def pytest_recording_configure(config, vcr):
    CALLED.append(config)
    vcr.register_serializer("yaml", object())  # accepted; no meaning here
    vcr.register_matcher("same_prompt", lambda r1, r2: None)

@pytest.fixture
def vcr_config():
    return {"ignore_localhost": True, "ignore_hosts": ["*.internal.test"]}

def echo(request):
    return httpx2.Response(200, json={"host": request.url.host})

@pytest.mark.vcr
@pytest.mark.parametrize("url", ["http://localhost/v1", "http://127.0.0.1:8000/v1", "https://db.internal.test/x"])
def test_ignored_hosts_go_to_the_clients_transport(url, vcr):
    with httpx2.Client(transport=httpx2.MockTransport(echo)) as client:
        assert client.get(url).json() == {"host": httpx2.URL(url).host}
    assert (len(vcr), vcr.play_count, vcr.record_mode) == (0, 0, "none")

@pytest.mark.vcr
def test_vcrpy_cassette_view(vcr):
    with httpx2.Client(transport=httpx2.MockTransport(echo)) as client:
        client.get("https://api.example.test/one")
    assert (len(vcr), vcr.play_count, dict(vcr.play_counts), vcr.all_played) == (2, 1, {0: 1}, False)
    assert vcr.record_mode == "none" and getattr(vcr, "_path", None) is None
"""


def test_pytest_recording_compat_vcrpy_shapes(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A conftest's pytest_recording_configure is called once, with a stand-in; ignore_localhost and ignore_hosts send
    those requests to the client's own transport with no cassette; ``vcr`` answers as vcrpy's Cassette."""
    import httpx2

    import vcr_transport

    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    pytester.makeini("[pytest]\nvcr_transport_compat = pytest-recording\n")
    cassette = pytester.path / "cassettes" / "test_shapes" / "test_vcrpy_cassette_view.jsonl"
    cassette.parent.mkdir(parents=True)
    with vcr_transport.use_cassette(cassette, mode="record"):
        answer = httpx2.MockTransport(lambda request: httpx2.Response(200, json={"path": request.url.path}))
        with httpx2.Client(transport=answer) as client:
            for path in ("/one", "/two"):
                client.get(f"https://api.example.test{path}")
    conftest, tests = VCRPY_SHAPED_TESTS.split("@pytest.fixture", 1)
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_shapes="import httpx2\nimport pytest\n@pytest.fixture" + tests)
    result = pytester.runpytest_inprocess("-p", "no:cassetter")
    result.assert_outcomes(passed=4)
    # The three tests that needed no cassette are not counted as unreadable ones.
    assert "cassettes: 1 with unplayed calls, which are not checked" in result.stdout.str().replace("\n", " ")
    assert "unreadable" not in result.stdout.str()
    assert sorted(path.name for path in cassette.parent.iterdir()) == ["test_vcrpy_cassette_view.jsonl"]


NORMALISED_TESTS = """
import json
import time

import httpx2
import pytest

def pytest_recording_configure(config, vcr):
    vcr.register_matcher("same_prompt", lambda r1, r2: None)

@pytest.fixture
def vcr_config():
    def scrub(request):
        body = json.loads(request.body)
        body["sent_at"] = "<when>"
        request.body = json.dumps(body).encode()
        return request
    return {"before_record_request": scrub, "match_on": ["method", "path", "same_prompt", "body"]}

@pytest.mark.vcr
def test_prompt(vcr):
    with httpx2.Client() as client:
        reply = client.post("https://api.example.test/v1/chat", json={"q": "hi", "sent_at": time.time()})
    assert reply.json() == {"answer": "hello"}

@pytest.mark.vcr
def test_changed_prompt(vcr):
    with httpx2.Client() as client:
        with pytest.raises(Exception, match="replay mismatch at call 0, field body.q"):
            client.post("https://api.example.test/v1/chat", json={"q": "bye", "sent_at": time.time()})
"""


def test_compat_maps_before_record_request_onto_a_normaliser_and_says_what_it_cannot_map(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vcrpy's before_record_request is applied to both sides before comparing (a timestamp it scrubs
    replays); a registered custom matcher in match_on is left out, said in one line at the end of the run."""
    import httpx2

    import vcr_transport

    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    pytester.makeini("[pytest]\nvcr_transport_compat = pytest-recording\n")
    folder = pytester.path / "cassettes" / "test_normalised"
    folder.mkdir(parents=True)
    for name in ("test_prompt", "test_changed_prompt"):
        with vcr_transport.use_cassette(folder / f"{name}.jsonl", mode="record"):
            answer = httpx2.MockTransport(lambda request: httpx2.Response(200, json={"answer": "hello"}))
            with httpx2.Client(transport=answer) as client:
                client.post("https://api.example.test/v1/chat", json={"q": "hi", "sent_at": 1.0})
    conftest, tests = NORMALISED_TESTS.split("@pytest.mark.vcr", 1)
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_normalised="import time\nimport httpx2\nimport pytest\n@pytest.mark.vcr" + tests)
    result = pytester.runpytest_inprocess("-p", "no:cassetter")
    result.assert_outcomes(passed=2)
    lines = [line for line in result.stdout.lines if "custom matcher" in line]
    assert lines == [
        "vcr_transport can't apply vcrpy's custom matcher(s) 'same_prompt' (a comparison of two requests): the rest "
        "of match_on is compared; a normalize_with function that makes both sides equal where they may differ "
        "stands for one"
    ]


def test_a_replay_transport_refuses_an_ignored_host_it_cannot_send_on(tmp_path: Path) -> None:
    import httpx2

    import vcr_transport
    from vcr_transport import NetworkBlockedError

    cassette = tmp_path / "c.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        with httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200))) as client:
            client.get("https://api.example.test/one")
    replay = vcr_transport.ReplayTransport(cassette, ignore_hosts=["localhost"])
    with httpx2.Client(transport=replay) as client:
        with pytest.raises(NetworkBlockedError, match="ignore_hosts names its host"):
            client.get("http://localhost/x")
        assert client.get("https://api.example.test/one").status_code == 200


# --- pytest-recording's options: --block-network, --allowed-hosts, --disable-recording ------------------

NETWORK_CONFTEST = """
import socket
import pytest
from vcr_transport import _guard

@pytest.fixture(autouse=True)
def sent(monkeypatch):
    '''The real connect behind the guard, replaced by one that sends nothing and notes the address.'''
    reached = []
    def connect(sock, address):
        reached.append(address[0])
        return 0
    monkeypatch.setitem(_guard._REAL, "connect", connect)
    return reached

def dial(host):
    with socket.socket() as sock:
        sock.connect((host, 80))

@pytest.fixture
def guarded():
    return socket.socket.__name__ == "_GuardedSocket"
"""

NETWORK_TESTS = """
import pytest
from conftest import dial

def test_unmarked(sent, guarded, allowed_hosts, record_mode, disable_recording):
    assert guarded and allowed_hosts == ["192[.]0[.]2[.]1$"]
    assert (record_mode, disable_recording) == ("none", False)
    dial("127.0.0.1")  # loopback stays open
    dial("192.0.2.1")  # allowed by --allowed-hosts
    with pytest.raises(RuntimeError) as blocked:
        dial("192.0.2.2")
    assert str(blocked.value).startswith(
        "a connection (connect) to '192.0.2.2':80 was blocked by vcr_transport's network guard (--block-network): "
        "nothing beyond loopback (127.0.0.1, ::1, localhost) and the allowed hosts (re:192[.]0[.]2[.]1$) is reachable"
    )
    assert sent == ["127.0.0.1", "192.0.2.1"]

@pytest.mark.block_network(allowed_hosts=["192[.]0[.]2[.]3$"])
def test_the_marker_wins_over_the_option(sent, guarded):
    dial("192.0.2.3")
    with pytest.raises(RuntimeError, match=r"\\(@pytest.mark.block_network\\)"):
        dial("192.0.2.1")
    assert guarded and sent == ["192.0.2.3"]

@pytest.mark.vcr
def test_a_replayed_cassette_is_guarded_with_the_allowed_hosts(sent, guarded, vcr):
    dial("192.0.2.1")
    with pytest.raises(RuntimeError, match=r"network guard \\(replay mode\\)"):
        dial("192.0.2.2")
    assert guarded and vcr.record_mode == "none" and sent == ["192.0.2.1"]

@pytest.mark.vcr_transport
def test_the_native_marker_is_guarded_with_the_allowed_hosts(sent, guarded):
    dial("192.0.2.1")
    with pytest.raises(RuntimeError, match=r"network guard \\(replay mode\\)"):
        dial("192.0.2.2")
    assert guarded and sent == ["192.0.2.1"]

def test_a_cassette_asked_for_later_is_guarded_with_the_allowed_hosts(sent, request):
    assert request.getfixturevalue("vcr_cassette").mode == "replay"
    dial("192.0.2.1")
    with pytest.raises(RuntimeError, match=r"network guard \\("):
        dial("192.0.2.2")
    assert sent == ["192.0.2.1"]
"""


def _compat_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ini: str = "") -> None:
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini(f"[pytest]\nvcr_transport_compat = pytest-recording\n{ini}")


def test_block_network_in_addopts_starts_and_guards_every_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """crewAI's addopts carry --block-network: the suite starts, tests without a cassette are guarded (loopback
    open, --allowed-hosts let through), the marker's allowed_hosts win, and a replayed cassette is guarded with
    the same allowed hosts (pytest-recording's marker, ours, and ``vcr_cassette`` asked for in the test)."""
    _compat_project(pytester, monkeypatch, "addopts = --block-network --allowed-hosts=192[.]0[.]2[.]1$\n")
    pytester.makeconftest(NETWORK_CONFTEST)
    pytester.makepyfile(test_net=NETWORK_TESTS)
    folder = pytester.path / "cassettes" / "test_net"
    folder.mkdir(parents=True)
    for test in ("a_replayed_cassette", "the_native_marker", "a_cassette_asked_for_later"):
        header = json.dumps({"type": "header", "format_version": 1})
        (folder / f"test_{test}_is_guarded_with_the_allowed_hosts.jsonl").write_text(header + "\n")
    result = pytester.runpytest_inprocess("-p", "no:cassetter")
    result.assert_outcomes(passed=5)


RECORDING_TESTS = """
import socket
import httpx2
import pytest

def live(request):
    return httpx2.Response(200, json={"answer": "live"})

def ask():
    with httpx2.Client(transport=httpx2.MockTransport(live)) as client:
        return client.get("https://api.example.test/v1/models").json()["answer"]

@pytest.mark.vcr
def test_vcr(vcr):
    print("answer:", ask(), "guarded:", socket.socket.__name__ == "_GuardedSocket", "mode:", vcr.mode)

def test_unmarked():
    print("unmarked guarded:", socket.socket.__name__ == "_GuardedSocket")

@pytest.mark.vcr_transport
def test_native_marker():
    print("native answer:", ask(), "guarded:", socket.socket.__name__ == "_GuardedSocket")
"""


def test_a_recording_cassette_is_never_guarded_and_disable_recording_turns_cassettes_off(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--block-network with a record mode: the vcr test records unguarded, the others are guarded.
    --disable-recording: the vcr test meets its client's own transport, and no cassette is read or written."""
    _compat_project(pytester, monkeypatch)
    pytester.makepyfile(test_rec=RECORDING_TESTS)
    cassette = pytester.path / "cassettes" / "test_rec" / "test_vcr.jsonl"
    result = pytester.runpytest_inprocess(
        "-p", "no:cassetter", "-s", "--block-network", "--record-mode=all", "--vcr-mode=record"
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["*answer: live guarded: False mode: record", "*unmarked guarded: True", "*native answer: live guarded: False"]
    )
    assert '{\\"answer\\":\\"live\\"}' in cassette.read_text()
    recorded = cassette.read_bytes()
    pytester.makepyfile(test_rec=RECORDING_TESTS.replace('"live"', '"real network"'))
    result = pytester.runpytest_inprocess(
        "-p", "no:cassetter", "-s", "--block-network", "--disable-recording", "-k", "not native"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*answer: real network guarded: False mode: off", "*unmarked guarded: True"])
    assert cassette.read_bytes() == recorded
    result = pytester.runpytest_inprocess("-p", "no:cassetter", "-s", "--vcr-mode=replay")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["*answer: live guarded: True mode: replay", "*unmarked guarded: False", "*native answer: live guarded: True"]
    )


def test_pytest_recordings_options_are_refused_outside_the_compat_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cassetter", "--block-network", "--allowed-hosts=x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --block-network, --allowed-hosts: pytest-recording's option(s), which vcr_transport serves in "
            "its compatibility mode only; add 'vcr_transport_compat = pytest-recording' to the pytest "
            "configuration, or use --vcr-mode"
        ]
    )


@pytest.mark.parametrize(
    ("marker", "option", "expected"),
    [
        (
            "@pytest.mark.block_network('x')",
            "",
            "@pytest.mark.block_network of test_bad.py::test_x takes only the keyword argument allowed_hosts; got "
            "args ('x',), kwargs {}",
        ),
        (
            "@pytest.mark.block_network(hosts=['x'])",
            "",
            "@pytest.mark.block_network of test_bad.py::test_x takes only the keyword argument allowed_hosts; got "
            "args (), kwargs {'hosts': ['x']}",
        ),
        (
            "",
            "--allowed-hosts=api.(x",
            "--allowed-hosts: 'api.(x' is not a regular expression: missing ), unterminated subpattern at position 4",
        ),
    ],
)
def test_a_wrong_block_network_marker_or_allowed_hosts_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, marker: str, option: str, expected: str
) -> None:
    _compat_project(pytester, monkeypatch)
    pytester.makepyfile(test_bad=f"import pytest\n{marker}\ndef test_x():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cassetter", "--block-network", *([option] if option else []))
    result.assert_outcomes(errors=1)
    errors = [line.removeprefix("E").strip() for line in result.stdout.lines if line.startswith("E ")]
    assert f"pytest.UsageError: {expected}" in errors, result.stdout.str()


# --- unplayed calls and caught mismatches in the compat mode ---------------------------------------------

LENIENT_TESTS = """
import httpx2
import pytest

def answer(request):
    return httpx2.Response(200, json={"ok": True})

def ask(*prompts):
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        for prompt in prompts:
            try:
                client.post("https://api.example.test/v1/chat", json={"prompt": prompt})
            except Exception:
                pass  # a tracing exporter that swallows every error, as crewAI's does

@pytest.mark.vcr
def test_fewer_calls():
    ask(PROMPTS)
"""


def test_compat_checks_no_unplayed_calls_and_leaves_a_caught_mismatch(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vcrpy parity: a cassette with stale extra calls passes, and so does a test whose code caught a mismatch;
    the ini settings turn each check on."""
    _compat_project(pytester, monkeypatch)
    pytester.makepyfile(test_lenient=LENIENT_TESTS.replace("PROMPTS", "'a', 'b', 'c'"))
    pytester.runpytest_inprocess("-p", "no:cassetter", "--record-mode=all").assert_outcomes(passed=1)
    pytester.makepyfile(test_lenient=LENIENT_TESTS.replace("PROMPTS", "'a'"))
    result = pytester.runpytest_inprocess("-p", "no:cassetter")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["cassettes: 1 with unplayed calls, which are not checked (vcr_unplayed = ignore)"])
    result = pytester.runpytest_inprocess("-p", "no:cassetter", "-o", "vcr_unplayed=partial")
    result.assert_outcomes(failed=1)  # the test fails when its body ends, not at teardown
    result.stdout.fnmatch_lines(["E   2 recorded call(s) were never played from *test_fewer_calls.jsonl:"])
    pytester.makepyfile(test_lenient=LENIENT_TESTS.replace("PROMPTS", "'a', 'changed', 'c'"))
    result = pytester.runpytest_inprocess("-p", "no:cassetter")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["cassettes: 1 with a replay mismatch"])
    result = pytester.runpytest_inprocess("-p", "no:cassetter", "-o", "vcr_caught_mismatch=raise")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E   replay mismatch at call 1, field body.prompt: recorded 'b', incoming 'changed'"])


# --- prune keeps the cassette of a test skipped by a mark -----------------------------------------------

SKIPPED_TESTS = """
import httpx2
import pytest

def ask(prompt):
    with httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(200, json={"ok": True}))) as client:
        client.post("https://api.example.test/v1/chat", json={"prompt": prompt})

@pytest.mark.vcr
def test_kept():
    ask("a")

MARK
@pytest.mark.vcr
def test_later():
    ask("b")

@pytest.mark.vcr("shared_name.yaml")
MARK
def test_named():
    ask("c")
"""


def test_prune_keeps_the_cassette_of_a_test_skipped_by_a_mark(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pytest-recording test skipped by ``@pytest.mark.skip`` never opens its cassette, yet claims it: prune
    offers nothing of it, and un-skipping the test later finds it replaying."""
    _compat_project(pytester, monkeypatch)
    pytester.makepyfile(test_skips=SKIPPED_TESTS.replace("MARK\n", ""))
    pytester.runpytest_inprocess("-p", "no:cassetter", "--record-mode=all").assert_outcomes(passed=3)
    folder = pytester.path / "cassettes" / "test_skips"
    assert sorted(p.name for p in folder.iterdir()) == ["shared_name.jsonl", "test_kept.jsonl", "test_later.jsonl"]
    skipped = SKIPPED_TESTS.replace("MARK", '@pytest.mark.skip(reason="flaky upstream")')
    pytester.makepyfile(test_skips=skipped)
    pytester.runpytest_inprocess("-p", "no:cassetter").assert_outcomes(passed=1, skipped=2)
    capsys.readouterr()
    monkeypatch.chdir(pytester.path)
    assert main(["prune", "--yes"]) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in folder.iterdir()) == ["shared_name.jsonl", "test_kept.jsonl", "test_later.jsonl"], out
    pytester.makepyfile(test_skips=SKIPPED_TESTS.replace("MARK\n", ""))
    pytester.runpytest_inprocess("-p", "no:cassetter").assert_outcomes(passed=3)


# --- a custom matcher under a built-in name; the pyproject form of the compat switch ---------------------

REGION_CONFTEST = """
import re

def pytest_recording_configure(config, vcr):
    def host(r1, r2):  # pydantic-ai's: the same service in any Bedrock region
        region = r"\\\\.[a-z]+-[a-z]+-\\\\d\\\\."
        assert re.sub(region, ".", r1.host) == re.sub(region, ".", r2.host)
    vcr.register_matcher("host", host)
"""

REGION_TESTS = """
import httpx2
import pytest

@pytest.mark.vcr
def test_converse():
    with httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(200, json={"ok": True}))) as client:
        client.post("https://bedrock-runtime.REGION.amazonaws.com/model/m/converse", json={"prompt": "hi"})
"""

REGION_PATTERN = r"bedrock-runtime\\.[a-z0-9-]+\\.amazonaws\\.com"


def test_a_custom_matcher_under_a_built_in_name_is_reported_and_a_pattern_stands_for_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pydantic-ai registers its own ``host`` matcher (any Bedrock region): the summary says it can't be
    applied, the host is compared plainly (a cassette recorded in another region mismatches at url.host), and
    ``normalize_patterns`` in ``[tool.vcr_transport]`` serves the case. The compat switch is given in
    ``[tool.pytest.ini_options]``, as the guide's step 3 shows."""
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    ini = '[tool.pytest.ini_options]\nvcr_transport_compat = "pytest-recording"\n'
    pytester.makepyprojecttoml(ini)
    pytester.makeconftest(REGION_CONFTEST)
    pytester.makepyfile(test_bedrock=REGION_TESTS.replace("REGION", "us-east-1"))
    pytester.runpytest_inprocess("-p", "no:cassetter", "--record-mode=all").assert_outcomes(passed=1)
    pytester.makepyfile(test_bedrock=REGION_TESTS.replace("REGION", "eu-west-3"))
    result = pytester.runpytest_inprocess("-p", "no:cassetter")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E   *replay mismatch at call 0, field url.host: recorded 'bedrock-runtime.us-east-1.amazonaws.com'*",
            "vcr_transport can't apply the custom matcher(s) registered under vcrpy's built-in name(s) 'host': "
            "those fields are compared plainly; where a matcher ignored part of a value (a region or project in a "
            "host or path), normalize_patterns in [tool.vcr_transport] replaces it on both sides (see the vcrpy "
            "migration guide)",
        ]
    )
    region = f'[["{REGION_PATTERN}", "bedrock-runtime.<region>.amazonaws.com"]]'
    pytester.makepyprojecttoml(f"{ini}\n[tool.vcr_transport]\nnormalize_patterns = {region}\n")
    pytester.runpytest_inprocess("-p", "no:cassetter").assert_outcomes(passed=1)
