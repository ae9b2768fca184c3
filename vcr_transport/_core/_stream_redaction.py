"""Redaction of response bodies while they stream: over the logical text of a stream, a line at a time,
keeping each chunk's boundaries; and of content-encoded bodies, searched decoded. No I/O."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._bodies import content_codec
from ._redaction import Redactor

__all__ = ["EncodedBodyRedactor", "StreamRedactor", "changed_span"]


class StreamRedactor:
    """Redacts a response body over its logical text while it streams, keeping each chunk's boundaries.

    Secrets don't span lines, so text is redacted a block of complete lines at a time; a line longer than
    ``max_line`` is redacted as it stands. ``feed`` returns the chunks (with the tag given for each) whose
    bytes are all redacted, in order; ``finish`` returns the rest. Every chunk fed comes out exactly once.
    Where a replacement spans a boundary, the earlier chunk carries the whole placeholder.
    """

    def __init__(self, redactor: Redactor, max_line: int = 65536) -> None:
        self._redactor = redactor
        self._max_line = max_line
        self._outputs: list[tuple[bytearray, Any, bool]] = []  # (redacted bytes, tag, sealed)
        self._line = bytearray()
        self._segments: list[tuple[int, int]] = []  # (output slot, byte count) of the bytes in _line

    def feed(self, chunk: bytes, tag: Any) -> list[tuple[bytes, Any]]:
        slot = len(self._outputs)
        self._outputs.append((bytearray(), tag, False))
        cut = chunk.rfind(b"\n") + 1
        if cut:
            self._take(slot, chunk[:cut])
            self._redact_line()
        rest = chunk[cut:]
        if rest:
            self._take(slot, rest)
            if len(self._line) > self._max_line:
                self._redact_line()
        if not self._segments or self._segments[-1][0] != slot:
            self._seal(slot)
        return self._release()

    def finish(self) -> list[tuple[bytes, Any]]:
        self._redact_line()
        for slot in range(len(self._outputs)):
            self._seal(slot)
        return self._release()

    def _take(self, slot: int, data: bytes) -> None:
        self._line += data
        if self._segments and self._segments[-1][0] == slot:
            self._segments[-1] = (slot, self._segments[-1][1] + len(data))
        else:
            self._segments.append((slot, len(data)))

    def _seal(self, slot: int) -> None:
        output, tag, _ = self._outputs[slot]
        self._outputs[slot] = (output, tag, True)

    def _redact_line(self) -> None:
        if not self._segments:
            return
        original = bytes(self._line)
        text = original.decode("utf-8", "surrogateescape")
        redacted_text = self._redactor.redact_text(text, response=True)
        redacted = original if redacted_text == text else redacted_text.encode("utf-8", "surrogateescape")
        if redacted is original:
            start = 0
            for slot, count in self._segments:
                self._outputs[slot][0].extend(original[start : start + count])
                start += count
        else:
            for slot, start, end in _moved_boundaries(original, redacted, self._segments):
                self._outputs[slot][0].extend(redacted[start:end])
        for slot, _ in self._segments[:-1]:
            self._seal(slot)
        self._line = bytearray()
        self._segments = []

    def _release(self) -> list[tuple[bytes, Any]]:
        released = 0
        while released < len(self._outputs) and self._outputs[released][2]:
            released += 1
        ready = [(bytes(output), tag) for output, tag, _ in self._outputs[:released]]
        del self._outputs[:released]
        self._segments = [(slot - released, count) for slot, count in self._segments]
        return ready


def changed_span(original: Sequence[Any], redacted: Sequence[Any]) -> tuple[int, int]:
    """(start, end) of the part of ``original`` that differs from ``redacted``: what lies outside it is
    the longest common prefix and suffix."""
    limit = min(len(original), len(redacted))
    prefix = 0
    while prefix < limit and original[prefix] == redacted[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and original[-1 - suffix] == redacted[-1 - suffix]:
        suffix += 1
    return prefix, len(original) - suffix


def _moved_boundaries(original: bytes, redacted: bytes, segments: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Map each segment's span of ``original`` onto ``redacted``: unchanged edges keep their boundaries,
    boundaries inside the changed middle move to its end."""
    shift = len(redacted) - len(original)
    prefix, changed_end = changed_span(original, redacted)

    def moved(position: int) -> int:
        if position <= prefix:
            return position
        if position >= changed_end:
            return position + shift
        return changed_end + shift

    spans = []
    start = 0
    for slot, count in segments:
        end = start + count
        spans.append((slot, moved(start), moved(end)))
        start = end
    return spans


class EncodedBodyRedactor:
    """Redacts a content-encoded (gzip, deflate, br, zstd) body, which can only be searched decoded.

    The chunks are held back from the cassette (never from the caller) until the call ends. With no secret
    in the decoded body they are written as they came; otherwise the redacted body is encoded again and
    written as one chunk. A body over ``max_buffer`` bytes, or in an encoding this Python can't decode, is
    written as it came.
    """

    def __init__(self, redactor: Redactor, encoding: str, max_buffer: int = 64 * 1024 * 1024) -> None:
        self._redactor = redactor
        self._codec = content_codec(encoding)
        self._max_buffer = max_buffer
        self._held: list[tuple[bytes, Any]] | None = [] if self._codec else None
        self._size = 0

    def feed(self, chunk: bytes, tag: Any) -> list[tuple[bytes, Any]]:
        if self._held is None:
            return [(chunk, tag)]
        self._held.append((chunk, tag))
        self._size += len(chunk)
        if self._size > self._max_buffer:
            held, self._held = self._held, None
            return held
        return []

    def finish(self) -> list[tuple[bytes, Any]]:
        held, self._held = self._held, None
        if not held or self._codec is None:
            return held or []
        decode, encode = self._codec
        try:
            body = decode(b"".join(chunk for chunk, _ in held))
        except Exception:  # a body that doesn't decode is kept as it came; replay fails the same way
            return held
        text = body.decode("utf-8", "surrogateescape")
        redacted = self._redactor.redact_text(text, response=True)
        if redacted == text:
            return held
        return [(encode(redacted.encode("utf-8", "surrogateescape")), held[0][1])]
