"""A test's id as we write it: without the credentials its parameters may carry.

``@pytest.mark.parametrize("api_key", [KEY])`` puts the key in the test's node id (``test_x[sk-proj-...]``),
and the node id names the test's cassette file and, in a cassette several tests share, owns each of its
calls (``"test"`` on a request line, ``shared_as``), the usage ledger's owners and the summary's lines.
``without_credentials`` is that id with each credential the redactor's catalogue finds in its parameters
replaced by ``secret-removed-`` and eight hex digits of a hash of the whole id, so that two parameters with
different keys keep different names, and a name is the same on every machine and run. An id with no
credential is itself, byte for byte: no existing name changes.

A cassette recorded before (its file named with the key, its owners holding it) is still found: replay
reads the file of the old name when the new one is missing (``found_cassette``), and a shared cassette's
calls owned by the old id are the test's (``recorded_owner``); recording again writes the new owner.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

__all__ = ["MARK", "found_cassette", "recorded_owner", "without_credentials"]

MARK = "secret-removed-"  # what stands for a credential in a test id we write


def without_credentials(test_id: str) -> str:
    """``test_id`` with each credential in its parameters replaced (see the module's docstring); itself when
    it has none."""
    opening = test_id.find("[", test_id.rfind("::") + 1)
    if opening < 0:
        return test_id  # no parameters: names and classes hold no credential
    spans = _credential_spans(test_id[opening:])
    if not spans:
        return test_id
    digest = hashlib.sha256(test_id.encode()).hexdigest()[:8]
    parts, end = [test_id[:opening]], opening
    for start, stop in spans:
        parts += [test_id[end : opening + start], f"{MARK}{digest}"]
        end = opening + stop
    return "".join([*parts, test_id[end:]])


def _credential_spans(parameters: str) -> list[tuple[int, int]]:
    """Where the credential catalogue finds a key in a test's parameters (``[a-b]``), merged: its shapes
    alone, not the name rules (a test file ``test_secrets.py::`` assigns nothing), and at the start of each
    parameter's id as well, since pytest joins them with ``-`` (``[gpt-4o-sk-proj-...]``)."""
    from ._core.rules._catalogue import catalogue_matches, may_hold_prefixed

    found = [(start, stop) for start, stop, _ in catalogue_matches(parameters)]
    if may_hold_prefixed(parameters.encode()):
        for at in (i + 1 for i, c in enumerate(parameters) if c in "-_./"):
            found += [(at + start, at + stop) for start, stop, _ in catalogue_matches(parameters[at:])]
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(stop, merged[-1][1]))
        else:
            merged.append((start, stop))
    return merged


def recorded_owner(owners: Iterable[str], owner: str) -> str:
    """The owner under which a shared cassette holds the calls of test ``owner`` (an id we write): ``owner``
    itself, or the id holding a credential that a version before this one wrote for the same test."""
    found = set(owners)
    if owner in found or MARK not in owner:
        return owner
    return next((old for old in sorted(found) if old and without_credentials(old) == owner), owner)


def found_cassette(path: Path, older: Path) -> Path:
    """The cassette file for a test: ``path``, named by the id we write, unless it is missing and ``older``,
    named by the raw id as versions before this one named it, exists (replay writes nothing, so it reads
    that file; rename it to ``path``'s name to keep the credential out of the file name)."""
    if path == older or path.exists() or not older.exists():
        return path
    return older
