"""``vcr-transport drift``: each recorded request sent again to a live upstream, the answer's shape compared with
the recording's. The cassettes are recorded with the real SDKs through loopback servers with the vendors' real
header sets (``upstream``), then put on the vendors' real hosts as a real recording has them; the upstreams are
named with ``--upstream`` (one serves the API as recorded, one a changed API). Every test resolves names through
``lookups``, which records each name and answers with loopback, so that no test reaches the network.

The hostile cassettes are what a pull request could bring: a recorded call moved to a host of its choosing, its
removed credential left where drift used to put the key back. An ``attacker`` listener on loopback stands in for
that host (each attacker name resolves to it): it must see no connection, and the resolver no lookup of its name.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from helpers import recording
from test_cli import ANTHROPIC, OPENAI, cli
from upstream import Received, Reply, Upstream
from vendors import SDKS, VENDOR_ROUTES, openai_reply, sse

from vcr_transport._core.engine._call_recording import CallBook
from vcr_transport._core.engine._websocket import SessionRecording
from vcr_transport._core.format._format import encode_line
from vcr_transport._core.rules._redaction import PLACEHOLDER, Redactor
from vcr_transport._core.views._shape import Shape, answer_shape, compare_shapes
from vcr_transport._core.views._view import call_view
from vcr_transport._storage import read_cassette

GENAI = next(s for s in SDKS if s.name == "genai" and s.library is httpx2 and s.side == "sync")
KEYS = {
    "OPENAI_API_KEY": "sk-proj-LIVEopenaiKEY0123456789abcdefghij",
    "AZURE_OPENAI_API_KEY": "0123456789abcdef0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-api03-LIVEanthropicKEY0123456789abc",
    "GEMINI_API_KEY": "AIzaSyLIVEgeminiKEY0123456789abcdefghi",
}
# The hosts a real recording has.
REAL_BASES = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "genai": "https://generativelanguage.googleapis.com",
}


def _changed_openai(received: Received) -> Reply:
    """The chat API after a change: ``usage.prompt_tokens`` a string, a new ``service_tier``, and streams
    with a new event type before the last."""
    body = received.json()
    if not body.get("stream"):
        reply = openai_reply(received)
        answer = json.loads(b"".join(reply.chunks))
        answer["usage"]["prompt_tokens"] = "1"
        answer["service_tier"] = "default"
        return Reply.json(answer)
    events: list[tuple[str | None, Any]] = [
        (None, {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "echo"}}]}),
        ("response.keepalive", {"type": "keepalive"}),
        (None, "[DONE]"),
    ]
    return Reply(200, [("content-type", "text/event-stream")], [sse(events)])


def rewrite(source: Path, target: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """``source`` written to ``target`` with ``change`` applied to each request line, as a pull request would
    change a cassette (the lines stay as the format writes them)."""
    lines = []
    for text in source.read_text(encoding="utf-8").splitlines():
        line = json.loads(text)
        if line["type"] == "request":
            change(line)
        lines.append(json.dumps(line, separators=(",", ":"), ensure_ascii=False))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def _rebased(base: str) -> Callable[[dict[str, Any]], None]:
    def change(line: dict[str, Any]) -> None:
        parts = urlsplit(line["url"])
        line["url"] = base + parts.path + (f"?{parts.query}" if parts.query else "")

    return change


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with an openai cassette (a chat and a stream), an anthropic one (a stream) and a Gemini one (a
    chat), recorded through the SDKs and then put on the vendors' real hosts."""
    folder = tmp_path_factory.mktemp("drift")
    server = Upstream()
    for prefix, reply in VENDOR_ROUTES.values():
        server.routes[prefix] = reply
    server.start()
    try:
        OPENAI.run(recording(httpx2, False, folder / "o.jsonl"), server.url, [("chat", ["hi"]), ("stream", ["hi"])])
        ANTHROPIC.run(recording(httpx2, True, folder / "a.jsonl"), server.url, [("stream", ["hello"])])
        GENAI.run(recording(httpx2, False, folder / "g.jsonl"), server.url, [("chat", ["hey"])])
    finally:
        server.stop()
    for short, name in (("o", "openai"), ("a", "anthropic"), ("g", "genai")):
        rewrite(folder / f"{short}.jsonl", folder / f"{name}.jsonl", _rebased(REAL_BASES[name]))
        (folder / f"{short}.jsonl").unlink()
    return folder


def _serving(*routes: tuple[str, Any]) -> Iterator[Upstream]:
    server = Upstream()
    for prefix, reply in routes:
        server.routes[prefix] = reply
    yield server.start()
    server.stop()


@pytest.fixture
def same_api() -> Iterator[Upstream]:
    yield from _serving(*VENDOR_ROUTES.values())


@pytest.fixture
def changed_api() -> Iterator[Upstream]:
    yield from _serving(("/v1/chat/completions", _changed_openai))


class Lookups(list[str]):
    """The names resolved during a test; each resolves to loopback, so nothing leaves the machine."""


@pytest.fixture(autouse=True)
def lookups(monkeypatch: pytest.MonkeyPatch) -> Lookups:
    seen = Lookups()
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        seen.append(name)
        if name == "unresolvable.example":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real("127.0.0.1", port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return seen


class Listener:
    """A loopback port standing in for the attacker's host: it counts the connections made to it and keeps
    what they sent."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen()
        self.socket.settimeout(0.05)
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        self.received = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            with connection:
                connection.settimeout(0.5)
                try:
                    self.received += connection.recv(65536)
                except OSError:
                    pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.socket.close()


@pytest.fixture
def attacker() -> Iterator[Listener]:
    listener = Listener()
    yield listener
    listener.stop()


def test_an_api_answering_as_recorded_has_an_identical_shape(
    recorded: Path, same_api: Upstream, lookups: Lookups
) -> None:
    before = {path.name: path.read_bytes() for path in recorded.iterdir()}
    result = cli(
        recorded,
        "drift",
        "openai.jsonl",
        "anthropic.jsonl",
        "genai.jsonl",
        "--upstream",
        f"openai={same_api.url}",
        "--upstream",
        f"anthropic={same_api.url}",
        "--upstream",
        f"google={same_api.url}",
        env=KEYS,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[:4] == [
        "openai.jsonl call 0: POST https://api.openai.com/v1/chat/completions: identical shape",
        "openai.jsonl call 1: POST https://api.openai.com/v1/chat/completions: identical shape",
        "anthropic.jsonl call 0: POST https://api.anthropic.com/v1/messages: identical shape",
        "genai.jsonl call 0: POST https://generativelanguage.googleapis.com/v1/models/test-model:generateContent: "
        "identical shape",
    ]
    assert lines[-1] == "4 calls in 3 cassettes: 4 identical, 0 changed, 0 not checked, 0 skipped"
    # Each removed credential was put back from its vendor's variable, where that vendor takes it.
    by_path = {r.path: r.headers for r in same_api.received}
    assert [r.headers.get("authorization") for r in same_api.received if "chat" in r.path] == [
        "Bearer " + KEYS["OPENAI_API_KEY"]
    ] * 2
    assert by_path["/v1/messages"]["authorization"] == "Bearer " + KEYS["ANTHROPIC_API_KEY"]
    assert by_path["/v1/models/test-model:generateContent"]["x-goog-api-key"] == KEYS["GEMINI_API_KEY"]
    assert [r.json()["messages"][-1]["content"] for r in same_api.received if "chat" in r.path] == ["hi", "hi"]
    assert {path.name: path.read_bytes() for path in recorded.iterdir()} == before
    assert set(lookups) == {"127.0.0.1"}  # the vendors' hosts were never looked up


def test_a_changed_api_is_reported_by_field_path(recorded: Path, changed_api: Upstream) -> None:
    result = cli(recorded, "drift", "openai.jsonl", "--upstream", f"openai={changed_api.url}", env=KEYS)
    assert result.returncode == 1, result.stdout + result.stderr
    text = result.stdout
    assert "openai.jsonl call 0: POST" in text and "changed shape" in text
    assert "  body.usage.prompt_tokens: integer -> string" in text
    assert "  body.service_tier: - -> string" in text
    assert "  events[response.keepalive]: - -> object" in text  # a new event type
    assert "  events[chat.completion.chunk].choices[*].finish_reason: null|string -> -" in text
    document = json.loads(
        cli(recorded, "drift", "openai.jsonl", "--upstream", f"openai={changed_api.url}", "--json", env=KEYS).stdout
    )
    assert document["json_version"] == 1 and document["cassettes"] == 1
    first = document["calls"][0]
    assert first["path"] == "openai.jsonl" and first["call"] == 0 and first["outcome"] == "changed"
    assert first["skipped"] is None and first["error"] is None
    assert {"field_path": "body.usage.prompt_tokens", "recorded": "integer", "live": "string"} in first["changes"]


def test_a_removed_credential_without_a_key_is_not_sent(recorded: Path, same_api: Upstream) -> None:
    env = {"OPENAI_API_KEY": "", "AZURE_OPENAI_API_KEY": "sk-azure-is-not-openai"}
    result = cli(recorded, "drift", "openai.jsonl", "--upstream", f"openai={same_api.url}", env=env)
    assert result.returncode == 2
    assert "not checked: its credential was removed and none of OPENAI_API_KEY is set: set one" in result.stdout
    assert same_api.received == []


def test_an_upstream_that_refuses_connections_is_trouble(recorded: Path) -> None:
    from upstream import free_port

    result = cli(recorded, "drift", "openai.jsonl", "--upstream", f"openai=http://127.0.0.1:{free_port()}", env=KEYS)
    assert result.returncode == 2 and "not checked: ConnectError" in result.stdout


@pytest.mark.parametrize(
    ("upstream", "problem"),
    [
        ("mistral=http://127.0.0.1:1", "the vendor is one of openai, azure, anthropic, gemini, vertex, bedrock"),
        ("openai=ftp://x", "give scheme, host"),
        ("openai=http://user:pw@127.0.0.1:1", "give scheme, host"),
    ],
)
def test_a_bad_upstream_is_refused_before_anything_is_sent(recorded: Path, upstream: str, problem: str) -> None:
    result = cli(recorded, "drift", "openai.jsonl", "--upstream", upstream, env=KEYS)
    assert result.returncode == 2 and problem in result.stderr


def test_a_missing_cassette_is_trouble(tmp_path: Path) -> None:
    result = cli(tmp_path, "drift", "nothing.jsonl", env=KEYS)
    assert result.returncode == 2 and "nothing.jsonl" in result.stderr


def test_shapes_compare_types_per_path_not_values(recorded: Path) -> None:
    call = read_cassette(recorded / "openai.jsonl").calls[0]
    shape = answer_shape(call_view(call))
    assert shape.status == 200 and shape.media_type == "application/json"
    assert shape.fields["body.choices[*].message.content"] == {"string"}
    assert shape.fields["body.usage.prompt_tokens"] == {"integer"}
    # Other values, the same types: no change.
    assert compare_shapes(shape, Shape(200, "application/json", dict(shape.fields))) == []
    changed = compare_shapes(shape, Shape(500, "text/html", {}))
    assert [c.path for c in changed[:2]] == ["status", "content-type"]
    assert all(c.live == "-" for c in changed[2:])


def test_a_dry_run_lists_what_would_be_sent_and_where_and_sends_nothing(
    recorded: Path, same_api: Upstream, lookups: Lookups
) -> None:
    before = {path.name: path.read_bytes() for path in recorded.iterdir()}
    env = {**KEYS, "ANTHROPIC_API_KEY": ""}
    result = cli(
        recorded,
        "drift",
        "--dry-run",
        "openai.jsonl",
        "anthropic.jsonl",
        "--upstream",
        f"openai={same_api.url}",
        env=env,
    )
    assert result.returncode == 2, result.stdout + result.stderr  # the anthropic call has no key to carry
    host = same_api.url.removeprefix("http://")
    assert result.stdout.splitlines() == [
        f"openai.jsonl call 0: POST {same_api.url}/v1/chat/completions (key from OPENAI_API_KEY)",
        f"openai.jsonl call 1: POST {same_api.url}/v1/chat/completions (key from OPENAI_API_KEY)",
        "anthropic.jsonl call 0: POST https://api.anthropic.com/v1/messages: would not be sent: its credential "
        "was removed and none of ANTHROPIC_API_KEY is set: set one",
        f"dry run: 2 calls of 3 calls in 2 cassettes would be sent to {host}; nothing was sent",
    ]
    assert KEYS["OPENAI_API_KEY"] not in result.stdout
    assert same_api.received == [] and lookups == []
    assert {path.name: path.read_bytes() for path in recorded.iterdir()} == before
    document = json.loads(cli(recorded, "drift", "--dry-run", "--json", "openai.jsonl", env=KEYS).stdout)
    assert document["dry_run"] is True and document["cassettes"] == 1
    assert document["calls"][0] == {
        "path": "openai.jsonl",
        "call": 0,
        "method": "POST",
        "url": "https://api.openai.com/v1/chat/completions",
        "host": "api.openai.com",
        "vendor": "openai",
        "key_from": "OPENAI_API_KEY",
        "error": None,
        "skipped": None,
    }
    assert same_api.received == [] and lookups == []


# --- hostile cassettes ----------------------------------------------------------------------------------------


def _move(url: str) -> Callable[[dict[str, Any]], None]:
    """The request sent to ``url`` (``{port}`` stands for the attacker's port), path and all."""

    def change(line: dict[str, Any]) -> None:
        line["url"] = url

    return change


def _header(name: str, value: str, url: str | None = None) -> Callable[[dict[str, Any]], None]:
    """A header set (added, or its credential header renamed), and the request optionally moved."""

    def change(line: dict[str, Any]) -> None:
        credentials = ("authorization", "x-goog-api-key", "x-api-key", "api-key")
        line["headers"] = [pair for pair in line["headers"] if pair[0].lower() not in credentials or name == "+"]
        if name != "+":
            line["headers"].append([name, value])
        if url is not None:
            line["url"] = url

    return change


def _query_key(url: str) -> Callable[[dict[str, Any]], None]:
    """Gemini's credential moved from its header into ``?key=``, as an API-key URL has it, at ``url``."""

    def change(line: dict[str, Any]) -> None:
        line["headers"] = [pair for pair in line["headers"] if pair[0].lower() != "x-goog-api-key"]
        line["url"] = url + "?key=%5Bsecret%20removed%5D"

    return change


def _body(line: dict[str, Any]) -> None:
    line["body"]["json"]["messages"][-1]["content"] = f"my key is {PLACEHOLDER}"


def _extra_header(line: dict[str, Any]) -> None:
    line["headers"].append(["x-forward-to", PLACEHOLDER])


ATTACKER = "http://attacker.example:{port}"
CHAT = "/v1/chat/completions"
GEMINI = "/v1beta/models/gemini-2.5-flash:generateContent"
# (source cassette, change, attacker names that must never be looked up, words of the refusal)
HOSTILE: dict[str, tuple[str, Callable[[dict[str, Any]], None], str]] = {
    "openai authorization to another host": ("openai", _move(ATTACKER + CHAT), "attacker.example"),
    "https to another host": ("openai", _move("https://attacker.example:{port}" + CHAT), "attacker.example"),
    "anthropic authorization to another host": ("anthropic", _move(ATTACKER + "/v1/messages"), "attacker.example"),
    "anthropic x-api-key to another host": (
        "anthropic",
        _header("x-api-key", PLACEHOLDER, ATTACKER + "/v1/messages"),
        "attacker.example",
    ),
    "gemini x-goog-api-key to another host": ("genai", _move(ATTACKER + GEMINI), "attacker.example"),
    "gemini ?key= to another host": ("genai", _query_key(ATTACKER + GEMINI), "attacker.example"),
    "plain http to a loopback address": ("openai", _move("http://127.0.0.1:{port}" + CHAT), ""),
    "plain http to the vendor's host": ("openai", _move("http://api.openai.com:{port}" + CHAT), "api.openai.com"),
    "the vendor's host on another port": ("openai", _move("https://api.openai.com:{port}" + CHAT), "api.openai.com"),
    "the placeholder in the host": (
        "openai",
        _move("http://%5Bsecret%20removed%5D.exfil.example:{port}" + CHAT),
        "exfil.example",
    ),
    "a longer name ending like the vendor's": ("openai", _move("https://evilopenai.com:{port}" + CHAT), "evilopenai"),
    "the vendor's name as a subdomain": (
        "openai",
        _move("https://api.openai.com.evil.example:{port}" + CHAT),
        "evil.example",
    ),
    "the vendor's name as user info": (
        "openai",
        _move("https://api.openai.com@evil.example:{port}" + CHAT),
        "evil.example",
    ),
    "a trailing dot": ("openai", _move("https://api.openai.com.:{port}" + CHAT), "api.openai.com"),
    "an uppercase lookalike": ("openai", _move("https://API.OPENAI.COM.EVIL.EXAMPLE:{port}" + CHAT), "evil.example"),
    "a Cyrillic a": ("openai", _move("https://\u0430pi.openai.com:{port}" + CHAT), "openai.com"),
    "punycode": ("openai", _move("https://xn--pi-7ld.openai.com:{port}" + CHAT), "openai.com"),
    "an IPv6 literal": ("openai", _move("https://[::1]:{port}" + CHAT), ""),
    "azure's api-key to an azure-shaped other host": (
        "openai",
        _header("api-key", PLACEHOLDER, "https://myres.openai.azure.com.evil.example:{port}/openai" + CHAT),
        "evil.example",
    ),
}


@pytest.mark.parametrize("route", list(HOSTILE), ids=list(HOSTILE))
def test_a_hostile_cassette_sends_no_key_and_looks_nothing_up(
    recorded: Path, tmp_path: Path, attacker: Listener, lookups: Lookups, route: str
) -> None:
    source, change, name = HOSTILE[route]

    def placed(line: dict[str, Any]) -> None:
        change(line)
        line["url"] = line["url"].replace("{port}", str(attacker.port))

    rewrite(recorded / f"{source}.jsonl", tmp_path / "pr.jsonl", placed)
    dry = cli(tmp_path, "drift", "--dry-run", "pr.jsonl", env=KEYS)
    result = cli(tmp_path, "drift", "pr.jsonl", env=KEYS)
    assert result.returncode == 2 and dry.returncode == 2, result.stdout + result.stderr
    assert "not checked: refused: " in result.stdout
    assert "would not be sent: refused: " in dry.stdout and "; nothing was sent" in dry.stdout
    assert attacker.connections == 0 and attacker.received == b""
    assert lookups == [] and not any(name and name in looked for looked in lookups)
    assert not any(key in result.stdout + dry.stdout for key in KEYS.values())


def test_the_refusal_says_which_host_and_how_to_allow_it(recorded: Path, tmp_path: Path, attacker: Listener) -> None:
    rewrite(recorded / "openai.jsonl", tmp_path / "pr.jsonl", _move(f"http://attacker.example:{attacker.port}{CHAT}"))
    result = cli(tmp_path, "drift", "--dry-run", "pr.jsonl", env=KEYS)
    assert result.stdout.splitlines()[0] == (
        f"pr.jsonl call 0: POST http://attacker.example:{attacker.port}{CHAT}: would not be sent: refused: host "
        f"attacker.example:{attacker.port} is none of the vendors' hosts (openai, azure, anthropic, gemini, vertex, "
        f"bedrock), and no key goes there; allow it with --upstream VENDOR=https://attacker.example:{attacker.port} "
        f'or drift_hosts = {{VENDOR = ["attacker.example:{attacker.port}"]}} in [tool.vcr_transport]'
    )
    assert (
        result.stdout.splitlines()[-1]
        == "dry run: 0 calls of 2 calls in 1 cassette would be sent to no host; nothing was sent"
    )


@pytest.mark.parametrize(
    ("where", "change"),
    [("its path", _move("https://api.openai.com/v1/%5Bsecret%20removed%5D" + CHAT)), ("its body", _body)]
    + [("its x-forward-to header", _extra_header), ("its api-key header", _header("api-key", PLACEHOLDER))],
)
def test_a_removed_value_outside_the_vendors_credential_place_is_never_filled(
    recorded: Path, tmp_path: Path, attacker: Listener, where: str, change: Callable[[dict[str, Any]], None]
) -> None:
    """Even to the --upstream the user named for the vendor: drift puts a key back only where the vendor takes
    it (Azure's api-key header is not OpenAI's). (A path with a percent sign is never a generation endpoint:
    --include-writes gets past that skip.)"""
    rewrite(recorded / "openai.jsonl", tmp_path / "pr.jsonl", change)
    upstream = f"openai=http://127.0.0.1:{attacker.port}"
    result = cli(tmp_path, "drift", "pr.jsonl", "--upstream", upstream, "--include-writes", env=KEYS)
    assert result.returncode == 2
    assert f"not checked: refused: the recording removed a value from {where}, and drift puts a key back" in (
        result.stdout
    )
    assert attacker.connections == 0


def test_an_upstream_confines_only_its_vendor_and_another_vendors_call_goes_nowhere_else(
    recorded: Path, tmp_path: Path, same_api: Upstream, attacker: Listener, lookups: Lookups
) -> None:
    rewrite(
        recorded / "genai.jsonl", tmp_path / "gemini.jsonl", _move(f"{ATTACKER}{GEMINI}".format(port=attacker.port))
    )
    (tmp_path / "openai.jsonl").write_bytes((recorded / "openai.jsonl").read_bytes())
    result = cli(tmp_path, "drift", "openai.jsonl", "gemini.jsonl", "--upstream", f"openai={same_api.url}", env=KEYS)
    assert result.returncode == 2
    assert result.stdout.count(": identical shape") == 2
    assert "gemini.jsonl call 0: POST http://attacker.example" in result.stdout and "refused: host" in result.stdout
    assert attacker.connections == 0 and "attacker.example" not in lookups
    assert [r.path for r in same_api.received] == [CHAT, CHAT]


def test_a_redirect_from_the_upstream_is_not_followed(recorded: Path, attacker: Listener, lookups: Lookups) -> None:
    location = f"http://attacker.example:{attacker.port}/steal"
    for server in _serving((CHAT, lambda received: Reply(307, [("location", location)], [b""]))):
        result = cli(recorded, "drift", "openai.jsonl", "--upstream", f"openai={server.url}", env=KEYS)
        assert result.returncode == 1 and "  status: 200 -> 307" in result.stdout
        assert len(server.received) == 2
    assert attacker.connections == 0 and "attacker.example" not in lookups


# --- hosts the project adds --------------------------------------------------------------------------------


def _gateway(recorded: Path, tmp_path: Path, settings: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.vcr_transport]\n{settings}\n")
    return rewrite(
        recorded / "openai.jsonl", tmp_path / "gw.jsonl", _move("https://llm-gateway.corp.example/v1/chat/completions")
    )


def test_a_host_the_project_adds_gets_its_vendors_key(recorded: Path, tmp_path: Path, lookups: Lookups) -> None:
    _gateway(recorded, tmp_path, 'drift_hosts = {openai = ["llm-gateway.corp.example"]}')
    dry = cli(tmp_path, "drift", "--dry-run", "gw.jsonl", env=KEYS)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert dry.stdout.splitlines()[0] == (
        "gw.jsonl call 0: POST https://llm-gateway.corp.example/v1/chat/completions (key from OPENAI_API_KEY)"
    )
    assert lookups == []
    # The real run goes there (the resolver is asked for it; here it answers with loopback, where nothing
    # speaks TLS on 443).
    result = cli(tmp_path, "drift", "gw.jsonl", "--timeout", "2", env=KEYS)
    assert result.returncode == 2 and "llm-gateway.corp.example" in lookups


def test_without_the_setting_that_host_is_refused(recorded: Path, tmp_path: Path, lookups: Lookups) -> None:
    _gateway(recorded, tmp_path, "")
    result = cli(tmp_path, "drift", "gw.jsonl", env=KEYS)
    assert result.returncode == 2 and "refused: host llm-gateway.corp.example is none of" in result.stdout
    # Named for another vendor, the host takes that vendor's key only: not OpenAI's, to a chat path that is
    # no Anthropic endpoint (skipped as a possible write).
    _gateway(recorded, tmp_path, 'drift_hosts = {anthropic = ["llm-gateway.corp.example"]}')
    result = cli(tmp_path, "drift", "gw.jsonl", env=KEYS)
    assert (
        result.returncode == 0 and "skipped: POST /v1/chat/completions may change state at anthropic" in result.stdout
    )
    assert lookups == []


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ('drift_hosts = {mistral = ["x.example"]}', "drift_hosts.mistral: no such vendor"),
        ('drift_hosts = {openai = "x.example"}', "drift_hosts.openai must be a list of host names"),
        ('drift_hosts = {openai = ["https://x.example/"]}', "is no host name"),
        ('drift_hosts = ["x.example"]', "drift_hosts must be a table"),
    ],
)
def test_a_wrong_drift_hosts_setting_is_trouble_naming_the_file(
    recorded: Path, tmp_path: Path, settings: str, problem: str
) -> None:
    _gateway(recorded, tmp_path, settings)
    result = cli(tmp_path, "drift", "--dry-run", "gw.jsonl", env=KEYS)
    assert result.returncode == 2 and problem in result.stderr and "pyproject.toml" in result.stderr


# --- calls drift does not re-send ------------------------------------------------------------------------


def _realtime(path: Path) -> Path:
    """A cassette of an openai Realtime session, as the recorder writes it."""
    session = SessionRecording(CallBook(), Redactor(), 0)
    lines = [encode_line({"type": "header", "format_version": 1})]
    lines += session.handshake(
        "wss://api.openai.com/v1/realtime?model=gpt-realtime", [("Authorization", f"Bearer {KEYS['OPENAI_API_KEY']}")]
    )
    lines += session.accepted(101, [("Upgrade", "websocket"), ("Sec-WebSocket-Accept", "random")])
    lines += session.message("client", '{"type":"session.update"}', 1_000_000)
    lines += session.message("server", '{"type":"session.updated"}', 2_000_000)
    lines += session.end("complete", (1000, "", "client"))
    path.write_bytes(b"".join(lines))
    return path


def test_a_websocket_session_is_skipped_saying_why(tmp_path: Path, attacker: Listener, lookups: Lookups) -> None:
    _realtime(tmp_path / "realtime.jsonl")
    upstream = f"openai=http://127.0.0.1:{attacker.port}"
    result = cli(tmp_path, "drift", "realtime.jsonl", "--upstream", upstream, env=KEYS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        "realtime.jsonl call 0: GET wss://api.openai.com/v1/realtime?model=gpt-realtime: skipped: a WebSocket "
        "session: drift re-sends HTTP requests, and a session needs its handshake and messages",
        "1 call in 1 cassette: 0 identical, 0 changed, 0 not checked, 1 skipped",
    ]
    dry = cli(tmp_path, "drift", "--dry-run", "realtime.jsonl", env=KEYS)
    assert dry.returncode == 0 and "skipped: a WebSocket session" in dry.stdout
    assert dry.stdout.splitlines()[-1].endswith("would be sent to no host, 1 skipped; nothing was sent")
    assert attacker.connections == 0 and lookups == []


def _write(method: str, path: str) -> Callable[[dict[str, Any]], None]:
    def change(line: dict[str, Any]) -> None:
        line["method"], line["url"] = method, "https://api.openai.com" + path

    return change


@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/v1/files"), ("DELETE", "/v1/files/file-abc"), ("POST", "/v1/batches")]
)
def test_a_call_that_changes_state_is_skipped_unless_writes_are_asked_for(
    recorded: Path, tmp_path: Path, same_api: Upstream, method: str, path: str
) -> None:
    rewrite(recorded / "openai.jsonl", tmp_path / "w.jsonl", _write(method, path))
    same_api.routes[path.rsplit("/", 1)[0] if method == "DELETE" else path] = lambda r: Reply.json({"id": "x"})
    upstream = f"openai={same_api.url}"
    result = cli(tmp_path, "drift", "w.jsonl", "--upstream", upstream, env=KEYS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"skipped: {method} {path} may change state at openai (it is no generation endpoint); --include-writes" in (
        result.stdout
    )
    dry = cli(tmp_path, "drift", "--dry-run", "w.jsonl", "--upstream", upstream, env=KEYS)
    assert f"skipped: {method} {path} may change state" in dry.stdout and dry.returncode == 0
    assert same_api.received == []
    asked = cli(tmp_path, "drift", "w.jsonl", "--upstream", upstream, "--include-writes", env=KEYS)
    assert asked.returncode in (0, 1) and "skipped" not in asked.stdout.splitlines()[0]
    assert [r.path for r in same_api.received] == [path, path]
    assert same_api.received[0].headers["authorization"] == "Bearer " + KEYS["OPENAI_API_KEY"]


def test_geminis_key_goes_back_into_its_key_query_value_only(
    recorded: Path, tmp_path: Path, same_api: Upstream
) -> None:
    base = "https://generativelanguage.googleapis.com/v1/models/test-model:generateContent"
    rewrite(recorded / "genai.jsonl", tmp_path / "g.jsonl", _query_key(base))
    result = cli(tmp_path, "drift", "g.jsonl", "--upstream", f"gemini={same_api.url}", env=KEYS)
    assert result.returncode == 0, result.stdout + result.stderr
    [received] = same_api.received
    assert received.path == f"/v1/models/test-model:generateContent?key={KEYS['GEMINI_API_KEY']}"
    assert "x-goog-api-key" not in received.headers
