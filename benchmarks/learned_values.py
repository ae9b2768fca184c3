"""What redaction costs when every text brings a secret not seen before (a file or a recording whose lines each
carry a different ``password``, as a hostile cassette can), against the same texts all carrying one secret (the
floor: nothing new to learn after the first), in the same run, for growing numbers of texts. Linear work keeps
the ratio flat as the texts grow (about 11x from 500 to 8,000 texts); when each value learned rebuilt the search of
all those before it, it grew with their number (226x at 500 texts, 1,261x at 2,000: 48 s against 0.04 s).

    python -m benchmarks.learned_values [--sizes 1000 2000 4000 8000] [--json FILE]

It uses only ``Redactor().redact_text``, so the same script measures an older checkout (put it first on
PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from vcr_transport import Redactor


def _texts(count: int, distinct: bool) -> list[str]:
    return [
        json.dumps({"note": f"line {index}", "password": f"Pw{index if distinct else 0:06d}q7Wx2Lm9"})
        for index in range(count)
    ]


def _seconds(texts: list[str]) -> float:
    redactor = Redactor()
    started = time.process_time()
    for text in texts:
        redactor.redact_text(text)
    return time.process_time() - started


def measure(count: int) -> dict[str, Any]:
    distinct, same = _seconds(_texts(count, True)), _seconds(_texts(count, False))
    return {
        "texts": count,
        "distinct_s": round(distinct, 3),
        "same_secret_s": round(same, 3),
        "ratio": round(distinct / same, 2),
        "distinct_us_per_text": round(distinct / count * 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 2000, 4000, 8000])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [measure(count) for count in args.sizes]
    for row in rows:
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
