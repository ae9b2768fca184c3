"""Where ``vcr-transport drift`` may send a recorded request, and with whose key: the vendors as data, and one
verdict per call for the real run and ``--dry-run`` alike (``resend_verdict``). No I/O.

A cassette is untrusted input (it comes in a pull request), so it chooses nothing about where a key goes.
The rules, in the order the verdict applies them:

1. A call's vendor is its recorded host's, looked up in ``VENDORS`` (exact names, and globs whose ``*``
   stands inside one DNS label: ``*.openai.azure.com``, ``bedrock-runtime.*.amazonaws.com``), in the hosts
   the project adds (``drift_hosts`` of ``[tool.vcr_transport]``) and in the hosts of the ``--upstream``s the
   user named. Never by headers or path shapes. A URL whose host could be read two ways (user info, a
   backslash, a percent sign, a non-ASCII or empty label) is no vendor's. A host of no vendor gets no key:
   the call is refused when the recording removed a credential from it, else skipped.
2. A vendor's host is reached over https (or wss) on port 443 only; only a named ``--upstream`` may be http
   or another port. With an ``--upstream`` for its vendor, the call goes there (its path and query kept).
3. WebSocket sessions are skipped: drift sends HTTP requests, and a session is a handshake and messages.
4. A call that may change state at the vendor is skipped unless writes are asked for: any method but
   GET, HEAD and OPTIONS, except a POST to one of the vendor's generation endpoints (``Vendor.reads``: the
   path ends with ``/chat/completions``, ``/messages``, ``:generateContent``...; a path with ``..``, ``//``,
   ``;`` or a percent sign is never one).
5. A key goes only where its vendor takes it (``Vendor.places``: a header in its form, Gemini's ``key``
   query value) and is read from that vendor's variables only (AZURE_OPENAI_API_KEY to Azure's hosts,
   OPENAI_API_KEY to OpenAI's). A value the recording removed anywhere else (the path, the query, the body,
   another header) refuses the call: drift never puts a key there. Removed cookies are dropped: the call
   goes without them.
6. Vertex AI and Bedrock take credentials drift can't put back (a Google OAuth token, an AWS SigV4
   signature): their calls with a removed credential are skipped, saying so; without one they are sent as
   recorded. A removed credential with none of the vendor's variables set fails the call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, quote_plus, unquote_plus, urlsplit

from .._core.format._format import RecordedCall
from .._core.rules._redaction import PLACEHOLDER
from .._core.views._review import request_bytes
from .._display import visible

__all__ = [
    "ALIASES",
    "VENDORS",
    "Upstream",
    "Vendor",
    "Verdict",
    "parse_drift_hosts",
    "parse_upstream",
    "resend_verdict",
    "vendor_names",
]

_OPENAI_READS = (
    "/chat/completions",
    "/completions",
    "/responses",
    "/responses/input_tokens",
    "/embeddings",
    "/moderations",
    "/audio/speech",
    "/audio/transcriptions",
    "/audio/translations",
    "/images/generations",
)
_GOOGLE_READS = (":generateContent", ":streamGenerateContent", ":countTokens", ":embedContent", ":batchEmbedContents")


@dataclass(frozen=True)
class Vendor:
    """One vendor: its hosts (exact names or one-label globs), the environment variables its key is read
    from (the first set wins), where the key goes (``places``: a lower-case header name and its form, ``{key}``
    standing for the key; ``query``: the query parameter that takes it), the path endings of its read-only
    POSTs (``reads``), why drift can't put its credential back (``unkeyable``, "" when it can), and, where
    ``hosts`` are the shape of every customer's own host, the environment variable naming the one its key is
    for (``endpoint``)."""

    name: str
    hosts: tuple[str, ...]
    keys: tuple[str, ...] = ()
    places: Mapping[str, str] = field(default_factory=dict)
    query: str = ""
    reads: tuple[str, ...] = ()
    unkeyable: str = ""
    endpoint: str = ""

    @property
    def where_keys_go(self) -> str:
        places = [f"its {name} header" for name in self.places] + ([f"its ?{self.query}="] if self.query else [])
        return " or ".join(places) or "nowhere"


VENDORS: tuple[Vendor, ...] = (
    Vendor("openai", ("api.openai.com",), ("OPENAI_API_KEY",), {"authorization": "Bearer {key}"}, "", _OPENAI_READS),
    Vendor(
        "azure",
        ("*.openai.azure.com", "*.cognitiveservices.azure.com"),
        ("AZURE_OPENAI_API_KEY",),
        {"api-key": "{key}"},
        "",
        _OPENAI_READS,
        endpoint="AZURE_OPENAI_ENDPOINT",
    ),
    Vendor(
        "anthropic",
        ("api.anthropic.com",),
        ("ANTHROPIC_API_KEY",),
        {"x-api-key": "{key}", "authorization": "Bearer {key}"},
        "",
        ("/v1/messages", "/v1/messages/count_tokens", "/v1/complete"),
    ),
    Vendor(
        "gemini",
        ("generativelanguage.googleapis.com",),
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        {"x-goog-api-key": "{key}"},
        "key",
        _GOOGLE_READS,
    ),
    Vendor(
        "vertex",
        ("aiplatform.googleapis.com", "*-aiplatform.googleapis.com"),
        reads=(*_GOOGLE_READS, ":predict", ":rawPredict", ":streamRawPredict"),
        unkeyable="Vertex AI takes a Google OAuth token, which drift can't put back",
    ),
    Vendor(
        "bedrock",
        ("bedrock-runtime.*.amazonaws.com", "bedrock-runtime-fips.*.amazonaws.com"),
        reads=("/invoke", "/invoke-with-response-stream", "/converse", "/converse-stream"),
        unkeyable="Bedrock takes an AWS SigV4 signature of each request, which drift can't make",
    ),
)
_BY_NAME = {vendor.name: vendor for vendor in VENDORS}
# Other names ``--upstream`` and ``drift_hosts`` take for a vendor.
ALIASES = {"google": "gemini", "genai": "gemini", "azure-openai": "azure", "aws": "bedrock"}

_LEFT_TO_THE_CLIENT = frozenset({"host", "content-length", "accept-encoding", "connection", "transfer-encoding"})
_DROPPED_WHEN_REMOVED = frozenset({"cookie"})
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_PLAIN_PATH = re.compile(r"[A-Za-z0-9/_.:~-]*")
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
_GLOB_LABEL = re.compile(r"[a-z0-9*-]+")
_PLACEHOLDERS = tuple(
    form.lower() for form in (PLACEHOLDER, quote(PLACEHOLDER, safe=""), quote_plus(PLACEHOLDER), quote(PLACEHOLDER))
)
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def vendor_names() -> str:
    return ", ".join(_BY_NAME)


def _vendor_named(name: str) -> Vendor | None:
    lower = name.strip().lower()
    return _BY_NAME.get(ALIASES.get(lower, lower))


def _removed(text: str) -> bool:
    """Whether ``text`` holds the placeholder of a removed value, in any of its URL forms."""
    lower = text.lower()
    return any(form in lower for form in _PLACEHOLDERS)


# --- hosts -------------------------------------------------------------------------------------------------


def _glob(pattern: str) -> re.Pattern[str]:
    """A host glob as a regular expression: ``*`` stands for letters, digits and hyphens inside one label."""
    return re.compile(r"\.".join(re.escape(label).replace(r"\*", "[a-z0-9-]*") for label in pattern.split(".")))


def _host_rule(text: str, where: str) -> tuple[re.Pattern[str], int]:
    """A ``drift_hosts`` entry (``host`` or ``host:port``, globs allowed) as (pattern, port)."""
    host, colon, port = text.strip().lower().partition(":")
    labels = host.split(".")
    if len(labels) < 2 or not all(_GLOB_LABEL.fullmatch(label) for label in labels) or labels[-1] == "*":
        raise ValueError(f"{where}: {text!r} is no host name (give a name or a glob: llm-gateway.corp.example)")
    if colon and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"{where}: {text!r} has no valid port")
    return _glob(host), int(port) if colon else 443


def parse_drift_hosts(value: Any, where: str = "drift_hosts") -> dict[str, tuple[str, ...]]:
    """``drift_hosts`` of ``[tool.vcr_transport]``: a table of vendor name to a list of hosts (``host`` or
    ``host:port``, globs allowed) that count as that vendor's, over https. A ValueError names what is wrong."""
    if not isinstance(value, Mapping):
        raise ValueError(f'{where} must be a table of vendor = [hosts], e.g. {{openai = ["llm-gateway.corp.example"]}}')
    hosts: dict[str, tuple[str, ...]] = {}
    for name, items in value.items():
        vendor = _vendor_named(str(name))
        if vendor is None:
            raise ValueError(f"{where}.{name}: no such vendor; the vendors are {vendor_names()}")
        if isinstance(items, str) or not isinstance(items, Sequence) or not all(isinstance(i, str) for i in items):
            raise ValueError(f"{where}.{name} must be a list of host names")
        for item in items:
            _host_rule(item, f"{where}.{name}")
        hosts[vendor.name] = hosts.get(vendor.name, ()) + tuple(items)
    return hosts


@dataclass(frozen=True)
class Upstream:
    """An ``--upstream VENDOR=URL`` the user named: where that vendor's calls go, and a host that counts as
    the vendor's (over any scheme and port: the user chose it)."""

    vendor: str
    base: str
    host: str
    port: int


def parse_upstream(name: str, url: str) -> Upstream:
    """``--upstream VENDOR=URL``; a ValueError says what is wrong."""
    vendor = _vendor_named(name)
    if vendor is None:
        raise ValueError(f"--upstream {name}=...: the vendor is one of {vendor_names()}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        port, parts = -1, urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.username or port == -1:
        raise ValueError(f"--upstream {name}={url}: give scheme, host and an optional path prefix")
    return Upstream(vendor.name, url.rstrip("/"), parts.hostname, port or _DEFAULT_PORTS[parts.scheme])


class _Where:
    """A recorded URL's parts, read once; ``problem`` says why its host can't be trusted ("" when it can)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.parts = urlsplit(url)
        self.scheme = self.parts.scheme.lower()
        self.netloc = visible(self.parts.netloc)
        self.host = ""
        self.port = 0
        self.problem = self._problem()

    def _problem(self) -> str:
        if _removed(self.parts.netloc):
            return f"its host ({self.netloc}) holds a value the recording removed"
        if self._ambiguous():
            return f"its host ({self.netloc}) can be read more than one way"
        try:
            port = self.parts.port
        except ValueError:
            return f"its host ({self.netloc}) has no valid port"
        self.host = (self.parts.hostname or "").lower()
        self.port = port or _DEFAULT_PORTS.get(self.scheme, 0)
        if self.scheme not in _DEFAULT_PORTS or not self.port:
            return f"its URL's scheme ({self.scheme}) is not http, https, ws or wss"
        return ""

    def _ambiguous(self) -> bool:
        """Whether parsers could disagree on the host: user info, a percent sign, a backslash, a space, a
        control or non-ASCII character."""
        raw = self.parts.netloc
        return not raw.isascii() or not raw.isprintable() or any(c in raw for c in "@% ") or "\\" in self.url

    @property
    def named(self) -> bool:
        """Whether the host is a domain name of plain labels (no IP literal, no trailing dot, no IDN)."""
        labels = self.host.split(".")
        return len(labels) > 1 and all(_LABEL.fullmatch(label) for label in labels)


Hosts = Mapping[str, tuple[str, ...]]


def _table_vendor(where: _Where, extra: Hosts, *, listed: bool = True) -> tuple[Vendor, int] | None:
    """The vendor whose listed (with ``listed``) or project-added hosts hold ``where``'s host, and the port
    it listens on."""
    if not where.named:
        return None
    for vendor in VENDORS:
        rules = [(_glob(host), 443) for host in vendor.hosts] if listed else []
        rules += [_host_rule(host, "drift_hosts") for host in extra.get(vendor.name, ())]
        for pattern, port in rules:
            if pattern.fullmatch(where.host):
                return vendor, port
    return None


# --- the verdict -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What ``drift`` does with one recorded call: ``send`` it (to ``url``, with ``headers``: the recorded
    ones but those the client sets itself and the removed cookies; the key from ``key_from`` goes where
    ``filled`` puts it), leave it ``skipped`` or ``refused`` (``why`` says why and how to allow it). ``url``
    and ``headers`` never hold a key: the dry run shows them."""

    outcome: Literal["send", "skipped", "refused"]
    why: str = ""
    vendor: str = ""
    url: str = ""
    key_from: str = ""
    headers: tuple[tuple[str, str], ...] = ()

    def filled(self, key: str) -> tuple[str, list[tuple[str, str]]]:
        """The URL and headers with ``key`` in the vendor's places of the removed credential."""
        vendor = _BY_NAME[self.vendor]
        headers = [
            (name, vendor.places[name.lower()].format(key=key) if _removed(value) else value)
            for name, value in self.headers
        ]
        base, mark, query = self.url.partition("?")
        query, hash_mark, fragment = query.partition("#")
        query = "&".join(_filled_item(item, vendor.query, key) for item in query.split("&"))
        return base + mark + query + hash_mark + fragment, headers


def _filled_item(item: str, name: str, key: str) -> str:
    parameter, equals, value = item.partition("=")
    if name and equals and parameter == name and unquote_plus(value) == PLACEHOLDER:
        return f"{parameter}={quote(key, safe='')}"
    return item


def _key_place(name: str, value: str, vendor: Vendor) -> bool:
    """Whether a removed header value stands where ``vendor``'s key goes, in its form."""
    form = vendor.places.get(name.lower())
    return form is not None and value.strip() in (PLACEHOLDER, form.format(key=PLACEHOLDER))


def _query_key(item: str, vendor: Vendor) -> bool:
    parameter, equals, value = item.partition("=")
    return bool(vendor.query) and bool(equals) and parameter == vendor.query and unquote_plus(value) == PLACEHOLDER


def _body_text(call: RecordedCall) -> str:
    body = call.body
    if body is None:
        return ""
    if "json" in body:
        return json.dumps(body["json"], ensure_ascii=False)
    return (request_bytes(body) or b"").decode("utf-8", "replace")


def _stray_header(name: str, value: str, vendor: Vendor) -> bool:
    return _removed(value) and name.lower() not in _DROPPED_WHEN_REMOVED and not _key_place(name, value, vendor)


def _stray_removal(call: RecordedCall, where: _Where, vendor: Vendor) -> str:
    """Where the recording removed a value that is not ``vendor``'s key (drift can't put it back), or ""."""
    stray = next((name.lower() for name, value in call.request_headers if _stray_header(name, value, vendor)), "")
    if stray:
        return f"its {stray} header"
    return _stray_in_url(where, vendor) or ("its body" if _removed(_body_text(call)) else "")


def _stray_in_url(where: _Where, vendor: Vendor) -> str:
    """Where in its URL the recording removed a value that is not ``vendor``'s key (its path, its query),
    or ""."""
    if _removed(where.parts.path) or _removed(where.parts.fragment):
        return "its path"
    if any(_removed(item) and not _query_key(item, vendor) for item in where.parts.query.split("&")):
        return "its query"
    return ""


def _removed_key(call: RecordedCall, where: _Where, vendor: Vendor) -> bool:
    """Whether the recording removed the vendor's key from one of its places (so a key would go back)."""
    headers = any(_removed(value) and _key_place(name, value, vendor) for name, value in call.request_headers)
    return headers or any(_query_key(item, vendor) for item in where.parts.query.split("&"))


def _anything_removed(call: RecordedCall, where: _Where) -> bool:
    return (
        _removed(where.url) or any(_removed(value) for _, value in call.request_headers) or _removed(_body_text(call))
    )


def _is_write(method: str, path: str, vendor: Vendor) -> bool:
    """Whether the call may change state at the vendor (rule 4 of this module's docstring)."""
    if method.upper() in _READ_METHODS:
        return False
    plain = _PLAIN_PATH.fullmatch(path) is not None and ".." not in path and "//" not in path
    return not (method.upper() == "POST" and plain and path.endswith(vendor.reads))


def _allow_hint(vendor: str, where: _Where) -> str:
    host = where.netloc or where.host
    return (
        f"allow it with --upstream {vendor}=https://{host} or "
        f'drift_hosts = {{{vendor} = ["{host}"]}} in [tool.vcr_transport]'
    )


def _unknown_host(call: RecordedCall, where: _Where) -> Verdict:
    why = where.problem or f"host {where.netloc} is none of the vendors' hosts ({vendor_names()})"
    if not _anything_removed(call, where) and not where.problem:
        return Verdict("skipped", f"{why}: drift sends only to them", url=call.url)
    hint = "" if where.problem else "; " + _allow_hint("VENDOR", where)
    return Verdict("refused", f"refused: {why}, and no key goes there{hint}", url=call.url)


def _named(where: _Where, upstreams: Sequence[Upstream]) -> Vendor | str | None:
    """The vendor whose ``--upstream`` is ``where``'s host and port, None when none is, or why it is ambiguous."""
    named = {upstream.vendor for upstream in upstreams if (upstream.host, upstream.port) == (where.host, where.port)}
    if len(named) > 1:
        return f"refused: {where.netloc} is the --upstream of {' and '.join(sorted(named))}: name it for one vendor"
    return _BY_NAME[named.pop()] if named else None


def _insecure(where: _Where, vendor: Vendor, port: int) -> str:
    """Why a vendor's host can't be reached as ``where`` says (not https, another port), or ""."""
    if where.scheme in ("https", "wss") and where.port == port:
        return ""
    return (
        f"refused: {where.scheme}://{where.netloc} is {vendor.name}'s host but not over https on port {port}; "
        f"a key goes there over https only (or name it with --upstream {vendor.name}=URL)"
    )


def _route(
    where: _Where, upstreams: Sequence[Upstream], extra: Mapping[str, tuple[str, ...]]
) -> tuple[Vendor, str] | str:
    """(the call's vendor, the URL it goes to), or why it goes nowhere ("": its host is no vendor's)."""
    if where.problem:
        return ""
    named = _named(where, upstreams)
    if isinstance(named, str):
        return named
    found = (named, 0) if named is not None else _table_vendor(where, extra)
    if found is None:
        return ""
    return _destination(where, *found, upstreams)


def _destination(where: _Where, vendor: Vendor, port: int, upstreams: Sequence[Upstream]) -> tuple[Vendor, str] | str:
    """(``vendor``, the URL a call to ``where`` goes to: on its ``--upstream``, else where it was recorded), or
    why it can't go there (``_insecure``; ``port`` 0: any port goes)."""
    upstream = next((u for u in upstreams if u.vendor == vendor.name), None)
    if upstream is not None:
        return vendor, _on(upstream, where)
    return (_insecure(where, vendor, port) if port else "") or (vendor, where.url)


def _on(upstream: Upstream, where: _Where) -> str:
    """``where``'s path and query on ``upstream``."""
    return upstream.base + where.parts.path + (f"?{where.parts.query}" if where.parts.query else "")


def _sent_headers(call: RecordedCall) -> tuple[tuple[str, str], ...]:
    """The recorded headers that go with the request: not those the client sets itself, nor removed cookies."""
    return tuple(
        (name, value)
        for name, value in call.request_headers
        if name.lower() not in _LEFT_TO_THE_CLIENT and not (name.lower() in _DROPPED_WHEN_REMOVED and _removed(value))
    )


def _not_the_endpoint(where: _Where, vendor: Vendor, environ: Mapping[str, str]) -> str:
    """Why ``vendor``'s key can't go to ``where``, a host of the vendor's shape that the user did not name
    (rule 5: it is not the host of the vendor's endpoint variable), or ""."""
    endpoint = environ.get(vendor.endpoint, "") if vendor.endpoint else ""
    if not vendor.endpoint or (endpoint and (urlsplit(endpoint).hostname or "").lower() == where.host):
        return ""
    said = f"is {visible(endpoint)}" if endpoint else "is not set"
    return (
        f"refused: {where.netloc} has the shape of {vendor.name}'s hosts, which are each customer's own, and "
        f"{vendor.endpoint} {said}: {vendor.keys[0]} goes only to that resource's host; set {vendor.endpoint} "
        f"or {_allow_hint(vendor.name, where)}"
    )


def _keyed(
    call: RecordedCall, where: _Where, vendor: Vendor, url: str, environ: Mapping[str, str], named: bool
) -> Verdict:
    """The verdict on a call to ``vendor``'s host, past the skips (rules 5 and 6); ``named``: the user named
    the host (an ``--upstream`` or ``drift_hosts``)."""
    if vendor.unkeyable and _anything_removed(call, where):
        return Verdict("skipped", f"the recording removed its credential: {vendor.unkeyable}", vendor.name, url)
    stray = _stray_removal(call, where, vendor)
    if stray:
        return Verdict(
            "refused",
            f"refused: the recording removed a value from {stray}, and drift puts a key back only in "
            f"{vendor.name}'s {vendor.where_keys_go}, never there",
            vendor.name,
            url,
        )
    headers = _sent_headers(call)
    if not _removed_key(call, where, vendor):
        return Verdict("send", "", vendor.name, url, "", headers)
    return _key_verdict(where, vendor, url, environ, named, headers)


def _key_verdict(
    where: _Where,
    vendor: Vendor,
    url: str,
    environ: Mapping[str, str],
    named: bool,
    headers: tuple[tuple[str, str], ...],
) -> Verdict:
    """The verdict on a call whose key the recording removed: sent with the first of ``vendor``'s key variables
    that is set, refused when none is or (``named`` false) when its host is not the vendor's endpoint."""
    variable = next((name for name in vendor.keys if environ.get(name)), None)
    if variable is None:
        why = f"its credential was removed and none of {', '.join(vendor.keys)} is set: set one"
        return Verdict("refused", why, vendor.name, url)
    elsewhere = "" if named else _not_the_endpoint(where, vendor, environ)
    if elsewhere:
        return Verdict("refused", elsewhere, vendor.name, url)
    return Verdict("send", "", vendor.name, url, variable, headers)


def _user_named(where: _Where, url: str, upstreams: Sequence[Upstream], extra: Hosts) -> bool:
    """Whether the user named the host a call goes to: an ``--upstream`` (the call moved there, or its host is
    one) or a ``drift_hosts`` entry."""
    return (
        url != where.url
        or _named(where, upstreams) is not None
        or _table_vendor(where, extra, listed=False) is not None
    )


def resend_verdict(
    call: RecordedCall,
    *,
    upstreams: Sequence[Upstream] = (),
    extra_hosts: Mapping[str, tuple[str, ...]] | None = None,
    environ: Mapping[str, str],
    include_writes: bool = False,
) -> Verdict:
    """What ``drift`` does with ``call`` (this module's docstring), for the real run and the dry run alike."""
    if call.status is None:
        return Verdict("refused", "the recording has no response to compare with", url=call.url)
    where = _Where(call.url)
    route = _route(where, upstreams, extra_hosts or {})
    if isinstance(route, str):
        return Verdict("refused", route, url=call.url) if route else _unknown_host(call, where)
    vendor, url = route
    if call.websocket:
        why = "a WebSocket session: drift re-sends HTTP requests, and a session needs its handshake and messages"
        return Verdict("skipped", why, vendor.name, url)
    if not include_writes and _is_write(call.method, where.parts.path, vendor):
        why = (
            f"{call.method} {where.parts.path} may change state at {vendor.name} (it is no generation endpoint); "
            "--include-writes sends it"
        )
        return Verdict("skipped", why, vendor.name, url)
    return _keyed(call, where, vendor, url, environ, _user_named(where, url, upstreams, extra_hosts or {}))
