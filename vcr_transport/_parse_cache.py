"""The parse cache: cassettes the strict parser accepted, kept in a binary form that loads several times faster.

An entry is found by the cassette's real path and used only for the exact bytes it was made from (their
XXH3-128 hash, computed on every open: 0.3 ms for 7 MB, where SHA-256 took 4.7 ms), so an edited file
(whatever its mtime says) is parsed again. Only what the parser accepted is ever written. An entry is used
only when everything it carries matches: the cache layout, the cassette format version, the vcr_transport
version, the content hash and size, and an XXH3-64 checksum of its own payload (a damaged entry is ignored,
then overwritten). XXH3 is not a cryptographic hash; it need not be one: an entry only ever holds a cassette
the parser accepted, so bytes forged to collide with an entry could only replay that accepted cassette.
Anything else is a miss, and a miss is never an error: the cassette is parsed as if there were no cache.

Where: ``$VCR_TRANSPORT_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/vcr_transport/parse``, else
``~/.cache/vcr_transport/parse``. The environment is read when a cassette is opened, never at import.
Turn it off with the option ``parse_cache=False`` (also ``parse_cache = false`` in ``[tool.vcr_transport]``),
or ``VCR_TRANSPORT_PARSE_CACHE=0``. Entries are written to a temporary file and renamed into place (safe under
parallel workers); entries unused for ``STALE_DAYS`` are removed when a process writes its first entry.

An entry is written the second time the same bytes are opened (a small ``.seen`` marker holds the key of the
first), right after the parse: a cassette opened once, as every cassette of a fresh CI run is, costs the
cache its hash and the marker only, never the marshalling of an entry (``benchmarks.cold_cache``,
``benchmarks.instructions``).

The layout of an entry is the fields of ``RecordedCall`` (their names are part of the layout stamp): a field
added to the record changes the layout, and older entries are simply not used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import marshal
import operator
import os
import threading
import time
from pathlib import Path
from typing import Any

from ._core.engine._options import CACHE_DIR_VARIABLE, PARSE_CACHE_VARIABLE
from ._core.format._format import FORMAT_VERSION, Cassette, RecordedCall, held_body, recorded_call

__all__ = ["MIN_BYTES", "STALE_DAYS", "cache_folder", "enabled", "entry_path", "load_or_parse", "store"]

# Smaller cassettes parse in well under a millisecond: caching them would only fill the folder.
MIN_BYTES = 256 * 1024
STALE_DAYS = 30
_MAGIC = "vcr_transport parse cache"
# What an entry holds of a call: every field of the record but its lazy chunks (a cached cassette is held in
# memory), in the record's order, which is also the order the record takes them in; the request body as the call
# holds it (the bytes of its JSON).
_FIELDS = tuple(f.name for f in dataclasses.fields(RecordedCall))[:-1]
assert dataclasses.fields(RecordedCall)[-1].name == "lazy", "the lazy chunks are the record's last field"
assert _FIELDS[4] == "body", "recorded_call finds the request body fifth"
_LAYOUT = (4, _FIELDS)  # of an entry; bump the number when the hashes or the packing change
_before_body = operator.attrgetter(*_FIELDS[:4])
_after_body = operator.attrgetter(*_FIELDS[5:])


def _row(call: RecordedCall) -> tuple[Any, ...]:
    return (*_before_body(call), held_body(call), *_after_body(call))


def enabled() -> bool:
    """False when ``VCR_TRANSPORT_PARSE_CACHE`` is 0, false, no or off."""
    return os.environ.get(PARSE_CACHE_VARIABLE, "1").strip().lower() not in ("0", "false", "no", "off")


def cache_folder() -> Path:
    """Where entries live (see the module docstring)."""
    explicit = os.environ.get(CACHE_DIR_VARIABLE)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vcr_transport" / "parse"


def _content_key(data: bytes) -> str:
    import xxhash  # lazily: only the parse cache needs it

    return xxhash.xxh3_128_hexdigest(data)


def _checksum(payload: bytes | memoryview) -> int:
    import xxhash

    return xxhash.xxh3_64_intdigest(payload)


def _version() -> str:
    from ._version import __version__

    return __version__


def _stamp(key: str, size: int, checksum: int) -> tuple[Any, ...]:
    return (_MAGIC, _LAYOUT, FORMAT_VERSION, _version(), key, size, checksum)


def entry_path(path: str) -> Path:
    """Where the entry for the cassette at ``path`` is looked for. The name only locates it: what makes an
    entry usable is the content hash inside it."""
    where = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return cache_folder() / f"{where}.marshal"


def load_or_parse(data: bytes, path: str) -> Cassette:
    """The cassette ``data`` (the bytes of the file at ``path``): from its cache entry when one matches these
    exact bytes, else parsed (raising what the parser raises) and then cached."""
    key = _content_key(data)
    entry = entry_path(path)
    found = _load(entry, len(data), path)
    if found is not None and found[0] == key:
        with contextlib.suppress(OSError):
            os.utime(entry)  # used: not stale
        return found[1]
    cassette = Cassette.parse(data, path)  # a cassette the parser refuses raises here: nothing is cached
    if _seen_before(entry, key):
        store(entry, key, len(data), cassette)
    return cassette


def _seen_before(entry: Path, key: str) -> bool:
    """Whether these bytes were opened before (their key is in the entry's marker), else mark them seen. The
    entry is written at the second open: a cassette opened once, as every cassette of a fresh CI run is,
    costs the cache only its hash and this marker, never the entry's marshalling."""
    marker = entry.with_suffix(".seen")
    try:
        if marker.read_text(encoding="ascii") == key:
            return True
    except (OSError, ValueError):
        pass
    with contextlib.suppress(OSError):
        try:
            marker.write_text(key, encoding="ascii")
        except FileNotFoundError:  # the first marker: the folder is made then
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(key, encoding="ascii")
    return False


def _load(entry: Path, size: int, path: str) -> tuple[str, Cassette] | None:
    """(the content hash the entry was made from, its cassette), or None when there is no usable entry."""
    try:
        blob = entry.read_bytes()
    except OSError:
        return None
    try:
        length = int.from_bytes(blob[:4], "big")
        stamp = marshal.loads(blob[4 : 4 + length])
        payload = memoryview(blob)[4 + length :]
        if stamp != _stamp(stamp[4], size, _checksum(payload)):
            return None
        header, rows = marshal.loads(payload)
        calls = [recorded_call(*row) for row in rows]
        if not isinstance(header, dict):
            return None
        return stamp[4], Cassette(path, header, calls)
    except Exception:  # a damaged entry of any shape is a miss, never an error
        return None


def store(entry: Path, key: str, size: int, cassette: Cassette) -> bool:
    """Write the entry for a cassette the parser accepted (held in memory, not lazily) from bytes whose
    content key (``_content_key``) is ``key``. False when it couldn't be written (a read-only folder, a value
    marshal can't hold): the cache is only ever a shortcut."""
    try:
        payload = marshal.dumps((cassette.header, [_row(call) for call in cassette.calls]))
    except ValueError:
        return False
    stamp = marshal.dumps(_stamp(key, size, _checksum(payload)))
    temporary = entry.with_name(f".{entry.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        try:
            file = open(temporary, "wb")  # noqa: SIM115 - closed by the with below
        except FileNotFoundError:  # the first entry: the folder is made then
            entry.parent.mkdir(parents=True, exist_ok=True)
            file = open(temporary, "wb")  # noqa: SIM115
        with file:
            file.write(len(stamp).to_bytes(4, "big"))
            file.write(stamp)
            file.write(payload)
        os.replace(temporary, entry)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        return False
    _remove_stale_once(entry.parent)
    return True


_swept: set[Path] = set()  # folders whose stale entries this process has removed


def _remove_stale_once(folder: Path) -> None:
    if folder in _swept:
        return
    _swept.add(folder)
    oldest = time.time() - STALE_DAYS * 86400
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.name.endswith((".marshal", ".seen", ".tmp")) and entry.stat().st_mtime < oldest:
                    os.unlink(entry.path)
