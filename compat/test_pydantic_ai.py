"""pydantic-ai over openai, anthropic and google: a tool round trip and a streamed run each."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from conftest import SECRETS, Row, check_row
from fakes import Upstream
from pydantic_ai import Agent

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
