"""Cassette files: reading one (whole, lazily or as an outline, always from a regular file and never
blocking on anything else), and writing one line at a time into a file that replaces the old one only when
the recording is complete."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import re
import stat
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from . import _parse_cache
from ._core.format._format import (
    Cassette,
    RecordedCall,
    encode_line,
    load_held,
    load_outline,
    load_streaming,
    merge_shared,
    without_owners,
)
from ._exceptions import CassetteError
from ._test_ids import recorded_owner
from ._write_paths import RefusedWrite, sync_folder, write_target

if TYPE_CHECKING:  # imported by the steps of writing (or verify) that use them: reading a cassette loads none
    from ._core.engine._call_recording import OlderCassette
    from ._core.engine._quiet import QuietComparison
    from ._core.format._format import Finding
    from ._core.rules._redaction import Redactor

__all__ = [
    "CassetteWriter",
    "cassette_target",
    "check_cassette",
    "drop_owners",
    "file_start",
    "holds_calls_of",
    "is_shared",
    "not_a_cassette",
    "older_cassette",
    "read_cassette",
    "read_outline",
    "remove_stale_partials",
]


# Above this size a cassette's chunks stay in the file until replayed: memory stays flat for long streams.
LAZY_LOAD_BYTES = 32 * 1024 * 1024
BLOCK_BYTES = 1024 * 1024  # what a streaming reader reads at a time
# What a cassette held in memory is read in: under malloc's threshold for a mapping of its own (128 KiB), so
# that each block reuses the memory of the one before, with no page faults.
HELD_BLOCK_BYTES = 64 * 1024

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
            name, None, "no such cassette", "record it first, with RecordingTransport or in mode 'record'"
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


def _blocks(descriptor: int, size: int = 0) -> Iterator[bytes]:
    """The file's blocks, of ``size`` bytes (default ``BLOCK_BYTES``)."""
    size = size or BLOCK_BYTES
    while block := os.read(descriptor, size):
        yield block


def _read_all(descriptor: int, size: int) -> bytes:
    """The whole file, in one read when its size is what fstat said (joining blocks copies it all again)."""
    first = os.read(descriptor, size + 1)
    if not first:
        return first
    rest = list(_blocks(descriptor))
    return b"".join([first, *rest]) if rest else first


def read_cassette(path: str | os.PathLike[str], *, lazy: bool | None = None, cache: bool = False) -> Cassette:
    """The cassette at ``path``, every line validated. Its chunks are held in memory, or (``lazy``, by
    default for files over LAZY_LOAD_BYTES) read from the file when they are replayed. ``cache``: a cassette
    held in memory is taken from the parse cache when an entry for its exact bytes is there, and put there
    after it is parsed (see ``_parse_cache``)."""
    # Parsing allocates many small containers and nothing cyclic: the cycle collector would only rescan
    # the growing heap again and again (it tripled the load time of a 10,000-call cassette).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read(os.fspath(path), lazy, cache)
    finally:
        if collecting:
            gc.enable()


def _read(name: str, lazy: bool | None, cache: bool = False) -> Cassette:
    descriptor, size = _open_regular(name)
    if lazy or (lazy is None and size > LAZY_LOAD_BYTES):
        try:
            return load_streaming(name, _blocks(descriptor), _CassetteFile(descriptor))
        except OSError as exc:
            raise CassetteError(name, None, f"can't be read: {exc.strerror}") from None
    cached = cache and size >= _parse_cache.MIN_BYTES and _parse_cache.enabled()
    try:
        if not cached:  # block by block: the whole file is never held beside what is kept of it
            return load_held(name, _blocks(descriptor, HELD_BLOCK_BYTES), _Pread(descriptor))
        data = _read_all(descriptor, size)  # the parse cache's key is the file's exact bytes
    except OSError as exc:
        raise CassetteError(name, None, f"can't be read: {exc.strerror}") from None
    finally:
        os.close(descriptor)
    return _parse_cache.load_or_parse(data, name)


def read_outline(path: str | os.PathLike[str]) -> Cassette:
    """The cassette validated line by line with bounded memory, keeping calls but no chunks (for listing)."""
    name = os.fspath(path)
    descriptor, _ = _open_regular(name)
    try:
        return load_outline(name, _blocks(descriptor), _Pread(descriptor))
    except OSError as exc:
        raise CassetteError(name, None, f"can't be read: {exc.strerror}") from None
    finally:
        os.close(descriptor)


def older_cassette(path: str | os.PathLike[str], owner: str = "") -> OlderCassette | None:
    """What the cassette at ``path`` answered (read as an outline, bounded memory), or None when there is
    none or it does not read: a recording then replaces it whatever it holds. ``owner``: a shared cassette,
    of which a recording replaces that test's calls alone: those calls, numbered from 0 (None when it has
    none)."""
    try:
        calls = read_outline(path).calls
    except CassetteError:
        return None
    if owner:
        calls = _calls_owned(calls, owner)
        if not calls:
            return None
    statuses = {call.index: call.status for call in calls}
    from ._core.engine._call_recording import OlderCassette

    return OlderCassette(statuses, bool(calls) and all(call.outcome == "complete" for call in calls))


def _calls_owned(calls: Sequence[RecordedCall], owner: str) -> list[RecordedCall]:
    """A shared cassette's calls of one test (recorded under its id, or the older id ``_test_ids`` knows),
    numbered from 0."""
    owner = recorded_owner((call.owner for call in calls), owner)
    owned = [call for call in calls if call.owner == owner]
    return [dataclasses.replace(call, index=index) for index, call in enumerate(owned)]


def check_cassette(path: str | os.PathLike[str]) -> Iterator[Finding]:
    """What ``verify`` reports about one file, read block by block (see ``_core._format.problems``)."""
    from ._core.format._format import Finding, problems

    name = os.fspath(path)
    try:
        descriptor, _ = _open_regular(name)
    except CassetteError as error:
        yield Finding(error.path, error.line, error.problem, error.fix)
        return
    try:
        yield from problems(name, _blocks(descriptor), _Pread(descriptor))
    except OSError as exc:
        yield Finding(name, None, f"can't be read: {exc.strerror}")
    finally:
        os.close(descriptor)


class _Pread:
    """A file read at offsets, through a descriptor its caller closes."""

    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor

    def read(self, start: int, end: int) -> bytes:
        return os.pread(self.descriptor, end - start, start)


class _CassetteFile:
    """An open cassette file read at offsets; closed when the cassette is garbage-collected."""

    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor
        weakref.finalize(self, os.close, descriptor)

    def read(self, start: int, end: int) -> bytes:
        return os.pread(self.descriptor, end - start, start)


if sys.platform != "win32":
    import fcntl

    LOCKS_PARTIALS = True

    def _take_lock(descriptor: int) -> bool:
        """Whether the exclusive lock on the open file was free (and is now ours, until every descriptor of
        this open file is closed). flock locks the file itself: it holds across processes, PID namespaces
        (containers sharing a volume) and, on NFS, clients."""
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

else:  # pragma: no cover - Windows: no flock; a file open in another process can't be removed there
    LOCKS_PARTIALS = False

    def _take_lock(descriptor: int) -> bool:
        return True


def _new_partial(target: Path) -> tuple[int, Path, int]:
    """A new private temporary file beside ``target`` (mode 0600), locked: (descriptor to write, path, the
    descriptor that holds the lock). It is created under a name cleanup ignores (``.new``), locked, then
    renamed to ``.partial``: a cleanup never sees one of ours before it is locked."""
    descriptor, created = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".new", dir=target.parent)
    try:
        os.fchmod(descriptor, 0o600)
        holder = os.dup(descriptor)
        _take_lock(holder)
        temporary = Path(created[: -len(".new")] + ".partial")
        os.rename(created, temporary)
    except BaseException:
        os.close(descriptor)
        Path(created).unlink(missing_ok=True)
        raise
    return descriptor, temporary, holder


def cassette_target(path: str | os.PathLike[str]) -> Path:
    """The file a cassette at ``path`` is written to: the path resolved, a symlink written through only to a
    cassette and never out of the project (``_write_paths.write_target``); else a CassetteError naming the
    path and where it leads."""
    try:
        return write_target(path, replaces=not_a_cassette)
    except RefusedWrite as refused:
        raise CassetteError(os.fspath(path), None, refused.problem, refused.fix) from None


class CassetteWriter:
    """Appends whole lines to a private temporary file (mode 0600) beside the cassette, and on ``commit``
    syncs it to disk and moves it over the cassette (over a symlink's target, by ``cassette_target``'s rule;
    the link is kept). A cassette that existed keeps its file mode (a new one is 0600).

    The temporary file is named ``.<cassette name>.<pid>.<random>.partial`` and locked (``flock``) for as
    long as the writer lives. A crash leaves it readable up to its last complete line and never touches an
    older cassette; the next recording of that cassette removes such files once nobody holds their lock
    (``remove_stale_partials``). A failed write (disk full, quota, I/O error) does not raise: the writer
    removes its file, keeps the error in ``failure`` and ignores what follows, and ``commit`` then raises a
    CassetteError naming the cassette and the OS error. In a forked child (``after_fork``), the writer's
    copy writes nothing, removes nothing and commits nothing: the file is its parent's.
    """

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any]) -> None:
        self.path = Path(path)
        self.target = cassette_target(self.path)  # a symlinked cassette is replaced at its target
        self.target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_partials(self.target)
        descriptor, self.temporary, holder = _new_partial(self.target)
        self._held = [holder]  # descriptors holding the locks of our temporary files, closed once they're gone
        self.pid = os.getpid()
        self._file = os.fdopen(descriptor, "wb", buffering=1 << 16)
        self._lock = threading.Lock()
        self.closed = False
        self.failure: OSError | None = None
        self._read_back = False  # the strict parser read the temporary file whole as it is moved into place
        self.write(header)

    @property
    def forked(self) -> bool:
        return os.getpid() != self.pid

    def after_fork(self) -> None:
        """In a forked child: point the inherited descriptors at /dev/null, so that nothing the child's copy
        holds (a buffer not yet flushed, flushed when the child exits) reaches the parent's file, and drop
        the child's share of the lock."""
        if self.closed:
            return
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._file.fileno())
            finally:
                os.close(null)
        except (OSError, ValueError):
            pass  # a file already closed in the parent: nothing of it is left here to flush
        for holder in self._held:
            try:
                os.close(holder)
            except OSError:
                pass
        self._held = []
        self.closed = True

    def write(self, obj: dict[str, Any], *, flush: bool = False) -> None:
        """One whole line, from its line object (see ``_core._format``)."""
        self.write_lines(encode_line(obj), flush)

    def write_lines(self, lines: bytes, flush: bool = False) -> None:
        """Whole lines already encoded, each with its newline. Lines are buffered and reach the file in
        order; ``flush`` at a call's end."""
        if self.forked:
            return
        with self._lock:
            if self.closed:
                return
            try:
                self._file.write(lines)
                if flush:
                    self._file.flush()
            except OSError as error:
                self._fail(error)

    def _fail(self, error: OSError) -> None:
        self.failure = error
        self._discard()

    def _discard(self) -> None:
        self.closed = True
        try:
            self._file.close()
        except OSError:
            pass  # the buffer that could not be written is dropped with the file
        self.temporary.unlink(missing_ok=True)
        self._release()

    def _release(self) -> None:
        """Close the descriptors that hold our temporary files' locks (their files are gone or moved)."""
        for holder in self._held:
            os.close(holder)
        self._held = []

    def abandon(self) -> None:
        """Drop the recording: the temporary file goes, the cassette stays as it was."""
        if self.forked:
            return
        with self._lock:
            if not self.closed:
                self._discard()

    def commit(
        self, quiet: QuietComparison | None = None, final_pass: Redactor | None = None, *, owner: str = ""
    ) -> bool:
        """Sync the new cassette to disk, check that it reads back (the strict parser, line by line, with
        bounded memory: a file that doesn't is removed and raises a CassetteError naming its line, and the
        old cassette stays), move it over the old one, sync the folder (once). With ``quiet``,
        the calls that are the same as the old cassette's keep their old lines byte for byte, and when every
        call is the same the old file is left as it was (see ``_core._quiet``). Returns whether the
        cassette was replaced. ``final_pass``: the cassette's redactor, whose learned values leave every
        line first (``Redactor.final_pass``), also those written before a value was learned. ``owner``: the
        cassette is shared by several tests, and this recording holds ``owner``'s calls alone; they replace
        that test's calls in the cassette and the others' stay (``_merged_shared``), all under a lock on the
        cassette's folder, so that pytest-xdist's workers merge one after another."""
        with _folder_lock(self.target.parent) if owner else contextlib.nullcontext():
            return self._commit(quiet, final_pass, owner)

    def _commit(self, quiet: QuietComparison | None, final_pass: Redactor | None, owner: str) -> bool:
        replaced = False
        if self.forked:
            raise CassetteError(str(self.path), None, "is being recorded by the parent of this forked process")
        with self._lock:
            if not self.closed:
                try:
                    self._file.flush()
                    if final_pass is not None:
                        self._final_pass(final_pass)
                    if owner and not self._merged_shared(owner):
                        quiet = None  # the old cassette had calls of no owner: its lines must not come back
                    final = self._quieted(quiet) if quiet is not None else self.temporary
                    if final is None:
                        self._discard()  # the cassette already holds these calls
                    else:
                        if final == self.temporary:
                            os.fsync(self._file.fileno())
                        self._file.close()
                        self.closed = True
                        if final != self.temporary:
                            self.temporary.unlink(missing_ok=True)
                            self.temporary = final
                        unreadable = self._unreadable()
                        if unreadable is not None:
                            self._discard()
                            raise CassetteError(
                                str(self.path),
                                unreadable.line,
                                f"was not saved: the file it would have become can't be read back "
                                f"({unreadable.problem}); the older cassette, if any, is unchanged",
                                "this is a bug in vcr_transport: please report it with the line named here",
                            )
                        _keep_mode(self.target, self.temporary)
                        os.replace(self.temporary, self.target)
                        self._release()
                        replaced = True
                        sync_folder(self.target.parent)
                except OSError as error:
                    self._fail(error)
            failure = self.failure
        if failure is not None:
            raise CassetteError(
                str(self.path),
                None,
                f"was not saved: writing the recording failed ({failure.strerror or failure}); "
                "the older cassette, if any, is unchanged",
                "free disk space or fix the folder's permissions, then record again",
            )
        return replaced

    def _unreadable(self) -> CassetteError | None:
        """Why the file to move into place doesn't read back (``_unreadable``); None, unread, when the quiet
        comparison has just read it whole as it is."""
        return None if self._read_back else _unreadable(self.temporary)

    def _merged_shared(self, owner: str) -> bool:
        """Make the temporary file the shared cassette with this recording (``owner``'s calls) merged in
        (``_core._format.merge_shared``). An old cassette that is missing or can't be read is replaced.
        Returns whether every call of the old cassette named its owner (a quiet re-record may then keep
        its lines)."""
        old = _read_whole(self.target)
        owned = old is None or all(call.owner for call in old.calls)
        data = old.data if old is not None else None
        earlier = recorded_owner((call.owner for call in old.calls), owner) if old is not None else owner
        if data is not None and earlier != owner:  # the test's calls under the id an older version wrote
            data = without_owners(data, {earlier})
        merged = merge_shared(data, self.temporary.read_bytes(), owner)
        self._replace_temporary(lambda out: out.write(merged))
        return owned

    def _final_pass(self, redactor: Redactor) -> None:
        """Rewrite the temporary file without the values learned after their lines were written, when it
        holds any (searched by blocks, overlapping by the longest form)."""
        overlap = redactor.longest_learned
        if not overlap:
            return
        tail = b""
        found = False
        for block in _file_blocks(self.temporary):
            if redactor.holds_learned(tail + block):
                found = True
                break
            tail = block[-overlap:]
        if not found:
            return

        def rewrite(out: BinaryIO) -> None:
            with self.temporary.open("rb") as lines:
                out.writelines(map(redactor.final_pass, lines))

        self._replace_temporary(rewrite)

    def _quieted(self, quiet: QuietComparison) -> Path | None:
        """The file to move over the cassette: the recording as written, or a copy of it holding the old
        lines of the calls that are the same; None when every call is the same. An old cassette that is
        missing or can't be read whole is simply replaced."""
        name = str(self.target)
        try:
            descriptor, _ = _open_regular(name)
        except CassetteError:
            return self.temporary
        old_file = _CassetteFile(descriptor)
        try:
            old = quiet.prints(name, _blocks(descriptor), old=True)
            new = quiet.prints(str(self.temporary), _file_blocks(self.temporary), old=False) if old else None
            if old is None or new is None:
                return self.temporary
            plan = quiet.plan(old, new)
            if not plan.kept:
                self._read_back = True  # ``prints`` has just read it whole with the strict parser
                return self.temporary
        except (CassetteError, OSError):  # the old cassette can't be read: the recording replaces it
            return self.temporary
        if plan.unchanged:
            return None
        from ._core.engine._quiet import merged_lines

        return self._written_partial(
            lambda out: out.writelines(merged_lines(str(self.temporary), _file_blocks(self.temporary), plan, old_file))
        )

    def _replace_temporary(self, write: Callable[[BinaryIO], object]) -> None:
        """The temporary file replaced by a new one that ``write`` fills (``_written_partial``)."""
        rewritten = self._written_partial(write)
        self.temporary.unlink(missing_ok=True)
        self.temporary = rewritten

    def _written_partial(self, write: Callable[[BinaryIO], object]) -> Path:
        """A new partial file beside the target (``_new_partial``; locked, so that another worker's cleanup
        keeps it), filled by ``write`` and synced; removed when writing it fails."""
        descriptor, partial, holder = _new_partial(self.target)
        self._held.append(holder)
        try:
            with os.fdopen(descriptor, "wb", buffering=1 << 16) as out:
                write(out)
                out.flush()
                os.fsync(out.fileno())
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        return partial


class _Whole(NamedTuple):
    data: bytes
    calls: list[Any]


def _read_whole(path: Path) -> _Whole | None:
    """A cassette's bytes and calls, or None when it is missing or can't be read."""
    try:
        descriptor, size = _open_regular(str(path))
    except CassetteError:
        return None
    try:
        data = _read_all(descriptor, size)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    try:
        return _Whole(data, Cassette.parse(data, str(path)).calls)
    except CassetteError:
        return None


def _unreadable(path: Path) -> CassetteError | None:
    """Why the file at ``path`` is not a cassette the strict parser reads, or None when it is one."""
    try:
        load_streaming(str(path), _file_blocks(path), None)
    except CassetteError as error:
        return error
    return None


def _file_blocks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as file:
        while block := file.read(BLOCK_BYTES):
            yield block


def _keep_mode(target: Path, temporary: Path) -> None:
    """A cassette recorded again keeps its file's mode (0644 stays 0644); a new one stays 0600."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return
    os.chmod(temporary, mode)


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists under another user
    return False


def _unheld(candidate: Path) -> int | None:
    """A descriptor holding the lock of ``candidate`` when nobody else held it (its writer is gone), else None."""
    try:
        descriptor = os.open(candidate, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    if stat.S_ISREG(os.fstat(descriptor).st_mode) and _take_lock(descriptor):
        return descriptor
    os.close(descriptor)
    return None


def remove_stale_partials(cassette: Path) -> list[Path]:
    """Remove the temporary files of ``cassette`` left by writers that died: ours only
    (``.<name>.<pid>.<random>.partial``) and only when nobody holds their lock (``flock``: a live writer
    holds it, in this process or another, in any PID namespace that shares the folder). Where there is no
    flock (Windows), a file goes when process ``pid`` no longer exists here (and Windows refuses to remove a
    file another process has open). Files of an older naming without a pid, and files a writer died before
    it locked (``.new``), go when nobody holds them and they are older than this process. Returns what was
    removed."""
    pattern = re.compile(rf"\.{re.escape(cassette.name)}\.(?:(\d+)\.)?[A-Za-z0-9_]+\.(partial|new)")
    removed: list[Path] = []
    try:
        names = os.listdir(cassette.parent)
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if match is None:
            continue
        candidate = cassette.parent / name
        try:
            if match.group(1) is None or match.group(2) == "new":
                if candidate.stat().st_mtime >= _PROCESS_STARTED:
                    continue
            elif not LOCKS_PARTIALS:  # pragma: no cover - Windows
                pid = int(match.group(1))
                if pid == os.getpid() or not _process_gone(pid):
                    continue
            held = _unheld(candidate)
            if held is None:
                continue
            try:
                candidate.unlink()
            finally:
                os.close(held)
            removed.append(candidate)
        except OSError:
            continue  # another process removed it first, or it isn't ours to remove
    return removed


_PROCESS_STARTED = time.time()


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on a folder (``flock`` on its descriptor), held while a shared cassette in it is
    merged and moved into place: other processes merging into a cassette of that folder wait. No lock
    where ``fcntl`` is missing (Windows): there, run the tests of a shared cassette in one process."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing the descriptor releases the lock


# A cassette header is short; a longer first line is not one.
HEADER_READ_LIMIT = 64 * 1024


def drop_owners(path: Path, owners: Collection[str]) -> int:
    """Remove the calls of the tests ``owners`` from the shared cassette at ``path`` (``prune``: tests the
    suite no longer has), the others kept byte for byte but for their call numbers; how many calls went.
    Under the lock of the cassette's folder that shared merges take, through a private temporary file that
    must read back before it is moved over the cassette (keeping its file mode). Nothing is written when
    no call goes, or when none would stay (``prune`` deletes an unused cassette whole)."""
    target = cassette_target(path)  # a symlinked cassette: its target is rewritten, the link kept
    with _folder_lock(target.parent):
        old = _read_whole(target)
        if old is None:
            raise CassetteError(str(path), None, "can't be read whole", "run vcr-transport verify on it")
        dropped = sum(call.owner in owners for call in old.calls)
        if not dropped or dropped == len(old.calls):
            return 0
        descriptor, temporary, holder = _new_partial(target)
        try:
            try:
                with os.fdopen(descriptor, "wb") as out:
                    out.write(without_owners(old.data, owners))
                    out.flush()
                    os.fsync(out.fileno())
                unreadable = _unreadable(temporary)
                if unreadable is not None:  # pragma: no cover - without_owners keeps whole calls
                    raise unreadable
                _keep_mode(target, temporary)
                os.replace(temporary, target)
            except BaseException:
                temporary.unlink(missing_ok=True)
                raise
        finally:
            os.close(holder)
        sync_folder(target.parent)
        return dropped


def holds_calls_of(path: Path, owner: str) -> bool:
    """Whether the cassette at ``path`` exists for test ``owner`` of a shared cassette: it holds calls of
    that owner, or of no owner at all (not yet shared). One that can't be read counts as there (replay then
    says why)."""
    if not path.exists():
        return False
    try:
        calls = read_outline(path).calls
    except CassetteError:
        return True
    owner = recorded_owner((call.owner for call in calls), owner)
    return not any(call.owner for call in calls) or any(call.owner == owner for call in calls)


def is_shared(path: Path) -> bool:
    """Whether the cassette at ``path`` says it is shared by several tests (``"shared": true`` in its
    header, written by ``merge_shared``). Reads at most the first line, never blocks; False for a file that
    isn't there or isn't a cassette."""
    from ._core.format._format import header_problem

    first = _first_line(path)
    if isinstance(first, str) or (b"shared" not in first and b"\\" not in first):
        return False  # no such key, even escaped: not parsed (each test's cassette asks)
    if header_problem(first) is not None:
        return False
    return json.loads(first).get("shared") is True  # one open and one read


def not_a_cassette(path: Path) -> str | None:
    """Why a path is not a vcr_transport cassette, or None when it is one: a regular file (not a symlink,
    FIFO or device) whose first line is a cassette header. Reads at most the first line, never blocks."""
    from ._core.format._format import header_problem

    first = _first_line(path)
    return first if isinstance(first, str) else header_problem(first)


def _first_line(path: Path) -> bytes | str:
    """The first line of a regular file (at most HEADER_READ_LIMIT bytes; never blocks), or why it can't
    be read."""
    return _read_regular(path, lambda file: file.readline(HEADER_READ_LIMIT))


def file_start(path: str | os.PathLike[str], limit: int) -> bytes | str:
    """The first ``limit`` bytes of a regular file (never blocks, follows no link), or why it can't be read: what
    a view shows of a file that is no cassette."""
    return _read_regular(Path(path), lambda file: file.read(limit))


def _read_regular(path: Path, read: Callable[[BinaryIO], bytes]) -> bytes | str:
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return "not a regular file"
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        return "no such file"
    except OSError as error:
        return f"can't be opened: {error.strerror}"
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return "not a regular file"
        return read(file)
