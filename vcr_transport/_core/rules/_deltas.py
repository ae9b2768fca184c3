"""The text a model emits piece by piece across a stream's events (SSE or NDJSON), per vendor stream shape
(one function each, in a table), and the edits that remove a secret spread over those pieces. No I/O."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import msgspec

from ..format._format import decode_json
from ..format._sse import Event, data_of, decode_events
from ._redaction import Redactor

__all__ = ["Edit", "changed_span", "delta_channels", "delta_edits", "delta_texts", "split_edited"]

Edit = tuple[int, int, bytes]  # replace original[start:end] with these bytes
Piece = tuple[int, int, str]  # the raw span of a JSON string's content in the body, and its value
Values = Iterator[tuple[Hashable, str, Any]]  # (channel, JSON key, value: a piece of text when a string)
_STRING_REST = re.compile(rb'(?:[^"\\]|\\.)*"')


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


def split_edited(original: bytes, edits: Sequence[Edit], sizes: Sequence[int]) -> list[bytes]:
    """Apply sorted, non-overlapping ``edits`` to ``original`` cut in pieces of ``sizes``; return the
    edited pieces. Boundaries outside edits keep their place; a boundary inside an edit moves to its end,
    so the earlier piece carries the whole replacement."""
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
    return [bytes(edited[moved(a) : moved(b)]) for a, b in zip(starts, starts[1:], strict=False)]


# --- text carried by SSE delta events -----------------------------------------------------------------


def _get(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...``, None where a step is not a JSON object."""
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _list(obj: Any, key: str) -> list[Any]:
    value = _get(obj, key)
    return value if isinstance(value, list) else []


def _anthropic(event: dict[str, Any]) -> Values:
    """Anthropic's ``content_block_delta``: text, ``input_json_delta``'s ``partial_json``, thinking."""
    if event["type"] == "content_block_delta":
        for key in ("text", "partial_json", "thinking"):
            yield ("anthropic", event.get("index"), key), key, _get(event, "delta", key)


def _responses(event: dict[str, Any]) -> Values:
    """The Responses API's ``*.delta`` events."""
    kind = event["type"]
    if kind.endswith(".delta"):
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
    """openai chat completions: each choice's ``delta.content``, ``reasoning_content`` (DeepSeek, vLLM) or
    ``reasoning`` (OpenRouter) and tool calls' ``function.arguments``; legacy completions' ``text``."""
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
    """Gemini: ``candidates[].content.parts[].text``, thoughts apart."""
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


# The stream shapes, one function each: those of events with a ``type``, and those of the others.
_TYPED_SHAPES = (_anthropic, _responses, _cohere)
_UNTYPED_SHAPES = (_chat, _gemini, _ollama)


def _delta_values(event: Any) -> Iterator[tuple[Hashable, str, str]]:
    """(channel, JSON key, value) of each piece of text an SSE event (or an NDJSON line) carries."""
    if isinstance(event, dict):
        for shape in _TYPED_SHAPES if isinstance(event.get("type"), str) else _UNTYPED_SHAPES:
            yield from ((channel, key, value) for channel, key, value in shape(event) if isinstance(value, str))


def _may_carry_deltas(data: bytes) -> bool:
    return b'"delta"' in data or b'"candidates"' in data or b'"text"' in data or b'"done"' in data


def _json_events(body: bytes) -> Iterator[tuple[bytes, int, int]]:
    """(data, where its values start, where they end in ``body``) of each SSE event, or, in a body with no
    SSE event (NDJSON: Ollama's ``application/x-ndjson``), of each line."""
    events = [event for event in decode_events(body) if event.dispatched]
    for event in events:
        yield (event.data, *_data_span(body, event))
    start = 0
    for line in () if events else body.splitlines(keepends=True):
        yield line.strip(), start, start + len(line)
        start += len(line)


def _data_span(body: bytes, event: Event) -> tuple[int, int]:
    """Where the values of an event's ``data`` fields start and end in ``body``."""
    start = end = position = event.start
    for line in event.lines:
        position = body.find(line, position)  # only line ends lie between one line and the next
        if line.partition(b":")[0] == b"data":
            start = position + 5 if start == event.start else start
            end = position + len(line)
        position += len(line)
    return start, end


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
            channels.setdefault(channel, []).append((*span, value))
            search = span[1]
    return channels


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
    """The values of ``delta_channels``, without their spans. A stream of openai chat chunks of text alone
    (what most streams are) is read in one pass by msgspec, into the few fields that matter."""
    events = _event_data(body)
    texts = _chat_texts(events)
    if texts is not None:
        return texts
    texts = {}
    for event in _parsed([data for data in events if _may_carry_deltas(data)]):
        for channel, _, value in _delta_values(event):
            texts.setdefault(channel, []).append(value)
    return texts


def _event_data(body: bytes) -> list[bytes]:
    """The data of each SSE event of ``body`` (``[DONE]`` left out), or else each non-blank line of it."""
    events = data_of(body)
    if events and events[-1] == b"[DONE]":
        events.pop()
    return events or [line for line in (part.strip() for part in body.splitlines()) if line.startswith(b"{")]


def _chat_texts(events: list[bytes]) -> dict[Hashable, list[str]] | None:
    """``delta_texts`` when every event is an openai chat chunk with at most one choice and no tool call;
    None for any other stream (or for data holding more than one value: more values than events). msgspec
    reads what json reads the same; what it refuses (an escaped lone surrogate, NaN) is read by json."""
    # A JSON array of the events, in one copy of their text.
    data = (
        b",".join([b"[" + events[0], *events[1:-1], events[-1] + b"]"])
        if len(events) > 1
        else b"[%b]" % b"".join(events)
    )
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


def delta_edits(body: bytes, redactor: Redactor) -> list[Edit]:
    """Edits removing every secret found in the reassembled text of a channel from each piece that carries
    part of it: the first such piece gets the replacement, the others lose their part. The text is reassembled
    cheaply first; the pieces' raw spans are found only when a channel holds a secret."""
    if not _may_carry_deltas(body) or not any(
        len(values) > 1
        and redactor.could_redact(text := "".join(values))
        and redactor.redact_text(text, response=True) != text
        for values in delta_texts(body).values()
    ):
        return []
    edits: list[Edit] = []
    for pieces in delta_channels(body).values():
        text = "".join(value for _, _, value in pieces)
        redacted = redactor.redact_text(text, response=True) if len(pieces) > 1 else text
        if redacted != text:  # (a whole piece was searched with its line)
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
        # An insertion (start == end) goes to the piece holding its position.
        if not (low < end and high > start if start < end else low <= start <= high and not placed):
            continue
        new = (
            value[: max(0, start - low)] + ("" if placed else replacement) + (value[end - low :] if high > end else "")
        )
        placed = True
        if new != value:
            edits.append((raw_start, raw_end, json.dumps(new, ensure_ascii=False)[1:-1].encode()))
    return edits
