"""The reader: ``Parser``, the one reader of a file's lines, and the model it reads them into (``Cassette``,
``RecordedCall``, ``LazyChunks``). A line is decoded on its own, and checked where it stands."""

from __future__ import annotations

import dataclasses
import io
import itertools
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, overload

import msgspec

from ..._exceptions import CassetteError
from .._memo import lazy_pattern
from ._schema import (
    FORMAT_VERSION,
    HELD_LINE_BYTES,
    INTENDED,
    JSON_DECODER,
    LINE_DECODER,
    LINE_KINDS,
    MAX_LINE_BYTES,
    OUTCOMES,
    RERECORD,
    WEBSOCKET_SCHEMES,
    CallEndLine,
    EventLine,
    HeaderLine,
    Line,
    MessageLine,
    RecordedMessage,
    RequestLine,
    ResponseLine,
    StoredBody,
    json_problem,
)

__all__ = [
    "foreign_file",
    "load_held",
    "load_outline",
    "load_streaming",
    "overlap_groups",
    "Cassette",
    "ChunkSource",
    "LazyChunks",
    "Parser",
    "RecordedCall",
    "held_body",
    "recorded_call",
]


def overlap_groups(calls: Sequence[RecordedCall]) -> list[int]:
    """The concurrency group of each call, by index: calls that overlapped in time while recording share
    one. A call whose request line comes before the call_end line of an earlier call started before that
    call ended; the recorder numbers calls as their requests start and writes each line as it happens, so
    the line order says so, with no field for it. A group is a run of consecutive calls (every call between
    two overlapping calls started after the first and before the second, so before the first ended)."""
    groups: list[int] = []
    group = -1
    latest_end = 0  # the last call_end line of the calls so far
    for call in calls:
        if call.line > latest_end or group < 0:
            group += 1
        groups.append(group)
        latest_end = max(latest_end, call.end_line)
    return groups


# --- the model -------------------------------------------------------------------------------------------


class ChunkSource(Protocol):
    """Where a lazily loaded cassette's lines are read from, by byte offsets (the storage shell)."""

    def read(self, start: int, end: int) -> bytes: ...


@dataclass(slots=True)
class RecordedCall:
    index: int
    method: str
    url: str
    request_headers: list[tuple[str, str]]
    body: StoredBody
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    http_version: str = "HTTP/1.1"
    chunks: list[bytes] = field(default_factory=list)
    offsets: list[float] = field(default_factory=list)
    size: int = 0
    outcome: str | None = None
    error_class: str = ""
    error_message: str = ""
    early_stop: str = ""  # "intended": the recording test stopped it on purpose (closed_early only)
    line: int = 0
    event_total: int = 0
    end_line: int = 0  # the line of its call_end: what calls overlapped while recording (``overlap_groups``)
    owner: str = ""  # the test that made it, in a shared cassette ("": none said)
    messages: list[RecordedMessage] = field(default_factory=list)  # a WebSocket session's, in order
    close: tuple[int | None, str, str | None] | None = None  # a WebSocket session's (code, reason, by)
    lazy: LazyChunks | None = None  # last: every field before it is plain data (the parse cache keeps them)

    @property
    def complete(self) -> bool:
        return self.outcome == "complete"

    @property
    def websocket(self) -> bool:
        """Whether the call is a WebSocket session (its request is the opening handshake)."""
        return self.url.partition(":")[0] in WEBSOCKET_SCHEMES

    @property
    def stopped_on_purpose(self) -> bool:
        """Closed early by the recording test, which said it meant to (``"early_stop": "intended"``)."""
        return self.outcome == "closed_early" and self.early_stop == INTENDED

    @property
    def events(self) -> Sequence[bytes]:
        """The recorded chunks in order: held in memory, or read from the file as they are replayed."""
        return self.lazy if self.lazy is not None else self.chunks


_BODY_SLOT: Any = vars(RecordedCall)["body"]  # our record's slot for its request body (its member descriptor)


class _HeldBodyCall(RecordedCall):
    """A call whose JSON request body is held as its bytes (a long conversation's requests hold all of it, over
    and over, and decoded it is several times their size): read again each time it is asked for, so that a
    replay's memory stays near the file's size."""

    __slots__ = ()

    @property
    def body(self) -> StoredBody:
        held = _BODY_SLOT.__get__(self)
        return {"json": JSON_DECODER.decode(held)} if held.__class__ is bytes else held

    @body.setter
    def body(self, value: StoredBody | bytes) -> None:
        _BODY_SLOT.__set__(self, value)


def held_body(call: RecordedCall) -> StoredBody | bytes:
    """A call's request body as the call holds it: the bytes of its JSON, for one that holds them."""
    body: StoredBody | bytes = _BODY_SLOT.__get__(call)
    return body


def recorded_call(*fields: Any) -> RecordedCall:
    """A call from its fields in ``RecordedCall``'s order (a parse cache entry's row): a request body given as the
    bytes of its JSON is held as them."""
    return (_HeldBodyCall if fields[4].__class__ is bytes else RecordedCall)(*fields)


class LazyChunks(Sequence[bytes]):
    """The chunks of one call of a large cassette, read from the (already validated) file when asked for, so
    replaying a long stream doesn't hold it in memory."""

    def __init__(self, source: ChunkSource) -> None:
        self._source = source
        self.spans: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self.spans)

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start, end = self.spans[index]
        line = LINE_DECODER.decode(self._source.read(start, end))
        assert isinstance(line, EventLine), "a span always points at a validated event line"
        return line.chunk()


@dataclass
class Cassette:
    path: str
    header: dict[str, Any]
    calls: list[RecordedCall]
    # A part of the file (``owned_by``): the call index in the file of each of ``calls``; None: the whole file.
    origin: list[int] | None = None

    @classmethod
    def parse(cls, data: bytes, path: str) -> Cassette:
        """Read a whole cassette held in memory. Refuses anything it can't replay faithfully, naming the line."""
        return Parser(path, "memory").read([data])

    def owned_by(self, owner: str) -> Cassette:
        """The calls ``owner`` made, numbered 0, 1, 2... in file order (``origin`` says their numbers in the
        file): what one test of a shared cassette replays. When no call names ``owner`` (a cassette not
        shared, written before owners were, or recorded by other tests for this one to replay), it is the
        whole cassette."""
        if not any(call.owner == owner for call in self.calls):
            return self
        origin = [call.index for call in self.calls if call.owner == owner]
        calls = [dataclasses.replace(self.calls[old], index=new) for new, old in enumerate(origin)]
        return Cassette(self.path, self.header, calls, origin)


# --- reading ---------------------------------------------------------------------------------------------


def _too_long(path: str, number: int) -> CassetteError:
    return CassetteError(
        path,
        number,
        f"line {number} is longer than {MAX_LINE_BYTES:,} bytes, the most a reader accepts",
        "the file is damaged or not a cassette: restore it from version control, or re-record it",
    )


_CONFLICT_MARKERS = (b"<<<<<<<", b">>>>>>>", b"|||||||")


def foreign_file(path: str, number: int, line: bytes) -> CassetteError | None:
    """The CassetteError for a line that shows the file is something else than a damaged cassette, with the
    fix that gets the cassette back: a byte order mark, a git merge-conflict marker, a Git LFS pointer."""
    if number == 1 and line.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return CassetteError(
            path,
            1,
            "the file starts with a byte order mark (BOM); a cassette is UTF-8 without one",
            "remove the BOM (an editor saved the file as 'UTF-8 with BOM'): save it as plain UTF-8, or "
            f"`sed -i '1s/^\\xEF\\xBB\\xBF//' {path}`",
        )
    if line.startswith(_CONFLICT_MARKERS) or line.rstrip(b"\r\n") == b"=======":
        marker = line.rstrip(b"\r\n")[:60].decode("utf-8", "replace")
        return CassetteError(
            path,
            number,
            f"line {number} is a git merge-conflict marker ({marker!r}): the file holds both sides of a conflict",
            f"resolve the conflict: keep one side whole (`git checkout --ours {path}` or `--theirs`) and "
            "`git add` it, or re-record the cassette; its lines don't merge one by one",
        )
    if number == 1 and line.startswith(b"version https://git-lfs.github.com/spec/"):
        return CassetteError(
            path,
            1,
            "the file is a Git LFS pointer, not the cassette it stands for",
            "run `git lfs pull` to fetch the cassette (`git lfs install` first, if Git LFS is new here)",
        )
    return None


def load_streaming(path: str, blocks: Iterable[bytes], source: ChunkSource | None) -> Cassette:
    """A cassette read block by block. With a ``source`` the chunks are read from it when replayed; without,
    only the outline is kept (calls, statuses, outcomes, no chunks): every line is validated either way."""
    return Parser(path, "lazy" if source is not None else "outline", source).read(blocks, source)


def load_held(path: str, blocks: Iterable[bytes], file: ChunkSource | None = None) -> Cassette:
    """A cassette read block by block and held in memory, chunks and all: no copy of the whole file beside what
    is kept (a conversation's request bodies are most of its file). ``file``: as for ``load_outline``."""
    return Parser(path, "memory").read(blocks, file)


def load_outline(path: str, blocks: Iterable[bytes], file: ChunkSource | None = None) -> Cassette:
    """The outline of a cassette read block by block (calls, statuses, outcomes, no chunks). ``file``: the
    file the blocks come from, read again at a line longer than HELD_LINE_BYTES (see ``Parser.runs``)."""
    return Parser(path, "outline").read(blocks, file)


BATCH_BYTES = 256 * 1024  # the lines ``Parser.take`` decodes and checks at a time (some hundreds)
_LINE_ERRORS = (msgspec.MsgspecError, RecursionError, ValueError, CassetteError)

_FIELD_AT = lazy_pattern(r"^(.*?)(?: - at `\$(.*)`)?$", re.DOTALL)


class _Cutter:
    """``Parser.runs``: runs of whole lines cut out of consecutive blocks, the start of a line that goes on
    in the next block held (or, past HELD_LINE_BYTES with a ``file``, measured) until its end."""

    def __init__(self, parser: Parser, file: ChunkSource | None) -> None:
        self.parser = parser
        self.file = file
        self.parts: list[bytes] = []  # the start of a line that continues in the next block
        self.pending = 0  # its length
        self.offset = 0  # where the next block starts in the file
        self.measured = -1  # where the line being measured (not held) starts, or -1

    def cut(self, block: bytes) -> Iterator[bytes]:
        self.offset += len(block)
        if self.measured >= 0 and self.file is not None:
            first = block.find(b"\n")
            self._grow(first if first >= 0 else len(block))
            if first < 0:
                return
            yield self.file.read(self.measured, self.measured + self.pending + 1)
            self.measured, self.pending = -1, 0
            block = block[first + 1 :]
        cut = block.rfind(b"\n") + 1
        yield from self._runs(block, cut)
        self._hold(block[cut:])

    def _runs(self, block: bytes, cut: int) -> Iterator[bytes]:
        """The whole lines of ``block`` (those before ``cut``): the end of the line held joined to it alone (not
        the whole block again), then the rest (the block itself when it is whole lines, not a copy)."""
        start = 0
        if cut and self.parts:
            start = block.find(b"\n") + 1
            yield self._whole(block[:start])
        if cut > start:
            yield self._whole(block if (start, cut) == (0, len(block)) else block[start:cut])

    def _hold(self, tail: bytes) -> None:
        """The start of a line that goes on in the next block: held, or past HELD_LINE_BYTES (with a file)
        measured."""
        if tail:
            self.parts.append(tail)
            self._grow(len(tail))
            if self.file is not None and self.pending > HELD_LINE_BYTES:
                self.measured, self.parts = self.offset - self.pending, []

    def _grow(self, length: int) -> None:
        """The line held or measured is ``length`` bytes longer: raise once it is too long."""
        self.pending += length
        if self.pending > MAX_LINE_BYTES:
            raise _too_long(self.parser.path, self.parser.number + 1)

    def _whole(self, run: bytes) -> bytes:
        """``run`` (whole lines) after the start of a line held from the blocks before."""
        if self.parts:
            run = b"".join([*self.parts, run])
            self.parts, self.pending = [], 0
        if len(run) > MAX_LINE_BYTES:
            for offset, line in enumerate(run.split(b"\n")):
                if len(line) > MAX_LINE_BYTES:
                    raise _too_long(self.parser.path, self.parser.number + 1 + offset)
        return run


class Parser:
    """Reads a cassette line by line, through the schema and the call structure. Modes: ``memory`` keeps
    every chunk, ``lazy`` keeps where each event line is (read from ``source`` when replayed), ``outline``
    keeps no chunk (for checking, listing and comparing).

    ``take`` reads every line of a load: each line is decoded on its own (by msgspec, in C, no Python loop
    over the lines), the lines checked where they stand (a run of one call's events at once), and the
    first problem is raised as a CassetteError naming its line (or, given ``problems``,
    kept there, and the lines after it only decoded)."""

    def __init__(
        self, path: str, mode: Literal["memory", "lazy", "outline"] = "outline", source: ChunkSource | None = None
    ) -> None:
        self.path = path
        self.mode = mode
        self.source = source
        self.header: dict[str, Any] | None = None
        self.calls: dict[int, RecordedCall] = {}
        self.streaming: dict[int, RecordedCall] = {}  # calls with a response line and no call_end yet
        self.number = 0  # the lines taken so far
        self.position = 0  # the byte offset of the next line
        self.checking = True  # False once ``take`` has kept a problem: the structure is no longer checked

    def read(self, blocks: Iterable[bytes], file: ChunkSource | None = None) -> Cassette:
        """The cassette in ``blocks`` (consecutive blocks of the file's bytes), every line checked. ``file``:
        where the blocks come from, for a long line (see ``runs``)."""
        for run in self.runs(blocks, file):
            self.take(run)
        return self.finish()

    def fail(self, line: int | None, problem: str, fix: str = "") -> CassetteError:
        return CassetteError(self.path, line, problem, fix)

    def runs(self, blocks: Iterable[bytes], file: ChunkSource | None = None) -> Iterator[bytes]:
        """Runs of whole lines (each with its newline) of a file given as consecutive blocks of bytes, for
        ``take``, which numbers their lines on from those taken so far. A block that ends with a newline is
        a run as it is (not copied: a cassette held in memory is one block). Raises for a line longer than
        ``MAX_LINE_BYTES`` as soon as it gets that long, and for a last line cut off before its newline.
        With ``file`` (what the blocks are read from), a line is held only up to HELD_LINE_BYTES: past that
        it is measured as it goes by, and read again from ``file`` when it ends within MAX_LINE_BYTES; so a
        file with one endless line costs HELD_LINE_BYTES of memory."""
        cutter = _Cutter(self, file)
        for block in blocks:
            yield from cutter.cut(block)
        if cutter.pending:
            raise self.fail(
                self.number + 1, "the last line is cut off (no newline): the recording was interrupted", RERECORD
            )

    def take(
        self,
        run: bytes,
        objects: list[tuple[Line, bytes]] | None = None,
        problems: list[CassetteError] | None = None,
    ) -> None:
        """Decode and check the file's next lines, ``run`` (whole lines, as ``runs`` gives them), appending
        each decoded object with its line to ``objects`` when it is given. Each line is decoded on its own,
        by msgspec (one C call per line, none of them in a Python loop), then checked where it stands: the
        lines other than events one by one, each run of one call's events at once (``_events``). The first
        problem is raised, or (given ``problems``) kept there, and the lines after it are only decoded. The
        lines are taken a batch at a time (``BATCH_BYTES``), so that what is worked on stays in the CPU's
        cache."""
        batches = io.BytesIO(run)
        while lines := batches.readlines(BATCH_BYTES):  # each line with its newline (JSON's whitespace)
            self._take(lines, objects, problems)

    def _take(
        self, lines: list[bytes], objects: list[tuple[Line, bytes]] | None, problems: list[CassetteError] | None
    ) -> None:
        first = self.number + 1
        objs, failed = self._decode(lines, first, problems)
        if self.checking:
            try:
                self._check(objs[: failed[0][0] if failed else len(objs)], lines, first)
            except CassetteError as problem:
                number = problem.line or first
                self._report(number, lines[number - first], problem, problems)
        for index, error in failed:
            self._report(first + index, lines[index], error, problems)
        if objects is not None:
            objects.extend((obj, line) for obj, line in zip(objs, lines, strict=True) if obj is not None)
        self.number += len(lines)
        self.position += sum(map(len, lines))

    def _decode(
        self, lines: list[bytes], first: int, problems: list[CassetteError] | None
    ) -> tuple[list[Line | None], list[tuple[int, Exception]]]:
        """Each of ``lines`` decoded through the schema (line 1 as the header), and the lines that don't decode
        with their errors: the first (the lines after it are left out), or all, given ``problems``."""
        objs: list[Line | None] = []
        failed: list[tuple[int, Exception]] = []
        if first == 1 and lines:
            try:
                objs.append(self._decode_header(lines[0]))
            except _LINE_ERRORS as error:
                failed.append((0, error))
                objs.append(None)
        while len(objs) < len(lines) and (problems is not None or not failed):
            try:
                objs.extend(map(LINE_DECODER.decode, itertools.islice(lines, len(objs), None)))
            except _LINE_ERRORS as error:  # ``extend`` keeps the objects before the line that failed
                failed.append((len(objs), error))
                objs.append(None)
        return objs, failed

    def _report(self, number: int, line: bytes, error: Exception, problems: list[CassetteError] | None) -> None:
        """Raise the problem of line ``number``, or keep it in ``problems`` and stop checking the structure."""
        foreign = foreign_file(self.path, number, line)
        if foreign is not None:  # the whole file is something else: this is all there is to say
            raise foreign from None
        problem = self._problem(number, line, error)
        if problems is None:
            raise problem from None
        problems.append(problem)
        self.checking = False

    def _check(self, objs: Sequence[Line | None], lines: list[bytes], first: int) -> None:
        """Check decoded lines where they stand: each line but an event by its handler, the events between
        them a run at a time. ``lines``: theirs, for the spans of a lazy cassette's events."""
        handlers = _HANDLERS
        starts = self._starts(lines) if self.mode == "lazy" else None
        kinds = map(type, objs)
        previous = 0
        for index in itertools.compress(itertools.count(), map(operator.is_not, kinds, itertools.repeat(EventLine))):
            if index > previous:
                self._events(objs, previous, index, first, starts)
            obj = objs[index]
            try:
                handlers[obj.__class__](self, first + index, obj)
            except msgspec.MsgspecError as error:  # a request body's JSON, read once the line is checked
                raise self._problem(first + index, lines[index], error) from None
            previous = index + 1
        if len(objs) > previous:
            self._events(objs, previous, len(objs), first, starts)

    def _starts(self, lines: list[bytes]) -> list[int]:
        """Where each of ``lines`` starts in the file, and (last) where the line after them does."""
        return list(itertools.accumulate(map(len, lines), initial=self.position))

    def _events(self, objs: Sequence[Any], start: int, end: int, first: int, starts: list[int] | None) -> None:
        """Check the event lines ``objs[start:end]`` and add their chunks to their calls: one run of
        consecutive events of a call at a time (a stream recorded alone is one run), read as the columns of
        their fields (``astuple`` and ``zip``: C loops, where one attribute read per event costs more)."""
        run = objs[start:end]
        columns: list[tuple[Any, ...]] = list(zip(*map(msgspec.structs.astuple, run), strict=True))
        calls = columns[0]
        if calls.count(calls[0]) == len(calls):
            self._event_run(run, columns, start, first, starts)
            return
        cuts = [0, *itertools.compress(itertools.count(1), map(operator.ne, calls, calls[1:])), len(calls)]
        for low, high in itertools.pairwise(cuts):
            self._event_run(run[low:high], [column[low:high] for column in columns], start + low, first, starts)

    def _event_run(
        self, run: Sequence[EventLine], columns: list[tuple[Any, ...]], start: int, first: int, starts: list[int] | None
    ) -> None:
        """Consecutive events of one call, at ``objs[start]`` on, and the columns of their fields (call_index,
        event_index, t, text, base64): checked at once, and the first that is out of place found line by line
        only when one is."""
        _, indexes, offsets, texts, encoded = columns
        call = self.streaming.get(run[0].call_index)
        total = -1 if call is None else call.event_total
        if call is None or indexes != tuple(range(total, total + len(run))):
            self._misplaced(run, first + start)
        assert call is not None  # ``_misplaced`` raised otherwise
        if not texts.count(msgspec.UNSET) and encoded.count(msgspec.UNSET) == len(run):
            chunks = list(map(str.encode, texts))
        else:
            chunks = self._chunks(run, first + start)
        call.event_total += len(run)
        call.size += sum(map(len, chunks))
        if self.mode == "outline":
            return
        if starts is not None:  # each line's span, its newline left out
            ends = map((-1).__add__, starts[start + 1 : start + len(run) + 1])
            call.lazy.spans.extend(zip(starts[start : start + len(run)], ends, strict=True))  # type: ignore[union-attr]
        else:
            call.chunks += chunks
        call.offsets += offsets

    def _chunks(self, run: Sequence[EventLine], number: int) -> list[bytes]:
        """The chunks of events from line ``number`` on, some of them base64 (or malformed)."""
        chunks: list[bytes] = []
        try:
            chunks.extend(map(EventLine.chunk, run))
        except ValueError as error:  # ``extend`` kept the chunks before the event that failed
            raise self._problem(number + len(chunks), b"", error) from None
        return chunks

    def _misplaced(self, run: Sequence[EventLine], number: int) -> None:
        """Raise for the first of events from line ``number`` on that is out of place (none of them is in
        place when its call is not streaming)."""
        call = self.streaming.get(run[0].call_index)
        expected = -1 if call is None else call.event_total
        for offset, obj in enumerate(run):
            if call is None or obj.event_index != expected + offset:
                raise self._misplaced_event(number + offset, obj, expected + offset)

    def _problem(self, number: int, line: bytes, error: Exception) -> CassetteError:
        """The CassetteError for what went wrong on line ``number``."""
        if isinstance(error, CassetteError):
            return error
        if isinstance(error, RecursionError):
            return self.fail(number, "unreadable line: JSON nested too deeply", RERECORD)
        if isinstance(error, msgspec.ValidationError):
            return self._invalid(number, line, str(error))
        if isinstance(error, msgspec.DecodeError):
            return self.fail(number, f"unreadable line: not valid JSON ({error})", RERECORD)
        return self.fail(number, f"malformed event line: {error}", RERECORD)  # EventLine.chunk

    def _decode_header(self, line: bytes) -> HeaderLine:
        obj = JSON_DECODER.decode(line)
        if not isinstance(obj, dict) or obj.get("type") != "header":
            raise self.fail(1, "line 1 is not a header line", "the file is not a vcr_transport cassette")
        version = obj.get("format_version")
        if version.__class__ is not int or version != FORMAT_VERSION:
            raise self.fail(
                1,
                f"format_version {version!r} is not supported; this vcr_transport reads version {FORMAT_VERSION}",
                "re-record the cassette, or use the vcr_transport version that wrote it",
            )
        self.header = obj
        return HeaderLine(format_version=version)

    def _untyped(self, number: int, line: bytes, message: str) -> Any:
        """The line read without the schema, or the CassetteError of a number past what a reader holds (in a
        request body, read once the line is checked)."""
        try:
            return JSON_DECODER.decode(line)
        except msgspec.ValidationError:
            return self.fail(
                number,
                f"unreadable line: {message.partition(' - at ')[0].lower()} (a number of over 4,300 digits, "
                "or past 1e308)",
                "no recording writes such a number: the file is damaged or hostile; re-record the cassette",
            )
        except (msgspec.MsgspecError, RecursionError):  # pragma: no cover - the typed decode read it
            return None

    def _invalid(self, number: int, line: bytes, message: str) -> CassetteError:
        obj = self._untyped(number, line, message)
        if isinstance(obj, CassetteError):
            return obj
        kind = obj.get("type") if isinstance(obj, dict) else None
        if not isinstance(obj, dict):
            return self.fail(number, f"expected a JSON object, found {type(obj).__name__}", RERECORD)
        if kind not in ("header", "request", "response", "event", "call_end", "message"):
            return self.fail(
                number,
                f"unknown line type {kind!r}",
                f"expected one of {LINE_KINDS}; a newer vcr_transport may have written it",
            )
        if kind == "call_end" and message.endswith("at `$.outcome`") and obj.get("outcome") not in OUTCOMES:
            return self.fail(
                number, f"unknown outcome {obj.get('outcome')!r}; expected one of {', '.join(OUTCOMES)}", RERECORD
            )
        match = _FIELD_AT.match(message)
        problem, at = (match.group(1), match.group(2)) if match else (message, None)
        where = f" field {at.lstrip('.')!r}" if at else ""
        return self.fail(
            number, f"malformed {kind} line:{where} {problem}", "re-record the cassette, or correct the value by hand"
        )

    def _misplaced_event(self, number: int, obj: EventLine, expected: int) -> CassetteError:
        call = self.calls.get(obj.call_index)
        if call is None or call.outcome is not None:
            return self._unknown_call(number, obj.call_index)
        if call.status is None:
            return self.fail(number, f"event for call {obj.call_index} before its response line")
        return self.fail(number, f"event_index {obj.event_index!r} of call {call.index}, expected {expected}")

    def _unknown_call(self, number: int, index: int) -> CassetteError:
        if index not in self.calls:
            return self.fail(number, f"call {index!r} has no request line before this line")
        return self.fail(number, f"line for call {index} after its call_end")

    def _call(self, number: int, index: int) -> RecordedCall:
        call = self.calls.get(index)
        if call is None or call.outcome is not None:
            raise self._unknown_call(number, index)
        return call

    def _line_header(self, number: int, obj: HeaderLine) -> None:
        if number == 1:
            return
        raise self.fail(number, "a second header line: only line 1 may be a header", RERECORD)

    def _line_request(self, number: int, obj: RequestLine) -> None:
        index = obj.call_index
        if index in self.calls:
            raise self.fail(number, f"call_index {index!r} is repeated")
        body: StoredBody | bytes = None
        if obj.body is not None:
            try:
                body = obj.body.stored()
            except msgspec.ValidationError as error:  # JSON the reader can't hold: a number out of range
                raise msgspec.ValidationError(json_problem(error)) from None  # invalid UTF-8: a DecodeError
            if isinstance(obj.body.json, msgspec.Raw):
                body = bytes(obj.body.json)  # checked; held as its bytes, read again when asked for
        self.calls[index] = (RecordedCall if body.__class__ is not bytes else _HeldBodyCall)(
            index=index,
            method=obj.method,
            url=obj.url,
            request_headers=obj.headers,
            body=body,  # type: ignore[arg-type]
            owner=obj.test if isinstance(obj.test, str) else "",
            line=number,
            lazy=LazyChunks(self.source) if self.source is not None else None,
        )

    def _line_response(self, number: int, obj: ResponseLine) -> None:
        call = self._call(number, obj.call_index)
        if call.status is not None:
            raise self.fail(number, f"a second response line for call {call.index}")
        call.status = obj.status
        self.streaming[call.index] = call
        call.response_headers = obj.headers
        call.http_version = obj.http_version

    def _line_message(self, number: int, obj: MessageLine) -> None:
        call = self._call(number, obj.call_index)
        if not call.websocket or call.status != 101:
            raise self.fail(
                number,
                f"a message line for call {call.index}, which is not an open WebSocket session (no 101 response)",
            )
        if obj.message_index != len(call.messages):
            raise self.fail(
                number, f"message_index {obj.message_index!r} of call {call.index}, expected {len(call.messages)}"
            )
        call.messages.append((obj.from_, obj.data(), obj.t))

    def _line_call_end(self, number: int, obj: CallEndLine) -> None:
        call = self._call(number, obj.call_index)
        if obj.close is not None:
            if not call.websocket:
                raise self.fail(number, f"call {call.index} is not a WebSocket session: its call_end has no 'close'")
            call.close = (obj.close.code, obj.close.reason, obj.close.by)
        if obj.event_count != call.event_total:
            raise self.fail(
                number,
                f"call {call.index} ends with event_count {obj.event_count!r} but has {call.event_total} events",
            )
        if obj.outcome != "error" and call.status is None:
            raise self.fail(number, f"call {call.index} ends {obj.outcome!r} without a response line")
        if obj.error is not None:
            call.error_class = obj.error.class_
            call.error_message = obj.error.message
        call.outcome = obj.outcome
        if obj.early_stop is not msgspec.UNSET:
            call.early_stop = obj.early_stop
        call.end_line = number
        self.streaming.pop(call.index, None)

    def finish(self) -> Cassette:
        if self.header is None:
            raise self.fail(1, "the file is empty: no header line", "record the cassette again")
        for call in self.calls.values():
            if call.outcome is None:
                raise self.fail(
                    call.line, f"call {call.index} has no call_end line: the recording was interrupted", RERECORD
                )
        indexes = sorted(self.calls)
        for position, index in enumerate(indexes):
            if index != position:
                raise self.fail(
                    self.calls[index].line, f"call_index {index}: call {position} is missing (calls are 0, 1, 2...)"
                )
        return Cassette(self.path, self.header, [self.calls[i] for i in indexes])


# Each line kind but an event, checked where it stands: functions of the class, not bound methods kept by each
# parser (a parser holding its own bound methods is a reference cycle: the collector, not the last reference,
# would free every cassette it read).
_HANDLERS: dict[type, Callable[[Parser, int, Any], None]] = {
    HeaderLine: Parser._line_header,
    RequestLine: Parser._line_request,
    ResponseLine: Parser._line_response,
    CallEndLine: Parser._line_call_end,
    MessageLine: Parser._line_message,
}
