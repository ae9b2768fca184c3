"""The servers of the network namespace attack (run by ``netns_attack.py``, inside ``unshare -rn``): a TCP
server on 10.99.0.1:8080 (answers HTTP), DNS responders on port 53 of 10.99.0.1 and 127.0.0.53 (UDP and TCP;
an A query for any name is answered with 10.99.0.1), and an HTTP proxy on 127.0.0.1:3128 (answers itself, it
forwards nothing). Each counts the requests it saw; a request of ``COUNT`` (UDP) or ``COUNT\\n`` (TCP) is
answered with the count instead and not counted. One thread serves every socket, in arrival order, so a
``COUNT`` answered means every earlier request to that socket was seen.

Run as ``python netns_servers.py READY_FILE``: the file is written once every socket listens.
"""

from __future__ import annotations

import select
import socket
import struct
import sys
from pathlib import Path

TARGET = "10.99.0.1"
STUB = "127.0.0.53"
HTTP = (TARGET, 8080)
PROXY = ("127.0.0.1", 3128)
TCP = {"http": HTTP, "proxy": PROXY, "dns-tcp": (TARGET, 53), "stub-tcp": (STUB, 53)}
UDP = {"dns": (TARGET, 53), "stub": (STUB, 53)}


def dns_answer(query: bytes) -> bytes:
    """A response to a DNS query: A questions get 10.99.0.1, anything else an empty answer."""
    if len(query) < 12:
        return b"HELLO"
    ident = query[:2]
    end = 12
    while end < len(query) and query[end] != 0:
        end += query[end] + 1
    question = query[12 : end + 5]
    qtype = struct.unpack("!H", query[end + 1 : end + 3])[0] if end + 3 <= len(query) else 0
    answers = b""
    if qtype == 1:
        answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(TARGET)
    header = ident + struct.pack("!HHHHH", 0x8180, 1, 1 if answers else 0, 0, 0)
    return header + question + answers


def main(ready: Path) -> None:
    counts: dict[str, int] = {}
    listening: dict[socket.socket, str] = {}
    for name, address in TCP.items():
        server = socket.create_server(address)
        listening[server] = name
        counts[name] = 0
    datagram: dict[socket.socket, str] = {}
    for name, address in UDP.items():
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(address)
        datagram[udp] = name
        counts[name] = 0
    ready.write_text("ready")
    while True:
        readable, _, _ = select.select([*listening, *datagram], [], [])
        for sock in readable:
            if sock in datagram:
                name = datagram[sock]
                data, peer = sock.recvfrom(65536)
                if data == b"COUNT":
                    sock.sendto(str(counts[name]).encode(), peer)
                    continue
                counts[name] += 1
                try:
                    sock.sendto(dns_answer(data), peer)
                except OSError:  # a forged source (the AF_PACKET attack's) has no route back
                    pass
                continue
            name = listening[sock]
            connection, _ = sock.accept()
            with connection:
                connection.settimeout(2)
                try:
                    data = connection.recv(65536)
                except OSError:
                    data = b""
                if data == b"COUNT\n":
                    connection.sendall(str(counts[name]).encode())
                    continue
                counts[name] += 1
                body = b"proxied" if name == "proxy" else f"hello {counts[name]}".encode()
                head = f"HTTP/1.0 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                try:
                    connection.sendall(head.encode() + body)
                except OSError:
                    pass


if __name__ == "__main__":
    main(Path(sys.argv[1]))
