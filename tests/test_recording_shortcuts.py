"""The shortcuts of the recording path give the cassette what the long way gives: a body taken in with
``finish`` (a response that came at once), and a pending line found clear that is not searched again,
unless the redactor learned a value since."""

from __future__ import annotations

import random
from typing import Any

import pytest
from test_chunk_batches import _data, _OneByOne, _redactor, _run

from vcr_transport._core._redaction import PLACEHOLDER, Redactor
from vcr_transport._core._stream_redaction import StreamRedactor

VALUE = "opaque-LATE-learned-0123456789"


def _at_once(redactor: StreamRedactor, chunks: list[bytes]) -> list[tuple[bytes, Any]]:
    return redactor.finish([(chunk, index) for index, chunk in enumerate(chunks)])


@pytest.mark.parametrize("seed", range(3))
def test_a_body_handed_to_finish_is_recorded_as_chunk_by_chunk(seed: int) -> None:
    rng = random.Random(seed)
    taken = 0
    for _ in range(400):
        chunks = [_data(rng) for _ in range(rng.randint(1, 4))]
        learned = rng.random() < 0.5
        options: dict[str, Any] = rng.choice([{}, {"deltas": False}])
        at_once = _at_once(StreamRedactor(_redactor(learned), **options), chunks)
        assert at_once == _run(_OneByOne(_redactor(learned), **options), chunks), chunks
        taken += at_once != [(chunk, index) for index, chunk in enumerate(chunks)]
    assert taken > 0, "some bodies had something redacted"


def test_a_value_learned_after_a_line_was_found_clear_is_still_removed_from_it() -> None:
    redactor = Redactor()
    stream = StreamRedactor(redactor, deltas=False)
    line = f'{{"note": "{VALUE}'.encode()
    assert stream.feed_many([(line, 0)]) == []  # found clear, and pending: no line break yet
    redactor.learn(VALUE)  # another call's header, say
    [(recorded, tag)] = stream.finish()
    assert VALUE.encode() not in recorded and PLACEHOLDER.encode() in recorded
    assert tag == 0


def test_a_line_found_clear_is_not_searched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    redactor = Redactor()
    searched: list[str] = []
    redact_text = Redactor.redact_text

    def counted(self: Redactor, text: str, *, response: bool = False) -> str:
        searched.append(text)
        return redact_text(self, text, response=response)

    monkeypatch.setattr(Redactor, "redact_text", counted)
    stream = StreamRedactor(redactor, deltas=False)
    body = b'{"choices": [{"message": {"content": "' + b"word " * 200 + b'"}}]}'
    assert stream.finish([(body[:100], 0), (body[100:], 1)]) == [(body[:100], 0), (body[100:], 1)]
    assert searched == []
    stream = StreamRedactor(redactor, deltas=False)
    stream.feed_many([(body, 0)])
    redactor.learn(VALUE)
    assert stream.finish() == [(body, 0)]
    assert searched == [body.decode()], "a value learned since the check: the pending line is searched again"
