"""A WebSocket server on 127.0.0.1 that speaks openai's Realtime and google-genai's Live protocols with their
real event shapes (openai ``openai.types.realtime`` server events; genai ``LiveServerMessage``), for the
WebSocket tests and the compatibility suite. It runs ``websockets``' own asyncio server in a thread.

- ``/v1/realtime``: ``session.created`` on connect; ``session.updated``; ``conversation.item.added`` for each
  item; ``response.create`` answers with a function call (``get_weather``) until a ``function_call_output``
  item came, then with text (naming the output's temperature) and audio deltas; with
  ``{"response": {"instructions": "long"}}`` it streams ``LONG_DELTAS`` text deltas slowly (a client that
  closes mid-response interrupts it); with ``"key"``, ``SPOKEN_KEY`` in text deltas of four characters.
- ``/refused...``: the handshake is refused with a 401 and openai's invalid-key error.
- ``/fragments``: a text and a binary message, each sent in fragments (``TEXT_FRAGMENTS``,
  ``BINARY_FRAGMENTS``), for ``recv_streaming``.
- ``/ws/google.ai.generativelanguage.*``: ``setupComplete`` after ``setup``; a user turn (``client_content``,
  as the SDK spells it) gets a ``toolCall``; the ``tool_response`` gets text, an audio part and
  ``turnComplete``; ``realtime_input`` (audio) gets nothing.

``connections`` counts the sessions opened, so a test can show that replay opened none. ``tls=True`` serves
``wss://`` with a self-signed certificate for 127.0.0.1 (``ca_file`` trusts it): google-genai speaks wss to
any base URL when it has an API key.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import ssl
import threading
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

AUDIO_IN = base64.b64encode(bytes(range(256)) * 8).decode("ascii")  # 2 KiB of "PCM16"
AUDIO_OUT = base64.b64encode(bytes(255 - (i % 256) for i in range(3000))).decode("ascii")
LONG_DELTAS = 40
SPOKEN_KEY = "sk-proj-Xq7Lm2Pz9Rt4Vb6Nc1Kd8Hw3Js5Gf0Ay2Eu9Oi4TyT3BlbkFJMn6Bv8Cx1Za3Sd5Fg7Hj9Kl2Qw4Er6Ty8Ui0Op2"


def _event(kind: str, number: int, **fields: Any) -> str:
    return json.dumps({"type": kind, "event_id": f"event_{number:04d}", **fields})


async def _openai(ws: ServerConnection) -> None:
    count = 0

    async def send(kind: str, **fields: Any) -> None:
        nonlocal count
        count += 1
        await ws.send(_event(kind, count, **fields))

    session = {"type": "realtime", "object": "realtime.session", "id": "sess_001", "model": "gpt-realtime"}
    await send("session.created", session={**session, "output_modalities": ["audio"]})
    answered_tool = False
    temperature = None
    responses = 0
    async for raw in ws:
        event = json.loads(raw)
        kind = event.get("type")
        if kind == "session.update":
            await send("session.updated", session={**session, **event["session"]})
        elif kind == "conversation.item.create":
            item = {"id": f"item_{count:03d}", "object": "realtime.item", "status": "completed", **event["item"]}
            if item.get("type") == "function_call_output":
                answered_tool = True
                temperature = json.loads(item["output"]).get("temperature")
            await send("conversation.item.added", previous_item_id=None, item=item)
        elif kind == "response.create":
            responses += 1
            rid = f"resp_{responses:03d}"
            await send("response.created", response={"object": "realtime.response", "id": rid, "status": "in_progress"})
            instructions = (event.get("response") or {}).get("instructions")
            if instructions == "key":
                common = {"response_id": rid, "item_id": "item_key", "output_index": 0, "content_index": 0}
                text = f"Your key is {SPOKEN_KEY}."
                for start in range(0, len(text), 4):
                    await send("response.output_text.delta", **common, delta=text[start : start + 4])
                await send("response.output_text.done", **common, text=text)
                await send("response.done", response={"object": "realtime.response", "id": rid, "status": "completed"})
            elif instructions == "long":
                for number in range(LONG_DELTAS):
                    await send(
                        "response.output_text.delta",
                        response_id=rid,
                        item_id="item_long",
                        output_index=0,
                        content_index=0,
                        delta=f"word{number} ",
                    )
                    await asyncio.sleep(0.02)
                await send("response.done", response={"object": "realtime.response", "id": rid, "status": "completed"})
            elif not answered_tool:
                common = {"response_id": rid, "item_id": "item_fc", "output_index": 0, "call_id": "call_001"}
                await send("response.function_call_arguments.delta", **common, delta='{"city":')
                await send("response.function_call_arguments.delta", **common, delta='"Paris"}')
                await send(
                    "response.function_call_arguments.done", **common, name="get_weather", arguments='{"city":"Paris"}'
                )
                output = [{"type": "function_call", "id": "item_fc", "call_id": "call_001", "name": "get_weather"}]
                await send(
                    "response.done",
                    response={"object": "realtime.response", "id": rid, "status": "completed", "output": output},
                )
            else:
                common = {"response_id": rid, "item_id": "item_msg", "output_index": 0, "content_index": 0}
                for piece in ("It is ", f"{temperature} degrees ", "in Paris."):
                    await send("response.output_text.delta", **common, delta=piece)
                await send("response.output_text.done", **common, text=f"It is {temperature} degrees in Paris.")
                await send("response.output_audio.delta", **common, delta=AUDIO_OUT)
                await send("response.output_audio.done", **common)
                usage = {"total_tokens": 42, "input_tokens": 30, "output_tokens": 12}
                await send(
                    "response.done",
                    response={"object": "realtime.response", "id": rid, "status": "completed", "usage": usage},
                )


TEXT_FRAGMENTS = ["It is ", "21 degrees ", "in Paris."]
BINARY_FRAGMENTS = [b"\x00\x01", b"\x02\x03\x04"]


async def _fragments(ws: ServerConnection) -> None:
    """A text message and a binary one, each sent in fragments; then it waits for the client to close."""
    await ws.send(TEXT_FRAGMENTS)
    await ws.send(BINARY_FRAGMENTS)
    await ws.wait_closed()


async def _gemini(ws: ServerConnection) -> None:
    async for raw in ws:
        message = json.loads(raw)
        if "setup" in message:
            await ws.send(json.dumps({"setupComplete": {}}))
        elif "client_content" in message:  # the SDK's own key; the fields inside are camelCase
            calls = [{"id": "fc_001", "name": "get_weather", "args": {"city": "Paris"}}]
            await ws.send(json.dumps({"toolCall": {"functionCalls": calls}}))
        elif "tool_response" in message:
            temperature = message["tool_response"]["functionResponses"][0]["response"].get("temperature")
            parts = [{"text": f"It is {temperature} degrees in Paris."}]
            await ws.send(json.dumps({"serverContent": {"modelTurn": {"role": "model", "parts": parts}}}))
            audio = [{"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": AUDIO_OUT}}]
            await ws.send(json.dumps({"serverContent": {"modelTurn": {"role": "model", "parts": audio}}}))
            usage = {"promptTokenCount": 20, "responseTokenCount": 9, "totalTokenCount": 29}
            await ws.send(json.dumps({"serverContent": {"turnComplete": True}, "usageMetadata": usage}))


def _refuse(connection: ServerConnection, request: Request) -> Response | None:
    """A handshake under ``/refused`` is answered 401 with openai's error body, as a wrong key is."""
    if not request.path.startswith("/refused"):
        return None
    body = {"error": {"type": "invalid_request_error", "code": "invalid_api_key", "message": "Incorrect API key"}}
    response = connection.respond(401, json.dumps(body))
    del response.headers["Content-Type"]
    response.headers["Content-Type"] = "application/json"
    return response


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files in ``folder``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


class RealtimeServer:
    """The server, started in a thread; ``url`` is its base (``ws://`` or ``wss://127.0.0.1:port``)."""

    def __init__(self, folder: Path, *, tls: bool = False, port: int = 0) -> None:
        self.connections = 0
        self.paths: list[str] = []
        self.ca_file: Path | None = None
        context = None
        if tls:
            self.ca_file, key_file = _certificate(folder)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.ca_file, key_file)
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Future[None] | None = None
        ready = threading.Event()
        bound: list[int] = []

        async def main() -> None:
            self._stop = self._loop.create_future()
            async with serve(self._handle, "127.0.0.1", port, ssl=context, process_request=_refuse) as server:
                bound.append(server.sockets[0].getsockname()[1])
                ready.set()
                await self._stop

        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(main(),), daemon=True)
        self._thread.start()
        ready.wait(10)
        self.port = bound[0]
        self.url = f"{'wss' if tls else 'ws'}://127.0.0.1:{self.port}"

    async def _handle(self, ws: ServerConnection) -> None:
        self.connections += 1
        path = ws.request.path if ws.request is not None else ""
        self.paths.append(path)
        if path.startswith("/v1/realtime"):
            await _openai(ws)
        elif path.startswith("/fragments"):
            await _fragments(ws)
        else:
            await _gemini(ws)

    def close(self) -> None:
        if self._loop.is_closed():
            return

        def stop() -> None:
            if self._stop is not None and not self._stop.done():
                self._stop.set_result(None)

        self._loop.call_soon_threadsafe(stop)
        self._thread.join(10)
        self._loop.close()
