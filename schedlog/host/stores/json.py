"""The JSON document backend, byte-compatible with the upstream ``schedule.json``
(docs/protocol.md#store-json).

The whole document lives in memory and every task write replaces the file atomically: a
temporary file in the same directory, ``fsync``, rename over the original, ``fsync`` of the
directory. Storage order is the key order of ``tables.tasks``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from schedlog._crashpoints import crashpoint
from schedlog.errors import StoreOpenError
from schedlog.files import FILE_MODE
from schedlog.host.stores.base import StoredTask, StoreLock, StoreWriteError, check_holdable
from schedlog.host.task import InvalidTaskError, Task, decode_task, encode_task
from schedlog.rules.text import json_int
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = ["JsonTaskStore", "dumps_document", "validate_document"]

_TOP_KEYS: Final = frozenset({"unit", "global", "tables"})
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _malformed(message: str) -> StoreOpenError:
    return StoreOpenError("malformed-medium", message)


def validate_document(data: bytes) -> list[tuple[str, Task]]:
    """The tasks of a ``schedule.json`` document, in storage order, or :class:`StoreOpenError`.

    Checks run in the order of docs/protocol.md#open-failures: syntax, top level and ``unit``,
    version, ``tables``, then each task.
    """
    try:
        doc = loads_strict(data)
    except JSONSyntaxError as exc:
        raise _malformed(f"schedule store is not valid JSON: {exc.message}") from None
    if not isinstance(doc, dict) or doc.keys() != _TOP_KEYS:
        raise _malformed("schedule store must be an object with exactly unit, global and tables")
    unit = doc["unit"]
    if not isinstance(unit, dict) or unit.keys() != {"name", "version"}:
        raise _malformed('schedule store unit must be {"name":"schedule","version":V}')
    if unit["name"] != "schedule":
        raise _malformed('schedule store unit.name must be "schedule"')
    if doc["global"] is not None:
        raise _malformed("schedule store global must be null")
    if json_int(unit["version"]) != 1:
        raise StoreOpenError(
            "version-mismatch", f"schedule store unit.version is {unit['version']!r}, not 1"
        )
    tables = doc["tables"]
    if not isinstance(tables, dict) or tables.keys() != {"tasks"}:
        raise _malformed("schedule store tables must be an object with exactly tasks")
    tasks = tables["tasks"]
    if not isinstance(tasks, dict):
        raise _malformed("schedule store tables.tasks must be an object")
    out: list[tuple[str, Task]] = []
    for key, value in tasks.items():
        try:
            out.append((key, decode_task(key, value)))
        except InvalidTaskError as exc:
            raise StoreOpenError("invalid-record", f"task {key!r}: {exc.message}") from None
    return out


def dumps_document(tasks: dict[str, Any]) -> bytes:
    """The document text: 2-space indent, ``": "`` and ``","``, non-ASCII as itself, trailing
    newline. Lone surrogates, which UTF-8 cannot carry, are escaped as JSON.stringify does."""
    doc = {"unit": {"name": "schedule", "version": 1}, "global": None, "tables": {"tasks": tasks}}
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` durably: temp file, fsync, rename, fsync directory."""
    directory = path.parent
    tmp = directory / f".{path.name}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        crashpoint("json_store.before_rename")
        os.replace(tmp, path)
        crashpoint("json_store.before_dir_fsync")
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise StoreWriteError(f"cannot write {path}: {exc}") from exc


def _remove_stale_temps(path: Path) -> None:
    """Remove temporary documents that a writer killed before its rename left behind.

    Runs only after the store validated, under the store's exclusive lock, so no live writer
    owns them; a refused store is never touched. The name pattern is the one
    :func:`atomic_write` uses, so no other file can match.
    """
    prefix = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        middle = name[len(prefix) : -len(".tmp")]
        if name.startswith(prefix) and name.endswith(".tmp") and middle.isdigit():
            with contextlib.suppress(OSError):
                os.unlink(path.parent / name)


class JsonTaskStore:
    """A :class:`~schedlog.host.stores.base.TaskStore` over one ``schedule.json`` document."""

    def __init__(self, path: Path, tasks: list[tuple[str, Task]], lock: StoreLock) -> None:
        self.path = path
        self._lock: StoreLock | None = lock
        self._seq = itertools.count(1)
        self._tasks: dict[str, StoredTask] = {
            key: StoredTask(next(self._seq), task) for key, task in tasks
        }
        self._docs: dict[str, Any] = {key: encode_task(task) for key, task in tasks}

    @classmethod
    def open(cls, path: Path) -> JsonTaskStore:
        """Lock and validate ``path``; a missing file is an empty store, created on first write."""
        lock = StoreLock(path)
        try:
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                tasks: list[tuple[str, Task]] = []
            except OSError as exc:
                raise _malformed(f"cannot read schedule store {path}: {exc}") from None
            else:
                tasks = validate_document(data)
        except BaseException:
            lock.release()
            raise
        _remove_stale_temps(path)
        return cls(path, tasks, lock)

    # reads
    def tasks(self) -> Iterator[StoredTask]:
        return iter(list(self._tasks.values()))

    def session_tasks(self, session_id: str) -> list[StoredTask]:
        return [st for st in self._tasks.values() if st.task.session_id == session_id]

    def get(self, task_id: str) -> StoredTask | None:
        return self._tasks.get(task_id)

    def active_targets(self) -> Iterator[tuple[int, int, str]]:
        """The timer-index rows, from the tasks decoded at open and kept since."""
        return iter(
            [
                (st.task.record.scheduled_at, st.seq, key)
                for key, st in self._tasks.items()
                if st.task.active
            ]
        )

    def count(self) -> int:
        return len(self._tasks)

    # writes
    def _commit(self, docs: dict[str, Any]) -> None:
        atomic_write(self.path, dumps_document(docs))
        self._docs = docs

    def insert(self, task: Task) -> int:
        check_holdable(task, False, self.path)
        if task.id in self._tasks:
            raise StoreWriteError(f"task {task.id!r} already exists")
        docs = dict(self._docs)
        docs[task.id] = encode_task(task)
        self._commit(docs)
        seq = next(self._seq)
        self._tasks[task.id] = StoredTask(seq, task)
        return seq

    def insert_many(self, tasks: Sequence[Task]) -> list[int]:
        """Append new tasks with one document rewrite; all or none are written."""
        docs = dict(self._docs)
        for task in tasks:
            check_holdable(task, False, self.path)
            if task.id in docs:
                raise StoreWriteError(f"task {task.id!r} already exists")
            docs[task.id] = encode_task(task)
        self._commit(docs)
        seqs: list[int] = []
        for task in tasks:
            seq = next(self._seq)
            self._tasks[task.id] = StoredTask(seq, task)
            seqs.append(seq)
        return seqs

    def replace(self, task: Task) -> None:
        old = self._tasks.get(task.id)
        if old is None:
            raise StoreWriteError(f"task {task.id!r} does not exist")
        check_holdable(task, False, self.path)
        docs = dict(self._docs)
        docs[task.id] = encode_task(task)
        self._commit(docs)
        self._tasks[task.id] = StoredTask(old.seq, task)

    def delete(self, task_id: str) -> bool:
        if task_id not in self._tasks:
            return False
        docs = dict(self._docs)
        del docs[task_id]
        self._commit(docs)
        del self._tasks[task_id]
        return True

    @property
    def locked_by_this_process(self) -> bool:
        """Always: the store lock is held from open to close (:class:`LocalStore`)."""
        return True

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None
