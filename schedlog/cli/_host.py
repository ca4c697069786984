"""The implementation of ``schedlog host`` and ``schedlog migrate`` (docs/protocol.md#batch-host,
docs/protocol.md#batch-session, docs/operations.md#migration).

:mod:`schedlog.cli.host_cmd` holds only the argparse wiring and imports this module when one of
its commands runs.

* ``host batch``: JSON Lines requests on a virtual clock (every clock sample is the request's
  ``now``); deliveries happen only on ``tick``.
* ``host run``: the host service on the real clock until SIGINT/SIGTERM, delivering into the
  sessions directory.
* ``host catalog`` / ``host history``: human read commands (tables, or ``--json``).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TextIO, TypeVar

from schedlog.absent import ABSENT
from schedlog.cli.common import (
    configure_diagnostics,
    parse_request_instant,
    report_error,
    require,
    run_batch,
    wants_json,
    write_json_line,
)
from schedlog.cli.run_log import (
    configure_run_logging,
    start_fields,
    started_message,
    stopped_message,
)
from schedlog.clock import Clock
from schedlog.errors import ScheduleError, StoreOpenError
from schedlog.host.config import Retention
from schedlog.host.due import LocalTimerIndex, timer_index
from schedlog.host.endpoint import with_serve_hint
from schedlog.host.remote import REMOTE_OPERATIONS, call_remote
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory, SessionsPathError, check_sessions_path
from schedlog.host.stores.base import StoredTask, TaskStore
from schedlog.host.stores.open import Backend, open_store, read_tasks, select_backend
from schedlog.host.tools import TOOL_NAMES, HostTools
from schedlog.rules.instants import format_instant
from schedlog.rules.text import js_dumps, printable

if TYPE_CHECKING:
    from sortedcontainers import SortedList

    from schedlog.host.metrics import HostMetrics
    from schedlog.host.stores.sqlite import EarlyValidation

__all__ = [
    "BatchClock",
    "HostBatch",
    "RunOptions",
    "cmd_batch",
    "cmd_catalog",
    "cmd_history",
    "cmd_migrate",
    "cmd_run",
    "run_host",
]

T = TypeVar("T")


class BatchClock:
    """The virtual clock of batch mode: every sample is the current request's ``now``."""

    def __init__(self) -> None:
        self.now = 0

    def now_ms(self) -> int:
        return self.now

    async def sleep_until(self, deadline_ms: int) -> None:  # the batch service has no timer
        await asyncio.sleep(0)


class HostBatch:
    """One ``host batch`` process: the store opened once, a private event loop, a virtual clock.

    When the store fails to open, :attr:`open_error` is set and every request line is answered
    with that error; the store is left untouched.
    """

    def __init__(
        self,
        store: str,
        sessions: str,
        *,
        backend: Backend | None = None,
        keep: Retention | None = None,
    ) -> None:
        self.loop = asyncio.new_event_loop()
        self.clock = BatchClock()
        self.sessions = SessionsDirectory(sessions)
        self.open_error: StoreOpenError | None = None
        self.service: HostService | None = None
        try:
            opened: TaskStore = open_store(store, backend)
        except StoreOpenError as exc:
            self.open_error = with_serve_hint(exc, store)
            return
        self.service = self._run(self._start(opened, keep or Retention()))
        self.tools = HostTools(self.service)

    async def _start(self, store: TaskStore, keep: Retention) -> HostService:
        return HostService(store, self.sessions, self.clock, keep, auto_drive=False)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def _service(self) -> HostService:
        assert self.service is not None
        return self.service

    def _at(self, request: dict[str, Any]) -> None:
        self.clock.now = parse_request_instant(request.get("now", ABSENT))

    # --- handlers ------------------------------------------------------------------------

    def _tool(self, request: dict[str, Any]) -> Any:
        session = require(request, "session", str)
        self._at(request)
        args = require(request, "args", dict)
        return self._run(self.tools.call(request["op"], session, args))

    def _remote(self, request: dict[str, Any]) -> Any:
        self._at(request)
        args = require(request, "args", dict)
        return self._run(call_remote(self._service(), request["op"], args))

    def _tick(self, request: dict[str, Any]) -> Any:
        self._at(request)
        sent = self._run(self._service().tick())
        return {"delivered": [d.to_json() for d in sent]}

    def _archive_session(self, request: dict[str, Any]) -> str | None:
        self._at(request)
        args = require(request, "args", dict)
        value = args.get("sessionId")
        return value if type(value) is str else None

    def _archive_activity(self, request: dict[str, Any]) -> Any:
        session = self._archive_session(request)
        return None if session is None else self._service().archive_activity(session)

    def _archive_stop(self, request: dict[str, Any]) -> Any:
        session = self._archive_session(request)
        deleted = [] if session is None else self._run(self._service().archive_stop(session))
        return {"deleted": deleted}

    def handlers(self) -> dict[str, Any]:
        table: dict[str, Any] = {name: self._tool for name in TOOL_NAMES}
        table.update({name: self._remote for name in REMOTE_OPERATIONS})
        table["tick"] = self._tick
        table["archive_activity"] = self._archive_activity
        table["archive_stop"] = self._archive_stop
        return table

    def serve(self, lines: Iterable[str], out: TextIO | None = None) -> None:
        """Answer every request line (docs/protocol.md#batch)."""
        if self.open_error is not None:
            error = {"error": self.open_error.to_value()}
            for _line in lines:
                write_json_line(error, out)
            return
        run_batch(lines, self.handlers(), out)

    def close(self) -> None:
        if self.service is not None:
            self._run(self.service.aclose())
        self.sessions.close()
        self.loop.close()


# --- commands ----------------------------------------------------------------------------


def cmd_batch(args: argparse.Namespace) -> int:
    configure_diagnostics()
    keep = Retention(args.history_days, args.history_records)
    batch = HostBatch(args.store, args.sessions, backend=args.backend, keep=keep)
    try:
        batch.serve(sys.stdin)
    finally:
        batch.close()
    return 0


async def run_host(
    store_path: str,
    backend: Backend | None,
    sessions_dir: str,
    keep: Retention | None = None,
    *,
    clock: Clock,
    stop: asyncio.Event,
    err: TextIO | None = None,
    log_format: str = "json",
    options: RunOptions | None = None,
) -> int:
    """``host run``: serve until ``stop`` is set, logging ``host.started``, one
    ``delivery.sent`` per message and ``host.stopped`` (docs/operations.md#host-run).

    A sessions path that is not a directory, a store that fails to open or a metrics address
    it cannot listen on is reported on ``err`` (stderr), as ``error: …`` in the human form or
    as the ``{"error": …}`` line otherwise, and gives exit status 1.
    """
    import structlog

    from schedlog.cli.serve_log import DeliveryLines
    from schedlog.host.retry import Backoff
    from schedlog.host.stopping import stop_service

    opts = options or RunOptions()
    stream = err if err is not None else sys.stderr
    try:
        check_sessions_path(sessions_dir)
        store, early = _open_for_run(store_path, backend, clock.now_ms())
    except StoreOpenError as exc:
        return _refuse(with_serve_hint(exc, store_path), stream, log_format)
    except SessionsPathError as exc:
        return _refuse(exc, stream, log_format)
    log = structlog.get_logger("schedlog.cli")
    chosen = select_backend(store_path, backend)
    metrics = _metrics_for(opts, chosen, store)
    sessions = SessionsDirectory(sessions_dir)
    backoff = Backoff(opts.retry_base_ms, opts.retry_cap_ms)
    service = HostService(store, sessions, clock, keep or Retention(), backoff=backoff)
    lines = DeliveryLines()
    lines.watch(service)
    stop_metrics = None
    if metrics is not None:
        metrics.watch(service)
        try:
            stop_metrics, metrics_url = _listen_metrics(opts, metrics)
        except ScheduleError as exc:
            await service.aclose()
            sessions.close()
            return _refuse(exc, stream, log_format)
        log.info(
            "metrics.listening", url=metrics_url, message=f"schedule: metrics at {metrics_url}"
        )
    failed: StoreOpenError | None = None
    try:
        # A store opened early: its due rows are delivered while the rest is validated.
        failed = None if early is None else await _validate_rest(service, early, stop)
        if failed is None:
            if not stop.is_set():
                _log_started(log, service, str(store.path), chosen, sessions_dir)
            await stop.wait()
    finally:
        await stop_service(service, opts.stop_timeout)
        sessions.close()
        if stop_metrics is not None:
            stop_metrics()
        if failed is None:
            log.info(
                "host.stopped",
                message=stopped_message("host", lines.delivered),
                delivered=lines.delivered,
            )
    # A bad row found after the due rows were delivered: refused as at open (nothing more
    # is written, and the bad row never was).
    return 0 if failed is None else _refuse(failed, stream, log_format)


#: How far past start-up a reminder counts as due for ``host run``'s early start: the rows
#: that may be due by then are delivered (and their timers kept) while the rest of a large
#: SQLite store is validated (docs/decisions.md, "Start-up: due rows first").
EARLY_MARGIN_MS: Final = 60_000
#: The last canonical instant (9999-12-31T23:59:59.999Z).
_LAST_INSTANT_MS: Final = 253_402_300_799_999


def _open_for_run(
    store_path: str, backend: Backend | None, now_ms: int
) -> tuple[TaskStore, EarlyValidation | None]:
    """The store for ``host run``: an SQLite store opened early when a row may be due within
    :data:`EARLY_MARGIN_MS` (:meth:`SqliteTaskStore.open_early`), any other as
    :func:`open_store` opens it."""
    if select_backend(store_path, backend) != "sqlite":
        return open_store(store_path, backend), None
    from schedlog.host.stores.sqlite import SqliteTaskStore

    bound = format_instant(max(0, min(now_ms + EARLY_MARGIN_MS, _LAST_INSTANT_MS)))
    return SqliteTaskStore.open_early(Path(store_path), bound)


async def _validate_rest(
    service: HostService, early: EarlyValidation, stop: asyncio.Event
) -> StoreOpenError | None:
    """Validate every row of a store opened early on a thread, while the service delivers
    what is due, then index the store's other tasks; the error of a bad row or store, else
    None (also when ``stop`` was set first: the validation is cancelled between chunks)."""
    from schedlog.host.stores.sqlite_load import ValidationStopped

    loop = asyncio.get_running_loop()
    work = loop.run_in_executor(None, _rest_index, early)
    stopping = asyncio.ensure_future(stop.wait())
    either: set[asyncio.Future[Any]] = {work, stopping}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if not work.done():
        early.cancel.set()
    try:
        rest = await work
    except ValidationStopped:
        return None
    except StoreOpenError as exc:
        return exc
    index = service.core.due_tasks
    assert isinstance(index, LocalTimerIndex)
    index.widen(rest)
    service.request_drive()  # the next target may be one of them
    return None


def _rest_index(early: EarlyValidation) -> SortedList[tuple[int, int, str]]:
    """The timer index of the rows not read early, once every row is validated (a thread)."""
    return timer_index(early.run())


def _log_started(log: Any, service: HostService, store: str, backend: str, sessions: str) -> None:
    """``host.started``: the store, the backend, the sessions directory and the next target."""
    target = start_fields(service.core.next_target())
    fields: dict[str, Any] = {
        "store": store,
        "backend": backend,
        "sessions": sessions,
        "active": service.core.active_count(),
        **target,
    }
    log.info(
        "host.started",
        message=started_message("host", fields),
        store=fields["store"],
        backend=fields["backend"],
        sessions=sessions,
        active=fields["active"],
        nextTarget=target["nextTarget"],
        nextTargetLocal=target["nextTargetLocal"],
    )


class RunOptions(NamedTuple):
    """``host run``'s retry, stop and metrics flags (docs/cli.md#host-run)."""

    retry_base_ms: int = 1000
    retry_cap_ms: int = 300_000
    stop_timeout: float = 10.0
    metrics_listen: str | None = None


def _refuse(exc: ScheduleError, stream: TextIO, log_format: str) -> int:
    if log_format == "human":
        print(f"error: {exc.message} ({exc.code})", file=stream, flush=True)
    else:
        write_json_line({"error": exc.to_value()}, stream)
    return 1


def _metrics_for(opts: RunOptions, backend: str, store: TaskStore) -> HostMetrics | None:
    if opts.metrics_listen is None:
        return None
    from schedlog.host.metrics import HostMetrics

    metrics = HostMetrics(backend)
    metrics.instrument_store(store)
    return metrics


def _listen_metrics(opts: RunOptions, metrics: HostMetrics) -> tuple[Callable[[], None], str]:
    from schedlog.cli._serve import parse_listen
    from schedlog.host.metrics import serve_metrics

    assert opts.metrics_listen is not None
    host, port = parse_listen(opts.metrics_listen)
    try:
        bound, stop = serve_metrics(host, port, metrics)
    except OSError as exc:
        raise ScheduleError(
            "listen-failed", f"cannot listen on --metrics-listen {opts.metrics_listen}: {exc}"
        ) from None
    shown = f"[{host}]" if ":" in host else host
    return stop, f"http://{shown}:{bound}/metrics"


async def _run_host(args: argparse.Namespace, log_format: str) -> int:
    from schedlog.runtime.clock import SystemClock

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    keep = Retention(args.history_days, args.history_records)
    options = RunOptions(
        args.retry_base_ms, args.retry_cap_ms, args.stop_timeout, args.metrics_listen
    )
    return await run_host(
        args.store,
        args.backend,
        args.sessions,
        keep,
        clock=SystemClock(),
        stop=stop,
        log_format=log_format,
        options=options,
    )


def cmd_run(args: argparse.Namespace) -> int:
    log_format = configure_run_logging(args.log_format, args.log_level)
    try:
        _check_run_flags(args)
    except ValueError as exc:
        print(f"schedlog host run: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(_run_host(args, log_format))


def _check_run_flags(args: argparse.Namespace) -> None:
    if not 0 < args.retry_base_ms <= args.retry_cap_ms:
        raise ValueError("--retry-base-ms must be positive and at most --retry-cap-ms")
    if not 0.1 <= args.stop_timeout <= 3600:
        raise ValueError("--stop-timeout must be from 0.1 through 3600 seconds")
    if args.metrics_listen is not None:
        from schedlog.cli._serve import parse_listen

        try:
            parse_listen(args.metrics_listen)
        except ValueError:
            raise ValueError(
                f"--metrics-listen must be HOST:PORT, not {args.metrics_listen!r}"
            ) from None
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            raise ValueError(
                "--metrics-listen needs the metrics extra: pip install 'schedlog[metrics]'"
            ) from None


def _open_for_read(args: argparse.Namespace) -> TaskStore | None:
    try:
        return open_store(args.store, args.backend)
    except StoreOpenError as exc:
        write_json_line({"error": with_serve_hint(exc, args.store).to_value()})
        return None


def _read_tasks(args: argparse.Namespace, as_json: bool) -> list[StoredTask] | None:
    """The store's tasks for a read command, read beside a service that holds the store
    (docs/decisions.md, "Readers beside a writer"); None when it is refused, reported as
    ``{"error"}`` on stdout (JSON) or ``error: …`` on stderr (a terminal)."""
    try:
        return read_tasks(args.store, args.backend)
    except StoreOpenError as exc:
        report_error(f"schedlog host {args.host_command}", exc.to_value(), as_json)
        return None


def _table(cells: list[list[str]], header: list[str]) -> str:
    rows = [[printable(c) for c in r] for r in cells]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *rows]]
    return "\n".join(line.rstrip() for line in lines)


def cmd_catalog(args: argparse.Namespace) -> int:
    """The catalog as JSON Lines (one entry a line) with --json or when stdout is not a
    terminal, else a table (docs/cli.md#host-catalog)."""
    from schedlog.cli._cells import cell
    from schedlog.host.catalog import catalog_order
    from schedlog.host.task import catalog_entry

    as_json = wants_json(args)
    stored = _read_tasks(args, as_json)
    if stored is None:
        return 1
    tasks = catalog_order(st.task for st in stored)
    entries = [catalog_entry(t) for t in tasks]
    if as_json:
        for entry in entries:
            write_json_line(entry)
        return 0
    rows = [
        [e["scheduledAt"], e["status"], e["kind"], cell(e["sessionId"]), e["id"], cell(e["title"])]
        for e in entries
    ]
    print(_table(rows, ["SCHEDULED AT", "STATUS", "KIND", "SESSION", "ID", "TITLE"]))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """A history page as JSON with --json or when stdout is not a terminal, else a table."""
    from schedlog.errors import ScheduleInputError
    from schedlog.host.history import check_limit, history_page

    as_json = wants_json(args)
    stored = _read_tasks(args, as_json)
    if stored is None:
        return 1
    st = next((s for s in stored if s.task.id == args.id), None)
    try:
        limit = check_limit(args.limit)
        if st is None or st.task.session_id != args.session:
            page: dict[str, Any] = {"id": args.id, "code": "schedule_not_found"}
        else:
            page = history_page(
                st.task, limit, args.before, Retention(), has_before=args.before is not None
            )
    except ScheduleInputError as exc:  # a --limit outside 1-100: a usage error
        error = exc.to_value()
        error["message"] = f"--limit {js_dumps(args.limit)}: {error['message']}"
        report_error("schedlog host history", error, bool(args.json))
        return 2
    if as_json:
        write_json_line(page)
        return 1 if "code" in page else 0
    if "code" in page:
        message = (
            f"no task {js_dumps(args.id)} in session {js_dumps(args.session)}"
            if page["code"] == "schedule_not_found"
            else f"--before {js_dumps(args.before)} is not in the task's saved history"
        )
        report_error("schedlog host history", {"code": page["code"], "message": message}, False)
        return 1
    rows = [
        [r["deliveredAt"], r["scheduledAt"], r["messageId"], r.get("prompt", "")]
        for r in page["records"]
    ]
    print(_table(rows, ["DELIVERED AT", "OCCURRENCE", "MESSAGE ID", "PROMPT"]))
    if "nextBefore" in page:
        print(f"(more: --before {page['nextBefore']})")
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from schedlog.errors import ScheduleError
    from schedlog.host.migrate import migrate_log

    store = _open_for_read(args)
    if store is None:
        return 1
    try:
        result = migrate_log(args.log, store, dry_run=args.dry_run)
    except (ScheduleError, OSError) as exc:
        code = getattr(exc, "code", "corrupt_schedule_log")
        write_json_line({"error": {"code": code, "message": str(exc)}})
        return 1
    finally:
        store.close()
    if args.dry_run:  # nothing was written, and the ids a real run makes are new ones
        result = {"dryRun": True, "wouldCreate": result["created"], "skipped": result["skipped"]}
    write_json_line(result)
    return 0
