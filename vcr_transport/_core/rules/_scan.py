"""Finding secrets in text already written (cassettes, .env, YAML, any text file): what recording would remove,
and a YAML value under a secret name on the line before. No I/O."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import ahocorasick_rs

from ..._exceptions import RedactionLimitError
from ..format._bodies import (
    NO_REDACTION,
    DecodeBudget,
    DecodedTooLarge,
    body_headers,
    content_encodings,
    stored_body,
    stored_body_bytes,
)
from ._catalogue import PREFIX_PATTERNS
from ._deltas import cut_tails, delta_channels, edit_of
from ._known import utf8
from ._redaction import PLACEHOLDER, Redactor
from ._stream import redact_body

__all__ = ["scan_document", "scan_name", "scan_text"]

# A secret name ending its YAML line, its value the list item on the lines after it.
_NAME_ALONE = re.compile(r"""^\s*(?:-\s+)?["']?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)["']?\s*:\s*$""")
_YAML_ITEM = re.compile(r"^\s*-\s+(?P<value>.+)$")
_CANDIDATES = 32  # occurrences of the white space after a secret tried, at most
_LONGEST_SPLIT = 8192  # the longest secret holding white space that is told apart from the next
_LONGEST_LOOKED_FOR = 4096  # a longer secret is not looked for inside the others: both are reported
# (line number, why, fix) of each line not searched whole: a body too large to decode, searched as stored (the
# caller's fix, ""), or where the redactor held all the secrets it remembers (RedactionLimitError's).
Unsearched = list[tuple[int, str, str]]
_Reading = tuple[Unsearched, DecodeBudget]  # a file's unsearched lines, and what its bodies may decode to in all


def scan_text(redactor: Redactor, text: str, response: bool = False) -> list[str]:
    """The secrets the rules would remove from ``text``, as they stand (``_secrets_in``)."""
    return _secrets_in(redactor, text, redactor.redact_text(text, response=response), response)


def _secrets_in(redactor: Redactor, text: str, redacted: str, response: bool) -> list[str]:
    """The secrets removed from ``text`` in ``redacted``: the changed span split at the unchanged text between
    placeholders; at white space, which a secret may hold too, where it last follows a whole one."""
    if redacted == text:
        return []
    start, end, replaced = edit_of(text, redacted)
    found, position, secrets = text[start:end], 0, []
    for part in replaced.split(PLACEHOLDER)[1:-1]:
        where = _secret_end(redactor, found, position, part, response) if part else -1
        if where < 0:
            return [found]
        secrets.append(found[position:where])
        position = where + len(part)
    secrets.append(found[position:])
    return [secret for secret in secrets if secret.strip()]


def _secret_end(redactor: Redactor, found: str, position: int, part: str, response: bool) -> int:
    """Where the secret at ``position`` of ``found`` ends, ``part`` following it; -1 if nowhere."""
    chosen = where = found.find(part, position + 1)
    if part.strip():
        return chosen  # text that no secret holds
    for _ in range(_CANDIDATES):
        if where < 0 or where - position > _LONGEST_SPLIT:
            break
        if redactor.redact_text(found[position:where], response=response) == PLACEHOLDER:
            chosen = where
        where = found.find(part, where + 1)
    return chosen


# What glues a key to a file name or test id (``test_x_sk-proj-...``, ``test_x[sk-proj-...]``): read as a space
# where a catalogue prefix follows, the key's own ``_`` kept.
@functools.cache
def _name_glue() -> re.Pattern[str]:
    prefixes = sorted(PREFIX_PATTERNS, key=len, reverse=True)
    return re.compile(r"[_\[\]]+(?=" + "|".join(re.escape(prefix.decode()) for prefix in prefixes) + ")")


def scan_name(redactor: Redactor, name: str) -> list[str]:
    """The secrets in a file name or a test id, also where a ``_`` or a bracket glues a key to the name."""
    return scan_text(redactor, _name_glue().sub(" ", name))


@dataclasses.dataclass
class _Call:
    encodings: list[str] = dataclasses.field(default_factory=list)
    first_line: int = 0
    payload: bytearray = dataclasses.field(default_factory=bytearray)

    def add_event(self, obj: dict[str, Any], number: int) -> None:
        """An event's chunk; a WebSocket server message's text as a line (its pieces of text read as NDJSON's)."""
        self.first_line = self.first_line or number
        data = b""
        if isinstance(obj.get("text"), str):
            data = utf8(obj["text"])
        elif isinstance(obj.get("base64"), str):
            with contextlib.suppress(ValueError):  # not base64
                data = base64.b64decode(obj["base64"])
        self.payload += data.replace(b"\n", b" ") + b"\n" if obj.get("type") == "message" else data


def scan_document(redactor: Redactor, text: str, unsearched: Unsearched | None = None) -> Iterator[tuple[int, str]]:
    """(line number, secret) for every secret in a file's text, once per line: in lines, cassette lines (headers,
    test ids, JSON, base64 payloads decoded), each call's stream reassembled and decoded, and PEM blocks. A body
    decoding past ``MAX_DECODED_BYTES`` (or past what the file's bodies may decode to in all, ``DecodeBudget``) is
    searched as stored, and noted in ``unsearched``; so is the line where
    the redactor would hold more secrets than it remembers (RedactionLimitError), the rest left unsearched."""
    unsearched, budget = ([] if unsearched is None else unsearched), DecodeBudget()
    calls: defaultdict[Any, _Call] = defaultdict(_Call)
    pending_name, number = "", 0  # a secret name on the line before, its value on the following YAML items
    try:
        for number, line in enumerate(text.splitlines(), start=1):
            item, pending_name = _yaml_item(redactor, line, pending_name)
            found = scan_text(redactor, line) + item
            if line.startswith("{"):
                found += _scan_cassette_line(redactor, line, number, calls, (unsearched, budget))
            yield from _report(number, found)
        yield from _stream_secrets(redactor, calls, (unsearched, budget))
        yield from _pem_secrets(redactor, text)
    except RedactionLimitError as error:
        unsearched.append((number, f"{error}: the rest of the file was not searched", error.FIX))


def _pem_secrets(redactor: Redactor, text: str) -> Iterator[tuple[int, str]]:
    """The secrets that span lines (PEM blocks), at the line where each starts."""
    if "-----BEGIN" in text:
        for secret in scan_text(redactor, text):
            if "\n" in secret:
                yield from _report(text[: text.find(secret)].count("\n") + 1, [secret])


def _yaml_item(redactor: Redactor, line: str, pending_name: str) -> tuple[list[str], str]:
    """The secret of a YAML item under a secret name (as the assignment ``name=value`` holds one), and the secret
    name whose items follow the line."""
    if pending_name and (item := _YAML_ITEM.match(line)):
        value = item["value"].strip().strip("\"'")
        return ([value] if scan_text(redactor, f"{pending_name}={value}") else []), pending_name
    alone = _NAME_ALONE.match(line)
    return [], alone["name"] if alone and redactor.is_secret_name(alone["name"], query=True) else ""


def _report(number: int, found: list[str]) -> Iterator[tuple[int, str]]:
    """Each secret once: one holding another found on the same line is reported as the shorter, one written with
    JSON escapes as the secret it stands for. Linear in the secrets' length: one search of each for the others
    (a line of 20,000 secrets compared each with each took 19 s), those of at most ``_LONGEST_LOOKED_FOR``
    characters (a whole field a rule changed may be megabytes: its search would take hundreds)."""
    distinct = [secret for secret in dict.fromkeys(found) if secret and PLACEHOLDER not in secret]
    others, named = _search_of(distinct), set(distinct)
    for secret in distinct:
        if others is None or (not _holds_another(others, secret) and _unescaped(secret) not in named):
            yield number, secret


def _search_of(secrets: list[str]) -> ahocorasick_rs.BytesAhoCorasick | None:
    """The search of ``secrets`` up to ``_LONGEST_LOOKED_FOR`` characters; None for fewer than two, or none
    that short."""
    looked_for = [utf8(secret) for secret in secrets if len(secret) <= _LONGEST_LOOKED_FOR]
    if len(secrets) < 2 or not looked_for:
        return None
    return ahocorasick_rs.BytesAhoCorasick(looked_for, implementation=ahocorasick_rs.Implementation.ContiguousNFA)


def _holds_another(secrets: ahocorasick_rs.BytesAhoCorasick, secret: str) -> bool:
    """Whether one of ``secrets`` (this one among them) is inside ``secret`` and shorter: then it is inside it
    without its first or without its last character."""
    return bool(secrets.find_matches_as_indexes(utf8(secret[1:])) or secrets.find_matches_as_indexes(utf8(secret[:-1])))


def _unescaped(secret: str) -> str | None:
    """What ``secret`` stands for when it is written with JSON escapes (None when it has none)."""
    if "\\" not in secret:
        return None
    try:
        decoded = json.loads(f'"{secret}"')
    except ValueError:
        return None
    return decoded if isinstance(decoded, str) and decoded != secret else None


def _scan_cassette_line(
    redactor: Redactor, line: str, number: int, calls: defaultdict[Any, _Call], reading: _Reading
) -> list[str]:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):  # its text was searched as a line's
        return []
    if not isinstance(obj, dict):
        return []
    response = obj.get("type") in ("response", "event")
    found, pairs = _header_secrets(redactor, obj, calls)
    found += scan_name(redactor, obj["test"]) if isinstance(obj.get("test"), str) else []
    found += _body_secrets(redactor, obj, pairs, number, reading)  # takes a body it reads out of the line
    cleaned = redactor.redact_value(obj, response=response)
    found += [secret for before in _removed(obj, cleaned) for secret in _removed_secrets(redactor, before, response)]
    for data in _payloads(obj, number, reading):
        found += scan_text(redactor, data.decode("utf-8", "surrogateescape"), response)
    _join_stream(calls, obj, number)
    return found


def _join_stream(calls: defaultdict[Any, _Call], obj: dict[str, Any], number: int) -> None:
    """An event's chunk, or a WebSocket server message, to its call's stream (read whole at the end)."""
    streamed = obj.get("type") == "event" or (obj.get("type") == "message" and obj.get("from") == "server")
    if streamed and (index := _call_index(obj)) is not None:
        calls[index].add_event(obj, number)


def _call_index(obj: dict[str, Any]) -> int | None:
    """A line's call index, when it is one (a hostile line's may be a list: its text was searched as a line's)."""
    index = obj.get("call_index")
    return index if isinstance(index, int) else None


def _removed_secrets(redactor: Redactor, before: Any, response: bool) -> list[str]:
    """The secrets of a value redaction changed: those the rules find in it as text (a long field holding one is
    not reported whole), else the whole value (a parent's name removed it)."""
    if not isinstance(before, str):
        return [json.dumps(before)]
    return scan_text(redactor, before, response) or [before]


def _removed(before: Any, after: Any) -> Iterator[Any]:
    """The values of ``before`` that redaction changed into ``after`` (the same structure, walked together)."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            yield from _removed(value, after.get(key))
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for old, new in zip(before, after, strict=True):
            yield from _removed(old, new)
    elif before != after:
        yield before


def _header_secrets(
    redactor: Redactor, obj: dict[str, Any], calls: defaultdict[Any, _Call]
) -> tuple[list[str], list[tuple[str, str]]]:
    """The secrets in a line's headers, taken out of it (a response's content-encodings noted), and the headers."""
    headers = obj.get("headers")
    if not (isinstance(headers, list) and all(isinstance(pair, list) and len(pair) == 2 for pair in headers)):
        return [], []
    pairs = [(str(name), str(value)) for name, value in headers]
    found = [v for (_, v), (_, r) in zip(pairs, redactor.redact_headers(pairs), strict=True) if v != r]
    if obj.get("type") == "response" and (index := _call_index(obj)) is not None:
        calls[index].encodings = content_encodings(pairs)
    del obj["headers"]
    return found, pairs


def _body_secrets(
    redactor: Redactor, obj: dict[str, Any], pairs: list[tuple[str, str]], number: int, reading: _Reading
) -> list[str]:
    """What recording would remove from a request's body: its bytes, decoded, stored again by the recorder's own
    ``stored_body`` (forms by their fields' names, multipart parts by theirs, JSON by its keys), with redaction
    and without."""
    body = obj.get("body")
    if obj.get("type") != "request" or not isinstance(body, dict) or "json" in body:
        return []  # a JSON body as stored was read with the line (``redact_value``)
    data = _body_bytes(body, pairs, number, reading)
    if data is None:
        return []
    del obj["body"]  # read here, as recording stores it: not again with the line's other values
    content_type = body_headers(pairs)[0]
    plain, redacted = (stored_body_bytes(stored_body(data, content_type, r)) for r in (NO_REDACTION, redactor))
    text = plain.decode("utf-8", "surrogateescape")
    return _secrets_in(redactor, text, redacted.decode("utf-8", "surrogateescape"), False)


def _body_bytes(body: dict[str, Any], pairs: list[tuple[str, str]], number: int, reading: _Reading) -> bytes | None:
    """The bytes a stored request body stands for, decoded by its content-encodings (gzip also unsaid); None
    when it is no body (its line's reading reports that) or doesn't decode."""
    try:
        data = stored_body_bytes(body)
    except (ValueError, TypeError, KeyError):
        return None
    encodings = content_encodings(pairs) or (["gzip"] if data.startswith(b"\x1f\x8b") else [])
    return _decoded(data, encodings, number, reading) if encodings else data


def _decoded(data: bytes, encodings: list[str], number: int, reading: _Reading) -> bytes | None:
    """``data`` decoded (None if it can't be), or as it is, noted as unsearched, if it decodes too large (past
    its own bound, or past what the file's bodies may decode to in all)."""
    unsearched, budget = reading
    try:
        return budget.decode(data, encodings)
    except DecodedTooLarge as error:
        unsearched.append((number, f"{error}: searched as stored, not decoded", ""))
        return data


def _payloads(obj: dict[str, Any], number: int, reading: _Reading) -> Iterator[bytes]:
    """A line's own base64 payload decoded, and gunzipped when it is gzip."""
    encoded = obj.get("base64")
    if isinstance(encoded, str):
        try:
            data = base64.b64decode(encoded, validate=True)
        except ValueError:
            return
        yield (_decoded(data, ["gzip"], number, reading) or data) if data.startswith(b"\x1f\x8b") else data


def _stream_secrets(redactor: Redactor, calls: dict[Any, _Call], reading: _Reading) -> Iterator[tuple[int, str]]:
    """The secrets in each call's stream, reassembled and decoded: by line, and in each delta channel's text."""
    for call in calls.values():
        body = _decoded(bytes(call.payload), call.encodings, call.first_line, reading)
        if body is None or redact_body(body, redactor) == body:
            continue
        texts, tails = _channel_texts(body)
        texts += body.decode("utf-8", "surrogateescape").splitlines()
        found = [secret for text in texts for secret in scan_text(redactor, text, True)]
        yield from _report(call.first_line, tails + found)


def _channel_texts(body: bytes) -> tuple[list[str], list[str]]:
    """Each delta channel's text, joined, and the rests of secrets cut at a piece's end in them (``cut_tails``)."""
    texts, tails = [], []
    for pieces in delta_channels(body).values():
        values = [value for _, _, value in pieces]
        texts.append("".join(values))
        tails += [texts[-1][start:end] for start, end in cut_tails(values)]
    return texts, tails
