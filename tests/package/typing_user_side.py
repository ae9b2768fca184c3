"""Code as a user writes it, type-checked with mypy --strict and pyright (strict) by ``typecheck.py``, beside the
docs' code blocks and the examples: every way to hand one of our transports to a client, for httpx2 and classic
httpx, sync and async, and the typed options. It is never run (the cassettes it names don't exist)."""

from __future__ import annotations

import re

import httpx
import httpx2

import vcr_transport
from vcr_transport import (
    AsyncRecordingTransport,
    ModeTransport,
    Options,
    RecordingTransport,
    ReplayTransport,
    async_transport,
    transport,
)

PATH = "cassettes/typing.jsonl"


def sync_clients() -> list[httpx2.Client | httpx.Client]:
    """transport(), ModeTransport, ReplayTransport and RecordingTransport, for both libraries' clients."""
    mode_transport: ModeTransport = transport(PATH, mode="replay", ignore_fields=["model"], ordered=False)
    classic = transport(PATH, library="httpx", inner=httpx.HTTPTransport(), redact_names=["customer_secret"])
    faults: list[vcr_transport.Fault | str] = ["cut:after=2", vcr_transport.Fault(kind="cut", after=1)]
    replay = ReplayTransport(PATH, ignore_headers=["x-trace-*"], faults=faults)
    record = RecordingTransport(httpx2.HTTPTransport(), PATH, redact_patterns=[r"acct_\d+", re.compile("x")])
    record_classic = RecordingTransport(httpx.HTTPTransport(), PATH, keep_failures=True)
    return [
        httpx2.Client(transport=vcr_transport.transport(PATH)),
        httpx2.Client(transport=mode_transport),
        httpx2.Client(transport=replay),
        httpx2.Client(transport=record),
        httpx.Client(transport=classic),
        httpx.Client(transport=ReplayTransport(PATH)),
        httpx.Client(transport=record_classic),
        httpx.Client(transport=ModeTransport(mode_transport.session, httpx)),
    ]


def async_clients() -> list[httpx2.AsyncClient | httpx.AsyncClient]:
    """async_transport(), ReplayTransport and AsyncRecordingTransport, for both libraries' async clients."""
    mode_transport = async_transport(PATH, mode="record-on-miss", on_mismatch="respond", pace=1.0)
    replay = ReplayTransport(PATH, options=Options(ordered=False, ignore_fields=["model"], mode="replay"))
    record = AsyncRecordingTransport(httpx2.AsyncHTTPTransport(), PATH, plain_bodies=False)
    record_classic = AsyncRecordingTransport(httpx.AsyncHTTPTransport(), PATH, redact_with=[str.upper])
    return [
        httpx2.AsyncClient(transport=vcr_transport.async_transport(PATH)),
        httpx2.AsyncClient(transport=mode_transport),
        httpx2.AsyncClient(transport=replay),
        httpx2.AsyncClient(transport=record),
        httpx.AsyncClient(transport=async_transport(PATH, library="httpx")),
        httpx.AsyncClient(transport=replay),
        httpx.AsyncClient(transport=record_classic),
        httpx.AsyncClient(transport=vcr_transport.transport(PATH)),  # one ModeTransport serves both sides
    ]


def one_transport_for_both_sides() -> tuple[httpx2.Client, httpx2.AsyncClient]:
    """google-genai's way: one object for a sync and an async client."""
    both = RecordingTransport(httpx2.HTTPTransport(), PATH, async_inner=httpx2.AsyncHTTPTransport())
    return httpx2.Client(transport=both), httpx2.AsyncClient(transport=both)


def blocks() -> None:
    with vcr_transport.use_cassette(PATH, mode="replay", unplayed="warn", block_network=True) as cassette:
        assert cassette.play_count >= 0
    with ReplayTransport(PATH) as replay, transport(PATH) as mode_transport:
        assert replay.first_mismatch is None and mode_transport.mode


@vcr_transport.use_cassette(PATH, allowed_hosts=["^localhost$"], caught_mismatch="ignore")
def decorated(text: str) -> str:
    return text


async def decorated_async_caller() -> str:
    @vcr_transport.use_cassette(PATH)
    async def inner() -> str:
        return "x"

    return decorated(await inner())


MODE: vcr_transport.Mode = "record-on-miss"
EVERY_MODE: tuple[vcr_transport.Mode, ...] = vcr_transport.MODES
REPLAY_OPTIONS: vcr_transport.ReplayOptions = {"ordered": False, "ignore_fields": ["model"]}
SHARED = ReplayTransport(PATH, **REPLAY_OPTIONS)
