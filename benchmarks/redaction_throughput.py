"""Throughput of ``Redactor.redact_text`` over realistic LLM traffic, in MB/s of input text.

    python -m benchmarks.redaction_throughput            # medians of 7 repeats
    python -m benchmarks.redaction_throughput --repeats 3

Four inputs, each about 4 MB, built from a fixed seed so two runs (or two checkouts) redact the same bytes:

- ``sse-clean``: OpenAI and Anthropic SSE events, redacted one event at a time, as the stream recorder does.
- ``json-clean``: whole chat-completion and Gemini response bodies (JSON text with ``\\u`` escapes and
  usage counters), one body per call.
- ``sse-secrets`` / ``json-secrets``: the same with a credential planted in about one event or body in 50.

Times are CPU time of this process (time.process_time), so a machine busy with other work changes
them less. Nothing here reads files or the network.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable

from vcr_transport import Redactor

WORDS = (
    "the model returns a short answer with tokens bearer of news ring torch key value schema password field "
    "stream delta content usage input output cache read write choice index finish reason stop length tool call "
    "function arguments weather city Paris température naïve café résumé"
).split()
SECRETS = (
    "sk-proj-4fJ9kQ2mXv7LpR8sT1uW3yZ5aB6cD0eF9gH2iJ4k",
    "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
    "AKIAIOSFODNN7EXAMPL3",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
)
TARGET = 4 * 1024 * 1024


def _sentence(rng: random.Random, secret: str | None) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 14))]
    if secret:
        words.insert(rng.randint(0, len(words)), secret)
    return " ".join(words)


def sse_events(rng: random.Random, with_secrets: bool) -> list[str]:
    events: list[str] = []
    size = 0
    while size < TARGET:
        secret = rng.choice(SECRETS) if with_secrets and rng.random() < 0.02 else None
        text = _sentence(rng, secret)
        if rng.random() < 0.5:
            payload = {
                "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
                "object": "chat.completion.chunk",
                "created": 1741570283,
                "model": "gpt-4o-2024-08-06",
                "choices": [{"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}],
            }
            event = f"data: {json.dumps(payload, separators=(',', ':'))}\n\n"
        else:
            payload = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
            event = f"event: content_block_delta\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n"
        events.append(event)
        size += len(event)
    return events


def json_bodies(rng: random.Random, with_secrets: bool) -> list[str]:
    bodies: list[str] = []
    size = 0
    while size < TARGET:
        secret = rng.choice(SECRETS) if with_secrets and rng.random() < 0.02 else None
        text = " ".join(_sentence(rng, secret if n == 0 else None) for n in range(60))
        if rng.random() < 0.5:
            body = {
                "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 301, "total_tokens": 313},
            }
            document = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        else:
            body = {
                "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 280, "totalTokenCount": 289},
                "modelVersion": "gemini-2.0-flash",
            }
            document = json.dumps(body, indent=2)  # ensure_ascii: \u escapes, as google-genai sends
        bodies.append(document)
        size += len(document)
    return bodies


def measure(texts: list[str], repeats: int, response: bool) -> float:
    """Median MB/s of redacting every text with a fresh Redactor (one per cassette)."""
    megabytes = sum(len(text.encode()) for text in texts) / 1e6
    rates = []
    for _ in range(repeats):
        redact: Callable[..., str] = Redactor().redact_text
        start = time.process_time()
        for text in texts:
            redact(text, response=response)
        rates.append(megabytes / (time.process_time() - start))
    return statistics.median(rates)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(20240601)
    inputs = {
        "sse-clean": sse_events(rng, False),
        "sse-secrets": sse_events(rng, True),
        "json-clean": json_bodies(rng, False),
        "json-secrets": json_bodies(rng, True),
    }
    for name, texts in inputs.items():
        print(f"{name:14s} {measure(texts, args.repeats, response=True):8.1f} MB/s")


if __name__ == "__main__":
    main()
