"""pydantic-ai over openai, anthropic and google: a tool round trip and a streamed run each; and an agent
whose tools come from an MCP server over streamable HTTP (``pydantic_ai.mcp.MCPToolset``, on the fastmcp
client and the ``mcp`` SDK, httpx2)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from conftest import RECORDED, SECRETS, Row, check_mcp_row, check_row
from fakes import TOOL_ARGS, Upstream
from mcp_upstream import McpUpstream
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset

# pydantic-ai makes up a tool-call id per run for Gemini: a path-scoped ignore keeps every other id compared.
GEMINI_IGNORES = ["body.contents[*].parts[*].functionCall.id", "body.contents[*].parts[*].functionResponse.id"]


def _model(provider: str, url: str) -> Any:
    if provider == "openai":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIChatModel("gpt-test", provider=OpenAIProvider(base_url=url + "/v1", api_key=SECRETS["OPENAI"]))
    if provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel("claude-test", provider=AnthropicProvider(api_key=SECRETS["ANTHROPIC"], base_url=url))
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    return GoogleModel("gemini-test", provider=GoogleProvider(api_key=SECRETS["GOOGLE"], base_url=url))


@pytest.mark.parametrize("provider", ["openai", "anthropic", "google"])
def test_tool_round_trip(provider: str, tmp_path: Path, vendor: Upstream) -> None:
    def run(url: str, prompt: str) -> Any:
        agent = Agent(_model(provider, url))

        @agent.tool_plain
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        result = agent.run_sync(prompt)
        return result.output

    options = {"ignore_fields": GEMINI_IGNORES} if provider == "google" else {}
    error = check_row(
        Row(f"pydantic-ai {provider}: tool round trip", "httpx2 async"), tmp_path / "c.jsonl", vendor, run, **options
    )
    assert "pydantic_ai" in type(error).__module__ or "vcr_transport" in type(error).__module__


@pytest.mark.parametrize("provider", ["openai", "anthropic", "google"])
def test_streamed_run(provider: str, tmp_path: Path, vendor: Upstream) -> None:
    def run(url: str, prompt: str) -> Any:
        agent = Agent(_model(provider, url))

        async def main() -> list[str]:
            async with agent.run_stream(prompt) as result:
                return [text async for text in result.stream_text(delta=True)]

        return asyncio.run(main())

    check_row(Row(f"pydantic-ai {provider}: streamed run", "httpx2 async"), tmp_path / "c.jsonl", vendor, run)


def test_mcp_toolset(tmp_path: Path, vendor: Upstream) -> None:
    """The model (the fake vendor) calls the first tool the MCP server lists, ``add``; the agent calls it over
    MCP and answers. Then the same connection lists the tools and calls ``shout``."""
    tools = McpUpstream().start()

    def run(prompt: str) -> Any:
        async def main() -> Any:
            toolset: MCPToolset[None] = MCPToolset(tools.url)
            agent = Agent(_model("openai", vendor.url), toolsets=[toolset])
            async with toolset:
                result = await agent.run(prompt)
                listed = [tool.name for tool in await toolset.list_tools()]
                shouted = await toolset.client.call_tool("shout", {"text": "hi"})
            returns = [p.content for m in result.all_messages() for p in m.parts if p.part_kind == "tool-return"]
            return result.output, returns, listed, shouted.structured_content

        return asyncio.run(main())

    def stop() -> None:
        tools.stop()
        vendor.stop()

    cassette = tmp_path / "c.jsonl"
    row = Row("pydantic-ai MCPToolset (streamable HTTP)", "httpx2 async")
    output, returns, listed, shouted = check_mcp_row(row, cassette, stop, run)
    assert output == f"echo:{RECORDED}" and listed == ["add", "shout"]
    assert returns == [TOOL_ARGS["a"] + TOOL_ARGS["b"]], returns
    assert shouted == {"result": "HI"}
    assert cassette.read_text().count('"method":"tools/call"') == 2
