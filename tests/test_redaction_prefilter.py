"""``Redactor.could_redact``, the prefilter that lets replay (and recording) skip redacting a request body or
URL: whenever it answers False, redacting the text, any piece of it, or the JSON it holds changes nothing.
Proved on thousands of generated texts built from near misses: secret names, catalogue samples and their
prefixes, URL and query punctuation, escapes, learned values and their encodings."""

from __future__ import annotations

import base64
import json
import random
from typing import Any

from test_secrets_catalogue import FAKES, PLANTED

from vcr_transport import Redactor
from vcr_transport._core._bodies import _redact_json, redact_url, stored_body

LEARNED = "Zq7learnedSecretValue42"
NAMES = ["api_key", "apiKey", "password", "token", "max_tokens", "next_page_token", "key", "code", "sig", "X-Api-Key"]
WORDS = ["hello", "world", "model", "messages", "content", "role", "user", "tokens", "monkey", "keyboard"]
PUNCTUATION = [" ", "\n", "/", "://", "@", "?", "&", "#", ";", "=", ":", '"', "{", "}", "[", "]", ",", "\\n", "\\\\"]
ESCAPES = ["%41", "%2F", "%e9", "%C3%A9", "\\u0041", "\\u00e9", "\\/", '\\"', "\u0130", "\u212a", "\u017f", "é"]
NEAR_MISSES = [
    "sk-",
    "sk",
    "AK",
    "AC",
    "SK",
    "eyJ",
    "ghp",
    "basic ",
    "bearer ",
    "Bearer abc",
    "aws",
    "password=",
    "basically",
]


def _fragments(rng: random.Random) -> list[str]:
    samples = [fake(rng)[0] for fake in FAKES.values()]
    learned = [LEARNED, LEARNED[:12], base64.b64encode(LEARNED.encode()).decode(), LEARNED.upper()]
    return [*NAMES, *WORDS, *PUNCTUATION, *ESCAPES, *NEAR_MISSES, *samples, *learned]


def _text(rng: random.Random, fragments: list[str], rate: float = 0.25) -> str:
    # Mostly plain words, so that a good share of the texts can't be redacted and the claim is tested.
    plain = [*WORDS, " ", "/", ",", ":", "\n"]
    pieces = [rng.choice(fragments if rng.random() < rate else plain) for _ in range(rng.randint(1, 12))]
    return "".join(pieces)


def _json_value(rng: random.Random, fragments: list[str], depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.25:
        return {_key(rng, fragments): _json_value(rng, fragments, depth + 1) for _ in range(rng.randint(1, 4))}
    if depth < 3 and roll < 0.35:
        return [_json_value(rng, fragments, depth + 1) for _ in range(rng.randint(0, 3))]
    if roll < 0.45:
        return rng.choice([True, False, None, 7, 2.5])
    if roll < 0.5:  # JSON text inside a JSON string, as a tool call's arguments
        return json.dumps({_key(rng, fragments): _text(rng, fragments, 0.03)})
    return _text(rng, fragments, 0.03)


def _key(rng: random.Random, fragments: list[str]) -> str:
    return rng.choice(NAMES) if rng.random() < 0.03 else _text(rng, fragments, 0.03)[:24] or "k"


def _redactor(rng: random.Random) -> Redactor:
    redactor = Redactor()
    if rng.random() < 0.5:
        redactor.learn(LEARNED)
    return redactor


def test_could_redact_false_means_redact_text_changes_nothing_in_the_text_or_any_piece() -> None:
    rng = random.Random(20261130)
    fragments = _fragments(rng)
    texts = [_text(rng, fragments) for _ in range(4000)]
    texts += [carried for _, _, carried, _ in PLANTED]
    unredactable = 0
    for text in texts:
        seed = rng.random()
        if _redactor(random.Random(seed)).could_redact(text):
            continue
        unredactable += 1
        assert _redactor(random.Random(seed)).redact_text(text) == text, text
        start = rng.randrange(len(text) + 1)
        piece = text[start : rng.randint(start, len(text))]
        assert _redactor(random.Random(seed)).redact_text(piece) == piece, (text, piece)
        url = "https://h.test/" + text.replace(" ", "/")
        if not _redactor(random.Random(seed)).could_redact(url):
            assert redact_url(url, _redactor(random.Random(seed))) == url
    # Enough texts pass the prefilter for the claim to be tested, and enough fail it for it to filter.
    assert 1000 < unredactable < len(texts) - 1000


def test_could_redact_false_means_a_json_body_keeps_every_key_and_string() -> None:
    rng = random.Random(11302026)
    fragments = _fragments(rng)
    unredactable = 0
    for number in range(2000):
        document = {_key(rng, fragments): _json_value(rng, fragments) for _ in range(rng.randint(1, 5))}
        text = json.dumps(document, ensure_ascii=number % 2 == 0)
        seed = rng.random()
        if _redactor(random.Random(seed)).could_redact(text):
            continue
        unredactable += 1
        assert _redactor(random.Random(seed)).redact_value(document) == document, text
        assert _redact_json(json.loads(text), _redactor(random.Random(seed))) == document, text
        stored = stored_body(text.encode(), "application/json", _redactor(random.Random(seed)))
        assert stored == {"json": document}
    assert 300 < unredactable < 1700


def test_every_catalogue_sample_and_secret_named_json_key_could_be_redacted() -> None:
    redactor = Redactor()
    for name, position, carried, _ in PLANTED:
        assert redactor.could_redact(carried), (name, position)
    for name in ("api_key", "apiKey", "password", "token", "X-Api-Key"):
        assert redactor.could_redact(json.dumps({"a": {name: "value-of-it"}})), name


def test_a_learned_value_or_a_user_rule_makes_any_text_redactable() -> None:
    redactor = Redactor()
    plain = f"the value {base64.b64encode(LEARNED.encode()).decode()} here"
    assert not redactor.could_redact(plain)
    redactor.learn(LEARNED)
    assert redactor.could_redact(plain)
    assert Redactor(patterns=[r"nothing"]).could_redact("hello")
    assert Redactor(callables=[str.upper]).could_redact("hello")
