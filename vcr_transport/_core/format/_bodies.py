"""Bodies as the cassette stores and shows them: request bodies parsed or encoded, content types,
content-encodings decoded and encoded again, and SSE text split into events. No I/O."""

from __future__ import annotations

import base64
import functools
import importlib
import json
import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, Protocol
from urllib.parse import quote

import msgspec

from .._memo import lazy_pattern
from ._format import MAX_LINE_BYTES, PLACEHOLDER

__all__ = [
    "MAX_DECODED_BYTES",
    "MAX_RATIO",
    "DecodeBudget",
    "DecodedBody",
    "DecodedTooLarge",
    "NO_REDACTION",
    "MultipartPart",
    "binary_body",
    "body_headers",
    "content_codec",
    "content_encoding",
    "content_encodings",
    "content_type_of",
    "decode_stacked",
    "decoded_body",
    "decoded_headers",
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


class Redactor(Protocol):
    """What storing a body asks of the redaction rules (``_core.rules._redaction.Redactor``), named here so that
    the format layer imports nothing above it."""

    def redact_text(self, text: str, *, response: bool = False) -> str: ...
    def redact_value(self, obj: Any, *, response: bool = False) -> Any: ...
    def redact_binary(self, data: bytes) -> bytes: ...
    def redact_form(self, text: str) -> str: ...
    def could_redact(self, text: str | bytes) -> bool: ...
    def is_secret_name(self, name: str, *, query: bool = False, header: bool = False) -> bool: ...


StoredBody = dict[str, Any] | None

# The most bytes a recorded body's content-encodings may decode to, all of them together: as much as one
# cassette line may hold (``MAX_LINE_BYTES``), the most a reader accepts of a body stored decoded. A recorded
# body of a few KB can declare gigabytes (gzip of zeros, concatenated or nested members, brotli, zstd): every
# decoding stops here, the views show such a body as stored, still encoded, and the recorder refuses to write
# one it can't search.
MAX_DECODED_BYTES = MAX_LINE_BYTES
# Nor past this many times the body's own size: deflate's highest ratio, so that no gzip or deflate body is
# ever refused for it, while a brotli or zstd bomb of 2 KB stops at 2 MB, and reading a cassette decodes at
# most this many times its size.
MAX_RATIO = 1032
_PIECE = 1024 * 1024  # decoders give their output this much at a time, so that a bomb stops past the bound
_FEED = 64 * 1024  # and take their input this much at a time


class DecodedTooLarge(ValueError):
    """A body whose content-encodings decode past ``limit`` bytes (``MAX_DECODED_BYTES``): it can't be
    shown, compared or searched decoded."""

    def __init__(self, encoding: str, limit: int) -> None:
        super().__init__(f"{encoding} body decodes past {limit:,} bytes")
        self.encoding, self.limit = encoding, limit


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
    redacted the same way at replay stores the same bytes; one that decodes past ``MAX_DECODED_BYTES`` is
    not stored (a note in its place says so). Multipart bodies have their text parts redacted
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
    try:
        decoded = decode_stacked(content, encodings)
    except DecodedTooLarge as error:  # can't be searched: not stored (the same at replay, so it still matches)
        return {"text": f"[{error}: not stored]"}
    if decoded is None:  # an encoding this Python can't undo: kept as it came (documented)
        return as_came
    redacted = stored_body(decoded, content_type, redactor)
    if redacted == stored_body(decoded, content_type, NO_REDACTION):
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

    def redact_binary(self, data: bytes) -> bytes:
        return data

    def is_secret_name(self, name: str, *, query: bool = False, header: bool = False) -> bool:
        return False


NO_REDACTION: Redactor = _NoRedaction()  # typed as the protocol: a method it lacked crashed a multipart body


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


_BOUNDARY = lazy_pattern(r'boundary="?([^";]+)"?', re.IGNORECASE)
_PART_NAME = lazy_pattern(rb'\bname="([^"]*)"', re.IGNORECASE)
_PART_FILENAME = lazy_pattern(rb'\bfilename="([^"]*)"', re.IGNORECASE)


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


def decoded_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers of a body kept decoded (what a transport that handed its response back read gives as its
    ``content``): without the content-encoding and the encoded length, which would have the body decoded again,
    by a replaying client and by the recorder's redaction (which keeps what it can't decode as it came)."""
    if not content_encodings(headers):
        return headers
    return [(name, value) for name, value in headers if name.lower() not in ("content-encoding", "content-length")]


def content_encoding(headers: Iterable[tuple[str, str]]) -> str:
    """The body's content-encodings as one header value (``"gzip, gzip"``), or "" for none (identity)."""
    return ", ".join(content_encodings(headers))


def decode_stacked(data: bytes, encodings: Sequence[str], limit: int | None = None) -> bytes | None:
    """``data`` with every encoding undone, last applied first; None when one can't be undone here. Raises
    DecodedTooLarge when they decode past ``limit`` bytes, every encoding's output counted (by default
    ``MAX_DECODED_BYTES``, and ``MAX_RATIO`` times ``data``'s size): each stops there, so that a bomb costs
    about that much memory and time, however many encodings it stacks."""
    if limit is None:
        limit = min(MAX_DECODED_BYTES, MAX_RATIO * max(len(data), 1))
    left = limit
    for encoding in reversed(encodings):
        codec = content_codec(encoding)
        if codec is None:
            return None
        try:
            data = codec[0](data, left)
        except DecodedTooLarge:
            raise DecodedTooLarge(", ".join(encodings), limit) from None
        except Exception:  # noqa: BLE001 - any codec's failure means "can't be decoded"
            return None
        left -= len(data)
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


# (decode at most ``limit`` bytes, raising DecodedTooLarge past them; encode)
Codec = tuple[Callable[[bytes, int], bytes], Callable[[bytes], bytes]]


def content_codec(encoding: str) -> Codec | None:
    """(decode, encode) for one content-encoding, when this Python can do both, decoding within a bound.
    Encoding is deterministic (no timestamp), so the same bytes are encoded the same way at record and at
    replay. ``br`` needs brotli 1.2 or later (its output limit), ``zstd`` the zstandard package."""
    encoding = encoding.strip().lower()
    if encoding in ("gzip", "x-gzip"):
        return _gunzip, _gzip
    if encoding == "deflate":
        return _undeflate, zlib.compress
    try:
        if encoding == "br":
            brotli = importlib.import_module("brotli")
            if not hasattr(brotli.Decompressor, "can_accept_more_data"):  # before 1.2: no output limit
                return None
            return functools.partial(_unbrotli, brotli), brotli.compress
        if encoding == "zstd":
            zstandard = importlib.import_module("zstandard")
            return functools.partial(_unzstd, zstandard), lambda data: zstandard.ZstdCompressor().compress(data)
    except ImportError:
        return None
    return None


class _Pieces:
    """A decoder's output, a piece at a time, within ``limit`` bytes (DecodedTooLarge past them)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.size, self.pieces = limit, 0, list[bytes]()

    @property
    def room(self) -> int:
        """The most output to ask of the decoder next: a piece, or one byte past the limit."""
        return min(_PIECE, self.limit - self.size + 1)

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        if self.size > self.limit:
            raise DecodedTooLarge("", self.limit)
        self.pieces.append(piece)

    def joined(self) -> bytes:
        return b"".join(self.pieces)


def _inflate(data: bytes, limit: int, wbits: int, *, members: bool) -> bytes:
    """A zlib stream (``wbits`` as ``zlib.decompressobj`` takes it) inflated a piece at a time; with
    ``members``, the members that follow the first too (gzip's, concatenated); a stream cut short gives what
    it holds. The input goes in ``_FEED`` bytes at a time: what an output limit leaves of it
    (``unconsumed_tail``) is a copy, which must stay small."""
    out = _Pieces(limit)
    whole = memoryview(data)
    decoder = zlib.decompressobj(wbits)
    given: bytes | memoryview = b""
    position = 0
    while True:
        if not given:
            given = whole[position : position + _FEED]
            position += len(given)
        room = out.room
        piece = decoder.decompress(given, room)
        out.add(piece)
        if decoder.eof:
            given = decoder.unused_data
            if not (members and (given or position < len(whole))):
                break
            decoder = zlib.decompressobj(wbits)
        else:
            given = decoder.unconsumed_tail  # left only when the piece was cut at ``room``
            if not given and position >= len(whole) and len(piece) < room:
                break
    return out.joined()


def _gunzip(data: bytes, limit: int) -> bytes:
    """Every member of a gzip body (several can be concatenated); a body cut short gives what it holds."""
    return _inflate(data, limit, 47, members=True)


def _undeflate(data: bytes, limit: int) -> bytes:
    """A deflate body: zlib-wrapped as RFC 9110 says, or raw deflate as some servers send it."""
    try:
        return _inflate(data, limit, 15, members=False)
    except zlib.error:
        return _inflate(data, limit, -15, members=False)


def _unbrotli(brotli: Any, data: bytes, limit: int) -> bytes:
    """A brotli body, given a piece at a time (``output_buffer_limit``, which it may pass by a block); a body
    cut short is an error."""
    decoder = brotli.Decompressor()
    out = _Pieces(limit)
    whole = memoryview(data)
    for position in range(0, len(whole), _FEED):
        out.add(decoder.process(whole[position : position + _FEED], output_buffer_limit=out.room))
        while not decoder.can_accept_more_data():
            out.add(decoder.process(b"", output_buffer_limit=out.room))
    while not decoder.is_finished() and (piece := decoder.process(b"", output_buffer_limit=out.room)):
        out.add(piece)
    if not decoder.is_finished():
        raise brotli.error("the brotli body is cut short")
    return out.joined()


def _unzstd(zstandard: Any, data: bytes, limit: int) -> bytes:
    """A zstd body's first frame, read a piece at a time."""
    out = _Pieces(limit)
    with zstandard.ZstdDecompressor().stream_reader(data) as reader:
        while piece := reader.read(_PIECE):
            out.add(piece)
    return out.joined()


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


class DecodedBody(NamedTuple):
    """A response body as the views show it (``decoded_body``)."""

    data: bytes
    note: str  # why ``data`` is the body as stored, still encoded ("gzip body decodes past N bytes: ..."); ""


class DecodeBudget:
    """What a view decodes of one file's bodies in all (``MAX_DECODED_BYTES``): each body decoded spends its
    decoded size, and one that would pass what is left is shown as stored. Each body's own bound holds too;
    without this, a small file of many bodies that each decode within it (30 gzip bodies of 100 MB: 4 MB) had a
    view hold them all (9 GB)."""

    def __init__(self, total: int | None = None) -> None:
        self.left = MAX_DECODED_BYTES if total is None else total

    def decode(self, data: bytes, encodings: Sequence[str]) -> bytes | None:
        """``decode_stacked`` within the body's own bound and what is left, which it spends."""
        decoded = decode_stacked(data, encodings, min(self.left, MAX_DECODED_BYTES, MAX_RATIO * max(len(data), 1)))
        self.left -= len(decoded) if decoded is not None else 0
        return decoded


def decoded_body(
    chunks: Sequence[bytes], headers: Iterable[tuple[str, str]], budget: DecodeBudget | None = None
) -> DecodedBody:
    """A response body with its content-encodings undone, for display and comparison; as it came when it
    can't be decoded, and, with a note, when it decodes past ``MAX_DECODED_BYTES`` (or what ``budget`` has left)."""
    data = b"".join(chunks)
    encodings = content_encodings(headers)
    if not encodings:
        return DecodedBody(data, "")
    try:
        decoded = (budget or DecodeBudget()).decode(data, encodings)
    except DecodedTooLarge as error:
        return DecodedBody(data, f"{error}: shown encoded, as stored")
    return DecodedBody(data if decoded is None else decoded, "")
