"""What a reviewer of a cassette is spared, and how long values are shown: the views (``show``, textconv, the
HTML page, ``diff``) share these rules. No I/O.

- **Volatile**: what changes on every recording while the call stays the same. Request headers are those the
  matcher skips (``RequestMatcher.is_volatile``: user agents, SDK versions, tracing); response headers are
  ``VOLATILE_RESPONSE_HEADERS`` (dates, request ids, rate-limit counters, cf-ray); in response bodies and
  stream events, the fields in ``VOLATILE_FIELDS`` (the ids a vendor makes up per answer, timestamps,
  signatures). The views leave them out unless asked (``--volatile``).
- **Padding**: the random filler some vendors add to stream events against length side channels (openai's
  ``obfuscation``, the ``p`` field): shown as ``…``, and a change of nothing but padding is said so.
- **Long values**: a base64 payload (an image, audio, a file) or any string over ``LONG_TEXT`` characters is
  shown as its head, its length and a hash (``cut_long``), so that one line stays readable.
- **Multipart bodies**: part by part, with name, filename, content type and size (``request_parts``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Final

from ..format._bodies import MultipartPart, multipart_boundary, multipart_pieces, part_text
from ..format._format import StoredBody

__all__ = [
    "LONG_TEXT",
    "PADDING",
    "PADDING_FIELDS",
    "VOLATILE_FIELDS",
    "Part",
    "change_kind",
    "cut_long",
    "described_bytes",
    "is_padding_path",
    "quiet",
    "request_bytes",
    "request_parts",
]

VOLATILE_FIELDS: Final = frozenset(
    {
        "id",  # chatcmpl-…, msg_…, resp_…, call_…, toolu_…: one per answer
        "item_id",  # the Responses API's stream events
        "created",
        "created_at",
        "createTime",  # gemini
        "responseId",  # gemini
        "system_fingerprint",
        "signature",  # anthropic's thinking signatures
    }
)
PADDING_FIELDS: Final = frozenset({"obfuscation", "p"})  # "p" only at the top of a stream event's data
PADDING: Final = "…"  # what a padding value is shown as
LONG_BASE64 = 200  # characters from which a base64-looking string is cut
LONG_TEXT = 20_000  # characters from which any string is cut
_HEAD = 32
_BASE64 = re.compile(r"(data:[\w.+/-]+;base64,)?[A-Za-z0-9+/_-]+={0,2}\s*")


def described_bytes(data: bytes) -> str:
    """``1234 bytes, sha256 0123456789ab``: bytes by their size and the head of their hash."""
    return f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:12]}"


def _cut(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{text[:_HEAD]}… ({len(text)} chars, sha256 {digest})"


def cut_long(value: Any) -> Any:
    """``value`` (any JSON value) with every long string cut to its head, its length and a hash: base64
    payloads (a data: URL too) from ``LONG_BASE64`` characters, any text from ``LONG_TEXT``."""
    if isinstance(value, str):
        if len(value) >= LONG_TEXT or (len(value) >= LONG_BASE64 and _BASE64.fullmatch(value)):
            return _cut(value)
        return value
    if isinstance(value, dict):
        return {key: cut_long(item) for key, item in value.items()}
    if isinstance(value, list):
        return [cut_long(item) for item in value]
    return value


def quiet(value: Any, *, top: bool = True) -> Any:
    """A response body or a stream event's data without its volatile fields (``VOLATILE_FIELDS``), and with
    its padding shown as ``PADDING``."""
    if isinstance(value, dict):
        return {
            key: PADDING if key in PADDING_FIELDS and (top or key != "p") else quiet(item, top=False)
            for key, item in value.items()
            if key not in VOLATILE_FIELDS
        }
    if isinstance(value, list):
        return [quiet(item, top=False) for item in value]
    return value


_TOP_PADDING = re.compile(r"response\.events\[\d+\](?:\.data)?\.p")


def is_padding_path(path: str) -> bool:
    """Whether a field path names a padding field: ``obfuscation`` anywhere, ``p`` at the top of a stream
    event's data (``response.events[3].p``)."""
    return path.rsplit(".", 1)[-1] == "obfuscation" or _TOP_PADDING.fullmatch(path) is not None


def change_kind(path: str, a: Any, b: Any) -> str:
    """How a difference is marked: ``padding`` (a padding field), ``whitespace`` (two texts with the same
    words), else ``changed``."""
    if is_padding_path(path):
        return "padding"
    if isinstance(a, str) and isinstance(b, str) and a != b and a.split() == b.split():
        return "whitespace"
    return "changed"


@dataclass
class Part:
    """One part of a multipart request body, as the views show it."""

    name: str | None
    filename: str | None
    content_type: str
    data: bytes
    text: str | None  # the value as text; None for a binary part

    @property
    def described(self) -> str:
        """``file: filename=a.wav, audio/wav, 1234 bytes, sha256 …``, or a text part by its value."""
        details = [f"filename={self.filename}"] if self.filename is not None else []
        details += [self.content_type] if self.content_type else []
        if self.text is not None and self.filename is None:
            return ", ".join([*details, repr(cut_long(self.text))])
        return ", ".join([*details, described_bytes(self.data)])


def request_bytes(body: StoredBody) -> bytes | None:
    """A stored request body's bytes when it is stored as text or base64 (None for JSON and no body)."""
    if body is None:
        return None
    if isinstance(body.get("text"), str):
        return str(body["text"]).encode("utf-8", "surrogateescape")
    if isinstance(body.get("base64"), str):
        try:
            return base64.b64decode(body["base64"])
        except (binascii.Error, ValueError):
            return None
    return None


def request_parts(body: StoredBody, headers: list[tuple[str, str]]) -> list[Part] | None:
    """The parts of a multipart request body; None for any other body."""
    content_type = next((value for name, value in headers if name.lower() == "content-type"), "")
    boundary = multipart_boundary(content_type)
    data = request_bytes(body) if boundary is not None else None
    if boundary is None or data is None:
        return None
    parts = [piece for piece in multipart_pieces(data, boundary) if isinstance(piece, MultipartPart)]
    if not parts:
        return None
    return [Part(p.name, p.filename, p.content_type, p.value, part_text(p)) for p in parts]
