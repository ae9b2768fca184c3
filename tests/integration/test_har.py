"""``vcr-transport show --har``: a cassette as HAR 1.2, validated against the HAR schema (``tests/har_schema``)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import referencing
from referencing.jsonschema import DRAFT6
from test_cli import cli, make_project

from vcr_transport._core.rules._redaction import PLACEHOLDER
from vcr_transport._storage import read_cassette

SCHEMAS = Path(__file__).resolve().parents[1] / "har_schema"


def validate_har(document: Any) -> None:
    resources = [
        (path.name, referencing.Resource.from_contents(json.loads(path.read_text()), default_specification=DRAFT6))
        for path in SCHEMAS.glob("*.json")
    ]
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(resources)
    schema = json.loads((SCHEMAS / "har.json").read_text())
    validator = jsonschema.Draft6Validator(schema, registry=registry, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def test_the_validator_refuses_what_is_no_har() -> None:
    with pytest.raises(AssertionError, match="required property"):
        validate_har({"log": {"version": "1.2", "creator": {"name": "x", "version": "1"}, "entries": [{}]}})


def _har(cwd: Path, *args: str) -> dict[str, Any]:
    result = cli(cwd, "show", *args, "--har", "out.har")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("wrote out.har (")
    document: dict[str, Any] = json.loads((cwd / "out.har").read_text())
    return document


def test_a_cassette_becomes_one_har_entry_per_call(project: Path) -> None:
    document = _har(project, "tests/cassettes/openai.jsonl")
    validate_har(document)
    log = document["log"]
    assert log["version"] == "1.2" and log["creator"]["name"] == "vcr_transport"
    cassette = read_cassette(project / "tests" / "cassettes" / "openai.jsonl")
    assert [e["request"]["url"] for e in log["entries"]] == [call.url for call in cassette.calls]
    chat, stream = log["entries"]
    # Bodies as recorded: the request's JSON, the response's text; the redacted credential as in the cassette.
    assert json.loads(chat["request"]["postData"]["text"]) == cassette.calls[0].body["json"]  # type: ignore[index]
    assert chat["request"]["postData"]["mimeType"] == "application/json"
    assert {"name": "authorization", "value": PLACEHOLDER} in chat["request"]["headers"]
    assert json.loads(chat["response"]["content"]["text"])["choices"][0]["message"]["content"] == "echo:hi"
    assert stream["response"]["content"]["mimeType"] == "text/event-stream"
    assert stream["response"]["content"]["text"].rstrip().endswith("data: [DONE]")
    # Timings from the recording: wait is the first chunk's offset, receive the rest, in milliseconds.
    offsets = cassette.calls[1].offsets
    assert stream["timings"]["wait"] == round(offsets[0] * 1000, 3)
    assert stream["timings"]["receive"] == round((offsets[-1] - offsets[0]) * 1000, 3)
    assert stream["time"] == pytest.approx(offsets[-1] * 1000, abs=0.01)
    # The vendor's real Set-Cookie headers become HAR cookies.
    assert any(cookie.get("httpOnly") for entry in log["entries"] for cookie in entry["response"]["cookies"])


def test_a_gzip_body_is_decoded_with_its_compression_said(project: Path) -> None:
    document = _har(project, "tests/cassettes/zipped.jsonl")
    validate_har(document)
    content = document["log"]["entries"][0]["response"]["content"]
    assert json.loads(content["text"]) == {"zipped": "yes"}
    wire = document["log"]["entries"][0]["response"]["bodySize"]
    assert content["size"] == len(b'{"zipped": "yes"}') and content["compression"] == content["size"] - wire


def test_one_call_and_stdout(project: Path) -> None:
    result = cli(project, "show", "tests/cassettes/openai.jsonl", "--call", "1", "--har", "-")
    assert result.returncode == 0
    document = json.loads(result.stdout)
    validate_har(document)
    assert len(document["log"]["entries"]) == 1 and document["log"]["entries"][0]["comment"].startswith("call 1")


@pytest.mark.parametrize(
    "args",
    [
        ["--har", "tests/cassettes/openai.jsonl"],  # as --html: the one path is the cassette
        ["tests/cassettes/openai.jsonl", "--har"],
        ["--har", "-", "tests/cassettes/openai.jsonl"],
    ],
    ids=["har-then-cassette", "cassette-then-har", "har-dash"],
)
def test_without_a_file_the_har_goes_to_stdout(project: Path, args: list[str]) -> None:
    result = cli(project, "show", *args)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    validate_har(document)
    assert len(document["log"]["entries"]) == 2
    assert not (project / "-").exists()


@pytest.mark.parametrize("flag", ["--har", "-o"], ids=["har", "html"])
def test_an_output_that_is_a_cassette_is_refused_and_left_as_it_was(project: Path, flag: str) -> None:
    """``show a.jsonl --har b.jsonl`` (two cassettes, as ``diff`` takes them) would replace b with a HAR."""
    other = project / "tests" / "cassettes" / "other.jsonl"
    other.write_bytes((project / "tests" / "cassettes" / "openai.jsonl").read_bytes())
    before = other.read_bytes()
    args = ["--html", "-o", str(other)] if flag == "-o" else ["--har", str(other)]
    result = cli(project, "show", "tests/cassettes/openai.jsonl", *args)
    assert result.returncode == 2 and other.read_bytes() == before
    assert "is a cassette, and the output would replace it" in result.stderr
    assert "fix: name another output file, or - for stdout" in result.stderr


def test_show_without_a_cassette_says_which_is_missing(project: Path) -> None:
    for args in (["show"], ["show", "--har"], ["show", "--har", "-"]):
        result = cli(project, *args)
        assert result.returncode == 2
        assert result.stderr.startswith("vcr-transport show: which cassette? e.g. vcr-transport show ")


def test_a_call_without_response_and_a_binary_body(tmp_path: Path) -> None:
    header = {"type": "header", "format_version": 1, "created": "2026-01-02T03:04:05+00:00"}
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    lines = [
        header,
        {
            "type": "request",
            "call_index": 0,
            "method": "GET",
            "url": "https://x.test/a?q=1&r=2",
            "headers": [],
            "body": None,
        },  # fmt: skip
        {
            "type": "call_end",
            "call_index": 0,
            "event_count": 0,
            "outcome": "error",
            "error": {"class": "httpx2.ConnectError", "message": "refused"},
        },  # fmt: skip
        {
            "type": "request",
            "call_index": 1,
            "method": "GET",
            "url": "https://x.test/img",
            "headers": [],
            "body": None,
        },  # fmt: skip
        {
            "type": "response",
            "call_index": 1,
            "status": 200,
            "headers": [["content-type", "image/png"]],
            "http_version": "HTTP/1.1",
        },  # fmt: skip
        {"type": "event", "call_index": 1, "event_index": 0, "t": 0.25, "base64": base64.b64encode(png).decode()},
        {"type": "call_end", "call_index": 1, "event_count": 1, "outcome": "complete"},
    ]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    document = _har(tmp_path, "c.jsonl")
    validate_har(document)
    failed, image = document["log"]["entries"]
    assert failed["response"]["status"] == 0 and "refused" in failed["response"]["_error"]
    assert failed["request"]["queryString"] == [{"name": "q", "value": "1"}, {"name": "r", "value": "2"}]
    assert failed["startedDateTime"] == "2026-01-02T03:04:05.000Z"
    assert image["response"]["content"]["encoding"] == "base64"
    assert base64.b64decode(image["response"]["content"]["text"]) == png
    assert image["timings"]["wait"] == 250.0


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cassettes of ``test_cli``'s project, recorded for this module."""
    return make_project(tmp_path_factory)
