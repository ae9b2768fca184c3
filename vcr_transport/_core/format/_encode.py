"""The encoders: the one place a cassette's lines are written (``encode_line`` for a line object, ``event_lines``
for a call's chunks from the schema's own Struct)."""

from __future__ import annotations

import base64
import datetime
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ._schema import (
    FORMAT_VERSION,
    INTENDED,
    MAX_SECONDS,
    EventLine,
    StoredBody,
)

__all__ = [
    "call_end_line",
    "encode_line",
    "encode_string",
    "event_lines",
    "header_age_days",
    "header_line",
    "message_line",
    "request_line",
    "response_line",
]

# --- encoders: the one place lines are written ---------------------------------------------------------


def encode_line(obj: dict[str, Any]) -> bytes:
    """A line object as one JSONL line in UTF-8: the text of ``json.dumps(obj, ensure_ascii=False,
    separators=(",", ":"))``, which msgspec writes faster. The two write a float the same way unless its
    ``repr`` has an exponent or it is not finite; a line holding such a float, or anything msgspec refuses
    (a lone surrogate, which then fails to encode as it always did), is written by ``json``."""
    if not _odd_floats(obj):
        try:
            return _encoder.encode(obj) + b"\n"
        except (msgspec.EncodeError, TypeError, ValueError, OverflowError):
            pass
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
    return text.encode("utf-8")


_encoder = msgspec.json.Encoder()


def encode_string(value: str) -> bytes:
    """A string's JSON text in UTF-8 without its quotes, as ``encode_line`` writes it; a lone surrogate (a stream
    may carry ``"\\ud800"``), which UTF-8 can't hold, written as its escape."""
    text = json.dumps(value, ensure_ascii=False)[1:-1]
    try:
        return text.encode()
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]", lambda match: f"\\u{ord(match[0]):04x}", text).encode()


def _odd_floats(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` holds a float whose text has an exponent (``1e-05``) or that is not finite, or a
    value of a type other than JSON's own (a subclass has its own text, which json writes)."""
    stack: list[Any] = [obj]
    while stack:
        item = stack.pop()
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is str or kind is int or kind is bool or child is None:
                continue
            if kind is dict or kind is list or kind is tuple:
                stack.append(child)
            elif kind is not float:
                return True
            else:
                text = repr(child)
                if "e" in text or "n" in text:
                    return True
    return False


def header_line(versions: dict[str, str] | None = None, **metadata: Any) -> dict[str, Any]:
    """The header (line 1): the format version, when it was written, and optional metadata readers ignore."""
    line: dict[str, Any] = {
        "type": "header",
        "format_version": FORMAT_VERSION,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    if versions is not None:
        line["versions"] = dict(versions)
    line.update(metadata)
    return line


def header_age_days(header: Mapping[str, Any], now: datetime.datetime) -> float | None:
    """How many days before ``now`` the cassette was recorded (its header's ``created``); None when the header
    says no time, or none that parses (an imported cassette's may carry none)."""
    created = header.get("created")
    if not isinstance(created, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(created)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return (now - when).total_seconds() / 86400


def request_line(
    call_index: int, method: str, url: str, headers: Sequence[tuple[str, str]], body: StoredBody
) -> dict[str, Any]:
    return {
        "type": "request",
        "call_index": call_index,
        "method": method,
        "url": url,
        "headers": list(headers),
        "body": body,
    }


def response_line(
    call_index: int, status: int, headers: Sequence[tuple[str, str]], http_version: str = "HTTP/1.1"
) -> dict[str, Any]:
    return {
        "type": "response",
        "call_index": call_index,
        "status": status,
        "headers": list(headers),
        "http_version": http_version,
    }


def call_end_line(
    call_index: int,
    event_count: int,
    outcome: str,
    error: tuple[str, str] | None = None,
    close: tuple[int | None, str, str | None] | None = None,
    *,
    early_stop_ok: bool = False,
) -> dict[str, Any]:
    """The end of a call; ``error`` is (class name, message) when the outcome is ``error``; ``close`` (code,
    reason, by) how a WebSocket session closed. ``early_stop_ok``: a ``closed_early`` call is marked
    ``"early_stop": "intended"`` (the test stopped it on purpose)."""
    line: dict[str, Any] = {
        "type": "call_end",
        "call_index": call_index,
        "event_count": event_count,
        "outcome": outcome,
    }
    if error is not None:
        line["error"] = {"class": error[0], "message": error[1]}
    if early_stop_ok and outcome == "closed_early":
        line["early_stop"] = INTENDED
    if close is not None:
        line["close"] = {"code": close[0], "reason": close[1], "by": close[2]}
    return line


def message_line(call_index: int, message_index: int, offset: float, side: str, data: str | bytes) -> dict[str, Any]:
    """A WebSocket message's line: ``offset`` in seconds since the handshake, rounded to the microsecond (at
    most MAX_SECONDS)."""
    line: dict[str, Any] = {
        "type": "message",
        "call_index": call_index,
        "message_index": message_index,
        "t": round(min(max(offset, 0.0), MAX_SECONDS), 6),
        "from": side,
    }
    if isinstance(data, str):
        line["text"] = data
    else:
        line["base64"] = base64.b64encode(data).decode("ascii")
    return line


def event_lines(call_index: int, first_index: int, chunks: Iterable[tuple[bytes, int]], started: int) -> bytes:
    """The event lines of ``chunks`` ((chunk, arrival) pairs), numbered from ``first_index``, encoded together
    from the schema's own Struct: a chunk as ``text`` when it is valid UTF-8 on its own, else ``base64``.
    Arrivals and ``started`` are nanoseconds on one clock; an event's ``t`` is its arrival's offset from
    ``started`` in seconds, rounded to the microsecond (half up: integer arithmetic, far cheaper per chunk
    than ``round``), at most MAX_SECONDS."""
    return _encoder.encode_lines(
        [
            _event(call_index, index, min((arrived - started + 500) // 1000 / 1e6, MAX_SECONDS), chunk)
            for index, (chunk, arrived) in enumerate(chunks, first_index)
        ]
    )


def _event(call_index: int, event_index: int, offset: float, chunk: bytes) -> EventLine:
    try:
        return EventLine(call_index, event_index, offset, chunk.decode())
    except UnicodeDecodeError:
        return EventLine(call_index, event_index, offset, base64=base64.b64encode(chunk).decode("ascii"))
