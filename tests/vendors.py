"""Vendor-shaped replies (openai, anthropic, Gemini) that echo the last user prompt, and the SDK drivers
that talk to them through a given transport, sync or async, streaming or not."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import anthropic
import httpx
import httpx2
import openai
from google import genai
from google.genai import types as genai_types
from upstream import Received, Reply, split_bytes, split_events

MODEL = "test-model"
# Multi-byte characters so that byte splits fall inside them.
DELTA_SUFFIX = " héllo ✓ 日本"


def last_prompt(body: Any) -> str:
    if "contents" in body:
        return str(body["contents"][-1]["parts"][0]["text"])
    content = body["messages"][-1]["content"]
    return str(content if isinstance(content, str) else content[0]["text"])


def pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [word if i == 0 else " " + word for i, word in enumerate(words)]


def sse(events: list[tuple[str | None, Any]], newline: str = "\n") -> bytes:
    out = []
    for name, data in events:
        lines = ([f"event: {name}"] if name else []) + [f"data: {data if isinstance(data, str) else json.dumps(data)}"]
        out.append(newline.join(lines) + newline + newline)
    return "".join(out).encode()


def chunked(body: bytes, split: str | int) -> list[bytes]:
    return split_events(body) if split == "events" else split_bytes(body, int(split))


def openai_reply(received: Received, split: str | int = "events", newline: str = "\n", pause: float = 0.0) -> Reply:
    body = received.json()
    text = "echo:" + last_prompt(body)
    if not body.get("stream"):
        return Reply.json(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": MODEL,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": MODEL}
    events: list[tuple[str | None, Any]] = [
        (None, {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        for piece in pieces(text + DELTA_SUFFIX)
    ]
    events.append((None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    events.append((None, "[DONE]"))
    data = sse(events, newline)
    return Reply(200, [("content-type", "text/event-stream")], chunked(data, split), pause=pause)


def anthropic_reply(received: Received, split: str | int = "events", newline: str = "\n", pause: float = 0.0) -> Reply:
    body = received.json()
    text = "echo:" + last_prompt(body)
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    if not body.get("stream"):
        return Reply.json(message)
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        ("ping", {"type": "ping"}),
    ]
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}})
        for p in pieces(text + DELTA_SUFFIX)
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 2},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    data = sse(events, newline)
    return Reply(200, [("content-type", "text/event-stream")], chunked(data, split), pause=pause)


def gemini_reply(received: Received, split: str | int = "events", newline: str = "\r\n", pause: float = 0.0) -> Reply:
    body = received.json()
    text = "echo:" + last_prompt(body)

    def candidate(part: str, finish: bool) -> dict[str, Any]:
        found: dict[str, Any] = {"content": {"parts": [{"text": part}], "role": "model"}, "index": 0}
        if finish:
            found["finishReason"] = "STOP"
        return {"candidates": [found], "modelVersion": MODEL}

    if "streamGenerateContent" not in received.path:
        return Reply.json(candidate(text, True))
    parts = pieces(text + DELTA_SUFFIX)
    events: list[tuple[str | None, Any]] = [(None, candidate(p, i == len(parts) - 1)) for i, p in enumerate(parts)]
    data = sse(events, newline)
    return Reply(200, [("content-type", "text/event-stream")], chunked(data, split), pause=pause)


VENDOR_ROUTES: dict[str, tuple[str, Callable[..., Reply]]] = {
    "openai": ("/v1/chat/completions", openai_reply),
    "anthropic": ("/v1/messages", anthropic_reply),
    "genai": ("/v1/models/", gemini_reply),
}

OPENAI_KEY = "sk-proj-TESTKEYabcdefghijklmnopqrstuvwxyz0123"
ANTHROPIC_KEY = "sk-ant-api03-TESTKEYabcdefghijklmnopqrstuvwxyz0123"
GOOGLE_KEY = "AIzaSyTESTKEY0123456789abcdefghijklmno"


@dataclass(frozen=True)
class Sdk:
    """One SDK, over one HTTP library, on one side (sync or async)."""

    name: str
    library: ModuleType
    side: str

    @property
    def id(self) -> str:
        return f"{self.name}-{self.library.__name__}-{self.side}"

    @property
    def is_async(self) -> bool:
        return self.side == "async"

    def run(
        self, transport: Any, base_url: str, steps: list[tuple[str, list[str]]], **client_options: Any
    ) -> list[Any]:
        """Run ``steps`` (("chat"|"stream", conversation)) through one client on ``transport``; close it."""
        if transport is None:
            return self._run_default(base_url, steps, client_options)
        if self.is_async:
            return asyncio.run(self._run_async(transport, base_url, steps, client_options))
        with self.library.Client(transport=transport) as http_client:
            client = self._client(http_client, None, base_url, client_options)
            return [getattr(self, f"_{kind}_sync")(client, conversation) for kind, conversation in steps]

    async def _run_async(
        self, transport: Any, base_url: str, steps: list[tuple[str, list[str]]], options: Any
    ) -> list[Any]:
        async with self.library.AsyncClient(transport=transport) as http_client:
            client = self._client(None, http_client, base_url, options)
            return [await getattr(self, f"_{kind}_async")(client, conversation) for kind, conversation in steps]

    def _run_default(self, base_url: str, steps: list[tuple[str, list[str]]], options: dict[str, Any]) -> list[Any]:
        """The SDK with the HTTP client it builds itself (what use_cassette must reach)."""
        if self.name == "genai":
            http_options = genai_types.HttpOptions(base_url=base_url, **options.pop("http_options", {}))
            client = genai.Client(api_key=options.pop("api_key", GOOGLE_KEY), http_options=http_options)
        elif self.name == "openai":
            cls = openai.AsyncOpenAI if self.is_async else openai.OpenAI
            client = cls(api_key=options.pop("api_key", OPENAI_KEY), base_url=base_url + "/v1", **options)
        else:
            cls = anthropic.AsyncAnthropic if self.is_async else anthropic.Anthropic
            client = cls(api_key=options.pop("api_key", ANTHROPIC_KEY), base_url=base_url, **options)
        if not self.is_async:
            try:
                return [getattr(self, f"_{kind}_sync")(client, conversation) for kind, conversation in steps]
            finally:
                client.close()

        async def run() -> list[Any]:
            try:
                return [await getattr(self, f"_{kind}_async")(client, conversation) for kind, conversation in steps]
            finally:
                await (client.aio.aclose() if self.name == "genai" else client.close())

        return asyncio.run(run())

    def _client(self, sync_http: Any, async_http: Any, base_url: str, options: dict[str, Any]) -> Any:
        http_client = sync_http or async_http
        if self.name == "openai":
            cls = openai.AsyncOpenAI if self.is_async else openai.OpenAI
            return cls(
                api_key=options.pop("api_key", OPENAI_KEY),
                base_url=base_url + "/v1",
                http_client=http_client,
                **options,
            )
        if self.name == "anthropic":
            cls = anthropic.AsyncAnthropic if self.is_async else anthropic.Anthropic
            return cls(
                api_key=options.pop("api_key", ANTHROPIC_KEY), base_url=base_url, http_client=http_client, **options
            )
        unused = self.library.MockTransport(_refuse)
        http_options = genai_types.HttpOptions(
            base_url=base_url,
            httpx_client=sync_http or self.library.Client(transport=unused),
            httpx_async_client=async_http or self.library.AsyncClient(transport=unused),
            **options.pop("http_options", {}),
        )
        return genai.Client(api_key=options.pop("api_key", GOOGLE_KEY), http_options=http_options)

    # Conversations alternate user and assistant turns, starting and ending with the user.
    @staticmethod
    def _openai_messages(conversation: list[str]) -> list[dict[str, Any]]:
        return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(conversation)]

    @staticmethod
    def _anthropic_messages(conversation: list[str]) -> list[dict[str, Any]]:
        return [
            {"role": "user" if i % 2 == 0 else "assistant", "content": [{"type": "text", "text": t}]}
            for i, t in enumerate(conversation)
        ]

    @staticmethod
    def _gemini_contents(conversation: list[str]) -> list[Any]:
        return [
            genai_types.Content(role="user" if i % 2 == 0 else "model", parts=[genai_types.Part(text=t)])
            for i, t in enumerate(conversation)
        ]

    def _chat_sync(self, client: Any, conversation: list[str]) -> str:
        if self.name == "openai":
            return str(
                client.chat.completions.create(model=MODEL, messages=self._openai_messages(conversation))
                .choices[0]
                .message.content
            )
        if self.name == "anthropic":
            return str(
                client.messages.create(model=MODEL, max_tokens=64, messages=self._anthropic_messages(conversation))
                .content[0]
                .text
            )
        return str(client.models.generate_content(model=MODEL, contents=self._gemini_contents(conversation)).text)

    async def _chat_async(self, client: Any, conversation: list[str]) -> str:
        if self.name == "openai":
            r = await client.chat.completions.create(model=MODEL, messages=self._openai_messages(conversation))
            return str(r.choices[0].message.content)
        if self.name == "anthropic":
            r = await client.messages.create(
                model=MODEL, max_tokens=64, messages=self._anthropic_messages(conversation)
            )
            return str(r.content[0].text)
        r = await client.aio.models.generate_content(model=MODEL, contents=self._gemini_contents(conversation))
        return str(r.text)

    def _stream_sync(self, client: Any, conversation: list[str]) -> list[str]:
        if self.name == "openai":
            stream = client.chat.completions.create(
                model=MODEL, messages=self._openai_messages(conversation), stream=True
            )
            return [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
        if self.name == "anthropic":
            stream = client.messages.create(
                model=MODEL, max_tokens=64, messages=self._anthropic_messages(conversation), stream=True
            )
            return [e.delta.text for e in stream if e.type == "content_block_delta"]
        return [
            c.text
            for c in client.models.generate_content_stream(model=MODEL, contents=self._gemini_contents(conversation))
        ]

    async def _stream_async(self, client: Any, conversation: list[str]) -> list[str]:
        if self.name == "openai":
            stream = await client.chat.completions.create(
                model=MODEL, messages=self._openai_messages(conversation), stream=True
            )
            return [c.choices[0].delta.content async for c in stream if c.choices and c.choices[0].delta.content]
        if self.name == "anthropic":
            stream = await client.messages.create(
                model=MODEL, max_tokens=64, messages=self._anthropic_messages(conversation), stream=True
            )
            return [e.delta.text async for e in stream if e.type == "content_block_delta"]
        stream = await client.aio.models.generate_content_stream(
            model=MODEL, contents=self._gemini_contents(conversation)
        )
        return [c.text async for c in stream]

    def _first_sync(self, client: Any, conversation: list[str]) -> str:
        """Start a stream and stop after its first text delta, as a UI that got what it needed does."""
        if self.name == "openai":
            stream = client.chat.completions.create(
                model=MODEL, messages=self._openai_messages(conversation), stream=True
            )
            text = next(c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content)
            stream.close()
            return str(text)
        if self.name == "anthropic":
            stream = client.messages.create(
                model=MODEL, max_tokens=64, messages=self._anthropic_messages(conversation), stream=True
            )
            text = next(e.delta.text for e in stream if e.type == "content_block_delta")
            stream.close()
            return str(text)
        for chunk in client.models.generate_content_stream(model=MODEL, contents=self._gemini_contents(conversation)):
            return str(chunk.text)
        raise AssertionError("empty stream")

    async def _first_async(self, client: Any, conversation: list[str]) -> str:
        if self.name == "openai":
            stream = await client.chat.completions.create(
                model=MODEL, messages=self._openai_messages(conversation), stream=True
            )
            async for c in stream:
                if c.choices and c.choices[0].delta.content:
                    await stream.close()
                    return str(c.choices[0].delta.content)
        elif self.name == "anthropic":
            stream = await client.messages.create(
                model=MODEL, max_tokens=64, messages=self._anthropic_messages(conversation), stream=True
            )
            async for e in stream:
                if e.type == "content_block_delta":
                    await stream.close()
                    return str(e.delta.text)
        else:
            # google-genai leaves the transport stream open after an early stop.
            stream = await client.aio.models.generate_content_stream(
                model=MODEL, contents=self._gemini_contents(conversation)
            )
            async for chunk in stream:
                return str(chunk.text)
        raise AssertionError("empty stream")

    def _post_sync(self, client: Any, path_and_body: list[str]) -> Any:
        """A low-level POST through the SDK's own request machinery; returns the parsed JSON."""
        path, body = path_and_body[0], json.loads(path_and_body[1])
        if self.name == "genai":
            return json.loads(client._api_client.request("post", path, body).body)
        return client.post(path, body=body, cast_to=object)

    async def _post_async(self, client: Any, path_and_body: list[str]) -> Any:
        path, body = path_and_body[0], json.loads(path_and_body[1])
        if self.name == "genai":
            return json.loads((await client.aio._api_client.async_request("post", path, body)).body)
        return await client.post(path, body=body, cast_to=object)


def _refuse(request: Any) -> Any:
    raise AssertionError(f"this test's client must not be used: {request.method} {request.url}")


SDKS = [
    Sdk(name, library, side)
    for name in ("openai", "anthropic", "genai")
    for library in (httpx, httpx2)
    for side in ("sync", "async")
    if not (name == "anthropic" and library is httpx)  # anthropic refuses classic httpx clients
]
