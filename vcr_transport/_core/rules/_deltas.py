"""The text a model emits piece by piece across a stream's events (SSE or NDJSON), per vendor stream shape
(one function each, in a table), and the edits that remove a secret spread over those pieces. No I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import msgspec

from ..format._format import decode_json
from ..format._sse import Event, data_of, decode_events
from ._redaction import Redactor

__all__ = ["Edit", "changed_span", "delta_channels", "delta_edits", "delta_texts", "split_edited"]


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


def split_edited(original: bytes, edits: Sequence[Edit], sizes: Sequence[int]) -> list[bytes]:
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


def _anthropic(event: dict[str, Any]) -> Values:
    """Anthropic's ``content_block_delta``: text, ``input_json_delta``'s ``partial_json``, thinking."""
    delta = event.get("delta")
    if event.get("type") == "content_block_delta" and isinstance(delta, dict):
        for key in ("text", "partial_json", "thinking"):
            if isinstance(delta.get(key), str):
                yield ("anthropic", event.get("index"), key), key, delta[key]


def _responses(event: dict[str, Any]) -> Values:
    """The Responses API's ``*.delta`` events."""
    kind, delta = event["type"], event.get("delta")
    if kind.endswith(".delta") and isinstance(delta, str):
        yield (
            ("responses", kind, event.get("item_id"), event.get("output_index"), event.get("content_index")),
            "delta",
            delta,
        )


def _cohere(event: dict[str, Any]) -> Values:
    """Cohere v2's ``content-delta`` and ``tool-call-delta``."""
    delta = event.get("delta")
    message = (
        delta.get("message")
        if event["type"] in ("content-delta", "tool-call-delta") and isinstance(delta, dict)
        else None
    )
    message = message if isinstance(message, dict) else {}
    content, calls, index = message.get("content"), message.get("tool_calls"), event.get("index")
    content = content if isinstance(content, dict) else {}
    for key in ("text", "thinking"):
        if isinstance(content.get(key), str):
            yield ("cohere", index, key), key, content[key]
    function = calls.get("function") if isinstance(calls, dict) else None
    if isinstance(function, dict) and isinstance(function.get("arguments"), str):
        yield ("cohere", index, "tool"), "arguments", function["arguments"]


def _chat_choice(position: int, choice: dict[str, Any]) -> Values:
    index, delta = choice.get("index", position), choice.get("delta")
    if not isinstance(delta, dict):
        if isinstance(choice.get("text"), str):
            yield ("completion", index), "text", choice["text"]
        return
    for key in ("reasoning_content", "reasoning", "content"):
        if isinstance(delta.get(key), str):
            yield ("chat", index) if key == "content" else ("chat", index, key), key, delta[key]
    for call_position, call in enumerate(delta.get("tool_calls") or ()):
        yield from _tool_call(index, call_position, call)


def _tool_call(index: Any, position: int, call: Any) -> Values:
    function = call.get("function") if isinstance(call, dict) else None
    if isinstance(function, dict) and isinstance(function.get("arguments"), str):
        yield ("chat", index, "tool", call.get("index", position)), "arguments", function["arguments"]


def _chat(event: dict[str, Any]) -> Values:
    """openai chat completions: each choice's ``delta.content``, ``reasoning_content`` (DeepSeek, vLLM) or
    ``reasoning`` (OpenRouter) and tool calls' ``function.arguments``; legacy completions' ``text``."""
    choices = event.get("choices")
    for position, choice in enumerate(choices if isinstance(choices, list) else ()):
        if isinstance(choice, dict):
            yield from _chat_choice(position, choice)


def _gemini(event: dict[str, Any]) -> Values:
    """Gemini: ``candidates[].content.parts[].text``, thoughts apart."""
    candidates = event.get("candidates")
    for position, candidate in enumerate(candidates if isinstance(candidates, list) else ()):
        content = candidate.get("content") if isinstance(candidate, dict) else None
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield ("gemini", candidate.get("index", position), bool(part.get("thought"))), "text", part["text"]


def _ollama(event: dict[str, Any]) -> Values:
    """Ollama's NDJSON: /api/chat's message, /api/generate's response."""
    message = event.get("message")
    for part, key in ((message, "content"), (message, "thinking"), (event, "response"), (event, "thinking")):
        if "done" in event and isinstance(part, dict) and isinstance(part.get(key), str):
            yield ("ollama", part is message, key), key, part[key]


# The stream shapes, one function each: those of events with a ``type``, and those of the others.
_TYPED_SHAPES = (_anthropic, _responses, _cohere)
_UNTYPED_SHAPES = (_chat, _gemini, _ollama)


def _delta_values(event: Any) -> Values:
    """(channel, JSON key, value) of each piece of text an SSE event (or an NDJSON line) carries."""
    if isinstance(event, dict):
        for shape in _TYPED_SHAPES if isinstance(event.get("type"), str) else _UNTYPED_SHAPES:
            yield from shape(event)


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
