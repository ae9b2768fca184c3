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
MODEL, MAX_TOKENS = "claude-x", 64


def _text(reply: anthropic.types.Message) -> str:
    return "".join(block.text for block in reply.content if isinstance(block, anthropic.types.TextBlock))


def constructor_way(mode: vcr_transport.Mode) -> str:
    """1. A transport passed to the client's constructor (anthropic takes httpx2 clients only)."""
    path = CASSETTES / "constructor.jsonl"
    transport: httpx2.AsyncBaseTransport  # what our transports are to a type checker
    if mode == "record":
        transport = vcr_transport.AsyncRecordingTransport(httpx2.AsyncHTTPTransport(), path)
    else:
        transport = vcr_transport.ReplayTransport(path)

    async def script() -> str:
        async with httpx2.AsyncClient(transport=transport) as http:
            client = anthropic.AsyncAnthropic(api_key=KEY, base_url=local_vendor.BASE_URL, http_client=http)
            reply = await client.messages.create(
                model=MODEL, max_tokens=MAX_TOKENS, messages=[{"role": "user", "content": "hello"}]
            )
        return _text(reply)

    return asyncio.run(script())


def context_manager_way(mode: vcr_transport.Mode) -> str:
    """2. A context manager around a script: the SDK's own client, streaming."""
    with vcr_transport.use_cassette(CASSETTES / "context_manager.jsonl", mode=mode, unplayed="error"):
        with anthropic.Anthropic(api_key=KEY, base_url=local_vendor.BASE_URL) as client:
            with client.messages.stream(
                model=MODEL, max_tokens=MAX_TOKENS, messages=[{"role": "user", "content": "stream this"}]
            ) as stream:
                return "".join(stream.text_stream)


def environment_way(_mode: vcr_transport.Mode) -> str:
    """3. VCR_TRANSPORT_MODE decides record or replay; the code doesn't change."""
    with httpx2.Client(transport=vcr_transport.transport(CASSETTES / "environment.jsonl")) as http:
        client = anthropic.Anthropic(api_key=KEY, base_url=local_vendor.BASE_URL, http_client=http)
        reply = client.messages.create(
            model=MODEL, max_tokens=MAX_TOKENS, messages=[{"role": "user", "content": "from env"}]
        )
    return _text(reply)


if __name__ == "__main__":
    local_vendor.run_example("anthropic", constructor_way, context_manager_way, environment_way)
