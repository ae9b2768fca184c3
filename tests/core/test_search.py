"""Tests of ``vcr_transport._core.rules._search``: the one Aho-Corasick pass over the rules' probes
(``Search.build``, ``Search.scan``, ``Search.scan_bytes``) and what a ``Scan`` tells of it (keywords,
prefixes, glued prefixes, encoded prefixes, learned forms, secret-named JSON keys); ``searched_words``."""

from __future__ import annotations

import base64
import json

from vcr_transport._core.rules._catalogue import KEYWORD_PATTERNS
from vcr_transport._core.rules._names import Names
from vcr_transport._core.rules._search import Search, searched_words

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
CLEAN = "The capital of France is Paris. Ask again tomorrow."
NAMES = Names()


def _search(forms: tuple[str, ...] = (), prefilter: bool = False) -> Search:
    return Search.build(NAMES.searched, forms, prefilter)


def test_a_catalogue_keyword_is_found_and_not_in_clean_text() -> None:
    search = _search()
    found = [KEYWORD_PATTERNS[index] for index in search.scan(f"Authorization: Bearer {KEY}").keywords()]
    assert b"bearer" in found
    assert search.scan(CLEAN).keywords() == []
    assert search.scan(CLEAN).hits == []


def test_a_prefix_is_found_by_the_prefilter_only() -> None:
    prefilter = _search(prefilter=True)
    raw = f"here is {KEY}".encode()
    assert prefilter.scan_bytes(raw, raw.lower()).prefixed()
    assert prefilter.scan_bytes(raw, raw.lower()).prefilter
    numbers = b"[1, 2.5, 300, 4e10]"
    assert not prefilter.scan_bytes(numbers, numbers).prefixed()
    prose = CLEAN.encode()  # short prefixes occur in any prose ("sk" in "Ask"): the prefilter is a first cut
    assert prefilter.scan_bytes(prose, prose.lower()).prefixed()
    assert _search().words == 0  # the redactor's search holds no prefixes


def test_a_glued_prefix_and_an_encoded_prefix_are_found() -> None:
    search = _search()
    assert search.scan(f"config/keys/{KEY}").glued()
    assert not search.scan(f"key {KEY}").glued()
    assert search.scan("blob " + base64.b64encode(KEY.encode()).decode()).encoded()
    assert search.scan("hex " + KEY.encode().hex()).encoded()
    assert search.scan("&#115;&#107;-proj").encoded()
    assert not search.scan(CLEAN).encoded()


def test_learned_forms_are_found_case_blind_and_clear_of_says_when_none_can_be() -> None:
    forms = ("Zx81mQp0rT5vW2yB",)
    search = _search(forms)
    assert search.exact
    assert search.scan("cookie was Zx81mQp0rT5vW2yB!").learned()
    assert search.scan("ZX81MQP0RT5VW2YB").learned()  # lower-cased both sides: a candidate only
    assert not search.scan(CLEAN).learned()
    assert search.scan(CLEAN).clear_of(forms)
    assert not search.scan("Zx81mQp0rT5vW2yB").clear_of(forms)
    assert not search.scan(CLEAN).clear_of(("other",))  # not the search's own forms: no promise


def test_name_words_are_found_and_a_json_key_holding_one_may_be_secret() -> None:
    search = _search()
    body = json.dumps({"model": "gpt-4o", "api_key": "x" * 20})
    scan = search.scan(body)
    assert scan.words
    assert scan.may_hold_secret_key(NAMES.is_secret, scan.words)
    prose = search.scan('Pass your API key, then "go": done')
    assert not prose.may_hold_secret_key(NAMES.is_secret, prose.words)
    counter = search.scan(json.dumps({"max_tokens": 256}))
    assert not counter.may_hold_secret_key(NAMES.is_secret, counter.words)


def test_key_maps_positions_back_to_the_text_also_past_non_ascii() -> None:
    text = 'caf\u00e9 "api_key": 1'
    scan = _search().scan(text)
    start = scan.data.index(b"api_key")
    assert scan.key(start, start + len(b"api_key")) == "api_key"
    assert not scan.unsure
    assert _search().scan("\u0130stanbul token").unsure  # U+0130 lower-cases to two characters


def test_searched_words_drop_words_that_hold_another() -> None:
    assert searched_words(frozenset({"key", "apikey", "token", "secret"})) == ("key", "secret", "token")
    assert "apikey" not in NAMES.searched and "key" in NAMES.searched
