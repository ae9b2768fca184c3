"""instructor (which pins openai 3.3: a transport exception is wrapped in APIConnectionError and retried)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import instructor
import openai
import pydantic
from conftest import SECRETS, Row, check_row
from fakes import Upstream


class Reply(pydantic.BaseModel):
    a: int
    b: int


def test_instructor_structured_output(tmp_path: Path, vendor: Upstream) -> None:
    def run(url: str, prompt: str) -> Any:
        client = instructor.from_openai(openai.OpenAI(api_key=SECRETS["OPENAI"], base_url=url + "/v1"))
        return client.chat.completions.create(
            model="gpt-test", response_model=Reply, messages=[{"role": "user", "content": prompt}]
        ).model_dump()

    check_row(Row(f"instructor (openai {openai.__version__})", "httpx2"), tmp_path / "c.jsonl", vendor, run)
