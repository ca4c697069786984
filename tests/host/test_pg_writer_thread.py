"""The PostgreSQL store's writes from the host's writer thread (docs/decisions.md "The API
during a burst"): ``insert_many`` is one all-or-nothing transaction, and a transaction of
``atomic`` belongs to the thread that opened it, so a create committed on the writer thread
never joins (nor rolls back with) a transaction the loop has open."""

from __future__ import annotations

import threading

import pytest

from schedlog.host.stores.base import StoreWriteError
from schedlog.host.stores.open import open_store
from tests import pg
from tests.host.helpers import task

pg.require_psycopg()

from schedlog.host.stores.postgres import PostgresTaskStore  # noqa: E402


class _Rollback(Exception):
    pass


def test_a_write_on_another_thread_does_not_join_an_open_transaction(url: str) -> None:
    store = open_store(url)
    assert isinstance(store, PostgresTaskStore) and store.writes_from_any_thread
    seqs: list[int] = []
    try:
        with pytest.raises(_Rollback), store.atomic():
            assert store.get("schedule-1") is None
            writer = threading.Thread(
                target=lambda: seqs.extend(store.insert_many([task("schedule-2", "s-2")]))
            )
            writer.start()
            writer.join()
            store.insert(task("schedule-1"))
            raise _Rollback  # the loop's transaction rolls back: only its own writes go
        assert store.get("schedule-1") is None
        found = store.get("schedule-2")
        assert found is not None and [found.seq] == seqs
    finally:
        store.close()


def test_insert_many_writes_all_or_nothing(url: str) -> None:
    store = open_store(url)
    try:
        assert store.insert_many([]) == []
        first, second = store.insert_many([task("schedule-1"), task("schedule-2", "<s>&\u00e9")])
        assert second > first
        with pytest.raises(StoreWriteError):  # a duplicate id: the transaction rolls back
            store.insert_many([task("schedule-3"), task("schedule-1")])
        assert store.get("schedule-3") is None
        with pytest.raises(StoreWriteError):
            store.insert_many([task("schedule-4"), task("schedule-\ud800")])  # no UTF-8 form
        assert store.get("schedule-4") is None
    finally:
        store.close()
