"""openai through vcr_transport, the three ways in. Replays offline from cassettes/openai/ by default.

python examples/openai_example.py            # replay: no server, no key, no network
python examples/openai_example.py --record   # re-record against examples/local_vendor.py
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx2
import openai

import vcr_transport

sys.path.insert(0, str(Path(__file__).parent))
import local_vendor  # noqa: E402

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes" / "openai"
KEY = "sk-example-not-a-real-key-0000000000"
BASE_URL = local_vendor.BASE_URL + "/v1"


def constructor_way(mode: vcr_transport.Mode) -> str:
    """1. A transport passed to the client's constructor."""
    path = CASSETTES / "constructor.jsonl"
    transport: httpx2.BaseTransport  # what our transports are to a type checker
    if mode == "record":
        transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), path)
    else:
        transport = vcr_transport.ReplayTransport(path)
    with httpx2.Client(transport=transport) as http:
        client = openai.OpenAI(api_key=KEY, base_url=BASE_URL, http_client=http)
        reply = client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hello"}])
    return str(reply.choices[0].message.content)


def context_manager_way(mode: vcr_transport.Mode) -> str:
    """2. A context manager around a script: the SDK's own async client, streaming."""

    async def script() -> str:
        async with openai.AsyncOpenAI(api_key=KEY, base_url=BASE_URL) as client:
            stream = await client.chat.completions.create(
                model="gpt-x", messages=[{"role": "user", "content": "stream this"}], stream=True
            )
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    with vcr_transport.use_cassette(CASSETTES / "context_manager.jsonl", mode=mode, unplayed="error"):
        return asyncio.run(script())


def environment_way(_mode: vcr_transport.Mode) -> str:
    """3. VCR_TRANSPORT_MODE decides record or replay; the code doesn't change."""
    with httpx2.Client(transport=vcr_transport.transport(CASSETTES / "environment.jsonl")) as http:
        client = openai.OpenAI(api_key=KEY, base_url=BASE_URL, http_client=http)
        reply = client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "from env"}])
    return str(reply.choices[0].message.content)


if __name__ == "__main__":
    local_vendor.run_example("openai", constructor_way, context_manager_way, environment_way)
