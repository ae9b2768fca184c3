"""Cloud clients of the SDKs (Azure, Bedrock with SigV4, Vertex) and other event loops (trio, uvloop)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import openai
from conftest import SECRETS, Row, check_row
from fakes import Upstream

MESSAGES = lambda prompt: [{"role": "user", "content": prompt}]  # noqa: E731


def test_azure_openai_api_key(tmp_path: Path, vendor: Upstream) -> None:
    def run(url: str, prompt: str) -> Any:
        client = openai.AzureOpenAI(
            api_key=SECRETS["AZURE"], api_version="2024-10-21", azure_endpoint=url, azure_deployment="gpt"
        )
        with client:
            reply = client.chat.completions.create(model="gpt", messages=MESSAGES(prompt))
            stream = client.chat.completions.create(model="gpt", messages=MESSAGES(prompt), stream=True)
            pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
        return reply.choices[0].message.content, pieces

    check_row(Row("AzureOpenAI (api-key)", "httpx2"), tmp_path / "c.jsonl", vendor, run)


def test_azure_openai_ad_token(tmp_path: Path, vendor: Upstream) -> None:
    def run(url: str, prompt: str) -> Any:
        client = openai.AzureOpenAI(
            azure_ad_token=SECRETS["AZURE_AD"], api_version="2024-10-21", azure_endpoint=url, azure_deployment="gpt"
        )
        with client:
            return client.chat.completions.create(model="gpt", messages=MESSAGES(prompt)).choices[0].message.content

    check_row(Row("AzureOpenAI (azure_ad_token)", "httpx2"), tmp_path / "c.jsonl", vendor, run)


def test_anthropic_bedrock_sigv4_and_eventstream(tmp_path: Path, vendor: Upstream) -> None:
    """SigV4 signs every request with its own x-amz-date; the stream is AWS's binary eventstream."""

    def run(url: str, prompt: str) -> Any:
        client = anthropic.AnthropicBedrock(
            aws_access_key=SECRETS["AWS_ACCESS"],
            aws_secret_key=SECRETS["AWS_SECRET"],
            aws_session_token=SECRETS["AWS_SESSION"],
            aws_region="us-east-1",
            base_url=url,
        )
        model = "anthropic.claude-test-v1:0"
        with client:
            reply = client.messages.create(model=model, max_tokens=10, messages=MESSAGES(prompt))
            with client.messages.stream(model=model, max_tokens=10, messages=MESSAGES(prompt)) as stream:
                pieces = list(stream.text_stream)
        return reply.content[0].text, pieces

    cassette = tmp_path / "c.jsonl"
    check_row(Row("AnthropicBedrock (SigV4 + session token, eventstream)", "httpx2"), cassette, vendor, run)
    text = cassette.read_text()
    assert "AWS4-HMAC-SHA256" not in text and "x-amz-date" in text.lower()
    assert '"base64"' in text  # the eventstream frames are binary: kept as bytes


def test_anthropic_vertex(tmp_path: Path, vendor: Upstream) -> None:
    def run(url: str, prompt: str) -> Any:
        client = anthropic.AnthropicVertex(
            access_token=SECRETS["OAUTH"], project_id="proj", region="us-east5", base_url=url
        )
        with client:
            reply = client.messages.create(model="claude-test", max_tokens=10, messages=MESSAGES(prompt))
            with client.messages.stream(model="claude-test", max_tokens=10, messages=MESSAGES(prompt)) as stream:
                pieces = list(stream.text_stream)
        return reply.content[0].text, pieces

    check_row(Row("AnthropicVertex", "httpx2"), tmp_path / "c.jsonl", vendor, run)


def test_genai_vertex(tmp_path: Path, vendor: Upstream) -> None:
    from google import genai
    from google.genai import types
    from google.oauth2.credentials import Credentials

    def run(url: str, prompt: str) -> Any:
        client = genai.Client(
            vertexai=True,
            project="proj",
            location="us-central1",
            credentials=Credentials(token=SECRETS["OAUTH"]),
            http_options=types.HttpOptions(base_url=url),
        )
        reply = client.models.generate_content(model="gemini-test", contents=prompt)
        pieces = [c.text for c in client.models.generate_content_stream(model="gemini-test", contents=prompt)]

        async def in_async() -> Any:
            answer = await client.aio.models.generate_content(model="gemini-test", contents=prompt)
            await client.aio.aclose()
            return answer.text

        return reply.text, pieces, asyncio.run(in_async())

    check_row(Row("genai.Client(vertexai=True)", "httpx2"), tmp_path / "c.jsonl", vendor, run)


def test_trio(tmp_path: Path, vendor: Upstream) -> None:
    import trio

    def run(url: str, prompt: str) -> Any:
        async def main() -> Any:
            async with openai.AsyncOpenAI(api_key=SECRETS["OPENAI"], base_url=url + "/v1") as client:
                stream = await client.chat.completions.create(model="m", messages=MESSAGES(prompt), stream=True)
                async with stream:
                    return [
                        c.choices[0].delta.content async for c in stream if c.choices and c.choices[0].delta.content
                    ]

        return trio.run(main)

    check_row(Row("trio (AsyncOpenAI stream)", "httpx2"), tmp_path / "c.jsonl", vendor, run)


def test_uvloop(tmp_path: Path, vendor: Upstream) -> None:
    import uvloop

    def run(url: str, prompt: str) -> Any:
        async def main() -> Any:
            async with anthropic.AsyncAnthropic(api_key=SECRETS["ANTHROPIC"], base_url=url) as client:
                async with client.messages.stream(model="m", max_tokens=10, messages=MESSAGES(prompt)) as stream:
                    return [text async for text in stream.text_stream]

        return uvloop.run(main())

    check_row(Row("uvloop (AsyncAnthropic stream)", "httpx2"), tmp_path / "c.jsonl", vendor, run)
