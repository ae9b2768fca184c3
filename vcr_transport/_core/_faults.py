"""Faults injected into replay: what they are, which calls they hit, and what they do to the chunks. No I/O.

A fault is written as a ``Fault`` or as text, ``KIND:key=value,key=value`` (the form the command line and
``pyproject.toml`` use)::

    cut:after=3              the stream ends after 3 chunks, as a dropped connection ends it
    status:code=429,retry_after=1,times=2
                             the call is first answered twice with a 429 (and a retry-after), then replayed
    delay:seconds=2          the first byte of the response comes 2 s late
    stall:after=2,seconds=30 the stream stops for 30 s after 2 chunks
    corrupt:chunk=1          chunk 1 carries malformed JSON (its first JSON payload loses its opening brace)

Every kind takes ``call=N`` (or ``call=0|2``: recorded call indexes; default every call), ``path=GLOB`` (the
request's URL path), ``probability=P`` with ``seed=S``: whether a fault hits a given call is drawn from a
random generator seeded by (seed, kind, call index, attempt), so the same run always hits the same calls.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import random
import re
from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["FAULT_KINDS", "Fault", "corrupt_chunk", "parse_fault"]

FaultKind = Literal["cut", "status", "delay", "stall", "corrupt"]
FAULT_KINDS: tuple[FaultKind, ...] = ("cut", "status", "delay", "stall", "corrupt")

# What each kind reads; every kind also reads the aiming keys.
_KIND_KEYS: dict[str, frozenset[str]] = {
    "cut": frozenset({"after"}),
    "status": frozenset({"code", "retry_after", "times"}),
    "delay": frozenset({"seconds"}),
    "stall": frozenset({"after", "seconds"}),
    "corrupt": frozenset({"chunk"}),
}
_AIM_KEYS = frozenset({"call", "path", "probability", "seed"})


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fault:
    """One fault and the calls it is aimed at. ``after``: chunks served before a cut or a stall; ``chunk``:
    the chunk a corruption hits (None: the first chunk holding JSON); ``code``, ``retry_after`` (seconds)
    and ``times``: the error answers a status fault gives before the recording; ``seconds``: how long a
    delay or a stall lasts. ``calls`` (recorded call indexes; empty: all), ``path`` (a glob on the URL
    path) and ``probability`` with ``seed`` choose the calls it hits."""

    kind: FaultKind
    after: int = 0
    chunk: int | None = None
    code: int = 503
    retry_after: float = 0.01
    times: int = 1
    seconds: float = 0.0
    calls: tuple[int, ...] = ()
    path: str | None = None
    probability: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem:
            raise ValueError(f"fault {self.kind!r}: {problem}")

    def hits(self, call_index: int, path: str, attempt: int = 0) -> bool:
        """Whether this fault hits recorded call ``call_index`` when a request for ``path`` meets it for the
        ``attempt``-th time (counted from 0)."""
        if self.calls and call_index not in self.calls:
            return False
        if self.path is not None and not fnmatch.fnmatchcase(path, self.path):
            return False
        if self.probability >= 1.0:
            return True
        draw = random.Random(f"{self.seed}/{self.kind}/{call_index}/{attempt}").random()
        return draw < self.probability

    def text(self) -> str:
        """This fault in the ``KIND:key=value`` form, with the values that differ from the defaults."""
        parts = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "kind" or value == field.default:
                continue
            if field.name == "calls":
                parts.append("call=" + "|".join(map(str, value)))
            else:
                parts.append(f"{field.name}={value:g}" if isinstance(value, float) else f"{field.name}={value}")
        return self.kind + (":" + ",".join(parts) if parts else "")


def _problem(fault: Fault) -> str:
    if fault.kind not in FAULT_KINDS:
        return f"unknown kind; valid: {', '.join(FAULT_KINDS)}"
    for name in ("after", "times"):
        value = getattr(fault, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"{name} must be a whole number >= 0, not {value!r}"
    if fault.chunk is not None and (
        isinstance(fault.chunk, bool) or not isinstance(fault.chunk, int) or fault.chunk < 0
    ):
        return f"chunk must be a whole number >= 0, not {fault.chunk!r}"
    if isinstance(fault.code, bool) or not isinstance(fault.code, int) or not 400 <= fault.code <= 599:
        return f"code must be an HTTP error status (400-599), not {fault.code!r}"
    for name in ("retry_after", "seconds"):
        value = getattr(fault, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            return f"{name} must be a finite number of seconds >= 0, not {value!r}"
    if fault.kind in ("delay", "stall") and fault.seconds <= 0:
        return "seconds must be given, and more than 0 (how long the wait lasts)"
    if fault.kind == "status" and fault.times < 1:
        return "times must be 1 or more (the error answers given before the recording)"
    if not isinstance(fault.calls, tuple) or not all(
        isinstance(index, int) and not isinstance(index, bool) and index >= 0 for index in fault.calls
    ):
        return f"call must be recorded call indexes (whole numbers >= 0), not {fault.calls!r}"
    if fault.path is not None and (not isinstance(fault.path, str) or not fault.path.startswith(("/", "*"))):
        return f"path must be a URL path glob starting with / or *, not {fault.path!r}"
    probability = fault.probability
    if isinstance(probability, bool) or not isinstance(probability, int | float) or not 0 <= probability <= 1:
        return f"probability must be a number from 0 to 1, not {probability!r}"
    if isinstance(fault.seed, bool) or not isinstance(fault.seed, int):
        return f"seed must be a whole number, not {fault.seed!r}"
    return ""


def _number(key: str, raw: str) -> int | float:
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{key}={raw!r} is not a number") from None


def parse_fault(spec: str | Mapping[str, Any] | Fault) -> Fault:
    """A fault from its text (``cut:after=3,call=1``), a mapping (``{"kind": "cut", "after": 3}``, as
    ``pyproject.toml`` gives it) or a Fault. A ValueError names what is wrong and what is valid."""
    if isinstance(spec, Fault):
        return spec
    if isinstance(spec, str):
        kind, _, rest = spec.strip().partition(":")
        values: dict[str, Any] = {"kind": kind.strip()}
        for item in filter(None, (part.strip() for part in rest.split(","))):
            key, equals, raw = item.partition("=")
            if not equals:
                raise ValueError(f"fault {spec!r}: {item!r} is not key=value")
            values[key.strip()] = raw.strip()
    elif isinstance(spec, Mapping):
        values = dict(spec)
    else:
        raise TypeError(f"a fault is text like 'cut:after=3', a mapping or a Fault, not {spec!r}")
    kind = values.pop("kind", None)
    if kind not in FAULT_KINDS:
        raise ValueError(f"fault {spec!r}: unknown kind {kind!r}; valid: {', '.join(FAULT_KINDS)}")
    valid = _KIND_KEYS[kind] | _AIM_KEYS
    unknown = set(values) - valid
    if unknown:
        raise ValueError(
            f"fault {spec!r}: {', '.join(sorted(unknown))} not understood by {kind}; valid: {', '.join(sorted(valid))}"
        )
    arguments: dict[str, Any] = {}
    try:
        _read_values(values, arguments)
    except ValueError as error:
        raise ValueError(f"fault {spec!r}: {error}") from None
    try:
        return Fault(kind=kind, **arguments)
    except ValueError as error:
        raise ValueError(f"fault {spec!r}: {str(error).partition(': ')[2]}") from None


def _read_values(values: Mapping[str, Any], arguments: dict[str, Any]) -> None:
    for key, raw in values.items():
        if key == "path":
            arguments["path"] = raw
        elif key == "call":
            items = raw.split("|") if isinstance(raw, str) else (raw if isinstance(raw, list | tuple) else [raw])
            arguments["calls"] = tuple(_number("call", item) if isinstance(item, str) else item for item in items)
        else:
            arguments[key] = _number(key, raw) if isinstance(raw, str) else raw


_JSON_START = re.compile(rb"(?m)^data: ?(?=[\[{])")


def corrupt_chunk(chunk: bytes) -> bytes | None:
    """The chunk with its first JSON payload made malformed, the length kept (so a content-length stays
    true): the opening brace of the first SSE ``data:`` JSON, or of the chunk itself, becomes ``!``. None
    when the chunk holds no JSON to break."""
    found = _JSON_START.search(chunk)
    if found is not None:
        position = found.end()
    else:
        stripped = chunk.lstrip()
        if not stripped.startswith((b"{", b"[")):
            return None
        position = len(chunk) - len(stripped)
    return chunk[:position] + b"!" + chunk[position + 1 :]
