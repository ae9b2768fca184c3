"""The shape of an answer, for ``vcr-transport drift``: does the live API still answer as the cassette says?
No I/O (``_drift`` sends the requests).

An answer's shape is what code reading it depends on, never its values: the status, the media type, and the
body's structure, as one set of types per field path (``body.choices[*].message.content``: ``string``;
``[*]`` is any element of an array, the union of them all). A stream's shape is its event types (the
``event:`` name, else the data's ``type`` or ``object``, else ``data``) and, per type, the union of its
events' data shapes (``events[content_block_delta].delta.text``). Two shapes differ by the paths that came,
went or changed types (``compare_shapes``), in field-path order. ``shape_changes`` is the one comparison of a
recorded call with a live answer, for ``drift`` and for the mode ``check`` alike.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..format._format import RecordedCall, decode_json
from ._view import NOT_JSON, CallView, call_view

__all__ = [
    "DriftCall",
    "DriftReport",
    "PlannedCall",
    "Shape",
    "ShapeChange",
    "answer_shape",
    "compare_shapes",
    "live_answer",
    "shape_changes",
]


def _type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _walk(value: Any, path: str, into: dict[str, set[str]]) -> None:
    into[path].add(_type(value))
    if isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{path}.{key}", into)
    elif isinstance(value, list):
        for item in value:
            _walk(item, f"{path}[*]", into)


@dataclass
class Shape:
    """What ``drift`` compares: the status, the media type and the types at each field path."""

    status: int | None
    media_type: str
    fields: dict[str, set[str]] = field(default_factory=dict)


def _event_type(name: str, data: Any) -> str:
    if name:
        return name
    if isinstance(data, dict):
        for key in ("type", "object"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return "data"


def answer_shape(view: CallView) -> Shape:
    """The shape of a call's answer (this module's docstring)."""
    fields: dict[str, set[str]] = defaultdict(set)
    media_type = view.content_type.split(";", 1)[0].strip()
    if view.stream is not None:
        for event in view.stream:
            try:
                data: Any = decode_json(event.data)
            except ValueError:
                name = event.name or (event.data.strip() if event.data.strip() == "[DONE]" else "data")
                fields[f"events[{name}]"].add("text")
                continue
            _walk(data, f"events[{_event_type(event.name, data)}]", fields)
    elif view.json is not NOT_JSON:
        _walk(view.json, "body", fields)
    elif view.body:
        fields["body"].add("binary" if view.binary else "text")
    return Shape(view.status, media_type, dict(fields))


@dataclass
class ShapeChange:
    """One way the live answer's shape differs: a field path, its types in the recording and live
    (``"-"`` where the path is absent)."""

    path: str
    recorded: str
    live: str

    def as_json(self) -> dict[str, str]:
        return {"field_path": self.path, "recorded": self.recorded, "live": self.live}


def _types(types: set[str] | None) -> str:
    return "|".join(sorted(types)) if types else "-"


def compare_shapes(recorded: Shape, live: Shape) -> list[ShapeChange]:
    """How ``live`` differs from ``recorded``: status, media type, then each field path, in order."""
    changes: list[ShapeChange] = []
    if recorded.status != live.status:
        changes.append(ShapeChange("status", str(recorded.status), str(live.status)))
    if recorded.media_type != live.media_type:
        changes.append(ShapeChange("content-type", recorded.media_type or "-", live.media_type or "-"))
    for path in sorted(recorded.fields.keys() | live.fields.keys()):
        before, after = recorded.fields.get(path), live.fields.get(path)
        if before != after:
            changes.append(ShapeChange(path, _types(before), _types(after)))
    return changes


def live_answer(
    recorded: RecordedCall, status: int, headers: list[tuple[str, str]], chunks: list[bytes], elapsed: float = 0.0
) -> RecordedCall:
    """A live answer to ``recorded``'s request as a recorded call (its body as ``chunks``, content-encoded as
    ``headers`` say), for the same view and shape."""
    live = RecordedCall(
        recorded.index, recorded.method, recorded.url, recorded.request_headers, recorded.body, status, headers
    )
    live.chunks, live.offsets, live.outcome = chunks, [elapsed] * len(chunks), "complete"
    live.size, live.event_total = sum(map(len, chunks)), len(chunks)
    return live


def shape_changes(recorded: RecordedCall, live: RecordedCall) -> list[ShapeChange]:
    """How the live answer's shape differs from the recorded call's (``compare_shapes``); empty: the same."""
    return compare_shapes(answer_shape(call_view(recorded)), answer_shape(call_view(live)))


@dataclass
class DriftCall:
    """One recorded call sent again: ``identical`` shape, ``changed`` (with how), ``failed`` (``error`` says
    why: refused, no credentials, no connection), or ``skipped`` (``skipped`` says why: a WebSocket session, a
    call that may change state, a host of no vendor, a credential drift can't put back)."""

    path: str
    index: int
    method: str
    url: str
    outcome: str
    changes: list[ShapeChange] = field(default_factory=list)
    error: str = ""
    skipped: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "call": self.index,
            "method": self.method,
            "url": self.url,
            "outcome": self.outcome,
            "changes": [change.as_json() for change in self.changes],
            "error": self.error or None,
            "skipped": self.skipped or None,
        }


@dataclass
class DriftReport:
    cassettes: int
    calls: list[DriftCall]

    @property
    def exit_status(self) -> int:
        """2 when a call could not be sent (refused or failed), else 1 when a shape changed, else 0 (skipped
        calls count for nothing)."""
        outcomes = {call.outcome for call in self.calls}
        return 2 if "failed" in outcomes else 1 if "changed" in outcomes else 0


@dataclass
class PlannedCall:
    """``drift --dry-run``: the verdict on one recorded call, without sending it. ``url`` is where it would go
    with the recorded (redacted) values, no key in it; ``vendor`` whose host that is ("" for none);
    ``key_from`` the environment variable a removed credential would be put back from ("" when none was
    removed); ``error`` why it would be refused (exit 2), ``skipped`` why it would be left out."""

    path: str
    index: int
    method: str
    url: str
    host: str
    key_from: str = ""
    error: str = ""
    vendor: str = ""
    skipped: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "call": self.index,
            "method": self.method,
            "url": self.url,
            "host": self.host,
            "vendor": self.vendor or None,
            "key_from": self.key_from or None,
            "error": self.error or None,
            "skipped": self.skipped or None,
        }
