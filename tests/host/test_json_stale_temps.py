"""A writer killed between its temp write and the rename leaves a temp document; the next
successful open removes it, a refused open leaves everything as it was."""

from pathlib import Path

import pytest

from schedlog.errors import StoreOpenError
from schedlog.host.stores.open import open_store


def test_successful_open_removes_stale_temp_documents(tmp_path: Path) -> None:
    path = tmp_path / "schedule.json"
    open_store(path).close()  # a missing file opens as an empty store
    stale = tmp_path / ".schedule.json.4242.tmp"
    stale.write_bytes(b'{"half":')
    unrelated = [
        tmp_path / ".schedule.json.abc.tmp",
        tmp_path / ".other.json.4242.tmp",
        tmp_path / "schedule.json.4242.tmp",
    ]
    for other in unrelated:
        other.write_bytes(b"keep")
    open_store(path).close()
    assert not stale.exists()
    assert all(other.read_bytes() == b"keep" for other in unrelated)


def test_refused_open_keeps_stale_temp_documents(tmp_path: Path) -> None:
    path = tmp_path / "schedule.json"
    path.write_bytes(b"[]\n")
    stale = tmp_path / ".schedule.json.4242.tmp"
    stale.write_bytes(b'{"half":')
    with pytest.raises(StoreOpenError):
        open_store(path)
    assert stale.read_bytes() == b'{"half":'
    assert path.read_bytes() == b"[]\n"
