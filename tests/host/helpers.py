"""Shared builders for the host tests: instants, records, tasks, and a session controller."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schedlog.eventlog.followups import Member
from schedlog.eventlog.reader import read_log
from schedlog.host.task import Task, new_task
from schedlog.rules.instants import parse_canonical_instant
from schedlog.rules.record import Record
from schedlog.rules.records import build_host_record


def ms(text: str) -> int:
    """Epoch ms of a canonical instant written in a test."""
    value = parse_canonical_instant(text)
    assert value is not None, text
    return value


T0 = ms("2026-05-01T06:00:00.000Z")


def record(task_id: str = "schedule-1", now: int = T0, **selector: Any) -> Record:
    args: dict[str, Any] = {"prompt": f"prompt of {task_id}", "title": f"Title {task_id}"}
    args.update(selector or {"after_seconds": 600})
    return build_host_record(args, id=task_id, now=now)


def task(task_id: str = "schedule-1", session: str = "s-1", **selector: Any) -> Task:
    return new_task(session, record(task_id, **selector))


def sha256_files(*paths: Path) -> dict[str, str | None]:
    """Hash of each path (None when missing): the byte-preservation check."""
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None for p in paths
    }


class MemorySession:
    """A session handle held in memory: records appended events, a switchable barrier."""

    def __init__(self) -> None:
        self.events: list[Mapping[str, Any]] = []
        self.delivered: dict[Member, str] = {}
        self.barrier_ok = True

    def append(self, event: Mapping[str, Any]) -> object:
        self.events.append(event)
        data = event["data"]
        for entry in data["reminders"]:
            member = Member(entry["id"], ms(entry["occurrenceAt"]))
            self.delivered.setdefault(member, data["messageId"])
        return event

    def flush(self) -> bool:
        return self.barrier_ok


class MemorySessions:
    """A :class:`SessionController` over :class:`MemorySession` objects.

    ``unresolvable`` sessions fail to resolve; ``on_resolve`` runs inside the FIFO slot (a test
    uses it to move the virtual clock while a delivery holds the slot).
    """

    def __init__(self) -> None:
        self.sessions: dict[str, MemorySession] = {}
        self.unresolvable: set[str] = set()
        self.legacy: dict[str, int | Exception] = {}
        self.on_resolve: Any = None

    def resolve(self, session_id: str) -> MemorySession:
        if self.on_resolve is not None:
            self.on_resolve(session_id)
        if session_id in self.unresolvable:
            raise OSError(f"session {session_id} cannot be restored")
        return self.sessions.setdefault(session_id, MemorySession())

    def discard(self, session_id: str) -> None:
        pass

    def legacy_reminders(self, session_id: str) -> int:
        value = self.legacy.get(session_id, 0)
        if isinstance(value, Exception):
            raise value
        return value


def followup_members(directory: Path) -> list[tuple[str, str]]:
    """``(task id, occurrenceAt)`` of every follow-up reminder in every session log of
    ``directory``, with repeats (empty when the directory does not exist)."""
    out = []
    for log in sorted(directory.glob("*.jsonl")):
        for event in read_log(log).events:
            if event.type == "message/followup":
                out.extend((r["id"], r["occurrenceAt"]) for r in event.data["reminders"])
    return out
