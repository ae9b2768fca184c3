"""Fixtures of the transport tests."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture
def no_gc() -> Iterator[None]:
    """The garbage collector off for the test: what is closed then was closed by the code, not collected."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
