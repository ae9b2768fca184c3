"""A real MCP tool server on 127.0.0.1 for the tests: the ``mcp`` SDK's own server (``MCPServer``, named
``FastMCP`` before mcp 2) over streamable HTTP, run by uvicorn in a thread on a port of its own, and an MCP
client session against it (``mcp.client.streamable_http``, on httpx2).

Two tools, ``add`` and ``shout``. By default the server answers each POSTed request with an event stream
(``text/event-stream``) and notifications with an empty 202; ``json_response=True`` answers requests with
JSON. The client opens the GET event stream beside its POSTs after ``notifications/initialized`` and sends
a DELETE when the session closes.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import uvicorn
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer

__all__ = ["McpUpstream", "discover_session", "mcp_session"]


def _tools() -> MCPServer:
    server = MCPServer("tools")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        """The text in capitals."""
        return text.upper()

    return server


class McpUpstream:
    """The MCP server, started on a free loopback port (``url``) and stopped by ``stop``."""

    def __init__(self, *, json_response: bool = False) -> None:
        app = _tools().streamable_http_app(json_response=json_response)
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen()
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/mcp"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self._thread = threading.Thread(target=asyncio.run, args=(self._server.serve([self._socket]),), daemon=True)

    def start(self) -> McpUpstream:
        self._thread.start()
        while not self._server.started:  # uvicorn's own flag, set once it serves
            if not self._thread.is_alive():
                raise RuntimeError("the MCP server stopped while starting")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(30)
        self._socket.close()


async def mcp_session(url: str, *, together: bool = False, pause: float = 0.0, b: int = 3) -> dict[str, Any]:
    """One MCP session: initialize, list the tools, call ``add`` (2 and ``b``) and ``shout`` (one after the
    other, or ``together`` with asyncio.gather; ``pause`` seconds before each step), and what each gave as
    JSON."""
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        initialized = await session.initialize()
        await asyncio.sleep(pause)
        tools = await session.list_tools()
        await asyncio.sleep(pause)
        if together:
            added, shouted = await asyncio.gather(
                session.call_tool("add", {"a": 2, "b": b}), session.call_tool("shout", {"text": "hi"})
            )
        else:
            added = await session.call_tool("add", {"a": 2, "b": b})
            await asyncio.sleep(pause)
            shouted = await session.call_tool("shout", {"text": "hi"})
        return {
            "server": initialized.server_info.name,
            "tools": [tool.model_dump(mode="json") for tool in tools.tools],
            "add": added.model_dump(mode="json"),
            "shout": shouted.model_dump(mode="json"),
        }


async def discover_session(url: str) -> dict[str, Any]:
    """The same steps through ``mcp.Client``, which speaks MCP 2026-07-28 to a server that does: a
    ``server/discover`` POST instead of the handshake, then each request a POST of its own (no session id,
    no GET stream, no DELETE)."""
    async with Client(url) as client:
        tools = await client.list_tools()
        added = await client.call_tool("add", {"a": 2, "b": 3})
        shouted = await client.call_tool("shout", {"text": "hi"})
    return {
        "tools": [tool.model_dump(mode="json") for tool in tools.tools],
        "add": added.model_dump(mode="json"),
        "shout": shouted.model_dump(mode="json"),
    }
