"""Stand-in keys: while a cassette replays, the SDKs' credential variables that are unset hold a fake value.

A replay never sends a key (nothing leaves the process), but the SDKs refuse to build a client without one:
``openai.OpenAI()`` raises ``Missing credentials`` before the cassette sees a request. So the credential
variables that are unset get ``STAND_IN`` for as long as a cassette replays. The rules:

- **Replay only.** Record, record-on-miss (a miss goes live, with the real key), check and off set nothing:
  there an unset key fails as the SDK makes it fail. ``use_cassette`` (and so the pytest marker) starts the
  stand-ins when its session's concrete mode is replay, whatever chose it (argument, ``--vcr-mode``,
  ``VCR_TRANSPORT_MODE``, ``auto`` finding the cassette); a transport handed to a client
  (``vcr_transport.transport()``) has no block to set them in.
- **Only what is unset.** A variable the user set, even to a real key, is left alone. ``KEY_VARIABLES`` are
  groups of alternatives an SDK reads: one gets the stand-in only when none of its group is set
  (google-genai logs a warning when both ``GOOGLE_API_KEY`` and ``GEMINI_API_KEY`` are set).
- **Counted and restored, as every patch** (``_patch.py``): nested and concurrent replays share one set of
  stand-ins, the first start sets them and the last stop removes them, on every path (an exception,
  Ctrl-C). The environment is the process's: while one thread replays, a client another thread builds sees
  the stand-in too (a recording started then would send it and be refused by the vendor).
- **Clearly fake.** ``STAND_IN`` has no digits, so neither redaction nor ``scan`` takes it for a key; it goes
  out in ``authorization`` (or ``x-api-key``, ``x-goog-api-key``), which replay compares as redacted, so a
  cassette recorded with a real key replays with it.

Where the stand-ins come too late (a client built at import, or in a fixture wider than the test), the SDK's
missing-key error gets ``MISSING_KEY_HINT`` as a note (the pytest plugin adds it to a marked test's failure).

Importing this module sets nothing.
"""

from __future__ import annotations

import dataclasses
import os

from ._patch import Patch

__all__ = ["KEY_VARIABLES", "MISSING_KEY_HINT", "STAND_IN", "STAND_INS", "KeyVariable", "add_missing_key_hint"]

STAND_IN = "vcr_transport-replay-stand-in-not-a-key"


@dataclasses.dataclass(frozen=True)
class KeyVariable:
    """One credential an SDK reads from the environment: ``names``, the alternatives it accepts (the first
    gets the stand-in when none is set), and ``read_by``, who reads them (checked against the versions named)."""

    names: tuple[str, ...]
    read_by: str


KEY_VARIABLES: tuple[KeyVariable, ...] = (
    KeyVariable(
        ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"),
        "openai 3.60 OpenAI/AsyncOpenAI (langchain-openai, litellm and pydantic-ai's openai provider read it too)",
    ),
    KeyVariable(("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"), "openai 3.60 AzureOpenAI/AsyncAzureOpenAI"),
    KeyVariable(("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), "anthropic 2.17 Anthropic/AsyncAnthropic"),
    KeyVariable(
        ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        "google-genai 3.6 Client (prefers GOOGLE_API_KEY; pydantic-ai's and langchain's Google providers read it)",
    ),
)


def _set_stand_ins(patch: Patch) -> None:
    for variable in KEY_VARIABLES:
        if not any(os.environ.get(name) for name in variable.names):
            patch.set_item(os.environ, variable.names[0], STAND_IN)


STAND_INS = Patch(_set_stand_ins)
"""Started by each replaying ``use_cassette`` block, stopped as it closes."""


# How the SDKs say a key is missing (openai 3.60 OpenAI and AzureOpenAI, anthropic 2.17 at its first request,
# google-genai 3.6): a client built before its test's cassette opened, at import or in a fixture wider than the
# test, never saw the stand-ins.
MISSING_KEY_MESSAGES = (
    "Missing credentials",
    "The api_key client option must be set",
    "Could not resolve authentication method",
    "No API key was provided",
)
MISSING_KEY_HINT = (
    "vcr_transport: a replay needs no key (while a cassette replays, the SDKs' unset key variables hold a "
    "stand-in), but this client was built before its test's cassette opened (at import, or in a fixture wider "
    "than the test): build it in the test, or set a dummy key for replay (OPENAI_API_KEY=dummy); recording "
    "needs the real one"
)


def add_missing_key_hint(error: BaseException) -> None:
    """Note on an SDK's missing-key error that replay needs none, and what to do (once)."""
    if any(message in str(error) for message in MISSING_KEY_MESSAGES) and MISSING_KEY_HINT not in getattr(
        error, "__notes__", ()
    ):
        error.add_note(MISSING_KEY_HINT)
