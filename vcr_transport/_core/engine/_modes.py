"""The modes, and the decision each request meets. No I/O: the caller says whether the cassette exists and
whether ``CI`` is set; the shells only carry out the step decided here.

| mode             | what a request meets                                                              |
|------------------|-----------------------------------------------------------------------------------|
| ``off``          | pass-through; no cassette is touched                                              |
| ``record``       | forwarded and recorded into a fresh cassette                                      |
| ``replay``       | answered from the cassette; a miss is an error                                    |
| ``record-on-miss`` | replayed while requests match; from the first miss on, forwarded and recorded   |
| ``auto``         | ``replay`` when the cassette exists, else ``record`` (never under ``CI``)         |
| ``check``        | forwarded live (the caller gets the live answer), its shape compared with the     |
|                  | recorded call's; nothing is written (allowed under ``CI``: it records nothing)    |

Under ``CI`` a recording mode that came from the configuration (pyproject, ``VCR_TRANSPORT_MODE``) does not
record either: ``record`` is refused, ``record-on-miss`` replays. An explicit choice (the argument,
``--vcr-mode``) records.

``serve`` replays its cassettes to any request in any order, each call as often as it is asked for; its
record-on-miss *appends*: each miss is forwarded and recorded after the recorded calls, which keep answering
(``Decision(appending=True)``).

``check`` answers no request from the cassette: each goes to the client's own transport, and the recorded
call it matches (as replay would choose it) is what its answer's shape is compared with (``_check``); a
passthrough request is forwarded, unchecked.

A missing cassette refuses every request (fails closed) in every mode that would read it (one that exists
but can't be read fails where it is opened, before any request: see ``_session``).

Passthrough rules (``host/path`` globs: the telemetry endpoints in ``TELEMETRY_PASSTHROUGH`` plus the
``passthrough`` option) keep a request out of the cassette, whatever the mode: it is forwarded while the
cassette records (or in ``off``), and while it replays it meets ``passthrough_replay``: ``empty`` (an empty
204) or ``block`` (NetworkBlockedError). Ignored hosts (the ``ignore_hosts`` option, vcrpy's ``ignore_hosts``
and ``ignore_localhost``) never meet the cassette: in every mode their requests go on to the client's own
transport, unrecorded.
To add a mode: add it to ``Mode`` (``MODES`` is its values), to ``concrete_mode`` if it resolves to another,
and to ``Decision`` (the session's questions of the mode are its properties: ``reads``, ``checks``,
``reports_mismatch``, ``records_on_miss``, ``stops_at_miss``), and the state it opens in to the session
(``_session.CassetteSession._first_state``, the states in ``_states.py``).
"""

from __future__ import annotations

import enum
import fnmatch
import threading
from collections.abc import Callable, Iterable
from typing import Literal, get_args
from urllib.parse import SplitResult, urlsplit

from ..._exceptions import CassetteError, ModeError
from .._memo import Memo

__all__ = [
    "ENVIRONMENT_VARIABLE",
    "MODES",
    "PASSTHROUGH_ANSWERS",
    "RECORDING_MODES",
    "TELEMETRY_PASSTHROUGH",
    "Decision",
    "Mode",
    "Step",
    "check_mode",
    "concrete_mode",
    "expired_mode",
    "is_ignored_host",
    "parse_passthrough_rule",
    "passthrough_rule_for",
]

# A mode name, as the type of every ``mode=`` argument (a type checker refuses mode="recrod").
Mode = Literal["off", "record", "replay", "record-on-miss", "auto", "check"]
MODES: tuple[Mode, ...] = get_args(Mode)
ENVIRONMENT_VARIABLE = "VCR_TRANSPORT_MODE"
PASSTHROUGH_ANSWERS = ("empty", "block")

# Telemetry that SDKs and frameworks send beside the calls under test, with ids made up per run: never
# recorded. OpenAI Agents SDK tracing (its own httpx2 client in a background thread); LangSmith and Logfire
# (they send with requests or OpenTelemetry exporters today, which don't go through httpx, but a
# configuration that routes them through httpx meets these rules).
TELEMETRY_PASSTHROUGH: tuple[str, ...] = (
    "api.openai.com/v1/traces/ingest",
    "api.smith.langchain.com/*",
    "*.smith.langchain.com/*",
    "logfire-api.pydantic.dev/*",
    "logfire-*.pydantic.dev/*",
)


def parse_passthrough_rule(rule: str) -> tuple[str, str]:
    """``(host glob, path glob)`` of a rule written ``host[:port][/path]`` (globs allowed; a leading
    ``https://`` or ``http://`` is dropped; no path means every path). A malformed rule is a ValueError."""
    text = rule.split("://", 1)[1] if "://" in rule else rule
    host, slash, path = text.partition("/")
    if not host or any(c in host for c in " ?#@"):
        raise ValueError(
            f"passthrough rule {rule!r} has no host: write host/path with globs, e.g. api.example.com/v1/traces/*"
        )
    return host.lower(), (slash + path) if slash else "/*"


def is_ignored_host(url: str, hosts: Iterable[str]) -> bool:
    """Whether the URL's host (lower case, without port) matches one of the host globs."""
    host = (urlsplit(url).hostname or "").lower()
    return any(_glob_matches(host, glob) for glob in hosts)


def passthrough_rule_for(url: str, rules: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The first rule the URL falls under, or None. A rule's host matches with or without the URL's port."""
    parts = urlsplit(url)
    return _rule_for_path(parts.path or "/", _rules_for_host(parts, rules))


def _rule_for_path(path: str, rules: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The first of ``rules`` whose path glob matches ``path`` (``/x/*`` matches ``/x`` too), or None."""
    for rule in rules:
        path_glob = rule[1]
        if _glob_matches(path, path_glob) or (path_glob.endswith("/*") and path == path_glob[:-2]):
            return rule
    return None


def _rules_for_host(parts: SplitResult, rules: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The rules whose host glob matches the host of a split URL, with or without its port."""
    host = (parts.hostname or "").lower()
    hosts = (host, f"{host}:{parts.port}") if parts.port is not None else (host,)
    return tuple(rule for rule in rules if any(_glob_matches(h, rule[0]) for h in hosts))


def _glob_matches(name: str, glob: str) -> bool:
    """``fnmatch.fnmatchcase(name, glob)``, without compiling a pattern for a glob whose only wildcard is ``*``
    (every telemetry rule's): its literal pieces in order, the first at the start and the last at the end."""
    if "?" in glob or "[" in glob:
        return fnmatch.fnmatchcase(name, glob)
    pieces = glob.split("*")
    if len(pieces) == 1:
        return name == glob
    first, last = pieces[0], pieces[-1]
    if len(name) < len(first) + len(last) or not name.startswith(first) or not name.endswith(last):
        return False
    position, end = len(first), len(name) - len(last)
    for piece in pieces[1:-1]:
        position = name.find(piece, position, end)
        if position < 0:
            return False
        position += len(piece)
    return True


def check_mode(name: str, source: str) -> str:
    """``name`` when it is a mode; else a ModeError naming where it came from and the valid modes."""
    if name not in MODES:
        raise ModeError(f"unknown vcr_transport mode {name!r} (from {source}); valid modes: {', '.join(MODES)}")
    return name


RECORDING_MODES = ("record", "record-on-miss")


def concrete_mode(mode: str, path: str, *, exists: bool, ci: bool, how_to_record: str, configured: str = "") -> str:
    """``auto`` made into ``replay`` or ``record`` for one cassette; other modes as they are. ``configured``:
    where the mode came from when that is the project's configuration (pyproject, the environment), not an
    explicit choice (the argument, ``--vcr-mode``). Under ``CI`` such a mode never records: ``record`` is a
    CassetteError saying where it came from, ``record-on-miss`` replays (a miss fails)."""
    if ci and configured and mode in RECORDING_MODES:
        if mode == "record-on-miss":
            return "replay"
        raise CassetteError(
            path,
            None,
            f"mode {mode} from {configured} never records when CI is set",
            "to record on purpose, choose it for the run: pytest --vcr-mode=record (or mode='record' as the argument)",
        )
    if mode != "auto":
        return mode
    if exists:
        return "replay"
    if ci:
        raise CassetteError(
            path,
            None,
            "no such cassette, and auto mode never records when CI is set",
            f"record it where the real API is reachable: {how_to_record}; then commit it",
        )
    return "record"


def expired_mode(mode: str, path: str, *, ci: bool, how_to_record: str) -> str:
    """The mode of a replayed cassette older than max_age with ``on_expiry="record-on-miss"``: replay becomes
    record-on-miss (not under ``CI``: the rule of a recording mode that comes from the configuration); the
    other modes stay."""
    if mode != "replay":
        return mode
    configured = "on_expiry='record-on-miss'"
    return concrete_mode("record-on-miss", path, exists=True, ci=ci, how_to_record=how_to_record, configured=configured)


def _check_decision_arguments(mode: str, passthrough_replay: str) -> None:
    if mode not in MODES or mode == "auto":
        raise ValueError(f"a decision needs a concrete mode, not {mode!r}")
    if passthrough_replay not in PASSTHROUGH_ANSWERS:
        raise ValueError(f"passthrough_replay must be one of {PASSTHROUGH_ANSWERS}, not {passthrough_replay!r}")


class Step(enum.Enum):
    """What the shell does with a request."""

    PASS_THROUGH = "pass-through"  # send it to the inner transport, record nothing
    REFUSE = "refuse"  # the cassette can't be read: answer with its diagnostic
    REPLAY = "replay"  # answer it from the cassette
    RECORD = "record"  # forward it and record the exchange
    CHECK = "check"  # forward it, and compare its answer's shape with the recorded call's (nothing written)
    RAISE = "raise"  # after a miss in replay: the mismatch reaches the caller
    EMPTY = "empty"  # a passthrough request while replaying: an empty 204, nothing recorded
    BLOCK = "block"  # a passthrough request while replaying: NetworkBlockedError, nothing recorded


_HostRules = Memo[str, tuple[tuple[str, str], ...]]
# The passthrough rules parsed (the telemetry's, then the user's), with the memo of the rules of each host
# (netloc -> its rules: a client's requests go to few hosts, most under none), by the user's rules: once per
# configuration, so that every cassette of a pytest session with the same options shares them.
_PASSTHROUGH: Memo[tuple[str, ...], tuple[tuple[tuple[str, str], ...], _HostRules]] = Memo(64)


def _passthrough_rules(rules: tuple[str, ...]) -> tuple[tuple[tuple[str, str], ...], _HostRules]:
    def parsed() -> tuple[tuple[tuple[str, str], ...], _HostRules]:
        return tuple(parse_passthrough_rule(rule) for rule in (*TELEMETRY_PASSTHROUGH, *rules)), Memo()

    return _PASSTHROUGH.get(rules, parsed)


class Decision:
    """The state of one cassette in one concrete mode: which step the next request meets, and what a replay
    miss turns into. Thread-safe: the first miss of record-on-miss switches to recording exactly once.

    ``appending`` is record-on-miss as ``serve`` does it, for a cassette that answers any matching request
    as often as it comes: every request is replayed first, and each miss is recorded after the recorded
    calls, which go on answering (the recording, holding every recorded call, starts with the cassette)."""

    def __init__(
        self,
        mode: str,
        *,
        readable: bool,
        exists: bool,
        passthrough: Iterable[str] = (),
        passthrough_replay: str = "empty",
        ignore_hosts: Iterable[str] = (),
        appending: bool = False,
    ) -> None:
        _check_decision_arguments(mode, passthrough_replay)
        self.mode = mode
        self.passthrough, self._host_rules = _passthrough_rules(tuple(passthrough))
        self.passthrough_replay = passthrough_replay
        self.ignore_hosts = tuple(host.lower() for host in ignore_hosts)
        self.readable = readable
        # record-on-miss with no cassette yet records from the first call.
        self.recording = mode == "record" or (mode == "record-on-miss" and readable and not exists)
        self.appending = appending and mode == "record-on-miss" and readable and exists
        self.diverged_at: int | None = None
        self._lock = threading.Lock()

    @staticmethod
    def reads(mode: str, *, exists: bool) -> bool:
        """Whether a session in ``mode`` reads its cassette (replay, check; record-on-miss when it exists)."""
        return mode in ("replay", "check") or (mode == "record-on-miss" and exists)

    @property
    def checks(self) -> bool:
        """Mode check: the cassette read is compared with, never answered from."""
        return self.mode == "check"

    @property
    def reports_mismatch(self) -> bool:
        """A replay miss is the run's mismatch (replay), not where recording takes over (record-on-miss)."""
        return self.mode == "replay"

    @property
    def records_on_miss(self) -> bool:
        """A miss of replay is recorded (record-on-miss): a replayed WebSocket session keeps what its client
        sent, to send it again live."""
        return self.mode == "record-on-miss"

    @property
    def stops_at_miss(self) -> bool:
        """The first miss ends replay (record-on-miss; appending replays on)."""
        return self.mode == "record-on-miss" and not self.appending

    @property
    def records_at_start(self) -> bool:
        """Whether the recording starts with the cassette (record, record-on-miss of a missing cassette, and
        appending) rather than at the first miss."""
        return self.recording or self.appending

    def step_for(self, url: str) -> Step:
        """The step a request to ``url`` meets: an ignored host passes through, then the passthrough rules,
        then ``next_step()``."""
        if self.ignore_hosts and is_ignored_host(url, self.ignore_hosts):
            return Step.PASS_THROUGH
        parts = urlsplit(url)
        rules = self._host_rules.get(parts.netloc, lambda: _rules_for_host(parts, self.passthrough))
        if rules and _rule_for_path(parts.path or "/", rules) is not None:
            if self.mode in ("off", "check") or self.recording:
                return Step.PASS_THROUGH
            return Step.EMPTY if self.passthrough_replay == "empty" else Step.BLOCK
        return self.next_step()

    def next_step(self) -> Step:
        if self.mode == "off":
            return Step.PASS_THROUGH
        if not self.readable:
            return Step.REFUSE
        if self.mode == "check":
            return Step.CHECK
        return Step.RECORD if self.recording else Step.REPLAY

    def after_miss(self, call_index: int, start_recording: Callable[[int], None]) -> Step:
        """A replayed request missed at ``call_index``: replay raises; record-on-miss records from there on
        (appending: records this request, the recording already started). The first miss calls
        ``start_recording(call_index)`` (under a lock, before any request can meet the RECORD step); later
        misses find it started."""
        if self.mode != "record-on-miss":
            return Step.RAISE
        if self.appending:
            return Step.RECORD
        with self._lock:
            if not self.recording:
                start_recording(call_index)
                self.diverged_at = call_index
                self.recording = True
        return Step.RECORD
