"""The rules of ``_core/rules/_rules.py`` one by one: each rule's ``may_apply`` is never false where its ``apply``
changes a text (a hypothesis property, with the prefilter's scan too), beside its positive and negative
samples; and the text leaks of issue 36, each with what ``scan`` says of it."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from helpers import finishes_within
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcr_transport._core.rules._json import Context
from vcr_transport._core.rules._redaction import PLACEHOLDER, Redactor
from vcr_transport._core.rules._rules import RULES, Rule, candidates
from vcr_transport._core.rules._scan import scan_document

KEY = "sk-proj-4fJ9kQ2mXv7LpR8sT1uW3yZ5aB6cD0eF9gH2iJ4kLm"
ANTHROPIC = "sk-ant-api03-" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG1hJ3kL5mN7pQ9rS1tU3vW5xY7zA9bC1dE3fG5hJ7kL9m"
GITHUB = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
AWS = "AKIAIOSFODNN7EXAMPL3"
EPHEMERAL = "ek_68af296e8e408191a1120ab6383263c2"
SLACK_SECRET = "abcdefGHIJKLmnopQRSTuvwx"
SLACK_WEBHOOK = f"https://hooks.slack.com/services/T0123ABCD/B0456EFGH/{SLACK_SECRET}"

# Each rule's samples: texts it changes, texts it leaves alone.
SAMPLES: dict[str, tuple[list[str], list[str]]] = {
    "json names": (
        [
            '{"api_key": "abc123def456"}',
            '{"args": "{\\"password\\": \\"hunter22\\"}"}',
            '{"name": "DB_PASSWORD", "value": "x"}',
        ],
        ['{"max_tokens": 12}', '{"token_type": "Bearer"}', '{"password": {"type": "string"}}', "the api_key was short"],
    ),
    "assignments": (
        [
            "api_key: x7Hq92LmPz",
            "export OPENAI_API_KEY=abcd1234efgh",
            "\\n  password = hunter22",
            "'api_key': 'x7Hq92LmPz'",
            "{'model': 'm', 'api_key': 'x7Hq92LmPz'}",
            "Mistral(api_key='x7Hq92LmPz')",
            'f(a, password="hunter22")',
            "os.environ['OPENAI_API_KEY'] = 'x7Hq92LmPz'",
            '$password = "hunter22"',
            'const apiKey = "x7Hq92LmPz";',
        ],
        [
            "token_type: Bearer",
            'api_key = os.environ.get("K")',
            "PASSWORD=$PASSWORD",
            "Mistral(api_key=os.environ['K'])",
            "f(max_tokens=1000, model='m')",
            '{"requires_token": true, "token": false}',
            "function f(token: string, password: string) {",
            "def f(api_key: Optional[str] = None):",
            "return JsonResponse({'token': 'Authentication required'}, status=401)",
            "let token: string | undefined;",
            "const token = req.headers.authorization?.split(' ')[1];",
            "data = {'username': username, 'password': password}",
        ],
    ),
    "query values": (["https://x.test/?key=abc123&b=1", "?sig=abcdef123456"], ["https://x.test/?page=2", "a=b"]),
    "data urls": (
        ["data:text/plain;base64," + base64.b64encode(f"key {KEY}".encode()).decode()],
        ["data:image/png;base64,iVBORw0KGgo="],
    ),
    "xml": (
        [
            "<Password>hunter22</Password>",
            '<add key="ClearTextPassword" value="hunter22"/>',
            "<password><![CDATA[hunter22]]></password>",
            "<password>\n  <![CDATA[hunter22]]>\n</password>",
        ],
        ["<Name>bob</Name>", "<a href='x'>y</a>"],
    ),
    "userinfo": (
        ["postgres://user:hunter22@db.test/x", f"https://{KEY}@api.test/"],
        ["https://api.test/x", "mail me@x.test"],
    ),
    "url paths": ([f"https://api.test/v1/keys/{KEY}/x"], ["https://api.test/v1/models/gpt-4o"]),
    "glued shapes": (
        [f"openai-insecure-api-key.{KEY}", f"prod-{GITHUB}", f"config/keys/{AWS}"],
        [f"{KEY}", "prod-ghp_x"],
    ),
    "flags": (
        ["curl --api-key 3fA9kQ2mXv7LpR8sT1uW3yZ5aB6cD0eF https://a", "cohere --api-key=ab12cd34ef56gh78ij90kl12"],
        ["run --password-file /etc/pw.txt", "mycli --token-limit 4096", "use --api-key $COHERE_API_KEY"],
    ),
    "slack webhooks": (
        [f"post to {SLACK_WEBHOOK}", SLACK_WEBHOOK.replace("services", "workflows")],
        ["https://hooks.slack.com/services/T0123ABCD/B0456EFGH/[secret removed]", "https://slack.com/services/x"],
    ),
    "encoded": (
        [
            f"hex {KEY.encode().hex()}",
            "entities " + "".join(f"&#{ord(c)};" for c in KEY),
            "escapes " + "".join(f"\\x{ord(c):02x}" for c in KEY),
            "twice " + KEY.replace("-", "%252D"),
            "prose " + base64.b64encode(f"my key is {KEY}".encode()).decode() + " ok",
        ],
        [
            "hex " + "ab12" * 20,
            "&#169; 2026 &#8212; fine",
            "\\x41\\x42",
            "100%25 sure",
            "data " + base64.b64encode(bytes(range(256))).decode(),
            base64.b64encode(b"just some plain words in base64").decode(),
        ],
    ),
    "shapes": ([f"use {KEY} now", f"Bearer {GITHUB}", EPHEMERAL], ["the ring bearer", "sk-short"]),
}
_RULES = {rule.name: rule for rule in RULES}
_FRAGMENTS = [text for changed, kept in SAMPLES.values() for text in changed + kept] + [
    '"',
    ": ",
    "=",
    "&",
    "?",
    "\\n",
    "\n",
    "/",
    "-",
    ".",
    " ",
    "<",
    ">",
    "@",
    "://",
    "key",
    "token",
    "é",
    "\\u0041",
    "%41",
]


def _applied(rule: Rule, text: str, response: bool = False) -> str:
    redactor = Redactor()
    return rule.apply(text, Context(redactor._names, response, [], redactor._redact))


def _may_apply(rule: Rule, text: str) -> tuple[bool, bool]:
    """``may_apply`` of the redaction scan of ``text``, and of the prefilter's scan of its UTF-8."""
    redactor = Redactor()
    scan = redactor._search(False).scan(text)
    data = text.encode("utf-8", "surrogatepass")
    prefilter = redactor._search(True).scan_bytes(data, data.lower())
    names = redactor._names
    by_text = rule in candidates(scan.data) and rule.may_apply(scan, names)
    by_bytes = rule in candidates(prefilter.data, bool(prefilter.hits)) and rule.may_apply(prefilter, names)
    return by_text, by_bytes


def test_every_rule_has_samples() -> None:
    assert set(SAMPLES) == set(_RULES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_rule_changes_its_positive_samples_and_keeps_its_negative_ones(name: str) -> None:
    rule = _RULES[name]
    changed, kept = SAMPLES[name]
    for text in changed:
        assert _applied(rule, text) != text, text
        assert _may_apply(rule, text) == (True, True), text
    for text in kept:
        assert _applied(rule, text) == text, text


@pytest.mark.parametrize("name", sorted(SAMPLES))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=6), max_size=8))
def test_a_rule_that_changes_a_text_may_apply_to_it(name: str, pieces: list[str]) -> None:
    """``rule.apply(t) != t`` implies ``rule.may_apply(scan(t))``, by the redactor's scan and the prefilter's."""
    rule, text = _RULES[name], "".join(pieces)
    if _applied(rule, text) != text or _applied(rule, text, response=True) != text:
        assert _may_apply(rule, text) == (True, True), text
        assert Redactor().could_redact(text), text


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=6), max_size=8))
def test_a_probed_rule_may_not_apply_where_the_prefilter_found_no_probe(pieces: list[str]) -> None:
    """What lets ``candidates`` leave the ``probed`` rules out of a prefilter's scan that found nothing."""
    redactor, data = Redactor(), "".join(pieces).encode("utf-8", "surrogatepass")
    prefilter = redactor._search(True).scan_bytes(data, data.lower())
    if not prefilter.hits:
        assert not any(rule.may_apply(prefilter, redactor._names) for rule in RULES if rule.probed), data
    assert set(candidates(prefilter.data, False)) <= {rule for rule in RULES if not rule.probed}


def _scanned(text: str) -> list[str]:
    return [secret for _, secret in scan_document(Redactor(), text)]


GLUED = [
    f"{before}{key}"
    for key in (KEY, ANTHROPIC, GITHUB, AWS)
    for before in ("openai-insecure-api-key.", "prod-", "config/keys/")
]


@pytest.mark.parametrize("glued", GLUED)
def test_a_key_glued_to_a_word_is_removed_and_scan_flags_it(glued: str) -> None:
    text = f"use {glued} now"
    redacted = Redactor().redact_text(text)
    assert PLACEHOLDER in redacted and glued.rsplit(".", 1)[-1][-12:] not in redacted
    assert _scanned(text), text


LEGACY_OPENAI = "sk-" + "Xq7Lm2Pz9Rt4Vb6Nc1Kd" + "T3BlbkFJ" + "Hw8Js3Gf5Ay0Eu2Oi7Ty"


def test_realtime_browser_subprotocol_loses_its_key() -> None:
    """OpenAI's documented browser authentication for Realtime: the key rides in Sec-WebSocket-Protocol."""
    for key in (KEY, EPHEMERAL, LEGACY_OPENAI):
        value = f"realtime, openai-insecure-api-key.{key}, openai-beta.realtime-v1"
        headers = Redactor().redact_headers([("Sec-WebSocket-Protocol", value)])
        assert headers == [
            ("Sec-WebSocket-Protocol", f"realtime, openai-insecure-api-key.{PLACEHOLDER}, openai-beta.realtime-v1")
        ]
        assert _scanned(value) == [key]


def test_base64_media_holding_a_glued_look_alike_stays_byte_identical() -> None:
    run = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    for media in (f"{run}/{AWS}", f"{run[:40]}-{GITHUB}", f"{run}/sk-proj-{run[:30]}"):
        assert Redactor().redact_text(media) == media
        assert Redactor().redact_value({"data": media}) == {"data": media}


def test_openai_ephemeral_keys_are_removed() -> None:
    answer = f'{{"value": "{EPHEMERAL}", "expires_at": 1756310470, "session": {{"type": "realtime"}}}}'
    redacted = Redactor().redact_text(answer, response=True)
    assert EPHEMERAL not in redacted and '"expires_at": 1756310470' in redacted
    assert Redactor().redact_value({"value": EPHEMERAL, "expires_at": 1}, response=True) == {
        "value": PLACEHOLDER,
        "expires_at": 1,
    }
    assert Redactor().redact_text(f"the client got {EPHEMERAL}.") == f"the client got {PLACEHOLDER}."
    assert _scanned(answer) == [EPHEMERAL]


def test_azure_key_vault_get_secret_value_is_removed() -> None:
    answer = {
        "value": "mysecretpassw0rdvalue",
        "id": "https://myvault.vault.azure.net/secrets/dbpass/4387e9f3d6e14c459867679a90fd0f79",
        "attributes": {"enabled": True, "created": 1493938410},
    }
    assert Redactor().redact_value(answer, response=True)["value"] == PLACEHOLDER
    import json

    text = json.dumps(answer)
    assert "mysecretpassw0rdvalue" not in Redactor().redact_text(text, response=True)
    assert "mysecretpassw0rdvalue" in _scanned(text)
    kept = {"value": "42", "id": "https://myvault.vault.azure.net/keys/k1/1"}
    assert Redactor().redact_value(kept, response=True) == kept


def test_a_credential_in_a_header_name_is_removed() -> None:
    assert Redactor().redact_headers([(f"X-Debug-{KEY}", "1"), ("X-Trace", "abc")]) == [
        (f"X-Debug-{PLACEHOLDER}", "1"),
        ("X-Trace", "abc"),
    ]


def test_a_bare_token_written_user_colon_secret_in_a_response_is_removed() -> None:
    assert Redactor().redact_value({"token": "user123:abcdef0123456789secret"}, response=True) == {"token": PLACEHOLDER}
    logprob = {"token": ":", "logprob": -0.1}
    assert Redactor().redact_value(logprob, response=True) == logprob


def test_token_type_and_expires_in_are_kept_beside_an_access_token() -> None:
    answer = {"access_token": "ya29.a0AfH6SMBx1234567890abcdefgh", "token_type": "Bearer", "expires_in": 3599}
    assert Redactor().redact_value(answer, response=True) == {**answer, "access_token": PLACEHOLDER}
    form = "access_token=ya29.a0AfH6SMBx1234567890abcdefgh&token_type=Bearer&expires_in=3599"
    assert Redactor().redact_form(form) == f"access_token={PLACEHOLDER}&token_type=Bearer&expires_in=3599"


def test_a_yaml_api_key_line_inside_a_prompt_is_removed() -> None:
    prompt = '{"content": "config:\\n  api_key: x7Hq92LmPz\\n"}'
    assert "x7Hq92LmPz" not in Redactor().redact_text(prompt)
    assert "x7Hq92LmPz" in _scanned(prompt)


def test_a_reference_to_where_a_secret_is_is_neither_removed_nor_flagged() -> None:
    """``scan`` on an app's config module: ``os.environ.get(`` is no secret (a false alarm in a pre-commit gate
    gets it switched off), and recording keeps it in a prompt."""
    config = 'API_KEY = os.environ.get("API_KEY")\nTOKEN = os.getenv("TOKEN")\nSECRET=${SECRET}\n'
    assert _scanned(config) == []
    assert Redactor().redact_text(config) == config
    assert _scanned("API_KEY = abcd1234efgh5678\n") == ["abcd1234efgh5678"]


def test_scan_reads_file_names_and_the_owners_of_request_lines(tmp_path: Path) -> None:
    """A parametrized test id names the cassette file and, in a shared cassette, every request line's owner."""
    from vcr_transport._core.rules._scan import scan_name
    from vcr_transport._tools._manage import scan

    assert scan_name(Redactor(), f"test_x_{KEY}.jsonl") == [KEY]
    assert scan_name(Redactor(), f"test_x_{GITHUB}.jsonl") == [GITHUB]
    assert scan_name(Redactor(), "test_basic_task_sk.jsonl") == []
    line = f'{{"type": "request", "method": "GET", "url": "https://x.test/", "test": "tests/t.py::test_x_{KEY}"}}'
    assert _scanned(line) == [KEY]
    (tmp_path / f"test_x_{KEY}.jsonl").write_text("nothing here\n")
    report = scan([str(tmp_path)], [], [])
    assert [(hit.line, hit.secret[:4]) for hit in report.hits] == [(0, KEY[:4])]


# Issue 36's leaks, each planted as it would be written: what recording removes, scan must flag.
PLANTED: dict[str, tuple[str, str]] = {
    "hex": (f"hex dump: {KEY.encode().hex()}", KEY.encode().hex()),
    "html entities": ("see " + "".join(f"&#{ord(c)};" for c in GITHUB), "&#103;&#104;&#112;"),
    "html hex entities": ("see " + "".join(f"&#x{ord(c):x};" for c in KEY), "&#x73;&#x6b;"),
    "escapes": ("bytes " + "".join(f"\\x{ord(c):02x}" for c in AWS) + " end", "\\x41\\x4b\\x49\\x41"),
    "double percent": (f"https://x.test/cb?next=%2Fuse%2F{KEY.replace('-', '%252D')}", KEY.replace("-", "%252D")),
    "base64 in prose": (
        "the config is " + base64.b64encode(f"OPENAI_API_KEY={KEY}\n".encode()).decode() + " as you see",
        base64.b64encode(f"OPENAI_API_KEY={KEY}\n".encode()).decode(),
    ),
    "slack webhook": (SLACK_WEBHOOK, SLACK_SECRET),
    "aws secret near its key id": (f"{AWS} wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG"),
    "aws secret after an aws name": ("aws_secret_access_key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrX"),
    "yaml line in a prompt": ("fix this:\nservice:\n  api_key: x7Hq92LmPz\n", "x7Hq92LmPz"),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_planted_leak_is_removed_by_recording_and_flagged_by_scan(name: str) -> None:
    text, secret = PLANTED[name]
    line = {"type": "request", "method": "POST", "url": "https://api.openai.com/v1/responses", "body": {"json": {}}}
    line["body"] = {"json": {"model": "m", "input": text}}
    recorded = json.dumps(Redactor().redact_value(line))
    assert secret not in recorded and PLACEHOLDER in recorded, name
    assert Redactor().redact_text(text) != text, name
    flagged = [found for _, found in scan_document(Redactor(), json.dumps(line))]
    assert flagged and all(PLACEHOLDER not in found for found in flagged), name
    assert any(secret in found or found in text for found in flagged), (name, flagged)


def test_media_with_each_encoding_s_look_alikes_stays_byte_identical() -> None:
    """Base64 media (a data URL, ``b64_json``, audio ``data``) whose bytes hold every probe of the encodings
    rule (key prefixes, their hex, ``&#``, ``\\x``, ``%25``) decode to bytes that aren't text: kept as they are."""
    look_alikes = b"sk-proj-" + b"q" + b"ghp_" + b"AKIA" + b"736b2d70726f6a2d" + b"&#115;\\x73%2573 c2stcHJvai0"
    media = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00" + look_alikes * 4 + bytes(range(256))).decode()
    for value in ({"b64_json": media}, {"audio": {"data": media}}, {"url": f"data:image/png;base64,{media}"}):
        assert Redactor().redact_value(value, response=True) == value
        assert _scanned(json.dumps(value)) == []
    assert Redactor().redact_text(f"prose then {media}") == f"prose then {media}"


def test_a_thinking_signature_and_an_mcp_session_id_are_kept() -> None:
    """Decided (docs/explanation/redaction.md): a JSON ``signature`` is data (Anthropic's thinking blocks, sent
    back and checked on the next turn), and so is MCP's ``mcp-session-id`` (a session handle, never
    authentication); neither is removed nor flagged."""
    block = {"type": "thinking", "thinking": "two and two", "signature": "EvgHCkYICxgCKkBWep44ZkS8HkPkKt2q7OJir9S1a"}
    assert Redactor().redact_value(block, response=True) == block
    headers = [("mcp-session-id", "2b340d77e0594a45b85e5fafce71d0b4")]
    assert Redactor().redact_headers(headers) == headers
    assert _scanned(json.dumps(block)) == []
    assert Redactor(names=["signature"]).redact_value(block, response=True)["signature"] == PLACEHOLDER


@pytest.mark.parametrize("piece", ["a.", "a-", "a+", "a1."])
def test_a_long_run_of_scheme_characters_is_read_in_linear_time(piece: str) -> None:
    """A URL's scheme is letters, digits, ``+``, ``.`` and ``-``: a run of them without ``://`` after it was tried
    as a scheme from each ``.``, ``-`` and ``+`` inside it, reading the rest of the run each time (1 MB of
    ``a.``: hours). A cassette chooses such text, and ``scan`` and recording read it."""
    text = "see https://user:hunter2pass@db.test/ then " + piece * 500_000 + " and x-1.https://u:p4ssw0rd9@h.test/"
    results: list[object] = []
    finishes_within(60, lambda: results.extend([Redactor().redact_text(text), scan_document(Redactor(), text)]))
    redacted, found = results
    assert isinstance(redacted, str) and "hunter2pass" not in redacted and "p4ssw0rd9" not in redacted
    assert piece * 500_000 in redacted, "the run itself is kept"
    assert [value for _, value in found] == ["user:hunter2pass", "u:p4ssw0rd9"]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("-https://u:s3cretpass@h.test/", "-https://"),  # a scheme after a run's first character
        ("x.y+z-https://u:s3cretpass@h.test/", "x.y+z-https://"),  # the whole run is the scheme
        ("1.2.https://u:s3cretpass@h.test/", "1.2.https://"),  # the scheme starts at the run's first letter
    ],
)
def test_a_scheme_inside_a_run_of_scheme_characters_is_read_as_before(text: str, kept: str) -> None:
    assert Redactor().redact_text(text) == kept + PLACEHOLDER + "@h.test/"


def test_a_long_run_of_name_words_is_read_in_linear_time() -> None:
    """Whether an assignment may follow a name's word was read from the end of each word to the end of its run of
    name characters: ``passwordpassword...`` (a cassette chooses it) read the run once a word (64 KB: 5 s)."""
    run = "password" * 50_000
    text = f"{run} and sk-{run[:30]}x9 then\ndb_password: hunter2pass9 {run}"
    results: list[object] = []
    finishes_within(60, lambda: results.extend([Redactor().redact_text(text), scan_document(Redactor(), text)]))
    redacted, found = results
    assert redacted == f"{run} and {PLACEHOLDER} then\ndb_password: {PLACEHOLDER} {run}"
    assert [value for _, value in found] == [f"sk-{run[:30]}x9", "hunter2pass9"]


def test_a_long_run_of_attribute_name_characters_is_read_in_linear_time() -> None:
    """An XML start tag's attributes were searched from each position inside a run of name characters, reading
    the rest of the run each time (16 KB: 2 s). The name still starts at the run's first ASCII letter."""
    tag = "<add " + "b1" * 200_000 + ' 9x.password="hunter2pass" other="kept">'
    results: list[object] = []
    finishes_within(60, lambda: results.append(Redactor().redact_text(tag)))
    assert results == [tag.replace("hunter2pass", PLACEHOLDER)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "piece", ["<password><![CDATA[x", ",api_key='x", '(password="x', "'api_key'] = x", "?token=?a=b"]
)
def test_many_starts_of_the_new_assignment_and_cdata_forms_are_read_in_linear_time(piece: str) -> None:
    """Each start of a CDATA value, a keyword argument, a quoted name or a parameter inside another's value reads
    only to the next start (a value running to the end of the text from each start is quadratic)."""
    text = "</x> " + piece * 100_000 + "\npassword: hunter2pass9"
    results: list[object] = []
    finishes_within(60, lambda: results.extend([Redactor().redact_text(text), scan_document(Redactor(), text)]))
    redacted, found = results
    assert isinstance(redacted, str) and redacted.endswith(f"password: {PLACEHOLDER}")
    assert "hunter2pass9" in [value for _, value in found]
