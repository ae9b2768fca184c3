"""A vendor-shaped server on 127.0.0.1 for the examples and the demo: it answers like OpenAI, Anthropic
and Gemini, echoing the last prompt, as JSON or as an SSE stream written chunk by chunk. No key needed.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager, nullcontext
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, cast

HOST = "127.0.0.1"
PORT = 8765  # fixed, so that recorded URLs replay as they are
BASE_URL = f"http://{HOST}:{PORT}"


def _last_prompt(body: dict[str, Any]) -> str:
    if "contents" in body:
        return str(body["contents"][-1]["parts"][0]["text"])
    content = body["messages"][-1]["content"]
    return str(content if isinstance(content, str) else content[0]["text"])


def _events(path: str, body: dict[str, Any], words: list[str]) -> tuple[Any, list[Any]]:
    """(the JSON answer, the stream's events) in the vendor's shape."""
    text = " ".join(words)
    if "/chat/completions" in path:
        base = {"id": "chatcmpl-1", "created": 0, "model": body["model"]}
        answer = {
            **base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        }
        chunks: list[Any] = [
            {
                **base,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": w + " "}, "finish_reason": None}],
            }
            for w in words
        ]
        return answer, [*chunks, "[DONE]"]
    if "/messages" in path:
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": len(words)},
        }
        events = [
            ("message_start", {"type": "message_start", "message": {**message, "content": []}}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
        ]
        events += [
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w + " "}},
            )
            for w in words
        ]
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": len(words)}},
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return message, events

    def candidate(part: str, last: bool) -> dict[str, Any]:
        found: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": part}]}, "index": 0}
        return {"candidates": [{**found, "finishReason": "STOP"} if last else found]}

    return candidate(text, True), [candidate(w + " ", i == len(words) - 1) for i, w in enumerate(words)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        words = ("echo: " + _last_prompt(body)).split()
        answer, events = _events(self.path, body, words)
        if not (body.get("stream") or "streamGenerateContent" in self.path):
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in events:
            # (event name, data), or data alone
            name, payload = cast("tuple[str | None, Any]", event if isinstance(event, tuple) else (None, event))
            text = (
                f"event: {name}\n" if name else ""
            ) + f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n"
            chunk = text.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
            time.sleep(0.01)
        self.wfile.write(b"0\r\n\r\n")


def run_example(sdk: str, *ways: Callable[[Literal["record", "replay"]], str]) -> None:
    """Run an example's ways in; ``--record`` records them against this server, else they replay offline.
    The mode also goes into VCR_TRANSPORT_MODE, which the environment way reads."""
    mode: Literal["record", "replay"] = "record" if "--record" in sys.argv else "replay"
    os.environ["VCR_TRANSPORT_MODE"] = mode
    with running() if mode == "record" else nullcontext(BASE_URL):
        results = [way(mode) for way in ways]
    for way, result in zip(ways, results, strict=True):
        print(f"{sdk}, {way.__name__.removesuffix('_way').replace('_', ' ')} ({mode}): {result.strip()}")


@contextmanager
def running(port: int = PORT) -> Generator[str]:
    """The server, for the length of a ``with`` block; yields its base URL."""
    server = ThreadingHTTPServer((HOST, port), _Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":  # python examples/local_vendor.py: serve until Ctrl-C (the tutorial, without a key)
    with running() as url:
        print(f"a vendor-shaped server on {url} (OpenAI: OPENAI_BASE_URL={url}/v1); stop with Ctrl-C", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
