"""google-genai through vcr_transport, the three ways in. Replays offline from cassettes/genai/ by default.

python examples/genai_example.py            # replay: no server, no key, no network
python examples/genai_example.py --record   # re-record against examples/local_vendor.py
"""

# pyright: reportUnknownMemberType=false
# (google-genai's own signatures are partly unknown to pyright in strict mode: its types, not ours.)

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx2
from google import genai
from google.genai import types

import vcr_transport

sys.path.insert(0, str(Path(__file__).parent))
import local_vendor  # noqa: E402

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes" / "genai"
KEY = "example-not-a-real-key"


def constructor_way(mode: vcr_transport.Mode) -> str:
    """1. A transport passed to the client: one object serves both the sync and the async client, which
    google-genai needs (with only the sync one, client.aio calls would go to the network)."""
    path = CASSETTES / "constructor.jsonl"
    if mode == "record":
        transport: vcr_transport.RecordingTransport | vcr_transport.ReplayTransport = vcr_transport.RecordingTransport(
            httpx2.HTTPTransport(), path, async_inner=httpx2.AsyncHTTPTransport()
        )
    else:
        transport = vcr_transport.ReplayTransport(path)
    options = types.HttpOptions(
        base_url=local_vendor.BASE_URL,
        httpx_client=httpx2.Client(transport=transport),
        httpx_async_client=httpx2.AsyncClient(transport=transport),
    )
    client = genai.Client(api_key=KEY, http_options=options)

    async def async_part() -> str | None:
        try:
            return (await client.aio.models.generate_content(model="gemini-x", contents="and async")).text
        finally:
            await client.aio.aclose()

    try:
        first = client.models.generate_content(model="gemini-x", contents="hello").text
        return f"{first} / {asyncio.run(async_part())}"
    finally:
        client.close()  # the cassette is committed once both clients are closed


def context_manager_way(mode: vcr_transport.Mode) -> str:
    """2. A context manager around a script: the SDK's own async client, streaming."""

    async def script() -> str:
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=local_vendor.BASE_URL))
        try:
            stream = await client.aio.models.generate_content_stream(model="gemini-x", contents="stream this")
            return "".join([chunk.text or "" async for chunk in stream])
        finally:
            await client.aio.aclose()

    with vcr_transport.use_cassette(CASSETTES / "context_manager.jsonl", mode=mode, unplayed="error"):
        return asyncio.run(script())


def environment_way(_mode: vcr_transport.Mode) -> str:
    """3. VCR_TRANSPORT_MODE decides record or replay; the code doesn't change."""
    transport = vcr_transport.transport(CASSETTES / "environment.jsonl")
    options = types.HttpOptions(
        base_url=local_vendor.BASE_URL,
        httpx_client=httpx2.Client(transport=transport),
        httpx_async_client=httpx2.AsyncClient(transport=transport),
    )
    client = genai.Client(api_key=KEY, http_options=options)
    try:
        return str(client.models.generate_content(model="gemini-x", contents="from env").text)
    finally:
        client.close()


if __name__ == "__main__":
    local_vendor.run_example("google-genai", constructor_way, context_manager_way, environment_way)
