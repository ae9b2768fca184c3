"""A recorded retry delay replays with the SDK's own decision: for every form of ``retry-after`` the real
SDK client makes as many requests on replay as it made live.

Live: the real openai (or anthropic) client, through a RecordingTransport, against a loopback upstream
that answers a 429 carrying the header and then a 200. Replay: the same client through a ReplayTransport
wrapped in a counter. The SDK's retry sleep is replaced by one that records the delay it computed, so
nothing waits; the delays it computed on replay show that replay is fast too.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from upstream import Received, Reply, Upstream
from vendors import anthropic_reply, openai_reply

import vcr_transport
from vcr_transport._core.engine._engine import replay_headers
from vcr_transport._core.format._format import RecordedCall


def _in(seconds: float) -> str:
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


# (id, response headers of the 429, requests openai makes live with max_retries=1)
OPENAI_FORMS: list[tuple[str, Callable[[], list[tuple[str, str]]], int]] = [
    ("seconds", lambda: [("retry-after", "2")], 2),
    ("seconds as a float", lambda: [("retry-after", "1.5")], 2),
    ("milliseconds", lambda: [("retry-after-ms", "1500")], 2),
    ("milliseconds over the limit", lambda: [("retry-after-ms", "200000")], 1),
    ("milliseconds garbage, then seconds", lambda: [("retry-after-ms", "soon"), ("retry-after", "3")], 2),
    ("HTTP date in 30 s", lambda: [("retry-after", _in(30))], 2),
    ("HTTP date in 5 minutes", lambda: [("retry-after", _in(300))], 1),
    ("HTTP date in the past", lambda: [("retry-after", "Thu, 01 Jan 1970 00:00:00 GMT")], 2),
    ("HTTP date in year 9999", lambda: [("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT")], 1),
    ("garbage", lambda: [("retry-after", "in a while")], 2),
    ("negative", lambda: [("retry-after", "-5")], 2),
    ("zero", lambda: [("retry-after", "0")], 2),
    ("exactly the limit, 120 s", lambda: [("retry-after", "120")], 2),
    ("past the limit, 121 s", lambda: [("retry-after", "121")], 1),
    ("past the limit, 600 s", lambda: [("retry-after", "600")], 1),
    ("inf", lambda: [("retry-after", "inf")], 2),
    ("nan", lambda: [("retry-after", "nan")], 2),
    ("overflowing number", lambda: [("retry-after", "1e999")], 1),
    ("none", list, 2),
    ("x-should-retry false", lambda: [("retry-after", "1"), ("x-should-retry", "false")], 1),
]

ANTHROPIC_FORMS: list[tuple[str, Callable[[], list[tuple[str, str]]], int]] = [
    ("seconds past openai's limit", lambda: [("retry-after", "600")], 2),
    ("HTTP date in year 9999", lambda: [("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT")], 2),
    ("HTTP date in 30 s", lambda: [("retry-after", _in(30))], 2),
    ("milliseconds", lambda: [("retry-after-ms", "1500")], 2),
    ("garbage", lambda: [("retry-after", "later")], 2),
]


class Counting(httpx2.BaseTransport):
    """Counts the requests it passes on."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self.inner = inner
        self.requests = 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The delays the SDKs computed before each retry; nothing actually sleeps."""
    computed: list[float] = []

    def record(self: Any, *, retries_taken: int, max_retries: int, options: Any, response: Any) -> None:
        remaining = max_retries - retries_taken
        computed.append(self._calculate_retry_timeout(remaining, options, response.headers if response else None))

    monkeypatch.setattr(openai._base_client.SyncAPIClient, "_sleep_for_retry", record)
    monkeypatch.setattr(anthropic._base_client.SyncAPIClient, "_sleep_for_retry", record)
    return computed


def _rate_limited_once(
    headers: list[tuple[str, str]], reply: Callable[[Received], Reply]
) -> Callable[[Received], Reply]:
    answered: list[int] = []

    def route(received: Received) -> Reply:
        answered.append(1)
        if len(answered) == 1:
            return Reply.json({"error": {"message": "slow down", "type": "rate_limit"}}, status=429, headers=headers)
        return reply(received)

    return route


def _ask_openai(transport: httpx2.BaseTransport, base_url: str) -> str:
    with httpx2.Client(transport=transport) as http:
        client = openai.OpenAI(api_key="sk-test", base_url=base_url + "/v1", max_retries=1, http_client=http)
        try:
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        except openai.APIStatusError as error:
            return f"{type(error).__name__} {error.status_code}"
        return str(reply.choices[0].message.content)


def _ask_anthropic(transport: httpx2.BaseTransport, base_url: str) -> str:
    with httpx2.Client(transport=transport) as http:
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=base_url, max_retries=1, http_client=http)
        try:
            reply = client.messages.create(
                model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
        except anthropic.APIStatusError as error:
            return f"{type(error).__name__} {error.status_code}"
        return str(reply.content[0].text)  # type: ignore[union-attr]


def _live_then_replay(
    ask: Callable[[httpx2.BaseTransport, str], str],
    path: str,
    reply: Callable[[Received], Reply],
    headers: list[tuple[str, str]],
    cassette: Path,
    sleeps: list[float],
) -> tuple[int, int, str, str, list[float]]:
    upstream = Upstream()
    upstream.routes[path] = _rate_limited_once(headers, reply)
    upstream.start()
    try:
        live_answer = ask(vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette), upstream.url)
    finally:
        upstream.stop()
    live_requests = len(upstream.received)
    sleeps.clear()
    replay = Counting(vcr_transport.ReplayTransport(cassette))
    replay_answer = ask(replay, upstream.url)
    return live_requests, replay.requests, live_answer, replay_answer, list(sleeps)


@pytest.mark.parametrize(("form", "headers", "expected"), OPENAI_FORMS, ids=[f[0] for f in OPENAI_FORMS])
def test_openai_makes_as_many_requests_on_replay_as_live(
    form: str, headers: Callable[[], list[tuple[str, str]]], expected: int, cassette: Path, sleeps: list[float]
) -> None:
    live, replayed, live_answer, replay_answer, replay_sleeps = _live_then_replay(
        _ask_openai, "/v1/chat/completions", openai_reply, headers(), cassette, sleeps
    )
    assert live == expected, f"{form}: openai made {live} request(s) live"
    assert replayed == live, f"{form}: {live} request(s) live, {replayed} on replay"
    assert replay_answer == live_answer
    assert all(delay <= 0.01 for delay in replay_sleeps), f"{form}: replay waited {replay_sleeps}"


@pytest.mark.parametrize(("form", "headers", "expected"), ANTHROPIC_FORMS, ids=[f[0] for f in ANTHROPIC_FORMS])
def test_anthropic_makes_as_many_requests_on_replay_as_live(
    form: str, headers: Callable[[], list[tuple[str, str]]], expected: int, cassette: Path, sleeps: list[float]
) -> None:
    live, replayed, live_answer, replay_answer, replay_sleeps = _live_then_replay(
        _ask_anthropic, "/v1/messages", anthropic_reply, headers(), cassette, sleeps
    )
    assert live == expected and replayed == live, f"{form}: {live} request(s) live, {replayed} on replay"
    assert replay_answer == live_answer
    assert all(delay <= 0.01 for delay in replay_sleeps), f"{form}: replay waited {replay_sleeps}"


def _call(status: int, headers: list[tuple[str, str]], request: list[tuple[str, str]] | None = None) -> RecordedCall:
    return RecordedCall(0, "POST", "https://api.example.test/v1", request or [], None, status, headers)


def test_a_date_past_the_limit_is_replayed_as_seconds_whatever_the_replay_day() -> None:
    recorded = [("date", "Mon, 01 Jan 2024 00:00:00 GMT"), ("retry-after", "Mon, 01 Jan 2024 00:05:00 GMT")]
    headers = replay_headers(_call(429, recorded), 0.01)
    assert ("retry-after", "300") in headers and ("date", "Mon, 01 Jan 2024 00:00:00 GMT") in headers


def test_a_date_is_counted_from_created_without_a_date_header() -> None:
    short = replay_headers(
        _call(503, [("retry-after", "Mon, 01 Jan 2024 00:00:30 GMT")]), 0.01, "2024-01-01T00:00:00+00:00"
    )
    assert ("retry-after", "0.01") in short
    long = replay_headers(
        _call(503, [("retry-after", "Mon, 01 Jan 2024 00:10:00 GMT")]), 0.01, "2024-01-01T00:00:00+00:00"
    )
    assert ("retry-after", "600") in long


def test_a_date_with_no_reference_time_is_kept_as_recorded() -> None:
    recorded = [("retry-after", "Mon, 01 Jan 2024 00:10:00 GMT")]
    assert replay_headers(_call(429, recorded), 0.01) == recorded


def test_non_retried_responses_and_max_retry_after_none_keep_their_headers() -> None:
    assert replay_headers(_call(400, [("retry-after", "30")]), 0.01) == [("retry-after", "30")]
    assert replay_headers(_call(429, [("retry-after", "30")]), None) == [("retry-after", "30")]
    forced = replay_headers(_call(400, [("retry-after", "30"), ("x-should-retry", "true")]), 0.01)
    assert ("retry-after", "0.01") in forced
