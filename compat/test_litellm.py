"""litellm with the openai and anthropic providers, sync and async."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import litellm
import pytest
from conftest import SECRETS, Row, check_row
from fakes import Upstream


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("side", ["sync", "async"])
def test_completion(provider: str, side: str, tmp_path: Path, vendor: Upstream) -> None:
    def run(url: str, prompt: str) -> Any:
        options: dict[str, Any] = {
            "model": f"{provider}/test-model",
            "messages": [{"role": "user", "content": prompt}],
            "api_key": SECRETS["OPENAI" if provider == "openai" else "ANTHROPIC"],
            "api_base": url + "/v1" if provider == "openai" else url,
            "max_tokens": 10,
        }
        if side == "sync":
            return litellm.completion(**options).choices[0].message.content
        return asyncio.run(litellm.acompletion(**options)).choices[0].message.content

    library = "httpx2 (openai SDK)" if provider == "openai" else "httpx (litellm's own)"
    check_row(Row(f"litellm {provider}: {side}", library), tmp_path / "c.jsonl", vendor, run)
