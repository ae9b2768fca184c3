"""openai-agents with tracing on: the trace exporter's batches are kept out of the cassette. An agent whose
tools come from an MCP server over streamable HTTP (``agents.mcp.MCPServerStreamableHttp``, the ``mcp`` SDK's
client on httpx2): the MCP session and the model's calls in one cassette, replayed with both servers stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import openai
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
from agents.mcp import MCPServerStreamableHttp
from agents.tracing import get_trace_provider
from agents.tracing.processors import BackendSpanExporter, BatchTraceProcessor
from conftest import RECORDED, SECRETS, Row, check_mcp_row, check_row
from fakes import TOOL_ARGS, Upstream
from mcp_upstream import McpUpstream


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
