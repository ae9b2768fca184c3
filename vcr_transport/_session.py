"""A cassette opened in a mode, and the mode-aware transports built on it."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from ._config import concrete_mode, find_pyproject, read_settings, resolve_mode
from ._core._redaction import Redactor
from ._exceptions import CassetteError, ReplayMismatch, UnplayedCallsError
from ._http import header_pairs, library_of
from ._lifecycle import propagating
from ._recording import AsyncRecordingTransport, CassetteRecorder, ClosingSides, RecordingTransport
from ._replay import ReplayTransport, answers_with_error_response, error_response

__all__ = ["CassetteSession", "ModeTransport", "async_transport", "open_session", "transport"]

REDACTION_OPTIONS = frozenset({"redact_names", "redact_patterns", "redact_with"})
REPLAY_OPTIONS = REDACTION_OPTIONS | {
    "ordered",
    "pace",
    "max_retry_after",
    "on_mismatch",
    "ignore_headers",
    "compare_headers",
    "ignore_fields",
    "keep_failures",
}
# Settings [tool.vcr_transport] may carry; lists there add to the ones given in code.
LIST_SETTINGS = ("redact_names", "redact_patterns", "ignore_headers", "compare_headers", "ignore_fields")


def merged_options(options: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(options) - REPLAY_OPTIONS
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(sorted(unknown))}; valid: {', '.join(sorted(REPLAY_OPTIONS))}")
    merged = dict(options)
    for name in LIST_SETTINGS:
        if name in settings:
            merged[name] = [*settings[name], *options.get(name, ())]
    return merged


class CassetteSession:
    """One cassette in one concrete mode (off, record, replay, record-on-miss). It answers a request for
    whatever inner transport the caller has, so one session can serve many clients."""

    def __init__(self, path: str | os.PathLike[str], mode: str, source: str, options: Mapping[str, Any]) -> None:
        self.path = Path(path)
        self.mode = mode
        self.source = source
        self.options = dict(options)
        self._lock = threading.Lock()
        self._replay: ReplayTransport | None = None
        self._recorder: CassetteRecorder | None = None
        self.diverged_at: int | None = None
        self.closed = False
        # Fail closed: a replay cassette that can't be read answers every request with its diagnostic.
        self.broken: CassetteError | None = None
        replay_options = {name: value for name, value in self.options.items() if name != "keep_failures"}
        try:
            if mode == "replay":
                self._replay = ReplayTransport(self.path, **replay_options)
            elif mode == "record-on-miss" and self.path.exists():
                self._replay = ReplayTransport(self.path, **{**replay_options, "on_mismatch": "raise"})
        except CassetteError as error:
            self.broken = error
        if mode == "record" or (mode == "record-on-miss" and self._replay is None and self.broken is None):
            self._recorder = self._new_recorder()

    def _new_recorder(self, kept_lines: Sequence[bytes] = (), first_index: int = 0) -> CassetteRecorder:
        redaction = {name: self.options[name] for name in REDACTION_OPTIONS if name in self.options}
        redactor = Redactor(
            redaction.get("redact_names", ()), redaction.get("redact_patterns", ()), redaction.get("redact_with", ())
        )
        keep_failures = bool(self.options.get("keep_failures", False))
        return CassetteRecorder(
            self.path, redactor, kept_lines=kept_lines, first_index=first_index, keep_failures=keep_failures
        )

    def _replaying(self) -> ReplayTransport | None:
        """The replay that answers now; None once recording (record mode, or record-on-miss after a miss)."""
        return self._replay if self._recorder is None else None

    def diverge(self, miss: ReplayMismatch) -> None:
        """record-on-miss: keep the calls before the miss byte for byte, record from the miss on."""
        with self._lock:
            if self._recorder is not None:
                return
            kept = [
                line
                for line in self.path.read_bytes().split(b"\n")[1:]
                if line and json.loads(line)["call_index"] < miss.call_index
            ]
            self.diverged_at = miss.call_index
            self._recorder = self._new_recorder(kept, miss.call_index)

    def _recorder_or_fail(self) -> CassetteRecorder:
        if self._recorder is None:  # pragma: no cover - every recording mode has one by now
            raise RuntimeError(f"cassette {self.path} is not recording")
        return self._recorder

    def _refuse(self, request: Any) -> Any:
        """The unreadable cassette's diagnostic, raised, or as an error response for anthropic."""
        assert self.broken is not None
        on_mismatch = self.options.get("on_mismatch", "auto")
        if answers_with_error_response(on_mismatch, header_pairs(request.headers)):
            return error_response(library_of(request), "cassette_error", self.broken)
        raise self.broken

    def handle(self, request: Any, inner: Any) -> Any:
        if self.mode == "off":
            return inner.handle_request(request)
        if self.broken is not None:
            return self._refuse(request)
        replay = self._replaying()
        if replay is not None:
            try:
                return replay.handle_request(request)
            except ReplayMismatch as miss:
                if self.mode == "replay":
                    raise
                self.diverge(miss)
        return RecordingTransport(inner, recorder=self._recorder_or_fail()).handle_request(request)

    async def handle_async(self, request: Any, inner: Any) -> Any:
        if self.mode == "off":
            return await inner.handle_async_request(request)
        if self.broken is not None:
            return self._refuse(request)
        replay = self._replaying()
        if replay is not None:
            try:
                return await replay.handle_async_request(request)
            except ReplayMismatch as miss:
                if self.mode == "replay":
                    raise
                self.diverge(miss)
        recording = AsyncRecordingTransport(inner, recorder=self._recorder_or_fail())
        return await recording.handle_async_request(request)

    @property
    def first_mismatch(self) -> ReplayMismatch | None:
        return self._replay.first_mismatch if self.mode == "replay" and self._replay else None

    def raise_if_broken(self) -> None:
        if self.broken is not None:
            raise self.broken

    def unplayed_calls(self) -> list[tuple[int, str, str]]:
        if self._replay is None or self._recorder is not None:
            return []
        return self._replay.unplayed_calls()

    def assert_all_played(self) -> None:
        unplayed = self.unplayed_calls()
        if unplayed:
            raise UnplayedCallsError(str(self.path), unplayed)

    def close(self, failure: BaseException | None = None) -> None:
        """Commit a recording, or drop it when ``failure`` (or an exception propagating now) ended its block."""
        self.closed = True
        if self._recorder is not None:
            self._recorder.close(failure if failure is not None else propagating())


def open_session(
    path: str | os.PathLike[str],
    mode: str | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    pytest_option: str | None = None,
) -> CassetteSession:
    """Resolve the mode (argument, pytest option, environment, pyproject, default) and open the cassette."""
    pyproject = find_pyproject()
    settings = read_settings(pyproject)
    resolved = resolve_mode(mode, pytest_option=pytest_option, pyproject=pyproject)
    concrete = concrete_mode(resolved.mode, Path(path))
    return CassetteSession(path, concrete, resolved.source, merged_options(options or {}, settings))


class ModeTransport:
    """A transport whose behaviour the resolved mode decides: pass-through, record, replay or
    record-on-miss. One object serves a sync and an async client (google-genai takes both); each side's
    inner transport is created when first needed, from ``library``."""

    def __init__(
        self, session: CassetteSession, library: ModuleType, *, inner: Any = None, async_inner: Any = None
    ) -> None:
        self.session = session
        self.library = library
        self._inner = inner
        self._async_inner = async_inner
        self._sides = ClosingSides(session.close)

    @property
    def inner(self) -> Any:
        if self._inner is None:
            self._inner = self.library.HTTPTransport()
        return self._inner

    @property
    def async_inner(self) -> Any:
        if self._async_inner is None:
            self._async_inner = self.library.AsyncHTTPTransport()
        return self._async_inner

    @property
    def mode(self) -> str:
        return self.session.mode

    @property
    def first_mismatch(self) -> ReplayMismatch | None:
        return self.session.first_mismatch

    def unplayed_calls(self) -> list[tuple[int, str, str]]:
        return self.session.unplayed_calls()

    def assert_all_played(self) -> None:
        self.session.assert_all_played()

    def handle_request(self, request: Any) -> Any:
        self._sides.use("sync")
        return self.session.handle(request, self.inner)

    async def handle_async_request(self, request: Any) -> Any:
        self._sides.use("async")
        return await self.session.handle_async(request, self.async_inner)

    def close(self) -> None:
        try:
            if self._inner is not None:
                self._inner.close()
        finally:
            self._sides.close("sync")

    async def aclose(self) -> None:
        try:
            if self._async_inner is not None:
                await self._async_inner.aclose()
        finally:
            self._sides.close("async")

    def __enter__(self) -> ModeTransport:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    async def __aenter__(self) -> ModeTransport:
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.aclose()


def _library(library: ModuleType | str | None) -> ModuleType:
    if isinstance(library, ModuleType):
        return library
    import importlib

    return importlib.import_module(library or "httpx2")


def transport(
    path: str | os.PathLike[str],
    *,
    mode: str | None = None,
    inner: Any = None,
    async_inner: Any = None,
    library: ModuleType | str | None = None,
    **options: Any,
) -> ModeTransport:
    """A transport for the resolved mode (argument, pytest option, VCR_TRANSPORT_MODE, pyproject, auto).

    ``inner`` defaults to ``HTTPTransport()`` of httpx2, or of httpx with ``library="httpx"``; the same
    object also serves async clients, through ``async_inner`` (default ``AsyncHTTPTransport()``). Options
    are those of ReplayTransport; the redaction options apply when recording too.
    """
    return ModeTransport(open_session(path, mode, options), _library(library), inner=inner, async_inner=async_inner)


def async_transport(
    path: str | os.PathLike[str],
    *,
    mode: str | None = None,
    inner: Any = None,
    sync_inner: Any = None,
    library: ModuleType | str | None = None,
    **options: Any,
) -> ModeTransport:
    """``transport`` for async clients: ``inner`` is the async transport (default ``AsyncHTTPTransport()``)."""
    return ModeTransport(open_session(path, mode, options), _library(library), inner=sync_inner, async_inner=inner)
