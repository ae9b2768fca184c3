"""Choosing the recorded call that answers each request, and the headers it is replayed with. No I/O."""

from __future__ import annotations

import threading
from typing import Any

from .._exceptions import ReplayMismatch
from ._bodies import content_encoding, content_type_of, redact_url, stored_body
from ._format import Cassette, RecordedCall
from ._matching import RequestMatcher
from ._redaction import Redactor

__all__ = ["RETRYABLE_STATUSES", "ReplayEngine", "replay_headers"]

RETRYABLE_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
# openai and anthropic stop retrying when a delay exceeds this; a rewrite must never cross it.
SDK_MAX_RETRY_AFTER = 120.0


def _retry_after_seconds(headers: list[tuple[str, str]]) -> float | None:
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        for key, value in headers:
            if key.lower() == name:
                try:
                    return float(value) / divisor
                except ValueError:
                    return None
    return None


def replay_headers(call: RecordedCall, max_retry_after: float | None) -> list[tuple[str, str]]:
    """The headers replayed for a call: content-length made true to the replayed bytes, and (when asked)
    recorded retry delays shortened without changing whether the SDK retries."""
    headers = list(call.response_headers)
    if call.complete:
        length = str(call.size)
        headers = [(k, length if k.lower() == "content-length" else v) for k, v in headers]
    if max_retry_after is not None and call.status in RETRYABLE_STATUSES:
        recorded = _retry_after_seconds(headers)
        if recorded is None or recorded <= SDK_MAX_RETRY_AFTER:
            delay = recorded if recorded is not None and 0 < recorded < max_retry_after else max_retry_after
            headers = [(k, v) for k, v in headers if k.lower() not in ("retry-after", "retry-after-ms")]
            headers.append(("retry-after-ms", f"{delay * 1000:g}"))
            headers.append(("retry-after", f"{delay:g}"))
    return headers


class ReplayEngine:
    """Chooses the recorded call that answers each request, or says which field differs. No I/O."""

    def __init__(
        self,
        cassette: Cassette,
        matcher: RequestMatcher,
        redactor: Redactor,
        *,
        ordered: bool = True,
    ) -> None:
        self.cassette = cassette
        self.matcher = matcher
        self.redactor = redactor
        self.ordered = ordered
        self.played = [False] * len(cassette.calls)
        self.position = 0
        self.first_mismatch: ReplayMismatch | None = None
        self._recorded: list[dict[str, Any] | None] = [None] * len(cassette.calls)
        self._lock = threading.Lock()

    def _recorded_fields(self, index: int) -> dict[str, Any]:
        fields = self._recorded[index]
        if fields is None:
            call = self.cassette.calls[index]
            fields = self.matcher.comparable(call.method, call.url, call.request_headers, call.body)
            self._recorded[index] = fields
        return fields

    def incoming_fields(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
        redactor = self.redactor
        return self.matcher.comparable(
            method,
            redact_url(url, redactor),
            redactor.redact_headers(headers),
            stored_body(body, content_type_of(headers), redactor, encoding=content_encoding(headers)),
        )

    def select(self, incoming: dict[str, Any]) -> RecordedCall:
        with self._lock:
            if self.ordered:
                index = self.position
                self._check(index, incoming)
                self.position += 1
            else:
                index = self._first_match(incoming)
            self.played[index] = True
            return self.cassette.calls[index]

    def _check(self, index: int, incoming: dict[str, Any]) -> None:
        calls = self.cassette.calls
        if index >= len(calls):
            self._mismatch(
                index,
                "call_index",
                f"{len(calls)} call(s) (0..{len(calls) - 1})" if calls else "no calls",
                _describe(incoming),
                detail=f"the cassette recorded {len(calls)} call(s); this request would be call {index}",
            )
        difference = self.matcher.difference(self._recorded_fields(index), incoming)
        if difference is not None:
            self._mismatch(index, *difference)

    def _first_match(self, incoming: dict[str, Any]) -> int:
        unplayed = [i for i, played in enumerate(self.played) if not played]
        for index in unplayed:
            if self.matcher.difference(self._recorded_fields(index), incoming) is None:
                return index
        same_route = [
            i
            for i in unplayed
            if self._recorded_fields(i)["method"] == incoming["method"]
            and self._recorded_fields(i)["url"]["path"] == incoming["url"]["path"]
        ]
        closest = same_route[0] if same_route else (unplayed[0] if unplayed else len(self.played))
        self._check(closest, incoming)
        raise AssertionError("unreachable: _check raises")  # pragma: no cover

    def _mismatch(self, index: int, path: str, recorded: Any, incoming: Any, *, detail: str = "") -> None:
        mismatch = ReplayMismatch(index, path, recorded, incoming, cassette=self.cassette.path, detail=detail)
        if self.first_mismatch is None:
            self.first_mismatch = mismatch
        raise mismatch

    def unplayed(self) -> list[tuple[int, str, str]]:
        return [(c.index, c.method, c.url) for c in self.cassette.calls if not self.played[c.index]]


def _describe(incoming: dict[str, Any]) -> str:
    url = incoming["url"]
    return f"{incoming['method']} {url['scheme']}://{url['host']}{url['path']}"
