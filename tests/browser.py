"""A real headless Chromium driven through the DevTools protocol (over a loopback websocket), with networking
switched off: load a page from a file, evaluate JavaScript in it, take screenshots, and see every network
request the page tried to make."""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One Chromium process with one page; ``close`` ends that process (and only it)."""

    def __init__(self, executable: str, width: int = 1200, height: int = 1400) -> None:
        # Chromium's helper processes may still write into the profile while it is removed.
        self._profile = tempfile.TemporaryDirectory(prefix="vcr-browser-", ignore_cleanup_errors=True)
        self.process = subprocess.Popen(
            [
                executable,
                *FLAGS,
                f"--user-data-dir={self._profile.name}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.requests: list[str] = []  # every URL the page asked for
        self._next_id = 0
        self._stack = contextlib.ExitStack()
        try:
            port = self._devtools_port()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
                pages = [target for target in json.load(answer) if target["type"] == "page"]
            self.socket: ClientConnection = self._stack.enter_context(
                connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
            )
            for method in ("Page.enable", "Network.enable", "Runtime.enable"):
                self.send(method)
            self.send(
                "Network.emulateNetworkConditions",
                offline=True,
                latency=0,
                downloadThroughput=-1,
                uploadThroughput=-1,
            )
        except BaseException:
            self.close()
            raise

    def _devtools_port(self) -> int:
        # Chromium writes the port it listens on into the profile once it listens.
        port_file = Path(self._profile.name) / "DevToolsActivePort"
        for _ in range(600):
            if port_file.exists() and port_file.read_text().strip():
                return int(port_file.read_text().split()[0])
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"chromium ({self.process.args[0]}) did not listen for DevTools")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer, noting the events that arrive meanwhile."""
        self._next_id += 1
        self.socket.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("method") == "Network.requestWillBeSent":
                self.requests.append(message["params"]["request"]["url"])
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})  # type: ignore[no-any-return]

    def open(self, path: Path) -> None:
        """Load a file and wait until its scripts have run; ``requests`` then holds what it asked for."""
        self.requests.clear()
        self.send("Page.navigate", url=path.resolve().as_uri())
        for _ in range(200):
            if self.evaluate("document.readyState") == "complete":
                return
            self.evaluate("new Promise(r => setTimeout(r, 50))")
        raise RuntimeError(f"{path} did not finish loading")

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        """A PNG of the viewport, or with ``full_page`` of the whole page."""
        if full_page:
            width = int(self.evaluate("document.documentElement.clientWidth"))
            height = int(self.evaluate("document.documentElement.scrollHeight"))
            self.send(
                "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False
            )
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=False)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self._profile.cleanup()
