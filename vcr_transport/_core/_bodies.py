"""Bodies as the cassette stores and shows them: request bodies parsed or encoded, content types,
content-encodings decoded and encoded again, and SSE text split into events. No I/O."""

from __future__ import annotations

import base64
import importlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._redaction import Redactor

__all__ = [
    "binary_body",
    "content_codec",
    "content_encoding",
    "content_type_of",
    "decoded_body",
    "sse_events",
    "stored_body",
]

StoredBody = dict[str, Any] | None


def content_type_of(headers: Iterable[tuple[str, str]]) -> str:
    for name, value in headers:
        if name.lower() == "content-type":
            return value.lower()
    return ""


def stored_body(content: bytes, content_type: str, redactor: Redactor) -> StoredBody:
    """A request body as stored: JSON parsed, form and other text as text, anything else as base64; redacted."""
    if not content:
        return None
    if "json" in content_type:
        try:
            return {"json": redactor.redact_value(json.loads(content))}
        except ValueError:
            pass
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(content).decode("ascii")}
    if "application/x-www-form-urlencoded" in content_type:
        return {"text": redactor.redact_form(text)}
    return {"text": redactor.redact_text(text)}


def content_encoding(headers: Iterable[tuple[str, str]]) -> str:
    """The response's content-encoding, or "" for none (identity)."""
    for name, value in headers:
        if name.lower() == "content-encoding" and value.strip().lower() not in ("", "identity"):
            return value.strip().lower()
    return ""


def binary_body(headers: Iterable[tuple[str, str]]) -> bool:
    """Bodies of a binary media type (images, audio, PDFs...), which redaction leaves alone."""
    for name, value in headers:
        if name.lower() == "content-type":
            media = value.split(";")[0].strip().lower()
            if media.startswith(("image/", "audio/", "video/", "font/")) or media in (
                "application/octet-stream",
                "application/pdf",
                "application/zip",
                "application/gzip",
            ):
                return True
    return False


Codec = tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]


def content_codec(encoding: str) -> Codec | None:
    """(decode, encode) for a content-encoding, when this Python can do both."""
    import gzip
    import zlib

    def inflate(data: bytes, wbits: int) -> bytes:
        return zlib.decompressobj(wbits).decompress(data)  # tolerates a body cut short

    encoding = encoding.strip().lower()
    if encoding == "gzip":
        return (lambda data: inflate(data, 47)), gzip.compress
    if encoding == "deflate":

        def decode_deflate(data: bytes) -> bytes:
            try:
                return inflate(data, 15)
            except zlib.error:
                return inflate(data, -15)

        return decode_deflate, zlib.compress
    try:
        if encoding == "br":
            brotli = importlib.import_module("brotli")
            return brotli.decompress, brotli.compress
        if encoding == "zstd":
            zstandard = importlib.import_module("zstandard")
            return (lambda data: zstandard.ZstdDecompressor().decompressobj().decompress(data)), (
                lambda data: zstandard.ZstdCompressor().compress(data)
            )
    except ImportError:
        return None
    return None


def decoded_body(chunks: Sequence[bytes], headers: Iterable[tuple[str, str]]) -> bytes:
    """A response body with its content-encoding undone, for display and comparison; as it came when it
    can't be decoded."""
    data = b"".join(chunks)
    codec = content_codec(content_encoding(headers))
    if codec is None:
        return data
    try:
        return codec[0](data)
    except Exception:  # a body that doesn't decode is shown as it came
        return data


def sse_events(text: str) -> list[str]:
    """SSE text as one string per event, its lines joined by `` | ``."""
    events = re.split(r"\r\n\r\n|\n\n|\r\r", text)
    return [" | ".join(line for line in re.split(r"\r\n|\n|\r", event) if line) for event in events if event.strip()]
