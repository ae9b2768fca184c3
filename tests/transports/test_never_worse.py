"""A recording replaces a complete cassette only if it is complete too: a stream the upstream cut or the app
stopped reading, and a last answer of 503/529/429 where the older cassette got a success, keep the older file
byte for byte and say so in one RecordingNotSavedWarning line, unless keep_failures=True. Real openai
clients, sync and async, against the loopback upstream; xfail and skip-after-start through pytester."""

from __future__ import annotations

import asyncio
import dataclasses
import warnings
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from upstream import Received, Reply, Upstream
from vendors import OPENAI_KEY, openai_reply

import vcr_transport
from vcr_transport._storage import read_cassette

PROMPT = [{"role": "user", "content": "one two three"}]


def client_for(cassette: Path, upstream: Upstream, **options: Any) -> openai.OpenAI:
    transport = vcr_transport.transport(cassette, mode="record", **options)
    return openai.OpenAI(
        api_key=OPENAI_KEY, base_url=upstream.url + "/v1", http_client=httpx2.Client(transport=transport), max_retries=0
    )


def complete_cassette(cassette: Path, upstream: Upstream) -> bytes:
    """A complete recording of a streamed answer (6 events) at ``cassette``; its bytes."""
    with client_for(cassette, upstream) as client:
        assert "".join(
            e.choices[0].delta.content or ""
            for e in client.chat.completions.create(model="m", messages=PROMPT, stream=True)
            if e.choices
        ).startswith("echo:")
    assert [call.outcome for call in read_cassette(cassette).calls] == ["complete"]
    return cassette.read_bytes()


def cut_after(events: int) -> Any:
    return lambda received: dataclasses.replace(openai_reply(received), cut_after=events)


def not_saved(record: Any) -> str:
    """The one warning line a re-record that kept the older cassette gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record()
    found = [w for w in caught if issubclass(w.category, vcr_transport.RecordingNotSavedWarning)]
    assert len(found) == 1, [str(w.message) for w in caught]
    message = str(found[0].message)
    assert "\n" not in message
    return message


def test_a_stream_the_upstream_cut_after_2_events_keeps_the_complete_cassette(
    upstream: Upstream, cassette: Path
) -> None:
    before = complete_cassette(cassette, upstream)
    upstream.routes["/v1/chat/completions"] = cut_after(2)

    def record() -> None:
        with client_for(cassette, upstream) as client:
            stream = client.chat.completions.create(model="m", messages=PROMPT, stream=True)
            with pytest.raises((openai.APIError, httpx2.HTTPError)):  # the app tolerates the cut
                for _ in stream:
                    pass

    message = not_saved(record)
    assert f"cassette {cassette} was not saved" in message
    assert "call 0 ended error" in message and "keep_failures=True" in message
    assert cassette.read_bytes() == before


def test_a_stream_the_app_stopped_reading_after_2_events_keeps_the_complete_cassette(
    upstream: Upstream, cassette: Path
) -> None:
    before = complete_cassette(cassette, upstream)

    def record() -> None:
        with client_for(cassette, upstream) as client:
            stream = client.chat.completions.create(model="m", messages=PROMPT, stream=True)
            events = iter(stream)
            next(events), next(events)
            stream.close()

    assert "call 0 ended closed_early" in not_saved(record)
    assert cassette.read_bytes() == before


@pytest.mark.parametrize("status", [503, 529, 429])
def test_a_last_answer_of_vendor_trouble_keeps_the_cassette_that_got_a_success(
    status: int, upstream: Upstream, cassette: Path
) -> None:
    before = complete_cassette(cassette, upstream)
    upstream.routes["/v1/chat/completions"] = [Reply.json({"error": {"message": "overloaded"}}, status=status)]

    def record() -> None:
        with client_for(cassette, upstream) as client, pytest.raises(openai.APIStatusError):
            client.chat.completions.create(model="m", messages=PROMPT, stream=True)

    assert f"call 0 got status {status}, where the older cassette's got 200" in not_saved(record)
    assert cassette.read_bytes() == before


def test_async_a_503_after_a_success_keeps_the_older_cassette(upstream: Upstream, cassette: Path) -> None:
    before = complete_cassette(cassette, upstream)
    upstream.routes["/v1/chat/completions"] = [Reply.json({"error": {"message": "down"}}, status=503)]

    async def main() -> None:
        transport = vcr_transport.async_transport(cassette, mode="record")
        async with openai.AsyncOpenAI(
            api_key=OPENAI_KEY,
            base_url=upstream.url + "/v1",
            http_client=httpx2.AsyncClient(transport=transport),
            max_retries=0,
        ) as client:
            with pytest.raises(openai.InternalServerError):
                await client.chat.completions.create(model="m", messages=PROMPT)

    assert "call 0 got status 503" in not_saved(lambda: asyncio.run(main()))
    assert cassette.read_bytes() == before


def test_a_503_retried_to_success_replaces_the_cassette(upstream: Upstream, cassette: Path) -> None:
    complete_cassette(cassette, upstream)
    routes: list[Any] = [Reply.json({"error": {"message": "down"}}, status=503)]

    def reply(received: Received) -> Reply:
        return routes.pop(0) if routes else openai_reply(received)

    upstream.routes["/v1/chat/completions"] = reply
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        transport = vcr_transport.transport(cassette, mode="record")
        http = httpx2.Client(transport=transport)
        with openai.OpenAI(api_key=OPENAI_KEY, base_url=upstream.url + "/v1", http_client=http, max_retries=1) as c:
            c.chat.completions.create(model="m", messages=PROMPT)
    assert [call.status for call in read_cassette(cassette).calls] == [503, 200]


def test_with_no_older_cassette_a_cut_stream_is_saved(upstream: Upstream, cassette: Path) -> None:
    upstream.routes["/v1/chat/completions"] = cut_after(2)
    with client_for(cassette, upstream) as client:
        with pytest.raises(Exception):  # noqa: B017 - the SDK's or httpx2's error for a cut stream
            for _ in client.chat.completions.create(model="m", messages=PROMPT, stream=True):
                pass
    assert [call.outcome for call in read_cassette(cassette).calls] == ["error"]


@pytest.mark.parametrize("failure", ["cut", "stopped", "503"])
def test_keep_failures_saves_the_worse_recording(failure: str, upstream: Upstream, cassette: Path) -> None:
    before = complete_cassette(cassette, upstream)
    if failure == "cut":
        upstream.routes["/v1/chat/completions"] = cut_after(2)
    elif failure == "503":
        upstream.routes["/v1/chat/completions"] = [Reply.json({"error": {"message": "down"}}, status=503)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with client_for(cassette, upstream, keep_failures=True) as client:
            try:
                events = iter(client.chat.completions.create(model="m", messages=PROMPT, stream=True))
                next(events), next(events)
                if failure == "cut":
                    list(events)
            except (openai.APIError, httpx2.HTTPError):
                pass
    assert cassette.read_bytes() != before
    expected = {"cut": ("error", 200), "stopped": ("closed_early", 200), "503": ("complete", 503)}[failure]
    [call] = read_cassette(cassette).calls
    assert (call.outcome, call.status) == expected


@pytest.mark.parametrize("ending", ["xfail", "xfail-marker", "skip", "xfail-after-complete", "skip-after-complete"])
@pytest.mark.slow
def test_an_xfail_or_a_skip_after_the_start_keeps_the_complete_cassette(
    ending: str, pytester: pytest.Pytester, upstream: Upstream, tmp_path: Path
) -> None:
    # Mid-stream, or after a whole call: the test's outcome alone keeps the older cassette then.
    cassette = tmp_path / "marked.jsonl"
    before = complete_cassette(cassette, upstream)
    stop = {
        "xfail": "pytest.xfail('known to break mid-stream')",
        "xfail-marker": "raise RuntimeError('broke mid-stream')",
        "skip": "pytest.skip('the rest needs a GPU')",
        "xfail-after-complete": "list(events); raise RuntimeError('broke after the call')",
        "skip-after-complete": "list(events); pytest.skip('the rest needs a GPU')",
    }[ending]
    marker = "pytest.mark.xfail(strict=True)" if ending.startswith("xfail-") else "pytest.mark.filterwarnings('error')"
    prompt = [{"role": "user", "content": "four five"}] if ending.endswith("after-complete") else PROMPT
    pytester.makepyfile(
        f"""
        import httpx2, openai, pytest

        @{marker}
        @pytest.mark.vcr_transport(path={str(cassette)!r}, mode="record")
        def test_breaks_mid_stream():
            client = openai.OpenAI(api_key={OPENAI_KEY!r}, base_url={upstream.url + "/v1"!r}, max_retries=0)
            events = iter(client.chat.completions.create(
                model="m", messages={prompt!r}, stream=True
            ))
            next(events), next(events)
            {stop}
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(**({"skipped": 1} if ending.startswith("skip") else {"xfailed": 1}))
    assert cassette.read_bytes() == before
    result.stdout.fnmatch_lines(["*1 not saved*"])
