"""A burst of reminders due at one instant, delivered by real hosts on the real clock (issue 21).

Usage (repository root, ``test`` and ``postgres`` extras)::

    python -m benchmarks.burst [--reminders 10000] [--sessions 500] [--store sqlite|postgres]
        [--hosts 1[,2,3]] [--rounds 1] [--baseline DIR] [--webhook [--webhook-concurrency N]]
        [--api-probe]
    python -m benchmarks.burst --startup [--startup-tasks 1000000] [--store sqlite|postgres]

One run:

1. **Create.** ``--reminders`` one-shot ``at`` reminders due at one instant T, spread
   round-robin over ``--sessions`` sessions, by one ``schedlog host batch`` process
   (``schedule_create`` requests, each with the real time as ``now``) into a fresh store: a
   SQLite file, or a fresh PostgreSQL database on ``--url`` (migrated, dropped afterwards). T
   must lie after the end of creation plus a margin, so the rate of ``host batch`` is
   calibrated first on the same store (``min(N, 500)`` reminders due a day later, in a
   session of their own, less the time of a ``host batch`` with no request; they stay in the
   store and are not part of the burst), and T is ``now + 1.5 × N / rate + --margin``. If
   creation still ends less than one second before T, the run stops with an error (raise
   ``--margin``).
2. **Deliver.** Right after creation, ``--hosts`` K real ``schedlog host run`` processes are
   started (``host serve`` with ``--api-probe`` or ``--webhook``), each must log that it has
   started before T. The driver then polls the sessions directory every ``--poll-ms``: it reads
   only the bytes appended since its last look, and stamps each follow-up member of the burst
   with the wall time at which it was first seen. **lateness** = that time - T; the report gives
   the lateness by which 50%, 99% and 100% of the N reminders were in their logs (``null`` when
   that share never arrived), so the figures carry the poll interval as their resolution.
3. **Check.** When every reminder was seen (or after ``--timeout`` s past T), the hosts get
   SIGTERM and every session log is read with the project's reader: **doubled** = follow-up
   message ids that occur more than once plus members ``(id, occurrenceAt)`` delivered more than
   once; **missing** = burst reminders with no follow-up member. Both must be 0.
   **host_cpu_s** is the user + system CPU the host processes used from just before T until
   the burst was in (Linux ``/proc``): on a shared machine, steadier than the lateness.

Modes:

* ``--webhook``: ``host serve --deliver-to`` a receiver in this process on 127.0.0.1
  (``benchmarks/burst_receiver.py``: asyncio on a thread of its own, HTTP/1.1 keep-alive,
  signature checked, 200 after 5 ms); ``--webhook-concurrency`` is passed to the hosts.
  Lateness is stamped at the receiver when it acknowledges; doubled = members acknowledged
  under two different message ids (repeats of one message id, retries, are reported apart as
  ``repeated_posts``).
* ``--api-probe``: the hosts are ``host serve`` processes; from T until the burst is in, a
  process of its own (``benchmarks/burst_probe.py``, apart from this one's polling) sends, one
  at a time, ``GET /v1/tasks?limit=50`` and a ``schedule_create`` (due a day later) to the
  first host, alternately, and reports p50/p99/max of each.
* ``--startup``: a ``--startup-tasks`` store (SQLite: as ``benchmarks/store_scale.py`` fills
  it, one task already due; PostgreSQL: ``INSERT … SELECT generate_series`` of tasks due in 2030
  plus one already due) and one ``host run``: seconds from starting the process to its
  ``host.started`` line and to the due reminder's follow-up in its log. SQLite runs on a fresh
  copy of one populated file each time.
* ``--baseline DIR``: a source tree of another commit (``git archive COMMIT | tar -x -C DIR``).
  Every round runs each configuration with that tree's code and then with this one's: every
  subprocess (``host batch``, ``host run``, ``host serve``, ``store migrate``) imports
  ``schedlog`` from its side's tree first. Medians per side and configuration are printed.

Prints one JSON line per run and one summary line per side and configuration, each with the
load average. Every loop is bounded in count and time; all traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.burst_probe import ProbeProcess
from benchmarks.burst_receiver import Receiver
from benchmarks.http import _load_avg
from benchmarks.pg_hosts import errors_in, first_started, with_db
from schedlog.eventlog.reader import read_log
from schedlog.rules.instants import format_instant
from tests.serve.process import RUNNER, ServeProcess, start_serve

ROOT: Final = Path(__file__).resolve().parent.parent
SECRET: Final = "benchmark-burst-webhook-secret-0123"
CALIBRATION: Final = 500
DAY_MS: Final = 86_400_000
#: The longest a host may take to say it has started, and a batch process to create.
START_TIMEOUT_S: Final = 300.0
CREATE_TIMEOUT_S: Final = 1800.0


# --- sides: which tree's code a subprocess runs --------------------------------------------------


@dataclass(frozen=True)
class Side:
    """The code under test: ``name`` and the source tree its subprocesses import first."""

    name: str
    tree: Path

    @property
    def runner(self) -> str:
        """A ``python -c`` program running the CLI of this side's tree (its directory goes
        first on ``sys.path``, ahead of the working directory and the editable install)."""
        return f"import sys\nsys.path.insert(0, {str(self.tree)!r})\n" + RUNNER

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-c", self.runner, *args]

    @property
    def env(self) -> dict[str, str]:
        path = os.pathsep.join([str(self.tree), *filter(None, [os.environ.get("PYTHONPATH")])])
        return {**os.environ, "PYTHONPATH": path}


def sides(baseline: str | None) -> list[Side]:
    current = Side("current", ROOT)
    if baseline is None:
        return [current]
    return [Side("baseline", Path(baseline).resolve()), current]


# --- stores ------------------------------------------------------------------------------------


@contextmanager
def fresh_store(kind: str, work: Path, admin_url: str, side: Side) -> Iterator[str]:
    """A fresh SQLite path under ``work``, or a fresh migrated PostgreSQL database (dropped
    afterwards, also when the run fails)."""
    if kind == "sqlite":
        yield str(work / "store.db")
        return
    import psycopg

    name = f"schedlog_burst_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = with_db(admin_url, name)
    try:
        done = subprocess.run(
            side.command("store", "migrate", "--store", url),
            env=side.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"store migrate failed: {done.stderr[-2000:]}")
        yield url
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- creation ------------------------------------------------------------------------------------


def _create_lines(count: int, sessions: int, at_ms: int, prefix: str, now_ms: int) -> str:
    at = format_instant(at_ms)
    now = format_instant(now_ms)
    out = []
    for i in range(count):
        args = {"prompt": f'Burst reminder {i} <&"', "title": f"Burst {i}", "at": at}
        request = {"op": "schedule_create", "session": f"{prefix}-{i % sessions:05d}"}
        request.update(now=now, args=args)
        out.append(json.dumps(request))
    return "".join(line + "\n" for line in out)


def host_batch_create(
    side: Side,
    store: str,
    sessions_dir: Path,
    count: int,
    sessions: int,
    at_ms: int,
    prefix: str,
    now_ms: int | None = None,
) -> tuple[list[str], float]:
    """Create ``count`` reminders due at ``at_ms`` with one ``host batch`` process (``now``:
    ``now_ms``, else the real time); returns their ids and the seconds it took (process
    start-up included)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    lines = _create_lines(count, sessions, at_ms, prefix, now)
    started = time.perf_counter()
    done = subprocess.run(
        side.command("host", "batch", "--store", store, "--sessions", str(sessions_dir)),
        input=lines,
        env=side.env,
        capture_output=True,
        text=True,
        timeout=CREATE_TIMEOUT_S,
    )
    seconds = time.perf_counter() - started
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    ids = [a["ok"]["id"] for a in answers if isinstance(a.get("ok"), dict) and "id" in a["ok"]]
    if done.returncode != 0 or len(ids) != count:
        bad = [a for a in answers if not (isinstance(a.get("ok"), dict) and "id" in a["ok"])]
        raise RuntimeError(f"host batch created {len(ids)}/{count}: {bad[:3]} {done.stderr[-500:]}")
    return ids, seconds


@dataclass
class Burst:
    """The created burst: its instant, its reminder ids and how creation went."""

    target_ms: int
    ids: list[str]
    calibration_per_s: float
    create_s: float
    margin_s: float


def create_burst(side: Side, store: str, sessions_dir: Path, args: argparse.Namespace) -> Burst:
    """Calibrate ``host batch`` on the store, pick T, create the burst (see the module doc)."""
    sample = min(args.reminders, CALIBRATION)
    far = int(time.time() * 1000) + DAY_MS
    _, idle = host_batch_create(side, store, sessions_dir, 0, 1, far, "calibration")
    _, seconds = host_batch_create(side, store, sessions_dir, sample, 1, far, "calibration")
    rate = sample / max(seconds - idle, 0.001)  # without the process's start-up
    estimate = 1.5 * args.reminders / rate
    target = int((time.time() + estimate + args.margin) * 1000)
    ids, create_s = host_batch_create(
        side, store, sessions_dir, args.reminders, args.sessions, target, "burst"
    )
    margin = target / 1000 - time.time()
    if margin < 1.0:
        raise RuntimeError(
            f"creation ended {margin:.2f} s before T (calibrated {rate:.0f}/s, took "
            f"{create_s:.1f} s): the machine is busier than calibrated; raise --margin"
        )
    return Burst(target, ids, round(rate, 1), round(create_s, 2), round(margin, 2))


# --- watching the session logs ---------------------------------------------------------------


@dataclass
class LogWatch:
    """Stamps each burst member with the wall time (epoch s) it was first seen in a log."""

    sessions_dir: Path
    expected: set[str]
    seen: dict[str, float] = field(default_factory=dict)
    offsets: dict[str, int] = field(default_factory=dict)
    partial: dict[str, bytes] = field(default_factory=dict)

    def poll(self) -> None:
        try:
            entries = list(os.scandir(self.sessions_dir))
        except FileNotFoundError:
            return
        for entry in entries:
            if entry.name.endswith(".jsonl"):
                self._read_new(entry)

    def _read_new(self, entry: os.DirEntry[str]) -> None:
        offset = self.offsets.get(entry.name, 0)
        try:
            if entry.stat().st_size <= offset:
                return
            with open(entry.path, "rb") as stream:
                stream.seek(offset)
                chunk = stream.read()
        except FileNotFoundError:
            return
        stamp = time.time()
        self.offsets[entry.name] = offset + len(chunk)
        data = self.partial.pop(entry.name, b"") + chunk
        lines = data.split(b"\n")
        if lines[-1]:
            self.partial[entry.name] = lines[-1]
        for line in lines[:-1]:
            if b'"message/followup"' not in line:
                continue
            try:
                members = json.loads(line)["data"]["reminders"]
            except (ValueError, KeyError, TypeError):
                continue  # the final check reads every log with the project's reader
            for member in members:
                if member.get("id") in self.expected:
                    self.seen.setdefault(member["id"], stamp)

    def complete(self) -> bool:
        return len(self.seen) >= len(self.expected)


def lateness(stamps: list[float], target_ms: int, total: int) -> dict[str, float | None]:
    """Seconds after T by which 50%, 99% and 100% of ``total`` were in (None: never)."""
    late = sorted(s - target_ms / 1000 for s in stamps)
    out: dict[str, float | None] = {}
    for name, share in (("p50_s", 0.50), ("p99_s", 0.99), ("p100_s", 1.0)):
        need = max(1, -(-int(share * total * 1000) // 1000))
        out[name] = round(late[need - 1], 3) if len(late) >= need else None
    return out


def check_logs(sessions_dir: Path, expected: set[str]) -> dict[str, int]:
    """Exactly once, from every log read with the project's reader."""
    message_ids: Counter[str] = Counter()
    members: Counter[tuple[str, str]] = Counter()
    for log in sessions_dir.glob("*.jsonl"):
        for event in read_log(log).events:
            if event.type == "message/followup":
                message_ids[event.data["messageId"]] += 1
                for r in event.data["reminders"]:
                    if r["id"] in expected:
                        members[(r["id"], r["occurrenceAt"])] += 1
    delivered = {key for key, _ in members}
    doubled = sum(c - 1 for c in message_ids.values() if c > 1)
    doubled += sum(c - 1 for c in members.values() if c > 1)
    return {"followups": sum(members.values()), "missing": len(expected - delivered)} | {
        "doubled": doubled
    }


# --- hosts -------------------------------------------------------------------------------------


@dataclass
class Hosts:
    """K host processes of one side: ``host run`` with stderr to a file, or ``host serve``."""

    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    serves: list[ServeProcess] = field(default_factory=list)

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs) and all(
            s.proc.poll() is None for s in self.serves
        )

    def stop(self) -> list[int]:
        codes = []
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                codes.append(p.wait(timeout=60))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(p.wait())
        for s in self.serves:
            codes.append(s.stop(timeout=60)[0])
        return codes

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs] + [s.proc.pid for s in self.serves]

    def cpu_s(self) -> float:
        """User + system CPU seconds the host processes have used so far (Linux ``/proc``)."""
        tick = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        return total

    def errors(self) -> list[str]:
        bad = errors_in(self.logs)
        for s in self.serves:
            bad += [line[:300] for line in s.stderr if "Traceback" in line or "error" in line]
        return bad[:5]


def start_run_hosts(side: Side, store: str, sessions_dir: Path, k: int, work: Path) -> Hosts:
    hosts = Hosts()
    cmd = side.command("host", "run", "--store", store, "--sessions", str(sessions_dir))
    cmd += ["--log-format", "json"]
    for i in range(k):
        path = work / f"host-{side.name}-{i}.log"
        hosts.logs.append(path)
        with path.open("wb") as err:
            hosts.procs.append(
                subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    env=side.env,
                )
            )
    deadline = time.monotonic() + START_TIMEOUT_S
    for path in hosts.logs:
        while not first_started([path]):
            if time.monotonic() > deadline or not hosts.alive():
                hosts.stop()
                raise RuntimeError(f"a host did not start: {errors_in(hosts.logs)}")
            time.sleep(0.02)
    return hosts


def start_serve_hosts(side: Side, store: str, k: int, extra: list[str], token: str) -> Hosts:
    hosts = Hosts()
    env = {"PYTHONPATH": side.env["PYTHONPATH"], "SCHEDLOG_TOKEN": token}
    env["SCHEDLOG_WEBHOOK_SECRET"] = SECRET
    try:
        for _ in range(k):
            hosts.serves.append(
                start_serve(store, extra, env=env, timeout=START_TIMEOUT_S, runner=side.runner)
            )
    except RuntimeError:
        hosts.stop()
        raise
    return hosts


# --- the API probe: benchmarks/burst_probe.py (the webhook receiver: benchmarks/burst_receiver.py)


# --- one burst run -----------------------------------------------------------------------------


def _mode(args: argparse.Namespace) -> str:
    return "webhook" if args.webhook else "api-probe" if args.api_probe else "logs"


_TOKEN: Final = "burst-token-" + secrets.token_hex(8)


def _start_hosts(
    side: Side,
    store: str,
    sessions_dir: Path,
    k: int,
    work: Path,
    mode: str,
    hook: str,
    concurrency: int | None = None,
) -> Hosts:
    if mode == "webhook":
        extra = ["--deliver-to", hook, "--retry-base-ms", "200", "--retry-cap-ms", "2000"]
        if concurrency is not None:
            extra += ["--webhook-concurrency", str(concurrency)]
        return start_serve_hosts(side, store, k, extra, _TOKEN)
    if mode == "api-probe":
        return start_serve_hosts(side, store, k, ["--sessions", str(sessions_dir)], _TOKEN)
    return start_run_hosts(side, store, sessions_dir, k, work)


def _wait(target: Receiver | LogWatch, hosts: Hosts, until: float, poll_s: float) -> bool:
    """Poll (bounded by ``until``, epoch s) until every member is in; False if a host died or
    time ran out first."""
    while time.time() < until:
        if isinstance(target, LogWatch):
            target.poll()
        if target.complete():
            return True
        if not hosts.alive():
            return False
        time.sleep(poll_s)
    return False


def _deliver(
    side: Side, k: int, args: argparse.Namespace, work: Path, store: str, burst: Burst
) -> dict[str, Any]:
    """Start the hosts, wait for the burst, stop them; the measured fields of the run."""
    mode, sessions_dir, expected = _mode(args), work / "sessions", set(burst.ids)
    receiver = Receiver(expected, SECRET.encode()) if mode == "webhook" else None
    target: Receiver | LogWatch = receiver or LogWatch(sessions_dir, expected)
    load_before, cpu_before = _load_avg(), time.process_time()
    try:
        hook = target_url(receiver)
        concurrency = args.webhook_concurrency
        hosts = _start_hosts(side, store, sessions_dir, k, work, mode, hook, concurrency)
        ready = time.time()
        probe = None
        if mode == "api-probe":
            probe = ProbeProcess(hosts.serves[0].url, _TOKEN, burst.target_ms / 1000)
        until = burst.target_ms / 1000 + args.timeout
        cpu_idle = hosts.cpu_s()  # start-up done; the burst is still ahead
        finished = _wait(target, hosts, until, args.poll_ms / 1000)
        host_cpu = round(hosts.cpu_s() - cpu_idle, 2)
        probe_report = probe.stop() if probe is not None else {}
        load_after = _load_avg()
        codes = hosts.stop()
        out = lateness(list(target.seen.values()), burst.target_ms, len(expected))
        out |= receiver.check() if receiver is not None else check_logs(sessions_dir, expected)
        out |= probe_report
    finally:
        if receiver is not None:
            receiver.close()
    out |= {
        "finished": finished,
        "hosts_ready_before_t_s": round(burst.target_ms / 1000 - ready, 2),
    }
    out |= {"exit_codes": codes, "errors": hosts.errors()}
    out["driver_cpu_s"] = round(time.process_time() - cpu_before, 2)  # polling, receiver, probe
    out["host_cpu_s"] = host_cpu  # the hosts' CPU from before T until the burst was in
    return out | {"load_avg_before": load_before, "load_avg_after": load_after}


def target_url(receiver: Receiver | None) -> str:
    return "" if receiver is None else receiver.url


def run_burst(side: Side, k: int, args: argparse.Namespace, parent: Path) -> dict[str, Any]:
    """One run on a fresh store and sessions directory (removed afterwards)."""
    work = Path(tempfile.mkdtemp(prefix=f"burst-{side.name}-", dir=parent))
    sessions_dir = work / "sessions"
    sessions_dir.mkdir()
    result: dict[str, Any] = {"side": side.name, "mode": _mode(args), "store": args.store}
    result |= {"hosts": k, "reminders": args.reminders, "sessions": args.sessions}
    if args.webhook:
        result["webhook_concurrency"] = args.webhook_concurrency
    try:
        with fresh_store(args.store, work, args.url, side) as store:
            burst = create_burst(side, store, sessions_dir, args)
            result |= _deliver(side, k, args, work, store, burst)
        result |= {"calibration_per_s": burst.calibration_per_s, "create_s": burst.create_s}
        result["margin_s"] = burst.margin_s
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


# --- start-up --------------------------------------------------------------------------------


def _populate_startup(kind: str, work: Path, admin_url: str, tasks: int) -> Path | None:
    """The SQLite template file (copied for each run), or None for PostgreSQL (filled per run)."""
    if kind != "sqlite":
        return None
    from benchmarks.store_scale import populate_sqlite

    path = work / "template.db"
    populate_sqlite(path, tasks, 1, int(time.time() * 1000))
    return path


def _populate_pg(side: Side, url: str, tasks: int, work: Path) -> None:
    """``tasks - 1`` tasks due in 2030 by one ``INSERT … SELECT generate_series``, and one task
    already due, created by ``host batch`` on a virtual clock two minutes back."""
    from benchmarks.pg_hosts import populate
    from tests.host.helpers import task

    later = task("schedule-@ID@", session="s-@S@", at="2030-01-01T00:00:00Z")
    populate(url, tasks - 1, 1000, later)
    now = int(time.time() * 1000) - 120_000
    host_batch_create(side, url, work / "sessions", 1, 1, now + 60_000, "due", now_ms=now)


def run_startup(
    side: Side, args: argparse.Namespace, work: Path, template: Path | None
) -> dict[str, Any]:
    """Seconds from starting ``host run`` to its ``host.started`` line and to the one due
    reminder's follow-up in its log."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"startup-{side.name}-", dir=work))
    sessions_dir = run_dir / "sessions"
    out: dict[str, Any] = {"side": side.name, "mode": "startup", "store": args.store}
    out["tasks"] = args.startup_tasks
    try:
        with fresh_store(args.store, run_dir, args.url, side) as store:
            if template is not None:
                shutil.copyfile(template, store)
            else:
                _populate_pg(side, store, args.startup_tasks, run_dir)
            out["load_avg_before"] = _load_avg()
            out |= time_host_start(side, store, sessions_dir, run_dir, args.timeout)
            out["load_avg_after"] = _load_avg()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return out


def time_host_start(
    side: Side, store: str, sessions_dir: Path, run_dir: Path, timeout: float
) -> dict[str, Any]:
    """Seconds from ``Popen`` of one ``host run`` to the first follow-up in a session log and
    to its ``host.started`` line, whichever comes first (a store opened early delivers its due
    rows before it has validated the rest and says it started), waiting for both; and the
    host's CPU seconds when the follow-up was seen (``cpu_to_delivered_s``); also
    ``benchmarks/startup.py``."""
    log = run_dir / "host.log"
    cmd = side.command("host", "run", "--store", store, "--sessions", str(sessions_dir))
    started = time.perf_counter()
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [*cmd, "--log-format", "json"], stdin=subprocess.DEVNULL, stderr=err, env=side.env
        )
    hosts = Hosts(procs=[proc], logs=[log])
    ready: float | None = None
    delivered: float | None = None
    cpu: float | None = None
    try:
        deadline = started + timeout
        while time.perf_counter() < deadline and hosts.alive():
            if ready is None and first_started([log]):
                ready = time.perf_counter() - started
            if delivered is None and any(
                b'"message/followup"' in p.read_bytes() for p in _logs(sessions_dir)
            ):
                delivered = time.perf_counter() - started
                cpu = hosts.cpu_s()
            if ready is not None and delivered is not None:
                break
            time.sleep(0.01)
    finally:
        codes = hosts.stop()
    return {
        "to_started_s": None if ready is None else round(ready, 3),
        "to_delivered_s": None if delivered is None else round(delivered, 3),
        "cpu_to_delivered_s": None if cpu is None else round(cpu, 3),
        "exit_codes": codes,
        "errors": hosts.errors(),
    }


def _logs(sessions_dir: Path) -> list[Path]:
    return list(sessions_dir.glob("*.jsonl")) if sessions_dir.exists() else []


# --- the driver ----------------------------------------------------------------------------------


def _summaries(results: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    keys: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in results:
        keys.setdefault((r["side"], r["mode"], r["store"], r.get("hosts")), []).append(r)
    for (side, mode, store, k), runs in keys.items():
        summary: dict[str, Any] = {"summary": side, "mode": mode, "store": store, "hosts": k}
        summary["runs"] = len(runs)
        for name in _MEDIANS:
            values = [r[name] for r in runs if r.get(name) is not None]
            if values:
                summary[f"median_{name}"] = round(statistics.median(values), 3)
        summary["missing"] = sum(r.get("missing", 0) for r in runs)
        summary["doubled"] = sum(r.get("doubled", 0) for r in runs)
        yield summary


_MEDIANS: Final = (
    "p50_s",
    "p99_s",
    "p100_s",
    "probe_list_p99_ms",
    "probe_create_p99_ms",
    "to_started_s",
    "to_delivered_s",
    "host_cpu_s",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.burst")
    parser.add_argument("--reminders", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--hosts", default="1", help="host counts, comma-separated (1,2,3)")
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", default=None, help="a source tree of another commit")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--webhook", action="store_true")
    mode.add_argument("--api-probe", action="store_true")
    mode.add_argument("--startup", action="store_true")
    parser.add_argument("--startup-tasks", type=int, default=1_000_000)
    parser.add_argument(
        "--webhook-concurrency", type=int, default=None, help="passed to host serve (--webhook)"
    )
    parser.add_argument("--margin", type=float, default=3.0, help="planned seconds to T")
    parser.add_argument("--poll-ms", type=float, default=20.0)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds after T")
    parser.add_argument("--dir", default=None, help="where stores go (a real disk)")
    args = parser.parse_args(argv)
    if not 1 <= args.sessions <= max(1, args.reminders):
        parser.error("--sessions must be between 1 and --reminders")
    if not args.url.startswith(("postgresql://127.0.0.1", "postgresql://postgres@127.0.0.1")):
        parser.error("--url must be a PostgreSQL server on 127.0.0.1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    counts = [1] if args.startup else [int(x) for x in args.hosts.split(",")]
    print(json.dumps({"load_avg": _load_avg(), "argv": sys.argv[1:] if argv is None else argv}))
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="schedlog-burst-", dir=args.dir) as tmp:
        work = Path(tmp)
        template = (
            _populate_startup(args.store, work, args.url, args.startup_tasks)
            if args.startup
            else None
        )
        for r in range(args.rounds):
            order = counts[r % len(counts) :] + counts[: r % len(counts)]
            for k in order:
                for side in sides(args.baseline):  # interleaved: each side once per round
                    if args.startup:
                        out = run_startup(side, args, work, template)
                    else:
                        out = run_burst(side, k, args, work)
                    out["round"] = r + 1
                    results.append(out)
                    print(json.dumps(out), flush=True)
    for summary in _summaries(results):
        print(json.dumps(summary), flush=True)
    ok = all(r.get("missing", 0) == 0 and r.get("doubled", 0) == 0 for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
