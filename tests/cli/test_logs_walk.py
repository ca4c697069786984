"""``validate DIR``'s folder walk (schedlog.cli._logs.folder_logs) names exactly the files the
pathlib walk it replaced named, in the same spelling."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from schedlog.cli._logs import _walk, folder_logs


def _pathlib(name: str) -> list[str]:
    return sorted(str(p) for p in Path(name).rglob("*.jsonl") if p.is_file())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "dir.jsonl").mkdir()
    (root / "outside").mkdir()
    for rel in ("a.jsonl", ".hidden.jsonl", ".jsonl", "b.JSONL", "c.jsonl.bak", "sub/d.jsonl"):
        (root / rel).write_bytes(b"")
    (root / "sub" / "deeper" / "e.jsonl").write_bytes(b"")
    (root / "dir.jsonl" / "inner.jsonl").write_bytes(b"")
    (root / "outside" / "f.jsonl").write_bytes(b"")
    os.symlink(root / "a.jsonl", root / "link-to-file.jsonl")
    os.symlink(root / "missing", root / "dangling.jsonl")
    os.symlink(root / "loop.jsonl", root / "loop.jsonl")
    os.symlink(root / "outside", root / "sub" / "link-to-dir")  # not entered
    os.symlink(root / "outside", root / "linked-dir.jsonl")  # not a file
    return root


def test_the_walk_names_what_pathlib_names(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = sorted(folder_logs(str(tree)))
    assert found == _pathlib(str(tree))
    assert str(tree / "link-to-file.jsonl") in found
    assert str(tree / "sub" / "link-to-dir" / "f.jsonl") not in found
    assert len(found) == 8
    monkeypatch.chdir(tree.parent)
    spellings = ["logs", "logs/", "./logs", "logs//sub", "logs/./sub/..", "logs/sub/../sub"]
    for spelling in [*spellings, str(tree) + "/", "/" + str(tree), "//" + str(tree)]:
        assert sorted(folder_logs(spelling)) == _pathlib(spelling), spelling
    monkeypatch.chdir(tree)
    for spelling in [".", "./", "sub/.."]:
        assert sorted(folder_logs(spelling)) == _pathlib(spelling), spelling


def test_walk_sorts_a_folder_and_keeps_a_file_as_given(tree: Path) -> None:
    given = str(tree / "c.jsonl.bak")
    assert list(_walk([str(tree / "sub"), given])) == [*_pathlib(str(tree / "sub")), given]
