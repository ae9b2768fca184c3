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
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

__all__ = ["FAULT_KINDS", "Fault", "FaultSchedule", "corrupt_chunk", "parse_fault"]

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


class FaultSchedule:
    """Which faults hit each replayed call as requests meet it. A status fault answers in the call's place
    until it has given its ``times`` answers (its n-th answer is attempt n for ``hits``); the other kinds hit
    the stream of the n-th replay of the call (counted from 0) when they are aimed at attempt n."""

    def __init__(self, faults: Sequence[Fault]) -> None:
        self.faults = tuple(faults)
        self._status_answers: dict[tuple[int, int], int] = {}  # (fault number, call index): answers given
        self._replays: dict[int, int] = {}  # call index: how often it was replayed

    def status_answer(self, call_index: int, path: str) -> Fault | None:
        """The status fault that answers this request for recorded call ``call_index`` (the answer is
        counted), or None when the call is to be replayed."""
        for number, fault in enumerate(self.faults):
            if fault.kind == "status":
                given = self._status_answers.get((number, call_index), 0)
                if given < fault.times and fault.hits(call_index, path, given):
                    self._status_answers[number, call_index] = given + 1
                    return fault
        return None

    def stream_faults(self, call_index: int, path: str) -> tuple[Fault, ...]:
        """The faults that hit this replay of recorded call ``call_index`` (the replay is counted)."""
        attempt = self._replays.get(call_index, 0)
        self._replays[call_index] = attempt + 1
        return tuple(fault for fault in self.faults if fault.kind != "status" and fault.hits(call_index, path, attempt))


def _problem(fault: Fault) -> str:
    """What is wrong with a fault (the first rule it breaks), or ""."""
    return next((problem(fault) for valid, problem in _RULES if not valid(fault)), "")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number_from(value: Any, low: float, high: float = math.inf) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high


def _seconds(value: Any) -> bool:
    return _number_from(value, 0) and math.isfinite(value)


_Rule = tuple[Callable[[Fault], bool], Callable[[Fault], str]]


def _field(name: str, valid: Callable[[Any], bool], expected: str, shown: str = "") -> _Rule:
    """A field's rule: ``valid`` of its value, else "<shown> must be <expected>, not <value>"."""
    return (
        lambda fault: valid(getattr(fault, name)),
        lambda fault: f"{shown or name} must be {expected}, not {getattr(fault, name)!r}",
    )


# Every rule a fault meets, in the order they are checked: the first one broken is the problem said.
_RULES: tuple[_Rule, ...] = (
    (lambda fault: fault.kind in FAULT_KINDS, lambda fault: f"unknown kind; valid: {', '.join(FAULT_KINDS)}"),
    _field("after", _whole, "a whole number >= 0"),
    _field("times", _whole, "a whole number >= 0"),
    _field("chunk", lambda chunk: chunk is None or _whole(chunk), "a whole number >= 0"),
    _field("code", lambda code: _whole(code) and 400 <= code <= 599, "an HTTP error status (400-599)"),
    _field("retry_after", _seconds, "a finite number of seconds >= 0"),
    _field("seconds", _seconds, "a finite number of seconds >= 0"),
    (
        lambda fault: fault.kind not in ("delay", "stall") or fault.seconds > 0,
        lambda fault: "seconds must be given, and more than 0 (how long the wait lasts)",
    ),
    (
        lambda fault: fault.kind != "status" or fault.times >= 1,
        lambda fault: "times must be 1 or more (the error answers given before the recording)",
    ),
    _field(
        "calls",
        lambda calls: isinstance(calls, tuple) and all(_whole(index) for index in calls),
        "recorded call indexes (whole numbers >= 0)",
        shown="call",
    ),
    _field(
        "path",
        lambda path: path is None or (isinstance(path, str) and path.startswith(("/", "*"))),
        "a URL path glob starting with / or *",
    ),
    _field("probability", lambda probability: _number_from(probability, 0, 1), "a number from 0 to 1"),
    _field("seed", lambda seed: isinstance(seed, int) and not isinstance(seed, bool), "a whole number"),
)


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
