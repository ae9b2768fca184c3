"""openai-agents with tracing on: the trace exporter's batches are kept out of the cassette."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import openai
from agents import Agent, OpenAIChatCompletionsModel, Runner
from agents.tracing import get_trace_provider
from agents.tracing.processors import BackendSpanExporter, BatchTraceProcessor
from conftest import SECRETS, Row, check_row
from fakes import Upstream


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
