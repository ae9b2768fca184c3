"""Redaction of response bodies while they stream: over the logical text of a stream, a line at a time,
keeping each chunk's boundaries; over the text a model emits piece by piece across SSE deltas; and of
content-encoded bodies, searched decoded. No I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterator, Sequence
from operator import itemgetter
from typing import Any

import msgspec

from ..format._bodies import content_codec, content_encodings, decode_stacked, encode_stacked
from ..format._format import decode_json
from ..format._sse import Event, data_of, decode_events
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
        ready: list[tuple[bytes, Any]] = []
        if ends or last:  # the pending line ends in the batch: it goes to its chunks, all of them then sealed
            if self._segments:
                line = bytes(self._line)
                self._emit(line, line, self._segments)
                for slot, _ in self._segments:
                    self._seal(slot)
                self._line, self._segments = bytearray(), []
            ready = self._release() + batch[: ends - 1] if ends else self._release()
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
        pieces = _split_edited(body, edits, [len(chunk) for chunk, _ in held])
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
        redacted = self._redactor.redact_text(text, response=True)
        limit = len(text) - self._overlap
        cut, head_redacted_text = limit, redacted[:limit]
        if redacted != text:
            # A cut no secret crosses: the two sides redacted apart give what the whole gave.
            for cut in range(limit, max(_CONTEXT, limit - 8 * _STEP), -_STEP):
                head_redacted_text = self._redactor.redact_text(text[:cut], response=True)
                if head_redacted_text + self._redactor.redact_text(text[cut:], response=True) == redacted:
                    break
            else:  # a secret-shaped run longer than the overlap: the line is redacted as it stands
                self._redact_line()
                return
        head = text[:cut].encode("utf-8", "surrogateescape")
        head_redacted = head_redacted_text.encode("utf-8", "surrogateescape")
        emitted: list[tuple[int, int]] = []
        kept: list[tuple[int, int]] = []
        position = 0
        for slot, count in self._segments:
            inside = max(0, min(count, len(head) - position))
            if inside:
                emitted.append((slot, inside))
            if count - inside:
                kept.append((slot, count - inside))
            position += count
        self._emit(head, head_redacted, emitted)
        for slot, _ in emitted:
            if not kept or kept[0][0] != slot:
                self._seal(slot)
        self._line = bytearray(original[len(head) :])
        self._segments = kept

    def _emit(self, original: bytes, redacted: bytes, segments: list[tuple[int, int]]) -> None:
        if redacted is original or redacted == original:
            start = 0
            for slot, count in segments:
                self._outputs[slot][0].extend(original[start : start + count])
                start += count
            return
        prefix, end = changed_span(original, redacted)
        edit = (prefix, end, redacted[prefix : end + len(redacted) - len(original)])
        pieces = _split_edited(original, [edit], [count for _, count in segments])
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


Edit = tuple[int, int, bytes]  # replace original[start:end] with these bytes


def _split_edited(original: bytes, edits: Sequence[Edit], sizes: Sequence[int]) -> list[bytes]:
    """Apply sorted, non-overlapping ``edits`` to ``original`` cut in pieces of ``sizes``; return the
    edited pieces. Boundaries outside edits keep their place; a boundary inside an edit moves to its end,
    so the earlier piece carries the whole replacement."""
    edited = bytearray()
    position = 0
    new_starts: list[tuple[int, int, int]] = []  # (start, end, end in edited text) per edit
    for start, end, replacement in edits:
        edited += original[position:start]
        edited += replacement
        new_starts.append((start, end, len(edited)))
        position = end
    edited += original[position:]

    def moved(boundary: int) -> int:
        shift = 0
        for start, end, new_end in new_starts:
            if boundary <= start:
                break
            if boundary < end:
                return new_end
            shift = new_end - end
        return boundary + shift

    pieces, start = [], 0
    for size in sizes:
        pieces.append((moved(start), moved(start + size)))
        start += size
    return [bytes(edited[a:b]) for a, b in pieces]


# --- text carried by SSE delta events -----------------------------------------------------------------

_STRING_REST = re.compile(rb'(?:[^"\\]|\\.)*"')
Piece = tuple[int, int, str]  # the raw span of a JSON string's content in the body, and its value
Values = Iterator[tuple[Hashable, str, str]]  # (channel, JSON key, value) of each piece of text


def _delta_values(event: Any) -> Values:
    """(channel, JSON key, value) of each piece of text an SSE event (or an NDJSON line) carries, per vendor
    protocol, in the order the keys appear in the event."""
    if not isinstance(event, dict):
        return
    kind = event.get("type")
    if isinstance(kind, str):
        yield from _typed_values(event, kind)
        return
    choices, candidates, message = event.get("choices"), event.get("candidates"), event.get("message")
    if isinstance(choices, list):
        yield from _chat_values(choices)
    if isinstance(candidates, list):
        yield from _gemini_values(candidates)
    if "done" in event:  # Ollama's NDJSON: /api/chat's message, /api/generate's response
        for part, key in ((message, "content"), (message, "thinking"), (event, "response"), (event, "thinking")):
            if isinstance(part, dict) and isinstance(part.get(key), str):
                yield ("ollama", part is message, key), key, part[key]


def _typed_values(event: dict[str, Any], kind: str) -> Values:
    """Anthropic's ``content_block_delta`` (text, ``input_json_delta``'s ``partial_json``, thinking), the
    Responses API's ``*.delta`` events and Cohere v2's ``content-delta`` and ``tool-call-delta``."""
    delta = event.get("delta")
    if kind == "content_block_delta" and isinstance(delta, dict):
        for key in ("text", "partial_json", "thinking"):
            if isinstance(delta.get(key), str):
                yield ("anthropic", event.get("index"), key), key, delta[key]
    elif kind.endswith(".delta") and isinstance(delta, str):
        channel = ("responses", kind, event.get("item_id"), event.get("output_index"), event.get("content_index"))
        yield channel, "delta", delta
    elif kind in ("content-delta", "tool-call-delta") and isinstance(delta, dict):
        message = delta.get("message")
        message = message if isinstance(message, dict) else {}
        content, calls = message.get("content"), message.get("tool_calls")
        if isinstance(content, dict):
            for key in ("text", "thinking"):
                if isinstance(content.get(key), str):
                    yield ("cohere", event.get("index"), key), key, content[key]
        function = calls.get("function") if isinstance(calls, dict) else None
        if isinstance(function, dict) and isinstance(function.get("arguments"), str):
            yield ("cohere", event.get("index"), "tool"), "arguments", function["arguments"]


def _chat_values(choices: list[Any]) -> Values:
    """openai chat completions: each choice's ``delta.content``, ``delta.reasoning_content`` (DeepSeek, vLLM)
    or ``delta.reasoning`` (OpenRouter) and tool calls' ``function.arguments``; legacy completions'
    ``choices[].text``."""
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            continue
        index = choice.get("index", position)
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            if isinstance(choice.get("text"), str):
                yield ("completion", index), "text", choice["text"]
            continue
        for key in ("reasoning_content", "reasoning", "content"):
            if isinstance(delta.get(key), str):
                yield ("chat", index) if key == "content" else ("chat", index, key), key, delta[key]
        for call_position, call in enumerate(delta.get("tool_calls") or ()):
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                yield ("chat", index, "tool", call.get("index", call_position)), "arguments", function["arguments"]


def _gemini_values(candidates: list[Any]) -> Values:
    """Gemini: ``candidates[].content.parts[].text``, thoughts apart."""
    for position, candidate in enumerate(candidates):
        content = candidate.get("content") if isinstance(candidate, dict) else None
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield ("gemini", candidate.get("index", position), bool(part.get("thought"))), "text", part["text"]


def _may_carry_deltas(data: bytes) -> bool:
    return b'"delta"' in data or b'"candidates"' in data or b'"text"' in data or b'"done"' in data


def _json_events(body: bytes) -> Iterator[tuple[bytes, int, int]]:
    """(data, where its values start, where they end in ``body``) of each SSE event, or, in a body with no
    SSE event (NDJSON: Ollama's ``application/x-ndjson``), of each line."""
    found = False
    for event in decode_events(body):
        if event.dispatched:
            found = True
            yield (event.data, *_data_span(body, event))
    if found:
        return
    start = 0
    for line in body.splitlines(keepends=True):
        yield line.strip(), start, start + len(line)
        start += len(line)


def _event_data(body: bytes) -> list[bytes]:
    """The data of each SSE event of ``body`` (``[DONE]`` left out), or else each non-blank line of it."""
    events = data_of(body)
    if events and events[-1] == b"[DONE]":
        events.pop()
    if events:
        return events
    return [line for line in (part.strip() for part in body.splitlines()) if line.startswith(b"{")]


def delta_channels(body: bytes) -> dict[Hashable, list[Piece]]:
    """The text an SSE body's delta events (or an NDJSON body's lines) carry piece by piece, per channel
    (one openai choice, its reasoning or one tool call, one anthropic content block, one Responses API
    item, one Gemini candidate, one Cohere content, Ollama's message), with the raw span of each piece in
    ``body``. Events that aren't JSON, or carry no delta, are skipped."""
    channels: dict[Hashable, list[Piece]] = {}
    for data, search, limit in _json_events(body):
        if not _may_carry_deltas(data):
            continue
        try:
            parsed = decode_json(data)
        except ValueError:
            continue
        for channel, key, value in _delta_values(parsed):
            span = _find_string(body, limit, search, key, value)
            if span is None:
                break  # a spelling we can't place: leave this event as it is
            channels.setdefault(channel, []).append((span[0], span[1], value))
            search = span[1]
    return channels


def _data_span(body: bytes, event: Event) -> tuple[int, int]:
    """Where the values of an event's ``data`` fields start and end in ``body``."""
    start = end = position = event.start
    for line in event.lines:
        position = body.find(line, position)  # only line ends lie between one line and the next
        if line.partition(b":")[0] == b"data":
            if start == event.start:
                start = position + 5
            end = position + len(line)
        position += len(line)
    return start, end


class _ChatDelta(msgspec.Struct, gc=False):
    content: str | None = None
    # A chunk with tool calls or reasoning text is left to the general reading.
    tool_calls: None = None
    reasoning_content: None = None
    reasoning: None = None


class _ChatChoice(msgspec.Struct, gc=False):
    delta: _ChatDelta | None = None
    index: int = 0
    text: None = None  # a legacy completion's text: the general reading


class _ChatChunk(msgspec.Struct, gc=False):
    """The fields of an openai chat chunk that say what text it carries; the others are skipped. A chunk
    of another protocol (a ``type`` or ``candidates`` that isn't null) doesn't decode."""

    choices: list[_ChatChoice] = []  # noqa: RUF012 (msgspec copies a default list)
    type: None = None
    candidates: None = None
    done: None = None  # Ollama's NDJSON


_CHAT_CHUNKS = msgspec.json.Decoder(list[_ChatChunk])


def delta_texts(body: bytes) -> dict[Hashable, list[str]]:
    """The text pieces per channel of an SSE (or NDJSON) body's delta events: the values of
    ``delta_channels``, without their spans. A stream of openai chat chunks of text alone (what most streams
    are) is read in one pass by msgspec, into the few fields that matter; any other in the general way."""
    events = _event_data(body)
    texts = _chat_texts(events)
    if texts is not None:
        return texts
    texts = {}
    for event in _parsed([data for data in events if _may_carry_deltas(data)]):
        for channel, _, value in _delta_values(event):
            texts.setdefault(channel, []).append(value)
    return texts


def _chat_texts(events: list[bytes]) -> dict[Hashable, list[str]] | None:
    """``delta_texts`` when every event is an openai chat chunk with at most one choice and no tool call;
    None for any other stream (or for data holding more than one value: more values than events). msgspec
    reads what json reads the same; what it refuses (an escaped lone surrogate, NaN) is read by json."""
    if len(events) < 2:
        data = b"[" + b"".join(events) + b"]"
    else:  # a JSON array of the events, in one copy of their text
        data = b",".join([b"[" + events[0], *events[1:-1], events[-1] + b"]"])
    try:
        chunks = _CHAT_CHUNKS.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if len(chunks) != len(events):
        return None
    texts: dict[int, list[str]] = {}
    for chunk in chunks:
        if len(chunk.choices) > 1:
            return None
        delta = chunk.choices[0].delta if chunk.choices else None
        if delta is not None and delta.content is not None:
            texts.setdefault(chunk.choices[0].index, []).append(delta.content)
    return {("chat", index): pieces for index, pieces in texts.items()}


def _parsed(events: list[bytes]) -> Iterator[Any]:
    """The JSON of each event's data (one that isn't JSON is skipped), as ``json.loads`` reads it."""
    try:  # one parse of them all as a JSON array: far cheaper than one call per event
        parsed = decode_json(b"[" + b",".join(events) + b"]")
    except ValueError:
        parsed = None
    if isinstance(parsed, list) and len(parsed) == len(events):
        yield from parsed
        return
    for data in events:  # one that isn't JSON (or holds more than one value) is skipped on its own
        try:
            yield decode_json(data)
        except ValueError:
            continue


def _find_string(body: bytes, limit: int, position: int, key: str, value: str) -> tuple[int, int] | None:
    """The raw span of the next string value of ``key`` holding ``value``, between position and limit."""
    pattern = re.compile(rb'"' + re.escape(key.encode()) + rb'"\s*:\s*"')
    while (match := pattern.search(body, position, limit)) is not None:
        rest = _STRING_REST.match(body, match.end(), limit)
        if rest is None:
            return None
        start, end = match.end(), rest.end() - 1
        try:
            if json.loads(body[start - 1 : end + 1]) == value:
                return start, end
        except ValueError:
            return None
        position = rest.end()
    return None


def delta_edits(body: bytes, redactor: Redactor) -> list[Edit]:
    """Edits removing every secret found in the reassembled text of a channel from each piece that
    carries part of it: the first such piece gets the replacement, the others lose their part."""
    if not _may_carry_deltas(body):
        return []
    # Reassemble cheaply first; find the pieces' raw spans only when a channel holds a secret.
    if not any(len(values) > 1 and _redacts(redactor, "".join(values)) for values in delta_texts(body).values()):
        return []
    return _channel_edits(body, redactor)


def _redacts(redactor: Redactor, text: str) -> bool:
    """Whether ``redactor`` changes this text of a response (the prefilter asked first: far cheaper)."""
    return redactor.could_redact(text) and redactor.redact_text(text, response=True) != text


def _channel_edits(body: bytes, redactor: Redactor) -> list[Edit]:
    """``delta_edits`` for a body whose reassembled text holds a secret: the pieces' raw spans found."""
    edits: list[Edit] = []
    for pieces in delta_channels(body).values():
        if len(pieces) < 2:
            continue  # a whole piece was searched with its line
        text = "".join(value for _, _, value in pieces)
        redacted = redactor.redact_text(text, response=True)
        if redacted != text:
            edits += _piece_edits(pieces, text, redacted)
    return sorted(edits)


def _piece_edits(pieces: list[Piece], text: str, redacted: str) -> list[Edit]:
    """The edits of each piece of ``text`` that carries part of what ``redacted`` changed."""
    start, end = changed_span(text, redacted)
    replacement = redacted[start : end + len(redacted) - len(text)]
    edits: list[Edit] = []
    offset, placed = 0, False
    for raw_start, raw_end, value in pieces:
        low, high = offset, offset + len(value)
        offset = high
        if start < end:
            overlaps = low < end and high > start
        else:  # an insertion: the piece holding its position
            overlaps = low <= start <= high and not placed
        if not overlaps:
            continue
        new = value[: max(0, start - low)]
        if not placed:
            new += replacement
            placed = True
        if high > end:
            new += value[end - low :]
        if new != value:
            edits.append((raw_start, raw_end, json.dumps(new, ensure_ascii=False)[1:-1].encode()))
    return edits


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
