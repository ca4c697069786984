"""``fast_check`` of a file: a log shorter than a chunk is read whole in one ``os.read``
(fastcheck._small_log); the result is the one of the same bytes checked in memory, whichever
way the file is read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from schedlog.invariant import fastcheck
from schedlog.invariant.fastcheck import fast_check, fast_check_bytes
from tests.invariant.test_fastcheck import HEAD, valid_logs


def _same(path: Path, data: bytes) -> None:
    got = fast_check(path)
    expected = fast_check_bytes(data, file=str(path))
    assert got == expected


@given(valid_logs())
def test_a_small_log_read_whole_is_checked_as_in_memory(tmp_path_factory: Any, data: bytes) -> None:
    path = tmp_path_factory.mktemp("read") / "log.jsonl"
    path.write_bytes(data)
    assert len(data) < fastcheck._CHUNK
    _same(path, data)


def test_a_log_of_a_chunk_or_more_is_read_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.jsonl"
    data = HEAD + b'{"type":"message/user","data":{"text":"' + b"x" * 300 + b'"}}\n'
    path.write_bytes(data)
    monkeypatch.setattr(fastcheck, "_CHUNK", len(data))  # not small: the buffered reads
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    _same(path, data)
    assert reads == []
    result = fast_check(path)
    assert result is not None and result[0].event_count == 1


def test_a_log_that_grows_while_read_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.jsonl"
    data = HEAD + b'{"type":"message/user","data":{"text":"hi"}}\n' * 40
    path.write_bytes(data)
    real_fstat = os.fstat

    class Shorter:
        def __init__(self, fd: int) -> None:
            info = real_fstat(fd)
            self.st_mode, self.st_size = info.st_mode, 7  # as it was before 40 lines came

    monkeypatch.setattr(os, "fstat", Shorter)
    result = fast_check(path)
    assert result is not None and result[0].event_count == 40
    assert result == fast_check_bytes(data, file=str(path))


@pytest.mark.parametrize("kind", ["directory", "missing"])
def test_what_is_not_a_log_file_raises_as_before(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x.jsonl"
    if kind == "directory":
        path.mkdir()
    with pytest.raises(IsADirectoryError if kind == "directory" else FileNotFoundError):
        fast_check(path)
