"""A webhook receiver on a free loopback port, for tests and benchmarks: it checks the
signature, dedupes by ``messageId``, and can be told to fail a share of calls."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from schedlog.host.webhook import verify


@dataclass
class Inbox:
    secret: bytes
    fail_first: int = 0
    fail_rate: float = 0.0
    seed: int = 0
    calls: int = 0
    failures: int = 0
    bad_signatures: int = 0
    on_accept: Callable[[dict[str, Any]], None] | None = None
    received: list[dict[str, Any]] = field(default_factory=list)
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrived: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.arrived = threading.Condition(self.lock)
        self._random = random.Random(self.seed)

    def decide(self, headers: dict[str, str], body: bytes) -> int:
        with self.lock:
            self.calls += 1
            if not verify(self.secret, headers, body, int(time.time())):
                self.bad_signatures += 1
                return 401
            if self.calls <= self.fail_first or self._random.random() < self.fail_rate:
                self.failures += 1
                return 503
            value = json.loads(body)
            if self.on_accept is not None:
                self.on_accept(value)  # kept before the 2xx
            self.received.append(value)
            self.by_id.setdefault(value["messageId"], value)  # the receiver's dedupe
            self.arrived.notify_all()
            return 200

    def wait_for(self, count: int, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until ``count`` distinct messages arrived."""
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.by_id) >= count, timeout)


def start_receiver(inbox: Inbox, port: int = 0) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            status = inbox.decide(dict(self.headers.items()), body)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
