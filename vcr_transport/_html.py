"""A cassette as one self-contained HTML page: each call as a conversation, status and outcome badges,
removed secrets highlighted, headers folded away, a timeline of each stream's chunk arrivals, and the
differences with a second cassette. The page loads nothing from the network (its Content-Security-Policy
forbids it): the calls are embedded as JSON and a little script renders them 50 at a time, so a cassette of
10,000 calls stays usable."""

from __future__ import annotations

import html
import json
from typing import Any

from ._core._conversation import ToolCall
from ._core._diff import compared_calls
from ._core._display import shorten
from ._core._format import Cassette
from ._core._redaction import PLACEHOLDER
from ._core._view import CallView, call_view

__all__ = ["html_page"]

MAX_TEXT = 20_000  # characters of one body or text shown; the rest is counted, not embedded
MAX_STREAM_EVENTS = 500  # events of one stream listed; the timeline shows every chunk


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n… ({len(text) - MAX_TEXT} more characters, see vcr-transport show)"


def _tool(call: ToolCall) -> str:
    return _cut(f"{call.name}({call.arguments})")


def _pretty(value: Any) -> str:
    return _cut(json.dumps(value, indent=2, ensure_ascii=False))


def _request_body(view: CallView) -> str:
    body = view.request_body
    if body is None:
        return ""
    return _pretty(body["json"]) if body.get("json") is not None else _cut(str(next(iter(body.values()))))


def _response(view: CallView) -> dict[str, Any]:
    """What the page shows of a response: the reply, the chunks' times, and the stream's events or the body."""
    data: dict[str, Any] = {
        "text": _cut(view.reply.text),
        "tc": [_tool(t) for t in view.reply.tool_calls],
        "t": list(view.chunk_times),
        "n": view.chunk_count,
    }
    stream, body = view.readable_stream, view.reply_body
    if stream is not None:
        data["ev"] = [_cut(event.raw) for event in stream[:MAX_STREAM_EVENTS]]
        data["evn"] = len(stream)
    elif isinstance(body, dict | list):
        data["pb"] = _pretty(body)
    elif body is not None:
        data["pb"] = _cut(str(body))
    return data


def call_data(view: CallView) -> dict[str, Any]:
    """What the page shows of one call, in short keys (the page embeds thousands of them). ``x``: how many
    placeholders of removed secrets it shows."""
    data: dict[str, Any] = {
        "i": view.index,
        "m": view.method,
        "u": view.url,
        "s": view.status,
        "o": view.outcome,
        "e": view.error if view.outcome == "error" else "",
        "qh": view.request_headers,
        "ph": view.response_headers,
        "msgs": [[m.role, _cut(m.text), [_tool(t) for t in m.tool_calls]] for m in view.messages],
        "tools": view.tools,
        "qb": _request_body(view),
    }
    if view.status is not None:
        data.update(_response(view))
    data["x"] = json.dumps(data, ensure_ascii=False).count(PLACEHOLDER)
    return data


def _embedded(value: Any) -> str:
    """JSON that can sit inside a <script> element: no ``</`` or ``<!--`` can end or confuse it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def html_page(cassette: Cassette, other: Cassette | None = None) -> str:
    """The page for ``cassette``; with ``other``, the page shows ``other``'s calls and how they differ from
    ``cassette``'s (``show --html A B``: what changed from A to B)."""
    shown = other if other is not None else cassette
    differences: list[list[Any]] | None = None
    if other is None:
        calls = [call_data(call_view(call)) for call in cassette.calls]
    else:
        calls, differences = [], []
        for compared in compared_calls(cassette, other):
            differences += [
                [compared.index, d.path, shorten(d.a, 300), shorten(d.b, 300)] for d in compared.differences
            ]
            if compared.b is not None:
                calls.append(call_data(compared.b))
    data = {
        "title": shown.path,
        "base": cassette.path if other is not None else None,
        "header": shown.header,
        "placeholder": PLACEHOLDER,
        "calls": calls,
        "diffs": differences,
    }
    title = html.escape(f"{shown.path}: {len(shown.calls)} calls")
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
main { max-width: 1100px; margin: 0 auto; padding: 12px 20px 40px; }
.pager { display: flex; gap: 8px; align-items: center; margin: 10px 0; flex-wrap: wrap; }
.pager button { padding: 4px 10px; }
.pager input[type=search] { flex: 1; min-width: 200px; padding: 4px 8px; }
.call { background: #fff; border: 1px solid #d8dce3; border-radius: 8px; margin: 12px 0; padding: 10px 14px; }
.call.changed { border-left: 4px solid #d9822b; }
.line { display: flex; gap: 8px; align-items: baseline; flex-wrap: wrap; }
.idx { font-weight: 600; color: #5b6475; }
.method { font-weight: 700; }
.url { font-family: ui-monospace, monospace; font-size: 12.5px; word-break: break-all; }
.badge { border-radius: 10px; padding: 0 8px; font-size: 12px; font-weight: 600; color: #fff; }
.ok { background: #2e8b57; } .warn { background: #c7861a; } .bad { background: #c0392b; }
.info { background: #5b6475; } .chg { background: #d9822b; }
.msg { margin: 6px 0; padding: 6px 10px; border-radius: 6px; white-space: pre-wrap; word-break: break-word; }
.role { font-size: 11px; font-weight: 700; text-transform: uppercase; color: #5b6475; display: block; }
.user { background: #eef4ff; } .system { background: #f3f0ff; } .assistant, .model { background: #f1f8f1; }
.tool { background: #fdf6e8; } .reply { background: #e7f5ea; border: 1px solid #b9dfc2; }
.toolcall { font-family: ui-monospace, monospace; font-size: 12.5px; background: #fff3d6; padding: 2px 6px;
  border-radius: 4px; display: inline-block; margin: 2px 0; }
mark.secret { background: #ffd6d6; color: #8b0000; font-weight: 600; border-radius: 3px; padding: 0 2px; }
details { margin: 6px 0; } summary { cursor: pointer; color: #3b4a66; }
pre { background: #f7f8fa; border: 1px solid #e3e6eb; padding: 8px; overflow: auto; max-height: 420px;
  font-size: 12px; margin: 4px 0; white-space: pre-wrap; word-break: break-word; }
table.h { font-family: ui-monospace, monospace; font-size: 12px; border-collapse: collapse; }
table.h td { padding: 1px 8px 1px 0; vertical-align: top; word-break: break-all; }
.timeline { margin: 6px 0; } .timeline svg { display: block; max-width: 100%; }
table.difftable { border-collapse: collapse; width: 100%; font-size: 12.5px; background: #fff; margin: 6px 0; }
.difftable td, .difftable th { border: 1px solid #e3e6eb; padding: 3px 6px; text-align: left; vertical-align: top;
  font-family: ui-monospace, monospace; word-break: break-word; }
.difftable td.n { white-space: nowrap; } .difftable .a { background: #ffecec; } .difftable .b { background: #eaffea; }
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
  <input id="filter" type="search" placeholder="filter calls by URL, message or reply text">
  <label id="changed-only-label" hidden><input id="changed-only" type="checkbox"> changed calls only</label>
</div>
<div id="calls"></div>
</main>
<script type="application/json" id="data">__DATA__</script>
<script>
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const PAGE = 50;
let page = 0;
let visible = DATA.calls;
const changed = new Map();
for (const d of DATA.diffs || []) {
  if (!changed.has(d[0])) changed.set(d[0], []);
  changed.get(d[0]).push(d);
}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) withSecrets(node, String(text));
  return node;
}

// Text with every removed-secret placeholder highlighted; never parsed as HTML.
function withSecrets(node, text) {
  const parts = text.split(DATA.placeholder);
  parts.forEach((part, n) => {
    if (n) node.appendChild(el("mark", "secret", null)).textContent = DATA.placeholder;
    if (part) node.appendChild(document.createTextNode(part));
  });
  return node;
}

function badge(text, kind) { return el("span", "badge " + kind, text); }

function statusKind(s) { return s === null ? "bad" : s < 300 ? "ok" : s < 500 ? "warn" : "bad"; }

function headers(title, pairs) {
  const box = el("details");
  box.appendChild(el("summary", null, title + " (" + pairs.length + ")"));
  const table = el("table", "h");
  for (const [name, value] of pairs) {
    const row = table.insertRow();
    row.appendChild(el("td", null, name));
    row.appendChild(el("td", null, value));
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
  for (const [i, path, a, b] of rows) {
    const row = table.insertRow();
    if (withCall) row.appendChild(el("td", "n", String(i)));
    row.appendChild(el("td", "n", path));
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
  line.appendChild(badge(c.s === null ? "no response" : String(c.s), statusKind(c.s)));
  line.appendChild(badge(c.o || "unfinished", c.o === "complete" ? "ok" : c.o === "error" ? "bad" : "warn"));
  if (c.ev) line.appendChild(badge("stream", "info"));
  if (c.x) line.appendChild(el("mark", "secret", c.x + (c.x > 1 ? " secrets" : " secret") + " removed"));
  if (changed.has(c.i)) line.appendChild(badge(changed.get(c.i).length + " changed", "chg"));
  box.appendChild(line);
  if (changed.has(c.i)) box.appendChild(diffTable(changed.get(c.i), false));
  for (const [role, text, calls] of c.msgs) box.appendChild(message(role, text, calls));
  if (c.tools.length) box.appendChild(el("div", "role", "tools: " + c.tools.join(", ")));
  box.appendChild(headers("request headers", c.qh));
  if (c.qb) box.appendChild(folded("request body", c.qb, !c.msgs.length));
  if (c.s === null) {
    box.appendChild(message("error", c.e, [], "reply"));
    return box;
  }
  if (c.text || c.tc.length) box.appendChild(message("reply", c.text, c.tc, "reply"));
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

function render() {
  const pages = Math.max(1, Math.ceil(visible.length / PAGE));
  page = Math.min(Math.max(page, 0), pages - 1);
  const list = document.getElementById("calls");
  list.replaceChildren();
  const shown = visible.slice(page * PAGE, (page + 1) * PAGE);
  for (const c of shown) list.appendChild(card(c));
  if (!shown.length) list.appendChild(el("p", "empty", "no calls"));
  document.getElementById("where").textContent = "page " + (page + 1) + " of " + pages + " \\u00b7 "
    + visible.length + " of " + DATA.calls.length + " calls";
  document.getElementById("prev").disabled = page === 0;
  document.getElementById("next").disabled = page >= pages - 1;
}

function refilter() {
  const words = document.getElementById("filter").value.toLowerCase();
  const only = document.getElementById("changed-only").checked;
  visible = DATA.calls.filter(c => (!only || changed.has(c.i)) && (!words
    || (c.u + " " + (c.text || "") + " " + c.msgs.map(m => m[1]).join(" ")).toLowerCase().includes(words)));
  page = 0;
  render();
}

document.getElementById("title").textContent = DATA.title;
document.getElementById("meta").textContent = "format v" + DATA.header.format_version + " \\u00b7 "
  + DATA.calls.length + " calls" + (DATA.header.created ? " \\u00b7 recorded " + DATA.header.created : "");
if (DATA.diffs) {
  const section = document.getElementById("diffs");
  section.appendChild(el("h2", null, DATA.diffs.length + " difference(s) from " + DATA.base + " to " + DATA.title));
  if (DATA.diffs.length) section.appendChild(diffTable(DATA.diffs.slice(0, 1000), true));
  document.getElementById("changed-only-label").hidden = false;
}
document.getElementById("prev").onclick = () => { page--; render(); window.scrollTo(0, 0); };
document.getElementById("next").onclick = () => { page++; render(); window.scrollTo(0, 0); };
document.getElementById("filter").oninput = refilter;
document.getElementById("changed-only").onchange = refilter;
render();
</script>
</body>
</html>
"""
