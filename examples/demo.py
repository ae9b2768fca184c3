"""Record a short openai session against a local vendor-shaped server, stop the server, replay it offline,
and show that every chunk the SDK received is byte-identical. No API key, no network.

    python examples/demo.py                 # records into a temporary folder
    python examples/demo.py --write cassettes/openai_demo.jsonl
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import openai

import vcr_transport


class VendorHandler(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions like OpenAI: JSON, or an SSE stream written chunk by chunk."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        text = "echo: " + request["messages"][-1]["content"]
        if not request.get("stream"):
            body = json.dumps(
                {
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": request["model"],
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for word in [*text.split(" "), None]:
            delta = {"content": word + " "} if word else {}
            chunk = {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": request["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": None if word else "stop"}],
            }
            event = f"data: {json.dumps(chunk)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
            time.sleep(0.02)
        done = b"data: [DONE]\n\n"
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))


class ChunkTap(httpx2.BaseTransport):
    """Notes every chunk the SDK receives from the transport below it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.chunks: list[bytes] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.inner.handle_request(request)
        inner_stream, seen = response.stream, self.chunks

        class Tapped(httpx2.SyncByteStream):
            def __iter__(self) -> Any:
                for chunk in inner_stream:
                    seen.append(chunk)
                    yield chunk

            def close(self) -> None:
                inner_stream.close()

        response.stream = Tapped()
        return response

    def close(self) -> None:
        self.inner.close()


def session(transport: Any, base_url: str) -> tuple[str, list[str], list[bytes]]:
    tap = ChunkTap(transport)
    with httpx2.Client(transport=tap) as http:
        client = openai.OpenAI(api_key="sk-demo-not-a-real-key-000000000000", base_url=base_url, http_client=http)
        answer = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "hello"}])
        stream = client.chat.completions.create(
            model="demo", messages=[{"role": "user", "content": "stream me some words"}], stream=True
        )
        words = [c.choices[0].delta.content or "" for c in stream if c.choices]
    return str(answer.choices[0].message.content), words, tap.chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="keep the recorded cassette at this path")
    args = parser.parse_args()
    cassette = args.write or Path(tempfile.mkdtemp()) / "openai_demo.jsonl"

    server = ThreadingHTTPServer(("127.0.0.1", 0), VendorHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    print(f"1. local vendor-shaped server on {base_url}")

    live = session(vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette), base_url)
    print(f"2. recorded: {live[0]!r} and a stream of {len(live[1])} deltas -> {cassette}")

    server.shutdown()
    server.server_close()
    print("3. server stopped")

    replayed = session(vcr_transport.ReplayTransport(cassette), base_url)
    print(f"4. replayed offline: {replayed[0]!r} and {len(replayed[1])} deltas")

    same = replayed == live
    print(
        f"5. {len(live[2])} chunks, {sum(map(len, live[2]))} bytes: {'identical' if same else 'DIFFERENT'}, "
        "boundaries included"
    )
    secret_free = "sk-demo" not in cassette.read_text()
    print(f"6. API key in the cassette: {'no, redacted' if secret_free else 'YES'}")
    if not (same and secret_free):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
