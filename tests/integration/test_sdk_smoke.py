from __future__ import annotations

from pathlib import Path

from upstream import Upstream
from vendors import Sdk

import vcr_transport


def recording(sdk: Sdk, path: Path) -> object:
    if sdk.is_async:
        return vcr_transport.AsyncRecordingTransport(sdk.library.AsyncHTTPTransport(), path)
    return vcr_transport.RecordingTransport(sdk.library.HTTPTransport(), path)


def test_record_then_replay(sdk: Sdk, upstream: Upstream, cassette: Path) -> None:
    steps = [("chat", ["hi"]), ("stream", ["hi", "echo:hi", "bye"])]
    live = sdk.run(recording(sdk, cassette), upstream.url, steps)
    upstream.stop()
    replayed = sdk.run(vcr_transport.ReplayTransport(cassette), upstream.url, steps)
    assert live == replayed
    assert live[0] == "echo:hi"
