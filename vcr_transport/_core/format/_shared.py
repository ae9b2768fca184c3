"""A cassette's lines copied whole: what record-on-miss keeps of an old cassette, and the cassette several tests
share (``merge_shared``, ``without_owners``). Lines of a file that was read successfully are copied byte for
byte but for their call numbers."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import Any

import msgspec

from ._encode import encode_line
from ._schema import (
    JSON_DECODER,
)

__all__ = [
    "line_place",
    "lines_before_call",
    "lines_of_calls",
    "merge_shared",
    "without_owners",
]


class _Place(msgspec.Struct):
    """What copying lines of a file already read needs to know of a line: its type and its call."""

    type: str = ""
    call_index: int = -1


_place_decoder = msgspec.json.Decoder(_Place)


class _Owner(msgspec.Struct):
    """What merging a shared cassette needs to know of a request line: its owner."""

    test: str = ""


_owner_decoder = msgspec.json.Decoder(_Owner)


def line_place(line: bytes) -> tuple[str, int]:
    """(type, call index) of a line of a cassette that was read successfully (-1: the header)."""
    place = _place_decoder.decode(line)
    return place.type, place.call_index


def lines_before_call(data: bytes, call_index: int) -> list[bytes]:
    """The raw lines (header excluded) of the calls before ``call_index``, in file order, byte for byte.
    ``data`` is a cassette that was read successfully."""
    return [line for line in data.split(b"\n")[1:] if line and 0 <= line_place(line)[1] < call_index]


def lines_of_calls(
    data: bytes, indexes: Iterable[int], open_calls: Iterable[int] = ()
) -> tuple[list[bytes], list[bytes]]:
    """What record-on-miss keeps of a cassette that was read successfully: the lines of the calls
    ``indexes`` (those this run replayed) in file order, numbered 0, 1, 2... in the order of their old
    numbers (a line whose number stays is kept byte for byte), and apart, the call_end lines of
    ``open_calls``: the recording writes them after its first new request line, so that the calls recorded
    next count as overlapping those (they ran concurrently with them), and replay again in any order among
    them."""
    renumber = {old: new for new, old in enumerate(sorted(set(indexes)))}
    held = frozenset(open_calls)
    kept: list[bytes] = []
    deferred: list[bytes] = []
    for line in data.split(b"\n")[1:]:
        if not line:
            continue
        kind, index = line_place(line)
        if index not in renumber:
            continue
        if renumber[index] != index:
            line = _renumbered(line, index, renumber[index])
        (deferred if kind == "call_end" and index in held else kept).append(line)
    return kept, deferred


def _renumbered(line: bytes, old: int, new: int) -> bytes:
    """A line with another call_index: the field as the encoder writes it (second, after the type) is
    replaced in place; a line written otherwise is encoded again."""
    written = b'","call_index":%d,' % old
    at = line.find(written)
    if 0 < at < 24:
        return line[:at] + b'","call_index":%d,' % new + line[at + len(written) :]
    obj = json.loads(line)
    obj["call_index"] = new
    return encode_line(obj).rstrip(b"\n")


def merge_shared(old: bytes | None, new: bytes, owner: str) -> bytes:
    """A cassette several tests share, after ``owner`` recorded ``new`` (a whole cassette holding its calls
    alone): the calls of ``old`` (a cassette that was read successfully, or None) that other tests own,
    byte for byte but for their call numbers, with ``owner``'s calls in the place its earlier calls held
    (else after the others), every call renumbered 0, 1, 2... in file order. Each of ``new``'s request lines
    gets ``"test": owner`` (added at its end when missing), and the header ``"shared": true``. Calls of
    ``old`` that name no owner (a cassette recorded before it was shared) are ``owner``'s earlier calls.
    Calls stay whole and in their order within each test, so their overlap (``overlap_groups``) is kept."""
    new_lines = [line for line in new.split(b"\n") if line]
    header = JSON_DECODER.decode(new_lines[0])
    header["shared"] = True
    blocks = _owner_blocks(old, owner) if old is not None else {}
    owned = [_with_owner(line, owner) if line_place(line)[0] == "request" else line for line in new_lines[1:]]
    blocks[owner] = owned  # in its earlier place, else last
    return _joined(header, blocks.values())


def without_owners(data: bytes, owners: Collection[str]) -> bytes:
    """A shared cassette (read successfully) without the calls of the tests ``owners``: the other calls byte
    for byte but for their call numbers, renumbered 0, 1, 2... in file order; the header as it was."""
    header = JSON_DECODER.decode(data.split(b"\n", 1)[0])
    blocks = _owner_blocks(data, "")
    return _joined(header, (block for who, block in blocks.items() if who not in owners))


def _owner_blocks(data: bytes, default: str) -> dict[str, list[bytes]]:
    """The lines of a cassette's calls (its header left out), by the test that owns them, the tests in the
    order they first come in the file; a call that names no owner is ``default``'s."""
    owners: dict[int, str] = {}
    blocks: dict[str, list[bytes]] = {}
    for line in data.split(b"\n")[1:]:
        if not line:
            continue
        kind, index = line_place(line)
        if kind == "request":
            owners[index] = _owner_decoder.decode(line).test or default
        blocks.setdefault(owners[index], []).append(line)
    return blocks


def _joined(header: dict[str, Any], blocks: Iterable[list[bytes]]) -> bytes:
    """``header`` and the lines of ``blocks`` in order, each call renumbered 0, 1, 2... in file order."""
    merged = [encode_line(header)]
    first = 0
    for block in blocks:
        numbers: dict[int, int] = {}
        for line in block:
            index = line_place(line)[1]
            if index not in numbers:
                numbers[index] = first + len(numbers)
            if numbers[index] != index:
                line = _renumbered(line, index, numbers[index])
            merged.append(line + b"\n")
        first += len(numbers)
    return b"".join(merged)


def _with_owner(line: bytes, owner: str) -> bytes:
    """A request line naming ``owner`` (``"test"`` added at its end when it names none)."""
    if _owner_decoder.decode(line).test == owner:
        return line
    obj = json.loads(line)
    obj["test"] = owner
    return encode_line(obj).rstrip(b"\n")
