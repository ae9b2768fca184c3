"""A cassette as one self-contained HTML page a reviewer reads at a glance.

- **The overview first**: one row per call (index, method, path, model, what tells it from the calls beside it
  (``call_label``: the first words of its system prompt, else of its last user message, and the tools its
  reply calls), status, outcome, duration, tokens in and out, size, a bar of its duration against the longest
  call's); a click (or Enter) opens the call's card below its row.
- **The card** shows what is new in this call: the messages beyond those the previous call sent already
  (an agent loop resends its history), the earlier ones folded; the reply, headers and bodies folded in
  ``<details>``, a timeline of each stream's chunk arrivals, images as images and multipart parts as parts.
- **Removed secrets**: the expected removals (a credential header) in a quiet grey, a removal inside a body
  or a message in red. Identifiers (roles, tool names) are shown as written.
- **A B** (``show --html A B``): B's calls and the table of what changed from A; the page opens on the
  changed calls, and each row of the table links to its call.
- ``#call-N`` links open call N; ``j``/``k`` go to the next and previous call, ``Enter`` opens or folds it.

The page loads nothing from the network (its Content-Security-Policy forbids it): the calls are embedded
as JSON and the script renders the overview 100 rows at a time and a card when it is opened, so a cassette of
10,000 calls stays usable.
"""

from __future__ import annotations

import base64
import html
import json
from typing import Any
from urllib.parse import urlsplit

from .._core.format._bodies import DecodeBudget
from .._core.format._format import Cassette
from .._core.rules._redaction import PLACEHOLDER
from .._core.views._conversation import Message, ToolCall, call_label
from .._core.views._view import NOT_JSON, CallView, call_view
from .._display import shorten, visible, visible_json
from ._diff import compared_calls

__all__ = ["html_page"]

MAX_TEXT = 20_000  # characters of one body or text shown; the rest is counted, not embedded
MAX_STREAM_EVENTS = 500  # events of one stream listed; the timeline shows every chunk
MAX_IMAGE = 2_000_000  # characters of one image's data: URL embedded; a larger image is named, not shown
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n… ({len(text) - MAX_TEXT} more characters, see vcr-transport show)"


def _tool(call: ToolCall) -> str:
    return _cut(f"{call.name}({call.arguments})")


def _pretty(value: Any) -> str:
    return _cut(json.dumps(value, indent=2, ensure_ascii=False))


def _images(value: Any, found: list[str]) -> list[str]:
    """The images a JSON body carries, as data: URLs: ``data:image/…;base64,`` strings (a request's
    image parts) and ``b64_json`` values (an image API's answer)."""
    if isinstance(value, str):
        if value.startswith("data:image/") and ";base64," in value[:64] and len(value) <= MAX_IMAGE:
            found.append(value)
    elif isinstance(value, dict):
        _images_of_fields(value, found)
    elif isinstance(value, list):
        for item in value:
            _images(item, found)
    return found


def _images_of_fields(value: dict[Any, Any], found: list[str]) -> None:
    """``_images`` of a JSON object: a ``b64_json`` value is an image, any other field is searched."""
    for key, item in value.items():
        if key == "b64_json" and isinstance(item, str) and len(item) <= MAX_IMAGE:
            found.append("data:image/png;base64," + item)
        else:
            _images(item, found)


def _image_url(content_type: str, data: bytes) -> str:
    """An image's ``data:`` URL, when its type is one the page shows and it is no larger than ``MAX_IMAGE``;
    else empty."""
    if content_type in _IMAGE_TYPES and len(data) * 4 // 3 <= MAX_IMAGE:
        return f"data:{content_type};base64," + base64.b64encode(data).decode("ascii")
    return ""


def _request_body(view: CallView) -> str:
    body = view.request_body
    if body is None:
        return ""
    if view.parts is not None:
        return ""  # shown as its parts
    return _pretty(body["json"]) if body.get("json") is not None else _cut(str(next(iter(body.values()))))


def _parts(view: CallView) -> list[list[Any]]:
    """Each multipart part: name, filename, content type, size, and its text, or an image's data: URL."""
    shown: list[list[Any]] = []
    for part in view.parts or []:
        image = _image_url(part.content_type, part.data)
        text = _cut(part.text) if part.text is not None and part.filename is None else ""
        shown.append([part.name or "", part.filename or "", part.content_type, len(part.data), text, image])
    return shown


def _response(view: CallView) -> dict[str, Any]:
    """What the page shows of a response: the reply, the chunks' times, and the stream's events or the body."""
    data: dict[str, Any] = {
        "text": _cut(view.reply.text),
        "tc": [_tool(t) for t in view.reply.tool_calls],
        "t": list(view.chunk_times),
        "n": view.chunk_count,
        **_response_body(view),
    }
    if view.json is not NOT_JSON:
        data["rimgs"] = _images(view.json, [])
    return data


def _response_body(view: CallView) -> dict[str, Any]:
    """What the page shows of a response's body: a WebSocket session's messages or a stream's events
    (``ev``, and how many: ``evn``), an image (``rimg``), or the body as text (``pb``)."""
    stream, body = view.readable_stream, view.reply_body
    if view.close is not None:  # a WebSocket session: its messages shown as the stream's events are
        return {
            "ev": view.message_texts()[:MAX_STREAM_EVENTS] + [f"closed {view.closed}"],
            "evn": len(view.websocket_messages) + 1,
        }
    if stream is not None:
        return {"ev": [_cut(event.raw) for event in stream[:MAX_STREAM_EVENTS]], "evn": len(stream)}
    if view.binary and (image := _image_url(view.content_type, view.body)):
        return {"rimg": image}
    if isinstance(body, dict | list):
        return {"pb": _pretty(body)}
    return {"pb": _cut(str(body))} if body is not None else {}


def _message(message: Message) -> list[Any]:
    return [message.role, _cut(message.text), [_tool(t) for t in message.tool_calls]]


def call_data(view: CallView) -> dict[str, Any]:
    """What the page shows of one call, in short keys (the page embeds thousands of them). ``xh``: how many
    placeholders of removed secrets its headers show (expected: the credential), ``xb``: its bodies."""
    data: dict[str, Any] = {
        "i": view.index,
        "m": view.method,
        "u": view.url,
        "p": urlsplit(view.url).path or "/",
        "mdl": view.model,
        "lbl": call_label(view.messages, view.reply),
        "s": view.status,
        "o": view.outcome,
        "own": view.owner,
        "e": view.error if view.outcome == "error" else "",
        "d": view.duration,
        "ti": view.reply.input_tokens,
        "to": view.reply.output_tokens,
        "sz": len(view.body),
        "qh": view.request_headers,
        "ph": view.response_headers,
        "msgs": [_message(m) for m in view.messages],
        "tools": view.tools,
        "qb": _request_body(view),
        "parts": _parts(view),
        "imgs": _images(view.request_json, []),
    }
    if view.status is not None:
        data.update(_response(view))
    data["xh"] = json.dumps([data["qh"], data["ph"]], ensure_ascii=False).count(PLACEHOLDER)
    # The messages and the reply are read from the bodies: counted there once, not twice.
    bodies = [view.request_body, view.text if view.status is not None else ""]
    data["xb"] = json.dumps(bodies, ensure_ascii=False).count(PLACEHOLDER)
    return data


def _with_history(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each call's ``old``: how many of its first messages the call before it sent already (the card folds
    them, and shows what is new)."""
    previous: list[Any] = []
    for data in calls:
        messages = data["msgs"]
        same = 0
        while same < min(len(messages), len(previous)) and messages[same][:2] == previous[same][:2]:
            same += 1
        data["old"] = same
        previous = messages
    return calls


def _embedded(value: Any) -> str:
    """JSON that can sit inside a <script> element: no ``</`` or ``<!--`` can end or confuse it, and no control
    or bidi character is raw in it (``visible_json``: a page written to a terminal is safe to show)."""
    text = visible_json(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    return text.replace("<", "\\u003c")


def html_page(cassette: Cassette, other: Cassette | None = None) -> str:
    """The page for ``cassette``; with ``other``, the page shows ``other``'s calls and how they differ from
    ``cassette``'s (``show --html A B``: what changed from A to B)."""
    shown = other if other is not None else cassette
    differences: list[list[Any]] | None = None
    if other is None:
        budget = DecodeBudget()  # the file's bodies, decoded in all
        calls = [call_data(call_view(call, budget)) for call in cassette.calls]
    else:
        calls, differences = [], []
        for compared in compared_calls(cassette, other):
            differences += [
                [compared.index, d.path, shorten(d.a, 300), shorten(d.b, 300), d.kind] for d in compared.differences
            ]
            if compared.b is not None:
                calls.append(call_data(compared.b))
    data = {
        "title": shown.path,
        "base": cassette.path if other is not None else None,
        "header": shown.header,
        "placeholder": PLACEHOLDER,
        "calls": _with_history(calls),
        "diffs": differences,
    }
    title = html.escape(visible(f"{shown.path}: {len(shown.calls)} calls"))
    return _TEMPLATE.replace("__TITLE__", title).replace("__DATA__", _embedded(data))


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
      content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
header { background: #1d2330; color: #fff; padding: 12px 20px; }
header h1 { font-size: 17px; margin: 0 0 4px; word-break: break-all; }
header .meta { color: #b8c0d0; font-size: 12px; }
main { max-width: 1300px; margin: 0 auto; padding: 12px 20px 40px; }
.pager { display: flex; gap: 8px; align-items: center; margin: 10px 0; flex-wrap: wrap; }
.pager button { padding: 4px 10px; }
.pager input[type=search] { flex: 1; min-width: 200px; padding: 4px 8px; }
.keys { color: #5b6475; font-size: 12px; }
table.overview { border-collapse: collapse; width: 100%; background: #fff; font-size: 13px; }
.overview th { text-align: left; font-weight: 600; color: #5b6475; border-bottom: 2px solid #d8dce3; padding: 4px 6px;
  position: sticky; top: 0; background: #fff; }
.overview td { border-bottom: 1px solid #eceef2; padding: 3px 6px; vertical-align: middle; }
.overview tr.row { cursor: pointer; } .overview tr.row:hover { background: #f3f6fb; }
.overview tr.row.sel { outline: 2px solid #2f6fd6; outline-offset: -2px; }
.overview tr.row.changed td:first-child { border-left: 4px solid #d9822b; }
.overview td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.overview td.path { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
.overview td.mdl { font-family: ui-monospace, monospace; font-size: 12px; }
.overview td.lbl { font-size: 12px; color: #3b4a66; word-break: break-word; }
.bar { width: 120px; height: 8px; background: #eceef2; border-radius: 4px; overflow: hidden; }
.bar span { display: block; height: 100%; background: #2f6fd6; }
tr.detail > td { padding: 0 0 0 18px; background: #f4f5f7; }
.call { background: #fff; border: 1px solid #d8dce3; border-radius: 8px; margin: 8px 0 12px; padding: 10px 14px; }
.call.changed { border-left: 4px solid #d9822b; }
.line { display: flex; gap: 8px; align-items: baseline; flex-wrap: wrap; }
.idx { font-weight: 600; color: #5b6475; }
.method { font-weight: 700; }
.url { font-family: ui-monospace, monospace; font-size: 12.5px; word-break: break-all; }
.badge { border-radius: 10px; padding: 0 8px; font-size: 12px; font-weight: 600; color: #fff; white-space: nowrap; }
.ok { background: #2e8b57; } .warn { background: #c7861a; } .bad { background: #c0392b; }
.info { background: #5b6475; } .chg { background: #d9822b; } .quiet { background: #e3e6eb; color: #5b6475; }
.msg { margin: 6px 0; padding: 6px 10px; border-radius: 6px; white-space: pre-wrap; word-break: break-word; }
.role { font-size: 11px; font-weight: 700; color: #5b6475; display: block; }
.user { background: #eef4ff; } .system { background: #f3f0ff; } .assistant, .model { background: #f1f8f1; }
.tool { background: #fdf6e8; } .reply { background: #e7f5ea; border: 1px solid #b9dfc2; }
.toolcall { font-family: ui-monospace, monospace; font-size: 12.5px; background: #fff3d6; padding: 2px 6px;
  border-radius: 4px; display: inline-block; margin: 2px 0; }
mark.secret { background: #ffd6d6; color: #8b0000; font-weight: 600; border-radius: 3px; padding: 0 2px; }
mark.secret.expected { background: #eceef2; color: #5b6475; font-weight: 400; }
details { margin: 6px 0; } summary { cursor: pointer; color: #3b4a66; }
pre { background: #f7f8fa; border: 1px solid #e3e6eb; padding: 8px; overflow: auto; max-height: 420px;
  font-size: 12px; margin: 4px 0; white-space: pre-wrap; word-break: break-word; }
table.h { font-family: ui-monospace, monospace; font-size: 12px; border-collapse: collapse; }
table.h td { padding: 1px 8px 1px 0; vertical-align: top; word-break: break-all; }
table.parts { font-size: 12.5px; border-collapse: collapse; margin: 4px 0; }
table.parts td, table.parts th { border: 1px solid #e3e6eb; padding: 2px 6px; text-align: left; vertical-align: top; }
img.shown { max-width: 320px; max-height: 240px; border: 1px solid #d8dce3; border-radius: 4px; display: block;
  margin: 4px 0; }
.timeline { margin: 6px 0; } .timeline svg { display: block; max-width: 100%; }
table.difftable { border-collapse: collapse; width: 100%; font-size: 12.5px; background: #fff; margin: 6px 0; }
.difftable td, .difftable th { border: 1px solid #e3e6eb; padding: 3px 6px; text-align: left; vertical-align: top;
  font-family: ui-monospace, monospace; word-break: break-word; }
.difftable td.n { white-space: nowrap; } .difftable .a { background: #ffecec; } .difftable .b { background: #eaffea; }
.difftable tr.minor td { color: #5b6475; }
.diffs h2 { font-size: 15px; word-break: break-all; }
.empty { color: #5b6475; font-style: italic; }
</style>
</head>
<body>
<header><h1 id="title"></h1><div class="meta" id="meta"></div></header>
<main>
<section class="diffs" id="diffs"></section>
<div class="pager" id="pager">
  <button id="prev" type="button">&larr; previous</button>
  <span id="where"></span>
  <button id="next" type="button">next &rarr;</button>
  <input id="filter" type="search" placeholder="filter calls by URL, model, message or reply text">
  <label id="changed-only-label" hidden><input id="changed-only" type="checkbox"> changed calls only</label>
  <span class="keys">j / k: next / previous call &middot; Enter: open or fold</span>
</div>
<table class="overview" id="overview">
<thead><tr><th>#</th><th>method</th><th>path</th><th>model</th><th>prompt -&gt; tool</th><th>status</th><th>outcome</th>
<th>duration</th><th>tokens in</th><th>tokens out</th><th>size</th><th>time</th></tr></thead>
<tbody id="rows"></tbody>
</table>
</main>
<script type="application/json" id="data">__DATA__</script>
<script>
"use strict";
const STARTED = performance.now();
const DATA = JSON.parse(document.getElementById("data").textContent);
const PAGE = 100;
const COLUMNS = document.querySelectorAll("#overview thead th").length;
let page = 0;
let visible = DATA.calls;
let selected = -1;  // position in visible
const opened = new Set();  // call indexes whose card is open
const byIndex = new Map(DATA.calls.map(c => [c.i, c]));
const changed = new Map();
for (const d of DATA.diffs || []) {
  if (!changed.has(d[0])) changed.set(d[0], []);
  changed.get(d[0]).push(d);
}
const longest = Math.max(0, ...DATA.calls.map(c => c.d || 0));

function el(tag, cls, text, expected) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) withSecrets(node, String(text), expected);
  return node;
}

// Text with every removed-secret placeholder marked: grey where a removal is expected (a credential header),
// red elsewhere (inside a body or a message); never parsed as HTML.
function withSecrets(node, text, expected) {
  const parts = text.split(DATA.placeholder);
  parts.forEach((part, n) => {
    if (n) node.appendChild(el("mark", "secret" + (expected ? " expected" : ""), null)).textContent = DATA.placeholder;
    if (part) node.appendChild(document.createTextNode(part));
  });
  return node;
}

function badge(text, kind) { return el("span", "badge " + kind, text); }

function statusKind(s) { return s === null ? "bad" : s < 300 ? "ok" : s < 500 ? "warn" : "bad"; }

function seconds(d) {
  if (d === null || d === undefined) return "";
  return d < 1 ? (d * 1000).toFixed(0) + " ms" : d.toFixed(2) + " s";
}

function bytes(n) {
  return n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KB" : (n / 1048576).toFixed(1) + " MB";
}

function headers(title, pairs) {
  const box = el("details");
  box.appendChild(el("summary", null, title + " (" + pairs.length + ")"));
  const table = el("table", "h");
  for (const [name, value] of pairs) {
    const row = table.insertRow();
    row.appendChild(el("td", null, name));
    row.appendChild(el("td", null, value, true));
  }
  box.appendChild(table);
  return box;
}

function folded(title, text, open) {
  const box = el("details");
  if (open) box.open = true;
  box.appendChild(el("summary", null, title));
  box.appendChild(el("pre", null, text));
  return box;
}

function message(role, text, toolCalls, extra) {
  const box = el("div", "msg " + role + (extra ? " " + extra : ""));
  box.appendChild(el("span", "role", role));
  if (text) box.appendChild(withSecrets(document.createElement("span"), text));
  for (const t of toolCalls) {
    box.appendChild(document.createElement("br"));
    box.appendChild(el("span", "toolcall", "\\u2192 " + t));
  }
  return box;
}

function image(url, what) {
  const img = el("img", "shown");
  img.src = url;
  img.alt = what;
  return img;
}

function parts(rows) {
  const table = el("table", "parts");
  const head = table.insertRow();
  for (const h of ["part", "filename", "type", "size", "value"]) head.appendChild(el("th", null, h));
  for (const [name, filename, type, size, text, img] of rows) {
    const row = table.insertRow();
    row.className = "part";
    row.appendChild(el("td", null, name));
    row.appendChild(el("td", null, filename));
    row.appendChild(el("td", null, type));
    row.appendChild(el("td", null, bytes(size)));
    const value = el("td", null, text);
    if (img) value.appendChild(image(img, filename || name));
    row.appendChild(value);
  }
  return table;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const k in attrs) node.setAttribute(k, attrs[k]);
  return node;
}

// One tick per chunk at the time it arrived (the event's t), on an axis from 0 to the last chunk.
function timeline(times) {
  const box = el("div", "timeline");
  const last = times.length ? times[times.length - 1] : 0;
  const width = 640, left = 10, right = 10, span = width - left - right;
  const chart = svg("svg", {width: width, height: 46, viewBox: "0 0 " + width + " 46", role: "img",
    "aria-label": "chunk arrivals: " + times.length + " chunks over " + last.toFixed(3) + " s"});
  chart.appendChild(svg("line", {x1: left, y1: 24, x2: width - right, y2: 24, stroke: "#9aa3b5"}));
  times.forEach((t, n) => {
    const x = left + (last > 0 ? (t / last) * span : 0);
    const tick = svg("rect", {x: x - 1, y: 12, width: 2, height: 24, fill: "#2f6fd6", class: "tick"});
    tick.appendChild(svg("title", {})).textContent = "chunk " + n + " at +" + t.toFixed(3) + " s";
    chart.appendChild(tick);
  });
  const label = svg("text", {x: left, y: 46, "font-size": 10, fill: "#5b6475"});
  label.textContent = "0 s";
  chart.appendChild(label);
  const end = svg("text", {x: width - right, y: 46, "font-size": 10, fill: "#5b6475", "text-anchor": "end"});
  end.textContent = "+" + last.toFixed(3) + " s";
  chart.appendChild(end);
  box.appendChild(el("div", "role", "timeline: " + times.length + " chunks, first at +"
    + (times.length ? times[0].toFixed(3) : "0") + " s, last at +" + last.toFixed(3) + " s"));
  box.appendChild(chart);
  return box;
}

function diffTable(rows, withCall) {
  const table = el("table", "difftable");
  const head = table.insertRow();
  for (const h of (withCall ? ["call"] : []).concat(["field", "before", "after"])) head.appendChild(el("th", null, h));
  for (const [i, path, a, b, kind] of rows) {
    const row = table.insertRow();
    if (kind === "padding" || kind === "whitespace") row.className = "minor";
    if (withCall) {
      const cell = el("td", "n");
      const link = el("a", null, "#" + i);
      link.href = "#call-" + i;
      cell.appendChild(link);
      row.appendChild(cell);
    }
    row.appendChild(el("td", "n", path + (kind === "padding" || kind === "whitespace" ? " (" + kind + " only)" : "")));
    row.appendChild(el("td", "a", a));
    row.appendChild(el("td", "b", b));
  }
  return table;
}

function card(c) {
  const box = el("article", "call" + (changed.has(c.i) ? " changed" : ""));
  box.id = "call-" + c.i;
  const line = el("div", "line");
  line.appendChild(el("span", "idx", "#" + c.i));
  line.appendChild(el("span", "method", c.m));
  line.appendChild(el("span", "url", c.u));
  if (c.mdl) line.appendChild(badge(c.mdl, "info"));
  if (c.own) line.appendChild(badge("recorded by " + c.own, "quiet"));
  if (c.xh) line.appendChild(badge(c.xh + " removed from headers", "quiet"));
  if (c.xb) line.appendChild(el("mark", "secret", c.xb + (c.xb > 1 ? " secrets" : " secret") + " removed from bodies"));
  if (changed.has(c.i)) line.appendChild(badge(changed.get(c.i).length + " changed", "chg"));
  box.appendChild(line);
  if (changed.has(c.i)) box.appendChild(diffTable(changed.get(c.i), false));
  if (c.old) {
    const earlier = el("details", "earlier");
    const what = c.old + " earlier message" + (c.old > 1 ? "s" : "") + ", as the call before sent them";
    earlier.appendChild(el("summary", null, what));
    for (const [role, text, calls] of c.msgs.slice(0, c.old)) earlier.appendChild(message(role, text, calls));
    box.appendChild(earlier);
  }
  for (const [role, text, calls] of c.msgs.slice(c.old)) box.appendChild(message(role, text, calls, "new"));
  for (const url of c.imgs) box.appendChild(image(url, "an image the request sends"));
  if (c.tools.length) box.appendChild(el("div", "tools", "tools: " + c.tools.join(", ")));
  if (c.parts.length) box.appendChild(parts(c.parts));
  box.appendChild(headers("request headers", c.qh));
  if (c.qb) box.appendChild(folded("request body", c.qb, !c.msgs.length && !c.parts.length));
  if (c.s === null) {
    box.appendChild(message("error", c.e, [], "reply"));
    return box;
  }
  if (c.text || c.tc.length) box.appendChild(message("reply", c.text, c.tc, "reply"));
  for (const url of (c.rimgs || [])) box.appendChild(image(url, "an image the response sends"));
  if (c.rimg) box.appendChild(image(c.rimg, "the response body"));
  if (c.e) box.appendChild(message("error", c.e, [], "reply"));
  box.appendChild(headers("response headers", c.ph));
  if (c.ev) {
    box.appendChild(timeline(c.t));
    const more = c.evn > c.ev.length ? " (first " + c.ev.length + ")" : "";
    box.appendChild(folded("stream: " + c.evn + " events in " + c.n + " chunks" + more, c.ev.join("\\n"), false));
  } else if (c.pb !== undefined) {
    box.appendChild(folded("response body", c.pb, !(c.text || c.tc.length)));
  }
  return box;
}

function cell(row, cls, text) { const td = el("td", cls, text); row.appendChild(td); return td; }

function overviewRow(c, position) {
  const row = el("tr", "row" + (changed.has(c.i) ? " changed" : "") + (position === selected ? " sel" : ""));
  row.id = "row-" + c.i;
  row.dataset.i = c.i;
  cell(row, "num", String(c.i));
  cell(row, null, c.m);
  cell(row, "path", c.p);
  cell(row, "mdl", c.mdl);
  cell(row, "lbl", c.lbl);
  cell(row, null).appendChild(badge(c.s === null ? "none" : String(c.s), statusKind(c.s)));
  cell(row, null).appendChild(badge(c.o || "unfinished", c.o === "complete" ? "ok" : c.o === "error" ? "bad" : "warn"));
  cell(row, "num", seconds(c.d));
  cell(row, "num", c.ti === null || c.ti === undefined ? "" : String(c.ti));
  cell(row, "num", c.to === null || c.to === undefined ? "" : String(c.to));
  cell(row, "num", c.s === null ? "" : bytes(c.sz));
  const bar = el("div", "bar");
  bar.title = seconds(c.d);
  const fill = bar.appendChild(el("span"));
  fill.style.width = (longest > 0 && c.d ? Math.max(2, 100 * c.d / longest) : 0) + "%";
  cell(row, null).appendChild(bar);
  row.onclick = () => { selected = position; toggle(c.i); };
  return row;
}

function detailRow(c) {
  const row = el("tr", "detail");
  row.id = "detail-" + c.i;
  const td = el("td");
  td.colSpan = COLUMNS;
  td.appendChild(card(c));
  row.appendChild(td);
  return row;
}

function render() {
  const pages = Math.max(1, Math.ceil(visible.length / PAGE));
  page = Math.min(Math.max(page, 0), pages - 1);
  const body = document.getElementById("rows");
  const shown = visible.slice(page * PAGE, (page + 1) * PAGE);
  const rows = document.createDocumentFragment();
  shown.forEach((c, n) => {
    rows.appendChild(overviewRow(c, page * PAGE + n));
    if (opened.has(c.i)) rows.appendChild(detailRow(c));
  });
  body.replaceChildren(rows);
  if (!shown.length) {
    const row = body.insertRow();
    const td = cell(row, "empty", "no calls");
    td.colSpan = COLUMNS;
  }
  document.getElementById("where").textContent = "page " + (page + 1) + " of " + pages + " \\u00b7 "
    + visible.length + " of " + DATA.calls.length + " calls";
  document.getElementById("prev").disabled = page === 0;
  document.getElementById("next").disabled = page >= pages - 1;
}

function toggle(i) {
  if (opened.has(i)) opened.delete(i); else opened.add(i);
  render();
}

// Open call i (a #call-N link, j/k): on its page, its card open, scrolled to.
function show(i, fromKeys) {
  if (!byIndex.has(i)) return;
  let position = visible.findIndex(c => c.i === i);
  if (position < 0) {  // filtered out: show every call again
    document.getElementById("filter").value = "";
    document.getElementById("changed-only").checked = false;
    visible = DATA.calls;
    position = visible.findIndex(c => c.i === i);
  }
  if (fromKeys && selected >= 0 && visible[selected]) opened.delete(visible[selected].i);
  selected = position;
  page = Math.floor(position / PAGE);
  opened.add(i);
  render();
  document.getElementById("row-" + i).scrollIntoView({block: "start"});
}

function refilter() {
  const words = document.getElementById("filter").value.toLowerCase();
  const only = document.getElementById("changed-only").checked;
  visible = DATA.calls.filter(c => (!only || changed.has(c.i)) && (!words
    || [c.u, c.mdl, c.lbl, c.text || ""].concat(c.msgs.map(m => m[1])).join(" ").toLowerCase().includes(words)));
  page = 0;
  selected = -1;
  render();
}

function fromHash() {
  const found = /^#call-(\\d+)$/.exec(location.hash);
  if (found) show(Number(found[1]), false);
}

document.getElementById("title").textContent = DATA.title;
document.getElementById("meta").textContent = "format v" + DATA.header.format_version + " \\u00b7 "
  + DATA.calls.length + " calls" + (DATA.header.created ? " \\u00b7 recorded " + DATA.header.created : "");
if (DATA.diffs) {
  const section = document.getElementById("diffs");
  section.appendChild(el("h2", null, DATA.diffs.length + " difference(s) from " + DATA.base + " to " + DATA.title));
  if (DATA.diffs.length) section.appendChild(diffTable(DATA.diffs.slice(0, 1000), true));
  document.getElementById("changed-only-label").hidden = false;
  if (changed.size) {  // open on the changed calls
    document.getElementById("changed-only").checked = true;
    visible = DATA.calls.filter(c => changed.has(c.i));
    for (const c of visible.slice(0, 20)) opened.add(c.i);
  }
}
document.getElementById("prev").onclick = () => { page--; render(); window.scrollTo(0, 0); };
document.getElementById("next").onclick = () => { page++; render(); window.scrollTo(0, 0); };
document.getElementById("filter").oninput = refilter;
document.getElementById("changed-only").onchange = refilter;
document.addEventListener("keydown", event => {
  if (event.target.closest && event.target.closest("input, textarea, select")) return;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "j" || event.key === "k") {
    const next = selected < 0 ? page * PAGE : selected + (event.key === "j" ? 1 : -1);
    if (next >= 0 && next < visible.length) {
      history.replaceState(null, "", "#call-" + visible[next].i);
      show(visible[next].i, true);
    }
  } else if (event.key === "Enter" && selected >= 0 && visible[selected]) {
    toggle(visible[selected].i);
  }
});
window.addEventListener("hashchange", fromHash);
render();
fromHash();
window.RENDERED_MS = performance.now() - STARTED;
</script>
</body>
</html>
"""
