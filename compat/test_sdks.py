"""Cloud clients of the SDKs (Azure, Bedrock with SigV4, Vertex) and other event loops (trio, uvloop)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from conftest import SECRETS, Row, check_row, check_session
from fakes import Upstream
from realtime_server import RealtimeServer

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


# --- Realtime and Live sessions (WebSocket), against tests/realtime_server.py -----------------------------

# openai's sync client calls websockets.sync.client.connect() outside a with block: websockets 17.1+ warns.
_LEGACY_CONNECT = "ignore:connect\\(\\) must be used as a context manager:DeprecationWarning"


def _user_item(prompt: str) -> Any:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}


@pytest.mark.filterwarnings(_LEGACY_CONNECT)
def test_openai_realtime_sync(tmp_path: Path) -> None:
    server = RealtimeServer(tmp_path)

    def run(prompt: str) -> Any:
        client = openai.OpenAI(api_key=SECRETS["OPENAI"], websocket_base_url=f"{server.url}/v1")
        events = []
        with client.realtime.connect(model="gpt-realtime") as connection:
            connection.conversation.item.create(item=_user_item(prompt))
            connection.response.create()
            for event in connection:
                events.append(event.type)
                if event.type == "response.done":
                    break
        return events

    check_session(Row("openai Realtime (sync)", "websockets"), tmp_path / "c.jsonl", server, run)


def test_openai_realtime_async(tmp_path: Path) -> None:
    server = RealtimeServer(tmp_path)

    def run(prompt: str) -> Any:
        async def main() -> Any:
            client = openai.AsyncOpenAI(api_key=SECRETS["OPENAI"], websocket_base_url=f"{server.url}/v1")
            events = []
            async with client.realtime.connect(model="gpt-realtime") as connection:
                await connection.conversation.item.create(item=_user_item(prompt))
                await connection.response.create()
                async for event in connection:
                    events.append(event.type)
                    if event.type == "response.done":
                        break
            return events

        return asyncio.run(main())

    check_session(Row("openai Realtime (async)", "websockets"), tmp_path / "c.jsonl", server, run)


def test_genai_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from google import genai
    from google.genai import types

    server = RealtimeServer(tmp_path, tls=True)  # genai speaks wss:// whenever it has an API key
    monkeypatch.setenv("SSL_CERT_FILE", str(server.ca_file))

    def run(prompt: str) -> Any:
        async def main() -> Any:
            client = genai.Client(
                api_key=SECRETS["GOOGLE"], http_options=types.HttpOptions(base_url=f"https://127.0.0.1:{server.port}")
            )
            config = types.LiveConnectConfig(response_modalities=[types.Modality.AUDIO])
            seen = []
            async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as session:
                await session.send_client_content(turns=types.Content(role="user", parts=[types.Part(text=prompt)]))
                async for message in session.receive():
                    if message.tool_call and message.tool_call.function_calls:
                        call = message.tool_call.function_calls[0]
                        seen.append(call.name)
                        response = types.FunctionResponse(id=call.id, name=call.name, response={"temperature": 21})
                        await session.send_tool_response(function_responses=[response])
                    elif message.text:
                        seen.append(message.text)
            return seen

        return asyncio.run(main())

    check_session(Row("genai Live (aio)", "websockets"), tmp_path / "c.jsonl", server, run)
