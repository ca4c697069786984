"""The task catalog (docs/http-api.md, docs/protocol.md#remote): every task by next target
``(scheduledAt, id)``, ids by code point, paged, with the session, status and title filters,
fast at 100,000 tasks. ``GET /v1/tasks``, ``schedlog host catalog`` and the remote ``catalog``
read it through :class:`~schedlog.host.service.HostService` (``catalog_page``, ``catalog``) or
:func:`ordered_tasks`.

:func:`scan_page` is the readable reference: decode every task, filter, sort, cut. It reads
the whole store on every request (about 13 s at 100,000 SQLite tasks here), so
:class:`Catalog` pages another way, by store, and the tests prove each gives the pages of the
reference:

* over a :class:`~schedlog.host.stores.base.LocalStore` (the file stores, which this process
  holds exclusively, so every write to them is its own and reported), :class:`CatalogIndex`:
  every task's sort key ``(scheduledAt, id)`` in a sorted list and its filter fields (session,
  title, active) in a dict, built once from the store in one query (a
  :class:`~schedlog.host.stores.base.CatalogRows` store) or from the decoded tasks. It listens
  to the host's change events and only marks the changed ids; each page first re-reads those
  ids from the store, so a page always reflects every committed write. A page then walks the
  sorted keys from the cursor and decodes only the tasks it returns;
* over a store that orders its tasks itself (:class:`~schedlog.host.stores.base.OrdersCatalog`,
  PostgreSQL by SQL), the store's rows from the cursor with the session and active filters
  applied, the title and the exact status checked here. A PostgreSQL store may be shared by
  several hosts whose changes arrive by ``LISTEN``, and such notifications can be lost while
  the connection is re-opened, so no index is kept of it (:func:`index_for` returns None);
* over any other store, the reference scan.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Final, NamedTuple

from sortedcontainers import SortedList

from schedlog.host.changes import ChangeSource, TaskChange
from schedlog.host.stores.base import (
    CatalogKey,
    CatalogRows,
    LocalStore,
    OrdersCatalog,
    StoredTask,
    TaskStore,
)
from schedlog.host.task import Task

__all__ = [
    "CACHED_TASKS",
    "CATALOG_STATUSES",
    "DEFAULT_CATALOG_PAGE",
    "MAX_CATALOG_PAGE",
    "Catalog",
    "CatalogIndex",
    "CatalogQuery",
    "Page",
    "StatusOf",
    "catalog_order",
    "effective_status",
    "index_for",
    "ordered_page",
    "ordered_tasks",
    "scan_page",
]

#: The largest catalog page, and the size of one when none is asked for.
MAX_CATALOG_PAGE: Final = 500
DEFAULT_CATALOG_PAGE: Final = 100
#: The statuses a catalog page can be filtered by.
CATALOG_STATUSES: Final = ("active", "inactive", "retrying", "paused")

#: The most tasks a catalog index keeps decoded (those its pages returned last): two full pages.
CACHED_TASKS: Final = 2 * (MAX_CATALOG_PAGE + 1)
#: ``task -> effective status`` ("active", "inactive" or "retrying").
StatusOf = Callable[[Task], str]
Key = CatalogKey
_NO_KEY: Final = (0, "")


class CatalogQuery(NamedTuple):
    """One page request: after ``cursor`` (exclusive) in the chosen order, at most ``limit``."""

    limit: int
    cursor: Key | None = None
    descending: bool = False
    session_id: str | None = None
    status: str | None = None
    title: str | None = None  # casefolded substring


class Page(NamedTuple):
    tasks: list[Task]
    more: bool  # another page follows (the cursor is the last task's key)


def _key(task: Task) -> Key:
    return (task.record.scheduled_at, task.id)


def _after(key: Key, query: CatalogQuery) -> bool:
    if query.cursor is None:
        return True
    return key < query.cursor if query.descending else key > query.cursor


def effective_status(task: Task) -> str:
    """The status of a task no delivery sink is retrying."""
    return task.effective_status


def catalog_order(tasks: Iterable[Task]) -> list[Task]:
    """``tasks`` by ``(scheduledAt, id)``, ids by code point: the catalog's order."""
    return sorted(tasks, key=_key)


def ordered_tasks(store: TaskStore) -> list[Task]:
    """Every task of ``store`` in the catalog's order: the one listing behind the catalog
    (``HostCore.catalog``; ``schedlog host catalog`` sorts what it read by
    :func:`catalog_order`)."""
    if isinstance(store, OrdersCatalog):
        return [st.task for st in store.catalog_tasks()]
    return catalog_order(st.task for st in store.tasks())


def scan_page(tasks: Iterable[Task], query: CatalogQuery, status_of: StatusOf) -> Page:
    """The reference: every task filtered, sorted by ``(scheduledAt, id)``, then cut."""
    chosen: list[tuple[Key, Task]] = []
    for task in tasks:
        key = _key(task)
        if not _after(key, query):
            continue
        if query.session_id is not None and task.session_id != query.session_id:
            continue
        if query.title is not None and query.title not in (task.record.title or "").casefold():
            continue
        if query.status is not None and status_of(task) != query.status:
            continue
        chosen.append((key, task))
    chosen.sort(key=lambda item: item[0], reverse=query.descending)
    return Page([t for _, t in chosen[: query.limit]], len(chosen) > query.limit)


class _Row(NamedTuple):
    session_id: str
    title: str  # casefolded
    active: bool


class CatalogIndex:
    """Sort keys and filter fields of every task, kept current through change events, and the
    tasks pages returned lately (at most :data:`CACHED_TASKS`), kept exact the same way: a
    change that carries its committed task replaces a cached one, any other evicts it. A page
    of tasks served lately reads nothing from the store (docs/decisions.md "The API during a
    burst": under a burst, each row a read steps through waits for the interpreter lock)."""

    def __init__(self, store: TaskStore, source: ChangeSource) -> None:
        self._store = store
        self._keys: SortedList[Key] = SortedList()
        self._rows: dict[str, tuple[Key, _Row]] = {}
        self._dirty: set[str] = set()
        self._cache: OrderedDict[str, Task] = OrderedDict()
        if isinstance(store, CatalogRows):
            rows = store.catalog_rows()
        else:
            rows = [
                (t.record.scheduled_at, t.id, t.session_id, t.record.title or "", t.active)
                for t in (st.task for st in store.tasks())
            ]
        for at, task_id, session_id, title, active in rows:
            self._put((at, task_id), _Row(session_id, title.casefold(), active))
        self._unsubscribe = source.subscribe_changes(self._on_change)

    def __len__(self) -> int:
        self._refresh()
        return len(self._rows)

    def close(self) -> None:
        self._unsubscribe()

    def _on_change(self, change: TaskChange) -> None:
        t = change.task
        if t is None:
            self._dirty.add(change.id)
            self._cache.pop(change.id, None)
            return
        # The committed task came with the change (a batched delivery): no read-back, so a
        # page after a burst does not decode a thousand tasks on the event loop.
        self._dirty.discard(change.id)
        if change.id in self._cache:
            self._cache[change.id] = t
        old = self._rows.pop(change.id, None)
        if old is not None:
            self._keys.remove(old[0])
        self._put(_key(t), _Row(t.session_id, (t.record.title or "").casefold(), t.active))

    def _put(self, key: Key, row: _Row) -> None:
        self._keys.add(key)
        self._rows[key[1]] = (key, row)

    def _refresh(self) -> None:
        dirty, self._dirty = self._dirty, set()
        if not dirty:
            return
        found = _read_many(self._store, sorted(dirty))  # one read for all of them
        for task_id in dirty:
            old = self._rows.pop(task_id, None)
            if old is not None:
                self._keys.remove(old[0])
            st = found.get(task_id)
            if st is not None:
                t = st.task
                self._put(_key(t), _Row(t.session_id, (t.record.title or "").casefold(), t.active))

    def page(self, query: CatalogQuery, status_of: StatusOf) -> Page:
        """Equal to :func:`scan_page` over every stored task (see the module docstring)."""
        self._refresh()
        if query.descending:
            keys = self._keys.irange(maximum=query.cursor, inclusive=(True, False), reverse=True)
        else:
            keys = self._keys.irange(minimum=query.cursor, inclusive=(False, True))
        candidates = (key for key in keys if self._row_matches(key[1], query))
        out: list[Task] = []
        while chunk := list(itertools.islice(candidates, query.limit + 1)):
            found = self._tasks([key[1] for key in chunk])
            for key in chunk:
                task = found.get(key[1])
                if len(out) == query.limit:
                    if query.status is None or (
                        task is not None and status_of(task) == query.status
                    ):
                        return Page(out, True)
                    continue
                if task is None:  # pragma: no cover - the index was refreshed just now
                    continue
                if query.status is not None and status_of(task) != query.status:
                    continue
                out.append(task)
        return Page(out, False)

    def _tasks(self, ids: list[str]) -> dict[str, Task]:
        """The committed tasks of ``ids``: from the cache, the others in one read (then
        cached, the least recently used dropped beyond :data:`CACHED_TASKS`)."""
        cache = self._cache
        missing = [task_id for task_id in ids if task_id not in cache]
        if missing:
            # One read for a page's tasks, not one per task: under a burst, every read that
            # lets go of the interpreter waits to get it back from the delivery threads.
            for st in _read_many(self._store, missing).values():
                cache[st.task.id] = st.task
        found: dict[str, Task] = {}
        for task_id in ids:
            task = cache.get(task_id)
            if task is not None:
                cache.move_to_end(task_id)
                found[task_id] = task
        while len(cache) > CACHED_TASKS:
            cache.popitem(last=False)
        return found

    def _row_matches(self, task_id: str, query: CatalogQuery) -> bool:
        _, row = self._rows[task_id]
        if query.session_id is not None and row.session_id != query.session_id:
            return False
        if query.title is not None and query.title not in row.title:
            return False
        # "active" and "retrying" are both active tasks
        return query.status is None or (query.status == "inactive") != row.active


def _read_many(store: TaskStore, ids: list[str]) -> dict[str, StoredTask]:
    get_many: Callable[[list[str]], list[StoredTask]] | None = getattr(store, "get_many", None)
    if get_many is not None:
        return {st.task.id: st for st in get_many(ids)}
    found = (store.get(task_id) for task_id in ids)
    return {st.task.id: st for st in found if st is not None}


def index_for(store: TaskStore, source: ChangeSource) -> CatalogIndex | None:
    """An index over ``store``, or None when the store may be written by other processes
    (see the module docstring)."""
    if isinstance(store, LocalStore) and store.locked_by_this_process:
        return CatalogIndex(store, source)
    return None


def ordered_page(store: OrdersCatalog, query: CatalogQuery, status_of: StatusOf) -> Page:
    """A page from a store that orders its tasks itself: it applies the cursor, the session and
    active filters; the title and the exact status (``retrying``) are checked here. Equal to
    :func:`scan_page` over every stored task."""
    active = None if query.status is None else query.status != "inactive"
    out: list[Task] = []
    rows = store.catalog_tasks(
        query.cursor,
        descending=query.descending,
        session_id=query.session_id,
        active=active,
        title=query.title,
        batch=query.limit + 1,
    )
    for st in rows:
        task = st.task
        if query.title is not None and query.title not in (task.record.title or "").casefold():
            continue
        if query.status is not None and status_of(task) != query.status:
            continue
        if len(out) == query.limit:
            return Page(out, True)
        out.append(task)
    return Page(out, False)


class Catalog:
    """The catalog of one host's store: pages by the fastest way the store allows (see the
    module docstring). The index, when there is one, is built at the first page or at
    :meth:`open`, and kept current through ``source``'s change events until :meth:`close`."""

    def __init__(self, store: TaskStore, source: ChangeSource) -> None:
        self._store = store
        self._source = source
        self._index: CatalogIndex | None = None
        self._opened = False

    def open(self) -> None:
        """Build the index now (``host serve`` does at start, so no page waits for it)."""
        if not self._opened:
            self._index = index_for(self._store, self._source)
            self._opened = True

    @property
    def by_store(self) -> bool:
        """Whether pages are read from a store that orders its tasks itself (no index is
        kept of it: :func:`ordered_page`), which any thread may do; opens the catalog."""
        self.open()
        return self._index is None and isinstance(self._store, OrdersCatalog)

    def page(self, query: CatalogQuery, status_of: StatusOf = effective_status) -> Page:
        self.open()
        if self._index is not None:
            return self._index.page(query, status_of)
        if isinstance(self._store, OrdersCatalog):
            return ordered_page(self._store, query, status_of)
        return scan_page((st.task for st in self._store.tasks()), query, status_of)

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None
