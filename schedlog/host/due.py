"""The host's due-task strategy: how it finds due tasks, and what a delivery holds meanwhile.

Two implementations of :class:`DueTasks`:

* :class:`LocalTimerIndex`: a store only this host writes. The timer index (a ``SortedList`` of
  ``(scheduledAt, seq, id)`` over active tasks) is kept in step with every write; a delivery
  holds nothing but the FIFO slot.
* :class:`ClaimedDue`: a :class:`~schedlog.host.stores.base.ClaimingStore` shared by several
  hosts (docs/decisions.md, "PostgreSQL store: several hosts"). Nothing is indexed here: the
  store says when to look next and claims due tasks with a lease; a delivery runs under the
  session's lock, renews its leases and ends its claims.

:func:`due_tasks_for` picks the one a store needs; :class:`~schedlog.host.core.HostCore` only
calls the strategy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from itertools import islice
from operator import itemgetter, lt
from typing import Any, Final, Protocol, runtime_checkable

import sortedcontainers
from sortedcontainers import SortedList

from schedlog.collector import collector_paused
from schedlog.errors import ScheduleError
from schedlog.host.delivery import Group, GroupFailed
from schedlog.host.stores.base import ClaimingStore, StoredTask, TaskStore
from schedlog.host.task import Task

__all__ = [
    "MSG_LEASE_LOST",
    "Batch",
    "ClaimedDue",
    "ClaimsBatches",
    "DueTasks",
    "LocalTimerIndex",
    "due_tasks_for",
]

MSG_LEASE_LOST: Final = "Another host took over the claim of these reminders"
_ID: Final = itemgetter(2)
_TARGET: Final = itemgetter(0)
_SEQ: Final = itemgetter(1)
_LAST: Final = itemgetter(-1)
#: Integers of smaller magnitude convert to distinct floats, in the same order.
_EXACT_FLOAT: Final = float(2**53)


class DueTasks(Protocol):
    """Next target, due tasks, active count, reindexing, and the claims of a delivery."""

    #: How long a claim lasts unless renewed (ms); None when nothing is claimed.
    lease_ms: int | None

    def next_target(self, excluded: Iterable[str] = ()) -> int | None: ...

    def due(self, now: int, excluded: Iterable[str] = ()) -> list[StoredTask]: ...

    def active_count(self) -> int: ...

    def due_count(self, now: int) -> int:
        """How many active tasks are due at ``now`` (claimed or not); claims nothing."""
        ...

    def reindex(self, st: StoredTask) -> None: ...

    def unindex(self, task_id: str) -> None: ...

    def commit(self, st: StoredTask, task: Task) -> None:
        """A delivered member's write (on a shared store, only while its claim holds)."""
        ...

    def atomic(self) -> AbstractContextManager[None]:
        """Around an update: its read and its write as one step."""
        ...

    def pausing(self, session_id: str) -> AbstractContextManager[None]:
        """Around a pause or resume: :meth:`atomic`, after any delivery of the session in
        progress (on a shared store, another host's) has ended."""
        ...

    def delivering(
        self, group: Group, forget: Callable[[str], None]
    ) -> AbstractContextManager[None]:
        """Around a delivery to a session log; ``forget(session_id)`` drops the cached log."""
        ...

    def delivering_to(
        self, group: Group, retry_in: Callable[[str], int] | None
    ) -> AbstractContextManager[None]:
        """Around a delivery to a sink; failed members may be held ``retry_in(id)`` ms."""
        ...

    def keep_leases(self, ids: Sequence[str]) -> None:
        """Renew the leases on ``ids``; raise when one is no longer this host's."""
        ...

    def listen(self, on_change: Callable[[dict[str, str]], None]) -> None: ...

    def end_pass(self) -> None:
        """A drive pass ended: what its scan still holds (a batched claim) is given back."""
        ...


class Batch(Protocol):
    """One batched claim (:class:`~schedlog.host.stores.pg_batch.ClaimBatch`): its tasks,
    the sessions it holds locked, a fresh read, the lease check, one commit, and its end."""

    tasks: list[StoredTask]
    sessions: set[str]

    def fresh(self) -> dict[str, StoredTask]: ...

    def lost(self, ids: Iterable[str]) -> list[str]: ...

    def commit(self, tasks: Sequence[Task]) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class ClaimsBatches(Protocol):
    """A claiming store that claims a batch of due tasks under their sessions' locks."""

    def claim_batch(self, now: int, excluded: Iterable[str] = ()) -> Batch: ...


class LocalTimerIndex:
    """The timer index of a store this host alone writes: active tasks that are not paused
    (docs/protocol.md#pause)."""

    lease_ms: int | None = None

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        # Built in one go from the store's index rows: no task is decoded a second time after
        # the validation at open, and one sort replaces an insertion per task.
        self._index: SortedList[tuple[int, int, str]] = timer_index(list(store.active_targets()))
        # The key of each indexed id, built on the first write that needs it (each id is
        # indexed once: ids are unique in every store), so start-up does not hash every id.
        self._by_id: dict[str, tuple[int, int, str]] | None = None

    @property
    def _keys(self) -> dict[str, tuple[int, int, str]]:
        if self._by_id is None:
            self._by_id = dict(zip(map(_ID, self._index), self._index, strict=True))
        return self._by_id

    def widen(self, rest: SortedList[tuple[int, int, str]]) -> None:
        """Take in the keys of the store's other tasks, once they are validated: ``rest``
        (built by :func:`timer_index`) holds no id this index holds, and becomes the index with
        this one's current keys added (few: the rows read before validation, as deliveries
        since have left them). Call on the loop, between two writes."""
        for key in self._index:
            rest.add(key)
        self._index = rest
        self._by_id = None

    def reindex(self, st: StoredTask) -> None:
        self.unindex(st.task.id)
        if st.task.active and not st.task.paused:
            key = (st.task.record.scheduled_at, st.seq, st.task.id)
            self._index.add(key)
            self._keys[st.task.id] = key

    def unindex(self, task_id: str) -> None:
        key = self._keys.pop(task_id, None)
        if key is not None:
            self._index.remove(key)

    def next_target(self, excluded: Iterable[str] = ()) -> int | None:
        skip = set(excluded)
        for target, _seq, task_id in self._index:
            if task_id not in skip:
                return int(target)
        return None

    def due_ids(self, now: int, excluded: Iterable[str] = ()) -> list[str]:
        """The ids of the indexed tasks due at ``now`` not in ``excluded``, in storage order,
        read from the index alone (nothing is decoded): the first half of :meth:`due`."""
        skip = set(excluded)
        # Every key whose target is at most now sorts below (now + 1, any seq, any id).
        below = self._index.irange(maximum=(now + 1, -(2**63), ""), inclusive=(True, False))
        keys = [k for k in below if k[2] not in skip]
        return [task_id for _target, _seq, task_id in sorted(keys, key=lambda k: k[1])]

    def due(self, now: int, excluded: Iterable[str] = ()) -> list[StoredTask]:
        out: list[StoredTask] = []
        for task_id in self.due_ids(now, excluded):
            st = self.store.get(task_id)
            if st is not None and st.task.active and not st.task.paused:
                out.append(st)
            else:  # a row the store reported invalid, or one the index misread: never delivered
                self.unindex(task_id)
        return out

    def active_count(self) -> int:
        return len(self._index)

    def due_count(self, now: int) -> int:
        return int(self._index.bisect_left((now + 1, -(2**63), "")))

    def commit(self, st: StoredTask, task: Task) -> None:
        self.store.replace(task)
        self.reindex(StoredTask(st.seq, task))

    def atomic(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def pausing(self, session_id: str) -> AbstractContextManager[None]:
        return contextlib.nullcontext()  # the FIFO runs one delivery or write at a time

    def delivering(
        self, group: Group, forget: Callable[[str], None]
    ) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def delivering_to(
        self, group: Group, retry_in: Callable[[str], int] | None
    ) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def keep_leases(self, ids: Sequence[str]) -> None:
        return None

    def listen(self, on_change: Callable[[dict[str, str]], None]) -> None:
        return None  # nobody else writes this store

    def end_pass(self) -> None:
        return None


class ClaimedDue:
    """Due tasks claimed from a store shared by several hosts."""

    def __init__(self, claims: ClaimingStore) -> None:
        self.claims = claims
        self.lease_ms: int | None = claims.lease_ms
        #: Set by a batched claimed delivery (schedlog/host/batch_claims.py): :meth:`due`
        #: then claims a :class:`Batch` under its sessions' locks, held until :meth:`end_pass`.
        self.batched = False
        self.batch: Batch | None = None

    def reindex(self, st: StoredTask) -> None:
        return None  # the store is the index

    def unindex(self, task_id: str) -> None:
        return None

    def next_target(self, excluded: Iterable[str] = ()) -> int | None:
        return self.claims.next_wake(excluded)

    def due(self, now: int, excluded: Iterable[str] = ()) -> list[StoredTask]:
        """Claimed for this host (a lease), up to a batch at a time; batched, under the locks
        of their sessions until :meth:`end_pass` (a new claim ends the previous batch)."""
        if self.batched and isinstance(self.claims, ClaimsBatches):
            self.end_pass()
            batch = self.claims.claim_batch(now, excluded)
            if not batch.tasks:
                batch.close()
                return []
            self.batch = batch
            return list(batch.tasks)
        return self.claims.claim_due(now, excluded)

    def end_pass(self) -> None:
        batch, self.batch = self.batch, None
        if batch is not None:
            batch.close()

    def active_count(self) -> int:
        return self.claims.active_count()

    def due_count(self, now: int) -> int:
        return self.claims.due_count(now)

    def commit(self, st: StoredTask, task: Task) -> None:
        self.claims.commit_claimed(task)

    def atomic(self) -> AbstractContextManager[None]:
        """The row is locked when read and the write is a compare-and-set on its version, so
        an expected-state check sees every other writer's committed change."""
        return self.claims.atomic()

    @contextlib.contextmanager
    def pausing(self, session_id: str) -> Iterator[None]:
        """Under the session's lock, which a host delivering to the session holds from its
        plan to its commit: a delivery that planned before the pause commits first, and one
        that plans after it reads the task paused and sends nothing."""
        if "\x00" in session_id or not _utf8(session_id):
            with self.claims.atomic():  # no task can be bound to a session id never stored
                yield
            return
        with self.claims.session_lock(session_id), self.claims.atomic():
            yield

    @contextlib.contextmanager
    def delivering(self, group: Group, forget: Callable[[str], None]) -> Iterator[None]:
        """Under the session's lock, on the log as other hosts left it (re-read); the claims
        end with the delivery."""
        try:
            with self.claims.session_lock(group.session_id):
                forget(group.session_id)
                try:
                    yield
                finally:
                    forget(group.session_id)
        except GroupFailed:
            raise
        except Exception as exc:  # the lock itself: the database is unreachable
            raise GroupFailed(group.ids, exc) from exc
        finally:
            self.claims.release(group.ids)

    @contextlib.contextmanager
    def delivering_to(self, group: Group, retry_in: Callable[[str], int] | None) -> Iterator[None]:
        """The claims end with the group: released, except those of failed members when
        ``retry_in`` gives their backoff delay, which are held that long, so that no other
        host retries them before this one would."""
        held: dict[str, int] = {}
        try:
            yield
        except GroupFailed as exc:
            if retry_in is not None:
                held = {task_id: retry_in(task_id) for task_id in exc.ids}
            raise
        finally:
            if held:
                self.claims.hold(held)
            self.claims.release([task_id for task_id in group.ids if task_id not in held])

    def keep_leases(self, ids: Sequence[str]) -> None:
        mine = self.claims.extend_leases(ids)
        lost = [task_id for task_id in ids if task_id not in mine]
        if lost:  # another host may be delivering them
            raise ScheduleError("internal_error", f"{MSG_LEASE_LOST}: {', '.join(lost)}")

    def listen(self, on_change: Callable[[dict[str, str]], None]) -> None:
        self.claims.listen(on_change)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def index_order(keys: list[tuple[int, int, str]]) -> list[tuple[int, int, str]] | None:
    """Timer keys sorted as the index sorts them, by target, then ``seq``, then id, when they
    come in storage order (strictly ascending ``seq``, as every store gives them): a stable sort
    on the target alone, keyed by floats (exact below 2**53 ms, and every instant is), which
    Python compares much faster than large integers. None when the keys are not in storage
    order or a target is out of that range (then :class:`SortedList` sorts them itself)."""
    seqs = list(map(_SEQ, keys))
    if not all(map(lt, seqs, islice(seqs, 1, None))):
        return None
    targets = list(map(float, map(_TARGET, keys)))
    if targets and not (min(targets) > -_EXACT_FLOAT and max(targets) < _EXACT_FLOAT):
        return None
    order = sorted(range(len(keys)), key=targets.__getitem__)
    return list(map(keys.__getitem__, order))


#: The sortedcontainers release whose private layout :func:`timer_index` writes (the one the
#: tests prove it against); any other release gets ``SortedList(keys)``.
LAID_OUT_FOR: Final = "2.4.0"


def timer_index(keys: list[tuple[int, int, str]]) -> SortedList[tuple[int, int, str]]:
    """The index of ``keys`` (any order): ``SortedList(keys)``, the reference, built faster.

    Keys in storage order are sorted by :func:`index_order` and laid out as
    ``SortedList.update`` lays out a sorted input into an empty list (slices of ``_load`` keys
    and the last key of each), without the second sort it would make.
    ``tests/host/test_task_typed.py`` holds the two equal, internals and ``_check()`` included.
    """
    with collector_paused():  # a million keys and lists, none of them in a cycle
        return _timer_index(keys)


def _timer_index(keys: list[tuple[int, int, str]]) -> SortedList[tuple[int, int, str]]:
    if getattr(sortedcontainers, "__version__", None) != LAID_OUT_FOR:
        return SortedList(keys)
    ordered = index_order(keys)
    if ordered is None:
        return SortedList(keys)
    index: SortedList[tuple[int, int, str]] = SortedList()
    layout: Any = index  # the private members update() fills (sortedcontainers 2.4)
    load = layout._load
    lists = [ordered[pos : pos + load] for pos in range(0, len(ordered), load)]
    layout._lists = lists
    layout._maxes = list(map(_LAST, lists))
    layout._len = len(ordered)
    return index


def due_tasks_for(store: TaskStore) -> DueTasks:
    """The strategy ``store`` needs: claims on a shared store, else the local timer index."""
    if isinstance(store, ClaimingStore):
        return ClaimedDue(store)
    return LocalTimerIndex(store)
