"""openai-agents with tracing on: the trace exporter's batches are kept out of the cassette. An agent given no
model takes the SDK's default, ``OpenAIResponsesModel`` (the Responses API, ``POST /v1/responses``), and
replays like any call; in replay the default exporter's batches to api.openai.com meet the default passthrough
rule: an empty 204 (or NetworkBlockedError with ``passthrough_replay="block"``), never the network. An agent whose
tools come from an MCP server over streamable HTTP (``agents.mcp.MCPServerStreamableHttp``, the ``mcp`` SDK's
client on httpx2): the MCP session and the model's calls in one cassette, replayed with both servers stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import openai
import pytest
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, set_default_openai_client
from agents.mcp import MCPServerStreamableHttp
from agents.models import get_default_model
from agents.models.openai_provider import OpenAIProvider
from agents.tracing import get_trace_provider
from agents.tracing.processors import BackendSpanExporter, BatchTraceProcessor, default_exporter, default_processor
from conftest import RECORDED, SECRETS, Row, check_mcp_row, check_row
from fakes import TOOL_ARGS, Upstream
from mcp_upstream import McpUpstream

import vcr_transport


def test_agent_run_with_tracing(tmp_path: Path, vendor: Upstream) -> None:
    traces = f"{vendor.url}/v1/traces/ingest"

    def run(url: str, prompt: str) -> Any:
        # Tracing on, exported to the fake vendor (never to the internet) by the SDK's own background thread.
        exporter = BackendSpanExporter(api_key=SECRETS["OPENAI"], endpoint=f"{url}/v1/traces/ingest")
        processor = BatchTraceProcessor(exporter)
        get_trace_provider().set_processors([processor])

        async def main() -> Any:
            async with openai.AsyncOpenAI(api_key=SECRETS["OPENAI"], base_url=url + "/v1") as client:
                model = OpenAIChatCompletionsModel("gpt-test", client)
                agent = Agent(name="a", instructions="be brief", model=model)
                return (await Runner.run(agent, prompt)).final_output

        try:
            return asyncio.run(main())
        finally:
            processor.force_flush()
            processor.shutdown()

    cassette = tmp_path / "c.jsonl"
    check_row(Row("openai-agents (tracing on)", "httpx2 async"), cassette, vendor, run, passthrough=[traces])
    assert "/traces/ingest" not in cassette.read_text()
    assert any(r.path.endswith("/traces/ingest") for r in vendor.received), "tracing never exported: nothing tested"


def _default_model_run(url: str, prompt: str, *, tracing: bool = False) -> Any:
    """An agent given no model (the SDK's default model) on the default client, pointed at ``url``."""

    async def main() -> Any:
        async with openai.AsyncOpenAI(api_key=SECRETS["OPENAI"], base_url=url + "/v1") as client:
            set_default_openai_client(client, use_for_tracing=tracing)
            agent = Agent(name="a", instructions="be brief")
            return (await Runner.run(agent, prompt, run_config=RunConfig(tracing_disabled=not tracing))).final_output

    return asyncio.run(main())


def test_agent_with_the_default_model_uses_the_responses_api(tmp_path: Path, vendor: Upstream) -> None:
    provider = OpenAIProvider(openai_client=openai.AsyncOpenAI(api_key=SECRETS["OPENAI"]))
    assert type(provider.get_model(None)).__name__ == "OpenAIResponsesModel"  # the SDK's default
    cassette = tmp_path / "c.jsonl"
    row = Row("openai-agents, default model (Responses API)", "httpx2 async")
    check_row(row, cassette, vendor, _default_model_run)
    assert [r.path for r in vendor.received] == ["/v1/responses"]
    assert vendor.received[0].json()["model"] == get_default_model()


@pytest.mark.parametrize("answer", ["empty", "block"])
def test_the_default_tracer_in_replay_never_reaches_the_network(tmp_path: Path, vendor: Upstream, answer: str) -> None:
    """Recorded with tracing off, replayed with the SDK's default processor and exporter (endpoint
    https://api.openai.com/v1/traces/ingest): each batch it posts meets the passthrough rule."""
    cassette = tmp_path / "c.jsonl"
    with vcr_transport.use_cassette(cassette, mode="record"):
        recorded = _default_model_run(vendor.url, RECORDED)
    vendor.stop()
    written = cassette.read_bytes()
    exporter = default_exporter()
    assert exporter.endpoint == "https://api.openai.com/v1/traces/ingest"
    seen: list[Any] = []
    post = exporter._client.post

    def spying(*args: Any, **kwargs: Any) -> Any:
        try:
            response = post(*args, **kwargs)
        except Exception as error:
            seen.append(error)
            raise
        seen.append(response)
        return response

    exporter._client.post = spying  # type: ignore[method-assign]
    processor = default_processor()
    get_trace_provider().set_processors([processor])
    try:
        with vcr_transport.use_cassette(cassette, mode="replay", unplayed="error", passthrough_replay=answer):
            assert _default_model_run(vendor.url, RECORDED, tracing=True) == recorded
            processor.force_flush()
    finally:
        exporter._client.post = post  # type: ignore[method-assign]
    assert cassette.read_bytes() == written
    assert seen, "the tracer posted nothing: nothing tested"
    if answer == "empty":
        assert all(r.status_code == 204 and r.headers["x-vcr-transport"] == "passthrough" for r in seen), seen
    else:
        assert all(isinstance(e, vcr_transport.NetworkBlockedError) for e in seen), seen
        assert "traces/ingest matches a passthrough rule" in str(seen[0])


def test_agent_with_an_mcp_tool_server(tmp_path: Path, vendor: Upstream) -> None:
    """The model (the fake vendor) calls the first tool the MCP server lists, ``add``; the agent calls it over
    MCP and answers. Then the same session lists the tools and calls ``shout`` through the server object."""
    tools = McpUpstream().start()

    def run(prompt: str) -> Any:
        async def main() -> Any:
            async with MCPServerStreamableHttp({"url": tools.url}, name="tools") as server:
                async with openai.AsyncOpenAI(api_key=SECRETS["OPENAI"], base_url=vendor.url + "/v1") as client:
                    model = OpenAIChatCompletionsModel("gpt-test", client)
                    agent = Agent(name="a", instructions="use the tools", model=model, mcp_servers=[server])
                    result = await Runner.run(agent, prompt, run_config=RunConfig(tracing_disabled=True))
                listed = [tool.name for tool in await server.list_tools()]
                shouted = await server.call_tool("shout", {"text": "hi"})
            outputs = [item.output for item in result.new_items if item.type == "tool_call_output_item"]
            return result.final_output, outputs, listed, shouted.model_dump(mode="json")

        return asyncio.run(main())

    def stop() -> None:
        tools.stop()
        vendor.stop()

    cassette = tmp_path / "c.jsonl"
    row = Row("openai-agents + MCP server (streamable HTTP)", "httpx2 async")
    final, outputs, listed, shouted = check_mcp_row(row, cassette, stop, run)
    assert final == f"echo:{RECORDED}" and listed == ["add", "shout"]
    assert len(outputs) == 1 and str(TOOL_ARGS["a"] + TOOL_ARGS["b"]) in str(outputs[0]), outputs
    assert shouted["structured_content"] == {"result": "HI"}
    # openai-agents' session speaks MCP 2026-07-28: server/discover, then tools/list and tools/call POSTs
    # answered with JSON, no session id, no GET stream.
    text = cassette.read_text()
    assert '"server/discover"' in text and text.count('"method":"tools/call"') == 2, text
