"""A cassette as a HAR 1.2 log (``show --har FILE``), for browser devtools, Charles, Fiddler and HAR viewers. No
I/O: the CLI writes what ``har_log`` returns.

One entry per call, in the cassette's order, built from the call's view (``_core._view.CallView``):

- **Bodies as recorded.** The request's ``postData`` is its stored body (JSON written compactly, text as it is,
  base64 decoded as UTF-8 when it is text, else left as base64 in ``comment``; multipart parts also as
  ``params``). The response's ``content.text`` is the body with its content-encodings undone (as HAR wants
  it), base64 with ``encoding: "base64"`` when it is not UTF-8; ``bodySize`` is what came over the wire and
  ``content.compression`` the difference. Redacted values stay as the cassette holds them (``[secret removed]``).
- **Timings from the recording.** ``wait`` is the time to the first chunk, ``receive`` from it to the last;
  ``blocked``, ``dns``, ``connect`` and ``ssl`` are -1 (not recorded) and ``send`` 0. ``startedDateTime`` is
  the response's own ``Date`` less the wait, else the cassette's ``created`` time (HAR wants a wall clock;
  the cassette keeps offsets only).
- A call that got no response has status 0 and its error in ``response._error`` and ``comment``, as Chromium
  writes a failed request.
"""

from __future__ import annotations

import base64
import datetime
import email.utils
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .._core.format._bodies import DecodeBudget
from .._core.format._format import Cassette, RecordedCall
from .._core.views._review import Part
from .._core.views._view import CallView, call_view

__all__ = ["HAR_VERSION", "har_log"]

HAR_VERSION = "1.2"
_EPOCH = "1970-01-01T00:00:00.000Z"


def _pairs(headers: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in headers]


def _header(headers: Iterable[tuple[str, str]], wanted: str) -> str | None:
    return next((value for name, value in headers if name.lower() == wanted), None)


def _request_cookies(headers: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    cookies: list[dict[str, Any]] = []
    for name, value in headers:
        if name.lower() != "cookie":
            continue
        for piece in value.split(";"):
            key, equals, item = piece.strip().partition("=")
            if key and equals:
                cookies.append({"name": key, "value": item})
    return cookies


_COOKIE_FLAGS = {"path": "path", "domain": "domain", "expires": "expires"}


def _response_cookies(headers: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """Each ``Set-Cookie`` as HAR's cookie object: name, value, and path, domain, expires, httpOnly, secure
    when the header gives them."""
    cookies: list[dict[str, Any]] = []
    for name, value in headers:
        if name.lower() != "set-cookie":
            continue
        first, *attributes = value.split(";")
        key, _, item = first.strip().partition("=")
        cookie: dict[str, Any] = {"name": key, "value": item}
        for attribute in attributes:
            flag, _, setting = attribute.strip().partition("=")
            lower = flag.lower()
            if lower in _COOKIE_FLAGS:
                cookie[_COOKIE_FLAGS[lower]] = _expires(setting) if lower == "expires" else setting
            elif lower == "httponly":
                cookie["httpOnly"] = True
            elif lower == "secure":
                cookie["secure"] = True
        cookies.append(cookie)
    return cookies


def _expires(text: str) -> str:
    try:
        return _iso(email.utils.parsedate_to_datetime(text))
    except (TypeError, ValueError):
        return text


def _iso(moment: datetime.datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _post_data(view: CallView) -> dict[str, Any] | None:
    body = view.request_body
    if body is None:
        return None
    mime = _header(view.request_headers, "content-type") or ""
    data: dict[str, Any] = {"mimeType": mime, **_post_text(body)}
    if view.parts is not None:
        data["params"] = [_param(part) for part in view.parts]
    return data


def _post_text(body: dict[str, Any]) -> dict[str, Any]:
    """A request body as HAR's ``text``: JSON compact, text as it is, bytes as UTF-8 (or, when they are none,
    empty with a ``comment`` holding their base64)."""
    if "json" in body:
        return {"text": json.dumps(body["json"], separators=(",", ":"), ensure_ascii=False)}
    if "text" in body:
        return {"text": str(body["text"])}
    raw = base64.b64decode(str(body["base64"]))
    try:
        return {"text": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"text": "", "comment": f"binary body, {len(raw)} bytes, as base64: {body['base64']}"}


def _param(part: Part) -> dict[str, Any]:
    """A multipart part as HAR's ``params`` entry: its name, and its file name, type and text when it has them."""
    return {
        "name": part.name or "",
        **({"fileName": part.filename} if part.filename is not None else {}),
        **({"contentType": part.content_type} if part.content_type else {}),
        **({"value": part.text} if part.text is not None else {}),
    }


def _request(view: CallView) -> dict[str, Any]:
    post = _post_data(view)
    request: dict[str, Any] = {
        "method": view.method,
        "url": view.url,
        "httpVersion": view.http_version,
        "cookies": _request_cookies(view.request_headers),
        "headers": _pairs(view.request_headers),
        "queryString": [{"name": k, "value": v} for k, v in parse_qsl(urlsplit(view.url).query, True)],
        "headersSize": -1,
        "bodySize": len(post["text"].encode("utf-8")) if post is not None else 0,
    }
    if post is not None:
        request["postData"] = post
    return request


def _content(view: CallView, wire: int) -> dict[str, Any]:
    content: dict[str, Any] = {"size": len(view.body), "mimeType": view.content_type or "x-unknown"}
    if wire != len(view.body):
        content["compression"] = len(view.body) - wire
    if view.note:  # the body as stored, still encoded: the size HAR gives is the stored one
        content["comment"] = view.note
    if view.binary:
        content["text"], content["encoding"] = base64.b64encode(view.body).decode("ascii"), "base64"
    elif view.body:
        content["text"] = view.text
    return content


def _response(view: CallView, call: RecordedCall) -> dict[str, Any]:
    if view.status is None:
        return {
            "status": 0,
            "statusText": "",
            "httpVersion": "",
            "cookies": [],
            "headers": [],
            "content": {"size": 0, "mimeType": "x-unknown"},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": -1,
            "_error": view.error,
        }
    wire = sum(len(chunk) for chunk in call.events)
    return {
        "status": view.status,
        "statusText": "",
        "httpVersion": view.http_version,
        "cookies": _response_cookies(view.response_headers),
        "headers": _pairs(view.response_headers),
        "content": _content(view, wire),
        "redirectURL": _header(view.response_headers, "location") or "",
        "headersSize": -1,
        "bodySize": wire,
    }


def _started(view: CallView, created: str, wait: float) -> str:
    """When the call started: its response's ``Date`` less the wait, else the cassette's ``created``."""
    date = _header(view.response_headers, "date")
    if date:
        try:
            return _iso(email.utils.parsedate_to_datetime(date) - datetime.timedelta(seconds=wait))
        except (TypeError, ValueError):
            pass
    try:
        return _iso(datetime.datetime.fromisoformat(created))
    except ValueError:
        return _EPOCH


def _entry(call: RecordedCall, created: str, budget: DecodeBudget) -> dict[str, Any]:
    view = call_view(call, budget)
    times = view.chunk_times
    wait = times[0] if times else 0.0
    receive = times[-1] - times[0] if times else 0.0
    entry: dict[str, Any] = {
        "startedDateTime": _started(view, created, wait),
        "time": round((wait + receive) * 1000, 3),
        "request": _request(view),
        "response": _response(view, call),
        "cache": {},
        "timings": {
            "blocked": -1,
            "dns": -1,
            "connect": -1,
            "ssl": -1,
            "send": 0,
            "wait": round(wait * 1000, 3),
            "receive": round(receive * 1000, 3),
        },
        "comment": f"call {view.index}, outcome {view.outcome or 'unfinished'}"
        + (f": {view.error}" if view.error and view.outcome != "complete" else ""),
    }
    return entry


def har_log(cassette: Cassette, calls: Iterable[RecordedCall]) -> dict[str, Any]:
    """The HAR 1.2 document of ``calls`` (of ``cassette``): ``{"log": {version, creator, entries}}``."""
    from .._version import __version__

    created = str(cassette.header.get("created") or "")
    budget = DecodeBudget()  # the bodies of one document, decoded in all
    return {
        "log": {
            "version": HAR_VERSION,
            "creator": {"name": "vcr_transport", "version": __version__},
            "comment": f"from the cassette {cassette.path} (format v{cassette.header.get('format_version')})",
            "entries": [_entry(call, created, budget) for call in calls],
        }
    }
