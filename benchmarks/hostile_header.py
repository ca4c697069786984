"""A streamed request header against ``host serve`` (docs/reliability.md#hostile-peers): one
connection sends a header in 64 KiB writes, up to 160 MiB, until the server answers and
closes. Prints the answer's status line, the bytes written before the close, the time to the
answer, the server's RSS before and after, and a ``/healthz`` round trip right after.

    python -m benchmarks.hostile_header
"""

from __future__ import annotations

import socket
import tempfile
import time
from pathlib import Path

import httpx

from tests.serve.process import start_serve
from tests.serve.test_connection_limits import read_all

LIMIT = 160 * 2**20


def _rss_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(x for x in status if x.startswith("VmRSS"))
    return int(line.split()[1]) // 1024


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    server = start_serve(tmp / "s.db", ["--sessions", str(tmp / "sessions")])
    try:
        host, port = server.url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
        before = _rss_mb(server.proc.pid)
        sock = socket.create_connection((host, int(port)), timeout=30)
        started, sent = time.monotonic(), 0
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        try:
            while sent < LIMIT:
                sock.sendall(b"a" * 65536)
                sent += 65536
        except OSError:
            pass
        answer = read_all(sock)
        elapsed = time.monotonic() - started
        sock.close()
        t0 = time.monotonic()
        httpx.get(server.url.removesuffix("/v1") + "/healthz", timeout=30)
        health = time.monotonic() - t0
        status = answer.split(b"\r\n", 1)[0].decode()
        print(
            f"answer {status!r}, {sent} bytes written before "
            f"the close, {elapsed * 1000:.1f} ms, RSS {before} -> {_rss_mb(server.proc.pid)} "
            f"MB, /healthz {health * 1000:.1f} ms"
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
