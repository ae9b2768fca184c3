"""Tests of ``vcr_transport._core.rules._json``: redacting JSON text (``redact_json``: secret-named values,
values a sibling names, JSON inside a JSON string) and the helpers that decide what goes (``removes_value``,
``is_schema``, ``names_a_secret``, ``token_is_credential``, ``key_may_be_secret``, ``string_leaves``)."""

from __future__ import annotations

import json

import pytest
from helpers import finishes_within

from vcr_transport import PLACEHOLDER, Redactor
from vcr_transport._core.rules._json import (
    Context,
    folded,
    is_schema,
    json_string,
    key_may_be_secret,
    names_a_secret,
    redact_json,
    removes_value,
    string_leaves,
    token_is_credential,
)
from vcr_transport._core.rules._names import Names
from vcr_transport._core.rules._scan import scan_document

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"


def _context(response: bool = False) -> Context:
    return Context(Names(), response, [], lambda text, _response: text)


def test_a_secret_named_value_goes_whole_and_is_found() -> None:
    ctx = _context()
    text = json.dumps({"model": "gpt-4o", "api_key": KEY, "max_tokens": 256, "auth": {"password": "hunter22!"}})
    redacted = json.loads(redact_json(text, ctx))
    assert redacted == {"model": "gpt-4o", "api_key": PLACEHOLDER, "max_tokens": 256, "auth": PLACEHOLDER}
    assert sorted(ctx.found) == sorted([KEY, "hunter22!"])


def test_text_without_secret_names_is_returned_unchanged() -> None:
    text = '{"model": "claude-3-5-sonnet", "messages": [{"role": "user", "content": "hi"}], "token_type": "bearer"}'
    ctx = _context()
    assert redact_json(text, ctx) == text
    assert ctx.found == []


def test_booleans_null_and_schemas_under_secret_names_stay() -> None:
    tool = {"type": "object", "properties": {"api_key": {"type": "string", "description": "The key"}}}
    text = json.dumps({"tools": [{"parameters": tool}], "token": None, "password": True})
    ctx = _context()
    assert json.loads(redact_json(text, ctx)) == json.loads(text)
    assert ctx.found == []
    assert is_schema({"type": "string", "description": "The key"})
    assert not is_schema({"type": "string", "value": KEY})
    assert not is_schema({})


def test_a_value_named_secret_by_its_sibling_goes() -> None:
    text = json.dumps({"env": [{"name": "MISTRAL_API_KEY", "value": KEY}, {"name": "REGION", "value": "eu-west-1"}]})
    ctx = _context()
    redacted = json.loads(redact_json(text, ctx))
    assert redacted["env"][0] == {"name": "MISTRAL_API_KEY", "value": PLACEHOLDER}
    assert redacted["env"][1] == {"name": "REGION", "value": "eu-west-1"}
    assert ctx.found == [KEY]


@pytest.mark.parametrize(
    ("name", "value"),
    [("NAME", "VALUE"), ("parameter_name", "parameter_value"), ("ENV_VAR", "Value"), ("Key", "secret_value")],
)
def test_a_sibling_is_read_in_every_spelling_the_parsed_path_reads(name: str, value: str) -> None:
    """The keys are compared ``folded`` (case and ``_`` aside), as ``Redactor.redact_value`` compares them: a
    stream's event is redacted as text, and a spelling only one path knew kept the secret there."""
    text = f'data: {{"{name}": "DB_PASSWORD", "{value}": "s3cr3t-v4lue", "{name}s": "x"}}\n\n'
    ctx = _context(response=True)
    assert redact_json(text, ctx) == text.replace("s3cr3t-v4lue", PLACEHOLDER)
    assert ctx.found == ["s3cr3t-v4lue"]
    assert Redactor().redact_text(text, response=True) == text.replace("s3cr3t-v4lue", PLACEHOLDER)
    assert [found for _, found in scan_document(Redactor(), text)] == ["s3cr3t-v4lue"], "and scan reports it"


def test_the_value_a_sibling_names_goes_only_in_that_object() -> None:
    text = (
        '[{"value": "before-the-name", "meta": {"x": [1, {"value": "nested-stays"}]}, "name": "DB_PASSWORD"},'
        ' {"name": "REGION", "value": "eu-west-1"}, {"name": "API_TOKEN", "value": "cut-off-obj'
    )
    ctx = _context(response=True)
    redacted = redact_json(text, ctx)
    assert ctx.found == ["before-the-name"], "a value that doesn't end is left to the stream's next piece"
    assert "nested-stays" in redacted and "eu-west-1" in redacted and "before-the-name" not in redacted


def test_many_objects_named_by_their_siblings_are_read_in_linear_time() -> None:
    """Each named object was found by reading the text from its start (20,000 objects: minutes); a list of
    secrets (SSM, Kubernetes) or a cassette chooses that many, and each value is learned too."""
    count = 20_000
    text = json.dumps([{"name": "DB_PASSWORD", "value": f"s3cr3t-{index:05d}"} for index in range(count)])
    results: list[str] = []
    finishes_within(60, lambda: results.append(Redactor().redact_text(text + " and s3cr3t-00042", response=True)))
    assert results[0].count(PLACEHOLDER) == count + 1
    assert "s3cr3t-" not in results[0]


@pytest.mark.parametrize(
    "piece",
    [
        '{"name": "DB_PASSWORD", "value": ',  # a sibling names each value a secret
        '{"password": ',  # a secret-named key
        '{"password": [',
        '"password": {"\\"',  # each value starts inside a string of the walk before: out of step with it
    ],
)
def test_values_that_dont_close_are_read_in_linear_time(piece: str) -> None:
    """Each secret value was read from its start to the text's end to find where it closes, and none does: 25,000
    characters took half a second, 240,000 took 47 s (a cassette's line chooses its length)."""
    text = piece * 40_000
    ctx = _context(response=True)
    results: list[str] = []
    finishes_within(60, lambda: results.append(redact_json(text, ctx)))
    assert results == [text], "a value that doesn't end is left to the stream's next piece"
    assert ctx.found == []


def test_a_closed_value_inside_one_that_does_not_close_still_goes() -> None:
    text = '{"password": {"meta": {"password": "hunter22!"}, "other": [1, {"token": "abc123def456"'
    ctx = _context()
    assert redact_json(text, ctx) == text.replace('"hunter22!"', f'"{PLACEHOLDER}"').replace(
        '"abc123def456"', f'"{PLACEHOLDER}"'
    )
    assert ctx.found == ["hunter22!", "abc123def456"]


def test_json_inside_a_tool_calls_arguments_string_is_redacted() -> None:
    arguments = json.dumps({"city": "Paris", "api_key": KEY})
    text = json.dumps({"function": {"name": "get_weather", "arguments": arguments}})
    ctx = _context()
    redacted = json.loads(redact_json(text, ctx))
    assert json.loads(redacted["function"]["arguments"]) == {"city": "Paris", "api_key": PLACEHOLDER}
    assert KEY in ctx.found


def test_a_bare_token_in_a_response_goes_only_when_it_looks_like_a_credential() -> None:
    names = Names()
    assert not removes_value(names, "token", " Paris", response=True)  # a logprobs text token
    assert removes_value(names, "token", KEY, response=True)
    assert removes_value(names, "token", " Paris", response=False)  # in a request it is a secret name
    assert token_is_credential(KEY) and not token_is_credential("hello")
    assert not removes_value(names, "max_tokens", 100, response=False)


def test_names_a_secret_and_key_may_be_secret() -> None:
    names = Names()
    assert names_a_secret(names, "OPENAI_API_KEY")
    assert names_a_secret(names, "https://myvault.vault.azure.net/secrets/db-conn/0123abcd")
    assert not names_a_secret(names, "REGION")
    assert not names_a_secret(names, 42)
    assert key_may_be_secret(names, "\\u0061pi_key")
    assert not key_may_be_secret(names, "model")


def test_small_helpers() -> None:
    assert folded("Parameter_Value") == "parametervalue"
    assert json_string("a\\u00e9\\n") == "a\u00e9\n"
    assert json_string("bad\\") is None
    assert list(string_leaves({"a": ["x", 1, {"b": "y"}], "c": None})) == ["x", "y"]
