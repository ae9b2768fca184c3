"""Every option, declared once. No I/O.

``Options`` is the one declaration of what a cassette is replayed and recorded with, and of what the block
or test around it does. Each field carries its meaning, its validator (a value: ``_Flag()``,
``_Choice(...)``, ...) and where it can be set (``Knob``): which entry points take it as a keyword
argument, the pytest marker, ``[tool.vcr_transport]``, a pytest ini setting, an environment variable, a
command-line option. Everything reads these fields: the keyword checking of ``ReplayTransport``, the
recording transports, ``transport()``, ``use_cassette()`` and the marker (``from_arguments``), the pyproject
merge (``with_settings``), the ini settings and the compatibility mode's defaults (the pytest plugin), and
the options table of the docs (``options_table``, in docs/reference/configuration.md, checked by a test).
Settings of the project or the run that belong to no cassette (``cassette_dir``, the parse cache's folder, the
compatibility switch, ``CI``) are ``SETTINGS``, declared below the fields.

To add an option: add a field here with its ``Knob``, then use it where it acts.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from ..._exceptions import CassetteError
from ..rules._hosts import parse_host_rules
from ._faults import Fault, parse_fault
from ._modes import ENVIRONMENT_VARIABLE, MODES, PASSTHROUGH_ANSWERS, Mode, check_mode, parse_passthrough_rule

if TYPE_CHECKING:
    from typing import Unpack

    from ..rules._redaction import Redactor
    from ._matching import Normalizer, RequestMatcher
    from ._typed_options import EveryOption

__all__ = [
    "CACHE_DIR_VARIABLE",
    "CASSETTE_DIR_SETTING",
    "DRIFT_HOSTS_SETTING",
    "CAUGHT_MISMATCH_ACTIONS",
    "COMPAT_INI",
    "ENTRIES",
    "EXPIRY_ACTIONS",
    "MISMATCH_ACTIONS",
    "PARSE_CACHE_VARIABLE",
    "SETTINGS",
    "UNPLAYED_ACTIONS",
    "Knob",
    "Options",
    "Setting",
    "compile_patterns",
    "options_table",
    "pyproject_names",
    "registration_module",
    "typed_options_module",
    "unknown_settings",
]

PassthroughAnswer = Literal["empty", "block"]
MISMATCH_ACTIONS = ("auto", "raise", "respond")
MismatchAction = Literal["auto", "raise", "respond"]
# What a replay mismatch that the code under test caught does when the block or the test ends.
CAUGHT_MISMATCH_ACTIONS = ("raise", "ignore")
CaughtMismatchAction = Literal["raise", "ignore"]
# What recorded calls that no request asked for do when the block or the test ends.
UNPLAYED_ACTIONS = ("error", "warn", "ignore", "partial")
UnplayedAction = Literal["error", "warn", "ignore", "partial"]
# What a replayed cassette older than max_age does.
EXPIRY_ACTIONS = ("warn", "fail", "record-on-miss")
ExpiryAction = Literal["warn", "fail", "record-on-miss"]
PARSE_CACHE_VARIABLE = "VCR_TRANSPORT_PARSE_CACHE"
CACHE_DIR_VARIABLE = "VCR_TRANSPORT_CACHE_DIR"
CASSETTE_DIR_SETTING = "cassette_dir"
DRIFT_HOSTS_SETTING = "drift_hosts"
COMPAT_INI = "vcr_transport_compat"

# The entry points that take options as keyword arguments, as the table names them: the recording
# transports, ReplayTransport, transport() (and async_transport()), use_cassette(). The marker is a column
# of its own.
Entry = Literal["recording", "replay", "transport", "block"]
ENTRIES: dict[str, str] = {
    "recording": "RecordingTransport",
    "replay": "ReplayTransport",
    "transport": "transport()",
    "block": "use_cassette()",
}
_EVERYWHERE: tuple[Entry, ...] = ("recording", "replay", "transport", "block")
_REPLAYING: tuple[Entry, ...] = ("replay", "transport", "block")


# --- validators: each a value that checks (and normalises) one option --------------------------------------
#
# A validator is called with (value, name, where) and returns the value to keep, or raises a TypeError (the
# wrong type) or a ValueError (a wrong value) whose message starts with ``where``. ``values`` is what the
# options table says it takes; ``accepts`` is the type of what a caller may pass, as the keyword arguments'
# TypedDicts (``typed_options_module``) declare it.


def _wrong(where: str, name: str, expected: str, value: Any) -> TypeError:
    return TypeError(f"{where}: option {name} must be {expected}, not {value!r}")


def _items(value: Any, name: str, where: str, expected: str = "a list") -> tuple[Any, ...]:
    """A list option's items: a bare string would be taken apart letter by letter, so it is refused."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise _wrong(where, name, expected, value)
    return tuple(value)


class _Flag:
    values: str = "`True`, `False`"
    accepts: str = "bool"

    def __call__(self, value: Any, name: str, where: str) -> bool:
        if not isinstance(value, bool):
            raise _wrong(where, name, "True or False", value)
        return value


class _Seconds:
    values: str = "seconds (a number >= 0), `None`"
    accepts: str = "float | None"

    def __call__(self, value: Any, name: str, where: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _wrong(where, name, "a number of seconds or None", value)
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}: option {name} must be a finite number >= 0, not {value!r}")
        return float(value)


class _Days:
    values: str = "days (a number > 0), `None`"
    accepts: str = "float | None"

    def __call__(self, value: Any, name: str, where: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _wrong(where, name, "a number of days or None", value)
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{where}: option {name} must be a finite number of days > 0, not {value!r}")
        return float(value)

    def from_text(self, text: str, where: str) -> float:
        """A value as an ini setting gives it (text)."""
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"{where} must be a number of days, not {text!r}") from None
        if not math.isfinite(number) or number <= 0:
            raise ValueError(f"{where} must be a finite number of days > 0, not {text!r}")
        return number


class _Choice:
    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices

    @property
    def values(self) -> str:
        return ", ".join(f"`{choice!r}`" for choice in self.choices)

    @property
    def accepts(self) -> str:
        return "Literal[" + ", ".join(f'"{choice}"' for choice in self.choices) + "]"

    def __call__(self, value: Any, name: str, where: str) -> str:
        if value not in self.choices:
            raise ValueError(
                f"{where}: option {name} must be one of {', '.join(map(repr, self.choices))}, not {value!r}"
            )
        return str(value)


class _Mode:
    """A mode name, or None (resolved by the precedence of ``_config``). A wrong name is a ModeError."""

    values: str = ", ".join(f"`{mode!r}`" for mode in MODES)
    accepts: str = "Mode | None"

    def __call__(self, value: Any, name: str, where: str) -> str | None:
        return None if value is None else check_mode(value, "argument")


class _MatchOn:
    values: str = (
        "`None`, a list of vcrpy's names (`method`, `scheme`, `host`, `port`, `path`, `query`, `headers`, "
        "`body`, `uri`)"
    )
    accepts: str = "Iterable[str] | None"

    def __call__(self, value: Any, name: str, where: str) -> tuple[str, ...] | None:
        from ._matching import MATCH_ON_NAMES  # lazily: matching is heavy, and checking a marker is not

        if value is None:
            return None
        items = _items(value, name, where, f"None or a list of {', '.join(MATCH_ON_NAMES)}")
        unknown = [item for item in items if item not in MATCH_ON_NAMES]
        if unknown:
            raise ValueError(
                f"{where}: option {name}: unknown name(s) {', '.join(map(repr, unknown))}; "
                f"valid: {', '.join(MATCH_ON_NAMES)}"
            )
        return items


def _field_path(item: str) -> object:
    from ._matching import parse_field_path  # lazily, as above

    return parse_field_path(item)


class _Name:
    """A name: a string without line breaks ("" for none)."""

    values: str = "a string"
    accepts: str = "str"

    def __call__(self, value: Any, name: str, where: str) -> str:
        if not isinstance(value, str) or "\n" in value or "\r" in value:
            raise _wrong(where, name, "a string on one line", value)
        return value


class _Strings:
    """A list of non-empty strings, each parsed by ``parse`` when given (a ValueError names the option)."""

    accepts: str = "Iterable[str]"

    def __init__(self, values: str, parse: Callable[[str], object] | None = None) -> None:
        self.values = values
        self.parse = parse

    def __call__(self, value: Any, name: str, where: str) -> tuple[str, ...]:
        items = _items(value, name, where)
        if not all(isinstance(item, str) and item for item in items):
            raise _wrong(where, name, "a list of non-empty strings", value)
        if self.parse is not None:
            for item in items:
                try:
                    self.parse(item)
                except ValueError as error:
                    raise ValueError(f"{where}: option {name}: {error}") from None
        return items


def compile_patterns(patterns: Iterable[Any], where: str) -> tuple[re.Pattern[str], ...]:
    """Regular expressions compiled; one that does not compile is a ValueError naming it after ``where``."""
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as error:
            raise ValueError(f"{where}: {pattern!r} is not a regular expression: {error}") from None
    return tuple(compiled)


# Texts a pattern is tried on for a match of no characters (a lookahead may need one of them after it).
_EMPTY_MATCH_SAMPLES = ("", " ", "a", "Z", "0", "-", "_", "\n", "sk-abc123", "Bearer x.y", '{"k": "v"}', "é")


def refuse_empty_matches(patterns: Iterable[str | re.Pattern[str]], where: str) -> None:
    """A ValueError naming the first pattern that matches the empty string (``a*``, ``(x)?``, ``^``): its
    substitution would put its replacement between every two characters of every string."""
    for pattern in patterns:
        compiled = re.compile(pattern)
        if any(m.start() == m.end() for sample in _EMPTY_MATCH_SAMPLES for m in compiled.finditer(sample)):
            shown = compiled.pattern
            raise ValueError(
                f"{where}: pattern {shown!r} matches the empty string, so it would be substituted between every "
                "two characters of every string; make it match at least one character (+ rather than *, no ? "
                "or lookaround alone)"
            )


class _Regexes:
    """A list of regular expressions (text or compiled ones), kept as given."""

    values = "a list of regular expressions"
    accepts = "Iterable[str | re.Pattern[str]]"

    def __init__(self, *, substituted: bool = False) -> None:
        self.substituted = substituted  # its matches are replaced: one that matches nothing is refused

    def __call__(self, value: Any, name: str, where: str) -> tuple[Any, ...]:
        items = _items(value, name, where)
        if not all(isinstance(item, str | re.Pattern) for item in items):
            raise _wrong(where, name, "a list of regular expressions", value)
        label = f"{where}: option {name}"
        compile_patterns((item for item in items if isinstance(item, str)), label)
        if self.substituted:
            refuse_empty_matches(items, label)
        return items


class _Hosts:
    """``allowed_hosts``: host rules as ``_hosts.parse_host_rules`` reads them."""

    values: str = (
        "a list of host globs (`db`, `*.internal`, `10.0.0.*`; `:port` for one port: `localhost:5432`), "
        "address networks (`10.0.0.0/8`), or `re:` and a regular expression"
    )
    accepts: str = "Iterable[str]"

    def __call__(self, value: Any, name: str, where: str) -> tuple[str, ...]:
        items = _items(value, name, where, "a list of host globs")
        if not all(isinstance(item, str) and item for item in items):
            raise _wrong(where, name, "a list of host globs (non-empty text)", value)
        try:
            parse_host_rules(items)
        except ValueError as error:
            raise ValueError(f"{where}: option {name}: {error}") from None
        return items


class _BlockNetwork:
    """``block_network``: True, False or ``"session"``; as text (the ini, the command line) also ``true`` and
    ``false``."""

    values: str = "`True`, `False`, `'session'`"
    accepts: str = 'bool | Literal["session"]'
    choices: tuple[str, ...] = ("true", "false", "session")

    def __call__(self, value: Any, name: str, where: str) -> bool | str:
        if value is True or value is False or value == "session":
            return value  # type: ignore[no-any-return]
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise _wrong(where, name, "True, False or 'session'", value)


class _Functions:
    values: str = "a list of functions `str -> str`"
    accepts: str = "Iterable[Callable[[str], str]]"

    def __call__(self, value: Any, name: str, where: str) -> tuple[Callable[[str], str], ...]:
        items = _items(value, name, where)
        if not all(callable(item) for item in items):
            raise _wrong(where, name, "a list of functions taking and returning a string", value)
        return items


class _Ordered:
    values: str = "`'concurrent'`, `True`, `False`"
    accepts: str = 'bool | Literal["concurrent"]'

    def __call__(self, value: Any, name: str, where: str) -> bool | str:
        if value is True or value is False or value == "concurrent":
            return value  # type: ignore[no-any-return]
        raise _wrong(where, name, "'concurrent', True or False", value)


class _Replacements:
    values: str = "a list of (regular expression, replacement) pairs"
    accepts: str = "Iterable[tuple[str | re.Pattern[str], str]]"

    def __call__(self, value: Any, name: str, where: str) -> tuple[tuple[str | re.Pattern[str], str], ...]:
        items = _items(value, name, where)
        pairs = []
        for item in items:
            if (
                isinstance(item, str | bytes)
                or not isinstance(item, Iterable)
                or len(pair := tuple(item)) != 2
                or not isinstance(pair[0], str | re.Pattern)
                or not isinstance(pair[1], str)
            ):
                raise _wrong(where, name, "a list of (regular expression, replacement) pairs", value)
            pairs.append((pair[0], pair[1]))
        compile_patterns((pattern for pattern, _ in pairs if isinstance(pattern, str)), f"{where}: option {name}")
        refuse_empty_matches((pattern for pattern, _ in pairs), f"{where}: option {name}")
        return tuple(pairs)


class _Normalizers:
    values: str = "a list of functions `(path, value) -> value`"
    accepts: str = "Iterable[Callable[[str, Any], Any]]"

    def __call__(self, value: Any, name: str, where: str) -> tuple[Callable[[str, Any], Any], ...]:
        items = _items(value, name, where)
        if not all(callable(item) for item in items):
            raise _wrong(where, name, "a list of functions taking a field path and a value", value)
        return items


class _Faults:
    values: str = "a list of faults (`Fault`, a mapping, or text `KIND:key=value,...`)"
    accepts: str = "Iterable[Fault | str | Mapping[str, Any]]"

    def __call__(self, value: Any, name: str, where: str) -> tuple[Fault, ...]:
        items = _items(value, name, where)
        try:
            return tuple(parse_fault(item) for item in items)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{where}: option {name}: {error}") from None


Check = (
    _Flag
    | _Seconds
    | _Days
    | _Choice
    | _Mode
    | _MatchOn
    | _Name
    | _Strings
    | _Regexes
    | _Hosts
    | _BlockNetwork
    | _Functions
    | _Faults
    | _Ordered
    | _Replacements
    | _Normalizers
)

_FLAG = _Flag()
_SECONDS = _Seconds()
_NAMES = _Strings("a list of names (globs allowed)")


# --- where an option can be set --------------------------------------------------------------------------

_UNSET: Any = object()


class Knob(NamedTuple):
    """What an option means and where it can be set.

    ``entries``: the entry points taking it as a keyword argument (``ENTRIES``); ``marker``: whether the pytest
    marker takes it. ``pyproject``: ``"adds"`` (a list there goes in front of the code's own), ``"fills"`` (a
    value there applies when the code sets none), ``"read"`` (read where it acts: the mode's precedence), or
    ``""``. ``ini``: the pytest ini setting that sets it for the run (between the marker and pyproject);
    ``env``: the environment variable; ``flags``: command-line options. ``compat``: the pytest-recording
    compatibility mode's default, when it differs; ``shown``: the default as the table shows it, when not the
    field's own."""

    help: str
    check: Check
    entries: tuple[Entry, ...] = _REPLAYING
    marker: bool = True
    pyproject: Literal["adds", "fills", "read", ""] = ""
    ini: str = ""
    env: str = ""
    flags: tuple[str, ...] = ()
    compat: Any = _UNSET
    shown: str = ""

    @property
    def has_compat_default(self) -> bool:
        return self.compat is not _UNSET

    @property
    def choices(self) -> tuple[str, ...]:
        """The values of an option that takes one of a few names (empty for the others)."""
        return self.check.choices if isinstance(self.check, _Choice | _BlockNetwork) else ()

    def from_text(self, text: str, where: str) -> Any:
        """The value of a setting given as text (a pytest ini setting); a wrong one is a ValueError that
        starts with ``where``. Only options with choices or a number of days are set this way."""
        if isinstance(self.check, _Days):
            return self.check.from_text(text, where)
        if text not in self.choices:
            raise ValueError(f"{where} must be one of {', '.join(self.choices)}, not {text!r}")
        return text


def _option(default: Any, help: str, check: Check, *entries: Entry, **where: Any) -> Any:
    """An option field: its default, what it means, its validator, the entry points taking it (by default the
    replaying ones) and where else it can be set (``Knob``)."""
    knob = Knob(help, check, entries or _REPLAYING, **where)
    return dataclasses.field(default=default, metadata={"knob": knob})


@dataclasses.dataclass(frozen=True, kw_only=True)
class Options:
    """What a cassette is replayed and recorded with, and what the block or test around it does. Unknown
    names and wrong values are refused, whether given as keyword arguments or to ``Options(...)`` itself."""

    # --- replay: ReplayTransport, transport(), use_cassette(), the marker ---------------------------------
    ordered: bool | str = _option(
        "concurrent",
        "'concurrent': calls that overlapped in time while recording replay in any order among themselves, "
        "every other call in its recorded order; True: request n is compared with recorded call n; False: "
        "each request is paired with the first unplayed recorded call that matches it. Identical requests "
        "are answered in recorded order",
        _Ordered(),
    )
    pace: float | None = _option(
        None,
        "reproduce the recorded gaps between chunks, scaled by this factor (1.0 = real time); recorded times "
        "are at most an hour, and one that goes back waits nothing, so one call waits at most an hour times this",
        _SECONDS,
        flags=("serve: --pace",),
    )
    max_retry_after: float | None = _option(
        0.01,
        "a recorded retryable response's retry delay is shortened to this many seconds, unless it made the "
        "SDK give up (openai: over 120 s; an HTTP date is kept as the seconds it meant when recorded); None "
        "keeps it",
        _SECONDS,
    )
    on_mismatch: MismatchAction = _option(
        "auto",
        "'raise' raises ReplayMismatch; 'respond' answers with a non-retryable 400 carrying the mismatch "
        "line; 'auto' responds to clients that retry transport exceptions, raises for the rest",
        _Choice(MISMATCH_ACTIONS),
    )
    caught_mismatch: CaughtMismatchAction = _option(
        "raise",
        "a replay mismatch that the code under test caught (an SDK or the app swallowed it and went on): "
        "'raise' raises the first one again when use_cassette's block ends or the test is torn down; "
        "'ignore' leaves it, and the test passes or fails on what the code did with it (the "
        "pytest-recording compatibility mode's default, as vcrpy)",
        _Choice(CAUGHT_MISMATCH_ACTIONS),
        pyproject="fills",
        ini="vcr_caught_mismatch",
        compat="ignore",
    )
    faults: tuple[Fault, ...] = _option(
        (),
        "faults injected into replay, as text ('cut:after=3', 'status:code=429', 'delay:seconds=2', "
        "'stall:after=2,seconds=30', 'corrupt:chunk=1'; call=N, path=GLOB, probability=P, seed=S aim them) "
        "or vcr_transport.Fault objects",
        _Faults(),
        flags=("serve: --fault",),
    )
    match_on: tuple[str, ...] | None = _option(
        None,
        "what matching compares, in vcrpy's names (method, scheme, host, port, path, query, headers, body; "
        "uri for the whole URL); None compares everything. With a list, headers compares only the headers "
        "the recording kept. A cassette imported from vcrpy carries vcrpy's default in its header; this "
        "overrides it",
        _MatchOn(),
        pyproject="fills",
    )
    ignore_headers: tuple[str, ...] = _option(
        (),
        "more header names (globs allowed) that matching ignores",
        _NAMES,
        pyproject="adds",
        flags=("serve: --ignore-header (every header unless --match-headers)",),
    )
    compare_headers: tuple[str, ...] = _option(
        (), "header names taken out of the volatile set: matching compares them", _NAMES, pyproject="adds"
    )
    ignore_fields: tuple[str, ...] = _option(
        (),
        "more body fields that matching skips: a bare key name wherever it appears, or a path from body "
        "with globs (body.contents[*].parts[*].functionCall.id)",
        _Strings("a list of keys or field paths", _field_path),
        pyproject="adds",
        flags=("serve: --ignore-field",),
    )
    normalize_patterns: tuple[tuple[str | re.Pattern[str], str], ...] = _option(
        (),
        "(regular expression, replacement) pairs substituted in every string of the recorded and the "
        "incoming request before they are compared (a timestamp inside a prompt); what is stored or sent "
        "never changes",
        _Replacements(),
        pyproject="adds",
    )
    normalize_with: tuple[Callable[[str, Any], Any], ...] = _option(
        (),
        "functions called with (field path, value) for every field of the recorded and the incoming request, "
        "from the whole request (path '') down to each leaf (body.metadata.run_id), returning the value to "
        "compare; what is stored or sent never changes",
        _Normalizers(),
    )
    allow_playback_repeats: bool = _option(
        False,
        "a request whose every recorded answer was used is answered again by the last one (a poll made once "
        "more than recorded; vcrpy's allow_playback_repeats)",
        _FLAG,
    )
    passthrough: tuple[str, ...] = _option(
        (),
        "more host/path globs (api.example.com/v1/traces/*) whose requests are never recorded: forwarded "
        "while recording or off, answered as passthrough_replay says in replay; added to the telemetry "
        "defaults",
        _Strings("a list of `host[:port][/path]` globs", parse_passthrough_rule),
        pyproject="adds",
    )
    ignore_hosts: tuple[str, ...] = _option(
        (),
        "hosts (globs allowed, no port) whose requests never meet the cassette: in every mode they go on to "
        "the client's own transport, unrecorded (vcrpy's ignore_hosts and ignore_localhost)",
        _Strings("a list of host globs"),
        pyproject="adds",
    )
    passthrough_replay: PassthroughAnswer = _option(
        "empty",
        "what a passthrough request meets in replay: 'empty' an empty 204 response, 'block' a NetworkBlockedError",
        _Choice(PASSTHROUGH_ANSWERS),
        pyproject="fills",
    )
    parse_cache: bool = _option(
        True,
        "keep what the parser accepted of a cassette over 256 KB in a cache keyed by the XXH3-128 hash of "
        "its bytes ($VCR_TRANSPORT_CACHE_DIR, else $XDG_CACHE_HOME/vcr_transport/parse, else "
        "~/.cache/vcr_transport/parse), so the next replay of the same bytes skips parsing; False neither "
        "reads nor writes it (nor does 0, false, no or off in the environment variable)",
        _FLAG,
        pyproject="fills",
        env=PARSE_CACHE_VARIABLE,
    )

    # --- recording: also the recording transports ----------------------------------------------------------
    redact_names: tuple[str, ...] = _option(
        (),
        "more secret names (whole names and name suffixes)",
        _Strings("a list of names"),
        *_EVERYWHERE,
        pyproject="adds",
    )
    redact_patterns: tuple[str | re.Pattern[str], ...] = _option(
        (),
        "more regular expressions whose matches are secrets (one that matches the empty string is refused)",
        _Regexes(substituted=True),
        *_EVERYWHERE,
        pyproject="adds",
    )
    redact_with: tuple[Callable[[str], str], ...] = _option(
        (),
        "functions that get every string and return it with their secrets replaced (one that raises or returns "
        "a non-string breaks the recording, never the live call: closing raises a CassetteError naming it)",
        _Functions(),
        *_EVERYWHERE,
    )
    shared_as: str = _option(
        "",
        "the owner of this block's calls in a cassette several tests share (the pytest plugin gives each test "
        "on a shared path its node id): each request line names it, a recording replaces only its calls at "
        "commit (the others stay; under a lock, so pytest-xdist's workers merge in turn), and replay answers "
        "from its calls alone (from every call when none is its own); '' (default): the cassette is not shared",
        _Name(),
        *_EVERYWHERE,
        marker=False,
    )
    keep_failures: bool = _option(
        False,
        "keep calls that got no response or a 401/403, recordings worse than the complete cassette they "
        "replace (a call ended closed_early or error, a last answer of 429/5xx where the older cassette's "
        "got a success), and recordings whose block ended with an exception (never one cut by Ctrl-C or an "
        "exit); by default such a recording leaves the older cassette as it was",
        _FLAG,
        *_EVERYWHERE,
    )
    early_stop_ok: bool = _option(
        False,
        "the code under test stops streams early on purpose: a call whose response it closed before the end "
        'is recorded as an intended early stop ("early_stop": "intended" on its call_end), which verify '
        "--strict accepts; without it an early stop is a problem there",
        _FLAG,
        *_EVERYWHERE,
    )
    plain_bodies: bool = _option(
        True,
        "while recording, ask the upstream for uncompressed responses (accept-encoding: identity), so the "
        "cassette holds readable text; False forwards the caller's accept-encoding and keeps the compressed "
        "wire form",
        _FLAG,
        *_EVERYWHERE,
    )

    # --- the block or test around the cassette: transport() (the mode only), use_cassette(), the marker ---
    mode: Mode | None = _option(
        None,
        "the mode (off, record, replay, record-on-miss, auto, check); None leaves it to the pytest option "
        "--vcr-mode, then VCR_TRANSPORT_MODE, then [tool.vcr_transport], then auto (see _config)",
        _Mode(),
        "transport",
        "block",
        pyproject="read",
        env=ENVIRONMENT_VARIABLE,
        flags=("--vcr-mode", "compat: --record-mode, --disable-recording"),
        compat="replay",
        shown="`'auto'`",
    )
    unplayed: UnplayedAction = _option(
        "error",
        "what recorded calls that no request asked for do when the block ends or the test passed: 'error' "
        "raises UnplayedCallsError, 'warn' warns UnplayedCallsWarning, 'partial' raises only when some "
        "calls were played and some not, 'ignore' leaves them (the compatibility mode's default, as vcrpy)",
        _Choice(UNPLAYED_ACTIONS),
        "block",
        ini="vcr_unplayed",
        compat="ignore",
    )
    max_age: float | None = _option(
        None,
        "a replayed cassette recorded (its header's created) more than this many days ago is stale: "
        "on_expiry says what that does; None: a cassette never goes stale",
        _Days(),
        pyproject="fills",
        ini="vcr_transport_max_age",
    )
    on_expiry: ExpiryAction = _option(
        "warn",
        "what a stale cassette (max_age) does: 'warn' says so once per run in the plugin's summary (outside "
        "pytest, a CassetteExpiredWarning); 'fail' fails the test (the block's first request) naming the "
        "cassette, its age and the fix; 'record-on-miss' replays it and records from the first request it "
        "can't answer (never under CI, where it replays)",
        _Choice(EXPIRY_ACTIONS),
        pyproject="fills",
        ini="vcr_transport_on_expiry",
    )
    block_network: bool | str = _option(
        False,
        "in replay, the network guard for the block: every route beyond loopback, DNS (port 53) to any address "
        "and loopback proxies raise NetworkBlockedError (on for a test's cassette under the pytest plugin; False "
        "on the marker turns it off for that test). 'session': under the plugin, from the first replayed test "
        "on the guard stays on until the process ends (threads and atexit hooks of replayed tests too), paused "
        "only while a test records or turns it off; elsewhere as True",
        _BlockNetwork(),
        "block",
        pyproject="fills",
        ini="vcr_block_network",
        flags=("--vcr-block-network", "compat: --block-network, @pytest.mark.block_network"),
        shown="`False` (the plugin: `True`)",
    )
    allowed_hosts: tuple[str, ...] = _option(
        (),
        "hosts a replay block's network guard lets through: a glob of a name or an address (a name is "
        "resolved only when allowed, and the addresses it resolved to are then reachable), with :port for one "
        "port only, else every port (53 too); an address network; 're:' and a regular expression matched "
        "from the start (pytest-recording's --allowed-hosts)",
        _Hosts(),
        "block",
        pyproject="adds",
        ini="vcr_allowed_hosts",
        flags=("compat: --allowed-hosts, vcr_config",),
    )
    missing_ok_unused: bool = _option(
        False,
        "a missing cassette that no request asked for is no error when the block ends (the first request "
        "still raises it); the plugin's tests have it",
        _FLAG,
        "block",
        marker=False,
        shown="`False` (the plugin: `True`)",
    )

    # The names the caller gave (from_arguments, overridden): they win over a cassette header's match_on and
    # ordered even at their default value, so an explicit ordered=True still overrides an imported cassette.
    given: frozenset[str] = dataclasses.field(default=frozenset(), compare=False, repr=False)
    where: dataclasses.InitVar[str] = "Options"

    if TYPE_CHECKING:
        # What a type checker sees of the generated __init__: the options as a caller passes them (lists where
        # the fields keep tuples, text faults), so that Options(ignore_fields=["model"]) checks and a typo doesn't.
        def __init__(
            self, *, given: frozenset[str] = ..., where: str = ..., **options: Unpack[EveryOption]
        ) -> None: ...

    def __post_init__(self, where: str) -> None:
        for field in _knob_fields():
            value = getattr(self, field.name)
            if value is not field.default:
                object.__setattr__(self, field.name, _knob(field).check(value, field.name, where))

    @classmethod
    def names(cls, entry: Entry | Literal["marker"] | None = None) -> tuple[str, ...]:
        """The options an entry point takes (``"marker"`` for the marker; None: every option)."""
        return tuple(field.name for field in _knob_fields() if _takes(_knob(field), entry))

    @classmethod
    def knob(cls, name: str) -> Knob:
        return _knob(next(field for field in _knob_fields() if field.name == name))

    @classmethod
    def from_arguments(
        cls, arguments: Mapping[str, Any], *, where: str = "options", entry: Entry | Literal["marker"] | None = None
    ) -> Options:
        """Options from keyword arguments, each checked: an unknown name is a TypeError listing the valid
        ones (those ``entry`` takes), a wrong value a TypeError or ValueError naming the option."""
        valid = cls.names(entry)
        unknown = set(arguments) - set(valid)
        if unknown:
            raise TypeError(
                f"{where}: unknown option(s) {', '.join(sorted(unknown))}; valid: {', '.join(sorted(valid))}"
            )
        return cls(**arguments, given=frozenset(arguments), where=where)

    @classmethod
    def of(
        cls,
        options: Options | None,
        arguments: Mapping[str, Any],
        *,
        where: str,
        entry: Entry | None = None,
    ) -> Options:
        """What an entry point was given: an ``Options`` object, or keyword options (not both)."""
        if options is None:
            return cls.from_arguments(arguments, where=where, entry=entry)
        if not isinstance(options, Options):
            raise TypeError(f"{where}: options must be a vcr_transport.Options, not {options!r}")
        if arguments:
            raise TypeError(
                f"{where}: pass options=Options(...) or keyword options, not both (got {', '.join(sorted(arguments))})"
            )
        return options

    def overridden(self, **changes: Any) -> Options:
        """These options with ``changes``, which count as given (they win over a cassette header)."""
        return dataclasses.replace(self, **changes, given=self.given | frozenset(changes))

    def explicit(self) -> frozenset[str]:
        """The options given, or set to other than their default (by the code or ``[tool.vcr_transport]``):
        those win over a cassette header."""
        changed = {field.name for field in _knob_fields() if getattr(self, field.name) != field.default}
        return self.given | changed

    def with_settings(self, settings: Mapping[str, Any], *, where: str) -> Options:
        """These options with ``[tool.vcr_transport]`` merged: its lists in front of the code's own (``adds``),
        its single values where the code set none (``fills``; an option given at its default value counts as
        set, so the marker's and the ini's win over pyproject)."""
        added: dict[str, Any] = {}
        explicit = self.explicit()
        for field in _knob_fields():
            knob = _knob(field)
            if field.name not in settings or knob.pyproject not in ("adds", "fills"):
                continue
            extra: Any = knob.check(settings[field.name], field.name, where)
            if knob.pyproject == "adds":
                added[field.name] = (*extra, *getattr(self, field.name))
            elif field.name not in explicit:
                added[field.name] = extra
        return dataclasses.replace(self, **added) if added else self

    def with_cassette_header(self, header: Mapping[str, Any], explicit: Iterable[str], *, path: str) -> Options:
        """These options with the cassette header's ``match_on`` and ``ordered`` (written by ``import``) for
        those not in ``explicit``. A malformed value is a CassetteError naming line 1 and the field."""
        given = set(explicit)
        taken: dict[str, Any] = {}
        for name in ("match_on", "ordered"):
            if name in header and name not in given:
                try:
                    taken[name] = self.knob(name).check(header[name], name, "header")
                except (TypeError, ValueError) as error:
                    raise CassetteError(
                        path,
                        1,
                        f"header field {name}: {str(error).removeprefix('header: ')}",
                        f"correct {name} in line 1, or delete it to compare everything",
                    ) from None
        return dataclasses.replace(self, **taken) if taken else self

    def redactor(self) -> Redactor:
        """The redaction rules: the defaults plus these options' additions."""
        from ..rules._redaction import Redactor

        return Redactor(self.redact_names, self.redact_patterns, self.redact_with)

    def normalizer(self) -> Normalizer:
        """What both sides of a comparison are normalised with: ``normalize_patterns``, ``normalize_with``."""
        from ._matching import Normalizer

        patterns = ((re.compile(pattern), replacement) for pattern, replacement in self.normalize_patterns)
        return Normalizer(patterns, self.normalize_with)

    def matcher(self) -> RequestMatcher:
        """What matching compares: the defaults adjusted by these options."""
        from ._matching import RequestMatcher

        return RequestMatcher(
            ignore_headers=self.ignore_headers,
            compare_headers=self.compare_headers,
            ignore_fields=self.ignore_fields,
            match_on=self.match_on,
        )


def _knob(field: dataclasses.Field[Any]) -> Knob:
    knob: Knob = field.metadata["knob"]
    return knob


def _knob_fields() -> tuple[dataclasses.Field[Any], ...]:
    """The option fields, in declaration order (not the bookkeeping of which were given)."""
    return _OPTION_FIELDS


_OPTION_FIELDS = tuple(field for field in dataclasses.fields(Options) if "knob" in field.metadata)


def _takes(knob: Knob, entry: Entry | Literal["marker"] | None) -> bool:
    if entry is None:
        return True
    return knob.marker if entry == "marker" else entry in knob.entries


# --- settings of the project or the run, which belong to no one cassette ----------------------------------


class Setting(NamedTuple):
    """A setting read where it acts, with the columns of the options table."""

    name: str
    values: str
    default: str
    help: str
    pyproject: bool = False
    ini: str = ""
    env: str = ""


SETTINGS: tuple[Setting, ...] = (
    Setting(
        CASSETTE_DIR_SETTING,
        "a folder",
        "every `cassettes` folder under the project",
        "where the vcr-transport commands look for cassettes when given no path",
        pyproject=True,
    ),
    Setting(
        DRIFT_HOSTS_SETTING,
        'a table of vendor to hosts: `{openai = ["llm-gateway.corp.example"]}` (globs, `host:port`)',
        "none: the vendors' own hosts only",
        "more hosts `vcr-transport drift` may send a vendor's key to, over https (see the drift command)",
        pyproject=True,
    ),
    Setting(
        "parse cache folder",
        "a folder",
        "`$XDG_CACHE_HOME/vcr_transport/parse`, else `~/.cache/vcr_transport/parse`",
        "where the parse cache keeps its entries",
        env=CACHE_DIR_VARIABLE,
    ),
    Setting(
        "compatibility mode",
        "`pytest-recording`",
        "unset",
        "serve a pytest-recording suite unchanged (see Migrate from vcrpy)",
        ini=COMPAT_INI,
    ),
    Setting("CI", "set or not", "unset", "when set, auto never records: a missing cassette is an error", env="CI"),
)


def pyproject_names() -> tuple[str, ...]:
    """The keys ``[tool.vcr_transport]`` takes: the options it sets, then the project settings."""
    options = (field.name for field in _knob_fields() if _knob(field).pyproject)
    return (*options, *(setting.name for setting in SETTINGS if setting.pyproject))


def unknown_settings(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The keys of ``[tool.vcr_transport]`` that are no setting, each with the closest valid name ("" when
    none is close), so that a typo (``redact_name``) is an error rather than a rule that never applies."""
    valid = pyproject_names()
    unknown = [key for key in settings if key not in valid]
    return [(key, next(iter(difflib.get_close_matches(key, valid, n=1, cutoff=0.6)), "")) for key in unknown]


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _marked(text: str) -> str:
    """Command-line options and markers in a text as code."""
    return re.sub(r"(--[\w-]+|@pytest\.mark\.\w+)", r"`\1`", text)


# How the table shows each way [tool.vcr_transport] takes an option.
_PYPROJECT = {"adds": "adds", "fills": "default", "read": "yes", "": ""}


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _option_row(field: dataclasses.Field[Any]) -> str:
    knob = _knob(field)
    default = knob.shown or f"`{field.default!r}`"
    if knob.has_compat_default:
        default += f" (compat: `{knob.compat!r}`)"
    arguments = "all" if knob.entries == _EVERYWHERE else ", ".join(ENTRIES[entry] for entry in knob.entries)
    elsewhere = "; ".join([*([_code(knob.env)] if knob.env else []), *map(_marked, knob.flags)])
    marker = "yes" if knob.marker else ""
    return _row(
        f"`{field.name}`",
        knob.check.values,
        default,
        arguments,
        marker,
        _PYPROJECT[knob.pyproject],
        _code(knob.ini),
        elsewhere,
    )


def options_table() -> str:
    """The docs' table of every option and setting: what it takes, its default, and where it can be set."""
    rows = [
        _row(
            "option",
            "values",
            "default",
            "arguments",
            "marker",
            "`[tool.vcr_transport]`",
            "ini",
            "environment, command line",
        ),
        _row(*["---"] * 8),
        *map(_option_row, _knob_fields()),
    ]
    for setting in SETTINGS:
        name = _code(setting.name) if setting.name.isidentifier() else setting.name
        pyproject = "yes" if setting.pyproject else ""
        rows.append(
            _row(name, setting.values, setting.default, "", "", pyproject, _code(setting.ini), _code(setting.env))
        )
    return "\n".join(rows) + "\n"


# --- the keyword options' types (PEP 692), generated into _typed_options.py -------------------------------

# Each entry point's TypedDict, what it types, and the options it takes as named parameters instead.
TYPED_OPTIONS: dict[str, tuple[Entry | None, str, tuple[str, ...]]] = {
    "RecordingOptions": ("recording", "``RecordingTransport`` and ``AsyncRecordingTransport``", ()),
    "ReplayOptions": ("replay", "``ReplayTransport``", ()),
    "TransportOptions": ("transport", "``transport()`` and ``async_transport()`` (``mode`` is their own)", ("mode",)),
    "BlockOptions": ("block", "``use_cassette()`` (``mode`` is its own)", ("mode",)),
    "EveryOption": (None, "``Options(...)``", ()),
}
# The names an ``accepts`` may use, and where they come from.
_TYPING_IMPORTS = (
    ("re", "import re"),
    ("Callable", "from collections.abc import Callable"),
    ("Iterable", "from collections.abc import Iterable"),
    ("Mapping", "from collections.abc import Mapping"),
    ("Any", "from typing import Any"),
    ("Literal", "from typing import Literal"),
    ("Fault", "from ._faults import Fault"),
    ("Mode", "from ._modes import Mode"),
)


def typed_options_module() -> str:
    """The source of ``_typed_options.py``: for each entry point a TypedDict of the options it takes as keyword
    arguments, each typed as its validator ``accepts`` it (``**options: Unpack[ReplayOptions]``, PEP 692)."""
    classes: list[str] = []
    for name, (entry, what, named) in TYPED_OPTIONS.items():
        lines = [f"class {name}(TypedDict, total=False):", f'    """The keyword options of {what}."""', ""]
        lines += [
            f"    {field.name}: {_knob(field).check.accepts}"
            for field in _knob_fields()
            if _takes(_knob(field), entry) and field.name not in named
        ]
        classes.append("\n".join(lines) + "\n")
    body = "\n\n".join(classes)
    used = [line for word, line in _TYPING_IMPORTS if re.search(rf"\b{word}\b", body)]
    plain = sorted(line for line in used if line.startswith("import "))
    external = [line for line in used if line.startswith("from ") and not line.startswith("from .")]
    typing_names = sorted(line.removeprefix("from typing import ") for line in external if "typing" in line)
    abc_names = sorted(line.removeprefix("from collections.abc import ") for line in external if "abc" in line)
    imports = [*plain]
    if abc_names:
        imports.append(f"from collections.abc import {', '.join(abc_names)}")
    imports.append(f"from typing import {', '.join([*typing_names, 'TypedDict'])}")
    local = [line for line in used if line.startswith("from .")]
    all_names = "\n".join(f'    "{name}",' for name in sorted(TYPED_OPTIONS))
    return (
        '"""The keyword options of each entry point, as TypedDicts: ``**options: Unpack[ReplayOptions]`` (PEP 692)\n'
        "lets a type checker refuse an unknown option or a wrong value, and an IDE complete them.\n\n"
        "Generated from the fields of ``Options`` (``_options.typed_options_module``): do not edit, run\n"
        "``python docs/_gen.py``. ``tests/core/test_options.py`` checks that it is current.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        + "\n".join(imports)
        + "\n\n"
        + "\n".join(local)
        + ("\n\n" if local else "")
        + f"__all__ = [\n{all_names}\n]\n\n\n"
        + body
    )


# --- what the pytest plugin registers when it loads, generated into _registration.py -------------------


def _ini_help(field: dataclasses.Field[Any]) -> str:
    """What ``pytest --help`` says of an option's ini setting."""
    knob = _knob(field)
    values = ", ".join(knob.choices) if knob.choices else knob.check.values.replace("`", "")
    if isinstance(field.default, tuple):
        return f"the option {field.name} for every test, added to the marker's: {values}"
    compat = f"; {knob.compat} in the pytest-recording compatibility mode" if knob.has_compat_default else ""
    default = knob.shown.replace("`", "") or str(field.default)
    return f"the option {field.name} for every test: {values} (default: {default}{compat})"


def _wrapped(text: str, indent: int) -> str:
    """A long string as implicitly concatenated literals, one a line, each within the line length."""
    chunks: list[str] = []
    for word in text.split(" "):
        if chunks and len(chunks[-1]) + len(word) + indent + 4 <= 110:
            chunks[-1] += " " + word
        else:
            chunks.append(word)
    pieces = [chunk + " " for chunk in chunks[:-1]] + chunks[-1:]
    return "\n".join(" " * indent + _literal(piece) for piece in pieces)


def _help_literal(text: str) -> str:
    """A help text as a tuple's item, indented 8: one literal when it fits the line, as ruff would join it."""
    one = " " * 8 + _literal(text)
    return one if len(one) + 1 <= 120 else _wrapped(text, 8)


def _literal(value: str | tuple[str, ...]) -> str:
    """A string or a tuple of strings as Python source, as ruff formats it (double quotes)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    items = ", ".join(map(_literal, value))
    return f"({items},)" if len(value) == 1 else f"({items})"


def registration_module(
    compat_value: str = "",
    compat_owners: tuple[tuple[str, str, str], ...] = (),
    compat_flags: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (),
) -> str:
    """The source of ``_registration.py``: what the pytest plugin needs when it loads (the modes, the ini settings
    of the run-wide options, the keys of ``[tool.vcr_transport]``, and what the runtime's pytest-recording
    compatibility mode registers, given by ``docs/_gen.py`` from ``_compat``) as plain constants, so that a run
    that uses no cassette imports neither this module, nor ``_modes``, nor ``_compat``."""
    rows = [
        f"    (\n        {_literal(field.name)},\n        {_literal(knob.ini)},\n"
        f"{_wrapped(_ini_help(field), 8)},\n"
        f"        {_literal('args' if isinstance(field.default, tuple) else 'string')},\n"
        f"        {_literal(knob.choices)},\n    ),"
        for field in _knob_fields()
        if (knob := _knob(field)).ini and knob.marker
    ]
    owners = "".join(f"    ({', '.join(map(_literal, owner))}),\n" for owner in compat_owners)
    flags = "".join(
        f"    (\n        {_literal(flag)},\n        {_literal(dest)},\n        {_literal(action)},\n"
        f"        {_literal(choices) if choices else '()'},\n{_help_literal(text)},\n    ),\n"
        for flag, dest, action, choices, text in compat_flags
    )
    names = (
        "COMPAT_FLAGS",
        "COMPAT_INI",
        "COMPAT_OWNERS",
        "COMPAT_VALUE",
        "ENVIRONMENT_VARIABLE",
        "INI_OPTIONS",
        "MODES",
        "PYPROJECT_NAMES",
    )
    return (
        '"""What the pytest plugin registers when it loads, before any cassette is used: the modes (``--vcr-mode``),\n'
        "the ini settings of the run-wide options, and the keys ``[tool.vcr_transport]`` takes. Plain constants, so\n"
        "that loading the plugin imports none of the machinery (issue 26: free when unused).\n\n"
        "Generated from ``_modes.MODES``, the fields of ``Options`` and ``_compat``\n"
        "(``_options.registration_module``, ``_compat.registration_data``): do not edit, run ``python docs/_gen.py``.\n"
        "``tests/core/test_registration.py`` checks that it is current.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "__all__ = [\n" + "".join(f'    "{name}",\n' for name in names) + "]\n\n"
        f"MODES: tuple[str, ...] = {_literal(MODES)}\n"
        f"ENVIRONMENT_VARIABLE = {_literal(ENVIRONMENT_VARIABLE)}\n"
        f"COMPAT_INI = {_literal(COMPAT_INI)}\n"
        "# The run-wide options that a pytest ini setting sets: (option, ini setting, its help, its pytest ini type\n"
        "# (args: a list, added to the marker's), the values it takes as text when it takes only a few).\n"
        "INI_OPTIONS: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (\n" + "\n".join(rows) + "\n)\n"
        "PYPROJECT_NAMES: tuple[str, ...] = (\n"
        + "".join(f"    {_literal(name)},\n" for name in pyproject_names())
        + ")\n"
        f"COMPAT_VALUE = {_literal(compat_value)}\n"
        "# The plugins that own pytest-recording's options and marker: (the project, its package, the name pytest\n"
        "# loads it by). While one will load, the compatibility mode registers none of them.\n"
        "COMPAT_OWNERS: tuple[tuple[str, str, str], ...] = (\n" + owners + ")\n"
        "# pytest-recording's options that the compatibility mode serves: (the flag, its dest, its argparse action,\n"
        "# its choices, its help).\n"
        "COMPAT_FLAGS: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (\n" + flags + ")\n"
    )


Options.__doc__ = (
    (Options.__doc__ or "")
    + "\n\n"
    + "\n".join(f"- ``{field.name}`` (default ``{field.default!r}``): {_knob(field).help}" for field in _knob_fields())
)
