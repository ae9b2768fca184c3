"""Cassette files: reading one (whole, lazily or as an outline, always from a regular file and never
blocking on anything else), and writing one line at a time into a file that replaces the old one only when
the recording is complete."""

from __future__ import annotations

import gc
import os
import stat
import tempfile
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._core._format import Cassette, Finding, dumps_line, load_streaming, problems
from ._exceptions import CassetteError

__all__ = ["CassetteWriter", "check_cassette", "read_cassette", "read_outline"]


# Above this size a cassette's chunks stay in the file until replayed: memory stays flat for long streams.
LAZY_LOAD_BYTES = 32 * 1024 * 1024
BLOCK_BYTES = 1024 * 1024  # what a streaming reader reads at a time

_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _open_regular(name: str) -> tuple[int, int]:
    """(descriptor, size) of a regular file. Anything else is refused before a byte is read: the file is
    opened without blocking (a FIFO with no writer would wait forever) and checked with fstat."""
    try:
        descriptor = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise CassetteError(
            name, None, "no such cassette", "record it first: run with VCR_TRANSPORT_MODE=record (or mode='record')"
        ) from None
    except OSError as exc:
        raise CassetteError(name, None, f"can't be read: {exc.strerror}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            kind = _KINDS.get(stat.S_IFMT(status.st_mode), "not a regular file")
            raise CassetteError(name, None, f"is {kind}, not a cassette file", "give the path of a .jsonl cassette")
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, status.st_size


def _blocks(descriptor: int) -> Iterator[bytes]:
    while block := os.read(descriptor, BLOCK_BYTES):
        yield block


def read_cassette(path: str | os.PathLike[str], *, lazy: bool | None = None) -> Cassette:
    """The cassette at ``path``, every line validated. Its chunks are held in memory, or (``lazy``, by
    default for files over LAZY_LOAD_BYTES) read from the file when they are replayed."""
    # Parsing allocates many small containers and nothing cyclic: the cycle collector would only rescan
    # the growing heap again and again (it tripled the load time of a 10,000-call cassette).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read(os.fspath(path), lazy)
    finally:
        if collecting:
            gc.enable()


def _read(name: str, lazy: bool | None) -> Cassette:
    descriptor, size = _open_regular(name)
    if lazy or (lazy is None and size > LAZY_LOAD_BYTES):
        try:
            return load_streaming(name, _blocks(descriptor), _CassetteFile(descriptor))
        except OSError as exc:
            raise CassetteError(name, None, f"can't be read: {exc.strerror}") from None
    try:
        data = b"".join(_blocks(descriptor))
    except OSError as exc:
        raise CassetteError(name, None, f"can't be read: {exc.strerror}") from None
    finally:
        os.close(descriptor)
    return Cassette.parse(data, name)


def open_lazily(path: str) -> Cassette:
    """Validate every line of a cassette now, but read event chunks only when they are replayed."""
    return read_cassette(path, lazy=True)


def read_outline(path: str | os.PathLike[str]) -> Cassette:
    """The cassette validated line by line with bounded memory, keeping calls but no chunks (for listing)."""
    name = os.fspath(path)
    descriptor, _ = _open_regular(name)
    try:
        return load_streaming(name, _blocks(descriptor), None)
    except OSError as exc:
        raise CassetteError(name, None, f"can't be read: {exc.strerror}") from None
    finally:
        os.close(descriptor)


def check_cassette(path: str | os.PathLike[str]) -> Iterator[Finding]:
    """What ``verify`` reports about one file, read block by block (see ``_core._format.problems``)."""
    name = os.fspath(path)
    try:
        descriptor, _ = _open_regular(name)
    except CassetteError as error:
        yield Finding(error.path, error.line, error.problem, error.fix)
        return
    try:
        yield from problems(name, _blocks(descriptor))
    except OSError as exc:
        yield Finding(name, None, f"can't be read: {exc.strerror}")
    finally:
        os.close(descriptor)


class _CassetteFile:
    """An open cassette file read at offsets; closed when the cassette is garbage-collected."""

    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor
        weakref.finalize(self, os.close, descriptor)

    def read(self, start: int, end: int) -> bytes:
        return os.pread(self.descriptor, end - start, start)


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
