"""The format's line schema, declared once as msgspec Structs (a union tagged on ``"type"``) that decode and
validate a line in one pass, and its limits: what every other module of the format reads a line with. See
``_format`` for the format itself."""

# No ``from __future__ import annotations`` here: msgspec reads the Structs' annotations as they are; as text,
# it would compile a forward reference for each on a process's first cassette.
import base64
import binascii
import json
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import msgspec

__all__ = [
    "FORMAT_VERSION",
    "HELD_LINE_BYTES",
    "HTTP_VERSIONS",
    "INTENDED",
    "JSON_DECODER",
    "LINE_DECODER",
    "LINE_KINDS",
    "MAX_LINE_BYTES",
    "MAX_NESTING",
    "MAX_SECONDS",
    "OUTCOMES",
    "PLACEHOLDER",
    "RERECORD",
    "WEBSOCKET_SCHEMES",
    "decode_json",
    "json_problem",
    "nests_deeper",
    "CallEndLine",
    "CloseInfo",
    "ErrorInfo",
    "EventLine",
    "HeaderLine",
    "Line",
    "MessageLine",
    "RecordedMessage",
    "RequestLine",
    "ResponseLine",
    "StoredBody",
]

FORMAT_VERSION = 1
OUTCOMES = ("complete", "closed_early", "error")
HTTP_VERSIONS = ("HTTP/0.9", "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/3")
WEBSOCKET_SCHEMES = ("ws", "wss")
# What stands in a cassette where redaction removed a secret (the rules layer writes it; matching and the views
# read it).
PLACEHOLDER = "[secret removed]"
# The longest line a reader accepts (an event carries one chunk; a request its whole body). A longer line is
# refused before it is read whole, so a damaged or hostile file can't make a reader hold it all in memory.
MAX_LINE_BYTES = 256 * 1024 * 1024
# A line longer than this is measured, not held, until its end, then read again from the file (when the reader
# can): a file with one endless line costs this much memory, not MAX_LINE_BYTES.
HELD_LINE_BYTES = 8 * 1024 * 1024
# The deepest nesting of JSON a cassette may hand to code that walks it recursively: a request's JSON body
# (matching and redaction), refused on load; and every JSON the views and the stream redaction decode from
# recorded text (a response body, an SSE data line, a WebSocket message), which ``decode_json`` reads as no
# JSON (shown and compared as the text it is) when it nests deeper.
MAX_NESTING = 100
_MAX_INDEX = 2**53
# The latest a chunk or message may come after its request (``t``): an hour, longer than any call a test makes.
# A paced replay waits for the recorded times, so this bounds its wait for one call (times ``pace``); a later
# time is refused on load like any value out of range, and the recorder writes a later arrival as this.
MAX_SECONDS = 3_600.0
_TOKEN = r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$"  # RFC 9110 token, the grammar of a method
RERECORD = "re-record the cassette"

StoredBody = dict[str, Any] | None
# One message of a WebSocket session: who sent it ("client" or "server"), the message (text as ``str``,
# binary as ``bytes``) and when (seconds since the handshake). Plain tuples: the parse cache marshals them.
RecordedMessage = tuple[str, str | bytes, float]


# --- the schema ------------------------------------------------------------------------------------------

Index = Annotated[int, msgspec.Meta(ge=0, le=_MAX_INDEX)]
Seconds = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_SECONDS)]
Status = Annotated[int, msgspec.Meta(ge=100, le=599)]
Method = Annotated[str, msgspec.Meta(pattern=_TOKEN)]
HeaderPair = tuple[str, str]
HttpVersion = Literal["HTTP/0.9", "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/3"]
Outcome = Literal["complete", "closed_early", "error"]
EarlyStop = Literal["intended"]
INTENDED = "intended"


class _Line(msgspec.Struct, tag_field="type", gc=False):
    """What every line has: its type (the tag). Only the header may carry keys of its own (metadata)."""


class HeaderLine(_Line, tag="header"):
    format_version: Any = None


class Body(msgspec.Struct, forbid_unknown_fields=True):
    """A request body: exactly one of json, text, base64 (valid base64)."""

    # The JSON is kept as its bytes (``msgspec.Raw``: skipped over, not built), its nesting bounded on them
    # (``nests_deeper``); ``stored`` reads it.
    json: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        given = [name for name in ("json", "text", "base64") if getattr(self, name) is not msgspec.UNSET]
        if len(given) != 1:
            raise ValueError(f"a body is exactly one of json, text, base64; found {given or 'none'}")
        if isinstance(self.base64, str):
            _b64decode(self.base64)
        elif isinstance(self.json, msgspec.Raw) and nests_deeper(self.json):
            raise ValueError(f"the JSON body is nested deeper than {MAX_NESTING} levels")

    def stored(self) -> dict[str, Any]:
        """The body as the model holds it. Raises msgspec.ValidationError for JSON that is well-formed but not
        a value this reader holds (a number out of range): ``json_problem`` words it."""
        if isinstance(self.json, msgspec.Raw):
            return {"json": JSON_DECODER.decode(self.json)}
        if isinstance(self.text, str):
            return {"text": self.text}
        return {"base64": self.base64}


def json_problem(error: msgspec.ValidationError) -> str:
    """A ``Body.stored`` error as the line's decoder words one, at ``$.body.json``."""
    problem, _, at = str(error).partition(" - at `$")
    return f"{problem} - at `$.body.json{at.rstrip('`')}`"


def _latin1_pairs(headers: list[HeaderPair]) -> None:
    for name, value in headers:
        try:
            name.encode("latin-1")
            value.encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError(f"header {name!r}: names and values are latin-1 text, as HTTP carries them") from None


class RequestLine(_Line, tag="request", forbid_unknown_fields=True):
    call_index: Index
    method: Method
    url: str
    headers: list[HeaderPair]
    body: Body | None = None
    test: str | msgspec.UnsetType = msgspec.UNSET  # the owner, in a shared cassette

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https", *WEBSOCKET_SCHEMES) or not parts.netloc:
            raise ValueError(f"url {self.url[:80]!r} is not an absolute http, https, ws or wss URL")
        try:
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0..65535
        except ValueError:
            raise ValueError(f"url {self.url[:80]!r}: the port is not a number in 0..65535") from None
        _latin1_pairs(self.headers)


class ResponseLine(_Line, tag="response", forbid_unknown_fields=True):
    call_index: Index
    status: Status
    headers: list[HeaderPair]
    http_version: HttpVersion = "HTTP/1.1"

    def __post_init__(self) -> None:
        _latin1_pairs(self.headers)


class EventLine(_Line, tag="event", forbid_unknown_fields=True):
    call_index: Index
    event_index: Index
    t: Seconds = 0.0
    text: str | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    def chunk(self) -> bytes:
        """The raw chunk: exactly one of text and base64 (valid base64) must be there."""
        text = self.text
        if text.__class__ is str and self.base64 is msgspec.UNSET:
            return text.encode()
        if isinstance(self.base64, str) and text is msgspec.UNSET:
            return _b64decode(self.base64)
        raise ValueError("an event has exactly one of 'text' and 'base64'")


class ErrorInfo(msgspec.Struct, forbid_unknown_fields=True):
    class_: str = msgspec.field(name="class")
    message: str


class CloseInfo(msgspec.Struct, forbid_unknown_fields=True):
    """How a WebSocket session closed: the close code and reason, and who sent the first close frame (None:
    the connection ended with no closing handshake, code None)."""

    code: Annotated[int, msgspec.Meta(ge=1000, le=4999)] | None = None
    reason: str = ""
    by: Literal["client", "server"] | None = None


class CallEndLine(_Line, tag="call_end", forbid_unknown_fields=True):
    call_index: Index
    event_count: Index
    outcome: Outcome
    error: ErrorInfo | None = None
    early_stop: EarlyStop | msgspec.UnsetType = msgspec.UNSET
    close: CloseInfo | None = None

    def __post_init__(self) -> None:
        if (self.outcome == "error") != (self.error is not None):
            raise ValueError("'error' {class, message} is there exactly when the outcome is 'error'")
        if self.early_stop is not msgspec.UNSET and self.outcome != "closed_early":
            raise ValueError("'early_stop' is there only when the outcome is 'closed_early'")


Side = Literal["client", "server"]


class MessageLine(_Line, tag="message", forbid_unknown_fields=True):
    """One WebSocket message: who sent it, when (seconds since the handshake), text or binary (base64)."""

    call_index: Index
    message_index: Index
    t: Seconds = 0.0
    from_: Side = msgspec.field(name="from", default="server")
    text: str | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        if isinstance(self.text, str) == isinstance(self.base64, str):
            raise ValueError("a message has exactly one of 'text' and 'base64'")
        if isinstance(self.base64, str):
            _b64decode(self.base64)

    def data(self) -> str | bytes:
        """The message as the client sends or receives it: text as ``str``, binary as ``bytes``."""
        return self.text if isinstance(self.text, str) else _b64decode(str(self.base64))


Line = HeaderLine | RequestLine | ResponseLine | EventLine | CallEndLine | MessageLine
LINE_KINDS = "header, request, response, event, call_end, message"
LINE_DECODER = msgspec.json.Decoder(Line)
JSON_DECODER = msgspec.json.Decoder()


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not valid base64") from None


# What a JSON text's nesting is read from: its brackets (``{`` and ``}`` as ``[`` and ``]``) and quotes alone.
_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_STRUCTURE = bytes(set(range(256)) - set(b'[]{}"'))


def nests_deeper(data: bytes | msgspec.Raw, limit: int = MAX_NESTING) -> bool:
    """Whether the well-formed JSON ``data`` nests deeper than ``limit``, read from its bytes without building
    it: each pass of ``replace`` removes the innermost containers (``[]`` once strings and scalars are
    dropped), so a document empties in as many passes as it nests deep. Bytewise C loops, at most ``limit``
    of them over what is left; none for JSON with at most ``limit`` brackets, most of it."""
    data = bytes(data)
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    if b"\\" in data:  # escaped backslashes and quotes: what is left of a quote delimits a string
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Brackets and quotes alone; then strings without brackets (``""``) dropped, two adjacent strings read as
    # one (their closing and opening quotes), and what is left in strings dropped with them.
    brackets = data.translate(_BRACKETS, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in brackets:
        brackets = b"".join(brackets.split(b'"')[::2])
    for _ in range(limit):
        brackets = brackets.replace(b"[]", b"")
        if not brackets:
            return False
    return True


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests deeper than MAX_NESTING, found without recursion: one level at a time, the
    containers of each level gathered by one comprehension (at most MAX_NESTING of them)."""
    level = [value] if isinstance(value, dict | list) else []
    for _ in range(MAX_NESTING):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


def decode_json(data: str | bytes) -> Any:
    """``json.loads(data)`` for JSON recorded as text (a response body, an SSE data line, a WebSocket message):
    the one decoder of such text for every view and the stream redaction. A ValueError, as for text that is
    no JSON, when it nests deeper than MAX_NESTING (or deeper than ``json`` reads): the code that reads it
    walks it recursively. Counting the brackets first spares the walk of the value for the many documents
    that can't nest that deep."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_NESTING} levels") from None
    brackets = data.count("[") + data.count("{") if isinstance(data, str) else data.count(b"[") + data.count(b"{")
    if brackets > MAX_NESTING and _too_deep(value):
        raise ValueError(f"JSON nested deeper than {MAX_NESTING} levels")
    return value
