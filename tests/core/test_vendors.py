"""The verdict ``drift`` sends by (``_core._vendors``): a host decides the vendor, a key goes only to its vendor's
hosts over https or a named upstream, only where that vendor takes it; WebSocket sessions and writes are skipped."""

from __future__ import annotations

from typing import Any

import pytest

from vcr_transport._core.format._format import RecordedCall
from vcr_transport._core.rules._redaction import PLACEHOLDER
from vcr_transport._tools._vendors import VENDORS, parse_drift_hosts, parse_upstream, resend_verdict

ENV = {
    "OPENAI_API_KEY": "sk-openai",
    "AZURE_OPENAI_API_KEY": "azure-key",
    "AZURE_OPENAI_ENDPOINT": "https://myres.openai.azure.com/",
    "GEMINI_API_KEY": "AIza-gemini",
}
BEARER = [("authorization", PLACEHOLDER)]


def _call(url: str, headers: Any = BEARER, method: str = "POST", body: Any = None) -> RecordedCall:
    return RecordedCall(0, method, url, list(headers), body or {"json": {"model": "m"}}, 200, [])


def _verdict(call: RecordedCall, **options: Any) -> Any:
    return resend_verdict(call, environ=ENV, **options)


@pytest.mark.parametrize(
    ("url", "headers", "vendor", "key_from"),
    [
        ("https://api.openai.com/v1/chat/completions", BEARER, "openai", "OPENAI_API_KEY"),
        (
            "https://myres.openai.azure.com/openai/deployments/d/chat/completions?api-version=1",
            [("api-key", PLACEHOLDER)],
            "azure",
            "AZURE_OPENAI_API_KEY",
        ),
        ("https://api.anthropic.com/v1/messages", [("x-api-key", PLACEHOLDER)], "anthropic", ""),
        (
            "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?key=%5Bsecret%20removed%5D",
            [],
            "gemini",
            "GEMINI_API_KEY",
        ),
        ("https://us-central1-aiplatform.googleapis.com/v1/projects/p/m:generateContent", [], "vertex", ""),
        ("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke", [], "bedrock", ""),
        ("https://API.OPENAI.COM/v1/chat/completions", BEARER, "openai", "OPENAI_API_KEY"),
    ],
)
def test_a_vendors_own_host_over_https_is_sent_with_its_own_key(
    url: str, headers: Any, vendor: str, key_from: str
) -> None:
    verdict = _verdict(_call(url, headers))
    if vendor == "anthropic":  # no ANTHROPIC_API_KEY in ENV
        assert verdict.outcome == "refused" and "none of ANTHROPIC_API_KEY is set" in verdict.why
        return
    assert (verdict.outcome, verdict.vendor, verdict.key_from) == ("send", vendor, key_from), verdict.why


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com.evil.example/v1/chat/completions",
        "https://evilapi.openai.com.example/v1/chat/completions",
        "https://evilopenai.com/v1/chat/completions",
        "https://api.openai.com@evil.example/v1/chat/completions",
        "https://api.openai.com./v1/chat/completions",
        "https://\u0430pi.openai.com/v1/chat/completions",
        "https://[::1]/v1/chat/completions",
        "https://127.0.0.1/v1/chat/completions",
        "https://%5Bsecret%20removed%5D.openai.azure.com/v1/chat/completions",
        "https://a.b.s3-website.bedrock-runtime.x.example/model/m/invoke",
        "https://bedrock-runtime.evil.example.s3-website.us-east-1.amazonaws.com/model/m/invoke",
    ],
)
def test_a_lookalike_host_gets_no_key(url: str) -> None:
    verdict = _verdict(_call(url))
    assert verdict.outcome == "refused" and verdict.key_from == "" and verdict.vendor == ""
    assert "refused: " in verdict.why


@pytest.mark.parametrize(
    "url",
    ["http://api.openai.com/v1/chat/completions", "https://api.openai.com:8443/v1/chat/completions"],
)
def test_a_vendors_host_over_http_or_another_port_is_refused(url: str) -> None:
    verdict = _verdict(_call(url))
    assert verdict.outcome == "refused" and "not over https on port 443" in verdict.why


def test_the_azure_key_never_goes_to_openai_nor_the_openai_key_to_azure() -> None:
    to_openai = _verdict(_call("https://api.openai.com/v1/chat/completions", [("api-key", PLACEHOLDER)]))
    assert to_openai.outcome == "refused" and "its api-key header" in to_openai.why
    to_azure = _verdict(_call("https://r.openai.azure.com/openai/deployments/d/chat/completions", BEARER))
    assert to_azure.outcome == "refused" and "its authorization header" in to_azure.why


AZURE_CALL = "https://attacker.openai.azure.com/openai/deployments/d/chat/completions?api-version=1"


def test_the_azure_key_goes_only_to_the_resource_of_azure_openai_endpoint() -> None:
    """Every Azure resource is a ``*.openai.azure.com`` host, an attacker's too: the key is for one of them."""
    refused = _verdict(_call(AZURE_CALL, [("api-key", PLACEHOLDER)]))
    assert refused.outcome == "refused" and refused.key_from == ""
    assert "AZURE_OPENAI_ENDPOINT is https://myres.openai.azure.com/" in refused.why
    assert 'drift_hosts = {azure = ["attacker.openai.azure.com"]}' in refused.why
    unset = resend_verdict(_call(AZURE_CALL, [("api-key", PLACEHOLDER)]), environ={"AZURE_OPENAI_API_KEY": "k"})
    assert unset.outcome == "refused" and "AZURE_OPENAI_ENDPOINT is not set" in unset.why
    named = _verdict(
        _call(AZURE_CALL, [("api-key", PLACEHOLDER)]), extra_hosts={"azure": ("attacker.openai.azure.com",)}
    )
    assert (named.outcome, named.key_from) == ("send", "AZURE_OPENAI_API_KEY")
    upstream = parse_upstream("azure", "https://attacker.openai.azure.com")
    through = _verdict(_call(AZURE_CALL, [("api-key", PLACEHOLDER)]), upstreams=[upstream])
    assert (through.outcome, through.key_from) == ("send", "AZURE_OPENAI_API_KEY")


def test_the_key_is_filled_only_where_the_vendor_takes_it() -> None:
    url = "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?alt=sse&key=%5Bsecret%20removed%5D"
    verdict = _verdict(_call(url, [("x-goog-api-key", PLACEHOLDER), ("cookie", f"a={PLACEHOLDER}")]))
    assert verdict.outcome == "send" and verdict.url == url  # no key in what a dry run shows
    filled_url, headers = verdict.filled("AIza/+key")
    assert filled_url.endswith("?alt=sse&key=AIza%2F%2Bkey")
    assert headers == [("x-goog-api-key", "AIza/+key")]  # the removed cookie is dropped


def test_vertex_and_bedrock_credentials_are_skipped_saying_why() -> None:
    vertex = _verdict(_call("https://aiplatform.googleapis.com/v1/p/m:generateContent"))
    assert vertex.outcome == "skipped" and "Google OAuth token" in vertex.why
    bedrock = _verdict(_call("https://bedrock-runtime.eu-west-1.amazonaws.com/model/m/converse"))
    assert bedrock.outcome == "skipped" and "SigV4" in bedrock.why


@pytest.mark.parametrize(
    ("method", "path", "write"),
    [
        ("POST", "/v1/chat/completions", False),
        ("POST", "/v1/responses", False),
        ("POST", "/v1/embeddings", False),
        ("GET", "/v1/models", False),
        ("POST", "/v1/files", True),
        ("POST", "/v1/fine_tuning/jobs", True),
        ("POST", "/v1/vector_stores", True),
        ("POST", "/v1/threads", True),
        ("POST", "/v1/threads/t/messages", True),  # openai's, not anthropic's /v1/messages
        ("DELETE", "/v1/files/f", True),
        ("POST", "/v1/files/../chat/completions", True),
        ("POST", "/v1/fine_tuning/jobs;/chat/completions", True),
        ("POST", "/v1/batches%2F/chat/completions", True),
    ],
)
def test_writes_are_skipped_unless_asked_for(method: str, path: str, write: bool) -> None:
    call = _call("https://api.openai.com" + path, method=method)
    verdict = _verdict(call)
    assert (verdict.outcome == "skipped") is write, verdict.why
    assert _verdict(call, include_writes=True).outcome != "skipped"


def test_an_upstream_named_for_two_vendors_is_ambiguous_for_a_call_recorded_there() -> None:
    upstreams = (parse_upstream("openai", "http://127.0.0.1:8000"), parse_upstream("google", "http://127.0.0.1:8000"))
    verdict = _verdict(_call("http://127.0.0.1:8000/v1/chat/completions"), upstreams=upstreams)
    assert verdict.outcome == "refused" and "the --upstream of gemini and openai" in verdict.why
    single = _verdict(_call("http://127.0.0.1:8000/v1/chat/completions"), upstreams=upstreams[:1])
    assert (single.outcome, single.vendor, single.key_from) == ("send", "openai", "OPENAI_API_KEY")


def test_a_host_of_no_vendor_without_a_removed_value_is_skipped() -> None:
    verdict = _verdict(_call("https://weather.example/today", headers=[], method="GET"))
    assert verdict.outcome == "skipped" and "none of the vendors' hosts" in verdict.why


def test_drift_hosts_globs_stand_inside_one_label() -> None:
    extra = parse_drift_hosts({"openai": ["*.gw.corp.example", "gw2.corp.example:8443"]})
    ok = _verdict(_call("https://eu.gw.corp.example/v1/chat/completions"), extra_hosts=extra)
    assert ok.outcome == "send" and ok.key_from == "OPENAI_API_KEY"
    deeper = _verdict(_call("https://a.evil.example.gw.corp.example.evil/v1/chat/completions"), extra_hosts=extra)
    assert deeper.outcome == "refused"
    port = _verdict(_call("https://gw2.corp.example:8443/v1/chat/completions"), extra_hosts=extra)
    assert port.outcome == "send"
    with pytest.raises(ValueError, match="is no host name"):
        parse_drift_hosts({"openai": ["*"]})


def test_every_vendor_is_keyable_or_says_why_not() -> None:
    for vendor in VENDORS:
        assert bool(vendor.places) != bool(vendor.unkeyable), vendor.name
        assert bool(vendor.keys) == bool(vendor.places), vendor.name
