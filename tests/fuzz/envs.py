"""Live environments the tool and batch targets run against, reused across inputs.

Each is a real engine on real files in a scratch directory (on ``/dev/shm`` when it exists, so
the many ``fsync`` calls cost nothing), driven on a virtual clock. An environment is rebuilt
from scratch every :data:`RESET_EVERY` uses, so state stays small and inputs stay cheap.
Diagnostics are captured (never printed); the events that mean "an exception was swallowed"
are reported as escapes by the targets.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import structlog
from structlog.testing import capture_logs

from schedlog.cli.host_cmd import HostBatch
from schedlog.cli.session_cmd import session_batch_handlers
from schedlog.eventlog import read_log
from schedlog.host.remote import call_remote
from schedlog.host.stores.json import validate_document
from schedlog.host.stores.open import Backend
from schedlog.host.stores.sqlite_validate import validate_sqlite
from schedlog.invariant.logs import validate_log
from schedlog.runtime.batch import BatchSession
from tests.fuzz.gen import DAY, T0, RandomSource, Ref, mutate

RESET_EVERY: Final = 100
MAX_TASKS: Final = 30
#: Log events that mean an exception was caught and turned into a generic failure.
SWALLOWED: Final = frozenset({"tool.failed", "delivery.stopped", "batch.internal_error"})

_ROOT: Path | None = None
_OPEN: list[Any] = []


def close_all() -> None:
    """Close every environment (their event loops and files)."""
    while _OPEN:
        _OPEN.pop().close()


def scratch_root() -> Path:
    global _ROOT
    if _ROOT is None:
        shm = Path("/dev/shm")
        base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
        _ROOT = Path(tempfile.mkdtemp(prefix="schedlog-fuzz-", dir=base))
        atexit.register(shutil.rmtree, _ROOT, True)
        atexit.register(close_all)  # runs first: files close before their directory goes
    return _ROOT


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(dir=scratch_root()))


@contextlib.contextmanager
def captured() -> Iterator[list[dict[str, Any]]]:
    """Capture structlog events (nothing reaches stdout) for the duration."""
    with capture_logs() as logs:
        yield logs


def swallowed(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The captured events that report an exception caught by a catch-all.

    One is documented and kept out: the SQLite backend cannot store a session id with a lone
    surrogate (SQLite text is UTF-8), so such a create fails as a storage failure.
    """
    return [
        e
        for e in logs
        if e.get("event") in SWALLOWED
        and not (
            str(e.get("error", "")).startswith("StoreWriteError(")
            and "surrogates not allowed" in str(e.get("error", ""))
        )
    ]


# --- session-local --------------------------------------------------------------------------------


class SessionEnv:
    """A :class:`BatchSession` over one log file; rebuilt every :data:`RESET_EVERY` uses."""

    def __init__(self) -> None:
        self.uses = 0
        self.dir = scratch_dir()
        self.session: BatchSession | None = None
        self._fresh()
        _OPEN.append(self)

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def _fresh(self) -> None:
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.session = BatchSession(self.dir / "s-1.jsonl")
        self.uses = 0

    def use(self) -> BatchSession:
        self.uses += 1
        if self.uses > RESET_EVERY or self.session is None or self.session.faulted:
            self._fresh()
        assert self.session is not None
        return self.session

    def handlers(self) -> dict[str, Any]:
        return session_batch_handlers(self.use())

    def check_log(self) -> None:
        """The log on disk must still read and fold (what we append must read back)."""
        path = self.dir / "s-1.jsonl"
        if path.exists():
            validate_log(read_log(path))

    @contextlib.contextmanager
    def on_bytes(self, data: bytes) -> Iterator[BatchSession]:
        """A throw-away session over a log file holding exactly ``data``."""
        path = self.dir / "damaged.jsonl"
        path.write_bytes(data)
        session = BatchSession(path, session_id="damaged")
        try:
            yield session
        finally:
            session.close()
            path.unlink(missing_ok=True)


# --- host -----------------------------------------------------------------------------------------

_SEED_SELECTORS: Final[tuple[dict[str, object], ...]] = (
    {"after_seconds": 3600},
    {"at": "2026-05-01T12:00:00Z"},
    {"every_seconds": 900},
    {"daily": {"time": "09:30:00", "time_zone": "Europe/Berlin"}},
    {"weekly": {"time": "08:00:00.5", "time_zone": "US/Eastern", "weekdays": [1, 3, 5]}},
    {"cron": {"expression": "*/20 9-17 * * 1-5", "time_zone": "Australia/Lord_Howe"}},
)
SESSIONS: Final = ("s-1", "s-2")


class HostEnv:
    """A :class:`HostBatch` (store, sessions directory, virtual clock) with seeded tasks.

    The seed gives every kind in one session and two recurring tasks in another, then a tick a
    day later, so the store holds active and inactive tasks and delivery histories for the
    inputs to reach. The seeded files are kept as a template; a reset copies them back.
    """

    def __init__(self, backend: Backend = "json") -> None:
        self.backend = backend
        self.uses = 0
        self.dir = scratch_dir()
        self.template = scratch_dir()
        self.store_name = "schedule.json" if backend == "json" else "schedule.db"
        self.batch: HostBatch | None = None
        self._seed()
        self._fresh()
        _OPEN.append(self)

    def _open(self, directory: Path) -> HostBatch:
        batch = HostBatch(str(directory / self.store_name), str(directory / "sessions"))
        assert batch.service is not None, batch.open_error
        return batch

    def _seed(self) -> None:
        with captured():
            self.batch = self._open(self.template)
            self.batch.clock.now = T0
            for session, selectors in (("s-1", _SEED_SELECTORS), ("s-2", _SEED_SELECTORS[2:4])):
                for n, selector in enumerate(selectors):
                    args = {"prompt": f"seed {n}", "title": f"Seed {n}", **selector}
                    value = self.run(self.batch.tools.call("schedule_create", session, args))
                    assert "code" not in value, value
            self.batch.clock.now = T0 + DAY
            self.run(self.batch.service.tick())
            self.batch.close()
            self.batch = None

    def _fresh(self) -> None:
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.copytree(self.template, self.dir)
        with captured():
            self.batch = self._open(self.dir)
        self.uses = 0

    def close(self) -> None:
        if self.batch is not None:
            with captured():
                self.batch.close()
            self.batch = None

    def use(self) -> HostBatch:
        self.uses += 1
        if self.uses > RESET_EVERY or self.batch is None or self._count() > MAX_TASKS:
            self._fresh()
        assert self.batch is not None
        return self.batch

    def run(self, coro: Any) -> Any:
        assert self.batch is not None
        return self.batch.loop.run_until_complete(coro)

    def call_tool(self, name: str, session_id: str, args: object) -> Any:
        assert self.batch is not None
        return self.run(self.batch.tools.call(name, session_id, args))

    def call_remote(self, name: str, args: dict[str, Any]) -> Any:
        assert self.batch is not None and self.batch.service is not None
        return self.run(call_remote(self.batch.service, name, args))

    def tick(self) -> list[dict[str, object]]:
        assert self.batch is not None and self.batch.service is not None
        return [d.to_json() for d in self.run(self.batch.service.tick())]

    def check_store(self) -> None:
        """The store on disk must still open: nothing written may refuse it
        (docs/protocol.md#open-failures)."""
        path = self.dir / self.store_name
        if self.backend == "json":
            if path.exists():
                validate_document(path.read_bytes())
        else:
            validate_sqlite(path)

    def _count(self) -> int:
        assert self.batch is not None and self.batch.service is not None
        return self.batch.service.core.store.count()

    # --- references -------------------------------------------------------------------------

    def _tasks(self) -> list[Any]:
        assert self.batch is not None and self.batch.service is not None
        return [st.task for st in self.batch.service.core.store.tasks()]

    def resolve(self, value: object) -> object:
        """``value`` with every :class:`Ref` replaced by live data (a fresh copy)."""
        if not _has_ref(value):
            return value
        return _resolve(value, self._tasks())


def _has_ref(value: object, depth: int = 0) -> bool:
    if isinstance(value, Ref):
        return True
    if depth > 8:
        return False
    if isinstance(value, dict):
        return any(_has_ref(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_has_ref(v, depth + 1) for v in value)
    return False


def _resolve(value: object, tasks: list[Any], depth: int = 0) -> object:
    if depth > 8:  # references sit near the top; deeper values are kept as they are
        return value
    if isinstance(value, Ref):
        if not tasks:
            return "schedule-none" if value.what != "record" else {}
        task = tasks[value.index % len(tasks)]
        if value.what == "id":
            return task.id
        if value.what == "session":
            return task.session_id
        if value.what == "message":
            history = task.history
            records = history.records if history is not None else ()
            return records[value.index % len(records)].message_id if records else "m0"
        record = task.record.to_json()
        if value.mutations:
            record = mutate(RandomSource(value.seed), record, value.mutations)
        return record
    if isinstance(value, dict):
        return {k: _resolve(v, tasks, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, tasks, depth + 1) for v in value]
    return value


def quiet_structlog() -> None:
    """Route diagnostics nowhere for the long run (capture_logs re-routes them per input)."""
    structlog.configure(processors=[_drop], cache_logger_on_first_use=False)


def _drop(logger: Any, name: str, event: Any) -> Any:
    raise structlog.DropEvent
