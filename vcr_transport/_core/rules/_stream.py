"""Redaction of streamed response bodies (by line, keeping chunk boundaries, then over the text a model emits
piece by piece) and of bodies searched whole (content-encoded, binary)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from itertools import accumulate
from operator import itemgetter
from typing import Any

from ..format._bodies import content_codec, content_encodings, decode_stacked, encode_stacked
from ._deltas import Edit, delta_channels, delta_edits, delta_texts, edit_of, split_edited
from ._redaction import Redactor

__all__ = [
    "BATCH",
    "BinaryBodyRedactor",
    "EncodedBodyRedactor",
    "HeldBodyRedactor",
    "StreamRedactor",
    "carries_deltas",
    "delta_channels",
    "delta_texts",
    "redact_body",
]

Chunks = list[tuple[bytes, Any]]  # (chunk, tag) pairs
_first = itemgetter(0)
OVERLAP = 16 * 1024  # kept back at a long line's cut: far longer than a secret
_CONTEXT = 256  # kept before a secret at a long line's cut (``Bearer ``, ``"api_key": "``)
_STEP = 2048  # how far back a cut moves when a secret crosses it
MAX_HOLD = 8 * 1024 * 1024  # a stream held past this is written (its deltas searched per held part)
BATCH = 32 * 1024  # the recorder's batches for ``StreamRedactor.feed_many``


def carries_deltas(content_type: str) -> bool:
    """Whether this content-type's text is reassembled from its events (SSE, JSON lines)."""
    return any(kind in content_type for kind in ("event-stream", "ndjson", "jsonl", "json-seq", "stream+json"))


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


class StreamRedactor:
    """Redacts a response body as it streams, keeping chunk boundaries: by line (a line past ``max_line`` is cut
    ``overlap`` before its end, so a secret at the cut is seen whole), then over the text delta events carry piece
    by piece (``deltas`` false: over a body of several lines). Chunks are held until ``finish`` (or past
    ``max_hold`` bytes) and come out once each, in order, with their tags; a replacement across a boundary goes
    whole to the earlier chunk."""

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
        self._redact = partial(redactor.redact_text, response=True)
        self._max_line = max_line
        self._overlap = overlap
        self._max_hold = max_hold
        self._deltas = deltas
        self._outputs: list[tuple[bytearray, Any]] = []  # chunks redacted; complete before the pending line's
        self._line = bytearray()
        self._segments: list[tuple[int, int]] = []  # (output slot, byte count) of the bytes in _line
        self._held: Chunks = []
        self._held_size = 0
        # The pending line began a text that may redact: a batch after it takes the chunk-by-chunk way at once
        # (searching the whole pending line again at each small chunk is quadratic).
        self._line_may_redact = False

    def feed(self, chunk: bytes, tag: Any) -> Chunks:
        return self.feed_many([(chunk, tag)])

    def feed_many(self, chunks: Sequence[tuple[bytes, Any]]) -> Chunks:
        return self._take_in(list(chunks), last=False)

    def finish(self, last: Sequence[tuple[bytes, Any]] = ()) -> Chunks:
        ready = self._take_in(list(last), last=True)
        self._redact_line()
        self._release()
        return ready + self._release_held()

    def _take_in(self, batch: Chunks, last: bool) -> Chunks:
        """With ``last``, the pending line ends with ``batch``. A batch with nothing to redact passes whole."""
        if (batch or (last and self._line)) and self._clear(batch):
            self._pass_through(batch, last)
            return []
        return [ready for chunk, tag in batch for ready in self._feed_one(chunk, tag)]

    def _clear(self, batch: Chunks) -> bool:
        """Whether ``batch`` taken chunk by chunk would redact nothing, cut no line and release nothing."""
        if self._line_may_redact:
            return False
        text = b"".join([self._line, *map(_first, batch)])
        if self._held_size + len(text) > self._max_hold or (
            len(text) > self._max_line and max(map(len, text.split(b"\n"))) > self._max_line
        ):
            return False
        self._line_may_redact = self._redactor.could_redact(text)
        return not self._line_may_redact

    def _pass_through(self, batch: Chunks, last: bool) -> None:
        """``_feed_one`` of each chunk (and with ``last`` ``finish``) when nothing is redacted."""
        ends = len(batch) if last else _lines_end(batch)
        if ends or last:  # the pending line ends in this batch
            self._redact_line(redact=False)
            self._release()
            self._hold(batch[: max(ends - 1, 0)])
        if ends:
            chunk, tag = batch[ends - 1]
            cut = len(chunk) if last else chunk.rfind(b"\n") + 1
            if cut == len(chunk):
                self._hold([(chunk, tag)])
            else:
                self._outputs.append((bytearray(chunk[:cut]), tag))
                self._take(chunk[cut:])
        for chunk, tag in batch[ends:]:  # chunks with no line break: pending
            self._outputs.append((bytearray(), tag))
            if chunk:
                self._take(chunk)
        self._release()

    def _feed_one(self, chunk: bytes, tag: Any) -> Chunks:
        self._outputs.append((bytearray(), tag))
        cut = chunk.rfind(b"\n") + 1
        if cut:
            self._take(chunk[:cut])
            self._redact_line()
        if cut < len(chunk):
            self._take(chunk[cut:])
            if len(self._line) > self._max_line:
                self._redact_long_line()
        self._release()
        return self._release_held() if self._held_size > self._max_hold else []

    def _take(self, data: bytes) -> None:
        """``data`` of the last chunk to the pending line."""
        self._line += data
        self._segments.append((len(self._outputs) - 1, len(data)))

    def _redact_line(self, redact: bool = True) -> None:
        """The pending line to its chunks (as it is when ``redact`` is false)."""
        if not self._segments:
            return
        line = redacted = bytes(self._line)
        if redact:
            text = _text(line)
            redacted_text = self._redact(text)
            redacted = line if redacted_text == text else _bytes(redacted_text)
        self._emit(line, redacted, self._segments)
        self._line, self._segments, self._line_may_redact = bytearray(), [], False

    def _redact_long_line(self) -> None:
        """Redact the start of an over-long line, up to a cut no secret crosses, keeping the rest pending."""
        text = _text(bytes(self._line))
        found = self._cut(text)
        if found is None:  # a secret-shaped run longer than the overlap: the line is redacted as it stands
            self._redact_line()
            return
        head = _bytes(text[: found[0]])
        size = len(head)
        starts = accumulate((count for _, count in self._segments), initial=0)
        spans = [(slot, start, start + count) for (slot, count), start in zip(self._segments, starts, strict=False)]
        emitted = [(slot, min(end, size) - start) for slot, start, end in spans if start < size]
        self._emit(head, _bytes(found[1]), emitted)
        del self._line[:size]
        self._segments = [(slot, end - max(start, size)) for slot, start, end in spans if end > size]
        self._line_may_redact = False

    def _cut(self, text: str) -> tuple[int, str] | None:
        """Where to cut ``text`` so its two sides redacted apart give what the whole gave, and its head redacted;
        None: nowhere."""
        redacted = self._redact(text)
        limit = len(text) - self._overlap
        if redacted == text:
            return limit, redacted[:limit]
        for cut in range(limit, max(_CONTEXT, limit - 8 * _STEP), -_STEP):
            head = self._redact(text[:cut])
            if head + self._redact(text[cut:]) == redacted:
                return cut, head
        return None

    def _emit(self, original: bytes, redacted: bytes, segments: list[tuple[int, int]]) -> None:
        if redacted == original:
            start = 0
            for slot, count in segments:
                self._outputs[slot][0].extend(original[start : start + count])
                start += count
            return
        pieces = split_edited(original, [edit_of(original, redacted)], [count for _, count in segments])
        for (slot, _), piece in zip(segments, pieces, strict=True):
            self._outputs[slot][0].extend(piece)

    def _release(self) -> None:
        """The chunks before the pending line's first, complete, to the held ones."""
        released = self._segments[0][0] if self._segments else len(self._outputs)
        if released:
            self._hold([(bytes(output), tag) for output, tag in self._outputs[:released]])
            del self._outputs[:released]
            self._segments = [(slot - released, count) for slot, count in self._segments]

    def _hold(self, ready: Chunks) -> None:
        self._held += ready
        self._held_size += sum(map(len, map(_first, ready)))

    def _release_held(self) -> Chunks:
        held, self._held, self._held_size = self._held, [], 0
        body = b"".join(map(_first, held))
        edits = delta_edits(body, self._redactor) if self._deltas else self._across_lines(body, len(held))
        if not edits:
            return held
        pieces = split_edited(body, edits, [len(chunk) for chunk, _ in held])
        return [(piece, tag) for piece, (_, tag) in zip(pieces, held, strict=True)]

    def _across_lines(self, body: bytes, reads: int) -> list[Edit]:
        """The edit redacting a body of several lines read in several chunks as a whole (a pretty-printed JSON
        value on the line after its key's)."""
        if reads < 2 or b"\n" not in body.rstrip(b"\n"):
            return []
        text = _text(body)
        if not self._redactor.could_redact(text):
            return []
        redacted = _bytes(self._redact(text))
        return [] if redacted == body else [edit_of(body, redacted)]


def _lines_end(batch: Chunks) -> int:
    """1 + the index of the last chunk holding a line break (0: none does)."""
    return next((len(batch) - index for index, (chunk, _) in enumerate(reversed(batch)) if b"\n" in chunk), 0)


def redact_body(body: bytes, redactor: Redactor) -> bytes:
    """A whole (decoded) response body redacted as a stream of it would be."""
    stream = StreamRedactor(redactor, max_hold=len(body) + 1)
    return b"".join(map(_first, stream.feed(body, None) + stream.finish()))


class HeldBodyRedactor:
    """A response body searched whole: its chunks are held from the cassette (never from the caller) until the
    call ends, then written as they came or, when ``redacted`` changed it, as one chunk. Past ``max_buffer`` bytes
    or with ``held`` false, written as it came."""

    def __init__(self, redactor: Redactor, max_buffer: int = 64 * 1024 * 1024, *, held: bool = True) -> None:
        self._redactor = redactor
        self._max_buffer = max_buffer
        self._held: Chunks | None = [] if held else None
        self._size = 0

    def redacted(self, body: bytes) -> bytes | None:
        """The whole body redacted (the same bytes when nothing was found), or None to keep it as it came."""
        raise NotImplementedError

    def feed(self, chunk: bytes, tag: Any) -> Chunks:
        if self._held is None:
            return [(chunk, tag)]
        self._held.append((chunk, tag))
        self._size += len(chunk)
        if self._size > self._max_buffer:
            held, self._held = self._held, None
            return held
        return []

    def feed_many(self, chunks: Sequence[tuple[bytes, Any]]) -> Chunks:
        return [ready for chunk, tag in chunks for ready in self.feed(chunk, tag)]

    def finish(self, last: Sequence[tuple[bytes, Any]] = ()) -> Chunks:
        ready = self.feed_many(last)
        held, self._held = self._held, None
        if not held:
            return ready
        body = b"".join(map(_first, held))
        redacted = self.redacted(body)
        return ready + (held if redacted is None or redacted == body else [(redacted, held[0][1])])


class EncodedBodyRedactor(HeldBodyRedactor):
    """A content-encoded body, redacted decoded (as ``redact_body``) and encoded again; searched as bytes
    (``redact_binary``) if it doesn't decode. ``finish`` raises DecodedTooLarge past ``MAX_DECODED_BYTES``."""

    def __init__(self, redactor: Redactor, encoding: str, max_buffer: int = 64 * 1024 * 1024) -> None:
        encodings = content_encodings([("content-encoding", encoding)])
        super().__init__(redactor, max_buffer, held=all(content_codec(name) is not None for name in encodings))
        self._encodings = encodings

    def redacted(self, body: bytes) -> bytes | None:
        decoded = decode_stacked(body, self._encodings)
        if decoded is None:  # not what its header says (a plain body under ``gzip``): searched as bytes
            return self._redactor.redact_binary(body)
        redacted = redact_body(decoded, self._redactor)
        return None if redacted == decoded else encode_stacked(redacted, self._encodings)


class BinaryBodyRedactor(HeldBodyRedactor):
    """A binary body that is not media (a download, a PDF, an archive), searched as bytes."""

    def redacted(self, body: bytes) -> bytes | None:
        return self._redactor.redact_binary(body)
