"""A recording, with no I/O: each call's lines worked out from what crossed the transport (bytes and header
pairs in, encoded lines out), and the recording's book (call numbers, what each call got and how it ended,
whether the recording is worth saving).

``CallRecording`` owns everything one call's lines need: the request line (redacted, refused when redaction
would garble its structure), the response line and the choice of the body's redactor (a content-encoded
body, text, or binary kept as it came), the chunks taken but not yet recorded and the batch they make, the
watch for the protocol's end, the event lines grouped about ``BATCH`` bytes at a time, and the call's end.
It takes no lock and writes nothing: the recording shell (``_recording.py``) holds the locks and the file,
and appends what each step gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..format._bodies import DecodedTooLarge, body_headers, is_media, redact_url, stored_body
from ..format._format import call_end_line, encode_line, event_lines, request_line, response_line
from ..format._sse import ProtocolEnd  # where a stream's protocol ends: watched on the one SSE decoder
from ..rules._redaction import PLACEHOLDER, Redactor
from ..rules._stream import (
    BATCH,
    BinaryBodyRedactor,
    EncodedBodyRedactor,
    HeldBodyRedactor,
    StreamRedactor,
    carries_deltas,
)

__all__ = [
    "BATCH",
    "CREDENTIAL_REFUSALS",
    "CallBook",
    "CallRecord",
    "CallRecording",
    "OlderCassette",
    "garbled_structure",
    "vendor_trouble",
]

# Statuses that say the request's credentials were refused: recording them captures a setup mistake.
CREDENTIAL_REFUSALS = frozenset({401, 403})


def vendor_trouble(status: int) -> bool:
    """A status that says the vendor could not answer now (overloaded, rate-limited, down): 429 and 5xx."""
    return status == 429 or status >= 500


@dataclass(frozen=True)
class OlderCassette:
    """What the cassette a recording would replace holds, as far as "never worse" asks: each call's status
    (None: no response) and whether every call of it ended ``complete``."""

    statuses: dict[int, int | None]
    complete: bool

    def answered(self, index: int) -> int | None:
        """The status with which its call ``index`` succeeded (below 400), else None."""
        status = self.statuses.get(index)
        return status if status is not None and status < 400 else None


FAILURES_FIX = (
    "fix the cause and record again; to keep recordings of failures on purpose (tests of your error "
    "handling), pass keep_failures=True"
)

# Recorded chunks of an event stream are shown to its ProtocolEnd once they pass this many bytes (see
# ``CallRecording._watch``): they are kept, by reference, until then.
WATCH_AFTER = 32 * BATCH

Chunk = tuple[bytes, int]  # a chunk and its arrival, in nanoseconds on the shell's clock


@dataclass
class CallRecord:
    """One call of the recording: its number, the status it got (None: no response), how it ended."""

    index: int
    status: int | None = None
    outcome: str | None = None
    error: str = ""

    @property
    def ended(self) -> bool:
        return self.outcome is not None

    def failure(self, older: OlderCassette | None = None) -> str:
        """Why this call's answer is not worth replaying ("" when it is): no response, a refusal of the
        credentials, or (``older``: a complete cassette this recording would replace) a 429/5xx where the
        older cassette's call got a success. A later call that got a real answer makes it a retry that
        succeeded (see ``CallBook.why_not_saved``)."""
        if self.status is None:
            return f"call {self.index} got no response ({self.error or self.outcome})" if self.ended else ""
        if self.status in CREDENTIAL_REFUSALS:
            return f"call {self.index} was refused for its credentials (status {self.status})"
        if older is not None and older.complete and vendor_trouble(self.status):
            before = older.answered(self.index)
            if before is not None:
                return f"call {self.index} got status {self.status}, where the older cassette's got {before}"
        return ""

    def cut_short(self, older: OlderCassette | None = None) -> str:
        """Why this call's response is incomplete where the complete ``older`` cassette's was whole ("" when it
        is not): it ended ``closed_early`` (the upstream closed mid-stream, or the app stopped reading) or
        ``error`` after its response began."""
        if older is None or not older.complete or self.status is None or self.outcome in (None, "complete"):
            return ""
        detail = f" ({self.error})" if self.error else ""
        return f"call {self.index} ended {self.outcome}{detail}, where every call of the older cassette is complete"


@dataclass
class CallBook:
    """The calls of one recording, numbered from ``first_index`` (after ``kept_calls`` copied ones)."""

    first_index: int = 0
    kept_calls: int = 0
    calls: dict[int, CallRecord] = field(default_factory=dict)
    interrupted: str = ""
    broken: str = ""
    broken_fix: str = ""
    early_stop_ok: bool = False  # a call closed early is an intended early stop (Options.early_stop_ok)
    _next: int = -1

    def __post_init__(self) -> None:
        self._next = self.first_index

    def open_call(self) -> CallRecord:
        record = CallRecord(self._next)
        self._next += 1
        self.calls[record.index] = record
        return record

    @staticmethod
    def end(record: CallRecord, outcome: str, error: str = "") -> bool:
        """Mark ``record`` ended; False when it already was (its call_end must not be written twice)."""
        if record.ended:
            return False
        record.outcome = outcome
        record.error = error
        return True

    def interrupt(self, reason: str) -> None:
        """The recording did not finish (a signal, an exception ending the block): it must not be saved."""
        self.interrupted = self.interrupted or reason

    def break_down(self, reason: str, fix: str = "") -> None:
        """The recorder itself failed (a write error, a bug, a redact_with function): nothing it wrote can be
        trusted."""
        if not self.broken:
            self.broken, self.broken_fix = reason, fix

    @property
    def asks_older(self) -> bool:
        """Whether ``why_not_saved`` depends on the older cassette: a call that did not end complete, or one
        answered 429/5xx (the shell reads the older cassette only then)."""
        return any(
            r.status is not None and (r.outcome not in (None, "complete") or vendor_trouble(r.status))
            for r in self.calls.values()
        )

    def why_not_saved(self, *, keep_failures: bool, older: OlderCassette | None = None) -> str:
        """The reason this recording must not replace the cassette, or "" when it may: the one rule of what a
        recording must be to be saved. ``older``: the cassette it would replace, if one reads. A recording
        replaces a complete older cassette only if it is complete too ("never worse")."""
        if self.broken:
            return self.broken
        if self.interrupted:
            return f"the recording did not finish: {self.interrupted}"
        if not self.calls and not self.kept_calls:
            return "no call went through the recording transport"
        return "" if keep_failures else self._why_failures_not_saved(older)

    def _why_failures_not_saved(self, older: OlderCassette | None) -> str:
        """Why the calls' failures keep this recording from being saved (keep_failures off), or ""."""
        records = sorted(self.calls.values(), key=lambda r: r.index)
        for record in records:
            cut = record.cut_short(older)
            if cut:
                return f"{cut}; {FAILURES_FIX}"
        # A failure followed by a call that got a real answer is a retry that succeeded: the SDK's real
        # sequence, kept whole. A failure with nothing good after it is the recording.
        failures = {r.index: r.failure(older) for r in records}
        answered = [r.index for r in records if r.status is not None and not failures[r.index]]
        last_answered = max(answered, default=self.first_index - 1)
        for record in records:
            if failures[record.index] and record.index > last_answered:
                return f"{failures[record.index]}; {FAILURES_FIX}"
        return ""


def garbled_structure(url: str, headers: list[tuple[str, str]], placeholder: str) -> str:
    """Why a redacted request line must not be written, or "": redaction put ``placeholder`` where only
    structure stands (the URL's host, the ``Host`` header, a header's name). Only credentials are learned
    (see ``_redaction.is_structure``), so this means a bug: the cassette would not be readable, or would
    not replay."""
    if placeholder in url:
        authority = url.partition("://")[2].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        if placeholder in authority.rpartition("@")[2]:  # userinfo may hold a removed password
            return f"the URL's host ({url})"
    for name, value in headers:
        if placeholder in name:
            return f"a header's name ({name!r})"
        if placeholder in value and name.lower() == "host":
            return f"the Host header ({value!r})"
    return ""


def _declared_length(headers: Sequence[tuple[str, str]]) -> int | None:
    """The content-length a response declares (None: none, or one that is no number of bytes)."""
    value = next((v for k, v in headers if k.lower() == "content-length"), None)
    return int(value) if value is not None and value.strip().isdigit() else None


class CallRecording:
    """One call's lines, from its request to its end. Each step returns the encoded lines to append, in
    order (a list: event lines come in groups of about ``BATCH`` bytes, the last group with the call's end).

    Chunks are taken as they arrive (``take``, one list append: the caller has each at once) and recorded by
    batches of about ``BATCH`` bytes (``batch``): watched for the protocol's end, redacted, encoded. A step
    after the call has ended, or once the recording is broken, gives nothing (and drops the chunks taken)."""

    def __init__(self, book: CallBook, redactor: Redactor, started: int) -> None:
        self.book = book
        self.record = book.open_call()
        self.index = self.record.index
        self.redactor = redactor
        self.started = started  # nanoseconds, on the clock of the chunks' arrivals
        self.written = 0  # events encoded so far
        self._body: StreamRedactor | HeldBodyRedactor | None = None
        self._protocol: ProtocolEnd | None = None
        # Chunks recorded but not yet shown to ``_protocol``: it is asked only when the stream stops before
        # its end (``protocol_ended``), so they are fed to it when they pass ``WATCH_AFTER`` bytes, or then.
        self._unwatched: list[bytes] = []
        self._unwatched_size = 0
        # Chunks taken and not yet recorded. Another thread may take them all to end the call (under the
        # shell's lock) while the stream appends: ``list.append`` is atomic, and only what was copied is
        # removed, so a chunk racing with the end is either recorded with it or dropped, as if it came after.
        self.pending: list[Chunk] = []
        self._pending_size = 0  # bytes taken since the last batch was recorded
        self._received = 0  # bytes taken in all
        self._length: int | None = None  # the response's content-length, when it declares one
        self._method = ""  # the request's, upper-case
        self._error: tuple[str, str] | None = None  # how the call failed (class, redacted message)

    @property
    def ended(self) -> bool:
        return self.record.ended

    def request(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> list[bytes]:
        """The request line, redacted. A request whose redaction would garble its structure (see
        ``garbled_structure``) breaks the recording instead: nothing of it is written."""
        self._method = method.upper()
        if self.book.broken:
            return []
        redactor = self.redactor
        stored_headers = redactor.redact_headers(headers)  # first: the values it learns leave the URL too
        content_type, encoding, _ = body_headers(headers)
        stored = stored_body(body, content_type, redactor, encoding=encoding)
        stored_url = redact_url(url, redactor)
        garbled = garbled_structure(stored_url, stored_headers, PLACEHOLDER)
        if garbled:
            self.book.break_down(
                f"call {self.index}: redaction would have written {garbled} with a learned value removed "
                "from it; only credentials are learned, so this is a bug in vcr_transport (please report it "
                "with the call's URL and headers, secrets left out)"
            )
            return []
        return [encode_line(request_line(self.index, method, stored_url, stored_headers, stored))]

    def response(self, status: int, headers: list[tuple[str, str]], http_version: str) -> list[bytes]:
        """The response line, redacted; the body's redactor is chosen from the response's headers: media
        (images, audio, video) is kept as it came, content-encoded or not; another content-encoded body is
        redacted decoded, text as it streams (with SSE deltas reassembled in an event stream, which is also
        watched for its protocol's end), another binary body searched as bytes when whole
        (``BinaryBodyRedactor``)."""
        self.record.status = status
        if self.book.broken:
            return []
        self._length = _declared_length(headers)
        content_type, encoding, binary = body_headers(headers)
        if is_media(content_type):
            pass  # an image, audio, video: kept as it came, content-encoded or not
        elif encoding:
            self._body = EncodedBodyRedactor(self.redactor, encoding)
        elif not binary:
            event_stream = "event-stream" in content_type
            self._body = StreamRedactor(self.redactor, deltas=carries_deltas(content_type))
            if event_stream:
                self._protocol = ProtocolEnd(answers_post=self._method == "POST")
        else:
            self._body = BinaryBodyRedactor(self.redactor)
        return [encode_line(response_line(self.index, status, self.redactor.redact_headers(headers), http_version))]

    def take(self, chunk: bytes, arrived: int) -> bool:
        """Take a chunk that has just arrived; True when the chunks taken make a batch to record."""
        self.pending.append((chunk, arrived))
        self._pending_size += len(chunk)
        self._received += len(chunk)
        if self._pending_size < BATCH:
            return False
        self._pending_size = 0
        return True

    def batch(self) -> list[bytes]:
        """The event lines of the chunks taken so far: watched for the protocol's end, redacted, encoded."""
        batch = self._take_pending()
        if not batch or self.record.ended or self.book.broken:
            return []
        if self._protocol is not None:
            chunks = [chunk for chunk, _ in batch]
            self._unwatched += chunks
            self._unwatched_size += sum(map(len, chunks))
            if self._unwatched_size > WATCH_AFTER:
                self._watch()
        return self._events(batch if self._body is None else self._body.feed_many(batch))

    def protocol_ended(self) -> bool:
        """Whether the vendor's protocol had ended in the chunks recorded (for a stream that stopped)."""
        self._watch()
        return self._protocol is not None and self._protocol.ended

    def body_ended(self) -> bool:
        """Whether a stream that stopped had its whole body: every byte its content-length declares (an empty
        202 that the client closed unread, as MCP's client does), the end of its vendor's protocol, or an
        event stream its server had sent nothing on yet (MCP's GET stream, which the client closes at the
        session's end; the server may close it first, on the DELETE, so either way it ends ``complete``)."""
        if self._length is not None and self._received >= self._length:
            return True
        return self._protocol is not None and (self._received == 0 or self.protocol_ended())

    def close(self, outcome: str, error: tuple[str, str] | None = None) -> bool:
        """Mark the call ended (``error``: the class and the redacted message); False when it already was.
        ``end_lines`` then gives its last lines."""
        self._error = error
        return CallBook.end(self.record, outcome, "" if error is None else f"{error[0]}: {error[1]}")

    def end_lines(self, websocket_close: tuple[int | None, str, str | None] | None = None) -> list[bytes]:
        """The lines that end a call ``close`` has just ended: its last events and its call_end, together
        (with how a WebSocket session closed, ``websocket_close``)."""
        batch = self._take_pending()
        self._unwatched = []  # the call has ended: whether its protocol had is no longer asked
        if self.book.broken:
            return []
        if self._body is not None:  # the last batch goes with the finish: a body that came at once
            try:
                batch = self._body.finish(batch)  # is taken in at once
            except DecodedTooLarge as error:
                self.book.break_down(
                    f"call {self.index}: the response's {error}, more than the recorder searches for secrets",
                    "a body that can't be searched is never written: ask the server for a smaller response, "
                    "or answer that call in the test with a stub (httpx.MockTransport)",
                )
                return []
        outcome = self.record.outcome
        assert outcome is not None, "close ended the call"
        end = encode_line(
            call_end_line(
                self.index,
                self.written + len(batch),
                outcome,
                self._error,
                websocket_close,
                early_stop_ok=self.book.early_stop_ok,
            )
        )
        lines = self._events(batch)
        if lines:
            lines[-1] += end
        else:
            lines.append(end)
        return lines

    def _take_pending(self) -> list[Chunk]:
        """The chunks not yet recorded. Only those copied are removed from ``pending``: a chunk appended
        meanwhile stays for the next batch."""
        pending = self.pending
        batch = pending[:]
        del pending[: len(batch)]
        return batch

    def _watch(self) -> None:
        """Show ``_protocol`` the chunks recorded since it last looked, as one piece."""
        if self._protocol is not None and self._unwatched:
            self._protocol.feed(b"".join(self._unwatched))
        self._unwatched, self._unwatched_size = [], 0

    def _events(self, ready: Sequence[Chunk]) -> list[bytes]:
        """Event lines for ``ready``, encoded a group at a time (a held stream comes out whole): each group
        ends with the chunk that brings it to ``BATCH`` bytes."""
        groups = []
        first = size = 0
        for position, (chunk, _) in enumerate(ready, 1):
            size += len(chunk)
            if size >= BATCH:
                groups.append(event_lines(self.index, self.written, ready[first:position], self.started))
                self.written += position - first
                first, size = position, 0
        if first < len(ready):
            groups.append(event_lines(self.index, self.written, ready[first:], self.started))
            self.written += len(ready) - first
        return groups
