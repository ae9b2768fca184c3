"""anthropic through vcr_transport, the three ways in. Replays offline from cassettes/anthropic/ by default.

python examples/anthropic_example.py            # replay: no server, no key, no network
python examples/anthropic_example.py --record   # re-record against examples/local_vendor.py
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import anthropic
import httpx2

import vcr_transport

sys.path.insert(0, str(Path(__file__).parent))
import local_vendor  # noqa: E402

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes" / "anthropic"
KEY = "sk-ant-example-not-a-real-key-000000"
MESSAGE = {"model": "claude-x", "max_tokens": 64}


def constructor_way(mode: str) -> str:
    """1. A transport passed to the client's constructor (anthropic takes httpx2 clients only)."""
    path = CASSETTES / "constructor.jsonl"
    if mode == "record":
        transport = vcr_transport.AsyncRecordingTransport(httpx2.AsyncHTTPTransport(), path)
    else:
        transport = vcr_transport.ReplayTransport(path)

    async def script() -> str:
        async with httpx2.AsyncClient(transport=transport) as http:
            client = anthropic.AsyncAnthropic(api_key=KEY, base_url=local_vendor.BASE_URL, http_client=http)
            reply = await client.messages.create(**MESSAGE, messages=[{"role": "user", "content": "hello"}])
        return str(reply.content[0].text)

    return asyncio.run(script())


def context_manager_way(mode: str) -> str:
    """2. A context manager around a script: the SDK's own client, streaming."""
    with vcr_transport.use_cassette(CASSETTES / "context_manager.jsonl", mode=mode, unplayed="error"):
        with anthropic.Anthropic(api_key=KEY, base_url=local_vendor.BASE_URL) as client:
            with client.messages.stream(**MESSAGE, messages=[{"role": "user", "content": "stream this"}]) as stream:
                return "".join(stream.text_stream)


def environment_way(_mode: str) -> str:
    """3. VCR_TRANSPORT_MODE decides record or replay; the code doesn't change."""
    with httpx2.Client(transport=vcr_transport.transport(CASSETTES / "environment.jsonl")) as http:
        client = anthropic.Anthropic(api_key=KEY, base_url=local_vendor.BASE_URL, http_client=http)
        reply = client.messages.create(**MESSAGE, messages=[{"role": "user", "content": "from env"}])
    return str(reply.content[0].text)


if __name__ == "__main__":
    local_vendor.run_example("anthropic", constructor_way, context_manager_way, environment_way)
