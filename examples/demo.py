"""Record a short openai session against a local vendor-shaped server, stop the server, replay it offline,
and show that every chunk the SDK received is byte-identical. No API key, no network.

    python examples/demo.py                 # records into a temporary folder
    python examples/demo.py --write cassettes/openai_demo.jsonl
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx2
import openai

import vcr_transport

sys.path.insert(0, str(Path(__file__).parent))
import local_vendor  # noqa: E402


class ChunkTap(httpx2.BaseTransport):
    """Notes every chunk the SDK receives from the transport below it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.chunks: list[bytes] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response: httpx2.Response = self.inner.handle_request(request)
        stream, seen = response.stream, self.chunks
        assert isinstance(stream, httpx2.SyncByteStream)  # as the client itself asserts
        inner_stream: httpx2.SyncByteStream = stream

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
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--write", type=Path, help="keep the recorded cassette at this path")
    args = parser.parse_args()
    cassette = args.write or Path(tempfile.mkdtemp()) / "openai_demo.jsonl"

    with local_vendor.running(port=0) as server_url:
        base_url = server_url + "/v1"
        print(f"1. local vendor-shaped server on {base_url}")
        live = session(vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette), base_url)
        print(f"2. recorded: {live[0]!r} and a stream of {len(live[1])} deltas -> {cassette}")
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
