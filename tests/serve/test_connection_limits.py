"""Hostile peers on real sockets (docs/http-api.md#limits): a streamed header gets 431 after
64 KiB, idle and slow connections are closed after ``--header-timeout``, connections over
``--max-connections`` get 503 at once, a malformed request gets the JSON error body, and a
flood of them neither stops a delivery nor fills stderr.

Every loop is bounded and every wait has a deadline; the server runs in a subprocess on a
free loopback port with its caps lowered by option.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest

from tests.serve.deps import require_serve

require_serve()

import httpx  # noqa: E402

from schedlog.serve.limits import MAX_HEADER_BYTES, connection_cap  # noqa: E402
from tests.serve.process import ServeProcess, start_serve  # noqa: E402

CAP = 12
TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    tmp = tmp_path_factory.mktemp("limits")
    args = ["--sessions", str(tmp / "sessions"), "--max-connections", str(CAP)]
    running = start_serve(tmp / "s.db", [*args, "--header-timeout", str(TIMEOUT_S)])
    yield running
    running.stop()


def address(server: ServeProcess) -> tuple[str, int]:
    host_port = server.url.removeprefix("http://").removesuffix("/v1")
    host, _, port = host_port.rpartition(":")
    return host, int(port)


def connect(server: ServeProcess) -> socket.socket:
    sock = socket.create_connection(address(server), timeout=10)
    sock.settimeout(10)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes (bounded by the socket timeout)."""
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    return out


def parse(answer: bytes) -> tuple[int, dict[str, str], object]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


def wait_healthy(server: ServeProcess) -> None:
    """The server answers again (after a test's sockets are closed)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            got = httpx.get(server.url.removesuffix("/v1") + "/healthz", timeout=5)
        except httpx.HTTPError:
            continue
        if got.status_code == 200:
            return
    raise AssertionError("the server did not answer /healthz again")


def test_a_streamed_header_is_refused_431_after_64_kib(server: ServeProcess) -> None:
    sock = connect(server)
    started = time.monotonic()
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
    sent = 0
    try:
        for _ in range(4096):  # at most 16 MiB; the server stops reading long before
            sock.sendall(b"a" * 4096)
            sent += 4096
    except (BrokenPipeError, ConnectionResetError):
        pass
    answer = read_all(sock)
    sock.close()
    elapsed = time.monotonic() - started
    status, headers, body = parse(answer)
    assert status == 431
    assert headers["content-type"] == "application/json"
    assert body == {
        "error": {
            "code": "header_too_large",
            "message": f"the request line and headers are longer than {MAX_HEADER_BYTES} bytes",
        }
    }
    assert sent < 16 * 1024 * 1024  # the server closed the connection
    assert elapsed < 10  # no quadratic parse (an unbounded one took 44 s for 160 MiB)
    wait_healthy(server)


def test_a_header_just_under_the_limit_is_served(server: ServeProcess) -> None:
    pad = MAX_HEADER_BYTES - 200
    got = httpx.get(
        server.url.removesuffix("/v1") + "/healthz", headers={"X-Pad": "a" * pad}, timeout=10
    )
    assert got.status_code == 200


def test_idle_and_slow_connections_are_closed_after_the_header_timeout(
    server: ServeProcess,
) -> None:
    idle, slow = connect(server), connect(server)
    slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    started = time.monotonic()
    assert read_all(idle) == b""  # closed without an answer: it never sent a byte
    status, _, body = parse(read_all(slow))
    assert status == 408
    assert body == {
        "error": {
            "code": "request_timeout",
            "message": "the request headers took too long to arrive",
        }
    }
    assert time.monotonic() - started < TIMEOUT_S + 5
    idle.close()
    slow.close()


def test_a_connection_over_the_cap_is_answered_503_at_once(server: ServeProcess) -> None:
    wait_healthy(server)
    held = [connect(server) for _ in range(CAP)]
    try:
        # the server has seen them all once one of them is answered
        held[-1].sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert held[-1].recv(12).startswith(b"HTTP/1.1 200")
        extra = connect(server)
        status, headers, body = parse(read_all(extra))
        extra.close()
        assert status == 503
        assert headers["connection"] == "close"
        assert body == {
            "error": {
                "code": "too_many_connections",
                "message": "the server has too many open connections",
            }
        }
    finally:
        for sock in held:
            sock.close()
    wait_healthy(server)


@pytest.mark.parametrize(
    "request_bytes",
    [b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: x\r\n\r\n"],
)
def test_a_malformed_request_gets_the_json_error_body(
    server: ServeProcess, request_bytes: bytes
) -> None:
    sock = connect(server)
    sock.sendall(request_bytes)
    status, headers, body = parse(read_all(sock))
    sock.close()
    assert status == 400
    assert headers["content-type"] == "application/json"
    assert isinstance(body, dict)
    assert body["error"]["code"] == "invalid_request"
    assert body["error"]["message"].startswith("malformed HTTP request")


def test_the_connection_cap_keeps_descriptors_free() -> None:
    assert connection_cap(256, 128) == 64
    assert connection_cap(256, 1_000_000) == 256
    assert connection_cap(256, 10) == 1
