"""Converting vcrpy YAML cassettes into v1 cassettes, redacting on the way (``vcr-transport import``).

YAML that is no vcrpy cassette at all (a project's own configuration: no mapping with ``interactions``; another
tool's recording, whose ``interactions`` hold no request with a ``uri`` and response) is skipped (``NotACassette``,
with why). The calls of clients replay can't serve, or serves in the compatibility mode only, are counted by client
(``RECORDED_CLIENTS``), for ``import`` to name. Hostile input is refused, never half-converted: a YAML whose aliases
would expand beyond a small budget (an "alias bomb") or refer to themselves, and a cassette whose interactions are
not what vcrpy writes, each with an error naming the file, the line of the interaction, what is wrong and the fix.
Two inputs that would write the same output are refused before anything is written. Each output is written to a
fresh ``tempfile.mkstemp`` file (0600, created exclusively, so a planted symlink is never followed) in the target
folder, read back by the strict parser, and only then moved into place: a conversion that would not read is refused
and the target is left as it was. An output that is a symlink, or lies in a folder reached through one, is written by
the one rule of ``_write_paths``: through a link to a cassette in the project only, never out of it.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._compat import VCRPY_MATCH_ON
from .._core.format._bodies import (
    DecodedTooLarge,
    body_headers,
    content_encoding,
    content_encodings,
    content_type_of,
    decode_stacked,
    stored_body,
)
from .._core.format._format import encode_line, event_lines, header_line
from .._core.rules._redaction import Redactor
from .._core.rules._stream import EncodedBodyRedactor, StreamRedactor
from .._display import shorten
from .._exceptions import CassetteError, RedactionLimitError
from .._storage import cassette_target, read_cassette

__all__ = [
    "ALIAS_BUDGET",
    "PARSED_BODY_KEYS",
    "VCRPY_MATCH_ON",
    "COMPAT_ONLY",
    "RECORDED_CLIENTS",
    "ImportProblem",
    "Imported",
    "NotACassette",
    "import_vcrpy",
    "plan_imports",
]

# How much aliases may add to a document once expanded, in characters of its scalars (each node counting one
# more, so that empty ones count too): what expanding them costs is the text they repeat, not the nodes. vcrpy
# writes no aliases at all.
ALIAS_BUDGET = 1_000_000
YAML_SUFFIXES = (".yaml", ".yml")
FIX = "re-record it with vcrpy, or correct the file by hand; a vcrpy cassette is a mapping with an 'interactions' list"


class ImportProblem(Exception):
    """A command-line mistake of ``import`` (a missing input, two inputs for one output, no PyYAML)."""


class NotACassette(Exception):
    """A YAML file that is no vcrpy cassette at all (a project's own configuration): skipped, not refused. The
    message says why."""

    def __init__(self, source: Path, why: str) -> None:
        self.source = source
        self.why = why
        super().__init__(f"{source}: not a vcrpy cassette ({why})")


# A top-level ``interactions`` key: a file that has one and can't be read is a broken cassette, not another
# kind of YAML.
_INTERACTIONS_KEY = re.compile(rb"^interactions\s*:", re.MULTILINE)


def plan_imports(
    inputs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str] | None
) -> list[tuple[Path, Path]]:
    """(source, target) for every YAML file named or found in a named folder (recursively). A folder's
    files go to the same relative paths under ``out`` (beside them without ``out``). Raises ImportProblem
    for a missing input and for two inputs that map to one output, and a CassetteError for a target a link
    may not be written through (``cassette_target``), before anything is written."""
    plan = [pair for raw in inputs for pair in _planned(Path(raw), out)]
    _refuse_shared_targets(plan)
    for _, target in plan:
        cassette_target(target)  # a link that may not be written through: refused before anything is written
    return plan


def _planned(given: Path, out: str | os.PathLike[str] | None) -> list[tuple[Path, Path]]:
    """(source, target) for one input: a YAML file, or every YAML file in a folder (recursively)."""
    if given.is_dir():
        found = sorted(p for p in given.rglob("*") if p.suffix.lower() in YAML_SUFFIXES and p.is_file())
        if not found:
            raise ImportProblem(f"{given}: a folder with no .yaml or .yml file in it")
        return [(source, _target(source, source.relative_to(given).with_suffix(".jsonl"), out)) for source in found]
    if given.is_file():
        return [(given, _target(given, Path(given.with_suffix(".jsonl").name), out))]
    raise ImportProblem(f"{given}: no such file or folder")


def _target(source: Path, relative: Path, out: str | os.PathLike[str] | None) -> Path:
    """Where ``source`` is written: at ``relative`` under ``out``, or beside it without ``out``."""
    return Path(out) / relative if out is not None else source.with_suffix(".jsonl")


def _refuse_shared_targets(plan: list[tuple[Path, Path]]) -> None:
    """ImportProblem when two sources of ``plan`` would be written to one target (``a.yaml`` and ``a.yml``,
    or two folders' files under one ``--out``), told by absolute path before anything is written, so that
    one conversion never silently replaces another."""
    by_target: dict[Path, Path] = {}
    for source, target in plan:
        key = Path(os.path.abspath(target))
        if key in by_target:
            raise ImportProblem(
                f"{by_target[key]} and {source} would both be written to {target}; nothing was imported. "
                "Import them in separate runs with different --out folders, or rename one"
            )
        by_target[key] = source


# --- reading the YAML -----------------------------------------------------------------------------------


def _yaml() -> Any:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise ImportProblem('import needs PyYAML: pip install "vcr_transport[yaml]"') from None
    return yaml


def _expanded_size(root: Any, yaml: Any, source: Path) -> int:
    """The size of the document once every alias is expanded (``_size``); refuses self-reference. The walk
    is iterative and post-order (a node is sized once its children are), and sizes each node once, so a
    deep or heavily aliased document costs work in proportion to its nodes as written, never as expanded."""
    sizes: dict[int, int] = {}
    visiting: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = _children(node, yaml)
        if children is None:
            sizes[key] = _size(node)
        elif children_done:
            visiting.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
        else:
            _refuse_self_reference(node, visiting, source)
            visiting.add(key)
            stack.append((node, True))
            for child in children:
                _refuse_self_reference(child, visiting, source)
                if id(child) not in sizes:
                    stack.append((child, False))
    return sizes[id(root)]


def _children(node: Any, yaml: Any) -> list[Any] | None:
    """A sequence's items, or a mapping's keys and values in turn; None for a scalar."""
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return None


def _refuse_self_reference(node: Any, visiting: set[int], source: Path) -> None:
    """A CassetteError when ``node`` is among the nodes being visited: an alias to a node that contains it,
    which would expand without end."""
    if id(node) in visiting:
        raise CassetteError(
            str(source), node.start_mark.line + 1, "a YAML alias refers to the node that contains it", FIX
        )


def _size(node: Any) -> int:
    """What a node adds to the document's size (ALIAS_BUDGET): one, and a scalar's characters."""
    return 1 + len(node.value) if isinstance(node.value, str) else 1


def _distinct_size(root: Any, yaml: Any) -> int:
    """The size of the document with each alias counted once (as written)."""
    seen: dict[int, int] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = _size(node)
        stack += _children(node, yaml) or []
    return sum(seen.values())


def _load(source: Path) -> tuple[Any, list[int]]:
    """The document, and the line of each interaction; aliases bounded, the C loader when present."""
    yaml = _yaml()
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = source.read_bytes()
    except OSError as error:
        raise CassetteError(str(source), None, f"can't be read: {error.strerror}") from None
    loader = loader_class(data)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, []
        _refuse_alias_bomb(root, yaml, source)
        return loader.construct_document(root), _interaction_lines(root, yaml)
    except yaml.YAMLError as error:
        raise _unloadable(source, data, error) from None
    finally:
        loader.dispose()


def _refuse_alias_bomb(root: Any, yaml: Any, source: Path) -> None:
    """A CassetteError when the aliases would add more than ``ALIAS_BUDGET`` to the document: a few lines of
    nested aliases (a "billion laughs") expand to gigabytes when the document is constructed."""
    expanded, distinct = _expanded_size(root, yaml, source), _distinct_size(root, yaml)
    if expanded - distinct > ALIAS_BUDGET:
        raise CassetteError(
            str(source),
            None,
            f"YAML aliases would expand it from {distinct:,} to {expanded:,} characters, more than the "
            f"{ALIAS_BUDGET:,} they may add on import (an alias bomb?); nothing was imported",
            "vcrpy writes no aliases: import only files vcrpy wrote",
        )


def _interaction_lines(root: Any, yaml: Any) -> list[int]:
    """The line of each item of the document's ``interactions`` list (the last such key's); none without it."""
    lines: list[int] = []
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if getattr(key, "value", None) == "interactions" and isinstance(value, yaml.SequenceNode):
                lines = [item.start_mark.line + 1 for item in value.value]
    return lines


def _unloadable(source: Path, data: bytes, error: Any) -> NotACassette | CassetteError:
    """Why a YAML file did not load: NotACassette without a top-level ``interactions`` key, else a
    CassetteError at the problem's line."""
    mark = getattr(error, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    if not _INTERACTIONS_KEY.search(data):
        return NotACassette(source, f"YAML that doesn't load as one document ({problem}), with no 'interactions'")
    return CassetteError(str(source), line, f"not a YAML file vcr_transport can read: {problem}", FIX)


# --- checking and converting the document ---------------------------------------------------------------

# Where custom vcrpy serializers keep a JSON body parsed (pydantic-ai's ``parsed_body`` and the like), beside
# or instead of ``body``; such a serializer's loader hands the client ``json.dumps`` of it.
PARSED_BODY_KEYS = ("parsed_body", "json_body", "body_json")
# Methods whose requests carry a body when their content-type says JSON.
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class _Checker:
    def __init__(self, source: Path, lines: list[int]) -> None:
        self.source = source
        self.lines = lines

    def fail(self, index: int | None, problem: str, fix: str = FIX) -> CassetteError:
        line = self.lines[index] if index is not None and index < len(self.lines) else None
        where = f"interaction {index}: " if index is not None else ""
        return CassetteError(str(self.source), line, where + problem, fix)

    def headers(self, index: int, side: str, headers: Any) -> list[tuple[str, str]]:
        """The header pairs. A name or value vcrpy stored as bytes (``!!binary``: botocore's headers, Bedrock's)
        is taken as the bytes it is, one character per byte (latin-1, as HTTP carries them)."""
        if headers is None:
            return []
        if not isinstance(headers, dict):
            raise self.fail(
                index, f"{side}.headers is a {type(headers).__name__}, not a mapping of name to values", HEADER_FIX
            )
        pairs = []
        for name, values in headers.items():
            for value in values if isinstance(values, list) else [values]:
                text_name, text_value = _header_text(name), _header_text(value)
                if text_name is None or text_value is None:
                    raise self.fail(
                        index,
                        f"{side}.headers[{name!r}] holds {value!r}; a header is a name with a text (or bytes) value "
                        "or a list of them",
                        HEADER_FIX,
                    )
                pairs.append((text_name, text_value))
        return pairs

    def body(self, index: int, side: str, data: dict[str, Any], headers: list[tuple[str, str]]) -> bytes | None:
        """The body bytes the client sent or got, from whichever form the serializer wrote; None when the
        interaction has no body at all (neither ``body`` nor a parsed form)."""
        body = data.get("body")
        if isinstance(body, dict):
            if "string" not in body:
                return self.parsed_inside(index, side, body)
            body = body["string"]
        parsed = [key for key in PARSED_BODY_KEYS if key in data]
        if parsed and _empty(body):
            return self.dumped(index, f"{side}.{parsed[0]}", data[parsed[0]])
        if body is None:
            return None if "body" not in data else b""
        return self.written(index, side, body)

    def parsed_inside(self, index: int, side: str, body: dict[Any, Any]) -> bytes:
        """A body mapping without ``string``: its parsed JSON (``PARSED_BODY_KEYS`` or ``json``), dumped."""
        parsed_inside = [key for key in (*PARSED_BODY_KEYS, "json") if key in body]
        if not parsed_inside:
            raise self.fail(
                index,
                f"{side}.body is a mapping without 'string' (keys: {', '.join(map(str, body)) or 'none'})",
                "vcrpy stores a body as {string: ...}; a custom serializer's parsed JSON is read from "
                f"{', '.join(PARSED_BODY_KEYS)}: rename the key, or re-record with vcrpy",
            )
        return self.dumped(index, f"{side}.body.{parsed_inside[0]}", body[parsed_inside[0]])

    def written(self, index: int, side: str, body: Any) -> bytes:
        """A body vcrpy wrote as bytes or text, as bytes."""
        if isinstance(body, bytes):
            return body
        if isinstance(body, str):
            return body.encode("utf-8")
        raise self.fail(
            index,
            f"{side}.body is a {type(body).__name__}; vcrpy stores text, bytes or {{string: ...}}",
        )

    def dumped(self, index: int, field: str, value: Any) -> bytes:
        """A parsed JSON body as the serializer's loader turns it back into bytes (``json.dumps``)."""
        try:
            return json.dumps(value).encode("utf-8")
        except (TypeError, ValueError) as error:
            raise self.fail(index, f"{field} can't be written back as JSON: {error}") from None

    def interaction(self, index: int, interaction: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """An interaction's request and response mappings, checked: a method and a URI that are text, and a
        status code from 100 to 599 (``status_code``). A CassetteError names what is missing."""
        if not isinstance(interaction, dict):
            raise self.fail(index, f"is a {type(interaction).__name__}, not a mapping with request and response")
        for side in ("request", "response"):
            if not isinstance(interaction.get(side), dict):
                raise self.fail(index, f"has no {side} mapping")
        request, response = interaction["request"], interaction["response"]
        for field in ("method", "uri"):
            value = request.get(field)
            if not isinstance(value, str) or not value:
                raise self.fail(index, f"request.{field} is {value!r}, not text")
        self.status_code(index, response)
        return request, response

    def status_code(self, index: int, response: dict[str, Any]) -> None:
        """A CassetteError unless the response's status code is a whole number from 100 to 599."""
        status = response.get("status")
        code = status.get("code") if isinstance(status, dict) else None
        if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
            raise self.fail(index, f"response.status.code is {code!r}, not a whole number from 100 to 599")


def _empty(body: Any) -> bool:
    """Whether a body vcrpy wrote is none or empty (a parsed form beside it is then the body)."""
    return body is None or body in ("", b"")


HEADER_FIX = (
    "vcrpy stores headers as a mapping of each name to a list of text (or !!binary) values: correct that header "
    "in the YAML, or re-record the test"
)


def _header_text(value: Any) -> str | None:
    """A header name or value as text: text as it is, a number as its digits, bytes one character per byte;
    None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("latin-1")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name), None)


def _consistent(headers: list[tuple[str, str]], body: bytes) -> list[tuple[str, str]]:
    """The headers made true of ``body``: a content-encoding the body is not in is dropped (serializers that
    store the decoded text, parsed or not, keep the header), and a content-length is the body's length (an
    empty body keeps its header, so that ``verify`` can tell that it was lost)."""
    encodings = content_encodings(headers)
    if encodings and body and _undecodable(body, encodings):
        headers = [(k, v) for k, v in headers if k.lower() != "content-encoding"]
    return _true_length(headers, body)


def _true_length(headers: list[tuple[str, str]], body: bytes) -> list[tuple[str, str]]:
    """The headers with a content-length that is ``body``'s length (an empty body keeps its header)."""
    length = _header(headers, "content-length")
    if body and length is not None and length.strip() != str(len(body)):
        headers = [(k, str(len(body)) if k.lower() == "content-length" else v) for k, v in headers]
    return headers


def _undecodable(body: bytes, encodings: list[str]) -> bool:
    """Whether ``body`` is not in ``encodings`` (one that decodes past the bound is: ``_redacted_response``
    refuses it)."""
    try:
        return decode_stacked(body, encodings) is None
    except DecodedTooLarge:
        return False


@dataclasses.dataclass(frozen=True)
class Imported:
    """A converted cassette: its call count, and the calls of each client replay serves in the compatibility
    mode only (``compat_only``) or never (``unserved``), by the client's name (``RECORDED_CLIENTS``)."""

    calls: int
    compat_only: dict[str, int] = dataclasses.field(default_factory=dict)
    unserved: dict[str, int] = dataclasses.field(default_factory=dict)


# The clients vcrpy records besides httpx (it patches http.client, urllib3, requests, aiohttp, botocore,
# tornado, httplib2...), told by what their User-Agent holds: (pattern, the client's name, served). urllib3's
# calls (requests, botocore) replay in the pytest-recording compatibility mode only (``_urllib3.py``); the
# others never, and meet the network guard. The first that matches names the client; an SDK's own agent names
# none (its calls go through httpx).
COMPAT_ONLY = "compat-only"
RECORDED_CLIENTS: tuple[tuple[re.Pattern[str], str, str | None], ...] = (
    (re.compile(r"\bpython-requests/", re.IGNORECASE), "requests", COMPAT_ONLY),
    (re.compile(r"\bpython-urllib3/", re.IGNORECASE), "urllib3", COMPAT_ONLY),
    (re.compile(r"\bbotocore[/#]", re.IGNORECASE), "botocore", COMPAT_ONLY),
    (re.compile(r"\bpython-urllib/", re.IGNORECASE), "urllib.request (http.client)", None),
    (re.compile(r"\baiohttp/", re.IGNORECASE), "aiohttp", None),
    (re.compile(r"\bhttplib2\b", re.IGNORECASE), "httplib2", None),
    (re.compile(r"\btornado/", re.IGNORECASE), "tornado", None),
)


def _foreign(interactions: list[Any]) -> bool:
    """Whether ``interactions`` are another tool's recording (gRPC, WebSocket): mappings, none of which bears
    a mark of vcrpy's HTTP exchange (a request with a ``uri``, a response status with a code and a message).
    A list that holds one, or holds anything but mappings, is a vcrpy cassette, broken where it is."""
    if not all(isinstance(interaction, dict) for interaction in interactions):
        return False
    for interaction in interactions:
        request, response = interaction.get("request"), interaction.get("response")
        status = response.get("status") if isinstance(response, dict) else None
        if (isinstance(request, dict) and "uri" in request) or (
            isinstance(status, dict) and {"code", "message"} <= set(status)
        ):
            return False
    return True


def _recorded_client(interaction: dict[str, Any]) -> tuple[str, str | None] | None:
    """The client a checked interaction's request came from (``RECORDED_CLIENTS``), by its User-Agent."""
    headers = interaction["request"].get("headers") or {}
    agents = [value for name, value in headers.items() if str(name).lower() == "user-agent"]
    agent = " ".join(str(item) for value in agents for item in (value if isinstance(value, list) else [value]))
    for pattern, client, served in RECORDED_CLIENTS:
        if pattern.search(agent[:1000]):  # bounded: a cassette chooses the header's length
            return client, served
    return None


def _clients(interactions: list[Any]) -> Imported:
    """The cassette's call count, and its calls counted by the recorded client (``RECORDED_CLIENTS``) that
    replay serves in the compatibility mode only or never."""
    compat_only: collections.Counter[str] = collections.Counter()
    unserved: collections.Counter[str] = collections.Counter()
    for interaction in interactions:
        found = _recorded_client(interaction)
        if found is not None:
            (compat_only if found[1] == COMPAT_ONLY else unserved)[found[0]] += 1
    return Imported(len(interactions), dict(compat_only), dict(unserved))


def import_vcrpy(source: Path, target: Path, redactor: Redactor | None = None) -> Imported:
    """Convert a vcrpy YAML cassette into a v1 cassette at ``target``, redacting on the way. Returns the call
    count and the recorded clients replay serves in the compatibility mode only or never (``Imported``).
    ``redactor``: the rules (the defaults when not given). Every interaction is checked before anything is
    written; a body that can't be recovered is a CassetteError, never an empty body. The header records
    ``match_on`` (vcrpy's default matching) and ``ordered: false`` (vcrpy plays the first unplayed match),
    which replay keeps unless told otherwise."""
    document, lines = _load(source)
    check = _Checker(source, lines)
    interactions = _interactions(document, source, check)
    redactor = Redactor() if redactor is None else redactor
    # Twice with one redactor: the second conversion, the one written, knows every value the first learned
    # anywhere (a token a later login returned leaves the earlier calls, compressed bodies included).
    _converted(interactions, source, check, redactor)
    _write_privately(target, _converted(interactions, source, check, redactor), check)
    return _clients(interactions)


def _interactions(document: Any, source: Path, check: _Checker) -> list[Any]:
    """The cassette's interactions; NotACassette for YAML that is none (a configuration, another tool's
    recording), a CassetteError for a cassette whose ``interactions`` is no list."""
    if document is None:
        raise NotACassette(source, "an empty YAML document")
    if not isinstance(document, dict):
        raise NotACassette(source, f"the document is a {type(document).__name__}, not a mapping with 'interactions'")
    if "interactions" not in document:
        raise NotACassette(source, f"a mapping without 'interactions', keys: {_first_keys(document) or 'none'}")
    interactions = document.get("interactions")
    if not isinstance(interactions, list):
        raise check.fail(None, f"not a vcrpy cassette: 'interactions' is {type(interactions).__name__}, not a list")
    if interactions and _foreign(interactions):
        raise NotACassette(
            source,
            "its 'interactions' hold no HTTP exchange as vcrpy writes one (a request with a uri, a response with a "
            f"status), the first has keys {shorten(sorted(map(str, interactions[0]))[:6])}: another tool's recording",
        )
    return interactions


def _first_keys(document: dict[Any, Any]) -> str:
    """The document's first five keys, and how many more there are."""
    keys = [str(key) for key in document]
    return ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")


def _converted(interactions: list[Any], source: Path, check: _Checker, redactor: Redactor) -> list[bytes]:
    """The v1 cassette's lines of ``interactions``, redacted by ``redactor``."""
    out = [encode_line(header_line(imported_from=str(source), match_on=list(VCRPY_MATCH_ON), ordered=False))]
    for index, interaction in enumerate(interactions):
        try:
            out += _converted_call(index, interaction, check, redactor)
        except RedactionLimitError as error:  # a hostile file: refused where it filled the redactor, nothing written
            raise check.fail(index, str(error), error.FIX) from None
    return out


def _converted_call(index: int, interaction: Any, check: _Checker, redactor: Redactor) -> list[bytes]:
    """The v1 cassette's lines of one interaction, redacted by ``redactor``: its request, its response head,
    its body as one event (vcrpy keeps no chunk boundaries) and its end. The headers are made true of the
    bodies (``_consistent``); a body that is missing where the call had one is refused, never left empty."""
    out: list[bytes] = []
    request, response = check.interaction(index, interaction)
    method = request["method"].upper()
    request_headers = check.headers(index, "request", request.get("headers"))
    request_body = _request_body(check, index, method, request, request_headers)
    request_headers = _consistent(request_headers, request_body)
    response_headers = check.headers(index, "response", response.get("headers"))
    status = response["status"]["code"]
    response_body = _response_body(check, index, method, response, response_headers)
    response_headers = _consistent(response_headers, response_body)
    out.append(
        encode_line(
            {
                "type": "request",
                "call_index": index,
                "method": method,
                "url": redactor.redact_text(request["uri"]),
                "headers": redactor.redact_headers(request_headers),
                "body": stored_body(
                    request_body,
                    content_type_of(request_headers),
                    redactor,
                    encoding=content_encoding(request_headers),
                ),
            }
        )
    )
    out.append(
        encode_line(
            {
                "type": "response",
                "call_index": index,
                "status": status,
                "headers": redactor.redact_headers(response_headers),
                "http_version": "HTTP/1.1",
            }
        )
    )
    try:
        chunks = _redacted_response(redactor, response_headers, response_body)
    except DecodedTooLarge as error:
        raise check.fail(
            index,
            f"response: the {error}, more than import searches for secrets",
            "a body that can't be searched is never written: re-record that call, or leave it out",
        ) from None
    out.append(event_lines(index, 0, [(chunk, 0) for chunk in chunks], 0))
    out.append(
        encode_line({"type": "call_end", "call_index": index, "event_count": len(chunks), "outcome": "complete"})
    )
    return out


def _request_body(
    check: _Checker, index: int, method: str, request: dict[str, Any], headers: list[tuple[str, str]]
) -> bytes:
    """The request's body; empty when it has none, refused when its method and JSON content-type need one."""
    body = check.body(index, "request", request, headers)
    if body is None and method in BODY_METHODS and "json" in content_type_of(headers):
        raise check.fail(index, f"request: a {method} with a JSON content-type has no body and no parsed body")
    return body or b""


def _response_body(
    check: _Checker, index: int, method: str, response: dict[str, Any], headers: list[tuple[str, str]]
) -> bytes:
    """The response's body; empty when it has none, refused when its status, method and length say it had one."""
    body = check.body(index, "response", response, headers)
    status = response["status"]["code"]
    if body is None and _has_a_body(status, method, _header(headers, "content-length")):
        raise check.fail(
            index, f"response ({status}) has no body and no parsed body; vcrpy writes body: {{string: ...}}"
        )
    return body or b""


def _has_a_body(status: int, method: str, length: str | None) -> bool:
    """Whether a response had a body: not a 204 or 304, not to a HEAD, and no content-length of 0."""
    return status not in (204, 304) and method != "HEAD" and (length is None or length.strip() != "0")


def _redacted_response(redactor: Redactor, headers: list[tuple[str, str]], body: bytes) -> list[bytes]:
    """The response body's chunks for the cassette, redacted: a content-encoded body (gzip, deflate, br,
    zstd: vcrpy keeps compressed bodies as ``!!binary``) searched decoded and, when it held a secret, encoded
    again, as the recorder does, so that replay hands the client what it expects; any other body over its
    text, a line at a time (with SSE deltas reassembled)."""
    _, encoding, _ = body_headers(headers)
    if encoding:
        redacting: EncodedBodyRedactor | StreamRedactor = EncodedBodyRedactor(redactor, encoding)
    else:
        redacting = StreamRedactor(redactor)
    return [chunk for chunk, _ in [*redacting.feed(body, 0), *redacting.finish()]]


def _write_privately(target: Path, lines: list[bytes], check: _Checker) -> None:
    """Write through a fresh, exclusively created temporary file (0600) in the target folder, read it back with
    the strict parser, then move it into place: a symlink planted anywhere near the target is never written
    through, and a file that would not read never replaces anything (a CassetteError naming the interaction).
    A target that is itself a link is written through by ``cassette_target``'s rule (to a cassette in the
    project only)."""
    target = cassette_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.writelines(lines)
        try:
            read_cassette(temporary, lazy=False)
        except CassetteError as error:
            raise _unreadable(target, lines, check, error) from None
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def _unreadable(target: Path, pieces: list[bytes], check: _Checker, error: CassetteError) -> CassetteError:
    """Why the converted file would not read, named at the interaction it came from."""
    index: int | None = None
    lines = b"".join(pieces).splitlines()
    if error.line is not None and 0 < error.line <= len(lines):
        found = json.loads(lines[error.line - 1]).get("call_index")
        index = found if isinstance(found, int) else None
    kept = "left as it was" if target.exists() else "not written"
    where = f"line {error.line} of the converted cassette" if error.line is not None else "the converted cassette"
    return check.fail(
        index,
        f"converted, it would not read back ({where}: {error.problem}); {target} was {kept}",
        "correct that interaction in the YAML, or re-record the test; if the YAML is what vcrpy wrote, this is a "
        "bug in vcr-transport import: please report it with the interaction (credentials removed)",
    )
