"""A vendor-shaped tool-calling API on 127.0.0.1 and the agents that use it through the real SDKs: openai
Chat Completions (``tool_calls`` / ``role: tool``), anthropic Messages (``tool_use`` / ``tool_result``) and
Gemini (``functionCall`` / ``functionResponse``).

Each agent asks the model to add two numbers: turn 1 answers with a tool call, the agent runs the tool and
sends its result back with the call's id, turn 2 answers with text. Every run of the API (``ToolApi.run``)
gives its own tool-call ids, message ids and text, as a live vendor does: a recording and a live check of
the same agent differ in every id the app echoes back. ``parallel`` makes turn 1 call the tool twice (the
next request then has a place in the conversation the recording never had); ``drop`` removes a field from
turn 2's answer (its shape changed)."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types as genai_types
from upstream import Received, Reply, Upstream

MODEL = "test-model"
ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
OPENAI_TOOLS = [{"type": "function", "function": {"name": "add", "description": "Add.", "parameters": ADD}}]
ANTHROPIC_TOOLS = [{"name": "add", "description": "Add.", "input_schema": ADD}]
PROMPT = "What is 2 + 3?"


class ToolApi(Upstream):
    """The three vendors' tool-calling endpoints; ``run`` names this run's ids and words."""

    def __init__(self) -> None:
        super().__init__()
        self.run = "rec"
        self.parallel = False
        self.drop = ""  # a top-level field of turn 2's answer to leave out
        self._ids = itertools.count(1)
        self.routes["/v1/chat/completions"] = self._openai
        self.routes["/v1/messages"] = self._anthropic
        self.routes["/v1/models/"] = self._gemini

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{self.run}{next(self._ids)}"

    def _calls(self) -> list[dict[str, int]]:
        return [{"a": 2, "b": 3}, {"a": 3, "b": 2}] if self.parallel else [{"a": 2, "b": 3}]

    def _final(self, answer: dict[str, Any]) -> Reply:
        return Reply.json({key: value for key, value in answer.items() if key != self.drop})

    def _openai(self, received: Received) -> Reply:
        body = received.json()
        answer: dict[str, Any] = {
            "id": self.fresh("chatcmpl-"),
            "object": "chat.completion",
            "created": 1700000000 + next(self._ids),
            "model": MODEL,
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        if body["messages"][-1]["role"] == "tool":
            text = f"The sum is 5 ({self.run} run)."
            message = {"role": "assistant", "content": text}
            answer["choices"] = [{"index": 0, "message": message, "finish_reason": "stop"}]
            return self._final(answer)
        tool_calls = [
            {"id": self.fresh("call_"), "type": "function", "function": {"name": "add", "arguments": json.dumps(args)}}
            for args in self._calls()
        ]
        message = {"role": "assistant", "content": f"Adding ({self.run}).", "tool_calls": tool_calls}
        answer["choices"] = [{"index": 0, "message": message, "finish_reason": "tool_calls"}]
        return Reply.json(answer)

    def _anthropic(self, received: Received) -> Reply:
        body = received.json()
        last = body["messages"][-1]["content"]
        answer: dict[str, Any] = {
            "id": self.fresh("msg_"),
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if isinstance(last, list) and any(block.get("type") == "tool_result" for block in last):
            answer["content"] = [{"type": "text", "text": f"The sum is 5 ({self.run} run)."}]
            answer["stop_reason"] = "end_turn"
            return self._final(answer)
        uses = [
            {"type": "tool_use", "id": self.fresh("toolu_"), "name": "add", "input": args} for args in self._calls()
        ]
        answer["content"] = [{"type": "text", "text": f"Adding ({self.run})."}, *uses]
        answer["stop_reason"] = "tool_use"
        return Reply.json(answer)

    def _gemini(self, received: Received) -> Reply:
        body = received.json()
        last = body["contents"][-1]["parts"]
        answer: dict[str, Any] = {
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": MODEL,
            "responseId": self.fresh("resp-"),
        }
        if any("functionResponse" in part for part in last):
            parts: list[dict[str, Any]] = [{"text": f"The sum is 5 ({self.run} run)."}]
            answer["candidates"] = [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}]
            return self._final(answer)
        parts = [{"functionCall": {"id": self.fresh("fc-"), "name": "add", "args": args}} for args in self._calls()]
        answer["candidates"] = [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}]
        return Reply.json(answer)


def _add(arguments: dict[str, Any]) -> str:
    return str(int(arguments["a"]) + int(arguments["b"]))


def _openai_turn(messages: list[dict[str, Any]], message: Any) -> bool:
    """The assistant's message and the tool results added to ``messages``; False when it called no tool."""
    if not message.tool_calls:
        return False
    messages.append(
        {
            "role": "assistant",
            "content": message.content,
            "tool_calls": [call.model_dump(exclude_none=True) for call in message.tool_calls],
        }
    )
    for call in message.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": _add(json.loads(call.function.arguments))})
    return True


def openai_agent(base_url: str, api_key: str = "sk-app-own-key", side: str = "sync") -> str:
    """The openai agent, sync or async, with the client it builds itself; the final answer's text."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    if side == "async":

        async def run() -> str:
            async with openai.AsyncOpenAI(api_key=api_key, base_url=base_url + "/v1", max_retries=0) as client:
                while True:
                    reply = await client.chat.completions.create(model=MODEL, messages=messages, tools=OPENAI_TOOLS)
                    if not _openai_turn(messages, reply.choices[0].message):
                        return str(reply.choices[0].message.content)

        return asyncio.run(run())
    with openai.OpenAI(api_key=api_key, base_url=base_url + "/v1", max_retries=0) as client:
        while True:
            reply = client.chat.completions.create(model=MODEL, messages=messages, tools=OPENAI_TOOLS)
            if not _openai_turn(messages, reply.choices[0].message):
                return str(reply.choices[0].message.content)


def anthropic_agent(base_url: str, api_key: str = "sk-ant-app-own-key") -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    with anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0) as client:
        while True:
            reply = client.messages.create(model=MODEL, max_tokens=64, messages=messages, tools=ANTHROPIC_TOOLS)
            if reply.stop_reason != "tool_use":
                return str(reply.content[0].text)  # type: ignore[union-attr]
            messages.append({"role": "assistant", "content": [block.model_dump() for block in reply.content]})
            results = [
                {"type": "tool_result", "tool_use_id": block.id, "content": _add(block.input)}  # type: ignore[arg-type]
                for block in reply.content
                if block.type == "tool_use"
            ]
            messages.append({"role": "user", "content": results})


def genai_agent(base_url: str, api_key: str = "AIzaSyAPPOWNKEY0123456789abcdefghijklm") -> str:
    tool = genai_types.Tool(
        function_declarations=[
            genai_types.FunctionDeclaration(name="add", description="Add.", parameters_json_schema=ADD)
        ]
    )
    config = genai_types.GenerateContentConfig(tools=[tool])
    contents: list[Any] = [genai_types.Content(role="user", parts=[genai_types.Part(text=PROMPT)])]
    client = genai.Client(api_key=api_key, http_options=genai_types.HttpOptions(base_url=base_url))
    try:
        while True:
            reply = client.models.generate_content(model=MODEL, contents=contents, config=config)
            calls = reply.function_calls
            if not calls:
                return str(reply.text)
            contents.append(reply.candidates[0].content)  # type: ignore[index]
            responses = [
                genai_types.Part(
                    function_response=genai_types.FunctionResponse(
                        id=call.id, name=call.name, response={"result": _add(call.args or {})}
                    )
                )
                for call in calls
            ]
            contents.append(genai_types.Content(role="user", parts=responses))
    finally:
        client.close()


AGENTS = {"openai": openai_agent, "anthropic": anthropic_agent, "genai": genai_agent}
