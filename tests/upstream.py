"""A vendor-shaped HTTP server on 127.0.0.1 for the tests: real sockets, real chunked transfer.

A route answers a request with a Reply: status, headers and the body as a list of chunks, each written and
flushed separately, after the response headers the vendor really sends (``real_wire``: Cloudflare cookies,
HSTS, rate limits), optionally with a pause between them, cut off midway, or gzip-encoded (always, or
only when the request's accept-encoding allows gzip, as real vendors do).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from real_wire import vendor_of, with_real_headers


@dataclass
class Reply:
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)
    pause: float = 0.0
    cut_after: int | None = None  # drop the connection after this many chunks
    gzip: bool | Literal["if-accepted"] = False
    content_length: bool = False
    # The vendor's real response headers (cookies, HSTS...) go before the reply's own: see real_wire.
    real_headers: bool = True

    @classmethod
    def json(cls, obj: Any, status: int = 200, **kwargs: Any) -> Reply:
        body = json.dumps(obj).encode()
        headers = [("content-type", "application/json"), *kwargs.pop("headers", [])]
        return cls(status, headers, [body], content_length=True, **kwargs)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Route = Callable[[Received], Reply]


def split_bytes(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


def split_events(data: bytes) -> list[bytes]:
    """At SSE event boundaries, whatever the line ending."""
    separator = b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n\n"
    parts = data.split(separator)
    chunks = [part + separator for part in parts[:-1]]
    if parts[-1]:
        chunks.append(parts[-1])
    return chunks


class Upstream:
    """Routes are looked up by path prefix; a route list answers successive requests in turn."""

    def __init__(self) -> None:
        self.routes: dict[str, Route | list[Reply]] = {}
        self.received: list[Received] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                    body = self._read_chunked()
                received = Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                upstream.received.append(received)
                reply = upstream.reply_for(received)
                if reply.gzip == "if-accepted":
                    accepted = "gzip" in received.headers.get("accept-encoding", "").lower()
                    reply = dataclasses.replace(reply, gzip=accepted)
                self._send(reply, received.path, received.path.encode() + received.body)

            def _read_chunked(self) -> bytes:
                body = b""
                while size := int(self.rfile.readline().split(b";")[0], 16):
                    body += self.rfile.read(size)
                    self.rfile.readline()
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return body

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _handle

            def _send(self, reply: Reply, path: str, key: bytes) -> None:
                chunks = reply.chunks
                if reply.gzip:
                    chunks = split_bytes(gzip.compress(b"".join(chunks)), max(1, len(b"".join(chunks)) // 3))
                headers = reply.headers
                if reply.real_headers:  # the vendor's own Date and Server, not http.server's
                    self.send_response_only(reply.status)
                    headers = with_real_headers(headers, vendor_of(path), key, self.date_time_string())
                else:
                    self.send_response(reply.status)
                for name, value in headers:
                    self.send_header(name, value)
                if reply.gzip:
                    self.send_header("content-encoding", "gzip")
                if reply.content_length:
                    self.send_header("content-length", str(sum(map(len, chunks))))
                else:
                    self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                try:
                    for number, chunk in enumerate(chunks):
                        if reply.cut_after is not None and number >= reply.cut_after:
                            self.connection.shutdown(socket.SHUT_RDWR)
                            self.close_connection = True
                            return
                        if reply.pause and number:
                            time.sleep(reply.pause)
                        if reply.content_length:
                            self.wfile.write(chunk)
                        elif chunk:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    if not reply.content_length:
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def reply_for(self, received: Received) -> Reply:
        path = received.path.split("?")[0]
        for prefix in sorted(self.routes, key=len, reverse=True):
            if path.startswith(prefix):
                route = self.routes[prefix]
                if isinstance(route, list):
                    return route.pop(0) if len(route) > 1 else route[0]
                return route(received)
        return Reply.json({"error": {"message": f"no route for {path}"}}, status=404)

    def start(self) -> Upstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    """A loopback port with nothing listening: connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
