"""Write ``tests/fixtures/wire/``, the real-wire fixtures the tests read, from the team's captured vendor traffic.

Usage (a maintainer, with the captures beside the checkout; the tests never read them)::

    python tools/make_wire_fixtures.py                        # reads ../shared/vendor-headers, ../shared/vendor-traffic
    python tools/make_wire_fixtures.py --shared PATH/TO/shared

It writes:

- ``headers/openai.json``, ``headers/anthropic.json``: every response header set of ``vendor-headers``, as it is
  (JSON answers and event streams; their identifying values were replaced by same-shaped text when captured).
- ``traffic.ndjson``: a selection of ``vendor-traffic``'s exchanges, one a line (``{"name", "source", "request",
  "response"}``, ``name`` being the capture file's stem and the exchange's number in it). Kept: the smallest
  exchange of each host, method, endpoint, kind of answer (JSON, event stream, text) and status; every event
  stream up to ``STREAM_LIMIT`` bytes (the chunk-fidelity cases); and, per vendor, the smallest exchanges whose
  answer calls a tool the request offered; and every exchange whose bodies hold a key prefix by chance (``sk-``
  inside base64 media: redaction must leave it whole). No body is cut: each exchange is whole, as captured.
- The ``cookie`` request headers of the captures carry real Cloudflare cookie values: each value is replaced by
  random text of the same shape (seeded by the value, so that a rerun writes the same bytes).

Run it again when the captures change, then ``vcr-transport scan tests/fixtures/wire`` and read what it finds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import string
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests" / "fixtures" / "wire"
STREAM_LIMIT = 15_000  # bytes of one exchange's JSON: the streams above it are 17-51 KB, the kept ones 2-14 KB
TOOL_CALLS_PER_VENDOR = 3
# Path segments that name one object (a model, a file, a project): an endpoint is the path without them.
_OBJECT = re.compile(
    r"/(models|files|vector_stores|conversations|fileSearchStores|operations|responses|projects|locations)/[^/:]+"
)
_COOKIE = re.compile(r"(=)([^;]+)")
# A key's prefix, met by chance inside real bodies (base64 media): the exchanges the redaction must leave whole.
_BY_CHANCE = re.compile(r"sk-")


def _content_kind(response: dict[str, Any]) -> str:
    types = [v if isinstance(v, str) else v[0] for k, v in response["headers"].items() if k.lower() == "content-type"]
    kind = types[0].split(";")[0].strip() if types else ""
    return "sse" if kind == "text/event-stream" else kind


def _group(exchange: dict[str, Any]) -> tuple[str, ...]:
    """Host, method, endpoint (the path with its object ids left out), kind of answer and status."""
    request, response = exchange["request"], exchange["response"]
    parts = urlsplit(request["uri"])
    endpoint = _OBJECT.sub(lambda m: f"/{m.group(1)}/{{id}}", parts.path)
    kind = _content_kind(response)
    return parts.hostname or "", request["method"].upper(), endpoint, kind, str(response["status"])


def _offered(request_body: Any) -> set[str]:
    """The names of the tools a request offers (Anthropic's ``tools``, Gemini's ``functionDeclarations``)."""
    tools = [t for t in request_body.get("tools", []) if isinstance(t, dict)] if isinstance(request_body, dict) else []
    declared = [d for t in tools for d in t.get("functionDeclarations", []) if isinstance(d, dict)]
    return {t["name"] for t in tools + declared if isinstance(t.get("name"), str)}


def _called(response_body: Any) -> set[str]:
    """The names of the tools a JSON answer calls (Anthropic ``tool_use`` blocks, Gemini ``functionCall`` parts)."""
    if not isinstance(response_body, dict):
        return set()
    blocks = [b for b in response_body.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_use"]
    parts = [p for c in response_body.get("candidates", []) for p in c.get("content", {}).get("parts", [])]
    return {b.get("name") for b in blocks} | {p["functionCall"].get("name") for p in parts if "functionCall" in p}


def _offered_tool_called(exchange: dict[str, Any]) -> bool:
    """Whether the JSON answer calls a tool the request offered."""
    return bool(_offered(exchange["request"]["body"].get("json")) & _called(exchange["response"]["body"].get("json")))


def _same_shape(value: str) -> str:
    """Random text of ``value``'s shape (letters for letters of the same case, digits for digits), seeded by it."""
    chooser = random.Random(hashlib.sha256(value.encode()).digest())
    pools = {"d": string.digits, "l": string.ascii_lowercase, "u": string.ascii_uppercase}

    def pool(c: str) -> str | None:
        if c.isascii() and c.isdigit():
            return pools["d"]
        if c.isascii() and c.isalpha():
            return pools["l" if c.islower() else "u"]
        return None

    return "".join(chooser.choice(p) if (p := pool(c)) else c for c in value)


def _fake_cookies(exchange: dict[str, Any]) -> dict[str, Any]:
    headers = exchange["request"]["headers"]
    for name, value in list(headers.items()):
        if name.lower() == "cookie" and isinstance(value, str):
            headers[name] = _COOKIE.sub(lambda m: m.group(1) + _same_shape(m.group(2)), value)
    return exchange


def _captured(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(folder.glob("*.json")):
        capture = json.loads(path.read_text())
        for number, interaction in enumerate(capture["interactions"]):
            found.append((f"{path.stem}#{number}", {"source": capture.get("source", ""), **interaction}))
    return found


def _smallest_of_each_group(by_size: list[tuple[str, dict[str, Any]]]) -> set[str]:
    groups: dict[tuple[str, ...], str] = {}
    for name, exchange in by_size:
        groups.setdefault(_group(exchange), name)
    return set(groups.values())


def _body_text(exchange: dict[str, Any]) -> str:
    return json.dumps([exchange["request"]["body"], exchange["response"]["body"]])


def _kept(by_size: list[tuple[str, dict[str, Any]]], size: dict[str, int]) -> set[str]:
    kept = _smallest_of_each_group(by_size)
    kept |= {n for n, e in by_size if _content_kind(e["response"]) == "sse" and size[n] <= STREAM_LIMIT}
    for vendor in ("anthropic", "googleapis"):
        calls = [n for n, e in by_size if vendor in e["request"]["uri"] and _offered_tool_called(e)]
        kept |= set(calls[:TOOL_CALLS_PER_VENDOR])
    return kept | {n for n, e in by_size if _BY_CHANCE.search(_body_text(e))}


def select(exchanges: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The kept exchanges, in the captures' order (see the module's docstring for the rule)."""
    size = {name: len(json.dumps(exchange)) for name, exchange in exchanges}
    kept = _kept(sorted(exchanges, key=lambda item: (size[item[0]], item[0])), size)
    unique: dict[str, str] = {}  # captures repeated word for word in several files are kept once
    for name, exchange in exchanges:
        if name in kept:
            unique.setdefault(json.dumps([exchange["request"], exchange["response"]], sort_keys=True), name)
    chosen = set(unique.values())
    return [(name, _fake_cookies(exchange)) for name, exchange in exchanges if name in chosen]


def _lines(selected: Iterable[tuple[str, dict[str, Any]]]) -> str:
    return "".join(
        json.dumps({"name": name, **exchange}, ensure_ascii=False, separators=(",", ":")) + "\n"
        for name, exchange in selected
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared", help="the captures' folder")
    parser.add_argument("--output", type=Path, default=TARGET, help="the fixtures' folder")
    arguments = parser.parse_args(argv)
    headers, traffic, output = (
        arguments.shared / "vendor-headers",
        arguments.shared / "vendor-traffic",
        arguments.output,
    )
    if not headers.is_dir() or not traffic.is_dir():
        print(f"{arguments.shared} has no vendor-headers/ and vendor-traffic/: pass --shared", file=sys.stderr)
        return 2
    (output / "headers").mkdir(parents=True, exist_ok=True)
    for vendor in ("openai", "anthropic"):
        shutil.copyfile(headers / f"{vendor}.json", output / "headers" / f"{vendor}.json")
    selected = select(_captured(traffic))
    (output / "traffic.ndjson").write_text(_lines(selected), encoding="utf-8")
    print(f"{len(selected)} exchanges into {output / 'traffic.ndjson'}; header sets into {output / 'headers'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
