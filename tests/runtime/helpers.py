"""Test harness: a real :class:`FileSession` wrapped to record effects and inject failures."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from schedlog.cli.common import parse_request_instant, run_batch
from schedlog.cli.session_cmd import session_batch_handlers
from schedlog.eventlog.events import LogEvent
from schedlog.eventlog.header import Header
from schedlog.rules.text import js_dumps
from schedlog.runtime.batch import BatchSession
from schedlog.runtime.interfaces import FollowupMessage
from schedlog.runtime.session_file import FileSession
from schedlog.strictjson import loads_strict


def ms(text: str) -> int:
    return parse_request_instant(text)


class Harness:
    """Both embedding capabilities over a real log, with an effect journal and failure switches.

    ``effects`` records ``barrier``, ``claim``, ``release``, ``followup``, and one entry per
    schedule change (``create:ID``, ``delete:ID``, ``dispatch:ID``) in the order they happen.
    """

    def __init__(self, path: Path, session_id: str = "s-1") -> None:
        self.inner = FileSession(path, session_id=session_id)
        self.effects: list[str] = []
        self.barrier_results: list[bool | Exception] = []  # consumed one per barrier call
        self.fail_followup: Exception | None = None
        self.fail_dispatch_append: Exception | None = None
        self.fail_append_after: int | None = None  # fail appends once this many succeeded

    # SessionLog
    @property
    def header(self) -> Header:
        return self.inner.header

    def events(self) -> Sequence[LogEvent]:
        return self.inner.events()

    def append(self, event: Mapping[str, Any]) -> None:
        data = event["data"]
        if event["type"] == "schedule/change":
            target = data["schedule"]["id"] if data["operation"] == "create" else data["id"]
            if data["operation"] == "dispatch" and self.fail_dispatch_append is not None:
                if self.fail_append_after is None or self.fail_append_after <= 0:
                    raise self.fail_dispatch_append
                self.fail_append_after -= 1
            self.effects.append(f"{data['operation']}:{target}")
        self.inner.append(event)

    def flush(self) -> bool:
        self.effects.append("barrier")
        if self.barrier_results:
            result = self.barrier_results.pop(0)
            if isinstance(result, Exception):
                raise result
            if not result:
                return False
        return self.inner.flush()

    # Agent
    def claim_maintenance(self) -> Any:
        claim = self.inner.claim_maintenance()
        if claim is None:
            self.effects.append("claim-busy")
            return None
        self.effects.append("claim")
        effects = self.effects

        class Claim:
            def release(self) -> None:
                effects.append("release")
                claim.release()

        return Claim()

    async def when_idle(self) -> None:
        await self.inner.when_idle()

    def followup(self, message: FollowupMessage) -> None:
        self.effects.append("followup")
        if self.fail_followup is not None:
            raise self.fail_followup
        self.inner.followup(message)

    def subscribe_idle(self, callback: Callable[[], None]) -> Callable[[], None]:
        return self.inner.subscribe_idle(callback)

    @property
    def outbox(self) -> list[FollowupMessage]:
        return self.inner.outbox


def log_lines(path: Path) -> list[dict[str, Any]]:
    return [loads_strict(line) for line in path.read_bytes().splitlines()]


def schedule_ops(path: Path) -> list[str]:
    out = []
    for value in log_lines(path)[1:]:
        data = value["data"]
        if value["type"] == "schedule/change":
            target = data["schedule"]["id"] if data["operation"] == "create" else data["id"]
            out.append(f"{data['operation']}:{target}")
        elif value["type"] == "message/followup":
            out.append("followup:" + ",".join(r["id"] for r in data["reminders"]))
    return out


def run_session_batch(
    path: Path, requests: Sequence[str | Mapping[str, Any]], session_id: str | None = None
) -> list[str]:
    """Serve request lines with ``session batch``'s handlers; the response lines."""
    session = BatchSession(path, session_id=session_id)
    out = io.StringIO()
    lines = [r if isinstance(r, str) else js_dumps(r) for r in requests]
    try:
        run_batch([line + "\n" for line in lines], session_batch_handlers(session), out)
    finally:
        session.close()
    # Not str.splitlines(): U+2028 and U+0085 inside JSON strings are not line breaks here.
    return out.getvalue().split("\n")[:-1]
