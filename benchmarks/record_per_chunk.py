"""What recording costs per chunk, in CPU time (steadier than wall time on a shared machine): section 6 of
``benchmarks.run`` (50 openai-shaped SSE calls of 400 chunks through ``RecordingTransport`` against the
floor transport, each repeat into a new cassette), the floor's CPU time taken from the recording's.

    python -m benchmarks.record_per_chunk [--repeats N]

To compare two trees, run it with ``PYTHONPATH`` pointing at each in turn, alternately (the benchmark code is
taken from this file's tree, the library from whichever ``vcr_transport`` is imported).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import vcr_transport
from benchmarks.record_per_call import overhead_seconds
from benchmarks.run import workload


def per_chunk_us(folder: Path, repeats: int) -> float:
    calls = workload(json_calls=0, sse_calls=50, chunks=400)
    return overhead_seconds(folder, calls, repeats) / sum(len(call.chunks) for call in calls) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    with tempfile.TemporaryDirectory() as name:
        overhead = per_chunk_us(Path(name), repeats)
    print(f"{Path(vcr_transport.__file__).parent.parent}")
    print(f"  recording overhead, 50 SSE calls of 400 chunks into a new cassette: {overhead:.2f} us per chunk (CPU)")


if __name__ == "__main__":
    main()
