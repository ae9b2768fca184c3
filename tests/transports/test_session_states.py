"""The session as states (``_states.py``): which state a mode opens in, the transitions (record-on-miss's cut at
its first miss, the close), the outcome as the state's, and the mode's questions answered by the ``Decision``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import httpx2
import pytest

import vcr_transport
from vcr_transport._core.engine._modes import Decision
from vcr_transport._exceptions import CassetteError
from vcr_transport._states import Checking, Off, Recording, Refused, Replaying


def _echo(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json={"echo": request.content.decode()})


def _send(transport: httpx2.BaseTransport, *bodies: str) -> list[str]:
    with httpx2.Client(transport=transport, base_url="https://api.example.test") as client:
        return [client.post("/v1/echo", content=body).json()["echo"] for body in bodies]


def test_record_on_miss_replays_then_its_first_miss_cuts_over_to_recording(cassette: Path) -> None:
    recorded = vcr_transport.transport(cassette, mode="record", inner=httpx2.MockTransport(_echo))
    assert isinstance(recorded.session.state, Recording)
    assert _send(recorded, "one", "two", "three") == ["one", "two", "three"]
    assert recorded.session.outcome() == "recorded"

    again = vcr_transport.transport(cassette, mode="record-on-miss", inner=httpx2.MockTransport(_echo))
    session = again.session
    assert isinstance(session.state, Replaying) and session.diverged_at is None
    with httpx2.Client(transport=again, base_url="https://api.example.test") as client:
        assert client.post("/v1/echo", content="one").json()["echo"] == "one"
        assert isinstance(session.state, Replaying), "a call that matches is replayed"
        assert client.post("/v1/echo", content="TWO").json()["echo"] == "TWO"
        assert isinstance(session.state, Recording), "the first miss is the transition"
        assert session.diverged_at == 1 and session.recorder is session.state.recorder
        assert session.replayer is not None, "the replayed cassette stays the session's (its requests)"
    assert session.closed and session.outcome() == session.state.outcome() == "re-recorded"
    assert [r.body for r in session.requests][-1] == b"TWO"


def test_a_missing_cassette_is_refused_until_a_request_meets_it(cassette: Path) -> None:
    transport = vcr_transport.transport(cassette, mode="replay", inner=httpx2.MockTransport(_echo))
    state = transport.session.state
    assert isinstance(state, Refused) and state.kind == "missing" and transport.session.outcome() == "not needed"
    with pytest.raises(CassetteError, match="no such cassette"):
        _send(transport, "one")
    assert transport.session.refused == 1 and transport.session.outcome() == "missing"
    assert transport.session.broken is state.error


def test_off_is_a_state_with_nothing_read_or_written(cassette: Path) -> None:
    transport = vcr_transport.transport(cassette, mode="off", inner=httpx2.MockTransport(_echo))
    assert isinstance(transport.session.state, Off)
    assert _send(transport, "one") == ["one"]
    transport.close()
    assert transport.session.outcome() == "off" and not cassette.exists()


def test_check_opens_in_checking(cassette: Path) -> None:
    _send(vcr_transport.transport(cassette, mode="record", inner=httpx2.MockTransport(_echo)), "one")
    transport = vcr_transport.transport(cassette, mode="check", inner=httpx2.MockTransport(_echo))
    state = transport.session.state
    assert isinstance(state, Checking) and transport.session.checker is state.checker
    assert _send(transport, "one") == ["one"]
    assert state.checker.checked == 1 and transport.session.outcome() == "checked"


@pytest.mark.parametrize(
    ("kind", "existed", "before", "after"),
    [
        ("missing", False, "not needed", "missing"),
        ("refused", True, "not needed", "refused"),
        ("refused", False, "not needed", "missing"),
        ("stale", True, "stale", "stale"),
    ],
)
def test_a_refused_cassettes_outcome_is_what_its_requests_met(
    kind: Literal["missing", "refused", "stale"], existed: bool, before: str, after: str
) -> None:
    state = Refused(CassetteError("c.jsonl", None, "no such cassette", "record it"), kind, existed=existed)
    assert state.outcome() == before
    assert state.excused_when_unused() is (kind != "stale")
    assert state.refuse() is state.error and state.requests == 1
    assert state.outcome() == after and not state.excused_when_unused()


@pytest.mark.parametrize(
    ("mode", "exists", "answers"),
    [  # reads, checks, reports_mismatch, records_on_miss, stops_at_miss
        ("off", True, (False, False, False, False, False)),
        ("record", True, (False, False, False, False, False)),
        ("replay", True, (True, False, True, False, False)),
        ("check", True, (True, True, False, False, False)),
        ("record-on-miss", True, (True, False, False, True, True)),
        ("record-on-miss", False, (False, False, False, True, True)),
    ],
)
def test_the_modes_questions_are_the_decisions(mode: str, exists: bool, answers: tuple[bool, ...]) -> None:
    decision = Decision(mode, readable=True, exists=exists)
    asked = (decision.checks, decision.reports_mismatch, decision.records_on_miss, decision.stops_at_miss)
    assert (Decision.reads(mode, exists=exists), *asked) == answers


def test_serves_record_on_miss_appends_and_never_stops_at_a_miss() -> None:
    decision = Decision("record-on-miss", readable=True, exists=True, appending=True)
    assert decision.records_at_start and decision.records_on_miss and not decision.stops_at_miss
