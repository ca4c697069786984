"""Builders of session-log events and lines shared by the eventlog, fold and invariant tests."""

from __future__ import annotations

from typing import Any

from schedlog.eventlog import LogEvent, encode_line, event_from_value
from schedlog.strictjson import loads_strict


def header(sid: str = "s-1", seed: Any = 0, parent: Any = None) -> dict[str, Any]:
    return {
        "type": "session/header",
        "version": 1,
        "sessionId": sid,
        "seedLength": seed,
        "parentSessionId": parent,
    }


def record(rid: str, kind: str = "after", at: str = "2026-05-01T09:00:00.000Z", **kw: Any) -> Any:
    out: dict[str, Any] = {"id": rid, "kind": kind}
    if "title" in kw:
        out["title"] = kw.pop("title")
    out["prompt"] = kw.pop("prompt", f"Prompt of {rid}")
    if kind == "after":
        out["afterSeconds"] = kw.pop("afterSeconds", 600)
    elif kind == "every":
        out["everySeconds"] = kw.pop("everySeconds", 3600)
    out.update(kw)
    out["scheduledAt"] = at
    return out


def create_data(rid: str, kind: str = "after", at: str = "2026-05-01T09:00:00.000Z", **kw: Any):
    return {"version": 1, "operation": "create", "schedule": record(rid, kind, at, **kw)}


def delete_data(rid: str) -> dict[str, Any]:
    return {"version": 1, "operation": "delete", "id": rid}


def dispatch_data(rid: str, accepted_at: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"version": 1, "operation": "dispatch", "id": rid}
    if accepted_at is not None:
        out["acceptedAt"] = accepted_at
    return out


def change(data: Any) -> dict[str, Any]:
    return {"type": "schedule/change", "data": data}


def chatter(text: str = "hello") -> dict[str, Any]:
    return {"type": "message/user", "data": {"text": text}}


def event(value: dict[str, Any]) -> LogEvent:
    """A LogEvent exactly as the reader would produce it from ``value``'s compact line."""
    line = encode_line(value)
    return event_from_value(loads_strict(line[:-1]), raw=line)


def log_bytes(*values: dict[str, Any] | bytes) -> bytes:
    return b"".join(v + b"\n" if isinstance(v, bytes) else encode_line(v) for v in values)
