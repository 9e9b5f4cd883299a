"""`tracewh serve` as the benches run it: a real process with its default limits on a free
loopback port, ready when /health answers."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(store: Path) -> Iterator[str]:
    """Yields the server's base URL; stops it on the way out."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tracewh", "serve", "--port", str(port), "-w", str(store)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):  # bounded wait for start-up (30 s)
            try:
                httpx.get(f"{base}/health", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=60)
