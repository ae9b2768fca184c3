"""Redaction of response bodies while they stream: over the logical text of a stream, a line at a time,
keeping each chunk's boundaries; over the text a model emits piece by piece across SSE deltas; and of
content-encoded bodies, searched decoded. No I/O."""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from ..format._bodies import content_codec, content_encodings, decode_stacked, encode_stacked
from ._deltas import Edit, changed_span, delta_channels, delta_edits, delta_texts, split_edited
from ._redaction import Redactor

_first = itemgetter(0)  # a (chunk, tag) pair's chunk

__all__ = [
    "BATCH",
    "BinaryBodyRedactor",
    "EncodedBodyRedactor",
    "HeldBodyRedactor",
    "StreamRedactor",
    "carries_deltas",
    "changed_span",
    "delta_channels",
    "delta_edits",
    "delta_texts",
    "redact_body",
]

# A secret shape is far shorter than this: a line cut for length keeps this much back, so that a secret
# straddling the cut is searched whole on the next pass.
OVERLAP = 16 * 1024
# Text kept before a found secret when cutting a long line: its context (``Bearer ``, ``"api_key": "``).
_CONTEXT = 256
_STEP = 2048  # how far back a cut moves when a secret crosses it
# The cassette's copy of a stream waits for its end so that secrets spread over SSE deltas are found;
# past this many bytes it is written anyway (deltas are then searched per held part).
MAX_HOLD = 8 * 1024 * 1024
# The recorder hands chunks to ``StreamRedactor.feed_many`` in batches of about this many bytes.
BATCH = 32 * 1024


# The media types of streams whose events carry a model's text piece by piece: SSE, and the JSON-lines
# streams (Ollama's application/x-ndjson).
_DELTA_STREAM_TYPES = ("event-stream", "ndjson", "jsonl", "json-seq", "stream+json")


def carries_deltas(content_type: str) -> bool:
    """Whether a response of this content-type is a stream whose text is reassembled from its events."""
    return any(kind in content_type for kind in _DELTA_STREAM_TYPES)


class StreamRedactor:
    """Redacts a response body over its logical text while it streams, keeping each chunk's boundaries.

    Text is redacted a block of complete lines at a time. A line longer than ``max_line`` is redacted up
    to a cut at least ``overlap`` characters before its end, and the rest waits for the next pass, so a
    secret at the cut is seen whole. After the lines, the text that SSE delta events carry piece by piece
    (see ``delta_channels``) is reassembled and searched; a secret found there is removed from every piece
    that carries part of it, each piece staying valid JSON. Chunks are held until ``finish`` (or until
    ``max_hold`` bytes are held, when they are released). ``feed_many`` returns the chunks (with the tag
    given for each) ready for the cassette, in order; ``finish`` returns the rest. Every chunk fed comes out
    exactly once. Where a replacement spans a boundary, the earlier chunk carries the whole placeholder.
    With ``deltas`` false (a body that isn't an event stream), the delta search is left out.

    The chunks given to ``feed_many`` (the recorder's batch of about ``BATCH`` bytes) are taken in together
    when no piece of their text, nor of the line pending before them, could be redacted (``_clear``): they
    pass as they came, in one step; otherwise they are taken in a chunk at a time. The cassette gets the
    same bytes either way (``tests/transports/test_chunk_batches.py``).
    """

    def __init__(
        self,
        redactor: Redactor,
        max_line: int = 65536,
        overlap: int = OVERLAP,
        max_hold: int = MAX_HOLD,
        *,
        deltas: bool = True,
    ) -> None:
        if overlap + _CONTEXT >= max_line:
            raise ValueError(f"overlap ({overlap}) must be well under max_line ({max_line})")
        self._redactor = redactor
        self._max_line = max_line
        self._overlap = overlap
        self._max_hold = max_hold
        self._deltas = deltas
        self._outputs: list[tuple[bytearray, Any, bool]] = []  # (redacted bytes, tag, sealed)
        self._line = bytearray()
        self._segments: list[tuple[int, int]] = []  # (output slot, byte count) of the bytes in _line
        self._held: list[tuple[bytes, Any]] = []
        self._held_size = 0

    def feed(self, chunk: bytes, tag: Any) -> list[tuple[bytes, Any]]:
        """``feed_many`` of one chunk."""
        return self.feed_many([(chunk, tag)])

    def feed_many(self, chunks: Sequence[tuple[bytes, Any]]) -> list[tuple[bytes, Any]]:
        """Take in ``chunks``; return the pieces ready for the cassette."""
        return self._take_in(list(chunks), last=False)

    def finish(self, last: Sequence[tuple[bytes, Any]] = ()) -> list[tuple[bytes, Any]]:
        """Take in ``last``, the body's last chunks; return what is left for the cassette."""
        ready = self._take_in(list(last), last=True)
        self._redact_line()
        for slot in range(len(self._outputs)):
            self._seal(slot)
        self._hold(self._release())
        return ready + self._release_held()

    def _take_in(self, batch: list[tuple[bytes, Any]], last: bool) -> list[tuple[bytes, Any]]:
        """Take in ``batch`` as it is when nothing in it (nor in the pending line) could be redacted, else a
        chunk at a time. With ``last``, the pending line ends with it."""
        if (batch or (last and self._line)) and self._clear(batch):
            self._pass_through(batch, last)
            return []
        ready = []
        for chunk, tag in batch:
            ready += self._feed_one(chunk, tag)
        return ready

    def _clear(self, batch: list[tuple[bytes, Any]]) -> bool:
        """Whether taking ``batch`` in one by one would redact nothing, cut no over-long line and release
        nothing held: no piece of the text of the pending line and the batch could be redacted, no line in
        it is longer than ``max_line``, and the held bytes stay within ``max_hold``."""
        text = b"".join([self._line, *map(_first, batch)])
        if self._held_size + len(text) > self._max_hold:
            return False
        if len(text) > self._max_line and max(map(len, text.split(b"\n"))) > self._max_line:
            return False
        return not self._redactor.could_redact(text)

    def _pass_through(self, batch: list[tuple[bytes, Any]], last: bool) -> None:
        """Take ``batch`` in as it is: what ``_feed_one`` of each chunk gives when nothing is redacted (and,
        with ``last``, what ``finish`` then gives for the pending line)."""
        ends = len(batch) if last else _after_last_line_break(batch)
        ready = self._end_line() + batch[: ends - 1] if ends else self._end_line() if last else []
        if ends:
            chunk, tag = batch[ends - 1]
            cut = len(chunk) if last else chunk.rfind(b"\n") + 1
            if cut == len(chunk):
                ready.append((chunk, tag))
            else:
                self._outputs.append((bytearray(chunk[:cut]), tag, False))
                self._take(len(self._outputs) - 1, chunk[cut:])
        for chunk, tag in batch[ends:]:  # chunks with no line break: pending, or sealed when empty
            self._outputs.append((bytearray(), tag, not chunk))
            if chunk:
                self._take(len(self._outputs) - 1, chunk)
        self._hold(ready + self._release())

    def _end_line(self) -> list[tuple[bytes, Any]]:
        """The pending line, as it is, to its chunks, all of them sealed; what is ready."""
        if self._segments:
            line = bytes(self._line)
            self._emit(line, line, self._segments)
            for slot, _ in self._segments:
                self._seal(slot)
            self._line, self._segments = bytearray(), []
        return self._release()

    def _feed_one(self, chunk: bytes, tag: Any) -> list[tuple[bytes, Any]]:
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
                self._redact_long_line()
        if not self._segments or self._segments[-1][0] != slot:
            self._seal(slot)
        self._hold(self._release())
        if self._held_size > self._max_hold:
            return self._release_held()
        return []

    def _hold(self, ready: list[tuple[bytes, Any]]) -> None:
        self._held += ready
        self._held_size += sum(map(len, map(_first, ready)))

    def _release_held(self) -> list[tuple[bytes, Any]]:
        held, self._held, self._held_size = self._held, [], 0
        if not held:
            return held
        body = b"".join(map(_first, held))
        edits = delta_edits(body, self._redactor) if self._deltas else self._across_lines(body, len(held))
        if not edits:
            return held
        pieces = split_edited(body, edits, [len(chunk) for chunk, _ in held])
        return [(piece, tag) for piece, (_, tag) in zip(pieces, held, strict=True)]

    def _across_lines(self, body: bytes, reads: int) -> list[Edit]:
        """The edit redacting, as a whole, a body of several lines that came in more than one read: a
        pretty-printed JSON value on a line after its key's, which the line-by-line pass saw apart."""
        if reads < 2 or b"\n" not in body.rstrip(b"\n"):
            return []
        text = body.decode("utf-8", "surrogateescape")
        if not self._redactor.could_redact(text):
            return []
        redacted = self._redactor.redact_text(text, response=True).encode("utf-8", "surrogateescape")
        if redacted == body:
            return []
        start, end = changed_span(body, redacted)
        return [(start, end, redacted[start : end + len(redacted) - len(body)])]

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
        """Redact all of the pending text and hand it to its chunks."""
        if not self._segments:
            return
        original = bytes(self._line)
        text = original.decode("utf-8", "surrogateescape")
        redacted_text = self._redactor.redact_text(text, response=True)
        redacted = original if redacted_text == text else redacted_text.encode("utf-8", "surrogateescape")
        self._emit(original, redacted, self._segments)
        for slot, _ in self._segments[:-1]:
            self._seal(slot)
        self._line = bytearray()
        self._segments = []

    def _redact_long_line(self) -> None:
        """Redact the start of an over-long line, up to a cut no secret crosses, keeping the rest pending."""
        original = bytes(self._line)
        text = original.decode("utf-8", "surrogateescape")
        found = self._cut(text)
        if found is None:  # a secret-shaped run longer than the overlap: the line is redacted as it stands
            self._redact_line()
            return
        head = text[: found[0]].encode("utf-8", "surrogateescape")
        emitted: list[tuple[int, int]] = []
        kept: list[tuple[int, int]] = []
        position = 0
        for slot, count in self._segments:
            inside = max(0, min(count, len(head) - position))
            emitted += [(slot, inside)] if inside else []
            kept += [(slot, count - inside)] if count - inside else []
            position += count
        self._emit(head, found[1].encode("utf-8", "surrogateescape"), emitted)
        for slot, _ in emitted:
            if not kept or kept[0][0] != slot:
                self._seal(slot)
        self._line = bytearray(original[len(head) :])
        self._segments = kept

    def _cut(self, text: str) -> tuple[int, str] | None:
        """Where to cut ``text`` and its head redacted: a cut no secret crosses (the two sides redacted
        apart give what the whole gave), or None."""
        redacted = self._redactor.redact_text(text, response=True)
        limit = len(text) - self._overlap
        if redacted == text:
            return limit, redacted[:limit]
        for cut in range(limit, max(_CONTEXT, limit - 8 * _STEP), -_STEP):
            head = self._redactor.redact_text(text[:cut], response=True)
            if head + self._redactor.redact_text(text[cut:], response=True) == redacted:
                return cut, head
        return None

    def _emit(self, original: bytes, redacted: bytes, segments: list[tuple[int, int]]) -> None:
        if redacted is original or redacted == original:
            start = 0
            for slot, count in segments:
                self._outputs[slot][0].extend(original[start : start + count])
                start += count
            return
        prefix, end = changed_span(original, redacted)
        edit = (prefix, end, redacted[prefix : end + len(redacted) - len(original)])
        pieces = split_edited(original, [edit], [count for _, count in segments])
        for (slot, _), piece in zip(segments, pieces, strict=True):
            self._outputs[slot][0].extend(piece)

    def _release(self) -> list[tuple[bytes, Any]]:
        if not self._outputs:
            return []
        released = 0
        while released < len(self._outputs) and self._outputs[released][2]:
            released += 1
        if not released:
            return []
        ready = [(bytes(output), tag) for output, tag, _ in self._outputs[:released]]
        del self._outputs[:released]
        self._segments = [(slot - released, count) for slot, count in self._segments]
        return ready


def _after_last_line_break(batch: list[tuple[bytes, Any]]) -> int:
    """1 + the index of the last chunk of ``batch`` holding a line break (0: none does)."""
    for index in range(len(batch) - 1, -1, -1):
        if b"\n" in batch[index][0]:
            return index + 1
    return 0


def redact_body(body: bytes, redactor: Redactor) -> bytes:
    """A whole (decoded) response body redacted as a stream of it would be: by line, then by delta."""
    stream = StreamRedactor(redactor, max_hold=len(body) + 1)
    return b"".join(chunk for chunk, _ in [*stream.feed(body, None), *stream.finish()])


class HeldBodyRedactor:
    """Redacts a response body that can only be searched whole: its chunks are held back from the cassette
    (never from the caller) until the call ends, then ``redacted`` is asked for the whole body. With no
    secret in it they are written as they came; otherwise the redacted body is written as one chunk. A body
    over ``max_buffer`` bytes is written as it came. ``held`` false: nothing is held (the body can't be
    searched)."""

    def __init__(self, redactor: Redactor, max_buffer: int = 64 * 1024 * 1024, *, held: bool = True) -> None:
        self._redactor = redactor
        self._max_buffer = max_buffer
        self._held: list[tuple[bytes, Any]] | None = [] if held else None
        self._size = 0

    def redacted(self, body: bytes) -> bytes | None:
        """The whole body redacted (the same bytes when nothing was found), or None to keep it as it came."""
        raise NotImplementedError

    def feed(self, chunk: bytes, tag: Any) -> list[tuple[bytes, Any]]:
        if self._held is None:
            return [(chunk, tag)]
        self._held.append((chunk, tag))
        self._size += len(chunk)
        if self._size > self._max_buffer:
            held, self._held = self._held, None
            return held
        return []

    def feed_many(self, chunks: Sequence[tuple[bytes, Any]]) -> list[tuple[bytes, Any]]:
        """``feed`` of each of ``chunks`` in turn, their pieces ready for the cassette returned together."""
        return [ready for chunk, tag in chunks for ready in self.feed(chunk, tag)]

    def finish(self, last: Sequence[tuple[bytes, Any]] = ()) -> list[tuple[bytes, Any]]:
        """What is left for the cassette, after ``feed_many(last)``."""
        ready = self.feed_many(last)
        held, self._held = self._held, None
        if not held:
            return ready
        body = b"".join(chunk for chunk, _ in held)
        redacted = self.redacted(body)
        if redacted is None or redacted == body:
            return ready + held
        return ready + [(redacted, held[0][1])]


class EncodedBodyRedactor(HeldBodyRedactor):
    """A content-encoded body (gzip, deflate, br, zstd, stacked in any order), searched decoded: redacted as
    a stream of it would be, then encoded again with every encoding, in order. One in an encoding this
    Python can't decode, or that doesn't decode, is written as it came (replay fails the same way); one that
    decodes past ``MAX_DECODED_BYTES`` can't be searched: ``finish`` raises DecodedTooLarge, and the
    recorder writes nothing of it."""

    def __init__(self, redactor: Redactor, encoding: str, max_buffer: int = 64 * 1024 * 1024) -> None:
        encodings = content_encodings([("content-encoding", encoding)])
        decodable = all(content_codec(encoding) is not None for encoding in encodings)
        super().__init__(redactor, max_buffer, held=decodable)
        self._encodings = encodings

    def redacted(self, body: bytes) -> bytes | None:
        decoded = decode_stacked(body, self._encodings)
        if decoded is None:
            return None
        redacted = redact_body(decoded, self._redactor)
        return None if redacted == decoded else encode_stacked(redacted, self._encodings)


class BinaryBodyRedactor(HeldBodyRedactor):
    """A binary body that is not media (an ``application/octet-stream`` file download, a PDF, an archive),
    searched as bytes as a binary request body is (``Redactor.redact_binary``: the catalogue's credential
    shapes and the values learned); every other byte is kept."""

    def redacted(self, body: bytes) -> bytes | None:
        return self._redactor.redact_binary(body)
