"""Cassette files: reading one whole, and writing one line at a time into a file that replaces the old one
only when the recording is complete."""

from __future__ import annotations

import gc
import os
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

from ._core._format import Cassette, _Parser, dumps_line
from ._exceptions import CassetteError

__all__ = ["CassetteWriter", "read_cassette"]


# Above this size a cassette's chunks stay in the file until replayed: memory stays flat for long streams.
LAZY_LOAD_BYTES = 32 * 1024 * 1024


def read_cassette(path: str | os.PathLike[str]) -> Cassette:
    # Parsing allocates many small containers and nothing cyclic: the cycle collector would only rescan
    # the growing heap again and again (it tripled the load time of a 10,000-call cassette).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read(os.fspath(path))
    finally:
        if collecting:
            gc.enable()


def _read(name: str) -> Cassette:
    try:
        if os.path.getsize(name) > LAZY_LOAD_BYTES:
            return open_lazily(name)
        data = Path(name).read_bytes()
    except FileNotFoundError:
        raise CassetteError(
            name, None, "no such cassette", "record it first: run with VCR_TRANSPORT_MODE=record (or mode='record')"
        ) from None
    except OSError as exc:
        raise CassetteError(name, None, f"can't be read: {exc.strerror}") from None
    return Cassette.parse(data, name)


class _CassetteFile:
    """An open cassette file read at offsets; closed when the cassette is garbage-collected."""

    def __init__(self, path: str) -> None:
        self.descriptor = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self.descriptor)

    def read(self, start: int, end: int) -> bytes:
        return os.pread(self.descriptor, end - start, start)


def open_lazily(path: str) -> Cassette:
    """Validate every line of a large cassette now, but read event chunks only when they are replayed."""
    parser = _Parser(path, lazy_source=_CassetteFile(path))
    position = 0
    with open(path, "rb") as file:
        for number, line in enumerate(file, start=1):
            if not line.endswith(b"\n"):
                raise parser.fail(
                    number,
                    "the last line is cut off (no newline): the recording was interrupted",
                    "re-record the cassette",
                )
            parser.span = (position, position + len(line) - 1)
            parser.feed(number, line[:-1])
            position += len(line)
    return parser.finish()


class CassetteWriter:
    """Appends whole lines to a private temporary file (mode 0600) and moves it over ``path`` on commit.

    Lines reach the file whole and in order (flushed at the end of each call), so a crash leaves a file
    readable up to its last complete line, and never touches an older cassette at ``path``.
    """

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".partial", dir=self.path.parent)
        os.fchmod(descriptor, 0o600)
        self.temporary = Path(temporary)
        self._file = os.fdopen(descriptor, "w", encoding="utf-8", newline="\n", buffering=1 << 16)
        self._lock = threading.Lock()
        self.closed = False
        self.write(header)

    def write(self, obj: dict[str, Any], *, flush: bool = False) -> None:
        """One whole line. Lines are buffered and reach the file in order; ``flush`` at a call's end."""
        line = dumps_line(obj)
        with self._lock:
            if self.closed:
                return
            self._file.write(line)
            if flush:
                self._file.flush()

    def write_raw(self, line: bytes) -> None:
        """A line kept from an older cassette, byte for byte."""
        self.write_line(line.decode("utf-8") + "\n")

    def write_line(self, line: str) -> None:
        """A line already serialized, with its newline."""
        with self._lock:
            if not self.closed:
                self._file.write(line)

    def commit(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._file.close()
            os.replace(self.temporary, self.path)
