"""The text a model emits piece by piece across a stream's events (SSE or NDJSON), per vendor stream shape, and
the edits that remove a secret spread over those pieces. No I/O."""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Hashable, Iterator, Sequence
from typing import Any, TypeVar

import msgspec

from ..format._format import PLACEHOLDER, decode_json, encode_string
from ..format._sse import data_of, decode_events
from ._catalogue import looks_like_credential
from ._redaction import Redactor

__all__ = [
    "Edit",
    "changed_span",
    "cut_tails",
    "delta_channels",
    "delta_edits",
    "delta_texts",
    "edit_of",
    "split_edited",
]

Edit = tuple[int, int, bytes]  # replace original[start:end] with these bytes
Piece = tuple[int, int, str]  # a JSON string's raw span in the body, and its value
Values = Iterator[tuple[Hashable, str, Any]]  # (channel, JSON key, value: text when a string)
_Text = TypeVar("_Text", str, bytes)


def changed_span(original: Sequence[Any], redacted: Sequence[Any]) -> tuple[int, int]:
    """(start, end) of the part of ``original`` that differs from ``redacted``, between their longest common
    prefix and suffix."""
    limit = min(len(original), len(redacted))
    prefix = next((index for index in range(limit) if original[index] != redacted[index]), limit)
    rest = limit - prefix
    suffix = next((index for index in range(rest) if original[-1 - index] != redacted[-1 - index]), rest)
    return prefix, len(original) - suffix


def edit_of(original: _Text, redacted: _Text) -> tuple[int, int, _Text]:
    """(start, end, replacement): the one edit that turns ``original`` into ``redacted``."""
    start, end = changed_span(original, redacted)
    return start, end, redacted[start : end + len(redacted) - len(original)]


def split_edited(original: bytes, edits: Sequence[Edit], sizes: Sequence[int]) -> list[bytes]:
    """The pieces of ``original`` (of ``sizes``) with sorted, non-overlapping ``edits`` applied; a boundary inside
    an edit moves to its end, so the earlier piece carries the whole replacement."""
    edited = bytearray()
    position = 0
    new_ends: list[tuple[int, int, int]] = []  # (start, end, end in edited text) per edit
    for start, end, replacement in edits:
        edited += original[position:start] + replacement
        new_ends.append((start, end, len(edited)))
        position = end
    edited += original[position:]

    def moved(boundary: int) -> int:
        shift = 0
        for start, end, new_end in new_ends:
            if boundary <= start:
                break
            if boundary < end:
                return new_end
            shift = new_end - end
        return boundary + shift

    starts = [0, *itertools.accumulate(sizes)]
    return [bytes(edited[moved(start) : moved(end)]) for start, end in itertools.pairwise(starts)]


def _get(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...``, None past a step that is not a JSON object."""
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _list(obj: Any, key: str) -> list[Any]:
    value = _get(obj, key)
    return value if isinstance(value, list) else []


def _anthropic(event: dict[str, Any]) -> Values:
    """Anthropic's ``content_block_delta``: text, ``partial_json``, thinking."""
    if event["type"] == "content_block_delta":
        for key in ("text", "partial_json", "thinking"):
            yield ("anthropic", event.get("index"), key), key, _get(event, "delta", key)


def _responses(event: dict[str, Any]) -> Values:
    """The Responses API's ``*.delta`` events (Realtime's too), but audio's (base64 media)."""
    if (kind := event["type"]).endswith(".delta") and not kind.endswith("audio.delta"):
        where = (event.get("item_id"), event.get("output_index"), event.get("content_index"))
        yield ("responses", kind, *where), "delta", event.get("delta")


def _cohere(event: dict[str, Any]) -> Values:
    """Cohere v2's ``content-delta`` and ``tool-call-delta``."""
    if event["type"] in ("content-delta", "tool-call-delta"):
        message, index = _get(event, "delta", "message"), event.get("index")
        for key in ("text", "thinking"):
            yield ("cohere", index, key), key, _get(message, "content", key)
        yield ("cohere", index, "tool"), "arguments", _get(message, "tool_calls", "function", "arguments")


def _chat(event: dict[str, Any]) -> Values:
    """openai chat: each choice's ``content``, ``reasoning_content`` (DeepSeek, vLLM), ``reasoning`` (OpenRouter),
    tool calls' ``arguments``; legacy completions' ``text``."""
    for position, choice in enumerate(_list(event, "choices")):
        if not isinstance(choice, dict):
            continue
        index, delta = choice.get("index", position), choice.get("delta")
        if not isinstance(delta, dict):
            yield ("completion", index), "text", choice.get("text")
            continue
        for key in ("reasoning_content", "reasoning", "content"):
            yield ("chat", index) if key == "content" else ("chat", index, key), key, delta.get(key)
        for call_position, call in enumerate(delta.get("tool_calls") or ()):
            where = call.get("index", call_position) if isinstance(call, dict) else None
            yield ("chat", index, "tool", where), "arguments", _get(call, "function", "arguments")


def _gemini(event: dict[str, Any]) -> Values:
    """``candidates[].content.parts[].text``, thoughts apart."""
    for position, candidate in enumerate(_list(event, "candidates")):
        for part in _list(_get(candidate, "content"), "parts"):
            channel = ("gemini", candidate.get("index", position), bool(_get(part, "thought")))
            yield channel, "text", _get(part, "text")


def _ollama(event: dict[str, Any]) -> Values:
    """Ollama's NDJSON: /api/chat's message, /api/generate's response."""
    if "done" in event:
        message = event.get("message")
        for part, key in ((message, "content"), (message, "thinking"), (event, "response"), (event, "thinking")):
            yield ("ollama", part is message, key), key, _get(part, key)


def _gemini_live(event: dict[str, Any]) -> Values:
    """Gemini Live's ``serverContent`` (WebSocket messages): the model turn's text parts, thoughts apart, then
    the transcriptions."""
    content = event.get("serverContent")
    for part in _list(_get(content, "modelTurn"), "parts"):
        yield ("gemini-live", bool(_get(part, "thought"))), "text", _get(part, "text")
    for kind in ("inputTranscription", "outputTranscription"):
        yield ("gemini-live", kind), "text", _get(content, kind, "text")


_TYPED_SHAPES = (_anthropic, _responses, _cohere)  # events with a ``type``
_UNTYPED_SHAPES = (_chat, _gemini, _ollama, _gemini_live)


def _delta_values(event: Any) -> Iterator[tuple[Hashable, str, str]]:
    """(channel, JSON key, value) of each piece of text an event carries."""
    if isinstance(event, dict):
        for shape in _TYPED_SHAPES if isinstance(event.get("type"), str) else _UNTYPED_SHAPES:
            yield from ((channel, key, value) for channel, key, value in shape(event) if isinstance(value, str))


def _may_carry_deltas(data: bytes) -> bool:
    return b'"delta"' in data or b'"candidates"' in data or b'"text"' in data or b'"done"' in data


def delta_channels(body: bytes) -> dict[Hashable, list[Piece]]:
    """The pieces of text an SSE body's events (or an NDJSON body's lines) carry, with their raw spans, per
    channel (a choice, tool call, content block, item or candidate). Events that aren't JSON are skipped."""
    channels: dict[Hashable, list[Piece]] = {}
    for data, search, limit in _json_events(body):
        try:
            event = decode_json(data) if _may_carry_deltas(data) else None
        except ValueError:
            continue
        for channel, key, value in _delta_values(event):
            span = _find_string(body, limit, search, key, value)
            if span is None:
                break  # a spelling we can't place: leave this event as it is
            channels.setdefault(channel, []).append((*span, value))
            search = span[1]
    return channels


def _json_events(body: bytes) -> Iterator[tuple[bytes, int, int]]:
    """(data, start, end of its values in ``body``) of each SSE event or, with none, each line (NDJSON)."""
    events = [event for event in decode_events(body) if event.dispatched]
    for event in events:
        start = end = position = event.start
        for line in event.lines:
            position = body.find(line, position)  # only line ends lie between one line and the next
            if line.partition(b":")[0] == b"data":
                start = position + 5 if start == event.start else start
                end = position + len(line)
            position += len(line)
        yield event.data, start, end
    start = 0
    for line in () if events else body.splitlines(keepends=True):
        yield line.strip(), start, start + len(line)
        start += len(line)


@functools.cache
def _key_pattern(key: str) -> re.Pattern[bytes]:
    """A JSON key, the opening quote of its string value, then that string's rest (group 1)."""
    return re.compile(rb'"' + re.escape(key.encode()) + rb'"\s*:\s*"([^"\\]*+(?:\\.[^"\\]*+)*+")?')


def _find_string(body: bytes, limit: int, position: int, key: str, value: str) -> tuple[int, int] | None:
    """The raw span of the next string value of ``key`` equal to ``value``, between position and limit."""
    while (match := _key_pattern(key).search(body, position, limit)) is not None:
        if match[1] is None:
            return None
        start, end = match.start(1), match.end(1) - 1
        try:
            if json.loads(body[start - 1 : end + 1]) == value:
                return start, end
        except ValueError:
            return None
        position = end + 1
    return None


class _ChatDelta(msgspec.Struct, gc=False):
    content: str | None = None
    tool_calls: None = None  # a chunk with tool calls or reasoning text is left to the general reading
    reasoning_content: None = None
    reasoning: None = None


class _ChatChoice(msgspec.Struct, gc=False):
    delta: _ChatDelta | None = None
    index: int = 0
    text: None = None  # a legacy completion's text: the general reading


class _ChatChunk(msgspec.Struct, gc=False):
    """An openai chat chunk of text alone; one of another shape (non-null ``type``, ``candidates``, ``done``)
    doesn't decode."""

    choices: list[_ChatChoice] = []  # noqa: RUF012 (msgspec copies a default list)
    type: None = None
    candidates: None = None
    done: None = None


def delta_texts(body: bytes) -> dict[Hashable, list[str]]:
    """``delta_channels`` without spans; a stream of openai chat chunks of text alone (most) read by msgspec."""
    texts = _chat_texts(body)
    if texts is None:
        return {channel: [value for *_, value in pieces] for channel, pieces in delta_channels(body).items()}
    return texts


def _chat_texts(body: bytes) -> dict[Hashable, list[str]] | None:
    """``delta_texts`` of openai chat chunks of one choice and text alone, else None."""
    events = data_of(body)
    if events[-1:] == [b"[DONE]"]:
        events.pop()
    chunks = _chat_chunks(events) if events else None
    if chunks is None:
        return None
    texts: dict[Hashable, list[str]] = {}
    for chunk in chunks:
        if len(chunk.choices) > 1:
            return None
        delta = chunk.choices[0].delta if chunk.choices else None
        if delta is not None and delta.content is not None:
            texts.setdefault(("chat", chunk.choices[0].index), []).append(delta.content)
    return texts


def _chat_chunks(events: list[bytes]) -> list[_ChatChunk] | None:
    """The events as chat chunks; None when one isn't (or holds two values, or what msgspec refuses and json
    reads: a lone surrogate, NaN)."""
    data = b",".join([b"[" + events[0], *events[1:-1], events[-1] + b"]"]) if len(events) > 1 else b"[%b]" % events[0]
    try:  # a JSON array of the events, in one copy of their text
        chunks = _chat_decoder().decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return chunks if len(chunks) == len(events) else None


@functools.cache
def _chat_decoder() -> msgspec.json.Decoder[list[_ChatChunk]]:
    return msgspec.json.Decoder(list[_ChatChunk])


# The rest of a secret cut at a piece's end: a run of key characters (dots inside it, as in a JWT).
_TAIL = re.compile(r"[A-Za-z0-9_+/=-]++(?:\.[A-Za-z0-9_+/=-]++)*+")


def delta_edits(body: bytes, redactor: Redactor) -> list[Edit]:
    """Edits removing each secret in a channel's joined text from the pieces carrying it: the first gets the
    replacement, the others lose their part. Spans are sought only when ``delta_texts`` holds a secret."""
    if not _may_carry_deltas(body) or not any(
        len(values) > 1 and _redacted(values, redactor) != "".join(values) for values in delta_texts(body).values()
    ):
        return []
    edits: list[Edit] = []
    for pieces in delta_channels(body).values():
        values = [value for _, _, value in pieces]
        text = "".join(values)
        redacted = _redacted(values, redactor) if len(pieces) > 1 else text
        if redacted != text:  # (a whole piece was searched with its line)
            edits += _piece_edits(pieces, *edit_of(text, redacted))
    return sorted(edits)


def _redacted(values: Sequence[str], redactor: Redactor) -> str:
    """A channel's pieces joined and redacted, without the rests of secrets cut at a piece's end (``cut_tails``)."""
    text = "".join(values)
    bounds = [(0, 0), *cut_tails(values), (len(text), 0)]
    kept = "".join(text[end:following] for (_, end), (following, _) in itertools.pairwise(bounds))
    return redactor.redact_text(kept, response=True) if redactor.could_redact(kept) else kept


def cut_tails(values: Sequence[str]) -> list[tuple[int, int]]:
    """Where, in a channel's pieces joined, the rest of a secret is that the redaction of their lines cut at a
    piece's end: a piece that ends with the placeholder left the key characters that the pieces after it start
    with (the first part of a key was a key's shape on its own, the rest alone is none), when they look like a
    key's: eight or more, letters and digits (a model that wrote the placeholder itself goes on with text)."""
    text, cuts, start = "".join(values), [], 0
    for value in values[:-1]:
        start += len(value)
        tail = _TAIL.match(text, start) if value.endswith(PLACEHOLDER) else None
        if tail is not None and looks_like_credential(tail[0], 8):  # a key's rest: not ``-style``, ``_HERE``
            cuts.append(tail.span())
    return cuts


def _piece_edits(pieces: list[Piece], start: int, end: int, replacement: str) -> list[Edit]:
    """The edits of the pieces carrying part of ``start:end`` of their joined text, replaced by ``replacement``."""
    edits: list[Edit] = []
    offset, placed = 0, False
    for raw_start, raw_end, value in pieces:
        low, high = offset, offset + len(value)
        offset = high
        # An insertion (start == end) goes to the piece holding its position.
        if not (low < end and high > start if start < end else low <= start <= high and not placed):
            continue
        new = (
            value[: max(0, start - low)] + ("" if placed else replacement) + (value[end - low :] if high > end else "")
        )
        placed = True
        if new != value:
            edits.append((raw_start, raw_end, encode_string(new)))
    return edits
