"""Matching: turning a request into comparable fields and naming the first field that differs. No I/O."""

from __future__ import annotations

import base64
import copy
import fnmatch
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import msgspec

from ..._display import MISSING
from .._memo import Memo, lazy_pattern
from ..format._bodies import MultipartPart, multipart_boundary, multipart_pieces, part_text
from ..format._format import StoredBody
from ..rules._patterns import UserPattern
from ..rules._redaction import PLACEHOLDER

__all__ = [
    "MATCH_ON_NAMES",
    "NON_DETERMINISTIC_FIELD_NAMES",
    "VOLATILE_HEADERS",
    "VOLATILE_RESPONSE_HEADERS",
    "Difference",
    "FieldPath",
    "HANDSHAKE_DEFAULTS",
    "SERVER_ASSIGNED",
    "RequestMatcher",
    "comparable_parts",
    "Normalizer",
    "echoed_headers",
    "find_first_difference",
    "is_volatile_response_header",
    "iter_differences",
    "parse_field_path",
]

NON_DETERMINISTIC_FIELD_NAMES: frozenset[str] = frozenset({"timestamp"})

# Headers that differ between machines, SDK versions, sync and async, retries, or every request. The
# per-request ones of the clients we support: AWS SigV4 (AnthropicBedrock: x-amz-date changes every second;
# the body hash x-amz-content-sha256 adds nothing the body comparison doesn't, and would name itself instead
# of the body field; the session token is redacted and depends on the kind of credentials), boto's
# invocation ids, Azure's client request id, and distributed-tracing context.
VOLATILE_HEADERS: frozenset[str] = frozenset(
    {
        "user-agent",
        "x-stainless-*",
        "x-goog-api-client",
        "traceparent",
        "tracestate",
        "sentry-trace",
        "idempotency-key",
        "content-length",
        "accept-encoding",
        "connection",
        "host",
        "x-amz-date",
        "x-amz-content-sha256",
        "x-amz-security-token",
        "x-amz-user-agent",
        "amz-sdk-invocation-id",
        "amz-sdk-request",
        "x-ms-client-request-id",
    }
)

# What a WebSocket handshake (a request with ``upgrade: websocket``) carries from its SDK's HTTP defaults, not
# from the app: it has no body and takes no content, yet openai sends ``accept`` and ``content-type`` on it, and
# they differ between its versions (3.3 and 3.60). Left out of a handshake's comparison, as the SDKs' own
# headers are of every request; the URL (the model), the subprotocols and the app's own headers are compared.
HANDSHAKE_DEFAULTS: frozenset[str] = frozenset({"accept", "content-type"})

# Response headers whose value changes from one request to the next while the answer stays the same
# (lower-case; globs allowed): when, how long, how many are left, and the ids of this one request.
VOLATILE_RESPONSE_HEADERS: frozenset[str] = frozenset(
    {
        "date",
        "age",
        "expires",
        "content-length",  # the body bytes are compared instead
        "set-cookie",  # load-balancer cookies (__cf_bm) carry their own expiry
        "server-timing",
        "traceresponse",
        "x-request-id",
        "request-id",  # anthropic
        "x-amzn-requestid",
        "x-amzn-trace-id",
        "x-amz-request-id",
        "x-amz-cf-id",
        "x-ms-request-id",
        "x-ms-client-request-id",
        "apim-request-id",
        "inference-id",
        "x-cloud-trace-context",
        "cf-ray",
        "x-envoy-upstream-service-time",
        "openai-processing-ms",
        "x-ratelimit-*",
        "anthropic-ratelimit-*",
        "x-served-by",
        "x-timer",
        "x-cache-hits",
    }
)


# What a request header the server assigned (``echoed_headers``) is compared as: that it is sent, not its value.
SERVER_ASSIGNED = "<assigned by the server>"

# Headers HTTP defines for requests and responses alike: a request that carries the same value as an earlier
# response (a POST's content-type after a GET's answer) is not echoing it.
_BOTH_WAYS = frozenset(
    {
        "content-type",
        "content-length",
        "content-encoding",
        "content-language",
        "content-location",
        "cache-control",
        "connection",
        "keep-alive",
        "pragma",
        "date",
        "via",
        "upgrade",
        "trailer",
        "transfer-encoding",
        "accept",
        "accept-encoding",
        "accept-language",
    }
)


def echoed_headers(exchanges: Iterable[tuple[Iterable[tuple[str, str]], Iterable[tuple[str, str]]]]) -> frozenset[str]:
    """The names (lower-case) of the headers a server assigns and its client sends back: a response header
    whose value a later request carries under the same name, when no request carried that value before.
    MCP's ``mcp-session-id`` is one (a new id each session, sent with every request after ``initialize``).
    ``exchanges``: each call's (request headers, response headers), in call order. Cookies, volatile
    response headers and the headers HTTP defines both ways (``_BOTH_WAYS``) are not counted."""
    sent: set[tuple[str, str]] = set()
    assigned: set[tuple[str, str]] = set()
    names: set[str] = set()
    for request_headers, response_headers in exchanges:
        for name, value in request_headers:
            pair = (name.lower(), value)
            if pair in assigned:
                names.add(pair[0])
            sent.add(pair)
        for name, value in response_headers:
            lower = name.lower()
            if lower in _BOTH_WAYS or lower == "set-cookie" or is_volatile_response_header(lower):
                continue
            if (lower, value) not in sent:
                assigned.add((lower, value))
    return frozenset(names)


def _glob_pattern(globs: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern matching a name any of ``globs`` matches (fnmatch's rules, case-sensitive), or None."""
    globs = sorted(globs)
    return lazy_pattern("|".join(fnmatch.translate(glob) for glob in globs)) if globs else None


_VOLATILE_RESPONSE_EXACT = frozenset(name for name in VOLATILE_RESPONSE_HEADERS if "*" not in name)
_VOLATILE_RESPONSE_GLOBS = _glob_pattern(name for name in VOLATILE_RESPONSE_HEADERS if "*" in name)


def is_volatile_response_header(lower_name: str) -> bool:
    """Whether a response header (lower-case name) is one of ``VOLATILE_RESPONSE_HEADERS``."""
    return lower_name in _VOLATILE_RESPONSE_EXACT or (
        _VOLATILE_RESPONSE_GLOBS is not None and _VOLATILE_RESPONSE_GLOBS.match(lower_name) is not None
    )


Difference = tuple[str, Any, Any]

# vcrpy's matcher names that ``match_on`` takes (``uri`` is scheme, host, port, path and query together).
MATCH_ON_NAMES = ("method", "scheme", "host", "port", "path", "query", "headers", "body", "uri")
_URL_PARTS = ("scheme", "host", "port", "path", "query")
_SECTIONS = ("method", "url", "headers", "body")  # what difference compares, in its order
_DEFAULT_PORTS = {"https": 443, "http": 80}


def iter_differences(recorded: Any, incoming: Any, path: str = "") -> Iterator[Difference]:
    """Every difference between two dumped structures, as (path, recorded, incoming), in walk order."""
    if type(recorded) is not type(incoming):
        yield path, recorded, incoming
    elif isinstance(recorded, dict):
        for key in sorted(recorded.keys() | incoming.keys(), key=str):
            child = f"{path}.{key}" if path else str(key)
            yield from iter_differences(recorded.get(key, MISSING), incoming.get(key, MISSING), child)
    elif isinstance(recorded, list):
        for position in range(max(len(recorded), len(incoming))):
            left = recorded[position] if position < len(recorded) else MISSING
            right = incoming[position] if position < len(incoming) else MISSING
            yield from iter_differences(left, right, f"{path}[{position}]")
    elif recorded != incoming:
        yield path, recorded, incoming


def find_first_difference(recorded: Any, incoming: Any) -> Difference | None:
    """The first difference between two dumped structures as (path, recorded, incoming), or None.

    Dicts are walked by sorted key and lists by index, so the same pair always gives the same path. A key
    on one side only gives ``<missing>`` on the other; a change of type is a difference.
    """
    return next(iter_differences(recorded, incoming), None)


# One step of a field path: a key (``*`` and ``?`` glob) or a list position (an int, or ``*`` for any).
FieldPath = tuple[str | int, ...]
_STEP = lazy_pattern(r"\.([^.\[\]]+)|\[(\d+|\*)\]")
_IGNORED = "<ignored>"


def parse_field_path(text: str) -> FieldPath | None:
    """``None`` for a bare key name (it means that key at any depth); else the steps of a path that starts at
    ``body``, like ``body.contents[*].parts[*].functionCall.id``. A malformed path is a ValueError."""
    if "." not in text and "[" not in text:
        return None
    if not text.startswith(("body.", "body[")):
        raise ValueError(
            f"{text!r} is a path but does not start at body: write body.<key>[<index>]... "
            "(e.g. body.contents[*].parts[*].functionCall.id), or a bare key name for that key at any depth"
        )
    rest = text[len("body") :]
    steps: list[str | int] = []
    position = 0
    while position < len(rest):
        match = _STEP.match(rest, position)
        if match is None:
            raise ValueError(
                f"{text!r}: can't read the path from {rest[position:]!r}; steps are .key (globs allowed) and [n] or [*]"
            )
        key, index = match.groups()
        steps.append(key if key is not None else ("*" if index == "*" else int(index)))
        position = match.end()
    return tuple(steps)


def _step_matches(step: str | int, key: str | int) -> bool:
    if isinstance(key, int):
        return step == "*" or step == key
    return isinstance(step, str) and (step == key or fnmatch.fnmatchcase(key, step))


def _drop_fields(value: Any, names: frozenset[str], paths: tuple[FieldPath, ...] = ()) -> Any:
    """``value`` without the keys in ``names`` (at any depth) and the fields ``paths`` point to: a dict loses
    the key, a list keeps the position with ``<ignored>`` in it, so later positions keep their numbers."""
    if isinstance(value, dict):
        kept: dict[str, Any] = {}
        for key, child in value.items():
            below = _below(paths, key) if paths else ()
            if key not in names and () not in below:
                kept[key] = _drop_fields(child, names, below)
        return kept
    if isinstance(value, list):
        items: list[Any] = []
        for position, child in enumerate(value):
            below = _below(paths, position) if paths else ()
            items.append(_IGNORED if () in below else _drop_fields(child, names, below))
        return items
    return value


def _key_markers(names: Iterable[str]) -> tuple[bytes, ...]:
    """How each key of ``names`` appears in compact JSON: quoted, then a colon."""
    return tuple(msgspec.json.encode(name) + b":" for name in names)


def _may_hold_keys(value: Any, markers: tuple[bytes, ...], encodings: _Encodings) -> bool:
    """Whether ``value`` may hold a key ``markers`` stand for (``_key_markers``): its JSON holds the marker
    (never inside a string, where the quotes are escaped). True when it can't be encoded. The encoding is
    kept in ``encodings``: the body is compared next."""
    try:
        encoded = encodings.keep(value)
    except (TypeError, ValueError, RecursionError, msgspec.EncodeError):
        return True
    return any(marker in encoded for marker in markers)


class _Encodings:
    """The compact JSON of the last few large bodies matching encoded (``_may_hold_keys``), so that comparing
    a body it let through as it was (``_same``) doesn't encode it again: a long conversation's request is
    encoded once a side, not twice. Each body is held with its encoding and found by identity. Threads may
    share it: a lost race costs only an encoding."""

    _SIZE = 4
    _LARGE = 4096  # bytes of JSON: a smaller body costs less encoded again than kept

    def __init__(self) -> None:
        self._held: list[tuple[Any, bytes] | None] = [None] * self._SIZE
        self._next = 0

    def keep(self, value: Any) -> bytes:
        encoded = msgspec.json.encode(value)
        if len(encoded) >= self._LARGE:
            slot = self._next
            self._next = (slot + 1) % self._SIZE
            self._held[slot] = (value, encoded)
        return encoded

    def _encoding(self, value: Any) -> bytes | None:
        for entry in self._held:
            if entry is not None and entry[0] is value:
                return entry[1]
        return None

    def same(self, recorded: Mapping[str, Any], incoming: Mapping[str, Any]) -> bool:
        """Whether two equal requests encode alike (raises as the encoder does): the whole of each, or field
        by field when both bodies are held (the same fields in the same order: equal encodings of the
        whole)."""
        encode = msgspec.json.encode
        one, other = self._encoding(recorded.get("body")), self._encoding(incoming.get("body"))
        if one is None or other is None or list(recorded) != list(incoming):
            return bool(encode(recorded) == encode(incoming))
        return one == other and all(
            encode(recorded[name]) == encode(incoming[name]) for name in recorded if name != "body"
        )


def _below(paths: tuple[FieldPath, ...], key: str | int) -> tuple[FieldPath, ...]:
    """What is left of the paths whose first step matches ``key`` (an empty path: ``key`` itself)."""
    return tuple(path[1:] for path in paths if _step_matches(path[0], key))


_LENGTH_SPELLINGS = frozenset({"content-length", "Content-Length", "CONTENT-LENGTH"})  # as clients send it
_BOUNDARY_PARAMETER = lazy_pattern(r';\s*boundary="?[^";]*"?', re.IGNORECASE)
# The name tempfile gives a file by default: "tmp" and eight random characters (then a suffix).
_TEMPFILE_NAME = lazy_pattern(r"(?<![A-Za-z0-9])tmp[a-z0-9_]{8}(?=\.|$)")


def comparable_parts(data: bytes, boundary: str) -> dict[str, Any]:
    """A multipart body as matching compares it, part by part and without its boundary: each part under
    ``parts[<name>]`` (a list when several parts share the name) with its filename, content type and
    content, text by value and binary by length and SHA-256. A filename that ``tempfile`` made up
    (``tmpk3j2_8xz.wav``) is compared without its random characters. Bytes that are no multipart body under
    ``boundary`` are compared whole."""
    parts = [piece for piece in multipart_pieces(data, boundary) if isinstance(piece, MultipartPart)]
    if not parts:
        return {"base64": base64.b64encode(data).decode("ascii")}
    fields: list[tuple[str, Any]] = []
    for part in parts:
        text = part_text(part)
        if text is None:
            content: str = f"<{len(part.value)} bytes, sha256 {hashlib.sha256(part.value).hexdigest()}>"
        else:
            content = text
        filename = part.filename
        if filename is not None:
            filename = _TEMPFILE_NAME.sub("tmp********", filename)
        described = {"filename": filename, "content_type": part.content_type, "content": content}
        fields.append((f"parts[{part.name if part.name is not None else ''}]", described))
    return _multi_dict(fields)


def _multi_dict(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Each name's value, or its values in order when it repeats (grouped in one pass: a list rebuilt at each
    repeat was quadratic in a name repeated by a cassette)."""
    grouped: dict[str, list[Any]] = {}
    for name, value in pairs:
        grouped.setdefault(name, []).append(value)
    return {name: values[0] if len(values) == 1 else values for name, values in grouped.items()}


def _own_cookies(header: str, server_cookies: frozenset[str]) -> str:
    """A ``cookie`` header without the cookies named in ``server_cookies`` ("" when none is left)."""
    pairs = [pair.strip() for pair in header.replace(",", ";").split(";")]
    return "; ".join(pair for pair in pairs if pair and pair.partition("=")[0].strip() not in server_cookies)


def _chosen_parts(match_on: Iterable[str] | None) -> frozenset[str] | None:
    """The parts ``match_on`` compares (``uri`` stands for every URL part), or None for everything."""
    if match_on is None:
        return None
    chosen = frozenset(match_on)
    return chosen | frozenset(_URL_PARTS) if "uri" in chosen else chosen


def _is_handshake(lowered: list[tuple[str, str]]) -> bool:
    """Whether headers (lower-case names) are a WebSocket handshake's."""
    return any(name == "upgrade" and value.strip().lower() == "websocket" for name, value in lowered)


class RequestMatcher:
    """Turns a recorded or incoming request into the fields that matching compares.

    ``ignore_headers`` adds header names (globs allowed) to the volatile set, ``compare_headers`` removes
    them from it; ``ignore_fields`` adds body fields to skip: a bare key name wherever it appears, or a path
    from ``body`` with globs (``body.contents[*].parts[*].functionCall.id``) for just the fields it names.
    ``match_on`` (vcrpy's names, see MATCH_ON_NAMES) compares only the parts it names, and then compares
    only the headers the recording kept (a header filtered at record time is not compared); None compares
    everything. A WebSocket handshake's ``HANDSHAKE_DEFAULTS`` are not compared (unless ``compare_headers``
    names them).

    ``server_cookies``: the names of the cookies the recorded responses set (``set-cookie``). A request's
    ``cookie`` header is compared without them: whether a client sends back a server's cookie depends on
    timing (requests started together leave before any answer set it) and on which test ran first on a
    shared client. The cookies the application sets itself are compared.

    ``server_headers``: the names of the headers the recorded server assigned and its client sent back
    (``echoed_headers``: MCP's ``mcp-session-id``). They are compared as sent or not, each value made
    ``SERVER_ASSIGNED``: the value is the server's choice (a new one each session), and a replayed session
    gets the recorded one anyway, from the replayed response.
    """

    def __init__(
        self,
        *,
        ignore_headers: Iterable[str] = (),
        compare_headers: Iterable[str] = (),
        ignore_fields: Iterable[str] = (),
        match_on: Iterable[str] | None = None,
        server_cookies: Iterable[str] = (),
        server_headers: Iterable[str] = (),
    ) -> None:
        self.server_cookies = frozenset(server_cookies)
        self.server_headers = frozenset(name.lower() for name in server_headers)
        self._match_on = _chosen_parts(match_on)
        self._removed = frozenset(name.lower() for name in compare_headers)
        volatile = (VOLATILE_HEADERS | {name.lower() for name in ignore_headers}) - self._removed
        self._exact = frozenset(name for name in volatile if "*" not in name and "?" not in name)
        self._globs = _glob_pattern(volatile - self._exact)
        parsed = [(name, parse_field_path(name)) for name in ignore_fields]
        self._fields = NON_DETERMINISTIC_FIELD_NAMES | frozenset(name for name, path in parsed if path is None)
        self._paths = tuple(path for _, path in parsed if path is not None)
        self._field_markers = _key_markers(self._fields)
        self._encodings = _Encodings()
        self._length_volatile = self.is_volatile("content-length")
        self._handshake_defaults = HANDSHAKE_DEFAULTS - self._removed
        # What a client's requests share, and a replayed request shares with its recorded call, worked out
        # once (don't change the values): the headers' comparable form, and each URL's "url" field.
        self._headers: Memo[tuple[tuple[str, str], ...], tuple[dict[str, Any], str]] = Memo()
        self._urls: Memo[str, dict[str, Any]] = Memo()

    def with_server_values(self, cookies: Iterable[str] = (), headers: Iterable[str] = ()) -> RequestMatcher:
        """This matcher, comparing requests' ``cookie`` headers without the cookies ``cookies`` too, and the
        headers ``headers`` as server-assigned (see the class)."""
        cookies = frozenset(cookies) - self.server_cookies
        headers = frozenset(name.lower() for name in headers) - self.server_headers
        if not cookies and not headers:
            return self
        twin = copy.copy(self)
        twin.server_cookies = self.server_cookies | cookies
        twin.server_headers = self.server_headers | headers
        twin._headers = Memo()  # the headers compare otherwise
        return twin

    @property
    def keyed_sections(self) -> tuple[str, ...]:
        """What a request's key hashes (``_index.py``): the sections compared, but headers under ``match_on``
        (compared by the names each recording kept)."""
        return _SECTIONS if self._match_on is None else ("method", "url", "body")

    def is_volatile(self, lower_name: str) -> bool:
        """Whether a request header (lower-case name) is left out of matching."""
        if lower_name in self._exact:
            return True
        return self._globs is not None and lower_name not in self._removed and self._globs.match(lower_name) is not None

    def comparable(self, method: str, url: str, headers: Iterable[tuple[str, str]], body: StoredBody) -> dict[str, Any]:
        """The request as the dict that paths like ``body.messages[0].content`` point into."""
        return self.with_body(*self.comparable_request(method, url, headers), body)

    def comparable_request(
        self, method: str, url: str, headers: Iterable[tuple[str, str]]
    ) -> tuple[dict[str, Any], str]:
        """What ``comparable`` gives without the body (``body`` None), and the content type it reads the body
        with: for requests that share method, URL and headers, ``with_body`` then adds each one's body."""
        return self.request_fields(method, url, *self.comparable_headers(headers))

    def comparable_headers(self, headers: Iterable[tuple[str, str]]) -> tuple[dict[str, Any], str]:
        """The headers part of ``comparable_request`` (the ones compared, lower-case names, repeated ones
        joined with ", "), and the content type: what requests to different URLs with the same headers share
        (worked out once for them: a client's requests repeat their headers, content-length aside). The
        dict may be shared by the fields of many requests: don't change it."""
        listed = list(headers)
        # Another spelling of content-length stays in the key: only a miss more, never a wrong entry.
        key = tuple([pair for pair in listed if pair[0] not in _LENGTH_SPELLINGS] if self._length_volatile else listed)
        return self._headers.get(key, lambda: self._comparable_headers(listed))

    def _comparable_headers(self, headers: list[tuple[str, str]]) -> tuple[dict[str, Any], str]:
        kept = self._compared([(name.lower(), value) for name, value in headers])
        merged = {name: ", ".join(v) if isinstance(v, list) else v for name, v in _multi_dict(kept).items()}
        content_type = merged.get("content-type", "")
        if "boundary" in content_type and multipart_boundary(content_type) is not None:
            # A random value per request (httpx2 draws it): the parts are compared instead.
            merged["content-type"] = _BOUNDARY_PARAMETER.sub("", content_type)
        for name in self.server_headers.intersection(merged):
            merged[name] = SERVER_ASSIGNED
        if self.server_cookies and "cookie" in merged:
            own = _own_cookies(merged["cookie"], self.server_cookies)
            if own:
                merged["cookie"] = own
            else:
                del merged["cookie"]
        return merged, content_type

    def _compared(self, lowered: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The headers (lower-case names) that are compared: not the volatile ones, nor a handshake's defaults."""
        left_out = self._handshake_defaults if _is_handshake(lowered) else frozenset()
        return [(name, value) for name, value in lowered if not self.is_volatile(name) and name not in left_out]

    def request_fields(
        self, method: str, url: str, headers: dict[str, Any], content_type: str
    ) -> tuple[dict[str, Any], str]:
        """``comparable_request`` from the URL and the result of ``comparable_headers``. The dicts in the
        result may be shared with other requests' fields: don't change them."""
        url_fields = self._urls.get(url, lambda: self._url_fields(url))
        chosen = self._match_on
        if chosen is None:
            return {"method": method.upper(), "url": url_fields, "headers": headers, "body": None}, content_type
        # The fields match_on leaves out are None on both sides, so they never differ.
        fields = {
            "method": method.upper() if "method" in chosen else None,
            "url": url_fields,
            "headers": headers if "headers" in chosen else {},
            "body": None,
        }
        return fields, content_type

    def _url_fields(self, url: str) -> dict[str, Any]:
        """The "url" field: the host with its port (all of them, or those ``match_on`` names, with the port
        on its own, a default one spelled out)."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        query = _multi_dict(parse_qsl(parts.query, keep_blank_values=True))
        if self._match_on is None:
            host = f"{host}:{parts.port}" if parts.port is not None else host
            return {"scheme": parts.scheme, "host": host, "path": parts.path or "/", "query": query}
        port = parts.port if parts.port is not None else _DEFAULT_PORTS.get(parts.scheme)
        fields = {"scheme": parts.scheme, "host": host, "port": port, "path": parts.path or "/", "query": query}
        return {key: value if key in self._match_on else None for key, value in fields.items()}

    def with_body(self, fields: dict[str, Any], content_type: str, body: StoredBody) -> dict[str, Any]:
        """``fields`` and ``content_type`` from ``comparable_request`` with ``body`` in place (``fields`` is
        not changed: it may be shared)."""
        if self._match_on is not None and "body" not in self._match_on:
            return dict(fields)
        return {**fields, "body": self._comparable_body(body, content_type)}

    def _comparable_body(self, body: StoredBody, content_type: str) -> Any:
        if body is None:
            return ""
        if "json" in body:
            return self._without_skipped(body["json"])
        text = body.get("text")
        if text is not None and "application/x-www-form-urlencoded" in content_type:
            return _drop_fields(_multi_dict(parse_qsl(text, keep_blank_values=True)), self._fields, self._paths)
        boundary = multipart_boundary(content_type) if content_type.startswith("multipart/") else None
        if boundary is not None:
            data = text.encode("utf-8", "surrogateescape") if text is not None else base64.b64decode(body["base64"])
            return comparable_parts(data, boundary)
        return text if text is not None else {"base64": body["base64"]}

    def _without_skipped(self, value: Any) -> Any:
        """A JSON body without the fields matching skips; the body itself (not a copy: don't change it) when
        it has none of them, found in its encoding rather than by rebuilding it."""
        if self._paths or _may_hold_keys(value, self._field_markers, self._encodings):
            return _drop_fields(value, self._fields, self._paths)
        return value

    def difference(self, recorded: Mapping[str, Any], incoming: Mapping[str, Any]) -> Difference | None:
        """The first differing field, looking at method, URL, headers and body in that order."""
        if _same(recorded, incoming, self._encodings):
            return None
        return next(self._differences(recorded, incoming), None)

    def differences(self, recorded: Mapping[str, Any], incoming: Mapping[str, Any]) -> list[Difference]:
        """Every differing field, in the order ``difference`` looks (its first is the first of these)."""
        if _same(recorded, incoming, self._encodings):
            return []
        return list(self._differences(recorded, incoming))

    def _differences(self, recorded: Mapping[str, Any], incoming: Mapping[str, Any]) -> Iterator[Difference]:
        if self._match_on is not None:  # headers the recording does not have were filtered out: not compared
            kept = recorded["headers"]
            incoming = {**incoming, "headers": {k: v for k, v in incoming["headers"].items() if k in kept}}
        for section in _SECTIONS:
            for difference in iter_differences(recorded[section], incoming[section], section):
                # A value the final pass at commit removed (learned in a later call) matches any value: the
                # replay learns it only when it reaches that call too.
                if difference[1] != PLACEHOLDER or not isinstance(difference[2], str):
                    yield difference


def _same(recorded: Mapping[str, Any], incoming: Mapping[str, Any], encodings: _Encodings) -> bool:
    """Whether two requests are the same, found without walking them: equal (in C), and equal in their encoding,
    so that equal values of another type (0 and False, 1 and 1.0), which the walk names, are not the same. A
    pair equal but encoded otherwise (keys in another order) is walked. A large body is encoded once
    (``encodings``)."""
    if recorded != incoming:
        return False
    try:
        return encodings.same(recorded, incoming)
    except (TypeError, msgspec.EncodeError):
        return False


class Normalizer:
    """What both sides of a comparison are normalised with before they are compared: ``patterns`` (regular
    expression, replacement) are substituted in every string of the request, then each of ``functions`` is
    called with every field, top-down, from the whole request (path ``""``) through each section
    (``body``) down to each leaf (``body.metadata.run_id``), and returns the value to compare (the value
    itself to leave it). Paths are those of a mismatch. Only comparison sees the result: what is stored or
    sent never changes."""

    def __init__(
        self,
        patterns: Iterable[tuple[UserPattern, str]] = (),
        functions: Iterable[Callable[[str, Any], Any]] = (),
    ) -> None:
        self.patterns = tuple(patterns)
        self.functions = tuple(functions)

    def __bool__(self) -> bool:
        return bool(self.patterns or self.functions)

    def __call__(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The comparable fields normalised (a new dict: ``fields`` may share parts with other requests)."""
        normalized = self._node("", fields)
        if not isinstance(normalized, dict):
            raise TypeError(f"normalize_with: a function returned {normalized!r} for the whole request, not a dict")
        return normalized

    def _node(self, path: str, value: Any) -> Any:
        if isinstance(value, str) and value is not MISSING:
            for pattern, replacement in self.patterns:
                value = pattern.sub(replacement, value)
        for function in self.functions:
            value = function(path, value)
        if isinstance(value, dict):
            return {key: self._node(f"{path}.{key}" if path else str(key), child) for key, child in value.items()}
        if isinstance(value, list):
            return [self._node(f"{path}[{position}]", child) for position, child in enumerate(value)]
        return value
