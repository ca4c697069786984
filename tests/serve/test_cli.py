"""``host serve`` command helpers: --listen parsing and the listening socket."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.serve.deps import require_serve

require_serve()

from schedlog.cli._serve import _bind, parse_listen  # noqa: E402


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", 8765)),
        ("[::1]:0", ("::1", 0)),
        ("localhost:1", ("localhost", 1)),
    ],
)
def test_parse_listen(text: str, want: tuple[str, int]) -> None:
    assert parse_listen(text) == want


@pytest.mark.parametrize("text", ["127.0.0.1", ":80", "host:99999", "host:x", ""])
def test_parse_listen_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="--listen"):
        parse_listen(text)


def test_accepted_connections_get_tcp_nodelay() -> None:
    """asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP; without it a
    response written in two parts waited ~40 ms for the client's delayed ACK."""
    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--webhook-concurrency", "0"),
        ("--webhook-concurrency", "1001"),
        ("--webhook-timeout", "0"),
        ("--max-connections", "0"),
    ],
)
def test_out_of_range_serve_flags_are_refused_by_name(
    tmp_path: Path, flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from schedlog.cli.main import main

    store = str(tmp_path / "s.db")
    args = ["host", "serve", "--store", store, "--sessions", str(tmp_path / "sessions")]
    assert main([*args, "--listen", "127.0.0.1:0", flag, value]) == 2
    err = capsys.readouterr().err
    assert flag in err and "must be" in err
    assert not (tmp_path / "s.db").exists()  # refused before anything was opened


def test_a_started_serve_freezes_the_heap_and_collects_young_objects_less_often() -> None:
    import subprocess
    import sys

    code = (
        "import gc\n"
        "from schedlog.cli._serve import YOUNG_COLLECTION_EVERY, _settle_collector\n"
        "before = gc.get_threshold()\n"
        "_settle_collector()\n"
        "after = gc.get_threshold()\n"
        "assert gc.get_freeze_count() > 0, 'nothing frozen'\n"
        "assert after == (YOUNG_COLLECTION_EVERY, *before[1:]), after\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
