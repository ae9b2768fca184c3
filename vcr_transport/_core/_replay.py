"""Choosing the recorded call that answers each request, and the headers it is replayed with. No I/O."""

from __future__ import annotations

import datetime
import difflib
import email.utils
import json
import math
import threading
from typing import Any, NamedTuple

import msgspec

from .._exceptions import ReplayMismatch
from ._bodies import binary_body, content_encoding, content_type_of, redact_url, stored_body, unredactable
from ._format import Cassette, RecordedCall, StoredBody
from ._matching import RequestMatcher
from ._redaction import Redactor, cookie_names

__all__ = ["RETRYABLE_STATUSES", "ReplayEngine", "replay_headers"]

RETRYABLE_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
# openai stops retrying when a finite retry delay exceeds this (openai._constants.MAX_RETRY_AFTER_DELAY);
# anthropic never stops for a delay, it sleeps it (capped at 4,294,967 s); google-genai ignores the header.
SDK_MAX_RETRY_AFTER = 120.0
_RETRY_HEADERS = ("retry-after-ms", "retry-after")
_SHARED_ENTRIES = 1024  # distinct header lists remembered; then forgotten all at once
_LENGTH_SPELLINGS = frozenset({"content-length", "Content-Length", "CONTENT-LENGTH"})  # as clients send it


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
    headers = list(call.response_headers)
    if call.complete:
        length = str(call.size)
        headers = [(k, length if k.lower() == "content-length" else v) for k, v in headers]
    should_retry = _header(headers, "x-should-retry")
    retried = should_retry == "true" or (should_retry != "false" and call.status in RETRYABLE_STATUSES)
    if max_retry_after is None or not retried:
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


class _IncomingHeaders(NamedTuple):
    """What a request's headers (but a volatile content-length) give: shared by a client's requests."""

    generation: object  # the redactor's learned forms when these were made (see ReplayEngine.incoming_fields)
    comparable: tuple[dict[str, Any], str]  # RequestMatcher.comparable_headers of the redacted headers
    content_type: str  # as stored_body reads the body: content_type_of the headers
    encoding: str  # content_encoding of the headers
    json_body: bool  # whether stored_body reads a body sent with these headers as JSON (when it parses)


class _Exact(NamedTuple):
    """A recorded call as a request that is exactly it arrives: see ``ReplayEngine._is_exactly``."""

    method: str  # upper case, as the fields have it
    url: str
    headers: dict[str, Any]  # the comparable headers of the recorded call
    sent: bytes | None  # the body as sent (see _sent_bytes); None: no fast match for this call


def _sent_bytes(body: StoredBody) -> bytes | None:
    """Bytes whose stored body is surely ``body`` when nothing in them is redacted and they are read as JSON
    with no content-encoding: b"" for no body; the compact JSON of a JSON body, when reading it back gives a
    value equal to the stored one (not for NaN, say). None for any other body."""
    if body is None:
        return b""
    if "json" not in body:
        return None
    value = body["json"]
    try:
        sent = msgspec.json.encode(value)
        same = bool(msgspec.json.decode(sent) == value)
    except (msgspec.MsgspecError, RecursionError, TypeError, ValueError, OverflowError):
        return None
    return sent if same else None


class ReplayEngine:
    """Chooses the recorded call that answers each request, or says which field differs. No I/O."""

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
        self._recorded: list[dict[str, Any] | None] = [None] * len(cassette.calls)
        self._lock = threading.Lock()
        self._exact: list[_Exact | None] = [None] * len(cassette.calls)
        # incoming headers (but content-length, when volatile) -> what they give: shared by every URL, see
        # incoming_fields
        self._incoming_headers: dict[tuple[tuple[str, str], ...], _IncomingHeaders] = {}
        # URL -> (the redactor's learned forms then, whether redact_url could change the URL)
        self._url_redactable: dict[str, tuple[object, bool]] = {}
        # recorded headers -> the same, for recorded calls (already redacted)
        self._recorded_headers: dict[tuple[tuple[str, str], ...], tuple[dict[str, Any], str]] = {}
        self._length_volatile = matcher.is_volatile("content-length")

    def _recorded_headers_of(self, call: RecordedCall) -> tuple[dict[str, Any], str]:
        key = tuple(call.request_headers)
        headers = self._recorded_headers.get(key)
        if headers is None:
            headers = self.matcher.comparable_headers(call.request_headers)
            _remember(self._recorded_headers, key, headers)
        return headers

    def _recorded_fields(self, index: int) -> dict[str, Any]:
        fields = self._recorded[index]
        if fields is None:
            call = self.cassette.calls[index]
            matcher = self.matcher
            fields = matcher.with_body(
                *matcher.request_fields(call.method, call.url, *self._recorded_headers_of(call)), call.body
            )
            self._recorded[index] = fields
        return fields

    def _headers_of(self, headers: list[tuple[str, str]]) -> _IncomingHeaders:
        """What ``headers`` give (redacted, comparable), made once and reused for as long as the redactor has
        learned no new secret (a new one could change how they redact)."""
        redactor = self.redactor
        generation = redactor.learned_forms
        if self._length_volatile:
            # Another spelling of the name stays in the key: only a miss more, never a wrong entry.
            key = tuple([pair for pair in headers if pair[0] not in _LENGTH_SPELLINGS])
        else:
            key = tuple(headers)
        cached = self._incoming_headers.get(key)
        if cached is None or cached.generation is not generation:
            # The headers first, as the recorder does: what they teach the redactor counts for the URL.
            comparable = self.matcher.comparable_headers(redactor.redact_headers(headers))
            content_type = content_type_of(headers)
            encoding = content_encoding(headers)
            json_body = not encoding and "json" in content_type and not binary_body([("content-type", content_type)])
            # What was learned from these headers counts: the generation after redacting them.
            cached = _IncomingHeaders(redactor.learned_forms, comparable, content_type, encoding, json_body)
            _remember(self._incoming_headers, key, cached)
        return cached

    def incoming_fields(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
        """A request as ``comparable`` gives it, redacted as the recorder redacted it. What a client's
        repeated requests share (their headers but content-length) is redacted once and reused, whatever the
        URL, for as long as the redactor has learned no new secret (a new one could change how they redact)."""
        return self._fields(method, url, self._headers_of(headers), body)

    def _fields(self, method: str, url: str, shared: _IncomingHeaders, body: bytes) -> dict[str, Any]:
        redactor = self.redactor
        fields = self.matcher.request_fields(method, redact_url(url, redactor), *shared.comparable)
        stored = stored_body(body, shared.content_type, redactor, encoding=shared.encoding)
        return self.matcher.with_body(*fields, stored)

    def choose(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> RecordedCall:
        """``select(incoming_fields(method, url, headers, body))``: the same call chosen, the same mismatch
        raised, the same secrets learned. Quicker when the call due (ordered), or the first unplayed one, is
        exactly the request: then nothing is parsed or compared field by field (see ``_is_exactly``)."""
        shared = self._headers_of(headers)
        with self._lock:
            unplayed = (
                self.position
                if self.ordered
                else next((i for i, played in enumerate(self.played) if not played), len(self.played))
            )
            if unplayed < len(self.played) and self._is_exactly(unplayed, method, url, shared, body):
                if self.ordered:
                    self.position += 1
                self.played[unplayed] = True
                return self.cassette.calls[unplayed]
        return self.select(self._fields(method, url, shared, body))

    def _is_exactly(self, index: int, method: str, url: str, shared: _IncomingHeaders, body: bytes) -> bool:
        """Whether a request surely gives the fields of recorded call ``index``, the way ``incoming_fields``
        makes them: the same method, the same URL that redaction leaves alone, headers whose comparable
        form is the call's, and no body for a call with none, or a JSON body (no content-encoding) that
        redaction leaves alone and whose bytes are the compact JSON of the call's (read back equal to it).
        Then the fields are equal, and so is whatever ignore_fields or match_on leave of them. False says
        nothing: the fields are then made and compared."""
        exact = self._exact[index]
        if exact is None:
            call = self.cassette.calls[index]
            exact = _Exact(call.method.upper(), call.url, self._recorded_headers_of(call)[0], _sent_bytes(call.body))
            self._exact[index] = exact
        if exact.sent != body or exact.url != url or exact.method != method.upper():
            return False
        if exact.headers is not shared.comparable[0] and exact.headers != shared.comparable[0]:
            return False
        if body and not (shared.json_body and unredactable(body, self.redactor)):
            return False
        return not self._url_may_redact(url)

    def _url_may_redact(self, url: str) -> bool:
        """``redactor.could_redact(url)``, remembered per URL while the redactor learns nothing new."""
        generation = self.redactor.learned_forms
        cached = self._url_redactable.get(url)
        if cached is None or cached[0] is not generation:
            cached = (generation, self.redactor.could_redact(url))
            _remember(self._url_redactable, url, cached)
        return cached[1]

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


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    """``cache[key] = value``, the cache emptied first when it holds _SHARED_ENTRIES entries."""
    if len(cache) >= _SHARED_ENTRIES:
        cache.clear()
    cache[key] = value


_COMPARED_CHARACTERS = 4000  # enough to tell requests apart; SequenceMatcher is quadratic in the worst case


def _canonical(body: Any) -> str:
    text = body if isinstance(body, str) else json.dumps(body, sort_keys=True, default=str)
    return text[:_COMPARED_CHARACTERS]


def _describe(incoming: dict[str, Any]) -> str:
    url = incoming["url"]
    return f"{incoming['method']} {url['scheme']}://{url['host']}{url['path']}"
