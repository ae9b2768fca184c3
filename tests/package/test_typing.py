"""The public API as a user's strict type checker sees it: what is documented checks, and a typo'd option or a
wrong mode is reported. (The docs' blocks and the examples go through mypy and pyright in ``typecheck.py``, a
step of .ci/run; here one mypy run proves that the check can fail.)"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import httpx
import httpx2
import pytest

import vcr_transport
from vcr_transport._lifecycle import TransportBase

# Each line ending in "# error" must be reported, and no other line.
CASES = textwrap.dedent(
    """
    import httpx
    import httpx2

    import vcr_transport

    PATH = "cassettes/x.jsonl"
    sync = [
        httpx2.Client(transport=vcr_transport.transport(PATH, mode="record", ignore_fields=["model"])),
        httpx.Client(transport=vcr_transport.ReplayTransport(PATH, ordered=False)),
        httpx.Client(transport=vcr_transport.RecordingTransport(httpx.HTTPTransport(), PATH, keep_failures=True)),
    ]
    asynchronous = [
        httpx2.AsyncClient(transport=vcr_transport.async_transport(PATH, library="httpx2")),
        httpx.AsyncClient(transport=vcr_transport.AsyncRecordingTransport(httpx.AsyncHTTPTransport(), PATH)),
    ]
    vcr_transport.transport(PATH, mode="recrod")  # error
    vcr_transport.transport(PATH, ignore_feilds=["model"])  # error
    vcr_transport.async_transport(PATH, ordered="yes")  # error
    vcr_transport.ReplayTransport(PATH, orderd=False)  # error
    vcr_transport.RecordingTransport(httpx2.HTTPTransport(), PATH, ignore_fields=["model"])  # error
    vcr_transport.use_cassette(PATH, mode="replay", unplayed="sometimes")  # error
    vcr_transport.use_cassette(PATH, ignore_feilds=["model"])  # error
    vcr_transport.Options(ignore_feilds=["model"])  # error
    vcr_transport.transport(PATH, library="requests")  # error
    """
)


@pytest.mark.slow
def test_mypy_strict_accepts_the_documented_ways_and_reports_typos_and_wrong_modes(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    user = tmp_path / "user_code.py"
    user.write_text(CASES, encoding="utf-8")
    output, errors, status = api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), "--no-error-summary", str(user)]
    )
    assert not errors, errors
    reported = {int(match[1]) for match in re.finditer(r"^[^:\n]+:(\d+): error:", output, re.M)}
    expected = {number for number, line in enumerate(CASES.splitlines(), 1) if line.endswith("# error")}
    assert reported == expected, output
    assert 'Unexpected keyword argument "ignore_feilds" for "transport"; did you mean "ignore_fields"?' in output
    assert "Literal['recrod']" in output
    assert status == 1


def test_the_typing_base_is_a_plain_object_at_runtime() -> None:
    """The transports subclass both libraries' transports for a type checker only: at runtime they subclass
    neither, and import no HTTP library they don't use."""
    assert TransportBase is object
    for transport in (
        vcr_transport.ModeTransport,
        vcr_transport.ReplayTransport,
        vcr_transport.RecordingTransport,
        vcr_transport.AsyncRecordingTransport,
    ):
        bases = transport.__mro__
        for library in (httpx, httpx2):
            assert not {library.BaseTransport, library.AsyncBaseTransport} & set(bases), transport
