"""``schedlog store copy SRC DST`` between every pair of backends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from schedlog.cli.main import main
from schedlog.host.config import Retention
from schedlog.host.history import append_delivery
from schedlog.host.store_copy import CopyError, copy_store
from schedlog.host.stores.open import open_store
from schedlog.host.task import Receipt, Task
from tests import pg
from tests.host.helpers import T0, task

BACKENDS = ("sqlite", "json", "postgresql")


@pytest.fixture(scope="module")
def databases() -> Iterator[list[str]]:
    gens = [pg.fresh_database() for _ in range(2)]
    urls = [next(g) for g in gens]
    yield urls
    for g in gens:
        with pytest.raises(StopIteration):
            next(g)


def location(tmp_path: Path, backend: str, n: int, request: pytest.FixtureRequest) -> str:
    if backend == "postgresql":
        url: str = request.getfixturevalue("databases")[n]
        pg.reset(url)
        return url
    return str(tmp_path / f"store{n}.{'json' if backend == 'json' else 'db'}")


def sample() -> list[Task]:
    tasks = []
    for i in range(6):
        t = task(f"schedule-{i}", session=f"s-{i % 2}", every_seconds=600 * (i + 1))
        if i % 3 == 0:
            receipt = Receipt(scheduled_at=T0, delivered_at=T0 + 5, message_id=f"m-{i}")
            t = append_delivery(t, receipt, "prompt", Retention())
        if i == 4:
            t = msgspec.structs.replace(t, status="inactive")
        if i == 5:
            t = msgspec.structs.replace(t, status=None)
        tasks.append(t)
    return tasks


@pytest.mark.parametrize("dst_backend", BACKENDS)
@pytest.mark.parametrize("src_backend", BACKENDS)
def test_copy_preserves_every_task_and_order(
    tmp_path: Path, request: pytest.FixtureRequest, src_backend: str, dst_backend: str
) -> None:
    src = location(tmp_path, src_backend, 0, request)
    dst = location(tmp_path, dst_backend, 1, request)
    tasks = sample()
    s = open_store(src)
    for t in tasks:
        s.insert(t)
    s.delete("schedule-2")  # order is storage order, gaps and all
    s.close()
    expected = [t for t in tasks if t.id != "schedule-2"]
    assert copy_store(src, dst)["tasks"] == 5
    d = open_store(dst)
    try:
        assert [st.task for st in d.tasks()] == expected
    finally:
        d.close()
    with pytest.raises(CopyError) as info:
        copy_store(src, dst)
    assert info.value.code == "destination-not-empty"


def test_copy_refuses_a_postgres_source_with_invalid_rows(
    tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    src = location(tmp_path, "postgresql", 0, request)
    s = open_store(src)
    s.insert(task("schedule-1"))
    s.insert(task("schedule-2"))
    s.close()
    import psycopg

    with psycopg.connect(src, autocommit=True) as conn:
        conn.execute("UPDATE schedlog_tasks SET status = 'inactive' WHERE id = 'schedule-2'")
    dst = str(tmp_path / "copy.db")
    assert main(["store", "copy", src, dst]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "invalid-record" and "schedule-2" in error["message"]
    assert not Path(dst).exists()


def test_copy_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.json")
    s = open_store(src)
    s.insert(task("schedule-1"))
    s.close()
    assert main(["store", "copy", src, dst]) == 0
    assert json.loads(capsys.readouterr().out) == {"source": src, "destination": dst, "tasks": 1}
    assert main(["store", "copy", src, str(tmp_path / "missing-dir" / "x.db")]) == 1
    assert "error" in json.loads(capsys.readouterr().out)
