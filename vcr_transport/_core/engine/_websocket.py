"""WebSocket sessions, with no I/O: what a session's lines are while recording, how a client's message is
compared with the recorded one, and which recorded message comes next in replay.

A session is a call of the cassette (see ``_format``): the opening handshake is its request, matched as any
request is; its messages follow in the order the client sent or received them. The shells
(``_websocket.py``) wrap the ``websockets`` connections and carry out what this module decides:

- ``SessionRecording``: the lines of one session, redacted as HTTP calls are (the handshake's URL and
  headers through the same redactor; a JSON message's values as a JSON body's, also JSON in a binary frame).
  Media is never redacted: any other binary message, and in a JSON message every string of 64 or more base64
  characters (openai's ``audio``/``delta``, genai's ``realtimeInput.audio.data``), are kept byte for byte.
- ``MessageMatcher``: a client message as the fields matching compares, through the request matcher's
  body comparison (``ignore_fields``, the normalisers), so a JSON message differs by field path.
- ``SessionPlayback``: replay's cursor. Each message the client sends is checked against the next recorded
  client message; a server message is delivered once every client message recorded before it was sent, so
  one that arrived before the client's next send is delivered without waiting for it. When one differs in
  record-on-miss, ``resend_plan`` says how the live session is caught up.
"""

from __future__ import annotations

import base64
import bisect
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..._exceptions import ReplayMismatch
from ..format._bodies import stored_body
from ..format._format import RecordedCall, decode_json, encode_line, message_line
from ..rules._deltas import delta_edits, split_edited
from ..rules._redaction import Redactor
from ._call_recording import CallBook, CallRecording
from ._matching import Difference, Normalizer, RequestMatcher

__all__ = [
    "HANDSHAKE_VOLATILE",
    "Close",
    "MessageMatcher",
    "SessionPlayback",
    "SessionRecording",
    "handshake_headers",
    "stored_message",
]

# Handshake headers that are random per connection (the key, and the accept derived from it), and the
# compression the two sides negotiate (a transport detail; replay compresses nothing): not recorded.
HANDSHAKE_VOLATILE = frozenset({"sec-websocket-key", "sec-websocket-accept", "sec-websocket-extensions"})
# A JSON string this long of the base64 alphabet is media (audio, images): never redacted.
_MEDIA = re.compile(r"[A-Za-z0-9+/]{64,}={0,2}")
_MASK = "\ue000vcr-media-%d\ue000"  # stands for a media string while the rest of a message is redacted

Close = tuple[int | None, str, str | None]  # (code, reason, by "client" | "server" | None)
# A server message that is a piece of a text: Realtime's whose ``type`` ends with ``.delta`` but audio's (base64,
# never redacted: ``response.output_text.delta``, transcripts', tool arguments'), Gemini Live's ``serverContent``
# with text (a model turn's parts, transcriptions; in a binary frame).
_DELTA_TYPE = re.compile(r'"type"\s*:\s*"[^"\\]{0,80}?(?<!audio)\.delta"')
_HELD_PIECES = 4096  # pieces held at most before they are written (searched together)
_HELD_SIZE = 4 << 20  # characters held at most (audio's pieces count)


def _piece(data: str | bytes, text_only: bool) -> bool:
    """Whether a message is a piece of a stream (a delta, a ``serverContent``; with ``text_only``, of a text: one
    JSON line, as held pieces are read as NDJSON)."""
    text = data if isinstance(data, str) else _binary_json(data)
    if text is None or "\n" in text:
        return False
    if '"serverContent"' in text:
        return '"text"' in text or not text_only
    return '.delta"' in text and (_DELTA_TYPE.search(text) is not None or not text_only)


def handshake_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The handshake's headers as recorded and compared: all but the per-connection random ones."""
    return [(name, value) for name, value in headers if name.lower() not in HANDSHAKE_VOLATILE]


def _masked(value: Any, media: list[str]) -> Any:
    if isinstance(value, str):
        if len(value) >= 64 and _MEDIA.fullmatch(value):
            media.append(value)
            return _MASK % (len(media) - 1)
        return value
    if isinstance(value, dict):
        return {key: _masked(item, media) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item, media) for item in value]
    return value


def _unmasked(value: Any, media: Sequence[str]) -> Any:
    if isinstance(value, str):
        if value.startswith("\ue000vcr-media-") and value.endswith("\ue000"):
            return media[int(value[len("\ue000vcr-media-") : -1])]
        return value
    if isinstance(value, dict):
        return {key: _unmasked(item, media) for key, item in value.items()}
    if isinstance(value, list):
        return [_unmasked(item, media) for item in value]
    return value


def stored_message(data: str | bytes, redactor: Redactor) -> str | bytes:
    """A message as recorded: as it came unless it holds a secret. A binary message is media, kept as it
    came, but JSON sent in a binary frame (Gemini Live's server messages), redacted as text and kept binary.
    Text that is JSON is redacted as a JSON body is, its media strings left as they are, and written again
    compactly only when redaction changed something; other text is redacted as free text."""
    if isinstance(data, bytes):
        text = _binary_json(data)
        kept = data if text is None else stored_message(text, redactor)
        return data if kept is text or kept is data else str(kept).encode("utf-8")
    if not redactor.could_redact(data):
        return data
    try:
        parsed = decode_json(data)
    except ValueError:
        return redactor.redact_text(data)
    media: list[str] = []
    masked = _masked(parsed, media)
    stored = stored_body(json.dumps(masked).encode(), "application/json", redactor)
    redacted = stored["json"] if stored is not None and "json" in stored else masked
    if redacted == masked:
        return data
    return json.dumps(_unmasked(redacted, media), ensure_ascii=False, separators=(",", ":"))


def _utf8(data: str | bytes) -> bytes:
    return data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")


def _binary_json(data: bytes) -> str | None:
    """The text of a binary message that is a JSON object or array in UTF-8, else None (media, other bytes)."""
    if data.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class SessionRecording:
    """The lines of one WebSocket session being recorded. Each step returns the encoded lines to append
    (nothing once the session has ended, or the recording is broken). The handshake's request and response
    lines are ``CallRecording``'s, redacted as any call's."""

    def __init__(self, book: CallBook, redactor: Redactor, started: int) -> None:
        self.call = CallRecording(book, redactor, started)
        self.index = self.call.index
        self.redactor = redactor
        self.started = started  # nanoseconds, on the clock of the messages' times
        self.count = 0  # messages recorded so far
        self._held: list[tuple[str | bytes, int]] = []  # server pieces of text not written yet, with their times
        self._held_size = 0

    @property
    def ended(self) -> bool:
        return self.call.ended

    def handshake(self, url: str, headers: list[tuple[str, str]]) -> list[bytes]:
        return self.call.request("GET", url, handshake_headers(headers), b"")

    def accepted(self, status: int, headers: list[tuple[str, str]], body: bytes = b"", at: int = 0) -> list[bytes]:
        """The handshake's response: 101, or the server's refusal with its ``body`` (arrived at ``at``)."""
        lines = self.call.response(status, handshake_headers(headers), "HTTP/1.1")
        if body:
            self.call.take(body, at)
            lines += self.call.batch()
        return lines

    def message(self, side: str, data: str | bytes, at: int) -> list[bytes]:
        """A message sent (``side`` "client") or received ("server") at ``at`` nanoseconds. A server's piece of
        text (``_piece``) is held with the pieces that follow it (audio's too, which come between a transcript's),
        until another message comes (or the session ends, or ``_HELD_PIECES``/``_HELD_SIZE``), so that a secret
        spread over them is removed from each."""
        if self.ended or self.call.book.broken:
            return []
        if side == "server" and _piece(data, text_only=not self._held):  # audio between text pieces: held too
            self._held.append((data, at))
            self._held_size += len(data)
            return self._release() if len(self._held) >= _HELD_PIECES or self._held_size >= _HELD_SIZE else []
        return self._release() + [self._line(side, data, at)]

    def _line(self, side: str, data: str | bytes, at: int) -> bytes:
        stored = stored_message(data, self.redactor)
        self.count += 1
        return encode_line(message_line(self.index, self.count - 1, (at - self.started) / 1e9, side, stored))

    def _release(self) -> list[bytes]:
        """The held pieces' lines, each without its part of a secret their joined text holds."""
        held, self._held, self._held_size = self._held, [], 0
        if not held:
            return []
        pieces = [_utf8(data) + b"\n" for data, _ in held]  # as NDJSON lines
        body = b"".join(pieces)
        edits = delta_edits(body, self.redactor)
        if edits:
            pieces = split_edited(body, edits, list(map(len, pieces)))
        kept = [piece[:-1] if isinstance(data, bytes) else piece[:-1].decode("utf-8", "surrogatepass")
                for piece, (data, _) in zip(pieces, held, strict=True)]  # fmt: skip
        return [self._line("server", data, at) for data, (_, at) in zip(kept, held, strict=True)]

    def end(self, outcome: str, close: Close | None = None, error: tuple[str, str] | None = None) -> list[bytes]:
        """The session's call_end: ``outcome`` complete (closed), closed_early (still open when the recording
        ended) or error (``error``: class and redacted message)."""
        held = self._release() if not (self.ended or self.call.book.broken) else []
        if not self.call.close(outcome, error) or self.call.book.broken:
            return []
        return held + self.call.end_lines(close)


_EMPTY_REQUEST: dict[str, Any] = {"method": "", "url": {}, "headers": {}, "body": None}


class MessageMatcher:
    """Client messages as matching compares them: JSON text as a JSON body (``ignore_fields``, then the
    normalisers, which see it at ``body...`` as a request body), other text as text, binary as base64. Both
    sides are redacted as the recorder redacted (a recorded message already was)."""

    def __init__(self, matcher: RequestMatcher, redactor: Redactor, normalizer: Normalizer | None = None) -> None:
        self.matcher = matcher
        self.redactor = redactor
        self.normalizer = normalizer

    def fields(self, data: str | bytes) -> dict[str, Any]:
        stored: dict[str, Any]
        if isinstance(data, bytes):
            stored = {"base64": base64.b64encode(data).decode("ascii")}
        else:
            try:
                stored = {"json": decode_json(data)}
            except ValueError:
                stored = {"text": data}
        fields = self.matcher.with_body(_EMPTY_REQUEST, "application/json", stored)
        return self.normalizer(fields) if self.normalizer else fields

    def differences(self, position: int, recorded: str | bytes, incoming: str | bytes) -> list[Difference]:
        """How message ``position`` sent differs from the recorded one: (path, recorded, incoming) with paths
        from ``message[position]``; empty when they match."""
        found = self.matcher.differences(self.fields(recorded), self.fields(stored_message(incoming, self.redactor)))
        return [(f"message[{position}]" + path[len("body") :], was, now) for path, was, now in found]


class SessionPlayback:
    """Replay's cursor over one recorded session. ``sent`` checks each client message; ``next_server`` says
    which server message may be delivered now (None: it waits for a client message; ``CLOSED``: the server
    closes now, as recorded). Thread-safety is the shell's (it holds a lock around each step)."""

    CLOSED = -1

    def __init__(self, call: RecordedCall, matcher: MessageMatcher, *, cassette: str = "", record_hint: str = ""):
        self.call = call
        self.matcher = matcher
        self.cassette = cassette
        self.record_hint = record_hint
        messages = call.messages
        self._client = [i for i, (side, _, _) in enumerate(messages) if side == "client"]
        self._server = [i for i, (side, _, _) in enumerate(messages) if side == "server"]
        self._sent = 0  # client messages sent so far
        self._delivered = 0  # server messages delivered so far
        self.last_t = 0.0  # the latest time a delivered message came while recording

    @property
    def _gate(self) -> int:
        """The position of the next client message not sent yet: server messages before it may go."""
        return self._client[self._sent] if self._sent < len(self._client) else len(self.call.messages)

    def sent(self, data: str | bytes) -> None:
        """The client sent ``data``: it must be the next recorded client message (ReplayMismatch if not)."""
        messages = self.call.messages
        if self._sent >= len(self._client):
            self._mismatch(
                len(messages),
                f"message[{len(messages)}]",
                f"no more client messages ({len(self._client)} recorded)",
                data,
                "the client sent a message the recording does not have",
            )
        position = self._client[self._sent]
        differences = self.matcher.differences(position, messages[position][1], data)
        if differences:
            path, was, now = differences[0]
            self._mismatch(
                position,
                path,
                was,
                now,
                f"client message {position} of WebSocket session {self.call.index} ({self.call.url}) differs",
                differences,
            )
        self._sent += 1

    def _mismatch(
        self,
        position: int,
        path: str,
        recorded: Any,
        incoming: Any,
        detail: str,
        differences: Sequence[Difference] = (),
    ) -> None:
        raise ReplayMismatch(
            self.call.index,
            path,
            recorded,
            incoming,
            cassette=self.cassette,
            event_index=position,
            detail=detail,
            record_hint=self.record_hint,
            differences=differences,
        )

    def next_server(self) -> int | None:
        """The position of the server message that may be delivered now, ``CLOSED`` when the server closes
        now, or None when the recording has the client send first (or close: the server stays quiet)."""
        if self._delivered < len(self._server):
            position = self._server[self._delivered]
            return position if position < self._gate else None
        close = self.call.close
        server_closes = close is None and self.call.outcome == "error" or close is not None and close[2] != "client"
        if server_closes and self._sent == len(self._client):
            return self.CLOSED
        return None

    def awaited(self) -> str:
        """What the recording has the client do next (its next message, or its close), for saying what the
        server waits for when ``next_server`` is None."""
        if self._sent < len(self._client):
            return f"client message {self._client[self._sent]}"
        return "the client's close"

    def delivered(self, position: int) -> str | bytes:
        """Take the server message at ``position`` (as ``next_server`` gave it)."""
        self._delivered += 1
        _, data, t = self.call.messages[position]
        self.last_t = max(self.last_t, t)
        return data

    def delay(self, position: int, pace: float | None) -> float:
        """How long ``pace`` waits before the message at ``position``: its recorded gap from the latest time
        reached, scaled. A time earlier than one before it waits nothing, so one session waits at most
        MAX_SECONDS times ``pace`` in all, however its times go up and down."""
        if not pace:
            return 0.0
        return max(0.0, self.call.messages[position][2] - self.last_t) * pace

    def resend_plan(self) -> tuple[list[int], int]:
        """record-on-miss from the client message that differs: the live session is opened and the client's
        messages sent so far are sent to it again, then the one that differs. For each of those, how many
        server messages the recording has before it (the live session waits for as many before sending it,
        as the recorded one did); and how many server messages the client was given from the recording (the
        live ones that stand for them are recorded but not given again)."""
        sent = self._client[: self._sent]
        differing = self._client[self._sent] if self._sent < len(self._client) else len(self.call.messages)
        return [bisect.bisect(self._server, position) for position in (*sent, differing)], self._delivered

    def unplayed(self) -> str:
        """What of the session was not played ("" when all of it was)."""
        left = len(self._client) - self._sent, len(self._server) - self._delivered
        if not any(left):
            return ""
        return f"{left[0]} client and {left[1]} server message(s) of the session not played"
