"""MCP tool servers: a real MCP client session (the ``mcp`` SDK's streamable-HTTP client, on httpx2) against
the SDK's own server on 127.0.0.1, recorded through ``use_cassette`` and replayed with the server stopped.

What the session sends: ``initialize`` (its answer assigns the ``mcp-session-id``), the
``notifications/initialized`` POST (an empty 202), a GET event stream the client keeps open beside its POSTs
for the whole session, ``tools/list`` and ``tools/call`` POSTs (answered with an event stream whose last event
is the JSON-RPC response, or with JSON), and a DELETE when the session closes, after which the client cuts
the GET stream."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp.client.streamable_http
import pytest
from helpers import cassette_lines, verify_strict
from mcp_upstream import McpUpstream, discover_session, mcp_session

import vcr_transport
from vcr_transport import ReplayMismatch
from vcr_transport._tools._cli import main as cli

REPLAYS = 12


@pytest.fixture(params=[False, True], ids=["event-stream", "json"])
def server(request: pytest.FixtureRequest) -> Iterator[McpUpstream]:
    upstream = McpUpstream(json_response=request.param).start()
    yield upstream
    upstream.stop()


def _record(server: McpUpstream, path: Path, **session: Any) -> dict[str, Any]:
    with vcr_transport.use_cassette(path, mode="record"):
        recorded = asyncio.run(mcp_session(server.url, **session))
    server.stop()
    return recorded


def _replay(path: Path, url: str, **session: Any) -> dict[str, Any]:
    with vcr_transport.use_cassette(path, mode="replay", unplayed="error") as used:
        replayed = asyncio.run(mcp_session(url, **session))
    assert used.session is not None and used.session.first_mismatch is None
    return replayed


@pytest.mark.parametrize("together", [False, True], ids=["one-after-the-other", "gathered"])
def test_an_mcp_session_records_and_replays_with_its_server_stopped(
    server: McpUpstream, tmp_path: Path, together: bool
) -> None:
    path = tmp_path / "mcp.jsonl"
    recorded = _record(server, path, together=together)
    assert [tool["name"] for tool in recorded["tools"]] == ["add", "shout"]
    assert recorded["add"]["structured_content"] == {"result": 5}

    lines = cassette_lines(path)
    requests = [line for line in lines if line["type"] == "request"]
    responses = {line["call_index"]: line for line in lines if line["type"] == "response"}
    ends = {line["call_index"]: line["outcome"] for line in lines if line["type"] == "call_end"}
    posted = sorted(str(r["body"]["json"]["method"]) for r in requests if r["method"] == "POST")
    assert posted == ["initialize", "notifications/initialized", "tools/call", "tools/call", "tools/list"]
    [get] = [r["call_index"] for r in requests if r["method"] == "GET"]
    [delete] = [r["call_index"] for r in requests if r["method"] == "DELETE"]
    assigned = dict(responses[0]["headers"])["mcp-session-id"]
    for request in requests[1:]:
        assert dict(request["headers"])["mcp-session-id"] == assigned, "the client sends back the assigned id"
    # Every POST's stream ended with its JSON-RPC response, the 202 with its empty body, and the GET stream,
    # on which the server sent nothing, however it ended when the session closed: the server closes it on the
    # DELETE unless the client cut it first (a race that would otherwise flip its outcome at every re-record).
    assert set(ends.values()) == {"complete"}, ends
    assert list(ends).index(get) >= list(ends).index(delete) - 1, "the GET stream was open until the DELETE"
    assert cli(["verify", str(path)]) == 0
    assert verify_strict(path)[0] == 0

    for _ in range(REPLAYS):  # the GET stream runs beside the POSTs: each replay must pair them the same way
        assert _replay(path, server.url, together=together) == recorded


def test_a_2026_session_records_and_replays(server: McpUpstream, tmp_path: Path) -> None:
    """``mcp.Client`` (as openai-agents' MCP servers do) speaks MCP 2026-07-28: no handshake, no session."""
    path = tmp_path / "mcp.jsonl"
    with vcr_transport.use_cassette(path, mode="record"):
        recorded = asyncio.run(discover_session(server.url))
    server.stop()
    assert recorded["add"]["structured_content"] == {"result": 5}
    requests = [line for line in cassette_lines(path) if line["type"] == "request"]
    assert [r["body"]["json"]["method"] for r in requests] == [
        "server/discover",
        "tools/list",
        "tools/call",
        "tools/call",
    ]
    assert [dict(r["headers"])["mcp-method"] for r in requests] == [r["body"]["json"]["method"] for r in requests]
    assert not any("mcp-session-id" in dict(r["headers"]) for r in requests)
    assert [dict(r["headers"]).get("mcp-name") for r in requests] == [None, None, "add", "shout"]
    for _ in range(REPLAYS):
        with vcr_transport.use_cassette(path, mode="replay", unplayed="error") as used:
            assert asyncio.run(discover_session(server.url)) == recorded
        assert used.session is not None and used.session.first_mismatch is None


def test_a_slow_session_keeps_the_get_stream_open_in_replay(
    server: McpUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fixed: the GET stream, open until the session closed while recording, ended at once in replay, so the
    client reopened it after its reconnection delay with a GET the cassette doesn't have: a
    mismatch in any replayed session that took longer than that (a second by default). The delay is made a
    millisecond here, and the replayed session waits between its steps."""
    monkeypatch.setattr(mcp.client.streamable_http, "DEFAULT_RECONNECTION_DELAY_MS", 1)
    path = tmp_path / "mcp.jsonl"
    recorded = _record(server, path)
    for _ in range(3):
        assert _replay(path, server.url, pause=0.05) == recorded


def test_a_changed_tool_call_is_named_by_its_field(server: McpUpstream, tmp_path: Path) -> None:
    path = tmp_path / "mcp.jsonl"
    _record(server, path)
    with pytest.raises(BaseException):  # noqa: B017 - the client raises it inside its task group
        with vcr_transport.use_cassette(path, mode="replay") as used:
            asyncio.run(mcp_session(server.url, b=4))
    assert used.session is not None
    mismatch = used.session.first_mismatch
    assert isinstance(mismatch, ReplayMismatch)
    assert str(mismatch).splitlines()[0].endswith("field body.params.arguments.b: recorded 3, incoming 4")


def test_a_session_against_another_port_replays_with_the_port_normalized(server: McpUpstream, tmp_path: Path) -> None:
    """A test that starts its MCP server on a free port gets another one each run: the how-to's pattern
    compares the URL without it."""
    path = tmp_path / "mcp.jsonl"
    recorded = _record(server, path)
    moved = "http://127.0.0.1:1/mcp"
    assert moved != server.url
    loopback = [(r"127\.0\.0\.1:\d+", "127.0.0.1")]
    with vcr_transport.use_cassette(path, mode="replay", unplayed="error", normalize_patterns=loopback) as used:
        assert asyncio.run(mcp_session(moved)) == recorded
    assert used.session is not None and used.session.first_mismatch is None


def test_a_re_recorded_session_replaces_the_older_one(server: McpUpstream, tmp_path: Path) -> None:
    """ "Never worse" keeps an older complete cassette from a recording with a call cut short: the GET stream's
    outcome must not depend on who closed it first, or a re-record would be refused (a warning) at random."""
    path = tmp_path / "mcp.jsonl"
    ids = []
    for _ in range(3):
        with vcr_transport.use_cassette(path, mode="record"):
            asyncio.run(mcp_session(server.url))
        ids.append(dict(cassette_lines(path)[2]["headers"])["mcp-session-id"])
    assert len(set(ids)) == 3, "each re-record replaced the cassette"
