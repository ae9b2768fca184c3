"""Tests of ``vcr_transport._core.rules._catalogue``, the credential catalogue, and of known-value
propagation: every catalogued format is removed in every representation a call can carry it in; a value
removed by name leaves the whole cassette; and real vendor traffic, tool schemas, booleans, cursors and
tokenizer tokens come through untouched."""

from __future__ import annotations

import base64
import json
import random
import re
import string
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from helpers import finishes_within, recording
from real_wire import vendor_traffic
from upstream import Received, Reply, Upstream
from vendors import Sdk

from vcr_transport import PLACEHOLDER, Redactor
from vcr_transport._core.rules._catalogue import CATALOGUE, GITLEAKS_CATALOGUE, catalogue_matches
from vcr_transport._core.rules._gitleaks_rules import GITLEAKS_RULES
from vcr_transport._core.rules._redaction import _decode_escapes

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def _run(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64(rng: random.Random, n: int) -> str:
    return _run(rng, ALNUM + "+/", n)


# For every catalogue format: (text that carries the credential, the part of it that must go).
Fake = Callable[[random.Random], tuple[str, str]]


def _token(make: Callable[[random.Random], str]) -> Fake:
    def fake(rng: random.Random) -> tuple[str, str]:
        value = make(rng)
        return value, value

    return fake


FAKES: dict[str, Fake] = {
    "openai/anthropic/deepseek sk- key": _token(
        lambda r: r.choice(["sk-proj-", "sk-svcacct-", "sk-ant-api03-", "sk-ant-admin01-", "sk-"]) + _run(r, ALNUM, 40)
    ),
    "google api key": _token(lambda r: "AIza" + _run(r, ALNUM + "_-", 35)),
    "google oauth access token": _token(lambda r: "ya29.a0" + _run(r, ALNUM + "_-", 60)),
    "google oauth client secret": _token(lambda r: "GOCSPX-" + _run(r, ALNUM, 28)),
    "hugging face token": _token(lambda r: "hf_" + _run(r, ALNUM, 34)),
    "hugging face org token": _token(lambda r: "api_org_" + _run(r, ALNUM, 34)),
    "groq key": _token(lambda r: "gsk_" + _run(r, ALNUM, 52)),
    "xai key": _token(lambda r: "xai-" + _run(r, ALNUM, 80)),
    "replicate token": _token(lambda r: "r8_" + _run(r, ALNUM, 37)),
    "perplexity key": _token(lambda r: "pplx-" + _run(r, ALNUM, 48)),
    "fireworks key": _token(lambda r: "fw_" + _run(r, ALNUM, 24)),
    "langsmith key": _token(lambda r: "lsv2_pt_" + _run(r, HEX, 32) + "_" + _run(r, HEX, 10)),
    "tavily key": _token(lambda r: "tvly-dev-" + _run(r, ALNUM, 32)),
    "pinecone key": _token(lambda r: "pcsk_" + _run(r, ALNUM, 6) + "_" + _run(r, ALNUM, 60)),
    "nvidia nim key": _token(lambda r: "nvapi-" + _run(r, ALNUM + "_-", 64)),
    "cerebras key": _token(lambda r: "csk-" + _run(r, ALNUM, 48)),
    "together key": _token(lambda r: "tgp_v1_" + _run(r, ALNUM + "_-", 43)),
    "elevenlabs key": _token(lambda r: "sk_" + _run(r, HEX, 48)),
    "voyage key": _token(lambda r: "pa-" + _run(r, ALNUM + "_-", 43)),
    "anyscale key": _token(lambda r: "esecret_" + _run(r, ALNUM, 26)),
    "openai ephemeral key": _token(lambda r: "ek_" + _run(r, ALNUM, 32)),
    "vault token": _token(lambda r: r.choice(["hvs.", "hvb."]) + _run(r, ALNUM + "_-", 92)),
    "docker token": _token(lambda r: "dckr_pat_" + _run(r, ALNUM + "_-", 27)),
    "tailscale key": _token(lambda r: "tskey-auth-k" + _run(r, ALNUM, 10) + "CNTRL-" + _run(r, ALNUM, 33)),
    "posthog key": _token(lambda r: r.choice(["phx_", "phc_"]) + _run(r, ALNUM, 43)),
    "mapbox secret token": _token(lambda r: "sk.eyJ1Ijoi" + _run(r, ALNUM, 40) + "." + _run(r, ALNUM + "_-", 22)),
    "1password service account token": _token(lambda r: "ops_eyJzaWduSW5BZGRyZXNzIjoi" + _run(r, ALNUM, 120)),
    "netlify/heroku-style prefixed token": _token(lambda r: r.choice(["nfp_", "HRKU-"]) + _run(r, ALNUM, 40)),
    "cloudflare origin ca key": _token(lambda r: "v1.0-" + _run(r, HEX, 24) + "-" + _run(r, HEX, 146)),
    "microsoft teams webhook": lambda r: (
        "https://contoso.webhook.office.com/webhookb2/"
        + (secret := f"{_run(r, HEX, 8)}-{_run(r, HEX, 4)}@{_run(r, HEX, 8)}/IncomingWebhook/{_run(r, HEX, 32)}"),
        secret,
    ),
    "zapier webhook": lambda r: (
        "https://hooks.zapier.com/hooks/catch/" + (secret := _run(r, string.digits, 7) + "/" + _run(r, ALNUM, 7)) + "/",
        secret,
    ),
    "telegram bot token in a url path": lambda r: (
        "https://api.telegram.org/bot"
        + (secret := _run(r, string.digits, 10) + ":" + _run(r, ALNUM + "_-", 35))
        + "/sendMessage",
        secret,
    ),
    "aws secret access key after an access key id": lambda r: (
        f"AKIA{_run(r, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)} {(secret := _b64(r, 40))}",
        secret,
    ),
    "github token": _token(lambda r: r.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) + _run(r, ALNUM, 36)),
    "github fine-grained token": _token(lambda r: "github_pat_" + _run(r, ALNUM, 22) + "_" + _run(r, ALNUM, 59)),
    "gitlab token": _token(lambda r: "glpat-" + _run(r, ALNUM + "_-", 20)),
    "npm token": _token(lambda r: "npm_" + _run(r, ALNUM, 36)),
    "pypi token": _token(lambda r: "pypi-AgEIcHlwaS5vcmc" + _run(r, ALNUM + "_-", 70)),
    "slack token": _token(lambda r: "xoxb-" + _run(r, string.digits, 12) + "-" + _run(r, ALNUM, 24)),
    "slack app token": _token(
        lambda r: "xapp-1-A" + _run(r, string.ascii_uppercase + string.digits, 10) + "-1234567890-" + _run(r, HEX, 64)
    ),
    "slack webhook": lambda r: (
        "https://hooks.slack.com/services/"
        + (secret := f"T{_run(r, ALNUM, 8)}/B{_run(r, ALNUM, 8)}/{_run(r, ALNUM, 24)}"),
        secret,
    ),
    "discord webhook": lambda r: (
        "https://discord.com/api/webhooks/" + (secret := _run(r, string.digits, 18) + "/" + _run(r, ALNUM + "_-", 68)),
        secret,
    ),
    "telegram bot token": lambda r: (
        "https://api.telegram.org/bot"
        + (secret := _run(r, string.digits, 10) + ":AA" + _run(r, ALNUM + "_-", 33))
        + "/getMe",
        secret,
    ),
    "stripe secret key": _token(lambda r: r.choice(["sk_live_", "rk_live_", "sk_test_"]) + _run(r, ALNUM, 24)),
    "stripe webhook secret": _token(lambda r: "whsec_" + _run(r, ALNUM, 32)),
    "sendgrid key": _token(lambda r: "SG." + _run(r, ALNUM + "_-", 22) + "." + _run(r, ALNUM + "_-", 43)),
    "twilio key or account sid": _token(lambda r: r.choice(["SK", "AC"]) + _run(r, HEX, 32)),
    "mailgun key": _token(lambda r: "key-" + _run(r, HEX, 32)),
    "shopify token": _token(lambda r: "shpat_" + _run(r, HEX, 32)),
    "digitalocean token": _token(lambda r: "dop_v1_" + _run(r, HEX, 64)),
    "linear key": _token(lambda r: "lin_api_" + _run(r, ALNUM, 40)),
    "notion token": _token(lambda r: "ntn_" + _run(r, ALNUM, 46)),
    "postman key": _token(lambda r: "PMAK-" + _run(r, HEX, 24) + "-" + _run(r, HEX, 34)),
    "databricks token": _token(lambda r: "dapi" + _run(r, HEX, 32)),
    "doppler token": _token(lambda r: "dp.pt." + _run(r, ALNUM, 43)),
    "grafana token": _token(lambda r: "glsa_" + _run(r, ALNUM, 32) + "_" + _run(r, HEX, 8)),
    "sentry token": _token(lambda r: "sntrys_" + _run(r, ALNUM, 60)),
    "new relic key": _token(lambda r: "NRAK-" + _run(r, string.ascii_uppercase + string.digits, 27)),
    "atlassian token": _token(lambda r: "ATATT3" + _run(r, ALNUM, 180)),
    "age secret key": _token(lambda r: "AGE-SECRET-KEY-1" + _run(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    "aws access key id": _token(lambda r: r.choice(["AKIA", "ASIA"]) + _run(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
    "aws secret access key after an aws name": lambda r: (
        f"aws_secret_access_key = {(secret := _b64(r, 40))}",
        secret,
    ),
    "azure connection string key": lambda r: (
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={(secret := _b64(r, 86) + '==')};"
        "EndpointSuffix=core.windows.net",
        secret,
    ),
    "json web token": _token(
        lambda r: "eyJhbGciOiJIUzI1NiJ9.eyJ" + _run(r, ALNUM + "_-", 40) + "." + _run(r, ALNUM + "_-", 43)
    ),
    "pem private key": lambda r: (
        (block := "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(_b64(r, 64) for _ in range(4)))
        + "\n-----END RSA PRIVATE KEY-----",
        block.split("\n", 1)[1],
    ),
    "basic credentials": lambda r: (
        "Basic " + (secret := base64.b64encode(f"user:{_run(r, ALNUM, 16)}".encode()).decode()),
        secret,
    ),
    "bearer credential": lambda r: (f"BEARER {(secret := _run(r, ALNUM, 30) + '7')}", secret),
    "h11 illegal header value": lambda r: (
        f"Illegal header value b'{(secret := 'Zq' + _run(r, string.ascii_lowercase, 24))}\\n'",
        secret,
    ),
}
# gitleaks' rules: the sample generated from each (tools/gen_credentials.py records it beside the rule).
FAKES.update({rule.name: _token(lambda _, sample=rule.sample: sample) for rule in GITLEAKS_RULES})
# Formats that are tokens on their own: these go into every position; the others (URLs, connection
# strings, PEM blocks, "Scheme credential", messages) into the positions where text like them occurs.
# (gitleaks' keyword rules are URLs and shapes found by a keyword inside them: not tokens.)
TOKENS = sorted(
    name
    for name, fake in FAKES.items()
    if fake(random.Random(0))[0] == fake(random.Random(0))[1]
    and not any(rule.name == name and rule.kind == "keyword" for rule in GITLEAKS_RULES)
)


def _token_positions(secret: str) -> dict[str, str]:
    escaped = "".join(f"\\u{ord(c):04x}" for c in secret)
    return {
        "free text": f"before {secret} after",
        "json value": json.dumps({"before": "x", "note": f"see {secret}", "after": 1}),
        "json key": json.dumps({"before": 1, secret: "x", "after": 2}),
        "form field": f"before=1&note={quote_plus(secret)}&after=2",
        "query value": f"https://h.test/before?q={quote(secret, safe='')}&after=1",
        "fragment": f"https://h.test/before#state=x&t={secret}&after=1",
        "url path": f"https://h.test/before/{secret}/after",
        "token userinfo": f"https://{secret}@h.test/before/after",
        "percent-encoded": f"before {quote(secret, safe='')} after",
        "unicode-escaped": '{"before": 1, "note": "' + escaped + '", "after": 2}',
        "json in a json string": json.dumps({"before": 1, "arguments": json.dumps({"note": secret}), "after": 2}),
        "exception message": f"Illegal header value b'{secret}\\n' before after",
        "exception repr": f"ConnectError('before {secret!r} after')",
    }


def _structured_positions(text: str) -> dict[str, str]:
    return {
        "free text": f"before {text} after",
        "json value": json.dumps({"before": 1, "note": text, "after": 2}),
        "json in a json string": json.dumps({"before": 1, "arguments": json.dumps({"note": text}), "after": 2}),
        "exception message": f"RuntimeError: before {text} after",
    }


def _planted() -> list[tuple[str, str, str, str]]:
    """(format, position, text, secret) for every format in every position it can take, seeded."""
    rng = random.Random(20240611)
    planted = []
    for name, fake in FAKES.items():
        text, secret = fake(rng)
        positions = _token_positions(text) if name in TOKENS else _structured_positions(text)
        planted += [(name, position, carried, secret) for position, carried in positions.items()]
    return planted


PLANTED = _planted()


def test_every_catalogue_format_has_a_fake() -> None:
    assert set(FAKES) == {credential.name for credential in CATALOGUE}


@pytest.mark.parametrize("name", sorted(FAKES))
def test_catalogue_secret_is_removed_in_every_position(name: str) -> None:
    for _, position, text, secret in (p for p in PLANTED if p[0] == name):
        redactor = Redactor()
        redacted = redactor.redact_form(text) if position == "form field" else redactor.redact_text(text)
        for view in (redacted, _decode_escapes(redacted), _decode_escapes(_decode_escapes(redacted))):
            assert secret not in view, f"{name} leaked from {position}: {redacted}"
        assert PLACEHOLDER in redacted
        assert "before" in redacted and "after" in redacted, f"surrounding text lost in {position}: {redacted}"


def test_catalogue_secret_in_a_structure_value_and_key() -> None:
    for name, position, text, secret in PLANTED:
        if position != "free text":
            continue
        carried = text.removeprefix("before ").removesuffix(" after")
        redacted = Redactor().redact_value({"messages": [{"content": text}], carried: 1, "keep": True})
        assert secret not in json.dumps(redacted), name
        assert redacted["keep"] is True


def test_planted_count_and_leak_figure() -> None:
    """The figure for the report: how many planted secrets, how many leaked (must be none)."""
    leaked = []
    for _, position, text, secret in PLANTED:
        redactor = Redactor()
        redacted = redactor.redact_form(text) if position == "form field" else redactor.redact_text(text)
        if secret in _decode_escapes(_decode_escapes(redacted)):
            leaked.append(text)
    assert len(PLANTED) >= 500
    assert leaked == []


# --- names that generalise ------------------------------------------------------------------------------

SPEC_NAMES = [
    "Ocp-Apim-Subscription-Key",
    "x-functions-key",
    "X-Amz-Security-Token",
    "X-Amz-Credential",
    "X-Goog-Credential",
    "client_assertion",
    "assertion",
    "code_verifier",
    "pwd",
    "pass",
    "passphrase",
    "credential",
    "jwt",
    "aws_session_token",
    "connection_string",
    "storage_account_key",
    "API%5FKEY",
    "\\u0070assword",
    "PASSWORD",
    "Pass-Phrase",
]
QUERY_ONLY_NAMES = ["sig", "code", "X-Amz-Signature", "X-Goog-Signature", "key", "signature"]


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_names_from_the_specs_are_secrets_everywhere(name: str) -> None:
    redactor = Redactor()
    assert redactor.is_secret_name(name)
    assert redactor.redact_text(f'{{"{name}": "v4lue-x", "a": 1}}') == f'{{"{name}": "{PLACEHOLDER}", "a": 1}}'


@pytest.mark.parametrize("name", QUERY_ONLY_NAMES)
def test_signed_url_and_oauth_names_are_secrets_in_queries_and_forms_only(name: str) -> None:
    redactor = Redactor()
    assert redactor.is_secret_name(name, query=True) and not redactor.is_secret_name(name)
    url = f"https://h.test/o?a=1&{name}=s3cr3tvalue&b=2"
    assert redactor.redact_text(url) == f"https://h.test/o?a=1&{name}={PLACEHOLDER}&b=2"
    assert redactor.redact_form(f"{name}=s3cr3tvalue&b=2") == f"{name}={PLACEHOLDER}&b=2"
    document = {name: "data", "b": 2}
    assert redactor.redact_value(document) == document, "in JSON it is data (error codes, thinking signatures)"


def test_signed_urls_lose_every_credential_parameter() -> None:
    sigv4 = (
        "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F2024"
        "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20240101T000000Z&X-Amz-Expires=900"
        "&X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr&X-Amz-Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400"
    )
    gcs = "https://storage.googleapis.com/b/o?X-Goog-Credential=sa%40p.iam&X-Goog-Signature=0a1b2c3d4e5f6a7b8c9d"
    sas = "https://a.blob.core.windows.net/c/b?sv=2022-11-02&se=2024-01-01&sp=r&sig=AbCdEf%2BgHiJk%3D"
    redactor = Redactor()
    for url in (sigv4, gcs, sas):
        redacted = redactor.redact_text(url)
        assert redacted.count(PLACEHOLDER) >= 1
        for secret in ("AKIAIOSFODNN7EXAMPLE", "IQoJb3", "5d672d79", "0a1b2c3d", "AbCdEf", "sa%40p"):
            assert secret not in redacted
    assert "X-Amz-Date=20240101T000000Z" in redactor.redact_text(sigv4), "what isn't a credential stays"


# --- known-value propagation ----------------------------------------------------------------------------


def test_a_value_removed_by_name_leaves_every_other_place_in_every_encoding() -> None:
    redactor = Redactor()
    key = "opaque/Key+value=42"
    headers = redactor.redact_headers([("X-Service-Token", key), ("Proxy-Authorization", "Basic dXNlcjpodW50ZXIyMjI=")])
    assert headers == [("X-Service-Token", PLACEHOLDER), ("Proxy-Authorization", PLACEHOLDER)]
    echoes = [
        key,
        quote(key, safe=""),
        quote_plus(key),
        json.dumps(key)[1:-1],
        base64.b64encode(key.encode()).decode(),
        base64.urlsafe_b64encode(key.encode()).decode().rstrip("="),
        base64.b64encode(b"x" + key.encode() + b"y").decode(),  # another alignment of the base64 window
        base64.b64encode(b"xy" + key.encode()).decode(),
        "hunter222",  # the password inside the Basic credentials
    ]
    for echo in echoes:
        text = f"the server said <{echo}> and more"
        redacted = redactor.redact_text(text, response=True)
        assert echo not in redacted and "hunter222" not in redacted, redacted
        assert redacted.startswith("the server said <") and redacted.endswith("> and more")
    assert "opaque" not in redactor.redact_text("error: Illegal header value b'opaque/Key+value=42\\n'")


def test_short_values_are_not_propagated() -> None:
    redactor = Redactor()
    redactor.redact_value({"password": "abc123", "note": "abc123 stays"})
    assert redactor.redact_text("abc123 stays") == "abc123 stays"


def test_a_named_value_leaves_the_rest_of_its_own_body_too() -> None:
    body = {"messages": [{"content": "my key is Zx9-opaque-credential"}], "api_key": "Zx9-opaque-credential"}
    assert Redactor().redact_value(body) == {
        "messages": [{"content": f"my key is {PLACEHOLDER}"}],
        "api_key": PLACEHOLDER,
    }


def _echo_key(received: Received) -> Reply:
    auth = received.headers.get("authorization") or received.headers.get("x-goog-api-key", "")
    key = auth.removeprefix("Bearer ")
    raw = key.encode()
    return Reply.json(
        {
            "raw": f"you sent {key}",
            "percent": f"https://cb.test/?k={quote(key, safe='')}",
            "escaped": json.dumps({"k": key}),
            "base64": base64.b64encode(raw).decode(),
            "base64_shifted": base64.b64encode(b"{" + raw + b"}").decode(),
            "urlsafe": base64.urlsafe_b64encode(b"ab" + raw).decode(),
            "kept": "this sentence stays",
        }
    )


def test_a_key_sent_in_a_header_never_reaches_the_cassette_in_any_echo(
    sdk: Sdk, upstream: Upstream, tmp_path: Path
) -> None:
    key = f"PlAnTeD-{sdk.name}-c8f2e61a9b7d4e3f"  # no catalogued shape: only propagation can find it
    upstream.routes["/echo"] = upstream.routes["/v1/echo"] = _echo_key
    cassette = tmp_path / "echo.jsonl"
    path = "echo" if sdk.name == "genai" else "/echo"
    results = sdk.run(
        recording(sdk.library, sdk.is_async, cassette), upstream.url, [("post", [path, "{}"])], api_key=key
    )
    assert results[0]["raw"] == f"you sent {key}", "the caller still gets the live bytes"
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    body = "".join(
        line["text"] if "text" in line else base64.b64decode(line["base64"]).decode()
        for line in lines
        if line["type"] == "event"
    )
    everything = cassette.read_text() + body
    forms = [key, quote(key, safe=""), base64.b64encode(key.encode()).decode()[:-4], "c8f2e61a9b7d4e3f"]
    assert [form for form in forms if form in everything] == []
    stored = json.loads(body)
    for field in ("base64", "base64_shifted", "urlsafe"):
        assert PLACEHOLDER in stored[field]
        for piece in stored[field].split(PLACEHOLDER):  # what is left of the window holds no part of the key
            assert len(piece) <= 4
    assert stored["raw"] == f"you sent {PLACEHOLDER}"
    assert stored["kept"] == "this sentence stays"


# --- no over-redaction ----------------------------------------------------------------------------------

KEPT_DOCUMENTS: list[Any] = [
    {"requires_token": True, "password_set": False, "api_key": None, "token": False},
    {
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "login",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "password": {"type": "string", "description": "the user's password"},
                            "api_key": {"type": "string", "minLength": 20},
                            "token": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                        },
                        "required": ["password", "api_key"],
                    },
                },
            }
        ]
    },
    {"input_schema": {"type": "object", "properties": {"secret": {"type": "string", "enum": ["a", "b"]}}}},
    {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"schema": {"properties": {"jwt": {"type": "string"}}}},
        }
    },
    {"nextToken": "eyJvZmZzZXQiOjEwfQ", "next_page_token": "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA", "pageToken": "x9"},
    {"cursor": "c_1234567890abcdef", "next_token": "abcdefghij0123456789"},
    {"eos_token": "</s>", "bos_token": "<s>", "pad_token": "<pad>", "unk_token": "<unk>", "sep_token": "[SEP]"},
    {"cls_token": "[CLS]", "mask_token": "[MASK]"},
    {"max_tokens": 1024, "input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 0},
    {"content": "The ring bearer and the torch bearer met the standard-bearer. BEARER bonds are basic finance."},
    {"content": "Basic usage: call the API. Bearer tokens go in a header."},
    {"error": {"code": "invalid_api_key", "message": "Incorrect API key provided."}},
    {"type": "thinking", "thinking": "hmm", "signature": "EqoBCkgIARABGAIiQL3wYh0Ss1Hs8f2u9DJ1lAlq"},
    {"customMetadata": [{"key": "source_url", "stringValue": "https://ex.test/a"}]},
    {"logprobs": {"content": [{"token": " Hello", "logprob": -0.1, "top_logprobs": [{"token": "Hi", "logprob": -2}]}]}},
    {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_f9f4fb6dbf",
    },
    {"url": "https://api.example.test/v1/files/file-abc123def456ghi789/content?alt=media"},
    {"git": "ssh://git@github.com/org/repo.git", "mail": "mailto:ann@example.com"},
    {"data": base64.b64encode(b"\x89PNG" + b"sk-abcdefghijklmnopqrstuvwx ghp_" + bytes(range(256)) * 4).decode()},
]


@pytest.mark.parametrize("document", KEPT_DOCUMENTS, ids=lambda d: next(iter(d)))
def test_kept_values_come_through_unchanged(document: Any) -> None:
    # In a request, a bare "token" is a credential: logprobs only come back in responses.
    for response in (True,) if "logprobs" in document else (False, True):
        assert Redactor().redact_value(document, response=response) == document
        text = json.dumps(document)
        assert Redactor().redact_text(text, response=response) == text


def test_over_redaction_figure() -> None:
    """The figure for the report: values that must be kept and were changed (must be none)."""
    changed = [d for d in KEPT_DOCUMENTS if Redactor().redact_value(d, response=True) != d]
    assert len(KEPT_DOCUMENTS) >= 15
    assert changed == []


# The only credentials in the real traffic (tests/fixtures/wire): the OAuth token exchange of one Google cassette
# (form fields and the JSON token response, already "scrubbed" by its recorder) and the Cloudflare cookie request
# headers (their values faked in the fixtures, same shape).
VENDOR_CREDENTIAL_FIELDS = {"access_token", "id_token", "refresh_token", "client_secret", "cookie"}


def _changed_fields(before: Any, after: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, original value) of every leaf or key that differs."""
    if isinstance(before, dict) and isinstance(after, dict):
        if list(before) != list(after):
            return [(path + ".<keys>", list(before))]
        return [c for key in before for c in _changed_fields(before[key], after[key], f"{path}.{key}")]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [c for index, (b, a) in enumerate(zip(before, after, strict=True)) for c in _changed_fields(b, a, path)]
    return [] if before == after else [(path, before)]


def test_vendor_traffic_comes_through_byte_identical_but_for_its_credentials() -> None:
    changed: list[tuple[str, str, Any]] = []
    examined = 0
    captures: dict[str, list[dict[str, Any]]] = {}
    for name, interaction in vendor_traffic():
        captures.setdefault(name.partition("#")[0], []).append(interaction)
    for capture, interactions in captures.items():
        redactor = Redactor()  # one per cassette, as recording does
        for interaction in interactions:
            request = interaction["request"]
            for side_name, side in (("request", request), ("response", interaction["response"])):
                is_response = side_name == "response"
                headers = [(k, v if isinstance(v, str) else v[0]) for k, v in side["headers"].items()]
                for (name, value), (_, kept) in zip(headers, redactor.redact_headers(headers), strict=True):
                    if kept != value:
                        changed.append((capture, name.lower(), value))
                body = side["body"]
                if "json" in body:
                    text = json.dumps(body["json"])
                    redacted_value = redactor.redact_value(body["json"], response=is_response)
                    changed += [(capture, f, v) for f, v in _changed_fields(body["json"], redacted_value)]
                    redacted_text = json.loads(redactor.redact_text(text, response=is_response))
                    changed += [(capture, f, v) for f, v in _changed_fields(body["json"], redacted_text)]
                else:
                    text = body.get("text") or ""
                    if "x-www-form-urlencoded" in str(side["headers"]).lower():
                        after = redactor.redact_form(text).split("&")
                        changed += [(capture, f.split("=")[0], f) for f in text.split("&") if f not in after]
                    elif redactor.redact_text(text, response=is_response) != text:
                        changed.append((capture, f"{side_name} text", None))
                examined += len(text)
            if redactor.redact_text(request["uri"]) != request["uri"]:
                changed.append((capture, "url", request["uri"]))
    assert examined > 200_000
    # A value equal to a removed credential ("scrubbed" in this corpus) goes wherever it occurs: that is
    # known-value propagation at work (the token exchange's client_id reads "scrubbed" too).
    unexpected = [
        (name, field, value)
        for name, field, value in changed
        if field.split(".")[-1] not in VENDOR_CREDENTIAL_FIELDS and value not in ("scrubbed", "client_id=scrubbed")
    ]
    assert unexpected == []
    assert {field.split(".")[-1] for _, field, _ in changed} == VENDOR_CREDENTIAL_FIELDS | {"client_id"}


def test_a_learned_value_with_a_lone_surrogate_is_still_removed() -> None:
    """Bytes decoded with surrogateescape reach the redactor as lone surrogates: learning them must not fail."""
    from vcr_transport._core.rules._redaction import Redactor

    redactor = Redactor()
    value = "k3y-\udcff-0123456789abcdef"
    redactor.learn(value)
    assert value not in redactor.redact_text(f"echo {value} end")


# --- the rules generated from gitleaks ----------------------------------------------------------------


@pytest.mark.parametrize("rule", GITLEAKS_RULES, ids=lambda rule: rule.name)
def test_every_gitleaks_rule_finds_its_sample_by_itself(rule: Any) -> None:
    """Each generated rule, on its own, finds the sample recorded beside it (the whole of its secret), and the
    catalogue search (keywords and token prefixes first) gets to it."""
    credential = next(c for c in GITLEAKS_CATALOGUE if c.name == rule.name)
    text = f'note: "{rule.sample}" end'
    spans = [credential.span(match) for match in credential.matches(text)]
    secret = re.fullmatch(rule.pattern, rule.sample)
    assert secret is not None
    start = text.index(rule.sample)
    assert (start + secret.start(rule.group), start + secret.end(rule.group)) in spans
    assert rule.name in {name for _, _, name in catalogue_matches(text)}


def test_gitleaks_rules_keep_their_entropy_check() -> None:
    """A placeholder in a key's shape (all one letter after the prefix) is not a key where gitleaks says so."""
    checked = [rule for rule in GITLEAKS_RULES if rule.entropy and rule.kind == "prefixed" and rule.group == 0]
    assert checked
    for rule in checked:
        prefix = rule.keywords[0]
        dull = prefix + "x" * (len(rule.sample) - len(prefix))
        if len(rule.sample) > len(prefix) and re.fullmatch(rule.pattern, dull):
            assert rule.name not in {name for _, _, name in catalogue_matches(f"see {dull} end")}


def test_the_generated_prefix_table_is_what_the_catalogue_gives() -> None:
    """``_prefix_table.py`` is current, and ``prefix_table`` gives what its first form computed at import: for
    each prefix (the token part of a prefixed format's keyword), every prefixed format with a keyword whose
    token part starts it."""
    from doc_blocks import docs_gen

    from vcr_transport._core.rules import _prefix_table

    _token_prefix, prefix_table, prefix_table_module = (
        docs_gen()._token_prefix,
        docs_gen().prefix_table,
        docs_gen().prefix_table_module,
    )

    assert Path(_prefix_table.__file__).read_text(encoding="utf-8") == prefix_table_module(), (
        "vcr_transport/_core/rules/_prefix_table.py differs from the catalogue: run .venv/bin/python docs/_gen.py"
    )
    prefixes = {_token_prefix(k) for c in CATALOGUE if c.prefixed for k in c.keywords}
    expected = {
        prefix: tuple(
            i
            for i, c in enumerate(CATALOGUE)
            if c.prefixed and any(prefix.startswith(_token_prefix(k)) for k in c.keywords)
        )
        for prefix in prefixes
    }
    assert dict(prefix_table(CATALOGUE)) == expected == dict(_prefix_table.PREFIX_TABLE)
    lengths = [len(prefix) for prefix, _ in _prefix_table.PREFIX_TABLE]
    assert lengths == sorted(lengths, reverse=True) and len(lengths) == len(prefixes)


def test_the_docs_count_the_catalogue_as_it_is() -> None:
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    explanation = (root / "docs" / "explanation" / "redaction.md").read_text()
    assert f"shape of {len(CATALOGUE)} credential formats" in readme
    assert (
        f"a catalogue of {len(CATALOGUE)}\n  credential formats. {len(GITLEAKS_CATALOGUE)} are gitleaks'" in explanation
    )
    assert f"The other {len(CATALOGUE) - len(GITLEAKS_CATALOGUE)}\n  are ours" in explanation


GITLEAKS_TOML = r"""
[[rules]]
id = "acme-token"
regex = '''\b(acme_(?i)[a-z0-9]{32})(?:[\x60'"\s;]|\\[nr]|$)'''
entropy = 3
keywords = ["acme_"]

[[rules]]
id = "widget-key"
regex = '''(?i)[\w.-]{0,50}?(?:widget)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}(wdg-[[:alnum:]]{24})(?:[\x60'"\s;]|\\[nr]|$)'''
keywords = ["widget"]

[[rules]]
id = "vendor-id"
regex = '''(?i)[\w.-]{0,50}?(?:vendor)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}([a-f0-9]{32})(?:[\x60'"\s;]|\\[nr]|$)'''
keywords = ["vendor"]

[[rules]]
id = "generic-api-key"
regex = '''(?i)[\w.-]{0,50}?(?:key|token)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|:)[\x60'"\s=]{0,5}([\w.=-]{10,150})'''
keywords = ["key"]
"""  # noqa: E501


def test_the_generator_keeps_shapes_translates_re2_and_records_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tools/gen_credentials.py on a small rule file: a prefixed rule (its flag set mid-pattern translated),
    the secret of a keyword rule that has a prefix of its own (a POSIX class translated), none of a keyword
    rule whose secret is any hex, nor of the generic rule; the version and commit in the header; samples
    that the generated expressions match."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("gen_credentials", root / "tools" / "gen_credentials.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gen_credentials", generator)
    spec.loader.exec_module(generator)
    source = tmp_path / "gitleaks.toml"
    source.write_text(GITLEAKS_TOML)
    output = tmp_path / "rules.py"
    arguments = ["--toml", str(source), "--version", "v9.9.9", "--commit", "abc123", "--output", str(output)]
    assert generator.main(arguments) == 0
    text = output.read_text()
    assert "gitleaks v9.9.9 (commit abc123)" in text and "MIT License" in text
    namespace: dict[str, Any] = {}
    exec(compile(text, str(output), "exec"), namespace)
    rules = {rule.name: rule for rule in namespace["GITLEAKS_RULES"]}
    assert set(rules) == {"acme-token", "widget-key"}
    assert rules["acme-token"].keywords == ("acme_",) and "(?i:[a-z0-9]{32})" in rules["acme-token"].pattern
    assert "[a-zA-Z0-9]{24}" in rules["widget-key"].pattern and rules["widget-key"].keywords == ("wdg-",)
    for rule in rules.values():
        assert re.fullmatch(rule.pattern, rule.sample), rule.name
        assert re.search(rule.pattern, f"x = '{rule.sample}';") is not None
    assert generator.translate(r"a(?i)b|c") == "a(?i:b)|(?i:c)"


def test_many_pem_headers_and_unclosed_header_values_are_read_in_linear_time() -> None:
    """A PEM header searched the rest of the text for an end line, and an ``illegal header value b'`` the rest of
    its line for a closing quote, and each occurrence of a keyword searched with its case was looked for again in
    the whole text: many of either (a cassette chooses them) took quadratic time (128 KB: 2 s and 3 s; 1.6 MB:
    minutes). The matches are the same."""
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEab+/cd\n-----END RSA PRIVATE KEY-----"
    headers, values = "-----BEGIN RSA PRIVATE KEY-----x" * 25_000, "Illegal header value b'x" * 35_000
    text = f"{block}\n{values}\nIllegal header value b'Zq0pen/s3same'. {values}\n{headers}"
    results: list[list[tuple[int, int, str]]] = []
    finishes_within(60, lambda: results.append(catalogue_matches(text)))
    found = sorted((start, end, name) for start, end, name in results[0] if name in _SLOW_ONES)
    assert [text[start:end] for start, end, _ in found] == [
        block,
        "Zq0pen/s3same",
        *["-----BEGIN RSA PRIVATE KEY-----x"] * 25_000,
    ]


_SLOW_ONES = ("pem private key", "h11 illegal header value")
