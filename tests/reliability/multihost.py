"""Multi-host fault run: three ``schedlog host run`` processes on one PostgreSQL store.

Three host processes (real subprocesses) share one fresh database and one sessions directory. A
writer (a long-running ``schedlog host batch`` subprocess on the same database, fed one request
line at a time) creates, updates and deletes reminders continuously, most of them due within
seconds, and the harness records every acknowledged answer. Meanwhile:

* a random host is killed with SIGKILL every few seconds and restarted after a short pause;
* the PostgreSQL server is restarted once, in the middle (``pg_ctlcluster … restart``);
* a host's connection is terminated (``pg_terminate_backend``) while it is inside a transaction,
  found by the host's ``application_name`` (its lease owner, ``host:pid:random``);
* a monitor samples every lease in the table.

Then the faults stop, every host runs until nothing is overdue, the hosts stop cleanly and the
checks run (:func:`check`): every acknowledged write is in the store (or was superseded by a later
write or a delivery), every due occurrence is in the session logs exactly once (counted by
``messageId`` and by member), no lease of a killed host ends later than its kill plus the lease
duration, and ``schedlog validate --store URL DIR`` accepts the store and every log.

Run: ``python -m tests.reliability.multihost --seconds 150`` (docs/reliability.md); the CI subset
is ``tests/reliability/test_multihost.py``. Restarting the server drops every connection to it,
other users' included: the restart is kept short (a fast shutdown and start, about a second).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from schedlog.eventlog.followups import parse_followup
from schedlog.eventlog.reader import read_log
from schedlog.host.stores.pg_conn import LEASE_MS
from schedlog.host.stores.pg_rows import decode_row
from schedlog.rules.instants import format_instant
from tests import pg
from tests.pg import sql

SCHEDLOG = [
    sys.executable,
    "-c",
    "import sys; from schedlog.cli.main import main; sys.exit(main())",
]
HOSTS = 3
SESSIONS = 12
#: Occurrences due this long before the end of the drain may still be in flight.
GRACE_MS = 2_000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- the PostgreSQL server -----------------------------------------------------------------


def cluster_version() -> str | None:
    """The local cluster's major version (``/etc/postgresql/<v>``), or None when the server is not
    a local Debian cluster this harness can restart."""
    if shutil.which("pg_ctlcluster") is None or not os.path.isdir("/etc/postgresql"):
        return None
    versions = sorted(os.listdir("/etc/postgresql"))
    return versions[-1] if versions else None


def wait_ready(timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ok = subprocess.run(
            ["pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432"], check=False
        ).returncode
        if ok == 0:
            return True
        time.sleep(0.1)
    return False


def restart_server(version: str) -> tuple[float, float]:
    """``pg_ctlcluster … restart`` (fast shutdown), then wait until it accepts connections;
    returns the wall-clock start and ready times."""
    start = time.time()
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", "-m", "fast", version, "main", "restart"],
        check=True,
        capture_output=True,
    )
    if not wait_ready(60):
        raise RuntimeError("the PostgreSQL server did not come back within 60 s")
    return start, time.time()


def ensure_server_running() -> None:
    """Start the local cluster when it is down (after a failed restart)."""
    if wait_ready(1):
        return
    version = cluster_version()
    if version is not None:
        subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "start"],
            check=False,
            capture_output=True,
        )
        wait_ready(30)


# --- hosts ---------------------------------------------------------------------------------


@dataclass
class HostRun:
    """One life of one host slot: a ``host run`` process from start to kill or stop."""

    slot: int
    proc: subprocess.Popen[bytes]
    started: float
    stderr: Path
    ended: float | None = None
    how: str = ""  # "killed" | "stopped" | "exited"

    @property
    def pid(self) -> int:
        return self.proc.pid


class Hosts:
    def __init__(self, url: str, sessions: Path, work: Path) -> None:
        self.url = url
        self.sessions = sessions
        self.work = work
        self.lock = threading.Lock()
        self.live: dict[int, HostRun] = {}
        self.runs: list[HostRun] = []

    def start(self, slot: int) -> HostRun:
        path = self.work / f"host{slot}-{len(self.runs)}.log"
        with path.open("wb") as err:
            proc = subprocess.Popen(
                [
                    *SCHEDLOG,
                    "host",
                    "run",
                    "--store",
                    self.url,
                    "--sessions",
                    str(self.sessions),
                    "--log-format",
                    "json",
                ],
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
            )
        run = HostRun(slot, proc, time.time(), path)
        with self.lock:
            self.live[slot] = run
            self.runs.append(run)
        return run

    def kill(self, slot: int) -> HostRun | None:
        with self.lock:
            run = self.live.pop(slot, None)
        if run is None:
            return None
        run.proc.send_signal(signal.SIGKILL)
        run.proc.wait()
        run.ended = time.time()  # after the kernel reaped it: no statement of it starts later
        run.how = "killed"
        return run

    def stop_all(self) -> None:
        with self.lock:
            runs = list(self.live.values())
            self.live.clear()
        for run in runs:
            run.proc.send_signal(signal.SIGTERM)
        for run in runs:
            try:
                run.proc.wait(timeout=60)
                run.how = "stopped"
            except subprocess.TimeoutExpired:
                run.proc.kill()
                run.proc.wait()
                run.how = "killed-at-stop"
            run.ended = time.time()

    def live_pids(self) -> list[int]:
        with self.lock:
            return [r.pid for r in self.live.values() if r.proc.poll() is None]

    def reap_exited(self) -> list[HostRun]:
        """Hosts that exited on their own. A running host must survive a database outage, so
        that is a failure, except a start-up refused because the server could not be reached
        (``host run`` reports the open failure and exits 1, as documented; a supervisor starts
        it again, and so does this harness): ``how`` is then ``refused at start-up``."""
        out = []
        with self.lock:
            for slot, run in list(self.live.items()):
                if run.proc.poll() is not None:
                    run.ended = time.time()
                    run.how = f"exited {run.proc.returncode}"
                    if run.proc.returncode == 1 and _refused_at_start(run.stderr):
                        run.how = "refused at start-up"
                    del self.live[slot]
                    out.append(run)
        return out


def _refused_at_start(path: Path) -> bool:
    """Whether a host's whole output is one open failure for an unreachable server."""
    lines = path.read_text(errors="replace").splitlines()
    if len(lines) != 1:
        return False
    try:
        error = json.loads(lines[0])["error"]
    except (ValueError, KeyError, TypeError):
        return False
    return error.get("code") == "store-unreachable" and "connection failed" in error["message"]


# --- the writer ----------------------------------------------------------------------------


@dataclass
class Write:
    n: int
    op: str
    session: str
    args: dict[str, Any]
    sent: int
    task_id: str | None = None
    answered: int | None = None
    #: "ack" (a record or a deletion came back), "refused" (an answer with a rule code: nothing
    #: was written) or "uncertain" (an error or no answer: it may or may not have happened).
    outcome: str = "uncertain"
    result: Any = None


class Writer:
    """Drives one ``schedlog host batch`` process: the tools, one request line at a time."""

    def __init__(self, url: str, sessions: Path, rng: random.Random, work: Path) -> None:
        self.url = url
        self.sessions = sessions
        self.rng = rng
        self.work = work
        self.writes: list[Write] = []
        self.tasks: dict[str, dict[str, Any]] = {}  # id -> last acknowledged record (live ones)
        self.recurring = 0
        self.restarts = 0
        self.kills = 0
        self.reopened = 0
        self.stopping = threading.Event()
        self._proc: subprocess.Popen[str] | None = None
        self._spawn()

    def _spawn(self) -> None:
        err = (self.work / f"writer-{self.restarts}-{self.reopened}.log").open("w")
        self._proc = subprocess.Popen(
            [*SCHEDLOG, "host", "batch", "--store", self.url, "--sessions", str(self.sessions)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            bufsize=1,
        )
        err.close()

    def kill(self) -> None:
        """SIGKILL the ``host batch`` process (from the fault thread): the request in flight,
        if any, is left uncertain and the next one starts a new process."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            self.kills += 1

    def _call(self, request: dict[str, Any]) -> Any:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise EOFError("host batch closed its output")
        return json.loads(line)

    def request(self, op: str, session: str, args: dict[str, Any]) -> Write:
        w = Write(len(self.writes), op, session, args, now_ms(), task_id=args.get("id"))
        self.writes.append(w)
        request = {"op": op, "session": session, "now": format_instant(w.sent), "args": args}
        try:
            answer = self._call(request)
        except (OSError, EOFError, ValueError) as exc:
            w.result = repr(exc)
            self.restarts += 1
            self.close()
            self._spawn()
            return w
        w.answered = now_ms()
        w.result = answer
        ok = answer.get("ok") if isinstance(answer, dict) else None
        if not isinstance(ok, dict):
            # {"error": …}: not acknowledged. A batch process that started while the server was
            # down answers every line with its open failure: start another one.
            error = answer.get("error") if isinstance(answer, dict) else None
            if isinstance(error, dict) and "cannot open" in str(error.get("message", "")):
                self.reopened += 1
                self.close()
                time.sleep(0.2)
                self._spawn()
            return w
        if "code" in ok:
            w.outcome = "refused"
            if ok["code"] in ("schedule_not_found", "schedule_ended"):
                self.tasks.pop(str(ok.get("id", w.task_id)), None)
            return w
        w.outcome = "ack"
        if op == "schedule_delete":
            self.tasks.pop(str(ok["id"]), None)
        else:
            w.task_id = str(ok["id"])
            self.tasks[w.task_id] = {**ok, "session": session}
        return w

    def step(self) -> Write:
        rng = self.rng
        n = len(self.writes)
        roll = rng.random()
        session = f"s-{rng.randrange(SESSIONS)}"
        if roll < 0.06 and self.recurring < 10:
            self.recurring += 1
            return self.request(
                "schedule_create",
                session,
                {"title": "mh", "prompt": f"c{n} recurring", "every_seconds": 60},
            )
        if roll < 0.62 or not self.tasks:
            if rng.random() < 0.8:
                timing: dict[str, Any] = {"after_seconds": rng.randint(1, 8)}
            else:
                timing = {"at": format_instant(now_ms() + rng.randint(500, 8000))}
            return self.request(
                "schedule_create", session, {"title": "mh", "prompt": f"c{n}", **timing}
            )
        # Mostly tasks not due yet: an update of a delivered one-shot is only refused.
        soon = format_instant(now_ms() + 300)
        pending = sorted(k for k, v in self.tasks.items() if v["scheduledAt"] > soon)
        task_id = rng.choice(pending or sorted(self.tasks))
        session = self.tasks[task_id]["session"]
        if roll < 0.85:
            args: dict[str, Any] = {"id": task_id, "prompt": f"u{n}"}
            if self.tasks[task_id]["kind"] != "every" and rng.random() < 0.6:
                args["at"] = format_instant(now_ms() + rng.randint(500, 6000))
            return self.request("schedule_update", session, args)
        return self.request("schedule_delete", session, {"id": task_id})

    def run(self, pause: tuple[float, float]) -> None:
        while not self.stopping.is_set():
            self.step()
            self.stopping.wait(self.rng.uniform(*pause))

    def close(self) -> None:
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


# --- the lease monitor ---------------------------------------------------------------------


class LeaseMonitor:
    """Samples every lease in the table: the latest ``lease_until`` seen for each owner, and
    which owners each task was seen leased by (a takeover shows as two)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.latest: dict[str, float] = {}
        self.owners: dict[str, list[tuple[str, float]]] = defaultdict(list)
        self.samples = 0
        self.failed = 0
        self.stopping = threading.Event()

    def sample(self) -> None:
        rows = sql(
            self.url,
            "SELECT id, lease_owner, extract(epoch FROM lease_until)::float8 "
            "FROM schedlog_tasks WHERE lease_owner IS NOT NULL",
        )
        for task_id, owner, until in rows:
            self.latest[owner] = max(self.latest.get(owner, 0.0), float(until))
            seen = self.owners[task_id]
            if not seen or seen[-1][0] != owner:
                seen.append((owner, time.time()))
        self.samples += 1

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.sample()
            except psycopg.Error:
                self.failed += 1
            self.stopping.wait(0.1)


# --- faults ---------------------------------------------------------------------------------


@dataclass
class Faults:
    kills: list[tuple[int, int, float]] = field(default_factory=list)  # slot, pid, time
    restart: tuple[float, float] | None = None
    terminations: list[dict[str, Any]] = field(default_factory=list)
    missed: list[dict[str, Any]] = field(default_factory=list)
    refused: int = 0  # host starts refused while the server was unreachable
    exited: list[str] = field(default_factory=list)


#: What each termination looks for, in turn: a host connection inside a transaction that has
#: written and is not committing yet (a claim, a lease extension, a delivery commit:
#: ``backend_xid`` set, the last statement not ``COMMIT``), then a host
#: connection holding a session's advisory lock (a delivery in progress).
TERMINATION_KINDS = ("write-transaction", "session-lock")

_CANDIDATES = {
    "write-transaction": (
        "SELECT a.pid FROM pg_stat_activity a WHERE a.application_name LIKE ANY(%s) "
        "AND a.backend_xid IS NOT NULL AND a.query NOT ILIKE 'COMMIT%%' "
        "AND a.pid <> pg_backend_pid() "
        "AND a.datname = current_database() LIMIT 1"
    ),
    "session-lock": (
        "SELECT a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE ANY(%s) "
        "AND a.pid <> pg_backend_pid() AND a.datname = current_database() LIMIT 1"
    ),
}


def terminate_backend(
    url: str, pids: list[int], kind: str, timeout: float
) -> dict[str, Any] | None:
    """Terminate one host connection of ``kind`` (:data:`TERMINATION_KINDS`), polling until
    one is found; the sample and ``pg_terminate_backend`` are one statement, and what the
    backend was doing is read in the same statement."""
    patterns = [f"%:{pid}:%" for pid in pids]
    deadline = time.monotonic() + timeout
    polls = 0
    query = (
        "SELECT a.pid, a.application_name, a.state, a.xact_start IS NOT NULL, "
        "left(a.query, 100), pg_terminate_backend(a.pid) FROM pg_stat_activity a "
        f"WHERE a.pid = ({_CANDIDATES[kind]})"
    )
    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        while time.monotonic() < deadline:
            polls += 1
            row = conn.execute(query, (patterns,)).fetchone()
            if row is not None:
                return {
                    "kind": kind,
                    "backend": row[0],
                    "applicationName": row[1],
                    "state": row[2],
                    "inTransaction": bool(row[3]),
                    "query": row[4],
                    "terminated": bool(row[5]),
                    "polls": polls,
                }
            time.sleep(0.002)
    return None


def fault_loop(
    hosts: Hosts,
    writer: Writer,
    writer_kill_every: float,
    faults: Faults,
    url: str,
    rng: random.Random,
    seconds: float,
    kill_every: tuple[float, float],
    terminations: int,
    version: str | None,
    stopping: threading.Event,
) -> None:
    start = time.monotonic()
    restart_at = seconds / 2
    terminate_at = [seconds * (i + 1) / (terminations + 1) for i in range(terminations)]
    # Keep the terminations clear of the restart, when every connection drops anyway.
    terminate_at = [t if abs(t - restart_at) > 3 else t + 4 for t in terminate_at]
    next_kill = rng.uniform(*kill_every)
    next_writer_kill = writer_kill_every * rng.uniform(0.5, 1.0)
    restarts: list[tuple[float, int]] = []  # when, slot
    while not stopping.is_set():
        elapsed = time.monotonic() - start
        if elapsed >= seconds:
            break
        for run in hosts.reap_exited():
            if run.how == "refused at start-up":
                faults.refused += 1
            else:
                faults.exited.append(f"slot {run.slot} pid {run.pid}: {run.how}")
            log(f"host slot {run.slot} pid {run.pid} {run.how}: restarting")
            restarts.append((time.monotonic(), run.slot))
        for when, slot in list(restarts):
            if time.monotonic() >= when:
                restarts.remove((when, slot))
                run = hosts.start(slot)
                log(f"host slot {slot} restarted as pid {run.pid}")
        if elapsed >= next_kill:
            slots = sorted(hosts.live)
            if slots:
                slot = rng.choice(slots)
                run = hosts.kill(slot)
                if run is not None:
                    assert run.ended is not None
                    faults.kills.append((slot, run.pid, run.ended))
                    log(f"SIGKILL host slot {slot} pid {run.pid} ({len(faults.kills)})")
                    restarts.append((time.monotonic() + rng.uniform(0.3, 1.5), slot))
            next_kill = elapsed + rng.uniform(*kill_every)
        if elapsed >= next_writer_kill:
            writer.kill()
            log(f"SIGKILL the writer ({writer.kills})")
            next_writer_kill = elapsed + writer_kill_every
        if faults.restart is None and elapsed >= restart_at and version is not None:
            log("restarting the PostgreSQL server")
            faults.restart = restart_server(version)
            log(f"server back after {faults.restart[1] - faults.restart[0]:.2f} s")
        if terminate_at and elapsed >= terminate_at[0]:
            terminate_at.pop(0)
            kind = TERMINATION_KINDS[len(faults.terminations) % len(TERMINATION_KINDS)]
            try:
                found = terminate_backend(url, hosts.live_pids(), kind, timeout=8)
            except psycopg.Error as exc:
                found = {"kind": kind, "error": str(exc).strip()}
            if found is None:
                found = {"kind": kind, "error": f"no host connection found ({kind}) within 8 s"}
            if found.get("terminated"):
                faults.terminations.append(found)
            else:  # nothing of that kind was running: look again a little later
                faults.missed.append(found)
                if len(faults.missed) <= 3 * terminations:
                    terminate_at.insert(0, time.monotonic() - start + 3)
            log(f"pg_terminate_backend: {found}")
        stopping.wait(0.05)
    for _when, slot in restarts:
        if slot not in hosts.live:
            hosts.start(slot)


# --- checks ----------------------------------------------------------------------------------


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    def fail(self, message: str) -> None:
        if len(self.problems) < 200:
            self.problems.append(message)


def read_store(url: str) -> tuple[dict[str, Any], list[str]]:
    """Every row strict-decoded (the harness's own reading, besides ``validate --store``)."""
    tasks: dict[str, Any] = {}
    bad: list[str] = []
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT seq, id, session_id, status, next_at, version, body FROM schedlog_tasks"
        ).fetchall()
    for row in rows:
        try:
            tasks[row[1]] = decode_row(row).task
        except Exception as exc:
            bad.append(f"{row[1]}: {exc}")
    return tasks, bad


def read_followups(sessions: Path, report: Report) -> list[tuple[str, str, Any]]:
    """``(session file, messageId, Followup)`` of every follow-up in every log."""
    out = []
    for path in sorted(sessions.glob("*.jsonl")):
        contents = read_log(path)
        if contents.corruption is not None:
            report.fail(f"log {path.name} is corrupt: {contents.corruption}")
        if contents.torn_tail:
            report.fail(f"log {path.name} ends with a torn tail at the end of the run")
        for event in contents.events:
            if event.type != "message/followup":
                continue
            followup = parse_followup(event.data)
            if followup is None:
                report.fail(f"log {path.name}: a malformed follow-up event")
                continue
            out.append((path.name, followup.message_id, followup))
    return out


def _pid(owner: str) -> int:
    """The process id in a lease owner ``host:pid:random``."""
    return int(owner.split(":")[-2])


def taken_over(
    monitor: LeaseMonitor, ended: dict[int, HostRun], delivered: dict[str, list[int]]
) -> int:
    """Tasks seen leased by a host that was then killed holding that lease, and delivered
    (their follow-up created) after the kill: another host took the claim over."""
    count = 0
    for task_id, owners in monitor.owners.items():
        for owner in {o for o, _ in owners}:
            run = ended.get(_pid(owner))
            if run is None or run.how != "killed" or run.ended is None:
                continue
            if any(at / 1000 > run.ended for at in delivered.get(task_id, ())):
                count += 1
                break
    return count


def check(
    url: str,
    sessions: Path,
    writer: Writer,
    hosts: Hosts,
    monitor: LeaseMonitor,
    faults: Faults,
    end: int,
) -> Report:
    report = Report()
    tasks, bad = read_store(url)
    for message in bad:
        report.fail(f"store row does not decode: {message}")

    # 1. Every acknowledged write is present, or superseded by a later write or a delivery.
    by_id: dict[str, list[Write]] = defaultdict(list)
    uncertain_creates = {
        f"c{w.n}" for w in writer.writes if w.op == "schedule_create" and w.outcome == "uncertain"
    }
    for w in writer.writes:
        if w.task_id is not None:
            by_id[w.task_id].append(w)
    acked = [w for w in writer.writes if w.outcome == "ack"]
    for task_id, writes in by_id.items():
        last = max((w for w in writes if w.outcome == "ack"), key=lambda w: w.n, default=None)
        if last is None:
            continue
        later = [w for w in writes if w.n > last.n and w.outcome == "uncertain"]
        task = tasks.get(task_id)
        if last.op == "schedule_delete":
            if task is not None:
                report.fail(f"{task_id}: acknowledged delete (write {last.n}) but still stored")
            continue
        if task is None:
            if not any(w.op == "schedule_delete" for w in later):
                report.fail(f"{task_id}: acknowledged {last.op} (write {last.n}) is missing")
            continue
        record = task.record.to_json()
        want = last.result["ok"]
        if record["prompt"] != want["prompt"] and not any(
            w.args.get("prompt") == record["prompt"] for w in later
        ):
            report.fail(
                f"{task_id}: prompt {record['prompt']!r}, acknowledged {want['prompt']!r} "
                f"(write {last.n})"
            )
        if record["kind"] != want["kind"] and not later:
            report.fail(f"{task_id}: kind {record['kind']}, acknowledged {want['kind']}")
        if task.record.is_one_shot and record["scheduledAt"] != want["scheduledAt"] and not later:
            report.fail(
                f"{task_id}: target {record['scheduledAt']}, acknowledged {want['scheduledAt']} "
                f"(write {last.n})"
            )
        if not task.record.is_one_shot and record["scheduledAt"] < want["scheduledAt"]:
            report.fail(f"{task_id}: recurring target moved back before the acknowledged one")
    for task_id, task in tasks.items():
        if task_id not in by_id and task.record.prompt not in uncertain_creates:
            report.fail(f"{task_id}: a stored task no write created ({task.record.prompt!r})")

    # 2. Every due occurrence delivered exactly once (by member and by messageId).
    followups = read_followups(sessions, report)
    by_message = Counter(mid for _, mid, _ in followups)
    for mid, count in by_message.items():
        if count > 1:
            report.fail(f"messageId {mid} appears in {count} follow-ups")
    members: dict[tuple[str, int], list[str]] = defaultdict(list)
    for _, mid, followup in followups:
        for member in followup.reminders:
            members[(member.id, member.occurrence_at)].append(mid)
    duplicates = {m: mids for m, mids in members.items() if len(mids) > 1}
    for (task_id, at), mids in sorted(duplicates.items())[:50]:
        report.fail(f"duplicate delivery of {task_id} at {format_instant(at)}: {mids}")
    created_at: dict[str, list[int]] = defaultdict(list)
    for _, _, followup in followups:
        for member in followup.reminders:
            created_at[member.id].append(followup.created_at)
    delivered_ids: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for (task_id, at), mids in members.items():
        delivered_ids[task_id].append((at, mids[0]))
    known = set(by_id) | set(tasks)
    for task_id in delivered_ids:
        if task_id not in known:
            report.fail(f"a follow-up for {task_id}, which no write created")
    missing = 0
    checked_once = 0
    for task_id, task in tasks.items():
        got = delivered_ids.get(task_id, [])
        receipts = {r.message_id: r for r in (task.history.records if task.history else ())}
        if task.record.is_one_shot:
            if task.active:
                if task.record.scheduled_at <= end - GRACE_MS:
                    missing += 1
                    report.fail(f"{task_id}: due at {task.record.scheduled_at} but never delivered")
                if got:
                    report.fail(f"{task_id}: active, yet delivered {got}")
                continue
            occurrences = [at for at, _ in got]
            checked_once += 1
            if occurrences != [task.record.scheduled_at]:
                missing += occurrences == []
                report.fail(f"{task_id}: inactive one-shot delivered at {occurrences}")
        elif task.record.scheduled_at <= end - GRACE_MS:
            missing += 1
            report.fail(f"{task_id}: recurring task overdue at the end")
        for at, mid in got:
            receipt = receipts.get(mid)
            if receipt is None or receipt.scheduled_at != at:
                report.fail(f"{task_id}: follow-up {mid} at {at} has no receipt in the store")
        logged = {mid for _, mid in got}
        for mid in receipts:
            if mid not in logged:
                report.fail(f"{task_id}: receipt {mid} has no follow-up in the logs")
    for task_id, got in delivered_ids.items():
        if task_id not in tasks and len({at for at, _ in got}) != len(got):
            report.fail(f"{task_id} (deleted): delivered twice {got}")

    # 3. No lease outlives its holder by more than the lease duration.
    lease_s = LEASE_MS / 1000
    killed = {run.pid: run for run in hosts.runs if run.ended is not None}
    worst = None
    checked = 0
    for owner, until in monitor.latest.items():
        try:
            pid = _pid(owner)
        except (IndexError, ValueError):
            report.fail(f"lease owner {owner!r} names no process")
            continue
        run = killed.get(pid)
        if run is None:
            report.fail(f"lease owner {owner!r} is no host of this run")
            continue
        assert run.ended is not None
        over = until - run.ended
        if run.how == "killed":
            checked += 1
            worst = over if worst is None else max(worst, over)
            if over > lease_s + 0.001:
                report.fail(
                    f"lease of {owner} ends {over:.3f} s after its host was killed "
                    f"(more than {lease_s:g} s)"
                )
    leftover = sql(
        url,
        "SELECT lease_owner, count(*) FROM schedlog_tasks WHERE lease_owner IS NOT NULL "
        "AND lease_until > now() GROUP BY lease_owner",
    )
    for owner, count in leftover:
        # A killed host's lease may still run (on a row the writer moved to a later target
        # since, so nobody took it over); its end is checked above. A host that stopped
        # cleanly hands every claim back.
        run = killed.get(_pid(owner))
        if run is None or run.how != "killed":
            how = "unknown" if run is None else run.how
            report.fail(f"{count} live lease(s) of {owner} ({how}) after every host stopped")

    # 4. The store and every log validate.
    result = subprocess.run(
        [*SCHEDLOG, "validate", "--json", "--store", url, str(sessions)],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    bad_files = [line for line in lines if not line.get("ok")]
    if result.returncode != 0 or bad_files:
        report.fail(f"validate exit {result.returncode}: {bad_files[:3]} {result.stderr[-300:]}")
    logs = sum(1 for line in lines if line.get("kind") == "session-log")

    outcomes = Counter((w.op, w.outcome) for w in writer.writes)
    report.figures = {
        "writes": len(writer.writes),
        "acknowledged": len(acked),
        "byOutcome": {f"{op} {outcome}": n for (op, outcome), n in sorted(outcomes.items())},
        "tasksInStore": len(tasks),
        "followups": len(followups),
        "deliveredMembers": len(members),
        "duplicates": len(duplicates),
        "duplicateMessageIds": sum(1 for c in by_message.values() if c > 1),
        "missing": missing,
        "oneShotsDeliveredOnceChecked": checked_once,
        "recurringChecked": sum(1 for t in tasks.values() if not t.record.is_one_shot),
        "logsValidated": logs,
        "validateExit": result.returncode,
        "leaseSamples": monitor.samples,
        "killedOwnersChecked": checked,
        "takenOver": taken_over(monitor, killed, created_at),
        "worstLeaseAfterKillS": None if worst is None else round(worst, 3),
        "leaseS": lease_s,
    }
    return report


def host_events(hosts: Hosts) -> dict[str, int]:
    """How often each diagnostic event appears in the hosts' output (JSON lines)."""
    counts: Counter[str] = Counter()
    for run in hosts.runs:
        for line in run.stderr.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                counts["(not JSON)"] += 1
                continue
            if isinstance(event, dict):
                counts[str(event.get("event"))] += 1
    return dict(sorted(counts.items()))


# --- the run ---------------------------------------------------------------------------------


def run(
    *,
    seconds: float,
    kill_every: tuple[float, float] = (2.0, 5.0),
    terminations: int = 3,
    pause: tuple[float, float] = (0.03, 0.12),
    seed: int = 1,
    restart_db: bool = True,
    writer_kill_every: float = 15.0,
    keep: Path | None = None,
) -> dict[str, Any]:
    """One fault run; returns the summary (``problems`` empty when every check passed)."""
    rng = random.Random(seed)
    version = cluster_version() if restart_db else None
    if restart_db and version is None:
        raise RuntimeError("no local PostgreSQL cluster to restart (pg_ctlcluster)")
    work = Path(tempfile.mkdtemp(prefix="schedlog-multihost-")) if keep is None else keep
    work.mkdir(parents=True, exist_ok=True)
    sessions = work / "sessions"
    t0 = time.time()
    name = pg.database_name()
    with pg.admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = pg.with_database(pg.server_url(), name)
    hosts: Hosts | None = None
    writer: Writer | None = None
    monitor = LeaseMonitor(url)
    stopping = threading.Event()
    threads: list[threading.Thread] = []
    try:
        subprocess.run(
            [*SCHEDLOG, "store", "migrate", "--store", url], check=True, capture_output=True
        )
        hosts = Hosts(url, sessions, work)
        for slot in range(HOSTS):
            hosts.start(slot)
        writer = Writer(url, sessions, rng, work)
        faults = Faults()
        threads = [
            threading.Thread(target=writer.run, args=(pause,), name="writer"),
            threading.Thread(target=monitor.run, name="leases"),
        ]
        for thread in threads:
            thread.start()
        fault_start = time.time()
        fault_loop(
            hosts,
            writer,
            writer_kill_every,
            faults,
            url,
            random.Random(seed + 1),
            seconds,
            kill_every,
            terminations,
            version,
            stopping,
        )
        fault_end = time.time()
        writer.stopping.set()
        threads[0].join()
        writer.close()
        log(f"faults over; writer stopped after {len(writer.writes)} writes; draining")
        # Drain: every host up, until nothing is overdue (a killed host's claims wait for
        # their leases to end).
        deadline = time.monotonic() + LEASE_MS / 1000 + 30
        while time.monotonic() < deadline:
            for dead in hosts.reap_exited():
                if dead.how == "refused at start-up":
                    faults.refused += 1
                else:
                    faults.exited.append(f"slot {dead.slot} pid {dead.pid}: {dead.how}")
                hosts.start(dead.slot)
            try:
                (overdue,) = sql(
                    url,
                    "SELECT count(*) FROM schedlog_tasks WHERE status = 'active' AND next_at <= %s",
                    (now_ms() - GRACE_MS,),
                )[0]
            except psycopg.Error:
                overdue = -1
            if overdue == 0:
                break
            time.sleep(0.25)
        end = now_ms()
        time.sleep(GRACE_MS / 1000)
        hosts.stop_all()
        monitor.stopping.set()
        threads[1].join()
        monitor.sample()
        report = check(url, sessions, writer, hosts, monitor, faults, end)
        killed_runs = [r for r in hosts.runs if r.how == "killed"]
        summary = {
            "ok": not report.problems and not faults.exited,
            "seconds": round(fault_end - fault_start, 1),
            "totalSeconds": round(time.time() - t0, 1),
            "drainSeconds": round(end / 1000 - fault_end, 1),
            "seed": seed,
            "hosts": HOSTS,
            "hostProcesses": len(hosts.runs),
            "kills": len(faults.kills),
            "killedBySlot": dict(Counter(str(r.slot) for r in killed_runs)),
            "serverRestart": None
            if faults.restart is None
            else {
                "atS": round(faults.restart[0] - fault_start, 1),
                "downS": round(faults.restart[1] - faults.restart[0], 2),
            },
            "terminations": [
                {k: v for k, v in t.items() if k != "time"} for t in faults.terminations
            ],
            "terminationsMissed": len(faults.missed),
            "hostEvents": host_events(hosts),
            "hostsExitedOnTheirOwn": faults.exited,
            "hostStartsRefused": faults.refused,
            "writerKills": writer.kills,
            "writerRestarts": writer.restarts,
            "writerReopened": writer.reopened,
            **report.figures,
            "problems": report.problems,
            "work": str(work),
        }
        if len(faults.terminations) < terminations:
            summary["ok"] = False
            summary["problems"].append(
                f"{len(faults.terminations)} of {terminations} terminations found a host "
                "connection to terminate"
            )
        if summary["hostEvents"].get("(not JSON)"):
            summary["ok"] = False
            summary["problems"].append("a host wrote lines that are not JSON on stderr")
        if keep is not None:
            with (work / "writes.jsonl").open("w") as out:
                for w in writer.writes:
                    out.write(json.dumps(w.__dict__) + "\n")
            runs = [
                {"slot": r.slot, "pid": r.pid, "how": r.how, "log": r.stderr.name}
                for r in hosts.runs
            ]
            (work / "runs.json").write_text(json.dumps(runs, indent=1))
        if restart_db and faults.restart is None:
            summary["ok"] = False
            summary["problems"].append("the server was not restarted")
        return summary
    finally:
        stopping.set()
        monitor.stopping.set()
        if writer is not None:
            writer.stopping.set()
        for thread in threads:
            thread.join(timeout=60)
        if writer is not None:
            writer.close()
        if hosts is not None:
            hosts.stop_all()
        ensure_server_running()
        with pg.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=150, help="length of the fault phase")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kill-min", type=float, default=2.0, help="seconds between kills, min")
    parser.add_argument("--kill-max", type=float, default=5.0, help="seconds between kills, max")
    parser.add_argument("--terminations", type=int, default=6)
    parser.add_argument("--no-restart", action="store_true", help="leave the server running")
    parser.add_argument(
        "--writer-kill-every", type=float, default=15.0, help="seconds between writer kills"
    )
    parser.add_argument("--keep", type=Path, help="keep the sessions, logs and host output here")
    args = parser.parse_args(argv)
    summary = run(
        seconds=args.seconds,
        kill_every=(args.kill_min, args.kill_max),
        terminations=args.terminations,
        seed=args.seed,
        restart_db=not args.no_restart,
        writer_kill_every=args.writer_kill_every,
        keep=args.keep,
    )
    print(json.dumps(summary, indent=2))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
