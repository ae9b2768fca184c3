"""``vcr-transport drift``: send each recorded request to the live API and compare the answer's shape with the
recording's (``_core._shape``). Writes nothing: no cassette is touched, nothing is recorded.

Where a request goes and with whose key is decided before any connection, by one verdict per call
(``_core._vendors.resend_verdict``, shown as it is by ``--dry-run``): a vendor's own hosts over https, or the
``--upstream`` the user named for it, with that vendor's key from the environment put back only where that
vendor takes it; anything else is refused or skipped, and nothing is looked up or connected for it. This
module only reads the project's ``drift_hosts``, fills in the key, checks that the request httpx2 built still
names the host the verdict allowed, and sends it (redirects are not followed). Only this module (and
``serve``) opens connections.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx2

from .._config import find_pyproject, read_settings
from .._core.engine._options import DRIFT_HOSTS_SETTING
from .._core.format._format import RecordedCall
from .._core.views._review import request_bytes
from .._core.views._shape import DriftCall, DriftReport, PlannedCall, live_answer, shape_changes
from .._storage import read_cassette
from ._manage import shown_path
from ._vendors import Upstream, Verdict, parse_drift_hosts, parse_upstream, resend_verdict

__all__ = ["DriftProblem", "check_drift", "plan_drift"]


class DriftProblem(Exception):
    """``drift`` can't be run as given (a bad ``--upstream`` or ``drift_hosts``); the message says what to do."""


@dataclass(frozen=True)
class _Run:
    """What every call's verdict is decided with: the named upstreams, the project's hosts, the environment."""

    upstreams: tuple[Upstream, ...]
    extra_hosts: Mapping[str, tuple[str, ...]]
    environ: Mapping[str, str]
    include_writes: bool

    def verdict(self, call: RecordedCall) -> Verdict:
        return resend_verdict(
            call,
            upstreams=self.upstreams,
            extra_hosts=self.extra_hosts,
            environ=self.environ,
            include_writes=self.include_writes,
        )


def _run(upstreams: Mapping[str, str], environ: Mapping[str, str], include_writes: bool, project: Path | None) -> _Run:
    """The run's settings, checked: a bad ``--upstream`` or ``drift_hosts`` is a DriftProblem."""
    pyproject = find_pyproject(project)
    try:
        named = tuple(parse_upstream(vendor, url) for vendor, url in upstreams.items())
        extra = parse_drift_hosts(read_settings(pyproject).get(DRIFT_HOSTS_SETTING, {}))
    except ValueError as problem:
        where = (
            f"{pyproject} [tool.vcr_transport] " if pyproject is not None and "--upstream" not in str(problem) else ""
        )
        raise DriftProblem(f"{where}{problem}") from None
    return _Run(named, extra, environ, include_writes)


def _request(verdict: Verdict, call: RecordedCall, environ: Mapping[str, str]) -> httpx2.Request | str:
    """The request to send for a ``send`` verdict, its key filled in; or why not, when httpx2 reads its URL
    as another host than the verdict did."""
    url, headers = (
        verdict.filled(environ[verdict.key_from]) if verdict.key_from else (verdict.url, list(verdict.headers))
    )
    body = call.body
    if body is not None and "json" in body:
        content: bytes | None = json.dumps(body["json"], separators=(",", ":"), ensure_ascii=False).encode()
    else:
        content = request_bytes(body)
    try:
        request = httpx2.Request(call.method, url, headers=headers, content=content)
    except (httpx2.InvalidURL, ValueError, TypeError) as error:
        return f"refused: httpx2 can't build its request ({type(error).__name__})"
    expected = urlsplit(verdict.url)
    ports = {"http": 80, "https": 443}
    if (request.url.host, request.url.port or ports.get(request.url.scheme)) != (
        expected.hostname,
        expected.port or ports.get(expected.scheme),
    ):
        return f"refused: httpx2 reads its URL's host as {request.url.host!r}, not {expected.hostname!r}"
    return request


def _live_call(call: RecordedCall, response: httpx2.Response, elapsed: float) -> RecordedCall:
    """The live answer as a recorded call (its body decoded by httpx2), for the same view and shape."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "content-encoding"]
    return live_answer(call, response.status_code, headers, [response.content], elapsed)


def _check_call(client: httpx2.Client, path: str, call: RecordedCall, run: _Run) -> DriftCall:
    found = DriftCall(path, call.index, call.method, call.url, "failed")
    verdict = run.verdict(call)
    if verdict.outcome != "send":
        if verdict.outcome == "skipped":
            found.outcome, found.skipped = "skipped", verdict.why
        else:
            found.error = verdict.why
        return found
    request = _request(verdict, call, run.environ)
    if isinstance(request, str):
        found.error = request
        return found
    started = time.monotonic()
    try:
        response = client.send(request)
    except httpx2.HTTPError as error:
        found.error = f"{type(error).__name__}: {error}"
        return found
    live = _live_call(call, response, time.monotonic() - started)
    found.changes = shape_changes(call, live)
    found.outcome = "changed" if found.changes else "identical"
    return found


def check_drift(
    cassettes: Sequence[Path],
    *,
    upstreams: Mapping[str, str],
    timeout: float = 60.0,
    include_writes: bool = False,
    progress: Callable[[int, int], None] | None = None,
    project: Path | None = None,
) -> DriftReport:
    """Each call of each cassette the verdict lets through sent to the live API and its answer's shape compared
    (this module's docstring). A cassette that can't be read is a CassetteError, a bad ``--upstream`` or
    ``drift_hosts`` a DriftProblem, both before any request is sent."""
    run = _run(upstreams, os.environ, include_writes, project)
    read = [(shown_path(path), read_cassette(path)) for path in cassettes]
    total = sum(len(cassette.calls) for _, cassette in read)
    report = DriftReport(len(read), [])
    with httpx2.Client(timeout=timeout, follow_redirects=False) as client:
        for path, cassette in read:
            for call in cassette.calls:
                report.calls.append(_check_call(client, path, call, run))
                if progress is not None:
                    progress(len(report.calls), total)
    return report


def plan_drift(
    cassettes: Sequence[Path],
    *,
    upstreams: Mapping[str, str],
    include_writes: bool = False,
    environ: Mapping[str, str] | None = None,
    project: Path | None = None,
) -> tuple[int, list[PlannedCall]]:
    """``drift --dry-run``: (how many cassettes, each call's verdict: where it would go, with the key of which
    environment variable, or why it would be refused or skipped), sending nothing. The URLs are redacted as
    they are in the cassette: no key is read into them. A cassette that can't be read is a CassetteError."""
    run = _run(upstreams, os.environ if environ is None else environ, include_writes, project)
    read = [(shown_path(path), read_cassette(path)) for path in cassettes]
    planned: list[PlannedCall] = []
    for path, cassette in read:
        for call in cassette.calls:
            verdict = run.verdict(call)
            found = PlannedCall(path, call.index, call.method, verdict.url, urlsplit(verdict.url).netloc)
            found.vendor, found.key_from = verdict.vendor, verdict.key_from
            if verdict.outcome == "skipped":
                found.skipped = verdict.why
            elif verdict.outcome == "refused":
                found.error = verdict.why
            planned.append(found)
    return len(read), planned
