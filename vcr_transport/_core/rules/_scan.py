"""Finding secrets in text already written (cassettes, .env, YAML, any text file): what recording would remove,
and a YAML value under a secret name on the line before. No I/O."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import json
import re
from collections.abc import Iterator
from typing import Any

from ..format._bodies import DecodedTooLarge, content_encodings, decode_stacked
from ._catalogue import PREFIX_PATTERNS
from ._deltas import delta_channels, edit_of
from ._redaction import PLACEHOLDER, Redactor
from ._stream import redact_body

__all__ = ["scan_document", "scan_name", "scan_text"]

# A secret name ending its line (YAML), whose value is the list item on the lines after it: the one reading
# scan adds to what recording removes.
_NAME_ALONE = re.compile(r"""^\s*(?:-\s+)?["']?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)["']?\s*:\s*$""")
_YAML_ITEM = re.compile(r"^\s*-\s+(?P<value>.+)$")
_GZIP_MAGIC = b"\x1f\x8b"


def scan_text(redactor: Redactor, text: str, response: bool = False) -> list[str]:
    """The secrets the redaction rules would remove from ``text``, each as it stands in the text. Several in one
    changed span are split at the unchanged text between placeholders; where that text also occurs inside a
    secret (a space in a PEM block on one line), at the last occurrence that leaves one whole secret before."""
    redacted = redactor.redact_text(text, response=response)
    if redacted == text:
        return []
    start, end, replaced = edit_of(text, redacted)
    found, between = text[start:end], replaced.split(PLACEHOLDER)[1:-1]
    secrets, position = [], 0
    for part in between:
        where = _secret_end(redactor, found, position, part, response) if part else -1
        if where < 0:
            return [found]
        secrets.append(found[position:where])
        position = where + len(part)
    secrets.append(found[position:])
    return [secret for secret in secrets if secret.strip()]


_CANDIDATES = 32  # occurrences of the white space after a secret tried, at most
_LONGEST_SPLIT = 8192  # the longest secret holding white space that is told apart from the next


# What glues a key to the words of a file name or a test id (``test_x_sk-proj-...``, ``test_x[sk-proj-...]``):
# read as a space where a catalogue prefix follows, the key's own ``_`` kept.
@functools.cache
def _name_glue() -> re.Pattern[str]:
    prefixes = sorted(PREFIX_PATTERNS, key=len, reverse=True)
    return re.compile(r"[_\[\]]+(?=" + "|".join(re.escape(prefix.decode()) for prefix in prefixes) + ")")


def scan_name(redactor: Redactor, name: str) -> list[str]:
    """The secrets in a file name or a test id, also where a ``_`` or a bracket glues a key to the name."""
    return scan_text(redactor, _name_glue().sub(" ", name))


def _secret_end(redactor: Redactor, found: str, position: int, part: str, response: bool) -> int:
    """Where the secret starting at ``position`` of ``found`` ends, ``part`` following it; -1 if nowhere."""
    first = found.find(part, position + 1)
    if part.strip():
        return first  # text that no secret holds
    where, chosen = first, -1
    for _ in range(_CANDIDATES):
        if where < 0 or where - position > _LONGEST_SPLIT:
            break
        if redactor.redact_text(found[position:where], response=response) == PLACEHOLDER:
            chosen = where
        where = found.find(part, where + 1)
    return chosen if chosen >= 0 else first


# (line number, why) of each body searched as stored because it decodes past MAX_DECODED_BYTES
Unsearched = list[tuple[int, str]]


def _decoded(data: bytes, encodings: list[str], number: int, unsearched: Unsearched) -> bytes | None:
    """``data`` decoded, None when it can't be; as it is, noted in ``unsearched``, when it decodes too large."""
    try:
        return decode_stacked(data, encodings)
    except DecodedTooLarge as error:
        unsearched.append((number, f"{error}: searched as stored, not decoded"))
        return data


def _decoded_payload(encoded: str, number: int, unsearched: Unsearched) -> bytes | None:
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    return (_decoded(data, ["gzip"], number, unsearched) or data) if data.startswith(_GZIP_MAGIC) else data


@dataclasses.dataclass
class _Call:
    encodings: list[str] = dataclasses.field(default_factory=list)
    first_line: int = 0
    payload: bytearray = dataclasses.field(default_factory=bytearray)


def scan_document(redactor: Redactor, text: str, unsearched: Unsearched | None = None) -> Iterator[tuple[int, str]]:
    """(line number, secret) for every secret in a file's text, once per line: in each line, in cassette lines
    (headers, test ids, JSON bodies, base64 payloads decoded), in each recorded call's stream reassembled and
    decoded, and in multi-line blocks (PEM keys). A body decoding past ``MAX_DECODED_BYTES`` is searched as
    stored, and noted in ``unsearched``."""
    unsearched = [] if unsearched is None else unsearched
    calls: dict[Any, _Call] = {}
    pending_name = False  # a secret name on the line before, with its value on the following YAML lines
    for number, line in enumerate(text.splitlines(), start=1):
        found, pending_name = _line_secrets(redactor, line, pending_name)
        if line.startswith("{"):
            found += _scan_cassette_line(redactor, line, number, calls, unsearched)
        yield from _report(number, found)
    yield from _stream_secrets(redactor, calls, unsearched)
    if "-----BEGIN" in text:
        for secret in scan_text(redactor, text):
            if "\n" in secret:
                yield from _report(text[: text.find(secret)].count("\n") + 1, [secret])


def _line_secrets(redactor: Redactor, line: str, pending_name: bool) -> tuple[list[str], bool]:
    """The secrets of one line, and whether a secret name with no value ends it (``pending_name``: the line
    before did, its value this YAML item)."""
    found = scan_text(redactor, line)
    item = _YAML_ITEM.match(line) if pending_name else None
    if item:
        return [*found, item["value"].strip().strip("\"'")], pending_name
    alone = _NAME_ALONE.match(line)
    return found, alone is not None and redactor.is_secret_name(alone["name"], query=True)


def _report(number: int, found: list[str]) -> Iterator[tuple[int, str]]:
    """Each secret once: one holding another found on the same line is reported as the shorter."""
    distinct = [secret for secret in dict.fromkeys(found) if secret and PLACEHOLDER not in secret]
    for secret in distinct:
        if not any(secret != other and other in secret for other in distinct):
            yield number, secret


def _scan_cassette_line(
    redactor: Redactor, line: str, number: int, calls: dict[Any, _Call], unsearched: Unsearched
) -> list[str]:
    try:
        obj = json.loads(line)
    except ValueError:
        return []
    if not isinstance(obj, dict):
        return []
    kind = obj.get("type")
    found, obj = _header_secrets(redactor, obj, calls)
    found += scan_name(redactor, obj["test"]) if isinstance(obj.get("test"), str) else []
    cleaned = redactor.redact_value(obj, response=kind in ("response", "event"))
    found += [before if isinstance(before, str) else json.dumps(before) for before in _removed(obj, cleaned)]
    found += _payload_secrets(redactor, obj, kind in ("response", "event"), number, unsearched)
    if kind == "event":
        _collect_event(obj, number, calls.setdefault(obj.get("call_index"), _Call()))
    return found


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
    redactor: Redactor, obj: dict[str, Any], calls: dict[Any, _Call]
) -> tuple[list[str], dict[str, Any]]:
    """The secrets in a line's headers (a response's content-encodings noted), and the line without them."""
    pairs = _header_pairs(obj.get("headers"))
    if pairs is None:
        return [], obj
    found = [v for (_, v), (_, r) in zip(pairs, redactor.redact_headers(pairs), strict=True) if v != r]
    if obj.get("type") == "response":
        calls.setdefault(obj.get("call_index"), _Call()).encodings = content_encodings(pairs)
    return found, {key: value for key, value in obj.items() if key != "headers"}


def _header_pairs(headers: Any) -> list[tuple[str, str]] | None:
    if not (isinstance(headers, list) and all(isinstance(p, list) and len(p) == 2 for p in headers)):
        return None
    return [(str(name), str(value)) for name, value in headers]


def _payload_secrets(
    redactor: Redactor, obj: dict[str, Any], response: bool, number: int, unsearched: Unsearched
) -> list[str]:
    body = obj.get("body")
    found: list[str] = []
    for encoded in (obj.get("base64"), body.get("base64") if isinstance(body, dict) else None):
        if isinstance(encoded, str) and (data := _decoded_payload(encoded, number, unsearched)) is not None:
            found += scan_text(redactor, data.decode("utf-8", "surrogateescape"), response)
    return found


def _collect_event(obj: dict[str, Any], number: int, call: _Call) -> None:
    call.first_line = call.first_line or number
    if isinstance(obj.get("text"), str):
        call.payload += obj["text"].encode("utf-8", "surrogateescape")
    elif isinstance(obj.get("base64"), str):
        try:
            call.payload += base64.b64decode(obj["base64"])
        except (binascii.Error, ValueError):
            pass


def _stream_secrets(redactor: Redactor, calls: dict[Any, _Call], unsearched: Unsearched) -> Iterator[tuple[int, str]]:
    for call in calls.values():
        body = _decoded(bytes(call.payload), call.encodings, call.first_line, unsearched)
        if body is not None:
            yield from _report(call.first_line, _scan_stream(redactor, body))


def _scan_stream(redactor: Redactor, body: bytes) -> list[str]:
    if redact_body(body, redactor) == body:
        return []
    found = []
    text = body.decode("utf-8", "surrogateescape")
    for line in text.splitlines():
        found += scan_text(redactor, line, response=True)
    for pieces in delta_channels(body).values():
        found += scan_text(redactor, "".join(value for _, _, value in pieces), response=True)
    return found
