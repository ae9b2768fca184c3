"""Tests of ``vcr_transport._core.rules._scan``, the engine of ``vcr-transport scan``: ``scan_text`` (the
secrets the rules would remove, each as it stands), ``scan_name`` and ``scan_document`` over .env, YAML,
cassette lines (headers, bodies, streamed events) and PEM blocks."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest
from helpers import finishes_within

from vcr_transport import PLACEHOLDER, Redactor
from vcr_transport._core.rules import _known
from vcr_transport._core.rules._scan import scan_document, scan_name, scan_text

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
GITHUB = "ghp_R7nQ2vX9kLm4pZ8sT1wY6bC3dF5gH0jK2aE4"


def test_scan_text_reports_each_secret_as_it_stands() -> None:
    text = f"export OPENAI_API_KEY={KEY} and the token {GITHUB} in prose"
    assert sorted(scan_text(Redactor(), text)) == sorted([KEY, GITHUB])
    assert scan_text(Redactor(), "The capital of France is Paris; max_tokens=256.") == []


def test_scan_text_finds_a_bearer_header_value() -> None:
    found = scan_text(Redactor(), f"Authorization: Bearer {KEY}")
    assert found and all(KEY in secret for secret in found)


def test_scan_name_finds_a_key_glued_to_a_test_id() -> None:
    assert scan_name(Redactor(), f"test_chat[{KEY}].jsonl") == [KEY]
    assert scan_name(Redactor(), "test_chat_streaming.jsonl") == []


def test_dotenv_and_yaml_values_under_secret_names_are_found_with_line_numbers() -> None:
    text = "# config\nMODEL=gpt-4o\nDB_PASSWORD='c0rrect-h0rse'\nservice:\n  client_secret:\n    - s3cr3t-v4lue-9\n"
    found = list(scan_document(Redactor(), text))
    assert (3, "c0rrect-h0rse") in found
    assert (6, "s3cr3t-v4lue-9") in found
    assert all(number != 2 for number, _ in found)


def test_a_reference_under_a_secret_name_is_not_a_secret() -> None:
    text = "api_key: ${OPENAI_API_KEY}\npassword: {{ vault.password }}\n"
    assert list(scan_document(Redactor(), text)) == []
    items = "api_key:\n  - ${OPENAI_API_KEY}\n  - os.environ['KEY']\n  - true\npassword:\n  - 'hunter2 hunter2'\n"
    assert list(scan_document(Redactor(), items)) == [(6, "hunter2 hunter2")], "a YAML item is read as its line"


def test_cassette_lines_headers_and_json_bodies() -> None:
    request = {
        "type": "request",
        "call_index": 0,
        "method": "POST",
        "url": "https://api.openai.com/v1/chat/completions",
        "headers": [["content-type", "application/json"], ["authorization", f"Bearer {KEY}"]],
        "body": {"json": {"model": "gpt-4o", "messages": [{"role": "user", "content": f"my key is {GITHUB}"}]}},
    }
    clean = {"type": "response", "call_index": 0, "status": 200, "headers": [["content-type", "application/json"]]}
    text = json.dumps(clean) + "\n" + json.dumps(request) + "\n"
    found = list(scan_document(Redactor(), text))
    assert found and all(number == 2 for number, _ in found)
    secrets = " ".join(secret for _, secret in found)
    assert KEY in secrets and GITHUB in secrets


def test_a_key_spread_over_a_recorded_streams_events_is_found_at_its_first_event() -> None:
    pieces = ["Your key: ", KEY[:12], KEY[12:], " ok"]
    chunks = [
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": piece}}]}) + "\n\n" for piece in pieces
    ]
    lines = [{"type": "response", "call_index": 0, "status": 200, "headers": [["content-type", "text/event-stream"]]}]
    lines += [{"type": "event", "call_index": 0, "event_index": n, "text": c} for n, c in enumerate(chunks)]
    lines[2] = {
        "type": "event",
        "call_index": 0,
        "event_index": 1,
        "base64": base64.b64encode(chunks[1].encode()).decode(),
    }
    found = list(scan_document(Redactor(), "\n".join(json.dumps(line) for line in lines)))
    assert found == [(2, KEY)]


def test_a_pem_block_is_reported_whole_at_its_first_line() -> None:
    body = "\n".join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"] * 4)
    pem = f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"
    text = f"notes\n\n{pem}\n"
    found = list(scan_document(Redactor(), text))
    assert any(number == 3 and "BEGIN PRIVATE KEY" in secret and "\n" in secret for number, secret in found), found


def test_a_line_nested_deeper_than_json_reads_is_searched_as_text() -> None:
    """A cassette line nested past Python's recursion limit made ``scan`` raise RecursionError."""
    line = '{"name": "DB_PASSWORD", "value": ' * 5_000 + '"s3cr3t-v4lue"' + "}" * 5_000
    found = list(scan_document(Redactor(), line + "\nAPI_KEY=hunter2hunter2\n"))
    assert (2, "hunter2hunter2") in found
    assert Redactor().redact_text(line, response=True).count("s3cr3t-v4lue") == 0


def test_a_file_whose_lines_each_bring_a_new_secret_is_scanned_in_linear_time() -> None:
    """Each value learned rebuilt the search of every value learned before it: a planted file of 4,000 lines,
    each with a different ``password``, took about 2 minutes to scan (quadratic); each is still reported, and so
    is a later line that repeats an earlier one bare."""
    secrets = [f"Pw{index:06d}q7Wx2Lm9" for index in range(20_000)]
    lines = [json.dumps({"note": f"line {index}", "password": secret}) for index, secret in enumerate(secrets)]
    text = "\n".join([*lines, f"echo {secrets[7]}"])
    found: list[tuple[int, str]] = []
    finishes_within(60, lambda: found.extend(scan_document(Redactor(), text)))
    assert found == [*((number, secret) for number, secret in enumerate(secrets, start=1)), (20_001, secrets[7])]


def test_a_file_with_more_secrets_than_a_redactor_remembers_is_searched_up_to_there_and_says_where(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past ``MAX_LEARNED_CHARACTERS`` (made small here) the redactor refuses to learn more: the lines before are
    reported, the line where it filled up is noted as where the search stopped (``scan`` exits 1)."""
    monkeypatch.setattr(_known, "MAX_LEARNED_CHARACTERS", 2_000)
    secrets = [f"Pw{index:06d}q7Wx2Lm9" for index in range(100)]
    unsearched: list[tuple[int, str, str]] = []
    found = list(scan_document(Redactor(), "\n".join(f"password: {secret}" for secret in secrets), unsearched))
    [(stop, why, fix)] = unsearched
    assert "split its calls over several" in fix
    assert 5 < stop < len(secrets)
    assert why.endswith("characters of their written forms): the rest of the file was not searched")
    assert found == list(enumerate(secrets[: stop - 1], start=1))


def test_a_line_of_many_secrets_is_reported_in_linear_time() -> None:
    """Each secret of a line was compared with each other (is one inside another?): a planted line of 20,000
    secrets took 19 s, 80,000 would take minutes. One search of each for the others now."""
    secrets = [f"Pw{index:06d}q7Wx2Lm9" for index in range(30_000)]
    line = json.dumps([{"password": secret} for secret in secrets])
    found: list[tuple[int, str]] = []
    finishes_within(20, lambda: found.extend(scan_document(Redactor(), line)))  # 43 s before, 2.5 s now
    assert found == [(1, secret) for secret in secrets]


def test_a_secret_holding_another_or_written_with_escapes_is_reported_once() -> None:
    """``Bearer K`` holds ``K``; ``P\\u00e9`` as written stands for ``P\u00e9`` as read: each once (the escaped
    one was reported beside the one it stands for)."""
    line = json.dumps({"password": "Pw000001q7Wx2\u00e9Lm9", "header": "Bearer Kq7Wx2Lm9Pq3Zt"})
    assert "\\u00e9" in line
    assert sorted(scan_document(Redactor(), line)) == [(1, "Kq7Wx2Lm9Pq3Zt"), (1, "Pw000001q7Wx2\u00e9Lm9")]


@pytest.mark.parametrize("surrogate", ["\\ud83d", "\\udc80", "\\udfff"])
def test_a_secret_holding_a_lone_surrogate_is_scanned_and_redacted(surrogate: str) -> None:
    """JSON may write half an emoji (``"\\ud83d"``: a client cut a string): learning such a secret raised
    UnicodeEncodeError, a traceback from ``scan`` and a recording lost."""
    line = '{"password": "Kq7Wx2Lm9' + surrogate + 'Pq3Zt", "note": "x"}'
    value = json.loads(line)["password"]
    assert list(scan_document(Redactor(), line)) == [(1, value)]
    redactor = Redactor()
    assert redactor.redact_value(json.loads(line)) == {"password": PLACEHOLDER, "note": "x"}
    assert redactor.redact_text(f"echo {value}!") == f"echo {PLACEHOLDER}!"


_MEGABYTE_MESSAGE = """
import json, resource, sys
from vcr_transport import Redactor
from vcr_transport._core.rules._scan import scan_document
session = {"instructions": "x" * 1_000_000, "client_secret": {"value": "ek_abc123def456ghi789"}}
inner = json.dumps({"type": "session.update", "session": session})
line = json.dumps({"type": "message", "call_index": 0, "message_index": 0, "t": 0.1, "from": "client", "text": inner})
list(scan_document(Redactor(), '{"password": "warm-up-value-1"}'))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
named = json.dumps({"password": "x" * 1_000_000 + "Q9", "api_key": "Kq7Wx2Lm9Pq3Zt"})
found = list(scan_document(Redactor(), line + "\\n" + named))
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"grown_kb": grown, "found": [[number, len(secret), secret[:24]] for number, secret in found]}))
"""


def test_a_websocket_message_of_megabytes_holding_a_secret_is_scanned_in_a_few_times_its_size() -> None:
    """A Realtime ``session.update`` of 1 MB of instructions and a ``client_secret``, scanned in a child process
    whose peak resident memory counts the search automata too (native memory, which tracemalloc doesn't see): the
    secret is reported, not the whole changed field; a megabyte removed whole beside another secret is reported
    and not searched for inside the others; the peak grows by a few times the lines. On 61fabde the JSON-string
    pattern took 1.4 GB for 5 MB; an automaton over a megabyte secret took 350 MB."""
    child = subprocess.run(
        [sys.executable, "-c", _MEGABYTE_MESSAGE], capture_output=True, text=True, timeout=60, check=True
    )
    outcome = json.loads(child.stdout)
    expected = [[1, 34, '{"value": "ek_abc123def4'], [2, 1_000_002, "x" * 24], [2, 14, "Kq7Wx2Lm9Pq3Zt"]]
    assert outcome["found"] == expected
    assert outcome["grown_kb"] < 40_000, outcome["grown_kb"]


def test_a_file_s_compressed_bodies_are_searched_decoded_within_one_budget_in_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each body decodes within its own bound; scan decodes a file's bodies within one budget in all, the rest
    searched as stored and said (a 4 MB file of 30 gzip bodies of 100 MB: over a minute and gigabytes)."""
    import base64
    import gzip
    import json

    from vcr_transport._core.format import _bodies

    packed = base64.b64encode(gzip.compress(b"x" * 600_000)).decode()
    lines = [json.dumps({"type": "header", "format_version": 1})]
    for index in range(4):
        lines += [
            json.dumps({"type": "request", "call_index": index, "method": "GET", "url": "https://a.test/",
                        "headers": [], "body": None}),
            json.dumps({"type": "response", "call_index": index, "status": 200, "http_version": "HTTP/1.1",
                        "headers": [["content-encoding", "gzip"]]}),
            json.dumps({"type": "event", "call_index": index, "event_index": 0, "t": 0, "base64": packed}),
            json.dumps({"type": "call_end", "call_index": index, "event_count": 1, "outcome": "complete"}),
        ]  # fmt: skip
    unsearched: list[tuple[int, str, str]] = []
    monkeypatch.setattr(_bodies, "MAX_DECODED_BYTES", 2_000_000)  # each body's bound and the file's: 3 bodies
    assert list(scan_document(Redactor(), "\n".join(lines) + "\n", unsearched)) == []
    assert unsearched and all("searched as stored, not decoded" in why for _, why, _ in unsearched)


@pytest.mark.parametrize("index", [[1], {"a": 1}, "1", None])
def test_a_line_whose_call_index_is_no_number_is_searched_as_a_line(index: object) -> None:
    """An event, message or response line whose ``call_index`` is a list or an object (a hostile file) raised
    ``TypeError: unhashable type`` from scan; its text is searched as a line's, and it joins no call's stream."""
    import json

    key = "sk-proj-4fJ9kQ2mXv7LpR8sT1uW3yZ5aB6cD0eF9gH2iJ4kLm"
    lines = [
        {"type": "header", "format_version": 1},
        {"type": "response", "call_index": index, "status": 200, "headers": [["a", "b"]]},
        {"type": "message", "call_index": index, "message_index": 0, "t": 0, "from": "server", "text": "hi " + key},
        {"type": "event", "call_index": index, "event_index": 0, "t": 0, "text": "hi"},
    ]
    found = list(scan_document(Redactor(), "".join(json.dumps(line) + "\n" for line in lines)))
    assert [secret for _, secret in found] == [key]
