"""What the plugin builds once per session and what stays a test's own (issue 38): every test's cassette of a
session shares the matcher, the normaliser and the redaction rules built for its options; a cassette's learned
secrets, and a marker's options, stay its own."""

from __future__ import annotations

import json

import pytest

SESSION_TESTS = """
import httpx2
import pytest

KEY = "opaque0123456789zyxwvuts"
SEEN = {}


def answer(request):
    return httpx2.Response(200, json={"ok": True})


def send(headers, body):
    with httpx2.Client(transport=httpx2.MockTransport(answer), headers=headers) as client:
        return client.post("https://api.example.test/v1/chat", json=body).json()


def built(cassette):
    engine = cassette.session.replayer.engine if cassette.session.replayer else None
    return engine


@pytest.mark.vcr_transport
def test_a(vcr_cassette):
    send({"x-api-key": KEY}, {"prompt": "a"})
    SEEN["a"] = built(vcr_cassette)


@pytest.mark.vcr_transport
def test_b(vcr_cassette):
    send({}, {"prompt": "b", "note": KEY})
    engine, first = built(vcr_cassette), SEEN["a"]
    if engine is not None:  # replay: the objects the session built for these options, shared
        assert engine.matcher is first.matcher
        assert engine.normalizer is first.normalizer
        assert engine.redactor is not first.redactor, "a cassette's redactor learns for it alone"
        assert engine.redactor._names is first.redactor._names, "its rules are built once"


@pytest.mark.vcr_transport(ignore_headers=["x-trace"])
def test_c(vcr_cassette):
    send({"x-trace": "1"}, {"prompt": "c"})
    engine = built(vcr_cassette)
    if engine is not None:  # other options: other objects
        assert engine.matcher is not SEEN["a"].matcher
        assert engine.matcher.is_volatile("x-trace") and not SEEN["a"].matcher.is_volatile("x-trace")
"""

ORDER = ("-p", "no:randomly", "-p", "no:hypothesispytest", "-p", "no:cassetter")


def test_the_cassettes_of_a_session_share_what_was_built_and_keep_what_they_learned(project: pytest.Pytester) -> None:
    project.makepyfile(test_session=SESSION_TESTS)
    project.runpytest(*ORDER, "--vcr-mode=record").assert_outcomes(passed=3)
    folder = project.path / "cassettes" / "test_session"
    a, b = ((folder / f"{name}.jsonl").read_text() for name in ("test_a", "test_b"))
    assert "opaque0123456789zyxwvuts" not in a, "a secret header's value is removed from its own cassette"
    # test_b never sent the key as a secret: what test_a learned earlier in the session leaves its cassette as
    # it would be alone (the same whatever the order, or the worker, the tests run in).
    requests = [json.loads(line) for line in b.splitlines() if json.loads(line)["type"] == "request"]
    assert requests[0]["body"] == {"json": {"prompt": "b", "note": "opaque0123456789zyxwvuts"}}
    project.runpytest(*ORDER, "--vcr-mode=replay").assert_outcomes(passed=3)


def test_a_learned_secret_stays_in_its_cassette_when_the_headers_redacted_are_shared() -> None:
    from vcr_transport import Options

    options = Options()
    first, second = options.redactor(), options.redactor()
    headers = [("x-api-key", "opaque0123456789zyxwvuts"), ("accept", "*/*")]
    text = '{"echo": "opaque0123456789zyxwvuts"}'
    assert first.redact_headers(headers) == [("x-api-key", "[secret removed]"), ("accept", "*/*")]
    assert second.redact_text(text) == text, "nothing learned by another cassette's redactor"
    assert first.redact_text(text) == '{"echo": "[secret removed]"}'
    # The same headers in another cassette: their redaction is shared, and so is what it learns (its own).
    assert second.redact_headers(headers) == [("x-api-key", "[secret removed]"), ("accept", "*/*")]
    assert second.redact_text(text) == '{"echo": "[secret removed]"}'
    assert options.redactor().redact_text(text) == text


def test_headers_redacted_after_a_secret_was_learned_keep_it() -> None:
    from vcr_transport import Options

    options = Options()
    headers = [("x-api-key", "opaque0123456789zyxwvuts")]
    options.redactor().redact_headers(headers)  # the shared redaction from nothing learned
    redactor = options.redactor()
    redactor.learn("another0123456789secret")
    assert redactor.redact_headers(headers) == [("x-api-key", "[secret removed]")]
    text = "another0123456789secret opaque0123456789zyxwvuts"
    assert redactor.redact_text(text) == "[secret removed] [secret removed]"
    assert options.redactor().redact_text(text) == text


def test_a_shared_redaction_adds_what_it_learned_to_what_was_learned_meanwhile() -> None:
    """Another thread of the test learned a value while the headers were redacted from the state before it
    (``Redactor._adopt``): the cassette keeps both."""
    from vcr_transport import Options
    from vcr_transport._core.rules._known import EMPTY

    redactor = Options().redactor()
    learned_by_the_headers = EMPTY.learn(("opaque0123456789zyxwvuts",))
    redactor.learn("another0123456789secret")
    redactor._adopt(EMPTY, learned_by_the_headers)
    text = "another0123456789secret opaque0123456789zyxwvuts"
    assert redactor.redact_text(text) == "[secret removed] [secret removed]"


RELEASED_TESTS = """
import gc
import weakref

import httpx2
import pytest

SESSIONS = []


def answer(request):  # at the vendor's host, with its real headers (cookies with Domain, HSTS)
    return httpx2.Response(200, json={"ok": True}, headers=HEADERS)


@pytest.mark.vcr_transport
@pytest.mark.parametrize("n", range(3))
def test_call(vcr_cassette, n):
    with httpx2.Client(transport=httpx2.MockTransport(answer)) as client:
        assert client.post("https://api.openai.com/v1/chat/completions", json={"n": n}).json() == {"ok": True}
    SESSIONS.append(weakref.ref(vcr_cassette.session))


def test_the_earlier_cassettes_were_let_go():
    gc.collect()
    assert len(SESSIONS) == 3
    assert [ref() for ref in SESSIONS] == [None, None, None]
"""


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_a_test_s_cassette_is_not_kept_once_the_test_ended(project: pytest.Pytester, mode: str) -> None:
    """pytest keeps every collected item until the session ends: a cassette in an item's stash would keep its
    parsed calls, so a suite's memory would grow with each test that used one."""
    from real_wire import real_headers

    project.makepyfile(test_released=RELEASED_TESTS.replace("HEADERS", repr(real_headers("openai"))))
    if mode == "replay":
        project.runpytest(*ORDER, "--vcr-mode=record").assert_outcomes(passed=4)
    project.runpytest(*ORDER, f"--vcr-mode={mode}").assert_outcomes(passed=4)
