"""The replay engine: choosing the recorded call that answers each request, and the headers it is replayed
with. No I/O (the replay transports are ``_replay.py``, built on ``_session.py``)."""

from __future__ import annotations

import datetime
import difflib
import email.utils
import json
import math
import threading
from typing import Any

from .._exceptions import ReplayMismatch
from ._bodies import body_headers, redact_url, stored_body
from ._format import Cassette, RecordedCall
from ._matching import RequestMatcher
from ._memo import Memo
from ._redaction import Redactor, cookie_names

__all__ = ["RETRYABLE_STATUSES", "ReplayEngine", "replay_headers"]

RETRYABLE_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
# openai stops retrying when a finite retry delay exceeds this (openai._constants.MAX_RETRY_AFTER_DELAY);
# anthropic never stops for a delay, it sleeps it (capped at 4,294,967 s); google-genai ignores the header.
SDK_MAX_RETRY_AFTER = 120.0
_RETRY_HEADERS = ("retry-after-ms", "retry-after")


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    """A header as httpx's ``Headers.get`` gives it: every value of that name joined with ", "."""
    values = [value for key, value in headers if key.lower() == name]
    return ", ".join(values) if values else None


def _http_date(value: str | None) -> datetime.datetime | None:
    if value is None:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)


def _retry_after_seconds(
    headers: list[tuple[str, str]], recorded_at: datetime.datetime | None = None
) -> tuple[float | None, bool]:
    """(delay in seconds, whether it came from an HTTP date) as openai reads a response's headers:
    ``retry-after-ms``, then ``retry-after`` as a number, then ``retry-after`` as an HTTP date. The delay
    may be negative, zero, NaN or infinite, as the SDK would see it. A date is counted from
    ``recorded_at`` (when the response was received); with no such time, or no parsable value, the delay
    is None."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = _header(headers, name)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        if delay == math.inf and value.strip().lower() not in ("inf", "+inf", "infinity", "+infinity"):
            return SDK_MAX_RETRY_AFTER + 1, False  # an overflowing number: openai's "too long" sentinel
        return delay / divisor, False
    moment = _http_date(_header(headers, "retry-after"))
    if moment is None or recorded_at is None:
        return None, moment is not None
    return (moment - recorded_at).total_seconds(), True


def _sdk_gives_up(call: RecordedCall, delay: float | None) -> bool:
    """Whether the SDK that made this call stopped retrying because of the recorded delay: openai (and
    every SDK that is not anthropic) does for a finite delay over two minutes; anthropic never does."""
    if any(key.lower() == "anthropic-version" for key, _ in call.request_headers):
        return False
    return delay is not None and math.isfinite(delay) and delay > SDK_MAX_RETRY_AFTER


def _recorded_at(call: RecordedCall, created: str | None) -> datetime.datetime | None:
    """When the response was received: its own ``date`` header, else the cassette's ``created`` time."""
    moment = _http_date(_header(call.response_headers, "date"))
    if moment is not None or not created:
        return moment
    try:
        parsed = datetime.datetime.fromisoformat(created)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=datetime.UTC)


def replay_headers(
    call: RecordedCall, max_retry_after: float | None, created: str | None = None
) -> list[tuple[str, str]]:
    """The headers replayed for a call: content-length made true to the replayed bytes, and (when asked)
    recorded retry delays shortened without changing whether the SDK retries.

    A response the SDK retries (a retryable status, or ``x-should-retry: true``) gets ``retry-after-ms``
    and ``retry-after`` of at most ``max_retry_after``, unless the recorded delay made the SDK give up
    (openai: over 120 s). Such a delay is kept; when it was an HTTP date it is replayed as the number of
    seconds it meant when recorded (counted from the response's ``date`` header, else from the cassette's
    ``created`` time, ``created``), so that the decision doesn't depend on the day of the replay. A date
    with neither reference is kept as recorded."""
    headers = _with_true_length(call)
    if max_retry_after is None or not _retried(call.status, headers):
        return headers
    delay, from_date = _retry_after_seconds(headers, _recorded_at(call, created))
    if from_date and delay is None:
        return headers
    kept = [(k, v) for k, v in headers if k.lower() not in _RETRY_HEADERS]
    if _sdk_gives_up(call, delay):
        assert delay is not None
        return headers if not from_date else [*kept, ("retry-after", str(math.ceil(delay)))]
    shortened = delay if delay is not None and 0 < delay < max_retry_after else max_retry_after
    return [*kept, ("retry-after-ms", f"{shortened * 1000:g}"), ("retry-after", f"{shortened:g}")]


def _with_true_length(call: RecordedCall) -> list[tuple[str, str]]:
    """The recorded headers, content-length made the size of the replayed bytes when the call completed."""
    if not call.complete:
        return list(call.response_headers)
    length = str(call.size)
    return [(k, length if k.lower() == "content-length" else v) for k, v in call.response_headers]


def _retried(status: int | None, headers: list[tuple[str, str]]) -> bool:
    """Whether an SDK retries a response: ``x-should-retry`` says so, else its status is retryable."""
    should_retry = _header(headers, "x-should-retry")
    return should_retry == "true" or (should_retry != "false" and status in RETRYABLE_STATUSES)


class ReplayEngine:
    """Chooses the recorded call that answers each request, or says which field differs. No I/O.

    Each request is turned into the fields matching compares (``incoming_fields``, redacted as the recorder
    redacted it), then ``select`` pairs it with a recorded call: the next one (ordered), or the first
    unplayed one that matches. A recorded call's fields are worked out once, when first compared.
    """

    def __init__(
        self,
        cassette: Cassette,
        matcher: RequestMatcher,
        redactor: Redactor,
        *,
        ordered: bool = True,
        reuse: bool = False,
    ) -> None:
        """``reuse`` (unordered only): a request that matches no unplayed call may be answered by a played
        one again (a server answers the same request as often as it comes)."""
        self.cassette = cassette
        self.reuse = reuse
        self.matcher = matcher.with_server_cookies(
            name
            for call in cassette.calls
            for key, value in call.response_headers
            if key.lower() == "set-cookie"
            for name in cookie_names(value, response=True)
        )
        self.redactor = redactor
        self.ordered = ordered
        self.played = [False] * len(cassette.calls)
        self.position = 0
        self.first_mismatch: ReplayMismatch | None = None
        # What re-records this cassette in the caller's situation; said by every mismatch.
        self.record_hint = ""
        self._lock = threading.Lock()
        # call index -> its fields: unordered matching compares a request with many calls, each many times
        self._recorded: Memo[int, dict[str, Any]] = Memo(size=max(1, len(cassette.calls)))

    def _recorded_fields(self, index: int) -> dict[str, Any]:
        call = self.cassette.calls[index]
        return self._recorded.get(
            index, lambda: self.matcher.comparable(call.method, call.url, call.request_headers, call.body)
        )

    def incoming_fields(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
        """A request as ``RequestMatcher.comparable`` gives it, redacted as the recorder redacted it: the
        headers first, then the URL and the body (what the headers teach the redactor counts for both)."""
        redactor = self.redactor
        redacted = redactor.redact_headers(headers)
        content_type, encoding, _ = body_headers(headers)
        redacted_url = redact_url(url, redactor)
        stored = stored_body(body, content_type, redactor, encoding=encoding)
        return self.matcher.comparable(method, redacted_url, redacted, stored)

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

    def put_back(self, call: RecordedCall) -> None:
        """Undo the selection of ``call``, the last one selected: the next matching request gets it again
        (a fault answered the request in its place)."""
        with self._lock:
            self.played[call.index] = False
            if self.ordered and self.position == call.index + 1:
                self.position = call.index

    def distance(self, index: int, incoming: dict[str, Any]) -> tuple[int, float]:
        """How far recorded call ``index`` is from a request, for choosing the nearest when none matches:
        (0 for the same method and path, else 1; then how unalike the bodies are, from 0 to 1)."""
        recorded = self._recorded_fields(index)
        same_route = recorded["method"] == incoming["method"] and recorded["url"]["path"] == incoming["url"]["path"]
        unalike = (
            1.0
            - difflib.SequenceMatcher(
                None, _canonical(recorded["body"]), _canonical(incoming["body"]), autojunk=False
            ).ratio()
        )
        return (0 if same_route else 1, unalike)

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
        candidates = unplayed + [i for i, played in enumerate(self.played) if played] if self.reuse else unplayed
        for index in candidates:
            if self.matcher.difference(self._recorded_fields(index), incoming) is None:
                return index
        # The nearest: the same method and path first, then the most alike body; the earliest on a tie.
        closest = min(candidates, key=lambda i: self.distance(i, incoming), default=len(self.played))
        self._check(closest, incoming)
        raise AssertionError("unreachable: _check raises")  # pragma: no cover

    def _mismatch(self, index: int, path: str, recorded: Any, incoming: Any, *, detail: str = "") -> None:
        mismatch = ReplayMismatch(
            index, path, recorded, incoming, cassette=self.cassette.path, detail=detail, record_hint=self.record_hint
        )
        if self.first_mismatch is None:
            self.first_mismatch = mismatch
        raise mismatch

    def unplayed(self) -> list[tuple[int, str, str]]:
        return [(c.index, c.method, c.url) for c in self.cassette.calls if not self.played[c.index]]


_COMPARED_CHARACTERS = 4000  # enough to tell requests apart; SequenceMatcher is quadratic in the worst case


def _canonical(body: Any) -> str:
    text = body if isinstance(body, str) else json.dumps(body, sort_keys=True, default=str)
    return text[:_COMPARED_CHARACTERS]


def _describe(incoming: dict[str, Any]) -> str:
    url = incoming["url"]
    return f"{incoming['method']} {url['scheme']}://{url['host']}{url['path']}"
