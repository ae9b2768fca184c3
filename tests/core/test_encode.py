"""The line encoders (``_encode``): a line is the text ``json.dumps`` writes (msgspec writes it, json where the
two would differ), and a call_end says ``early_stop: intended`` only for a call closed early on purpose."""

from __future__ import annotations

import datetime
import json
import random
import struct
from typing import Any

import pytest

from vcr_transport._core.format._encode import call_end_line, encode_line, header_age_days, header_line


def _json_text(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def _random_float(rng: random.Random) -> float:
    return struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]  # type: ignore[no-any-return]


def test_lines_are_the_text_json_writes() -> None:
    rng = random.Random(17)
    values: list[Any] = [_random_float(rng) for _ in range(2000)]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-8, 20) for _ in range(2000)]
    values += [float("nan"), float("inf"), -0.0, 2**70, -(2**64), True, None, (1, 2.5), 'é\u2028\x00\x7f"\\/']
    values += ["".join(chr(rng.randint(0, 0xD7FF)) for _ in range(40)) for _ in range(200)]
    for value in values:
        line = {"type": "request", "body": {"json": {"v": value, "nested": [[value], {"k": value}]}}}
        assert encode_line(line) == _json_text(line).encode(), repr(value)
    with pytest.raises(UnicodeEncodeError):
        encode_line({"text": "\ud800"})  # as writing json's text of it always failed


def test_encode_line_writes_what_json_dumps_writes() -> None:
    odd: list[Any] = [
        0.0,
        -0.0,
        1e16,
        1e15 + 0.5,
        1e-05,
        0.0001,
        5e-324,
        1.7976931348623157e308,
        2**63,
        2**64,
        -(10**30),
    ]
    odd += ["\u2028\u2029", "\x00\x1f\x7f\x85", "\U0001f600", "\ufeff", '"\\/</script>', True, None, {}, []]
    for value in odd:
        line = {"type": "event", "v": value, "l": [value, {"n": value}]}
        expected = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        assert encode_line(line) == expected, value
    for value in (float("nan"), float("inf"), -float("inf")):
        line = {"v": value}
        assert encode_line(line) == (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def test_only_a_call_closed_early_is_marked_intended() -> None:
    assert call_end_line(3, 2, "closed_early", early_stop_ok=True)["early_stop"] == "intended"
    assert "early_stop" not in call_end_line(3, 2, "complete", early_stop_ok=True)
    assert "early_stop" not in call_end_line(3, 2, "error", ("ReadError", "cut"), early_stop_ok=True)
    assert "early_stop" not in call_end_line(3, 2, "closed_early")


def test_a_headers_age_is_read_from_created_or_is_none() -> None:
    now = datetime.datetime(2026, 12, 5, 12, tzinfo=datetime.UTC)
    assert header_age_days({"created": "2026-12-03T12:00:00+00:00"}, now) == 2.0
    assert header_age_days({"created": "2026-12-05T00:00:00"}, now) == 0.5  # no zone: UTC
    for header in ({}, {"created": 7}, {"created": "yesterday"}):
        assert header_age_days(header, now) is None
    line = header_line({"openai": "2.1.0"}, shared=True)
    assert line["format_version"] == 1 and line["versions"] == {"openai": "2.1.0"} and line["shared"] is True
    assert header_age_days(line, datetime.datetime.now(datetime.UTC)) is not None
