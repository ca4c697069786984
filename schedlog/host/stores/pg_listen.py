"""The PostgreSQL store's ``LISTEN`` thread: other writers' committed changes, as they come."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

import psycopg
import structlog

from schedlog.host.stores.pg_queries import LISTEN
from schedlog.host.stores.pg_rows import connect, reason
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = ["Listener"]

_log = structlog.get_logger("schedlog.host")
_BACKOFF_S: Final = 0.05
_MAX_BACKOFF_S: Final = 5.0


class Listener:
    """The ``LISTEN`` thread of one store: a connection of its own, re-opened with back-off."""

    def __init__(self, url: str, owner: str, on_change: Callable[[dict[str, str]], None]) -> None:
        self._url = url
        self._owner = owner
        self._on_change = on_change
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="schedlog-listen", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        delay = _BACKOFF_S
        first = True
        while not self._stopping.is_set():
            try:
                with connect(self._url, autocommit=True) as conn:
                    conn.execute(LISTEN)
                    delay = _BACKOFF_S
                    if not first:
                        self._on_change({})  # changes may have been missed while away
                    first = False
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=0.5, stop_after=64):
                            self._deliver(note.payload)
            except psycopg.Error as exc:
                _log.warning(
                    "store.listen_lost",
                    error=reason(exc),
                    message=f"schedule: change notifications lost ({reason(exc)}); retrying",
                )
                self._stopping.wait(delay)
                delay = min(delay * 2, _MAX_BACKOFF_S)

    def _deliver(self, payload: str) -> None:
        """One notification: a row's change (``{"writer","id","sessionId","kind"}``) or, from a
        statement that rewrote tasks (schema version 5), ``{"writer","changes":[...]}``: each
        change passed on in order, as if notified alone."""
        try:
            value = loads_strict(payload) if payload else {}
        except JSONSyntaxError:
            value = {}
        if not isinstance(value, dict):
            value = {}
        if value.get("writer") == self._owner:
            return  # this store's own commit: its host already knows
        changes = value.get("changes")
        if not isinstance(changes, list):
            self._on_change({k: v for k, v in value.items() if isinstance(v, str)})
            return
        writer = {k: v for k, v in value.items() if k == "writer" and isinstance(v, str)}
        for change in changes:
            fields = change.items() if isinstance(change, dict) else ()
            self._on_change({**writer, **{k: v for k, v in fields if isinstance(v, str)}})

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
