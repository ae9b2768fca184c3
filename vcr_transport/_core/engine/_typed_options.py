"""The keyword options of each entry point, as TypedDicts: ``**options: Unpack[ReplayOptions]`` (PEP 692)
lets a type checker refuse an unknown option or a wrong value, and an IDE complete them.

Generated from the fields of ``Options`` by ``docs/_gen.py`` (``typed_options_module``): do not edit, run
``python docs/_gen.py``. ``tests/core/test_options.py`` checks that it is current.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypedDict

from ._faults import Fault
from ._modes import Mode

__all__ = [
    "BlockOptions",
    "EveryOption",
    "RecordingOptions",
    "ReplayOptions",
    "TransportOptions",
]


class RecordingOptions(TypedDict, total=False):
    """The keyword options of ``RecordingTransport`` and ``AsyncRecordingTransport``."""

    redact_names: Iterable[str]
    redact_patterns: Iterable[str | re.Pattern[str]]
    redact_with: Iterable[Callable[[str], str]]
    shared_as: str
    keep_failures: bool
    early_stop_ok: bool
    plain_bodies: bool


class ReplayOptions(TypedDict, total=False):
    """The keyword options of ``ReplayTransport``."""

    ordered: bool | Literal["concurrent"]
    pace: float | None
    max_retry_after: float | None
    on_mismatch: Literal["auto", "raise", "respond"]
    caught_mismatch: Literal["raise", "ignore"]
    faults: Iterable[Fault | str | Mapping[str, Any]]
    match_on: Iterable[str] | None
    ignore_headers: Iterable[str]
    compare_headers: Iterable[str]
    ignore_fields: Iterable[str]
    normalize_patterns: Iterable[tuple[str | re.Pattern[str], str]]
    normalize_with: Iterable[Callable[[str, Any], Any]]
    allow_playback_repeats: bool
    passthrough: Iterable[str]
    ignore_hosts: Iterable[str]
    passthrough_replay: Literal["empty", "block"]
    parse_cache: bool
    redact_names: Iterable[str]
    redact_patterns: Iterable[str | re.Pattern[str]]
    redact_with: Iterable[Callable[[str], str]]
    shared_as: str
    keep_failures: bool
    early_stop_ok: bool
    plain_bodies: bool
    max_age: float | None
    on_expiry: Literal["warn", "fail", "record-on-miss"]


class TransportOptions(TypedDict, total=False):
    """The keyword options of ``transport()`` and ``async_transport()`` (``mode`` is their own)."""

    ordered: bool | Literal["concurrent"]
    pace: float | None
    max_retry_after: float | None
    on_mismatch: Literal["auto", "raise", "respond"]
    caught_mismatch: Literal["raise", "ignore"]
    faults: Iterable[Fault | str | Mapping[str, Any]]
    match_on: Iterable[str] | None
    ignore_headers: Iterable[str]
    compare_headers: Iterable[str]
    ignore_fields: Iterable[str]
    normalize_patterns: Iterable[tuple[str | re.Pattern[str], str]]
    normalize_with: Iterable[Callable[[str, Any], Any]]
    allow_playback_repeats: bool
    passthrough: Iterable[str]
    ignore_hosts: Iterable[str]
    passthrough_replay: Literal["empty", "block"]
    parse_cache: bool
    redact_names: Iterable[str]
    redact_patterns: Iterable[str | re.Pattern[str]]
    redact_with: Iterable[Callable[[str], str]]
    shared_as: str
    keep_failures: bool
    early_stop_ok: bool
    plain_bodies: bool
    max_age: float | None
    on_expiry: Literal["warn", "fail", "record-on-miss"]


class BlockOptions(TypedDict, total=False):
    """The keyword options of ``use_cassette()`` (``mode`` is its own)."""

    ordered: bool | Literal["concurrent"]
    pace: float | None
    max_retry_after: float | None
    on_mismatch: Literal["auto", "raise", "respond"]
    caught_mismatch: Literal["raise", "ignore"]
    faults: Iterable[Fault | str | Mapping[str, Any]]
    match_on: Iterable[str] | None
    ignore_headers: Iterable[str]
    compare_headers: Iterable[str]
    ignore_fields: Iterable[str]
    normalize_patterns: Iterable[tuple[str | re.Pattern[str], str]]
    normalize_with: Iterable[Callable[[str, Any], Any]]
    allow_playback_repeats: bool
    passthrough: Iterable[str]
    ignore_hosts: Iterable[str]
    passthrough_replay: Literal["empty", "block"]
    parse_cache: bool
    redact_names: Iterable[str]
    redact_patterns: Iterable[str | re.Pattern[str]]
    redact_with: Iterable[Callable[[str], str]]
    shared_as: str
    keep_failures: bool
    early_stop_ok: bool
    plain_bodies: bool
    unplayed: Literal["error", "warn", "ignore", "partial"]
    max_age: float | None
    on_expiry: Literal["warn", "fail", "record-on-miss"]
    block_network: bool | Literal["session"]
    allowed_hosts: Iterable[str]
    missing_ok_unused: bool


class EveryOption(TypedDict, total=False):
    """The keyword options of ``Options(...)``."""

    ordered: bool | Literal["concurrent"]
    pace: float | None
    max_retry_after: float | None
    on_mismatch: Literal["auto", "raise", "respond"]
    caught_mismatch: Literal["raise", "ignore"]
    faults: Iterable[Fault | str | Mapping[str, Any]]
    match_on: Iterable[str] | None
    ignore_headers: Iterable[str]
    compare_headers: Iterable[str]
    ignore_fields: Iterable[str]
    normalize_patterns: Iterable[tuple[str | re.Pattern[str], str]]
    normalize_with: Iterable[Callable[[str, Any], Any]]
    allow_playback_repeats: bool
    passthrough: Iterable[str]
    ignore_hosts: Iterable[str]
    passthrough_replay: Literal["empty", "block"]
    parse_cache: bool
    redact_names: Iterable[str]
    redact_patterns: Iterable[str | re.Pattern[str]]
    redact_with: Iterable[Callable[[str], str]]
    shared_as: str
    keep_failures: bool
    early_stop_ok: bool
    plain_bodies: bool
    mode: Mode | None
    unplayed: Literal["error", "warn", "ignore", "partial"]
    max_age: float | None
    on_expiry: Literal["warn", "fail", "record-on-miss"]
    block_network: bool | Literal["session"]
    allowed_hosts: Iterable[str]
    missing_ok_unused: bool
