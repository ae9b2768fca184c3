"""Bodies as the cassette stores and shows them: request bodies parsed or encoded, content types,
content-encodings decoded and encoded again, and SSE text split into events. No I/O."""

from __future__ import annotations

import base64
import functools
import importlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote

import msgspec

from ._redaction import PLACEHOLDER

if TYPE_CHECKING:
    from ._redaction import Redactor

__all__ = [
    "MultipartPart",
    "binary_body",
    "body_headers",
    "content_codec",
    "content_encoding",
    "content_encodings",
    "content_type_of",
    "decode_stacked",
    "decoded_body",
    "encode_stacked",
    "is_media",
    "multipart_boundary",
    "multipart_pieces",
    "part_text",
    "redact_url",
    "stored_body",
    "stored_body_bytes",
    "unredactable",
]

StoredBody = dict[str, Any] | None


def content_type_of(headers: Iterable[tuple[str, str]]) -> str:
    for name, value in headers:
        if name.lower() == "content-type":
            return value.lower()
    return ""


def body_headers(headers: Iterable[tuple[str, str]]) -> tuple[str, str, bool]:
    """(``content_type_of(headers)``, ``content_encoding(headers)``, ``binary_body(headers)``) in one pass
    over them."""
    content_type = None
    encodings = []
    binary = False
    for name, value in headers:
        lower = name.lower()
        if lower == "content-type":
            if content_type is None:
                content_type = value.lower()
            binary = binary or _binary_type(value)
        elif lower == "content-encoding":
            encodings.append(("content-encoding", value))
    return content_type or "", content_encoding(encodings) if encodings else "", binary


def stored_body(content: bytes, content_type: str, redactor: Redactor, *, encoding: str = "") -> StoredBody:
    """A request body as stored, redacted: JSON parsed, form and other text as text, anything else as base64.

    A body with a content-``encoding`` (``"gzip"``, ``"gzip, br"``...) is searched decoded; with no secret
    it is stored as it came, otherwise redacted and encoded again deterministically, so that a request
    redacted the same way at replay stores the same bytes. Multipart bodies have their text parts redacted
    and their binary parts kept byte-identical but for catalogued credential shapes, searched as bytes, as
    are bodies of a binary media type.
    """
    if not content:
        return None
    if encoding and content_encodings([("content-encoding", encoding)]):
        return _stored_encoded(content, content_type, redactor, encoding)
    if _binary_media(content_type):
        return {"base64": base64.b64encode(redactor.redact_binary(content)).decode("ascii")}
    if "json" in content_type:
        try:
            parsed = _parsed_json(content)
        except ValueError:
            pass
        else:
            return {"json": parsed if unredactable(content, redactor) else _redact_json(parsed, redactor)}
    if content_type.startswith("multipart/"):
        content = redact_multipart(content, content_type, redactor)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        if not content_type.startswith("multipart/"):
            content = _redact_bytes(content, redactor)
        return {"base64": base64.b64encode(content).decode("ascii")}
    if "application/x-www-form-urlencoded" in content_type:
        return {"text": redactor.redact_form(text)}
    return {"text": redactor.redact_text(text)}


_json_decode = msgspec.json.decode


def _parsed_json(content: bytes) -> Any:
    """``json.loads(content)``, read by msgspec when it can (the same values, ten times faster) and by json
    otherwise: NaN and Infinity, a byte order mark or UTF-16, nesting deeper than msgspec reads. A ValueError
    for what neither reads, and for JSON whose strings hold a lone surrogate (``"\\ud800"``): no UTF-8
    cassette line can hold that value, so such a body is stored as the text it came as."""
    try:
        return _json_decode(content)
    except (msgspec.MsgspecError, RecursionError):
        parsed = json.loads(content)
    if b"\\u" in content or not content.isascii():
        try:
            json.dumps(parsed, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone surrogate") from None
    return parsed


def redact_url(url: str, redactor: Redactor) -> str:
    """A URL redacted whole (userinfo, secret query parameters) and path segment by path segment, so
    that a key standing alone as a segment (``/v1/keys/sk-...``) is found although a ``/`` precedes it.
    Removed userinfo is written percent-encoded (``https://%5Bsecret%20removed%5D@host/``): brackets in a
    URL's authority mean an IPv6 address, and the URL must stay one that parses."""
    if not redactor.could_redact(url):  # nor any segment of it
        return url
    redacted = redactor.redact_text(url)
    redacted = "/".join(redactor.redact_text(segment) for segment in redacted.split("/"))
    scheme, separator, rest = redacted.partition("://")
    if separator and rest.startswith(PLACEHOLDER + "@"):
        redacted = scheme + separator + _URL_PLACEHOLDER + rest[len(PLACEHOLDER) :]
    return redacted


_URL_PLACEHOLDER = quote(PLACEHOLDER, safe="")


def unredactable(content: bytes, redactor: Redactor) -> bool:
    """Whether JSON ``content`` surely comes out of redaction as it went in: UTF-8 text in which the
    redactor could change nothing (nor in its keys and strings once parsed)."""
    if not content.isascii():
        try:
            content.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return not redactor.could_redact(content)


def _stored_encoded(content: bytes, content_type: str, redactor: Redactor, encoding: str) -> StoredBody:
    encodings = content_encodings([("content-encoding", encoding)])
    as_came = {"base64": base64.b64encode(content).decode("ascii")}
    decoded = decode_stacked(content, encodings)
    if decoded is None:  # an encoding this Python can't undo: kept as it came (documented)
        return as_came
    redacted = stored_body(decoded, content_type, redactor)
    if redacted == stored_body(decoded, content_type, _NO_REDACTION):
        return as_came
    clean = stored_body_bytes(redacted)
    encoded = encode_stacked(clean, encodings)
    return {"base64": base64.b64encode(encoded).decode("ascii")} if encoded is not None else redacted


class _NoRedaction:
    """Stands in for a Redactor to store a body as it is, to tell whether redaction changed it."""

    def redact_text(self, text: str, *, response: bool = False) -> str:
        return text

    def redact_value(self, obj: Any, *, response: bool = False) -> Any:
        return obj

    def could_redact(self, text: str | bytes) -> bool:
        return False

    def redact_form(self, text: str) -> str:
        return text

    def is_secret_name(self, name: str, *, query: bool = False) -> bool:
        return False


_NO_REDACTION: Any = _NoRedaction()


def stored_body_bytes(stored: StoredBody) -> bytes:
    """The bytes a stored (redacted) body stands for: compact JSON, text or the base64 payload."""
    if stored is None:
        return b""
    if "json" in stored:
        return json.dumps(stored["json"], separators=(",", ":"), ensure_ascii=False).encode()
    if "text" in stored:
        return str(stored["text"]).encode("utf-8", "surrogateescape")
    return base64.b64decode(stored["base64"])


def _redact_json(obj: Any, redactor: Redactor) -> Any:
    """A parsed JSON body: secret-shaped keys replaced too (a key is text like any other), then values."""
    return redactor.redact_value(_redact_keys(obj, redactor))


def _redact_keys(obj: Any, redactor: Redactor) -> Any:
    if isinstance(obj, dict):
        return {
            (redactor.redact_text(key) if isinstance(key, str) else key): _redact_keys(value, redactor)
            for key, value in obj.items()
        }
    if isinstance(obj, list):
        return [_redact_keys(item, redactor) for item in obj]
    return obj


def _redact_bytes(content: bytes, redactor: Redactor) -> bytes:
    """Bytes that are not UTF-8 searched as text: invalid bytes are kept as they are around the secrets."""
    text = content.decode("utf-8", "surrogateescape")
    redacted = redactor.redact_text(text)
    return content if redacted == text else redacted.encode("utf-8", "surrogateescape")


_BOUNDARY = re.compile(r'boundary="?([^";]+)"?', re.IGNORECASE)
_PART_NAME = re.compile(rb'\bname="([^"]*)"', re.IGNORECASE)
_PART_FILENAME = re.compile(rb'\bfilename="([^"]*)"', re.IGNORECASE)


class MultipartPart(NamedTuple):
    """One part of a multipart body: its header block (with the blank line after it), the value, and what
    ends it (``\r\n`` before the next delimiter, or nothing); the name, filename and content type read from
    the header block."""

    head: bytes
    value: bytes
    trailer: bytes
    name: str | None
    filename: str | None
    content_type: str


def multipart_boundary(content_type: str) -> str | None:
    """The ``boundary`` parameter of a multipart content type, or None."""
    match = _BOUNDARY.search(content_type)
    return match.group(1).strip() if match and content_type.lower().startswith("multipart/") else None


def multipart_pieces(content: bytes, boundary: str) -> list[bytes | MultipartPart]:
    """A multipart body (RFC 2046) split at its delimiters: the preamble, then each part (a MultipartPart, or
    the bytes of a piece that isn't one: the closing ``--`` and epilogue). Joined with ``--boundary`` again
    (``MultipartPart`` as ``head + value + trailer``) they give the body back byte for byte."""
    delimiter = b"--" + boundary.encode("latin-1")
    pieces: list[bytes | MultipartPart] = []
    for number, piece in enumerate(content.split(delimiter)):
        head_end = piece.find(b"\r\n\r\n")
        if number == 0 or head_end < 0 or piece.startswith(b"--"):
            pieces.append(piece)
            continue
        head, body = piece[: head_end + 4], piece[head_end + 4 :]
        trailer = b"\r\n" if body.endswith(b"\r\n") else b""
        head_text = head.decode("latin-1")
        part_type = next(
            (
                line.split(":", 1)[1].strip().lower()
                for line in head_text.splitlines()
                if line.lower().startswith("content-type:")
            ),
            "",
        )
        name, filename = _PART_NAME.search(head), _PART_FILENAME.search(head)
        pieces.append(
            MultipartPart(
                head,
                body[: len(body) - len(trailer)],
                trailer,
                name.group(1).decode("utf-8", "replace") if name else None,
                filename.group(1).decode("utf-8", "replace") if filename else None,
                part_type,
            )
        )
    return pieces


def part_text(part: MultipartPart) -> str | None:
    """A part's value as text: None for a binary part (a binary media type, or bytes that aren't UTF-8)."""
    if _binary_media(part.content_type):
        return None
    try:
        return part.value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def redact_multipart(content: bytes, content_type: str, redactor: Redactor) -> bytes:
    """A multipart body with each text part redacted (a part named like a secret loses its value) and each
    binary part (a binary media type, or bytes that aren't UTF-8) kept byte-identical but for the catalogue's
    credential shapes (``Redactor.redact_binary``)."""
    boundary = multipart_boundary(content_type)
    if boundary is None:
        return _redact_bytes(content, redactor)
    out = []
    for piece in multipart_pieces(content, boundary):
        if not isinstance(piece, MultipartPart):
            out.append(piece)
            continue
        if part_text(piece) is None:  # a binary part: searched as bytes for the catalogue's shapes
            out.append(piece.head + redactor.redact_binary(piece.value) + piece.trailer)
            continue
        if piece.name is not None and redactor.is_secret_name(piece.name, query=True):
            redacted = PLACEHOLDER.encode()
        else:
            redacted = _redact_bytes(piece.value, redactor)
        out.append(piece.head + redacted + piece.trailer)
    return (b"--" + boundary.encode("latin-1")).join(out)


def _binary_media(content_type: str) -> bool:
    return _binary_type(content_type) if content_type else False


def content_encodings(headers: Iterable[tuple[str, str]]) -> list[str]:
    """Every content-encoding applied to a body, in the order they were applied: stacked in one header
    (``gzip, br``) or repeated over several ``Content-Encoding`` lines; ``identity`` left out."""
    found: list[str] = []
    for name, value in headers:
        if name.lower() == "content-encoding":
            found += [e.strip().lower() for e in value.split(",") if e.strip().lower() not in ("", "identity")]
    return found


def content_encoding(headers: Iterable[tuple[str, str]]) -> str:
    """The body's content-encodings as one header value (``"gzip, gzip"``), or "" for none (identity)."""
    return ", ".join(content_encodings(headers))


def decode_stacked(data: bytes, encodings: Sequence[str]) -> bytes | None:
    """``data`` with every encoding undone, last applied first; None when one can't be undone here."""
    for encoding in reversed(encodings):
        codec = content_codec(encoding)
        if codec is None:
            return None
        try:
            data = codec[0](data)
        except Exception:  # noqa: BLE001 - any codec's failure means "can't be decoded"
            return None
    return data


def encode_stacked(data: bytes, encodings: Sequence[str]) -> bytes | None:
    """``data`` encoded again with every encoding, in the order they were applied; None when one can't."""
    for encoding in encodings:
        codec = content_codec(encoding)
        if codec is None:
            return None
        data = codec[1](data)
    return data


def binary_body(headers: Iterable[tuple[str, str]]) -> bool:
    """Bodies of a binary media type (images, audio, PDFs...), which redaction leaves alone."""
    return any(name.lower() == "content-type" and _binary_type(value) for name, value in headers)


_MEDIA_TYPES = ("image/", "audio/", "video/", "font/")


def is_media(content_type: str) -> bool:
    """Whether a Content-Type names media (an image, audio, video, a font): never redacted."""
    return content_type.split(";")[0].strip().lower().startswith(_MEDIA_TYPES)


@functools.lru_cache(maxsize=256)  # a program sees few content types, each on many calls
def _binary_type(content_type: str) -> bool:
    """Whether a Content-Type header value names a binary media type."""
    media = content_type.split(";")[0].strip().lower()
    return media.startswith(_MEDIA_TYPES) or media in (
        "application/octet-stream",
        "application/pdf",
        "application/zip",
        "application/gzip",
    )


Codec = tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]


def content_codec(encoding: str) -> Codec | None:
    """(decode, encode) for one content-encoding, when this Python can do both. Encoding is deterministic
    (no timestamp), so the same bytes are encoded the same way at record and at replay."""
    import zlib

    encoding = encoding.strip().lower()
    if encoding in ("gzip", "x-gzip"):
        return _gunzip, _gzip
    if encoding == "deflate":

        def decode_deflate(data: bytes) -> bytes:
            try:
                return zlib.decompressobj(15).decompress(data)
            except zlib.error:
                return zlib.decompressobj(-15).decompress(data)

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


def _gunzip(data: bytes) -> bytes:
    """Every member of a gzip body (several can be concatenated); a body cut short gives what it holds."""
    import zlib

    out = []
    while data:
        decoder = zlib.decompressobj(47)
        out.append(decoder.decompress(data))
        data = decoder.unused_data
        if not decoder.eof:
            break
    return b"".join(out)


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


def decoded_body(chunks: Sequence[bytes], headers: Iterable[tuple[str, str]]) -> bytes:
    """A response body with its content-encodings undone, for display and comparison; as it came when it
    can't be decoded."""
    data = b"".join(chunks)
    encodings = content_encodings(headers)
    decoded = decode_stacked(data, encodings) if encodings else data
    return data if decoded is None else decoded
