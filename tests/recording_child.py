"""A child process that re-records a cassette from a long loopback stream, for tests/test_recording_integrity.py.

    recording_child.py WAY CASSETTE URL READY_AFTER [FILE_SIZE_LIMIT]

WAY is how the recording is held: ``use_cassette`` (a block), ``client_with`` (an httpx2 client's
``with`` block around a RecordingTransport) or ``bare`` (a client never closed: the exit hook finishes it).
After READY_AFTER events the child prints ``ready`` and keeps reading, so that the parent can signal it at
that point, and from then on works 50 ms on each event. With FILE_SIZE_LIMIT it caps the size of the files
it may write (RLIMIT_FSIZE, SIGXFSZ ignored), reads the whole stream, then prints ``live <chunks> <bytes>``
and the CassetteError that closing raised, if any.
"""

from __future__ import annotations

import signal
import sys
import time

import httpx2

import vcr_transport


def main() -> None:
    # Ctrl-C as a user's process gets it, even when the test run started with SIGINT ignored (a background
    # job of a non-interactive shell passes SIG_IGN on, and Python then installs no KeyboardInterrupt).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    way, cassette, url, ready_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    limited = len(sys.argv) > 5
    if limited:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        limit = int(sys.argv[5])
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    def read(client: httpx2.Client) -> tuple[int, int]:
        chunks = size = events = 0
        with client.stream("GET", url) as response:
            for chunk in response.iter_raw():
                chunks += 1
                size += len(chunk)
                events += chunk.count(b"\n\n")  # reads may merge several server chunks
                if events >= ready_after and events - chunk.count(b"\n\n") < ready_after:
                    print("ready", flush=True)
                if events >= ready_after and not limited:
                    # The caller works 50 ms on each event: time enough for the signal to arrive mid-stream.
                    time.sleep(0.05 * max(1, chunk.count(b"\n\n")))
        return chunks, size

    if way == "use_cassette":
        with vcr_transport.use_cassette(cassette, mode="record"), httpx2.Client() as client:
            read(client)
    elif way == "client_with":
        transport = vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette)
        try:
            with httpx2.Client(transport=transport) as client:
                live = read(client)
        except vcr_transport.CassetteError as error:
            print(f"live {live[0]} {live[1]}", flush=True)
            print(f"error {error}", flush=True)
        else:
            print(f"live {live[0]} {live[1]}", flush=True)
    else:
        client = httpx2.Client(transport=vcr_transport.RecordingTransport(httpx2.HTTPTransport(), cassette))
        read(client)


if __name__ == "__main__":
    main()
