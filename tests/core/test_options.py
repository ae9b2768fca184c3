"""The options model: one declaration (``vcr_transport.Options``) that every entry point, the pyproject merge,
the plugin's ini settings and the docs' options table read."""

from __future__ import annotations

import dataclasses
import json
import typing
import warnings
from pathlib import Path
from typing import Any

import httpx2
import pytest
from doc_blocks import docs_gen

import vcr_transport
from vcr_transport._core.engine._options import SETTINGS, UNPLAYED_ACTIONS, Options

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("VCR_TRANSPORT_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above the tests' working directory


def _answer(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json={"echo": request.read().decode()})


def _record(path: Path, *prompts: str) -> None:
    transport = vcr_transport.RecordingTransport(httpx2.MockTransport(_answer), path)
    with httpx2.Client(transport=transport) as client:
        for prompt in prompts:
            client.post("https://api.example.test/v1/echo", content=prompt)


def test_the_docs_table_is_the_declared_one() -> None:
    page = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    table = page.split("<!-- generated: options -->\n", 1)[1].split("<!-- end generated: options -->")[0]
    assert table == docs_gen().options_table(), (
        "the options table of docs/reference/configuration.md differs from Options: run .venv/bin/python docs/_gen.py"
    )
    for name in Options.names():
        assert f"| `{name}` |" in table
    for setting in SETTINGS:
        assert setting.name in table


def test_the_keyword_options_typeddicts_are_the_declared_ones() -> None:
    """_typed_options.py is what Options gives (generated), and each entry point's TypedDict holds exactly the
    options the entry point takes as keyword arguments, beside its named parameters (mode)."""
    from vcr_transport._core.engine import _typed_options

    gen = docs_gen()

    assert Path(_typed_options.__file__).read_text(encoding="utf-8") == gen.typed_options_module(), (
        "vcr_transport/_core/engine/_typed_options.py differs from Options: run .venv/bin/python docs/_gen.py"
    )
    for name, (entry, _, named) in gen.TYPED_OPTIONS.items():
        typed = getattr(_typed_options, name)
        assert set(typed.__annotations__) == set(Options.names(entry)) - set(named), name
        assert not typed.__required_keys__, name
    assert set(_typed_options.EveryOption.__annotations__) == set(Options.names())
    # The public names: the TypedDict of each function's **options, and Mode for mode=.
    assert vcr_transport.TransportOptions is _typed_options.TransportOptions
    assert typing.get_args(vcr_transport.Mode) == vcr_transport.MODES


def test_every_option_has_a_knob_and_its_default_passes_its_own_validator() -> None:
    for field in dataclasses.fields(Options):
        if field.name == "given":
            continue
        knob = Options.knob(field.name)
        assert knob.help and knob.check.values, field.name
        assert knob.check(field.default, field.name, "test") == field.default, field.name
        assert knob.entries or knob.marker, f"{field.name} can be set nowhere"


def test_unplayed_has_one_default_everywhere() -> None:
    assert Options().unplayed == "error" and Options.knob("unplayed").compat == "ignore"
    assert UNPLAYED_ACTIONS == ("error", "warn", "ignore", "partial")


def test_an_options_object_is_checked_like_keyword_arguments() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'pcae'"):
        Options(pcae=1.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="^Options: option pace must be a number of seconds or None, not 'fast'$"):
        Options(pace="fast")  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match="^Options: option unplayed must be one of 'error', 'warn', 'ignore', 'partial'"
    ):
        Options(unplayed="never")  # type: ignore[arg-type]
    with pytest.raises(vcr_transport.ModeError, match="unknown vcr_transport mode 'replya' \\(from argument\\)"):
        Options(mode="replya")
    normalised = Options(faults=["cut:after=3"], pace=1)  # type: ignore[list-item]
    assert normalised.faults[0].kind == "cut" and normalised.pace == 1.0


def test_each_entry_point_takes_its_own_options() -> None:
    assert "unplayed" not in Options.names("replay") and "mode" not in Options.names("replay")
    assert set(Options.names("recording")) == {"redact_names", "redact_patterns", "redact_with"} | {
        "keep_failures",
        "early_stop_ok",
        "plain_bodies",
        "shared_as",
    }
    assert {"mode", "unplayed", "caught_mismatch"} <= set(Options.names("marker"))
    assert {"block_network", "allowed_hosts"} <= set(Options.names("marker"))
    assert "missing_ok_unused" not in Options.names("marker")
    assert "shared_as" not in Options.names("marker")
    with pytest.raises(TypeError, match="ReplayTransport: unknown option\\(s\\) unplayed; valid: "):
        vcr_transport.ReplayTransport("missing.jsonl", unplayed="warn")
    with pytest.raises(
        TypeError, match="RecordingTransport: unknown option\\(s\\) pace; valid: early_stop_ok, keep_failures, "
    ):
        vcr_transport.RecordingTransport(httpx2.MockTransport(_answer), "c.jsonl", pace=1.0)
    with pytest.raises(ValueError, match="^use_cassette\\(\\): option unplayed must be one of"):
        vcr_transport.use_cassette("c.jsonl", unplayed="sometimes")
    with pytest.raises(TypeError, match="^use_cassette\\(\\): option block_network must be True, False or 'session'"):
        vcr_transport.use_cassette("c.jsonl", block_network="yes")


def test_transports_take_an_options_object(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recording = vcr_transport.RecordingTransport(
        httpx2.MockTransport(_answer), cassette, options=Options(redact_names=("prompt_id",))
    )
    with httpx2.Client(transport=recording) as client:
        client.post("https://api.example.test/v1/echo", json={"prompt_id": "p-123456", "say": "one"})
        client.post("https://api.example.test/v1/echo", json={"prompt_id": "p-123456", "say": "two"})
    assert "p-123456" not in cassette.read_text()
    unordered = Options(ordered=False, redact_names=("prompt_id",))
    with httpx2.Client(transport=vcr_transport.ReplayTransport(cassette, options=unordered)) as client:
        second = client.post("https://api.example.test/v1/echo", json={"prompt_id": "p-123456", "say": "two"})
    assert "two" in second.json()["echo"]
    transport = vcr_transport.transport(cassette, options=Options(mode="replay", ordered=False))
    assert transport.mode == "replay"
    with vcr_transport.use_cassette(cassette, options=Options(mode="replay", unplayed="ignore")) as block:
        assert block.mode == "replay"
    with pytest.raises(TypeError, match="^ReplayTransport: pass options=Options\\(...\\) or keyword options, not both"):
        vcr_transport.ReplayTransport(cassette, options=unordered, ordered=True)
    with pytest.raises(TypeError, match="^use_cassette\\(\\): options must be a vcr_transport.Options, not"):
        vcr_transport.use_cassette(cassette, options={"ordered": False})  # type: ignore[arg-type]


def test_an_explicit_option_wins_over_the_cassette_header_and_so_does_pyproject(tmp_path: Path) -> None:
    cassette = tmp_path / "imported.jsonl"
    _record(cassette, "a", "b")
    lines = cassette.read_text().splitlines()
    header = {**json.loads(lines[0]), "ordered": False, "match_on": ["method", "path"]}
    cassette.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    assert vcr_transport.ReplayTransport(cassette).options.ordered is False
    assert vcr_transport.ReplayTransport(cassette, ordered=True).options.ordered is True
    given = Options.from_arguments({"ordered": True})
    assert vcr_transport.ReplayTransport(cassette, options=given).options.ordered is True
    (tmp_path / "pyproject.toml").write_text('[tool.vcr_transport]\nmatch_on = ["method", "path", "body"]\n')
    with vcr_transport.use_cassette(cassette, mode="replay", unplayed="ignore") as block:
        assert block.session is not None and block.session.options.match_on == ("method", "path", "body")


def test_the_recorder_is_built_from_the_options_everywhere_serve_included(tmp_path: Path) -> None:
    from vcr_transport._recording import CassetteRecorder
    from vcr_transport._tools._serve import CassetteServer, ServeConfig

    options = Options.from_arguments({"ignore_headers": ["*"], "redact_names": ["prompt_id"], "keep_failures": True})
    recorder = CassetteRecorder.from_options(tmp_path / "a.jsonl", options)
    assert recorder._recording.matcher.is_volatile("x-anything") and recorder._recording.keep_failures
    assert recorder.redactor.redact_text('{"prompt_id": "p-123456"}') != '{"prompt_id": "p-123456"}'
    recorder.close()
    config = ServeConfig(
        (tmp_path / "served.jsonl",), mode="record", upstreams=(("openai", "https://api.openai.com"),), options=options
    )
    server = CassetteServer(config, say=lambda line: None)
    assert server.recorder is not None
    assert server.recorder._recording.matcher.is_volatile("x-anything"), "serve's quiet re-record matches as it serves"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server.recorder.close()


@pytest.mark.parametrize(
    ("settings", "given", "expected"),
    [
        ({"ignore_headers": ["x-a"]}, {"ignore_headers": ["x-b"]}, ("x-a", "x-b")),
        ({"passthrough_replay": "block"}, {}, "block"),
        ({"passthrough_replay": "block"}, {"passthrough_replay": "empty"}, "empty"),
        ({"mode": "record"}, {}, None),  # the mode is resolved by its precedence, not merged
        ({"ordered": False}, {}, "concurrent"),  # not an option [tool.vcr_transport] carries
        (
            {"normalize_patterns": [["run-[0-9]+", "run-N"]]},
            {"normalize_patterns": [("x", "y")]},
            (("run-[0-9]+", "run-N"), ("x", "y")),
        ),
    ],
)
def test_pyproject_adds_lists_and_fills_values(settings: dict[str, Any], given: dict[str, Any], expected: Any) -> None:
    name = next(iter(settings))
    merged = Options.from_arguments(given).with_settings(settings, where="pyproject")
    assert getattr(merged, name) == expected
