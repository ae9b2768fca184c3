"""The options of a cassette, declared once. No I/O.

Every entry point takes the same keyword options: ``ReplayTransport``, the recording transports (their
redaction options), ``transport()``, ``async_transport()``, ``use_cassette()`` and the pytest marker. The
fields of ``Options`` drive their validation, the ``[tool.vcr_transport]`` merge and the marker's argument
check. To add an option, add a field here (with its ``help``), then use it where it acts.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from .._exceptions import CassetteError
from ._faults import Fault, parse_fault
from ._matching import MATCH_ON_NAMES, RequestMatcher, parse_field_path
from ._modes import PASSTHROUGH_ANSWERS, parse_passthrough_rule
from ._redaction import Redactor

__all__ = ["CAUGHT_MISMATCH_ACTIONS", "MISMATCH_ACTIONS", "Options"]

PassthroughAnswer = Literal["empty", "block"]

MISMATCH_ACTIONS = ("auto", "raise", "respond")
MismatchAction = Literal["auto", "raise", "respond"]
# What a replay mismatch that the code under test caught does when the block or the test ends.
CAUGHT_MISMATCH_ACTIONS = ("raise", "ignore")
CaughtMismatchAction = Literal["raise", "ignore"]


def _option(default: Any, help: str, *, kind: str, settings: bool = False, record: bool = False) -> Any:
    """A field with what it means (``help``), how its value is checked (``kind``), whether
    ``[tool.vcr_transport]`` may carry it (``settings``: lists there add to the code's) and whether it applies
    while recording (``record``)."""
    return dataclasses.field(
        default=default, metadata={"help": help, "kind": kind, "settings": settings, "record": record}
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Options:
    """What a cassette is replayed and recorded with. Unknown names and wrong types are refused."""

    ordered: bool = _option(
        True,
        "request n is compared with recorded call n; False pairs each request with the first unplayed recorded "
        "call that matches it",
        kind="bool",
    )
    pace: float | None = _option(
        None, "reproduce the recorded gaps between chunks, scaled by this factor (1.0 = real time)", kind="seconds"
    )
    max_retry_after: float | None = _option(
        0.01,
        "a recorded retryable response's retry delay is shortened to this many seconds, unless it made the SDK "
        "give up (openai: over 120 s; an HTTP date is kept as the seconds it meant when recorded); None keeps it",
        kind="seconds",
    )
    on_mismatch: MismatchAction = _option(
        "auto",
        "'raise' raises ReplayMismatch; 'respond' answers with a non-retryable 400 carrying the mismatch line; "
        "'auto' responds to clients that retry transport exceptions, raises for the rest",
        kind="mismatch",
    )
    caught_mismatch: CaughtMismatchAction = _option(
        "raise",
        "a replay mismatch that the code under test caught (an SDK or the app swallowed it and went on): 'raise' "
        "raises the first one again when use_cassette's block ends or the test is torn down; 'ignore' leaves it, "
        "and the test passes or fails on what the code did with it (the pytest-recording compatibility mode's "
        "default, as vcrpy)",
        kind="caught_mismatch",
        settings=True,
    )
    faults: tuple[Fault, ...] = _option(
        (),
        "faults injected into replay, as text ('cut:after=3', 'status:code=429', 'delay:seconds=2', "
        "'stall:after=2,seconds=30', 'corrupt:chunk=1'; call=N, path=GLOB, probability=P, seed=S aim them) "
        "or vcr_transport.Fault objects",
        kind="faults",
    )
    match_on: tuple[str, ...] | None = _option(
        None,
        "what matching compares, in vcrpy's names (method, scheme, host, port, path, query, headers, body; "
        "uri for the whole URL); None compares everything. With a list, headers compares only the headers the "
        "recording kept. A cassette imported from vcrpy carries vcrpy's default in its header; this overrides it",
        kind="match_on",
        settings=True,
    )
    ignore_headers: tuple[str, ...] = _option(
        (), "more header names (globs allowed) that matching ignores", kind="names", settings=True
    )
    compare_headers: tuple[str, ...] = _option(
        (), "header names taken out of the volatile set: matching compares them", kind="names", settings=True
    )
    ignore_fields: tuple[str, ...] = _option(
        (),
        "more body fields that matching skips: a bare key name wherever it appears, or a path from body with "
        "globs (body.contents[*].parts[*].functionCall.id)",
        kind="fields",
        settings=True,
    )
    passthrough: tuple[str, ...] = _option(
        (),
        "more host/path globs (api.example.com/v1/traces/*) whose requests are never recorded: forwarded while "
        "recording or off, answered as passthrough_replay says in replay; added to the telemetry defaults",
        kind="passthrough",
        settings=True,
    )
    ignore_hosts: tuple[str, ...] = _option(
        (),
        "hosts (globs allowed, no port) whose requests never meet the cassette: in every mode they go on to the "
        "client's own transport, unrecorded (vcrpy's ignore_hosts and ignore_localhost)",
        kind="names",
        settings=True,
    )
    passthrough_replay: PassthroughAnswer = _option(
        "empty",
        "what a passthrough request meets in replay: 'empty' an empty 204 response, 'block' a NetworkBlockedError",
        kind="passthrough_answer",
        settings=True,
    )
    redact_names: tuple[str, ...] = _option(
        (), "more secret names (whole names and name suffixes)", kind="names", settings=True, record=True
    )
    redact_patterns: tuple[str | re.Pattern[str], ...] = _option(
        (), "more regular expressions whose matches are secrets", kind="patterns", settings=True, record=True
    )
    redact_with: tuple[Callable[[str], str], ...] = _option(
        (), "functions that get every string and return it with their secrets replaced", kind="callables", record=True
    )
    keep_failures: bool = _option(
        False,
        "keep calls that got no response or a 401/403, and recordings whose block ended with an exception "
        "(never one cut by Ctrl-C or an exit); by default such a recording leaves the older cassette as it was",
        kind="bool",
        record=True,
    )
    plain_bodies: bool = _option(
        True,
        "while recording, ask the upstream for uncompressed responses (accept-encoding: identity), so the cassette "
        "holds readable text; False forwards the caller's accept-encoding and keeps the compressed wire form",
        kind="bool",
        record=True,
    )
    parse_cache: bool = _option(
        True,
        "keep what the parser accepted of a cassette over 256 KB in a cache keyed by the XXH3-128 hash of its bytes "
        "($VCR_TRANSPORT_CACHE_DIR, else $XDG_CACHE_HOME/vcr_transport/parse, else ~/.cache/vcr_transport/parse), "
        "so the next replay of the same bytes skips parsing; False neither reads nor writes it",
        kind="bool",
        settings=True,
    )

    # The names the caller gave (from_arguments): as_arguments passes them on even at their default value, so
    # an explicit ordered=True still overrides an imported cassette's header.
    given: frozenset[str] = dataclasses.field(default=frozenset(), compare=False, repr=False, metadata={"kind": ""})

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in _option_fields(cls))

    @classmethod
    def recording_names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in _option_fields(cls) if field.metadata["record"])

    @classmethod
    def from_arguments(
        cls, arguments: Mapping[str, Any], *, where: str = "options", recording: bool = False
    ) -> Options:
        """Options from keyword arguments, each checked: an unknown name is a TypeError listing the valid
        ones, a wrong value a TypeError or ValueError naming the option. ``recording``: only the options
        that act while recording are valid (the recording transports)."""
        valid = cls.recording_names() if recording else cls.names()
        unknown = set(arguments) - set(valid)
        if unknown:
            raise TypeError(
                f"{where}: unknown option(s) {', '.join(sorted(unknown))}; valid: {', '.join(sorted(valid))}"
            )
        fields = {field.name: field for field in _option_fields(cls)}
        checked = {
            name: _checked(name, fields[name].metadata["kind"], value, where) for name, value in arguments.items()
        }
        return cls(**checked, given=frozenset(arguments))

    def with_settings(self, settings: Mapping[str, Any], *, where: str) -> Options:
        """These options with the lists of ``[tool.vcr_transport]`` added in front of the code's own."""
        added: dict[str, Any] = {}
        for field in _option_fields(self):
            if field.metadata["settings"] and field.name in settings:
                extra = _checked(field.name, field.metadata["kind"], settings[field.name], where)
                if field.metadata["kind"] == "match_on" or not isinstance(extra, tuple):
                    # a single value: the code's own wins when it set one
                    if getattr(self, field.name) == field.default:
                        added[field.name] = extra
                    continue
                added[field.name] = (*extra, *getattr(self, field.name))
        return dataclasses.replace(self, **added) if added else self

    def redactor(self) -> Redactor:
        """The redaction rules: the defaults plus these options' additions."""
        return Redactor(self.redact_names, self.redact_patterns, self.redact_with)

    def matcher(self) -> RequestMatcher:
        """What matching compares: the defaults adjusted by these options."""
        return RequestMatcher(
            ignore_headers=self.ignore_headers,
            compare_headers=self.compare_headers,
            ignore_fields=self.ignore_fields,
            match_on=self.match_on,
        )

    def with_cassette_header(self, header: Mapping[str, Any], explicit: Iterable[str], *, path: str) -> Options:
        """These options with the cassette header's ``match_on`` and ``ordered`` (written by ``import``) for
        those not in ``explicit``. A malformed value is a CassetteError naming line 1 and the field."""
        given = set(explicit)
        taken: dict[str, Any] = {}
        for name, kind in (("match_on", "match_on"), ("ordered", "bool")):
            if name in header and name not in given:
                try:
                    taken[name] = _checked(name, kind, header[name], "header")
                except (TypeError, ValueError) as error:
                    raise CassetteError(
                        path,
                        1,
                        f"header field {name}: {str(error).removeprefix('header: ')}",
                        f"correct {name} in line 1, or delete it to compare everything",
                    ) from None
        return dataclasses.replace(self, **taken) if taken else self

    def as_arguments(self) -> dict[str, Any]:
        """The options given or different from their defaults, as keyword arguments."""
        return {
            field.name: getattr(self, field.name)
            for field in _option_fields(self)
            if field.name in self.given or getattr(self, field.name) != field.default
        }


def _option_fields(options: Options | type[Options]) -> tuple[dataclasses.Field[Any], ...]:
    """The option fields (not the bookkeeping of which were given)."""
    return tuple(field for field in dataclasses.fields(options) if field.metadata["kind"])


def _checked(name: str, kind: str, value: Any, where: str) -> Any:
    def wrong(expected: str) -> TypeError:
        return TypeError(f"{where}: option {name} must be {expected}, not {value!r}")

    if kind == "bool":
        if not isinstance(value, bool):
            raise wrong("True or False")
        return value
    if kind == "seconds":
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong("a number of seconds or None")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}: option {name} must be a finite number >= 0, not {value!r}")
        return float(value)
    if kind == "passthrough_answer":
        if value not in PASSTHROUGH_ANSWERS:
            raise ValueError(
                f"{where}: option {name} must be one of {', '.join(map(repr, PASSTHROUGH_ANSWERS))}, not {value!r}"
            )
        return value
    if kind == "match_on":
        if value is None:
            return None
        if isinstance(value, str | bytes) or not isinstance(value, Iterable):
            raise wrong(f"None or a list of {', '.join(MATCH_ON_NAMES)}")
        items = tuple(value)
        unknown = [item for item in items if item not in MATCH_ON_NAMES]
        if unknown:
            raise ValueError(
                f"{where}: option {name}: unknown name(s) {', '.join(map(repr, unknown))}; "
                f"valid: {', '.join(MATCH_ON_NAMES)}"
            )
        return items
    if kind in ("mismatch", "caught_mismatch"):
        valid = MISMATCH_ACTIONS if kind == "mismatch" else CAUGHT_MISMATCH_ACTIONS
        if value not in valid:
            raise ValueError(f"{where}: option {name} must be one of {', '.join(map(repr, valid))}, not {value!r}")
        return value
    # Lists: a bare string would be taken apart letter by letter, so it is refused.
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise wrong("a list")
    items = tuple(value)
    if kind == "faults":
        try:
            return tuple(parse_fault(item) for item in items)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{where}: option {name}: {error}") from None
    if kind in ("names", "fields", "passthrough") and not all(isinstance(item, str) and item for item in items):
        raise wrong("a list of non-empty strings")
    parse = {"fields": parse_field_path, "passthrough": parse_passthrough_rule}.get(kind)
    for item in items if parse else ():
        try:
            parse(item)  # type: ignore[misc]
        except ValueError as error:
            raise ValueError(f"{where}: option {name}: {error}") from None
    if kind == "patterns":
        for item in items:
            if isinstance(item, re.Pattern):
                continue
            if not isinstance(item, str):
                raise wrong("a list of regular expressions")
            try:
                re.compile(item)
            except re.error as error:
                raise ValueError(f"{where}: option {name}: {item!r} is not a regular expression: {error}") from None
    if kind == "callables" and not all(callable(item) for item in items):
        raise wrong("a list of functions taking and returning a string")
    return items


Options.__doc__ = (
    (Options.__doc__ or "")
    + "\n\n"
    + "\n".join(
        f"- ``{field.name}`` (default ``{field.default!r}``): {field.metadata['help']}"
        for field in _option_fields(Options)
    )
)
