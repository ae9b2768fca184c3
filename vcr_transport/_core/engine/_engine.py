"""The replay engine: choosing the recorded call that answers each request, and the headers it is replayed
with. No I/O (the replay transports are ``_replay.py``, built on ``_session.py``)."""

from __future__ import annotations

import datetime
import email.utils
import itertools
import json
import math
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, Protocol

from ..._exceptions import ReplayMismatch
from .._memo import Memo
from ..format._bodies import body_headers, redact_url, stored_body
from ..format._format import Cassette, RecordedCall, overlap_groups
from ..format._sse import ProtocolEnd, data_of
from ..rules._redaction import Redactor, cookie_names
from ._index import CallIndex, CallKey, RequestKeys, call_key
from ._matching import Normalizer, RequestMatcher, echoed_headers

__all__ = ["CONCURRENT", "ORDERINGS", "RETRYABLE_STATUSES", "SHOWN_DIFFERENCES", "ReplayEngine", "replay_headers"]

RETRYABLE_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
# openai stops retrying when a finite retry delay exceeds this (openai._constants.MAX_RETRY_AFTER_DELAY);
# anthropic never stops for a delay, it sleeps it (capped at 4,294,967 s); google-genai ignores the header.
SDK_MAX_RETRY_AFTER = 120.0
_RETRY_HEADERS = ("retry-after-ms", "retry-after")
_FIELDS_KEPT = 16  # recorded calls whose comparable fields the engine keeps worked out


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


# How replay orders the calls (the ``ordered`` option): calls that overlapped while recording in any order
# among themselves and the rest in recorded order (the default); every call in recorded order; any order.
CONCURRENT = "concurrent"
ORDERINGS: tuple[bool | str, ...] = (CONCURRENT, True, False)
# How many differing fields a mismatch lists (the exception holds them all).
SHOWN_DIFFERENCES = 10


class _Played(Protocol):
    def unplayed(self) -> str: ...


class ReplayEngine:
    """Chooses the recorded call that answers each request, or says how it differs. No I/O.

    Each request is turned into the fields matching compares (``incoming_fields``, redacted as the recorder
    redacted it, then normalised by ``normalizer``), then ``select`` pairs it with a recorded call:

    - ``ordered="concurrent"`` (the default): the calls of the group due (``overlap_groups``: calls that
      overlapped in time while recording) in any order, each request taking the first unplayed call of the
      group that it matches; a group is due once every earlier one is played. A sequential app makes
      groups of one call: its order is checked call by call.
    - ``ordered=True``: request n is compared with recorded call n.
    - ``ordered=False``: the first unplayed call that matches, anywhere.

    Identical requests are answered in recorded order in all three. ``repeats`` (allow_playback_repeats): a
    request that matches no call due, but a played one, is answered by the last played one that matches.
    ``reuse`` (unordered only, ``serve``): one that matches no unplayed call is answered by the first played
    one that matches. ``stop_at_miss`` (record-on-miss): the first miss ends replay; ``kept`` then holds the
    calls played until then and ``open_calls`` those of them whose group still had unplayed calls (the run
    was in the middle of it), and every later request misses.
    The calls a request may take are looked up by the key of its comparable request (``_index.py``), then
    compared in full: a hit costs a lookup, whatever order the requests come in, and only a miss walks the
    fields for the differences to report. A recorded call's fields and key are worked out once, when first
    needed; the groups once per cassette.
    """

    def __init__(
        self,
        cassette: Cassette,
        matcher: RequestMatcher,
        redactor: Redactor,
        *,
        ordered: bool | str = CONCURRENT,
        reuse: bool = False,
        repeats: bool = False,
        normalizer: Normalizer | None = None,
    ) -> None:
        self.cassette = cassette
        self.reuse = reuse
        self.repeats = repeats
        self.matcher = matcher.with_server_values(
            cookies=(
                name
                for call in cassette.calls
                for key, value in call.response_headers
                if key.lower() == "set-cookie"
                for name in cookie_names(value, response=True)
            ),
            headers=echoed_headers((call.request_headers, call.response_headers) for call in cassette.calls),
        )
        self.normalizer = normalizer if normalizer else None
        self.redactor = redactor
        self.ordered = ordered
        self.played = [False] * len(cassette.calls)
        self.position = 0  # ordered=True: the call due
        self.group_of = overlap_groups(cassette.calls)
        self._ranges: list[range] = []
        for index, group in enumerate(self.group_of):
            if group == len(self._ranges):
                self._ranges.append(range(index, index + 1))
            else:
                self._ranges[group] = range(self._ranges[group].start, index + 1)
        self._left = [len(span) for span in self._ranges]  # unplayed calls per group
        self.group = 0  # ordered="concurrent": the group due
        self.stop_at_miss = False
        self.kept: tuple[int, ...] | None = None
        self.open_calls: tuple[int, ...] = ()
        self.first_mismatch: ReplayMismatch | None = None
        # WebSocket sessions replayed (call index -> their playback): what each left unplayed
        self.sessions: dict[int, _Played] = {}
        # What re-records this cassette in the caller's situation; said by every mismatch.
        self.record_hint = ""
        self._lock = threading.Lock()
        # call index -> its fields, for the few calls a request is compared with (its key finds them): a few
        # kept, as the request bodies are held as their bytes (a long conversation's hold its history again and
        # again, and its decoded form is several times the file's size)
        self._recorded: Memo[int, dict[str, Any]] = Memo(size=_FIELDS_KEPT)
        self._keys: dict[int, CallKey] = {}  # call index -> its (mask, key)
        # The unplayed calls a request may take now (``_due``), made anew when they change (``_scope``); and
        # the played ones, for repeats and reuse.
        self._due_index: CallIndex | None = None
        self._due_scope = -1
        self._key_of = _key_function(self)
        self._played_index = CallIndex(self._key_of)  # keyed only when asked (repeats, reuse)
        self._holds: dict[int, tuple[int, ...]] = {}

    def holds(self, index: int) -> tuple[int, ...]:
        """The calls the replayed stream of call ``index`` stays open for, after its recorded events, when it
        is an event stream that carried no end of its protocol (see ``ProtocolEnd``), so that only its
        client or its server closing it ended it: when its client cut it (``closed_early``), or its server
        closed it having sent no data (only its timing is there to replay), the calls that started while it
        was open; when its server closed it after sending data, the calls that were still running then (it
        may have closed it in answer to one of them; a stream that outlived a finished call replays in any
        order, as before). MCP's GET event stream is one: open beside the session's POSTs, closed by the
        server when it answers the DELETE (the two ends reach the client in either order), or cut by the
        client first. Ending it at once would
        tell the client its server had closed it, and the client would open another, a request the
        recording doesn't have. It ends once those calls are played, or replay has ended at a miss
        (record-on-miss), or when the client closes it. None for other calls, and under ``reuse``
        (``serve`` answers any number of runs)."""
        found = self._holds.get(index)
        if found is None:
            found = self._holds[index] = self._held_for(index)
        return found

    def _held_for(self, index: int) -> tuple[int, ...]:
        """``holds``, worked out: what is cheap to know first (most calls hold nothing: a sequential app's
        calls end before the next starts), the stream's events only then."""
        calls = self.cassette.calls
        call = calls[index]
        later = range(index + 1, len(calls))  # request lines come in call order
        found = tuple(itertools.takewhile(lambda i: calls[i].line < call.end_line, later))
        if not found or self.reuse or call.outcome == "error" or not _open_ended(call):
            return ()
        if call.outcome == "complete" and data_of(b"".join(call.events)):
            found = tuple(i for i in found if calls[i].end_line > call.end_line)
        return found

    def all_played(self, indexes: Sequence[int]) -> bool:
        """Whether every call of ``indexes`` has been played, or replay has ended at a miss."""
        played = self.played
        return self.kept is not None or all(played[i] for i in indexes)

    def recorded_fields(self, index: int) -> dict[str, Any]:
        """Recorded call ``index``'s request as matching compares it (``incoming_fields`` for a request)."""
        call = self.cassette.calls[index]
        return self._recorded.get(
            index, lambda: self._comparable(call.method, call.url, call.request_headers, call.body)
        )

    def _comparable(self, method: str, url: str, headers: list[tuple[str, str]], body: Any) -> dict[str, Any]:
        fields = self.matcher.comparable(method, url, headers, body)
        return self.normalizer(fields) if self.normalizer is not None else fields

    def incoming_fields(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
        """A request as ``RequestMatcher.comparable`` gives it, redacted as the recorder redacted it: the
        headers first, then the URL and the body (what the headers teach the redactor counts for both)."""
        redactor = self.redactor
        redacted = redactor.redact_headers(headers)
        content_type, encoding, _ = body_headers(headers)
        redacted_url = redact_url(url, redactor)
        stored = stored_body(body, content_type, redactor, encoding=encoding)
        return self._comparable(method, redacted_url, redacted, stored)

    def matches(self, index: int, incoming: dict[str, Any]) -> bool:
        """Whether a request (``incoming_fields``) matches recorded call ``index`` exactly, whatever the
        ordering and whether the call was played."""
        return self.matcher.difference(self.recorded_fields(index), incoming) is None

    def _call_key(self, index: int) -> CallKey:
        found = self._keys.get(index)
        if found is None:
            found = self._keys[index] = call_key(self.recorded_fields(index), self.matcher.keyed_sections)
        return found

    def select(self, incoming: dict[str, Any]) -> RecordedCall:
        with self._lock:
            if self.kept is not None:
                self._mismatch(len(self.played), "call_index", "replay ended at an earlier miss", _describe(incoming))
            request = RequestKeys(incoming, self.matcher.keyed_sections)
            index = self._choose(request)
            if index is None:
                self._miss(request)
            self._play(index)
            return self.cassette.calls[index]

    def _choose(self, request: RequestKeys) -> int | None:
        """The call that answers a request: the first due one it matches; else (``reuse``) the first played
        one, else (``repeats``) the last played one."""
        index = self._first_match(self._due_calls().candidates(request), request)
        played = self._played_index
        if index is None and self.reuse and self.ordered is False:
            index = self._first_match(played.candidates(request), request)
        if index is None and self.repeats:
            index = self._first_match(played.candidates(request, reverse=True), request)
        return index

    def _first_match(self, candidates: Iterable[int], request: RequestKeys) -> int | None:
        return next((i for i in candidates if self.matches(i, request.fields)), None)

    def _play(self, index: int) -> None:
        if self._due_index is not None:
            self._due_index.discard(index)
        if self.ordered is True and index == self.position:
            self.position += 1
        if not self.played[index]:
            self.played[index] = True
            self._left[self.group_of[index]] -= 1
            self._played_index.add(index)

    def _due_calls(self) -> CallIndex:
        """The index of the calls ``_due`` gives, made anew when they change."""
        scope = self._scope()
        if self._due_index is None or scope != self._due_scope:
            self._due_index = CallIndex(self._key_of, self._due())
            self._due_scope = scope
        return self._due_index

    def _scope(self) -> int:
        """What the calls due depend on: the position (ordered), the group due (concurrent); nothing (-1),
        unordered, beyond the calls played."""
        if self.ordered is True:
            return self.position
        if self.ordered is False:
            return -1
        while self.group < len(self._ranges) and not self._left[self.group]:
            self.group += 1
        return self.group

    def _due(self) -> list[int]:
        """The unplayed calls a request may take now, in recorded order."""
        if self.ordered is True:
            return [self.position] if self.position < len(self.played) else []
        if self.ordered is False:
            return [i for i, done in enumerate(self.played) if not done]
        if self.group >= len(self._ranges):
            return []
        return [i for i in self._ranges[self.group] if not self.played[i]]

    def _unplay(self, index: int) -> None:
        """Call ``index`` no longer played: the calls due are worked out again."""
        if self.played[index]:
            self.played[index] = False
            group = self.group_of[index]
            self._left[group] += 1
            self.group = min(self.group, group)
            self._played_index.discard(index)
        self._due_index = None

    def put_back(self, call: RecordedCall) -> None:
        """Undo the selection of ``call``, the last one selected: the next matching request gets it again
        (a fault answered the request in its place)."""
        with self._lock:
            self._unplay(call.index)
            if self.ordered is True and self.position == call.index + 1:
                self.position = call.index

    def distance(self, index: int, incoming: dict[str, Any]) -> tuple[int, float]:
        """How far recorded call ``index`` is from a request, for choosing the nearest when none matches:
        (0 for the same method and path, else 1; then how unalike the bodies are, from 0 to 1)."""
        import difflib  # a miss's: a replay that matches never loads it

        recorded = self.recorded_fields(index)
        same_route = recorded["method"] == incoming["method"] and recorded["url"]["path"] == incoming["url"]["path"]
        unalike = (
            1.0
            - difflib.SequenceMatcher(
                None, _canonical(recorded["body"]), _canonical(incoming["body"]), autojunk=False
            ).ratio()
        )
        return (0 if same_route else 1, unalike)

    def _miss(self, request: RequestKeys) -> NoReturn:
        """Raise the mismatch of a request no call answers: every field in which it differs from the call
        due (for a group, or unordered, the closest), what kind of difference it is, and what would replay
        it. In record-on-miss, replay ends here."""
        incoming = request.fields
        candidates = self._due()
        if self.ordered is False and self.reuse:  # the played calls are candidates too
            candidates += self._played_index.calls()
        if self.stop_at_miss:
            self._end_replay()
        if not candidates:
            self._nothing_due(incoming)
        # The nearest: the same method and path first, then the most alike body; the earliest on a tie.
        best = min(candidates, key=lambda i: self.distance(i, incoming)) if len(candidates) > 1 else candidates[0]
        differences = self.matcher.differences(self.recorded_fields(best), incoming)
        unplayed = CallIndex(self._key_of, (i for i, done in enumerate(self.played) if not done and i != best))
        same = self._first_match(unplayed.candidates(request), request)
        notes = self._miss_notes(best, same, incoming, differences)
        path, was, now = differences[0]
        self._mismatch(best, path, was, now, differences=differences, notes=notes, rerecord=same is None)

    def _nothing_due(self, incoming: dict[str, Any]) -> NoReturn:
        calls = self.cassette.calls
        count = len(calls)
        index = len(self.played) if self.ordered is not True else self.position
        self._mismatch(
            index,
            "call_index",
            f"{count} call(s) (0..{count - 1})" if calls else "no calls",
            _describe(incoming),
            detail=f"the cassette recorded {count} call(s); this request would be call {index}",
        )

    def _miss_notes(
        self, best: int, same: int | None, incoming: dict[str, Any], differences: list[tuple[str, Any, Any]]
    ) -> list[str]:
        """What a mismatch with call ``best`` adds: that the request is unplayed call ``same`` exactly, lists
        in another order, volatile values."""
        from ._explain import reordered_lists, volatile_suggestion  # only a mismatch is explained

        notes = [self._order_note(best, same)] if same is not None else []
        for path in reordered_lists(self.recorded_fields(best), incoming, (d[0] for d in differences)):
            notes.append(
                f"{path} holds the same items as recorded, in another order: that is the app's own "
                "nondeterminism (tool results appended as they complete, a set made a list); give it a fixed "
                "order, or compare it sorted: normalize_with=[lambda path, value: sorted(value, key=repr) "
                f'if path == "{path}" else value]'
            )
        for path, was, now in differences[:SHOWN_DIFFERENCES]:
            suggestion = volatile_suggestion(path, was, now)
            if suggestion:
                notes.append(suggestion)
        return notes

    def _order_note(self, due: int, same: int) -> str:
        """What to say when the request is another unplayed call exactly: the order differs."""
        if self.ordered is True:
            return (
                f"the request is recorded call {same} exactly: the calls came in another order than recorded, and "
                "ordered=True checks every call's place; the default, ordered='concurrent', lets calls that "
                "overlapped while recording come in any order, and ordered=False lets every call"
            )
        return (
            f"the request is recorded call {same} exactly: the calls came in another order than recorded. Calls "
            f"{min(due, same)} and {max(due, same)} did not overlap while recording (one ended before the other "
            "started), so their order is checked; if the app runs them concurrently, record them running "
            "together again, or pass ordered=False to accept any order"
        )

    def _mismatch(
        self,
        index: int,
        path: str,
        recorded: Any,
        incoming: Any,
        *,
        detail: str = "",
        differences: Sequence[tuple[str, Any, Any]] = (),
        notes: Sequence[str] = (),
        rerecord: bool = True,
    ) -> NoReturn:
        mismatch = ReplayMismatch(
            index,
            path,
            recorded,
            incoming,
            cassette=self.cassette.path,
            detail=detail,
            record_hint=self.record_hint,
            differences=differences,
            notes=notes,
            rerecord=rerecord,
        )
        if self.first_mismatch is None:
            self.first_mismatch = mismatch
        raise mismatch

    def end_at_session_miss(self, index: int) -> bool:
        """record-on-miss: replayed WebSocket session ``index`` met a client message it doesn't have. Replay
        ends here, as at a request's miss, with the session no longer played: it is recorded again, from its
        handshake, after the calls kept. True; False when this is not record-on-miss, or replay had already
        ended at an earlier miss (the session's recorded lines are among those kept)."""
        with self._lock:
            if not self.stop_at_miss or self.kept is not None:
                return False
            self._unplay(index)
            self.sessions.pop(index, None)
            self._end_replay()
            return True

    def _end_replay(self) -> None:
        """record-on-miss: replay ends here, keeping the calls played (``kept``, ``open_calls``)."""
        self.kept = tuple(i for i, done in enumerate(self.played) if done)
        self.open_calls = tuple(i for i in self.kept if self._left[self.group_of[i]])

    def unplayed(self) -> list[tuple[int, str, str]]:
        """The calls not played, and the WebSocket sessions played only in part (what they left is said
        after the URL)."""
        found = []
        for call in self.cassette.calls:
            session = self.sessions.get(call.index)
            left = session.unplayed() if session is not None else ""
            if not self.played[call.index]:
                found.append((call.index, call.method, call.url))
            elif left:
                found.append((call.index, call.method, f"{call.url} ({left})"))
        return found


def _key_function(engine: ReplayEngine) -> Callable[[int], CallKey]:
    """The engine's ``_call_key`` for its indexes, through a weak reference: indexes holding the engine's bound
    method would make each engine a reference cycle, and its cassette would wait for the collector."""
    owner = weakref.ref(engine)

    def key_of(index: int) -> CallKey:
        engine = owner()
        assert engine is not None, "an index outlived its engine"
        return engine._call_key(index)

    return key_of


def _open_ended(call: RecordedCall) -> bool:
    """Whether a call's response is an event stream whose events never ended its protocol."""
    content_type = next((v for k, v in call.response_headers if k.lower() == "content-type"), "")
    if "event-stream" not in content_type.lower():
        return False
    watcher = ProtocolEnd(answers_post=call.method.upper() == "POST")
    for chunk in call.events:
        watcher.feed(chunk)
        if watcher.ended:
            return False
    return True


_COMPARED_CHARACTERS = 4000  # enough to tell requests apart; SequenceMatcher is quadratic in the worst case


def _canonical(body: Any) -> str:
    text = body if isinstance(body, str) else json.dumps(body, sort_keys=True, default=str)
    return text[:_COMPARED_CHARACTERS]


def _describe(incoming: dict[str, Any]) -> str:
    url = incoming["url"]
    return f"{incoming['method']} {url['scheme']}://{url['host']}{url['path']}"
