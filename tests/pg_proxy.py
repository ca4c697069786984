"""A loopback TCP proxy that a test controls, between the PostgreSQL store and the server
(docs/reliability.md#slow-postgresql).

``FaultProxy(upstream_port)`` listens on ``127.0.0.1`` (a free port) and relays every
connection to the server on ``127.0.0.1:upstream_port``. The test switches it at any time:

* :meth:`delay` holds every chunk, both ways, that many ms before relaying it;
* :meth:`freeze` stops relaying (bytes pile up unread; new connections are accepted and
  left silent), :meth:`thaw` resumes;
* :meth:`cut` closes every open connection (later ones are relayed again).

Threads only, bounded: :meth:`close` stops them all; sockets time out so no thread outlives it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.parse
from typing import Final

_CHUNK: Final = 65536
_POLL_S: Final = 0.05


class FaultProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self._upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(_POLL_S)
        self.port: int = self._listener.getsockname()[1]
        self._delay_s = 0.0
        self._frozen = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._threads: list[threading.Thread] = []
        self._start(self._accept_loop)

    # --- control -------------------------------------------------------------------------

    def delay(self, ms: int) -> None:
        self._delay_s = ms / 1000

    def freeze(self) -> None:
        self._frozen.set()

    def thaw(self) -> None:
        self._frozen.clear()

    def cut(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                _close(sock)

    def close(self) -> None:
        self._closed.set()
        self.thaw()
        self.cut()
        _close(self._listener)
        for thread in self._threads:
            thread.join(timeout=5)

    def url(self, database_url: str) -> str:
        """``database_url`` with its host and port replaced by this proxy's."""
        parts = urllib.parse.urlsplit(database_url)
        netloc = parts.netloc.rsplit("@", 1)
        auth = f"{netloc[0]}@" if len(netloc) == 2 else ""
        return urllib.parse.urlunsplit(parts._replace(netloc=f"{auth}127.0.0.1:{self.port}"))

    # --- relaying ------------------------------------------------------------------------

    def _start(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            try:
                server = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            for sock in (client, server):
                sock.settimeout(_POLL_S)
            with self._lock:
                self._pairs.append((client, server))
            self._start(self._pump, client, server)
            self._start(self._pump, server, client)

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while not self._closed.is_set():
            if self._frozen.is_set():
                time.sleep(_POLL_S)
                continue
            try:
                data = source.recv(_CHUNK)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            if self._delay_s:
                time.sleep(self._delay_s)
            while self._frozen.is_set() and not self._closed.is_set():
                time.sleep(_POLL_S)
            try:
                sink.sendall(data)
            except OSError:
                break
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
