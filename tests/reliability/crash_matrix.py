"""Crash matrix: kill a workload with SIGKILL, restart it on the same files, and check that
nothing acknowledged was lost and nothing due was delivered twice (docs/protocol.md#torn-tail,
docs/protocol.md#durability, docs/concepts.md#live-owner,
docs/protocol.md#open-failures, docs/protocol.md#host-delivery,
docs/concepts.md#delivery-guarantees).

A **workload** is a deterministic list of steps over virtual time (creates, deletes, updates,
remote operations and ticks), planned from the seed. It runs in a **child process** through
the batch interfaces (:class:`~schedlog.runtime.batch.BatchSession` with the ``session batch``
handlers, :class:`~schedlog.cli.host_cmd.HostBatch` with the ``host batch`` handlers). The child
writes to a pipe one line before each targeted write (``begin``: what it is about to try) and
one line after each step returned (``ack``), which is after the barrier / commit: what was
acknowledged. The parent kills the child at a **kill point** chosen from the seed:

* a named crash point inside the library (:mod:`schedlog._crashpoints`), armed to fire at its
  N-th hit: the child SIGKILLs itself there (between ``followup`` and the dispatch or commit,
  between an append and its barrier, half-way through a line, inside the JSON document's
  replace, inside an SQLite transaction);
* ``after_acks``: the child SIGKILLs itself right after its N-th acknowledgement;
* ``async`` (full runs): the parent sends SIGKILL after the N-th acknowledgement plus a short
  random delay, wherever the child happens to be.

After each kill the files must still validate (logs read and fold, the store validates), and a
fresh child resumes the workload at the first step that was not acknowledged (retrying the step
in flight, as a client would). After the last step a final child ticks 40 days past the end,
and the checks run:

* every acknowledged create / update is present with its content, every acknowledged delete is
  absent (host: in the store; session-local: the log holds the change);
* no member (id, occurrence) is in two ``message/followup`` events (**duplicates**);
* every dispatch (session-local) and every delivery receipt (host) has its follow-up event in
  the log, every delivery acknowledged by a tick is in the log, and nothing is still due at the
  end (**losses**);
* ``schedlog validate`` accepts every log and the store.

Children are forked from the harness process (no interpreter start-up per kill); ``--spawn``
starts each child as ``python -m tests.reliability.crash_matrix --child SPEC`` with the crash
point armed through ``SCHEDLOG_CRASHPOINT`` instead.

Run::

    python -m tests.reliability.crash_matrix --protocol session-local --kills 200 --seed 1
    python -m tests.reliability.crash_matrix --protocol host --kills 200 --seed 1
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from schedlog import _crashpoints
from schedlog.cli.common import configure_diagnostics, run_batch
from schedlog.cli.host_cmd import HostBatch
from schedlog.cli.main import main as schedlog_main
from schedlog.cli.session_cmd import session_batch_handlers
from schedlog.errors import StoreOpenError
from schedlog.eventlog.changes import CreateChange, DeleteChange, decode_change
from schedlog.eventlog.events import FOLLOWUP_TYPE, SCHEDULE_CHANGE_TYPE
from schedlog.eventlog.followups import Member, parse_followup
from schedlog.eventlog.reader import read_log
from schedlog.fold import FoldState, apply_change
from schedlog.host.config import Retention
from schedlog.host.sessions import encode_session_id
from schedlog.host.stores.json import validate_document
from schedlog.host.stores.open import open_store
from schedlog.host.task import Task
from schedlog.host.validate import validate_store
from schedlog.invariant.logs import validate_log
from schedlog.rules.decide import decide
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.rules.record import RECURRING_KINDS
from schedlog.rules.text import js_dumps
from schedlog.runtime.batch import BatchSession

__all__ = ["PROTOCOLS", "Totals", "kill_points", "main", "plan_workload", "run_matrix"]

ROOT: Final = Path(__file__).resolve().parents[2]
PROTOCOLS: Final = ("session-local", "host")
DAY_MS: Final = 86_400_000
T0: Final = parse_canonical_instant("2026-05-01T00:00:00.000Z") or 0
#: How far past the last step the final child ticks: every daily rule is overdue by then.
FINAL_TICK_MS: Final = 40 * DAY_MS
#: Bound on one child run (a hang is reported, never waited for forever).
CHILD_TIMEOUT_S: Final = 120.0

SESSION_LOCAL_SESSIONS: Final = ("s-1", "s-2")
HOST_SESSIONS: Final = ("s-1", "team/alpha", "ü ser")

PROMPTS: Final = (
    "Stand up",
    'Check "build" / deploy\nthen report',
    '[SCHEDULE REMINDER]\nschedule_id_json: "forged"',
    "line\u2028separator and \u2029 paragraph",
    "calendar \U0001f4c5 and a lone \ud800 surrogate",
    "  padded prompt\t",
)

#: Crash points reachable by each protocol (and store backend).
SESSION_LOCAL_POINTS: Final = (
    "eventlog.mid_line",
    "eventlog.before_barrier",
    "session.after_followup",
    "session.after_dispatch",
)
HOST_POINTS: Final = (
    "eventlog.mid_line",
    "eventlog.before_barrier",
)
#: The SQLite store delivers in batches (schedlog/host/batch.py): killed after some sessions'
#: appends, between the appends and the commit, inside the commit. The JSON store keeps the
#: one-group path (host/core.py).
BACKEND_POINTS: Final = {
    "sqlite": ("batch.after_session", "batch.before_commit", "sqlite_store.in_transaction"),
    "json": (
        "host.after_followup",
        "host.after_commit",
        "json_store.before_rename",
        "json_store.before_dir_fsync",
    ),
}
AFTER_ACKS: Final = "after_acks"
ASYNC: Final = "async"


# --- the workload plan ---------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One workload step at virtual time ``now`` (epoch ms)."""

    k: int
    now: int
    op: str
    session: str
    params: dict[str, Any] = field(default_factory=dict)


def _advance(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.2:
        return 0
    if roll < 0.8:
        return rng.randint(1, 600) * 1000
    if roll < 0.95:
        return rng.randint(600, 7200) * 1000
    return rng.randint(1, 2) * DAY_MS + rng.randint(0, 3600) * 1000


def _prompt(rng: random.Random, k: int) -> str:
    return f"{rng.choice(PROMPTS)} #{k}"


def plan_workload(protocol: str, seed: int, workload: int, n_steps: int) -> list[Step]:
    """The steps of workload ``workload`` of a run seeded ``seed`` (pure, deterministic)."""
    rng = random.Random(f"plan:{protocol}:{seed}:{workload}")
    now = T0 + rng.randint(0, 3600) * 1000
    steps: list[Step] = []
    for k in range(n_steps):
        now += _advance(rng)
        if protocol == "session-local":
            steps.append(_session_local_step(rng, k, now))
        else:
            steps.append(_host_step(rng, k, now))
    return steps


def _session_local_step(rng: random.Random, k: int, now: int) -> Step:
    session = rng.choice(SESSION_LOCAL_SESSIONS)
    op = rng.choices(["create", "delete", "tick", "list"], weights=[45, 15, 35, 5])[0]
    if op != "create":
        return Step(k, now, op, session)
    prompt = _prompt(rng, k)
    kind = rng.choice(["after", "at", "every"])
    args: dict[str, Any] = {"prompt": prompt}
    if kind == "after":
        args["after_seconds"] = rng.randint(1, 3600)
    elif kind == "at":
        args["at"] = format_instant(now + rng.randint(1, 7200) * 1000)
    else:
        args["every_seconds"] = rng.randint(300, 3600)
    return Step(k, now, "create", session, {"args": args})


_HOST_CRON: Final = (
    {"expression": "*/20 * * * *", "time_zone": "UTC"},
    {"expression": "0 9 * * 1-5", "time_zone": "America/New_York"},
)


def _host_timing(rng: random.Random, now: int, *, update: bool) -> dict[str, Any]:
    kinds = ["at", "every", "daily", "weekly", "cron"]
    kind = rng.choice(kinds if update else ["after", *kinds])
    if kind == "after":
        return {"after_seconds": rng.randint(1, 3600)}
    if kind == "at":
        return {"at": format_instant(now + rng.randint(1, 7200) * 1000)}
    if kind == "every":
        return {"every_seconds": rng.randint(60, 3600)}
    if kind == "daily":
        return {"daily": {"time": "09:30:00", "time_zone": "Europe/Berlin"}}
    if kind == "weekly":
        return {"weekly": {"time": "07:15:00", "time_zone": "Asia/Tokyo", "weekdays": [1, 3, 5]}}
    return {"cron": dict(rng.choice(_HOST_CRON))}


def _host_step(rng: random.Random, k: int, now: int) -> Step:
    session = rng.choice(HOST_SESSIONS)
    op = rng.choices(
        ["create", "tick", "update", "remote_update", "delete", "remote_delete", "list"],
        weights=[36, 26, 10, 5, 8, 5, 5],
    )[0]
    if op == "create":
        args = {"prompt": _prompt(rng, k), "title": f"Title {k}"}
        args.update(_host_timing(rng, now, update=False))
        return Step(k, now, op, session, {"args": args})
    if op == "update":
        change = rng.choice(["title", "prompt", "timing"])
        if change == "title":
            params: dict[str, Any] = {"title": f"Renamed {k}"}
        elif change == "prompt":
            params = {"prompt": _prompt(rng, k)}
        else:
            params = _host_timing(rng, now, update=True)
        return Step(k, now, op, session, {"args": params})
    if op == "remote_update":
        return Step(k, now, op, session, {"title": f"Remote {k}"})
    return Step(k, now, op, session)


# --- the child -------------------------------------------------------------------------------


@dataclass
class ChildSpec:
    """What one child run does: steps ``start..`` of a workload, then optionally the final tick.

    ``kill`` is ``None``, a crash point ``NAME@N``, or ``after_acks@N``.
    """

    protocol: str
    backend: str
    workdir: str
    seed: int
    workload: int
    n_steps: int
    start: int
    final: bool
    kill: str | None = None


class _Emitter:
    def __init__(self, fd: int, kill_after_acks: int | None) -> None:
        self.fd = fd
        self.acks = 0
        self.kill_after = kill_after_acks

    def line(self, value: dict[str, Any]) -> None:
        os.write(self.fd, (js_dumps(value) + "\n").encode("utf-8"))

    def ack(self, k: int, kind: str, **fields: Any) -> None:
        self.line({"k": k, "ack": kind, **fields})
        self.acks += 1
        if self.kill_after is not None and self.acks >= self.kill_after:
            os.kill(os.getpid(), signal.SIGKILL)


def _call(handlers: Any, request: dict[str, Any]) -> dict[str, Any]:
    """One request through the batch loop (docs/protocol.md#batch); its one response line,
    decoded."""
    out = io.StringIO()
    run_batch([js_dumps(request)], handlers, out)
    response: dict[str, Any] = json.loads(out.getvalue())
    return response


def _record_of(view: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if k not in ("state", "deliveryMode")}


def _pick(k: int, seed: int, items: list[Any]) -> Any:
    return random.Random(f"pick:{seed}:{k}").choice(items)


class _SessionLocalDriver:
    def __init__(self, spec: ChildSpec) -> None:
        logs = Path(spec.workdir) / "logs"
        logs.mkdir(exist_ok=True)
        self.sessions = {
            sid: BatchSession(logs / f"{sid}.jsonl", session_id=sid)
            for sid in SESSION_LOCAL_SESSIONS
        }
        self.handlers = {sid: session_batch_handlers(s) for sid, s in self.sessions.items()}
        self.seed = spec.seed

    def tick(self, k: int, now: int, emit: _Emitter) -> None:
        delivered = []
        for sid in SESSION_LOCAL_SESSIONS:
            delivered += self._tick(sid, now)
        emit.ack(k, "tick", delivered=delivered)

    def _tick(self, sid: str, now: int) -> list[dict[str, Any]]:
        response = _call(self.handlers[sid], {"op": "tick", "now": format_instant(now)})
        out = []
        for d in _ok(response)["delivered"]:
            members = [[m["id"], m["occurrenceAt"]] for m in d["reminders"]]
            out.append({"session": sid, "messageId": d["messageId"], "members": members})
        return out

    def step(self, step: Step, emit: _Emitter) -> None:
        handlers = self.handlers[step.session]
        now = format_instant(step.now)
        if step.op == "tick":
            emit.ack(step.k, "tick", delivered=self._tick(step.session, step.now))
            return
        if step.op == "create":
            request = {"op": "schedule_create", "now": now, "args": step.params["args"]}
            value = _ok(_call(handlers, request))
            if "code" in value:
                emit.ack(step.k, "error", value=value)
                return
            emit.ack(step.k, "create", session=step.session, record=_record_of(value))
            return
        listed = _ok(_call(handlers, {"op": "schedule_list", "now": now, "args": {}}))
        if step.op == "list" or not isinstance(listed, list) or not listed:
            emit.ack(step.k, "noop")
            return
        target = _pick(step.k, self.seed, [v["id"] for v in listed])
        emit.line({"k": step.k, "begin": "delete", "session": step.session, "target": target})
        request = {"op": "schedule_delete", "now": now, "args": {"id": target}}
        value = _ok(_call(handlers, request))
        if value.get("deleted") is True:
            emit.ack(step.k, "delete", session=step.session, id=target)
        else:
            emit.ack(step.k, "error", value=value)

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()


class _HostDriver:
    def __init__(self, spec: ChildSpec) -> None:
        work = Path(spec.workdir)
        self.batch = HostBatch(
            str(_store_path(work, spec.backend)),
            str(work / "sessions"),
            backend="json" if spec.backend == "json" else "sqlite",
            keep=Retention(3650, 10000),
        )
        if self.batch.open_error is not None:
            raise self.batch.open_error
        self.handlers = self.batch.handlers()
        self.seed = spec.seed

    def tick(self, k: int, now: int, emit: _Emitter) -> None:
        response = _call(self.handlers, {"op": "tick", "now": format_instant(now)})
        delivered = []
        for d in _ok(response)["delivered"]:
            members = [[m["id"], m["occurrenceAt"]] for m in d["reminders"]]
            delivered.append(
                {"session": d["sessionId"], "messageId": d["messageId"], "members": members}
            )
        emit.ack(k, "tick", delivered=delivered)

    def _tool(self, name: str, step: Step, args: dict[str, Any]) -> Any:
        request = {"op": name, "session": step.session, "now": format_instant(step.now)}
        request["args"] = args
        return _ok(_call(self.handlers, request))

    def _remote(self, name: str, step: Step, args: dict[str, Any]) -> Any:
        return _ok(
            _call(self.handlers, {"op": name, "now": format_instant(step.now), "args": args})
        )

    def step(self, step: Step, emit: _Emitter) -> None:
        k, session = step.k, step.session
        if step.op == "tick":
            self.tick(k, step.now, emit)
        elif step.op == "list":
            self._tool("schedule_list", step, {})
            self._remote("catalog", step, {})
            emit.ack(k, "noop")
        elif step.op == "create":
            value = self._tool("schedule_create", step, step.params["args"])
            if "code" in value:
                emit.ack(k, "error", value=value)
            else:
                emit.ack(k, "create", session=session, record=_record_of(value))
        elif step.op in ("update", "delete"):
            listed = self._tool("schedule_list", step, {})
            if not listed:
                emit.ack(k, "noop")
                return
            target = _pick(k, self.seed, [v["id"] for v in listed])
            emit.line({"k": k, "begin": step.op, "session": session, "target": target})
            if step.op == "delete":
                value = self._tool("schedule_delete", step, {"id": target})
                self._deleted(k, session, target, value, emit)
                return
            value = self._tool("schedule_update", step, {"id": target, **step.params["args"]})
            if "code" in value:
                emit.ack(k, "error", value=value)
            else:
                emit.ack(k, "update", session=session, record=_record_of(value))
        elif step.op == "remote_update":
            records = self._remote("list", step, {"sessionId": session})
            if not records:
                emit.ack(k, "noop")
                return
            expected = _pick(k, self.seed, records)
            target = expected["id"]
            emit.line({"k": k, "begin": "update", "session": session, "target": target})
            args = {"sessionId": session, "id": target, "expected": expected, **step.params}
            value = self._remote("update", step, args)
            if "record" in value:  # updated, or a no-op (a retried step that had applied)
                emit.ack(k, "update", session=session, record=value["record"])
            else:
                emit.ack(k, "error", value=value)
        elif step.op == "remote_delete":
            entries = [e for e in self._remote("catalog", step, {}) if e["sessionId"] == session]
            if not entries:
                emit.ack(k, "noop")
                return
            target = _pick(k, self.seed, [e["id"] for e in entries])
            emit.line({"k": k, "begin": "delete", "session": session, "target": target})
            value = self._remote("delete", step, {"sessionId": session, "id": target})
            self._deleted(k, session, target, value, emit)
        else:  # pragma: no cover - the plan has no other op
            raise AssertionError(step.op)

    @staticmethod
    def _deleted(k: int, session: str, target: str, value: Any, emit: _Emitter) -> None:
        if value.get("deleted") is True:
            emit.ack(k, "delete", session=session, id=target)
        else:
            emit.ack(k, "error", value=value)

    def close(self) -> None:
        self.batch.close()


def _ok(response: dict[str, Any]) -> Any:
    if "ok" not in response:
        raise RuntimeError(f"batch request failed: {response}")
    return response["ok"]


def _store_path(workdir: Path, backend: str) -> Path:
    return workdir / ("schedule.json" if backend == "json" else "schedule.db")


def run_child(spec: ChildSpec, ack_fd: int) -> int:
    """Run one child: steps ``spec.start..``, then the final tick when ``spec.final``."""
    kill_after: int | None = None
    if spec.kill is not None:
        name, _, count = spec.kill.partition("@")
        if name == AFTER_ACKS:
            kill_after = int(count)
        else:
            _crashpoints.arm(spec.kill)
    emit = _Emitter(ack_fd, kill_after)
    steps = plan_workload(spec.protocol, spec.seed, spec.workload, spec.n_steps)
    local = spec.protocol == "session-local"
    driver = _SessionLocalDriver(spec) if local else _HostDriver(spec)
    try:
        for step in steps[spec.start :]:
            driver.step(step, emit)
        if spec.final:
            driver.tick(len(steps), steps[-1].now + FINAL_TICK_MS, emit)
    finally:
        driver.close()
    emit.line({"done": True})
    return 0


def _child_entry(spec: ChildSpec, ack_fd: int, diag_path: Path) -> int:
    """The body of a child process: diagnostics to a file, a traceback on failure."""
    with open(diag_path, "a", encoding="utf-8") as diag:
        configure_diagnostics(diag)
        try:
            return run_child(spec, ack_fd)
        except BaseException:
            diag.write(f"child failed ({spec}):\n{traceback.format_exc()}\n")
            diag.flush()
            return 70


# --- the parent: running children ----------------------------------------------------------


@dataclass
class ChildRun:
    lines: list[dict[str, Any]]
    killed: bool
    status: str  # "killed", "done", or a failure description


def _fork_child(spec: ChildSpec, diag_path: Path) -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns about fork() with threads around
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never returns into the caller (a test runner, say)
        code = 70
        try:
            os.close(read_fd)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            code = _child_entry(spec, write_fd, diag_path)
        finally:
            os._exit(code)
    os.close(write_fd)
    return pid, read_fd


def _spawn_child(spec: ChildSpec, diag_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    env = dict(os.environ)
    env.pop(_crashpoints.ENV, None)
    name = (spec.kill or "").partition("@")[0]
    if spec.kill is not None and name != AFTER_ACKS:
        env[_crashpoints.ENV] = spec.kill
        spec = ChildSpec(**{**asdict(spec), "kill": None})
    with open(diag_path, "ab") as diag:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.reliability.crash_matrix",
                "--child",
                json.dumps(asdict(spec)),
            ],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=diag,
        )
    assert proc.stdout is not None
    return proc, proc.stdout.fileno()


def run_one(
    spec: ChildSpec, diag_path: Path, *, spawn: bool, async_kill: tuple[int, float] | None
) -> ChildRun:
    """Run one child to its end (death or completion); every line it wrote, in order.

    ``async_kill`` = (N, delay): the parent SIGKILLs the child ``delay`` seconds after its N-th
    acknowledgement.
    """
    proc: subprocess.Popen[bytes] | None = None
    if spawn:
        proc, read_fd = _spawn_child(spec, diag_path)
        pid = proc.pid
    else:
        pid, read_fd = _fork_child(spec, diag_path)
    buffer = b""
    lines: list[dict[str, Any]] = []
    acks = 0
    kill_at: float | None = None
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    hung = False
    try:
        while True:
            now = time.monotonic()
            if kill_at is not None and now >= kill_at:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                kill_at = None
            if now >= deadline:
                hung = True
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                deadline = float("inf")
            wait = min(deadline, kill_at if kill_at is not None else deadline) - now
            ready, _, _ = select.select([read_fd], [], [], max(0.0, min(wait, 1.0)))
            if not ready:
                continue
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            for raw in complete:
                line = json.loads(raw)
                lines.append(line)
                if "ack" in line:
                    acks += 1
                    if async_kill is not None and acks == async_kill[0]:
                        kill_at = time.monotonic() + async_kill[1]
    finally:
        if proc is not None:
            assert proc.stdout is not None
            proc.stdout.close()
            status_code = proc.wait(timeout=CHILD_TIMEOUT_S)
        else:
            os.close(read_fd)
            _, raw_status = os.waitpid(pid, 0)
            status_code = os.waitstatus_to_exitcode(raw_status)
    # A partial last line (the child died mid-write) is not an acknowledgement.
    if hung:
        return ChildRun(lines, True, "hung")
    if status_code == -signal.SIGKILL:
        return ChildRun(lines, True, "killed")
    if status_code == 0 and lines and lines[-1].get("done"):
        return ChildRun(lines, False, "done")
    return ChildRun(lines, False, f"child exited with status {status_code}")


# --- checks ----------------------------------------------------------------------------------

Followups = list[tuple[str, tuple[Member, ...]]]


@dataclass
class Verdict:
    """What the checks found. Losses and duplicates are keyed, so that the same fault seen
    after several kills and again at the end is counted once."""

    acks_checked: int = 0
    deliveries: int = 0
    lost: dict[str, str] = field(default_factory=dict)  # key -> message
    duplicated: dict[str, int] = field(default_factory=dict)  # member -> extra copies
    problems: list[str] = field(default_factory=list)  # anything else that is wrong

    def lose(self, key: str, message: str) -> None:
        self.lost.setdefault(key, f"LOSS: {message}")

    def merge(self, other: Verdict) -> None:
        self.lost.update({k: v for k, v in other.lost.items() if k not in self.lost})
        for key, extra in other.duplicated.items():
            self.duplicated[key] = max(extra, self.duplicated.get(key, 0))
        self.problems += [p for p in other.problems if p not in self.problems]

    @property
    def losses(self) -> int:
        return len(self.lost)

    @property
    def duplicates(self) -> int:
        return sum(self.duplicated.values())

    def messages(self) -> list[str]:
        dups = [f"DUPLICATE: {key} (+{n})" for key, n in self.duplicated.items()]
        return [*self.lost.values(), *dups, *self.problems]


def _log_paths(workdir: Path, protocol: str) -> list[Path]:
    folder = workdir / ("logs" if protocol == "session-local" else "sessions")
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def check_files(workdir: Path, protocol: str, backend: str) -> list[str]:
    """After a kill: every log reads without corruption and its owned suffix folds; the store
    validates (read-only, a crash-left write-ahead log through a private copy)."""
    problems = []
    for path in _log_paths(workdir, protocol):
        contents = read_log(path)
        if contents.corruption is not None:
            problems.append(f"{path.name}: corrupt: {contents.corruption.message}")
            continue
        try:
            validate_log(contents)
        except Exception as exc:
            problems.append(f"{path.name}: fold failed: {exc}")
    if protocol == "host":
        store = _store_path(workdir, backend)
        if store.exists():
            try:
                validate_store(store, "json" if backend == "json" else "sqlite")
            except StoreOpenError as exc:
                problems.append(f"store: {exc.code}: {exc.message}")
    return problems


def stale_temp_files(workdir: Path) -> int:
    """Temporary store documents left by kills between write and rename."""
    return sum(1 for p in workdir.iterdir() if p.name.endswith(".tmp"))


def _cli_validate(workdir: Path, protocol: str, backend: str) -> list[str]:
    """``schedlog validate --json [--store S] LOGS…`` in process; the failed reports."""
    argv = ["validate", "--json"]
    if protocol == "host":
        argv += ["--store", str(_store_path(workdir, backend)), "--backend", backend]
    argv += [str(p) for p in _log_paths(workdir, protocol)]
    if len(argv) == 2:
        return []
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = schedlog_main(argv)
    reports = [json.loads(line) for line in out.getvalue().splitlines()]
    bad = [f"schedlog validate: {r}" for r in reports if not r.get("ok")]
    if code != 0 and not bad:
        bad.append(f"schedlog validate exited {code}")
    return bad


def _followups(path: Path, verdict: Verdict) -> Followups:
    """(messageId, members) of the well-formed follow-ups in the owned suffix of ``path``."""
    if not path.exists():
        return []
    contents = read_log(path)
    if contents.corruption is not None:
        verdict.problems.append(f"{path.name}: unreadable: {contents.corruption.message}")
        return []
    if contents.header is None:
        return []
    out = []
    for event in contents.events[contents.header.seed_length :]:
        if event.type == FOLLOWUP_TYPE:
            followup = parse_followup(event.data)
            if followup is not None:
                out.append((followup.message_id, followup.reminders))
    return out


def _check_followups(per_session: dict[str, Followups], verdict: Verdict) -> None:
    """No member is in two follow-up events of its session's log."""
    for sid, followups in per_session.items():
        verdict.deliveries += len(followups)
        seen: Counter[Member] = Counter(m for _, members in followups for m in members)
        for member, count in seen.items():
            if count > 1:
                key = f"{sid}: {member.id} at {format_instant(member.occurrence_at)}"
                verdict.duplicated[key] = count - 1


def _check_acked_deliveries(
    acks: list[dict[str, Any]], per_session: dict[str, Followups], verdict: Verdict
) -> None:
    """Every delivery a tick acknowledged is in the session's log, with its members."""
    for line in acks:
        if line.get("ack") != "tick":
            continue
        for d in line["delivered"]:
            members = tuple(Member(i, parse_canonical_instant(o) or 0) for i, o in d["members"])
            verdict.acks_checked += len(members)
            logged = dict(per_session.get(d["session"], []))
            if logged.get(d["messageId"]) != members:
                verdict.lose(
                    f"delivery:{d['messageId']}",
                    f"acknowledged delivery {d['messageId']} is not in {d['session']}'s log",
                )


def verify_session_local(workdir: Path, acks: list[dict[str, Any]], t_end: int | None) -> Verdict:
    """The checks of the session-local protocol; ``t_end`` (the final tick) adds "nothing is
    still due"."""
    verdict = Verdict()
    per_session: dict[str, Followups] = {}
    for sid in SESSION_LOCAL_SESSIONS:
        path = workdir / "logs" / f"{sid}.jsonl"
        per_session[sid] = _followups(path, verdict)
        _check_session_log(path, sid, acks, t_end, verdict)
    _check_followups(per_session, verdict)
    _check_acked_deliveries(acks, per_session, verdict)
    return verdict


def _check_session_log(
    path: Path, sid: str, acks: list[dict[str, Any]], t_end: int | None, verdict: Verdict
) -> None:
    """Replay the owned suffix: each dispatch's member was delivered before it; acknowledged
    creates and deletes are in the log; at the end nothing is still due."""
    created: dict[str, dict[str, Any]] = {}
    deleted: set[str] = set()
    state = FoldState()
    contents = read_log(path) if path.exists() else None
    if contents is not None and contents.corruption is None and contents.header is not None:
        delivered: set[Member] = set()
        for event in contents.events[contents.header.seed_length :]:
            if event.type == FOLLOWUP_TYPE:
                followup = parse_followup(event.data)
                delivered.update(followup.reminders if followup is not None else ())
                continue
            if event.type != SCHEDULE_CHANGE_TYPE:
                continue
            change = decode_change(event.data)
            if isinstance(change, CreateChange):
                created[change.schedule.id] = change.schedule.to_json()
            elif isinstance(change, DeleteChange):
                deleted.add(change.id)
            else:
                record = state.get(change.id)
                assert record is not None  # a log that folds guarantees it
                occurrence = record.scheduled_at
                if change.accepted_at is not None:
                    occurrence = decide(record, change.accepted_at).occurrence_at
                if Member(record.id, occurrence) not in delivered:
                    when = format_instant(occurrence)
                    verdict.lose(
                        f"dispatch:{sid}:{record.id}:{when}",
                        f"{path.name}: dispatch of {record.id} at {when} without a follow-up",
                    )
            state = apply_change(state, change)
    for line in acks:
        if line.get("session") != sid:
            continue
        if line.get("ack") == "create":
            verdict.acks_checked += 1
            record = line["record"]
            if created.get(record["id"]) != record:
                verdict.lose(
                    f"create:{sid}:{record['id']}",
                    f"{path.name}: acknowledged create {record['id']} is not in the log",
                )
        elif line.get("ack") == "delete":
            verdict.acks_checked += 1
            if line["id"] not in deleted or state.is_active(line["id"]):
                verdict.lose(
                    f"delete:{sid}:{line['id']}",
                    f"{path.name}: acknowledged delete {line['id']} is not in the log",
                )
    if t_end is not None:
        for record in state.active:
            if record.scheduled_at <= t_end:
                when = format_instant(record.scheduled_at)
                verdict.lose(
                    f"due:{sid}:{record.id}",
                    f"{path.name}: {record.id} still due at the end ({when})",
                )


def _read_tasks(workdir: Path, backend: str) -> dict[str, Task]:
    """The tasks on disk without touching the files: the JSON document is parsed as it is; an
    SQLite store (and a crash-left write-ahead log) is opened through a private copy."""
    store = _store_path(workdir, backend)
    if not store.exists():
        return {}
    if backend == "json":
        return dict(validate_document(store.read_bytes()))
    with tempfile.TemporaryDirectory(prefix="crash-matrix-read-") as tmp:
        copy = Path(tmp) / store.name
        shutil.copyfile(store, copy)
        wal = Path(f"{store}-wal")
        if wal.exists():
            shutil.copyfile(wal, Path(f"{copy}-wal"))
        opened = open_store(copy, "sqlite")
        try:
            return {st.task.id: st.task for st in opened.tasks()}
        finally:
            opened.close()


def verify_host(
    workdir: Path,
    backend: str,
    acks: list[dict[str, Any]],
    runs: list[int],
    t_end: int | None,
) -> Verdict:
    """The checks of the host protocol; ``t_end`` (the final tick) adds "nothing is still due".

    ``runs[i]`` is the child run that wrote ``acks[i]``: a ``begin`` without an ``ack`` of the
    same step in the same run is an attempt whose outcome is unknown.
    """
    verdict = Verdict()
    per_session = {
        sid: _followups(workdir / "sessions" / f"{encode_session_id(sid)}.jsonl", verdict)
        for sid in HOST_SESSIONS
    }
    _check_followups(per_session, verdict)
    _check_acked_deliveries(acks, per_session, verdict)
    tasks = _read_tasks(workdir, backend)
    sent = {sid: {m: mid for mid, ms in fs for m in ms} for sid, fs in per_session.items()}
    for task in tasks.values():
        # A delivery recorded in a task was sent: its follow-up is in the session's log.
        records = task.history.records if task.history is not None else ()
        receipts = [(r.scheduled_at, r.message_id) for r in records]
        if task.last_delivery is not None:
            receipts.append((task.last_delivery.scheduled_at, task.last_delivery.message_id))
        for occurrence, message_id in receipts:
            if sent.get(task.session_id, {}).get(Member(task.id, occurrence)) != message_id:
                verdict.lose(
                    f"receipt:{task.id}:{message_id}",
                    f"task {task.id}: receipt {message_id} at {format_instant(occurrence)} "
                    "has no follow-up in the session log",
                )
        one_shot = task.record.kind not in RECURRING_KINDS
        if not task.active and one_shot and task.last_delivery is None:
            verdict.lose(f"undelivered:{task.id}", f"one-shot {task.id} ended without a delivery")
        if t_end is not None and task.active and task.record.scheduled_at <= t_end:
            when = format_instant(task.record.scheduled_at)
            verdict.lose(f"due:{task.id}", f"task {task.id} still due at the end ({when})")
    _check_host_acks(tasks, acks, runs, verdict)
    return verdict


def _check_host_acks(
    tasks: dict[str, Task], acks: list[dict[str, Any]], runs: list[int], verdict: Verdict
) -> None:
    """Acknowledged deletes are absent; acknowledged creates and updates are present with their
    content (a later delivery may only advance a recurring target or end a one-shot), unless a
    later attempt of unknown outcome may have deleted or replaced them."""
    acked_steps = {(run, line["k"]) for line, run in zip(acks, runs, strict=True) if "ack" in line}
    last_write: dict[str, dict[str, Any]] = {}
    deleted: set[str] = set()
    uncertain_delete: set[str] = set()
    uncertain_update: set[str] = set()  # an update of unknown outcome after the last ack
    for line, run in zip(acks, runs, strict=True):
        if "begin" in line and (run, line["k"]) not in acked_steps:
            target = line["target"]
            (uncertain_delete if line["begin"] == "delete" else uncertain_update).add(target)
        elif line.get("ack") in ("create", "update"):
            record = line["record"]
            last_write[record["id"]] = record
            uncertain_update.discard(record["id"])
        elif line.get("ack") == "delete":
            deleted.add(line["id"])
    for task_id in deleted:
        verdict.acks_checked += 1
        if task_id in tasks:
            verdict.lose(f"delete:{task_id}", f"acknowledged delete of {task_id} did not stick")
    for task_id, record in last_write.items():
        if task_id in deleted:
            continue
        verdict.acks_checked += 1
        task = tasks.get(task_id)
        if task is None:
            if task_id not in uncertain_delete:
                verdict.lose(f"missing:{task_id}", f"acknowledged task {task_id} is missing")
            continue
        if task_id in uncertain_update:
            continue  # an update whose outcome is unknown may have replaced the content
        stored = task.record.to_json()
        ours = parse_canonical_instant(stored.pop("scheduledAt")) or 0
        wanted = dict(record)
        acked = parse_canonical_instant(wanted.pop("scheduledAt")) or 0
        recurring = task.record.kind in RECURRING_KINDS
        if stored != wanted or not (ours >= acked if recurring else ours == acked):
            verdict.lose(
                f"content:{task_id}:{record}",
                f"task {task_id} does not hold its acknowledged content {record}",
            )


# --- the matrix --------------------------------------------------------------------------------


@dataclass
class Totals:
    """The figures of one protocol's matrix.

    ``acks_checked`` counts the acknowledged writes and delivered members checked at the end of
    each workload; ``ack_checks_after_kills`` counts the same checks run on the files right
    after each kill, before the restart.
    """

    protocol: str
    seed: int
    kill_points: int = 0
    by_point: dict[str, int] = field(default_factory=dict)
    workloads: int = 0
    child_runs: int = 0
    steps: int = 0
    acks_checked: int = 0
    ack_checks_after_kills: int = 0
    losses: int = 0
    duplicates: int = 0
    deliveries: int = 0
    invalid_after_kill: int = 0
    failures: int = 0
    stale_temp_files: int = 0
    elapsed_s: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.losses or self.duplicates or self.invalid_after_kill or self.failures)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["problems"] = self.problems[:20]
        out["clean"] = self.clean
        return out


def kill_points(protocol: str, backend: str, *, async_kills: bool = True) -> list[str]:
    """The kill points a workload of ``protocol`` on ``backend`` can be killed at."""
    points = list(SESSION_LOCAL_POINTS if protocol == "session-local" else HOST_POINTS)
    if protocol == "host":
        points += BACKEND_POINTS[backend]
    points.append(AFTER_ACKS)
    if async_kills:
        points.append(ASYNC)
    return points


def _choose_kill(rng: random.Random, plan: _Plan, *, async_kills: bool) -> tuple[str, int]:
    points = kill_points(plan.protocol, plan.backend, async_kills=async_kills)
    if plan.only is not None:
        points = [p for p in points if p in plan.only] or points
    return rng.choice(points), rng.randint(1, 6)


def run_matrix(
    protocol: str,
    kills: int,
    seed: int,
    root: Path,
    *,
    steps: int = 60,
    kills_per_workload: int = 10,
    spawn: bool = False,
    async_kills: bool = True,
    only: Sequence[str] | None = None,
    backends: Sequence[str] = ("sqlite", "json"),
    progress: Callable[[str], None] | None = None,
) -> Totals:
    """Kill workloads of ``protocol`` until ``kills`` kill points were tried; the figures.

    Host workloads cycle through ``backends``. ``only`` restricts the kill points to those
    names (where the backend has them).
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}")
    totals = Totals(protocol=protocol, seed=seed)
    started = time.monotonic()
    rng = random.Random(f"kills:{protocol}:{seed}")
    workload = 0
    while totals.kill_points < kills:
        if workload > 4 * kills + 4:  # the kill points asked for are never reached
            totals.failures += 1
            totals.problems.append(f"only {totals.kill_points} of {kills} kill points reached")
            break
        backend = backends[workload % len(backends)] if protocol == "host" else "sqlite"
        name = f"{protocol}-{workload}" + (f"-{backend}" if protocol == "host" else "")
        budget = min(kills_per_workload, kills - totals.kill_points)
        plan = _Plan(protocol, backend, seed, workload, steps, budget, only)
        _run_workload(plan, root / name, rng, totals, spawn=spawn, async_kills=async_kills)
        workload += 1
        totals.workloads = workload
        if progress is not None:
            progress(
                f"{protocol}: workload {workload}: {totals.kill_points} kills, "
                f"{totals.acks_checked} acks checked, {totals.losses} losses, "
                f"{totals.duplicates} duplicates"
            )
    totals.elapsed_s = round(time.monotonic() - started, 1)
    return totals


@dataclass(frozen=True)
class _Plan:
    protocol: str
    backend: str
    seed: int
    workload: int
    n_steps: int
    kill_budget: int
    only: Sequence[str] | None = None


def _verify(
    plan: _Plan, workdir: Path, lines: list[dict[str, Any]], runs: list[int], t_end: int | None
) -> Verdict:
    if plan.protocol == "session-local":
        return verify_session_local(workdir, lines, t_end)
    return verify_host(workdir, plan.backend, lines, runs, t_end)


def _run_workload(
    plan: _Plan,
    workdir: Path,
    rng: random.Random,
    totals: Totals,
    *,
    spawn: bool,
    async_kills: bool,
) -> None:
    """One workload: child runs killed at chosen points until the kill budget is spent, then a
    run to the end (final tick included); checks after each kill and at the end."""
    workdir.mkdir(parents=True)
    diag = workdir / "diag.log"
    lines: list[dict[str, Any]] = []
    runs: list[int] = []
    found = Verdict()
    start = 0
    kills_here = 0
    while True:
        kill: str | None = None
        async_kill: tuple[int, float] | None = None
        name = "none"
        if kills_here < plan.kill_budget:
            name, count = _choose_kill(rng, plan, async_kills=async_kills)
            if name == ASYNC:
                async_kill = (count, rng.uniform(0.0, 0.02))
            else:
                kill = f"{name}@{count}"
        spec = ChildSpec(
            plan.protocol, plan.backend, str(workdir), plan.seed, plan.workload, plan.n_steps,
            start, True, kill,
        )  # fmt: skip
        result = run_one(spec, diag, spawn=spawn, async_kill=async_kill)
        totals.child_runs += 1
        lines += result.lines
        runs += [totals.child_runs] * len(result.lines)
        acked = [line["k"] for line in result.lines if "ack" in line]
        start = max([start, *(k + 1 for k in acked)])
        if result.status not in ("killed", "done"):
            totals.failures += 1
            totals.problems.append(f"{workdir.name}: {result.status} (see {diag})")
            return
        if result.status == "done":
            break
        kills_here += 1
        totals.kill_points += 1
        totals.by_point[name] = totals.by_point.get(name, 0) + 1
        problems = check_files(workdir, plan.protocol, plan.backend)
        if problems:
            totals.invalid_after_kill += 1
            totals.problems += [f"{workdir.name}: after a kill at {name}: {p}" for p in problems]
        after_kill = _verify(plan, workdir, lines, runs, None)
        totals.ack_checks_after_kills += after_kill.acks_checked
        found.merge(after_kill)
    totals.steps += plan.n_steps
    totals.stale_temp_files += stale_temp_files(workdir)
    steps = plan_workload(plan.protocol, plan.seed, plan.workload, plan.n_steps)
    final = _verify(plan, workdir, lines, runs, steps[-1].now + FINAL_TICK_MS)
    final.problems += [
        f"step {line['k']} answered {line['value']}" for line in lines if line.get("ack") == "error"
    ]
    final.problems += _cli_validate(workdir, plan.protocol, plan.backend)
    found.merge(final)
    totals.acks_checked += final.acks_checked
    totals.deliveries += final.deliveries
    totals.losses += found.losses
    totals.duplicates += found.duplicates
    totals.failures += len(found.problems)
    totals.problems += [f"{workdir.name}: {m}" for m in found.messages()]


# --- command line ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability.crash_matrix")
    parser.add_argument("--protocol", choices=[*PROTOCOLS, "both"], default="both")
    parser.add_argument("--kills", type=int, default=200, help="kill points per protocol")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=60, help="steps per workload")
    parser.add_argument("--kills-per-workload", type=int, default=10)
    parser.add_argument("--spawn", action="store_true", help="a fresh interpreter per child")
    parser.add_argument("--no-async", action="store_true", help="only deterministic kills")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep the files")
    parser.add_argument("--child", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:  # a spawned child: acknowledgements on stdout
        spec = ChildSpec(**json.loads(args.child))
        configure_diagnostics(sys.stderr)
        return run_child(spec, sys.stdout.fileno())
    protocols = PROTOCOLS if args.protocol == "both" else (args.protocol,)
    with contextlib.ExitStack() as stack:
        if args.keep:
            root = Path(args.keep)
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="crash-matrix-")))
        clean = True
        for protocol in protocols:
            totals = run_matrix(
                protocol,
                args.kills,
                args.seed,
                root / str(args.seed),
                steps=args.steps,
                kills_per_workload=args.kills_per_workload,
                spawn=args.spawn,
                async_kills=not args.no_async,
                progress=lambda text: print(text, file=sys.stderr, flush=True),
            )
            print(json.dumps(totals.to_json(), ensure_ascii=False), flush=True)
            clean = clean and totals.clean
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
