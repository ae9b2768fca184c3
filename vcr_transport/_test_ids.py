"""A test's id as we write it: without the credentials its parameters may carry.

``@pytest.mark.parametrize("api_key", [KEY])`` puts the key in the test's node id (``test_x[sk-proj-...]``),
and the node id names the test's cassette file and, in a cassette several tests share, owns each of its
calls (``"test"`` on a request line, ``shared_as``), the usage ledger's owners and the summary's lines.
``without_credentials`` is that id with each credential the redactor finds in it (the default rules: the
catalogued shapes, a secret name's value) replaced by ``secret-removed-`` and eight hex digits of a hash of
the whole id, so that two parameters with different keys keep different names, and a name is the same on
every machine and run. An id with no credential is itself, byte for byte: no existing name changes.

A cassette recorded before (its file named with the key, its owners holding it) is still found: replay
reads the file of the old name when the new one is missing (``found_cassette``), and a shared cassette's
calls owned by the old id are the test's (``recorded_owner``); recording again writes the new owner.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._core.rules._redaction import Redactor

__all__ = ["MARK", "found_cassette", "recorded_owner", "without_credentials"]

MARK = "secret-removed-"  # what stands for a credential in a test id we write


@functools.cache
def _redactor() -> Redactor:
    from ._core.rules._redaction import Redactor  # lazily: the plugin loads this module with no cassette in use

    return Redactor()


def without_credentials(test_id: str) -> str:
    """``test_id`` with each credential in it replaced (see the module's docstring); itself when it has none."""
    from ._core.format._format import PLACEHOLDER

    redacted = _redactor().redact_text(test_id)
    if redacted == test_id:
        return test_id
    digest = hashlib.sha256(test_id.encode()).hexdigest()[:8]
    return redacted.replace(PLACEHOLDER, f"{MARK}{digest}")


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
