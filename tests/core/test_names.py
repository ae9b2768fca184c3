"""Tests of ``vcr_transport._core.rules._names``: ``words_of`` (the words of a name), ``decode_escapes`` and
``Names.is_secret`` for JSON keys (kind 0), headers (kind 1) and query parameters (kind 2)."""

from __future__ import annotations

import pytest
from helpers import finishes_within

from vcr_transport import PLACEHOLDER, Redactor
from vcr_transport._core.rules._names import Names, decode_escapes, words_of

JSON, HEADER, QUERY = 0, 1, 2


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("api_key", ("api", "key")),
        ("X-Api-Key", ("x", "api", "key")),
        ("clientSecret", ("client", "secret")),
        ("accesstoken", ("access", "token")),
        ("%61pi_key", ("api", "key")),
        ("\\u0061pi_key", ("api", "key")),
        ("max_tokens", ("max", "tokens")),
        ("monkey", ("monkey",)),
    ],
)
def test_words_of_splits_separators_case_runs_and_escapes(name: str, words: tuple[str, ...]) -> None:
    assert words_of(name) == words


def test_decode_escapes_decodes_percent_unicode_and_json_slash() -> None:
    assert decode_escapes("%61pi%5Fkey") == "api_key"
    assert decode_escapes("\\u0061pi\\u005fkey") == "api_key"
    assert decode_escapes("a\\/b") == "a/b"
    assert decode_escapes("plain_name") == "plain_name"


@pytest.mark.parametrize(
    "name", ["api_key", "x-api-key", "clientSecret", "%61pi_key", "Authorization", "github_token", "DB_PASSWORD"]
)
def test_secret_names_are_recognised_as_json_keys_and_headers(name: str) -> None:
    names = Names()
    assert names.is_secret(name, JSON)
    assert names.is_secret(name, HEADER)


@pytest.mark.parametrize(
    "name", ["token_type", "max_tokens", "next_page_token", "eos_token", "input_tokens", "idempotency_key", "model"]
)
def test_descriptors_counters_and_cursors_are_not_secret(name: str) -> None:
    names = Names()
    assert not names.is_secret(name, JSON)
    assert not names.is_secret(name, QUERY)


def test_key_and_code_are_secret_in_a_query_only() -> None:
    names = Names()
    assert names.is_secret("key", QUERY)  # Gemini's ?key=
    assert names.is_secret("code", QUERY)  # OAuth's authorization code
    assert not names.is_secret("key", JSON)  # Gemini's metadata key
    assert not names.is_secret("code", JSON)  # an error code
    assert names.is_secret("Fastly-Key", HEADER)
    assert not names.is_secret("sort_key", JSON)


def test_extra_names_add_whole_names_and_suffixes() -> None:
    default = Names()
    assert not default.is_secret("x-tenant-handle", HEADER)
    names = Names(["tenant_handle"])
    assert names.is_secret("X-Tenant-Handle", HEADER)
    assert names.is_secret("my_tenant_handle", JSON)  # a user's name is a suffix too
    assert "handle" in names.words and "handle" not in default.words


def test_words_are_lower_case_last_words_and_searched_words_have_no_contained_duplicates() -> None:
    names = Names()
    assert {"key", "token", "secret", "password"} <= names.words
    assert all(word == word.lower() for word in names.words)
    assert "key" in names.searched and "apikey" not in names.searched  # "key" finds "apikey"
    searched = names.searched
    assert not any(a != b and a in b for a in searched for b in searched)


def test_a_long_run_together_name_is_split_in_linear_time() -> None:
    """Run-together lower case was split by trying, from each start, every split of the rest: a JSON key or header
    name of one long word (a cassette chooses it) took cubic time (2,000 characters: 0.4 s; 16,000: minutes)."""
    key = "x" * 20_000 + "apikey"
    value = {key: "s3cr3tvalue9", "q" * 20_000: "kept", "monkey" * 3_000 + "ey": "kept too"}
    results: list[object] = []
    finishes_within(60, lambda: results.extend([words_of(key), Redactor().redact_value(value)]))
    assert results == [("x" * 20_000, "api", "key"), {**value, key: PLACEHOLDER}]
