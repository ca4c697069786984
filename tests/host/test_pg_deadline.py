"""The watchdog of a bounded PostgreSQL call (schedlog/host/stores/pg_deadline.py): one thread
for every watchdog of the process, which shuts a socket down once its deadline passes without
progress, and never one whose call ended (stopped) or made progress meanwhile."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests import pg

pg.require_psycopg()

from schedlog.host.stores.pg_deadline import Watchdog  # noqa: E402


class _Conn:
    """What a watchdog uses of a connection: ``pgconn.socket``."""

    def __init__(self, sock: socket.socket) -> None:
        self.pgconn = type("PgConn", (), {"socket": sock.fileno()})()


@pytest.fixture
def pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    made: list[tuple[socket.socket, socket.socket]] = []
    yield made
    for a, b in made:
        a.close()
        b.close()


def _pair(made: list[tuple[socket.socket, socket.socket]]) -> tuple[Any, socket.socket]:
    ours, theirs = socket.socketpair()
    made.append((ours, theirs))
    theirs.settimeout(10)
    return _Conn(ours), theirs


def _cut(peer: socket.socket) -> bool:
    """Whether the watched end was shut down (the peer reads end of file, at once)."""
    peer.setblocking(False)
    try:
        return peer.recv(1) == b""
    except BlockingIOError:
        return False
    finally:
        peer.settimeout(10)


def test_one_thread_shuts_down_only_the_calls_past_their_deadline(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    stopped_conn, stopped_peer = _pair(pairs)
    late_conn, late_peer = _pair(pairs)
    stopped = Watchdog(stopped_conn, 0.05)  # its call ends before its deadline
    stopped.stop()
    late = Watchdog(late_conn, 0.2)
    assert late_peer.recv(1) == b""  # late fired: its socket was shut down (waits for it)
    assert late.fired
    # The stopped one's deadline came first, and it was left alone.
    assert not stopped.fired and not _cut(stopped_peer)
    names = [t.name for t in threading.enumerate()]
    assert names.count("schedlog-watchdog") == 1  # one thread, not one per watchdog
    many = [Watchdog(stopped_conn, 60.0) for _ in range(50)]
    for dog in many:
        dog.stop()
    assert [t.name for t in threading.enumerate()].count("schedlog-watchdog") == 1
