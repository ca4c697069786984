"""Start-up of ``schedlog host run`` on a large store, to its first delivery (issue 21).

Usage (repository root, ``test`` and ``postgres`` extras)::

    python -m benchmarks.startup [--tasks 1000000] [--store sqlite|postgres] [--rounds 3]
        [--baseline DIR] [--cache DIR] [--cpu]

One run: a fresh copy of a store of ``--tasks`` tasks, one of them already due; one real
``schedlog host run`` process (``--log-format json``) with an empty sessions directory. The
driver polls every 10 ms and reports the seconds from starting the process to its
``host.started`` line (**to_started_s**) and to the due reminder's follow-up in its session log
(**to_delivered_s**), then stops the host with SIGTERM; **host_cpu_s** is the host process's
CPU (user + system) from start to stop.

* SQLite: the store is filled as ``benchmarks/store_scale.py`` fills it (3 of 4 one-shot ``at``
  reminders, 1 of 4 ``every``, 1000 sessions, one task due an hour before the file was made) by
  one bulk transaction into a scratch file, cached as ``<--cache>/schedlog-startup-<N>.db``
  between runs (it stays valid: the due task stays due). Each run copies it first, outside the
  timing, so both sides read a file fresh in the page cache.
* PostgreSQL: a fresh database per run, filled by one ``INSERT … SELECT generate_series`` and
  one due task made by ``host batch`` (``benchmarks/burst.py``), outside the timing.
* ``--cpu``: instead of a host process, a fresh ``python`` process per run times, with
  ``time.process_time``, ``open_store`` (the validation of every row) and then
  ``LocalTimerIndex(store)`` (SQLite only): the CPU seconds of the work itself, which a busy
  machine inflates far less than wall time; after them, on a tree that has it,
  ``SqliteTaskStore.open_early`` with a bound a minute ahead (**early_open_cpu_s**: the first
  read of the rows that may be due and their validation, what ``host run`` does before its
  first delivery).
* ``--baseline DIR``: a source tree of another commit (``git archive COMMIT | tar -x -C DIR``);
  each round runs the baseline and then this tree, every subprocess importing its side's tree
  first. Medians per side are printed.

Prints one JSON line per run and one summary per side, each with the load average.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from benchmarks.burst import Side, _populate_pg, fresh_store, sides, time_host_start
from benchmarks.http import _load_avg


def sqlite_template(cache: Path, tasks: int) -> Path:
    """The cached populated store, made on first use (bulk insert into a scratch file that is
    renamed into place once complete)."""
    from benchmarks.store_scale import populate_sqlite

    path = cache / f"schedlog-startup-{tasks}.db"
    if path.exists():
        return path
    scratch = Path(tempfile.mkdtemp(prefix="startup-fill-", dir=cache))
    try:
        populate_sqlite(scratch / "store.db", tasks, 1, int(time.time() * 1000))
        (scratch / "store.db").rename(path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return path


def time_startup(side: Side, store: str, run_dir: Path, timeout: float) -> dict[str, Any]:
    """Seconds from ``Popen`` to ``host.started`` and to the first follow-up in a session log,
    and the CPU seconds (user + system) of the host process from start to stop
    (``host_cpu_s``: interpreter, imports, open, index, the delivery and the stop on SIGTERM,
    which follows the delivery within a poll), which a busy machine inflates far less."""
    sessions_dir = run_dir / "sessions"
    sessions_dir.mkdir()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = time_host_start(side, store, sessions_dir, run_dir, timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the host is reaped by then
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out["host_cpu_s"] = round(cpu, 3)
    return out


CPU_PROGRAM: Final = """
import json, sys, time
from pathlib import Path
from schedlog.host.due import LocalTimerIndex
from schedlog.host.stores.open import open_store
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.rules.instants import format_instant
t0 = time.process_time()
store = open_store(sys.argv[1], "sqlite")
t1 = time.process_time()
index = LocalTimerIndex(store)
t2 = time.process_time()
active = index.active_count()
store.close()
del index, store
early = None
if hasattr(SqliteTaskStore, "open_early"):  # the first read of a store opened early
    t3 = time.process_time()
    bound = format_instant(int(time.time() * 1000) + 60_000)
    first, validation = SqliteTaskStore.open_early(Path(sys.argv[1]), bound)
    early = round(time.process_time() - t3, 3)
    first.close()
print(json.dumps({"open_cpu_s": round(t1 - t0, 3), "index_cpu_s": round(t2 - t1, 3),
                  "early_open_cpu_s": early, "active": active}))
"""


def cpu_startup(side: Side, store: str) -> dict[str, Any]:
    """CPU seconds of ``open_store`` and of the timer index, in a fresh process of ``side``."""
    done = subprocess.run(
        # the side's tree first on sys.path, ahead of the working directory ("" for -c)
        [
            sys.executable,
            "-c",
            f"import sys\nsys.path.insert(0, {str(side.tree)!r})\n" + CPU_PROGRAM,
            store,
        ],
        env=side.env,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    out: dict[str, Any] = json.loads(done.stdout)
    out["total_cpu_s"] = round(out["open_cpu_s"] + out["index_cpu_s"], 3)
    return out


def run_once(
    side: Side, args: argparse.Namespace, work: Path, template: Path | None
) -> dict[str, Any]:
    run_dir = Path(tempfile.mkdtemp(prefix=f"startup-{side.name}-", dir=work))
    out: dict[str, Any] = {"side": side.name, "store": args.store, "tasks": args.tasks}
    try:
        with fresh_store(args.store, run_dir, args.url, side) as store:
            if template is not None:
                shutil.copyfile(template, store)
            else:
                _populate_pg(side, store, args.tasks, run_dir)
            out["load_avg_before"] = _load_avg()
            if args.cpu:
                out |= cpu_startup(side, store)
            else:
                out |= time_startup(side, store, run_dir, args.timeout)
            out["load_avg_after"] = _load_avg()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return out


def summaries(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for name in dict.fromkeys(r["side"] for r in results):
        runs = [r for r in results if r["side"] == name]
        summary: dict[str, Any] = {"summary": name, "runs": len(runs)}
        for key in (
            "to_started_s",
            "to_delivered_s",
            "cpu_to_delivered_s",
            "host_cpu_s",
            "open_cpu_s",
            "early_open_cpu_s",
            "index_cpu_s",
            "total_cpu_s",
        ):
            values = [r[key] for r in runs if r.get(key) is not None]
            if values:
                summary[f"median_{key}"] = round(statistics.median(values), 3)
        summary["load_avg"] = _load_avg()
        out.append(summary)
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.startup")
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default=None, help="a source tree of another commit")
    parser.add_argument("--cache", default=tempfile.gettempdir(), help="where the template lives")
    parser.add_argument("--cpu", action="store_true", help="CPU of open + index, in-process")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    args = parser.parse_args(argv)
    if args.cpu and args.store != "sqlite":
        parser.error("--cpu measures the SQLite store")
    if not args.url.startswith(("postgresql://127.0.0.1", "postgresql://postgres@127.0.0.1")):
        parser.error("--url must be a PostgreSQL server on 127.0.0.1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(json.dumps({"load_avg": _load_avg(), "argv": sys.argv[1:] if argv is None else argv}))
    cache = Path(args.cache)
    template = sqlite_template(cache, args.tasks) if args.store == "sqlite" else None
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="schedlog-startup-", dir=cache) as tmp:
        for r in range(args.rounds):
            for side in sides(args.baseline):  # interleaved: each side once per round
                out = run_once(side, args, Path(tmp), template)
                out["round"] = r + 1
                results.append(out)
                print(json.dumps(out), flush=True)
    for summary in summaries(results):
        print(json.dumps(summary), flush=True)
    return 0 if all(r.get("to_delivered_s", 0) is not None for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
