"""``vcr-transport drift``: send each recorded request to the live API and compare the answer's shape with the
recording's (``_core._shape``). Writes nothing: no cassette is touched, nothing is recorded.

The request goes as recorded, to the host it was recorded with or to ``--upstream VENDOR=URL``, with the
headers a client library sets itself left to httpx2 (host, content-length, accept-encoding, connection),
and each credential the recording removed put back from the environment: ``authorization`` as ``Bearer
KEY``, ``x-api-key``, ``api-key`` and ``x-goog-api-key`` as the key, a key in the query in its place. A
removed credential with no key in the environment fails that call (exit 2) rather than sending a request
the API would refuse. Only this module (and ``serve``) opens connections.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx2

from ._core._format import RecordedCall
from ._core._redaction import PLACEHOLDER
from ._core._review import request_bytes
from ._core._shape import DriftCall, DriftReport, PlannedCall, live_answer, shape_changes
from ._exceptions import CassetteError
from ._manage import shown_path
from ._storage import read_cassette

__all__ = ["KEYS", "DriftProblem", "check_drift", "plan_drift", "vendor_of"]

# The environment variables each vendor's key is read from, the first set winning.
KEYS: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
_VENDOR_NAMES = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "genai": "google",
    "gemini": "google",
}
_LEFT_TO_THE_CLIENT = frozenset({"host", "content-length", "accept-encoding", "connection", "transfer-encoding"})
_CREDENTIALS = frozenset({"authorization", "x-api-key", "api-key", "x-goog-api-key"})


class DriftProblem(Exception):
    """``drift`` can't be run as given (a bad ``--upstream``); the message says what to do."""


def vendor_of(url: str, headers: Sequence[tuple[str, str]]) -> str:
    """Which vendor a request is for: anthropic (its host, ``anthropic-version``, ``/v1/messages``), google
    (its hosts, ``x-goog-api-key``, ``:generateContent``), else openai."""
    parts = urlsplit(url)
    host, path = parts.hostname or "", parts.path
    names = {name.lower() for name, _ in headers}
    if host.endswith("anthropic.com") or "anthropic-version" in names or path.startswith("/v1/messages"):
        return "anthropic"
    if host.endswith("googleapis.com") or "x-goog-api-key" in names or ":generate" in path or ":stream" in path:
        return "google"
    return "openai"


def _upstream_bases(upstreams: Mapping[str, str]) -> dict[str, str]:
    bases: dict[str, str] = {}
    for vendor, url in upstreams.items():
        name = _VENDOR_NAMES.get(vendor.lower())
        parts = urlsplit(url)
        if name is None:
            raise DriftProblem(f"--upstream {vendor}=...: the vendor is one of openai, anthropic, google")
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
            raise DriftProblem(f"--upstream {vendor}={url}: give scheme, host and an optional path prefix")
        bases[name] = url.rstrip("/")
    return bases


def _key_variable(vendor: str, environ: Mapping[str, str]) -> str | None:
    """The environment variable the vendor's key is read from (the first of ``KEYS`` set), or None."""
    return next((name for name in KEYS[vendor] if environ.get(name)), None)


def _key(vendor: str, environ: Mapping[str, str]) -> str | None:
    variable = _key_variable(vendor, environ)
    return environ[variable] if variable is not None else None


def _target(call: RecordedCall, bases: Mapping[str, str]) -> str:
    """Where ``call``'s request goes: its recorded URL, on the ``--upstream`` of its vendor when given."""
    vendor = vendor_of(call.url, call.request_headers)
    url = call.url
    if vendor in bases:
        parts = urlsplit(url)
        url = bases[vendor] + parts.path + (f"?{parts.query}" if parts.query else "")
    return url


def _removed_credential(call: RecordedCall) -> bool:
    """Whether the recording removed a credential that ``drift`` puts back (a header or the URL's key)."""
    headers = any(PLACEHOLDER in value and name.lower() in _CREDENTIALS for name, value in call.request_headers)
    return headers or any(p in call.url for p in (PLACEHOLDER, quote(PLACEHOLDER, safe="")))


def _request(
    call: RecordedCall, bases: Mapping[str, str], environ: Mapping[str, str]
) -> tuple[httpx2.Request | None, str]:
    """The request to send for ``call``, or (None, why it can't be sent)."""
    vendor = vendor_of(call.url, call.request_headers)
    url = _target(call, bases)
    key = _key(vendor, environ)
    headers: list[tuple[str, str]] = []
    for name, value in call.request_headers:
        lower = name.lower()
        if lower in _LEFT_TO_THE_CLIENT:
            continue
        if PLACEHOLDER in value:
            if lower not in _CREDENTIALS:
                continue  # a removed cookie or session id: sent without it
            if key is None:
                return None, f"its {lower} was removed and none of {', '.join(KEYS[vendor])} is set: set one"
            value = f"Bearer {key}" if lower == "authorization" else key
        headers.append((name, value))
    for placeholder in (PLACEHOLDER, quote(PLACEHOLDER, safe="")):
        if placeholder in url:
            if key is None:
                return None, f"its URL's key was removed and none of {', '.join(KEYS[vendor])} is set: set one"
            url = url.replace(placeholder, quote(key, safe=""))
    body = call.body
    if body is not None and "json" in body:
        content: bytes | None = json.dumps(body["json"], separators=(",", ":"), ensure_ascii=False).encode()
    else:
        content = request_bytes(body)
    return httpx2.Request(call.method, url, headers=headers, content=content), ""


def _live_call(call: RecordedCall, response: httpx2.Response, elapsed: float) -> RecordedCall:
    """The live answer as a recorded call (its body decoded by httpx2), for the same view and shape."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "content-encoding"]
    return live_answer(call, response.status_code, headers, [response.content], elapsed)


def _check_call(client: httpx2.Client, path: str, call: RecordedCall, bases: Mapping[str, str]) -> DriftCall:
    found = DriftCall(path, call.index, call.method, call.url, "failed")
    if call.status is None:
        found.error = "the recording has no response to compare with"
        return found
    request, why = _request(call, bases, os.environ)
    if request is None:
        found.error = why
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
    progress: Callable[[int, int], None] | None = None,
) -> DriftReport:
    """Each call of each cassette sent to the live API and its answer's shape compared (this module's
    docstring). A cassette that can't be read is a CassetteError, before any request is sent."""
    bases = _upstream_bases(upstreams)
    read = [(shown_path(path), read_cassette(path)) for path in cassettes]
    total = sum(len(cassette.calls) for _, cassette in read)
    report = DriftReport(len(read), [])
    with httpx2.Client(timeout=timeout, follow_redirects=False) as client:
        for path, cassette in read:
            for call in cassette.calls:
                report.calls.append(_check_call(client, path, call, bases))
                if progress is not None:
                    progress(len(report.calls), total)
    return report


def plan_drift(
    cassettes: Sequence[Path], *, upstreams: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> tuple[int, list[PlannedCall]]:
    """``drift --dry-run``: (how many cassettes, what each call would send, to which host, with the key of
    which environment variable), sending nothing. The URLs are the recorded ones, redacted as they are in
    the cassette: no key is read into them. A cassette that can't be read is a CassetteError."""
    environ = os.environ if environ is None else environ
    bases = _upstream_bases(upstreams)
    read = [(shown_path(path), read_cassette(path)) for path in cassettes]
    planned: list[PlannedCall] = []
    for path, cassette in read:
        for call in cassette.calls:
            url = _target(call, bases)
            parts = urlsplit(url)
            found = PlannedCall(path, call.index, call.method, url, parts.netloc)
            vendor = vendor_of(call.url, call.request_headers)
            if call.status is None:
                found.error = "the recording has no response to compare with"
            elif _removed_credential(call):
                variable = _key_variable(vendor, environ)
                if variable is None:
                    found.error = f"its credential was removed and none of {', '.join(KEYS[vendor])} is set: set one"
                else:
                    found.key_from = variable
            planned.append(found)
    return len(read), planned


__all__ += []  # CassetteError is raised through read_cassette
_ = CassetteError
