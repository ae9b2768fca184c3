"""ReplayEngine.choose (the exact-match fast path) decides exactly as select(incoming_fields(...)) does.

Random cassettes and random requests, some the exact bytes of a recorded call, some nearly so (one field
changed, a secret in the body or URL, another JSON spelling, a content-encoding, NaN...), through two engines
with the same options: one chooses, the other runs the field-by-field path. Every request must get the same
call, or the same mismatch (call and field), and leave both engines in the same state."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pytest

from vcr_transport import ReplayMismatch
from vcr_transport._core._format import Cassette, RecordedCall
from vcr_transport._core._options import Options
from vcr_transport._core._replay import ReplayEngine

SECRET = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
URLS = [
    "https://api.test/v1/chat/completions",
    "https://api.test/v1/chat/completions?page=2",
    "https://api.test/v1/models/m-1",
    "http://127.0.0.1:8000/v1/sse/3",
]
HEADER_SETS = [
    [("content-type", "application/json"), ("accept", "application/json")],
    [("Content-Type", "application/json; charset=utf-8"), ("accept", "*/*"), ("x-trace", "1")],
    [("content-type", "text/plain")],
    [("content-type", "application/json"), ("content-encoding", "gzip")],
    [("content-type", "application/json"), ("authorization", "[secret removed]")],
    [],
]
VALUES: list[Any] = [
    {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    {"model": "m", "messages": [{"role": "user", "content": "hi"}], "timestamp": 5},
    {"n": 1},
    {"n": 1.0},
    {"n": True},
    {"n": [1, 2, {"x": None}]},
    {"text": "caf\u00e9 \u2603"},
    {"key": SECRET},
    {"api_key": "abc"},
    {"n": float("nan")},
    [1, "two"],
    "just a string",
]


def _recorded_body(rng: random.Random) -> Any:
    kind = rng.random()
    if kind < 0.15:
        return None
    if kind < 0.25:
        return {"text": rng.choice(["hello", "a=1&b=2", ""])}
    return {"json": rng.choice(VALUES)}


def _encodings(value: Any) -> list[bytes]:
    """Ways a client may spell a JSON value."""
    spellings = [
        json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode(),
        json.dumps(value).encode(),
        json.dumps(value, separators=(",", ":")).encode(),
    ]
    try:
        spellings.append(msgspec.json.encode(value))
    except (TypeError, ValueError):
        pass
    return spellings


def _sent_body(rng: random.Random, body: Any) -> bytes:
    if body is None:
        return b"" if rng.random() < 0.8 else b"{}"
    if "text" in body:
        return str(body["text"]).encode()
    value = body["json"]
    if rng.random() < 0.1:  # one value changed
        value = rng.choice(VALUES)
    spellings = _encodings(value)
    return spellings[0] if rng.random() < 0.6 else rng.choice(spellings)


def _request(rng: random.Random, call: RecordedCall) -> tuple[str, str, list[tuple[str, str]], bytes]:
    """A request like ``call``: exactly it most of the time, else with one part changed."""
    method, url, headers = call.method, call.url, list(call.request_headers)
    change = rng.random()
    if change < 0.05:
        method = rng.choice(["GET", "POST", "post"])
    elif change < 0.1:
        url = rng.choice([*URLS, f"https://api.test/v1/models/{SECRET}", "https://api.test/v1/x?api_key=abc"])
    elif change < 0.15:
        headers = list(rng.choice(HEADER_SETS))
    body = _sent_body(rng, call.body)
    headers = [pair for pair in headers if pair[0] != "content-length"]
    headers += [("content-length", str(len(body))), ("user-agent", rng.choice(["a/1", "b/2"]))]
    rng.shuffle(headers)
    return method, url, headers, body


def _cassette(rng: random.Random, size: int) -> Cassette:
    calls = []
    for index in range(size):
        body = _recorded_body(rng)
        if body is None:
            sent = b""
        elif "json" in body:
            sent = _encodings(body["json"])[0]
        else:
            sent = str(body["text"]).encode()
        headers = [*rng.choice(HEADER_SETS), ("content-length", str(len(sent)))]  # as the recorder keeps them
        method = rng.choice(["POST", "POST", "GET", "post"])
        calls.append(RecordedCall(index, method, rng.choice(URLS), headers, body, status=200, outcome="complete"))
    return Cassette("c.jsonl", {}, calls)


OPTIONS: list[dict[str, Any]] = [
    {},
    {"ordered": False},
    {"ignore_fields": ["n"]},
    {"ignore_headers": ["content-type"]},
    {"compare_headers": ["content-length"]},
    {"match_on": ["method", "path"]},
    {"match_on": ["uri", "body"], "ordered": False},
    {"redact_patterns": ["hello"]},
]


def _outcome(step: Any) -> tuple[Any, ...]:
    try:
        return ("call", step().index)
    except ReplayMismatch as mismatch:
        return ("mismatch", mismatch.call_index, mismatch.field_path, repr(mismatch.recorded), repr(mismatch.incoming))


@pytest.mark.parametrize("options", OPTIONS, ids=[json.dumps(o) for o in OPTIONS])
def test_choose_decides_as_the_field_by_field_path(options: dict[str, Any]) -> None:
    chosen = Options.from_arguments(options, where="test")
    rng = random.Random(json.dumps(options))
    exact = slow = 0
    for _ in range(80):
        cassette = _cassette(rng, rng.randint(1, 6))
        engines = [
            ReplayEngine(cassette, chosen.matcher(), chosen.redactor(), ordered=chosen.ordered) for _ in range(2)
        ]
        fast, reference = engines
        for _ in range(len(cassette.calls) + 1):
            source = cassette.calls[rng.randrange(len(cassette.calls))]
            due = fast.position if chosen.ordered else fast.played.index(False) if False in fast.played else None
            if due is not None and due < len(cassette.calls) and rng.random() < 0.85:
                source = cassette.calls[due]
            method, url, headers, body = _request(rng, source)
            quick = (
                due is not None
                and due < len(cassette.calls)
                and fast._is_exactly(due, method, url, fast._headers_of(headers), body)
            )
            exact += quick
            slow += not quick
            got = _outcome(lambda: fast.choose(method, url, headers, body))  # noqa: B023
            expected = _outcome(
                lambda: reference.select(reference.incoming_fields(method, url, headers, body))  # noqa: B023
            )
            assert got == expected, (options, method, url, headers, body, source)
            assert (fast.position, fast.played) == (reference.position, reference.played)
    # Both paths were taken, often; never the fast one when the replay has a pattern of its own (it could
    # redact anything).
    assert slow > 40, slow
    if "redact_patterns" in options:
        assert exact == 0
    else:
        assert exact > 40, exact


def test_a_body_the_replay_redacts_never_matches_its_unredacted_recording() -> None:
    """A cassette recorded without a rule the replay has: the fast path must not match what the field-by-field
    path would refuse (the replay's redaction changes the incoming body)."""
    call = RecordedCall(0, "POST", URLS[0], [("content-type", "application/json")], {"json": {"k": "hello"}})
    cassette = Cassette("c.jsonl", {}, [call])
    chosen = Options.from_arguments({"redact_patterns": ["hello"]}, where="test")
    engine = ReplayEngine(cassette, chosen.matcher(), chosen.redactor())
    headers = [("content-type", "application/json")]
    with pytest.raises(ReplayMismatch) as raised:
        engine.choose("POST", URLS[0], headers, b'{"k":"hello"}')
    assert raised.value.field_path == "body.k"
    plain = Options.from_arguments({}, where="test")
    assert (
        ReplayEngine(cassette, plain.matcher(), plain.redactor()).choose("POST", URLS[0], headers, b'{"k":"hello"}')
        is call
    )
