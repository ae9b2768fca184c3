"""Mode ``check``'s pairing: which recorded call each live request stands for, so that its live answer's shape
is compared with that call's answer. No I/O (the shell is ``_check.py``; the comparison ``_shape``).

A live conversation is not its recording. The vendor returns new ids (tool calls, responses) and new text,
and a multi-turn app sends them back in its next request, so after the first turn no request matches its
recorded call exactly; re-recording can't change that. A request is paired, in this order, with

1. the first unpaired recorded call it matches exactly, as replay compares requests
   (``ReplayEngine.matches``), in recorded order: check compares answers, not the order of the calls;
2. else the first unpaired recorded call at its place in the conversation: the same method and URL path,
   and the same request structure (``position``): the same keys, the same number of items in each list
   (messages, tool calls, content blocks, parts), the same ``role`` and ``type`` values, the same flags
   (``stream``) and nulls. Every other string and number is masked: the text and ids the live answers
   introduced, which the app echoes back, identify no turn; the structure does.

A request neither finds is ``Unpaired``, with why (naming the first field path where the next unpaired
call of its method and path differs): its answer is not compared, and that is no drift. Each recorded
call is paired once. Thread-safe.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ..._display import shorten, visible
from ..engine._engine import ReplayEngine
from ..engine._matching import find_first_difference
from ..format._format import RecordedCall

__all__ = ["KEPT_VALUES", "LivePairing", "Unpaired", "position"]

# The keys whose string values are part of a request's structure: who speaks (``role``), and what a
# message, content block or tool call is (``type``: text, tool_use, tool_result, function...).
KEPT_VALUES = frozenset({"role", "type"})
_TEXT = "<text>"
_NUMBER = "<number>"


def position(value: Any, key: str | None = None) -> Any:
    """``value`` (a request's comparable field) with its strings masked (but those of ``KEPT_VALUES``) and
    its numbers too; keys, list lengths, booleans and nulls kept: where a request is in its conversation."""
    if isinstance(value, dict):
        return {name: position(child, name) for name, child in value.items()}
    if isinstance(value, list):
        return [position(child) for child in value]
    if isinstance(value, str):
        return value if key in KEPT_VALUES else _TEXT
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _NUMBER
    return value


def _route(fields: dict[str, Any]) -> tuple[str, str]:
    return fields["method"], fields["url"]["path"]


def _place(fields: dict[str, Any]) -> dict[str, Any]:
    """What identifies a request's turn beyond its route: its query and body, as ``position``."""
    return {"query": position(fields["url"]["query"]), "body": position(fields["body"])}


@dataclass(frozen=True)
class Unpaired:
    """A request no recorded call stands for; ``why`` says so in a sentence."""

    why: str


class LivePairing:
    """Pairs the live requests of one cassette opened in mode ``check`` with its recorded calls (the module's
    docstring)."""

    def __init__(self, engine: ReplayEngine) -> None:
        self.engine = engine
        self._calls = engine.cassette.calls
        self._paired = [False] * len(self._calls)
        self._places: dict[int, dict[str, Any]] = {}  # call index -> its _place, worked out once
        self._lock = threading.Lock()

    def pair(self, incoming: dict[str, Any]) -> RecordedCall | Unpaired:
        """The recorded call a request (``ReplayEngine.incoming_fields``) stands for, now paired; or why
        there is none."""
        with self._lock:
            unpaired = [i for i, done in enumerate(self._paired) if not done]
            index = next((i for i in unpaired if self.engine.matches(i, incoming)), None)
            if index is None:
                found = self._at_place(incoming, unpaired)
                if isinstance(found, Unpaired):
                    return found
                index = found
            self._paired[index] = True
            return self._calls[index]

    def _at_place(self, incoming: dict[str, Any], unpaired: list[int]) -> int | Unpaired:
        """The first unpaired call of the request's route at its place in the conversation, or why none is."""
        route = _route(incoming)
        same_route = [i for i in unpaired if _route(self.engine.recorded_fields(i)) == route]
        place = _place(incoming)
        index = next((i for i in same_route if self._place_of(i) == place), None)
        return index if index is not None else Unpaired(self._why(route, same_route, place))

    def _place_of(self, index: int) -> dict[str, Any]:
        found = self._places.get(index)
        if found is None:
            found = self._places[index] = _place(self.engine.recorded_fields(index))
        return found

    def _why(self, route: tuple[str, str], same_route: list[int], place: dict[str, Any]) -> str:
        if not same_route:
            recorded = sum(_route(self.engine.recorded_fields(i)) == route for i in range(len(self._calls)))
            if not recorded:
                return "the recording has no call of this method and path"
            return f"the recording's {recorded} call(s) of this method and path were paired with earlier requests"
        nearest = same_route[0]
        difference = find_first_difference(self._place_of(nearest), place)
        assert difference is not None  # the places differ, or the call would have been paired
        path, was, now = difference
        return (
            "no unpaired recorded call of this method and path is at its place in the conversation (the next, "
            f"call {nearest}, differs at {visible(path)}: recorded {shorten(was, 60)}, live {shorten(now, 60)})"
        )
