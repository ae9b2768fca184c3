"""langchain-openai and langchain-anthropic: invoke, stream, ainvoke, astream."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from conftest import SECRETS, Row, check_row
from fakes import Upstream


def _chat(provider: str, url: str) -> Any:
    if provider == "openai":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model="gpt-test", api_key=SECRETS["OPENAI"], base_url=url + "/v1")
    from langchain_anthropic import ChatAnthropic

    return ChatAnthropic(model="claude-test", api_key=SECRETS["ANTHROPIC"], base_url=url, max_tokens=10)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("way", ["invoke", "stream", "ainvoke", "astream"])
def test_chat_model(provider: str, way: str, tmp_path: Path, vendor: Upstream) -> None:
    def run(url: str, prompt: str) -> Any:
        chat = _chat(provider, url)
        if way == "invoke":
            return chat.invoke(prompt).content
        if way == "stream":
            return [chunk.content for chunk in chat.stream(prompt)]

        async def main() -> Any:
            if way == "ainvoke":
                return (await chat.ainvoke(prompt)).content
            return [chunk.content async for chunk in chat.astream(prompt)]

        return asyncio.run(main())

    check_row(Row(f"langchain-{provider}: {way}", "httpx2"), tmp_path / "c.jsonl", vendor, run)
