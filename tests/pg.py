"""A fresh PostgreSQL database per test module, on the server of ``SCHEDLOG_TEST_POSTGRES``.

Default ``postgresql://postgres@127.0.0.1:5432/postgres``. The database named in the URL is only
used to create and drop the test databases; when it does not exist, the server's ``postgres``
and ``template1`` databases are tried, so any reachable server works. Without psycopg or a
reachable server the tests that need one skip (one line at the end of the run says so), except
under ``CI=true``, where they fail.

Test databases are named ``schedlog_t_<host>_<pid>_<random>``: ``<host>`` is a hash of this
machine's name and ``<pid>`` the creating pytest process. They are dropped when their module
ends; those an interrupted run left behind are dropped by the next run's first connection,
but only when they were made on this machine by a process that is no longer alive, so the
databases of runs going on beside this one are never touched.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import socket
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from tests.missing import missing

DEFAULT_URL: Final = "postgresql://postgres@127.0.0.1:5432/postgres"
#: Every test database's name starts with this (``schedlog_t_*``).
PREFIX: Final = "schedlog_t_"
_NAME: Final = re.compile(r"schedlog_t_([0-9a-f]{8})_([0-9]+)_[0-9a-f]{6}")
_cleaned = False


def server_url() -> str:
    return os.environ.get("SCHEDLOG_TEST_POSTGRES", DEFAULT_URL)


def with_database(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))


def host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def database_name() -> str:
    """A new test database name: ``schedlog_t_<host>_<pid>_<random>`` (at most 63 bytes)."""
    return f"{PREFIX}{host_tag()}_{os.getpid()}_{secrets.token_hex(3)}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by another user
    return True


def stale(names: Iterable[str], tag: str, alive: Callable[[int], bool]) -> list[str]:
    """The test databases among ``names`` that an ended run left behind: made on the machine
    ``tag`` by a process that ``alive`` says is gone. Any other name is kept."""
    out = []
    for name in names:
        m = _NAME.fullmatch(name)
        if m is not None and m.group(1) == tag and not alive(int(m.group(2))):
            out.append(name)
    return sorted(out)


def drop_stale(conn: Any) -> list[str]:
    """Drop the stale test databases (:func:`stale`) the server holds; the names dropped. A
    database that still has a session is left for a later run (no ``FORCE``)."""
    rows = conn.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE %s", (PREFIX.replace("_", r"\_") + "%",)
    ).fetchall()
    dropped = []
    for name in stale([row[0] for row in rows], host_tag(), pid_alive):
        try:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        except Exception:  # in use after all, or dropped by a concurrent cleaner
            continue
        dropped.append(name)
    return dropped


def _unavailable(reason: str, *, module: bool = False) -> None:
    where = urllib.parse.urlsplit(server_url())._replace(path="").geturl()
    missing("PostgreSQL", f"no server to test against at {where} ({reason})", module=module)


def require_psycopg() -> Any:
    """The ``psycopg`` module for a test module that needs it at import: skips the module with
    a message when it is missing, except under ``CI=true``, where the module fails (never
    ``pytest.importorskip``, which would skip under CI too)."""
    try:
        import psycopg
    except ImportError as exc:
        _unavailable(f"psycopg is not installed: {exc}", module=True)
    return psycopg


def _candidates() -> list[str]:
    url = server_url()
    fallbacks = [with_database(url, "postgres"), with_database(url, "template1")]
    return list(dict.fromkeys([url, *fallbacks]))


def admin() -> Any:
    """An autocommit connection to a maintenance database of the server, or skip / fail. The
    first connection of a process drops the stale test databases."""
    global _cleaned
    try:
        import psycopg
    except ImportError as exc:
        _unavailable(f"psycopg is not installed: {exc}")
    error: Exception | None = None
    for url in _candidates():
        try:
            conn = psycopg.connect(url, autocommit=True, connect_timeout=3)
        except psycopg.OperationalError as exc:
            error = exc
            if "does not exist" in str(exc):
                continue  # that maintenance database is missing: try the next one
            break
        if not _cleaned:
            _cleaned = True
            drop_stale(conn)
        return conn
    text = str(error).strip()
    _unavailable(text.splitlines()[0] if text else repr(error))
    raise AssertionError("unreachable")


def fresh_database() -> Iterator[str]:
    """Create a uniquely named test database, yield its URL, drop it (``WITH (FORCE)``)."""
    name = database_name()
    conn = admin()
    try:
        conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield with_database(server_url(), name)
        finally:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        conn.close()


def reset(url: str) -> None:
    """Drop every schedlog object from the database at ``url`` and migrate it afresh."""
    import psycopg

    from schedlog.host.stores.pg_admin import migrate

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    migrate(url)


def insert_raw(url: str, rows: list[tuple[str, str, str, int, str]]) -> None:
    """Insert ``(id, session_id, status, next_at, body)`` rows as they are, bypassing the store."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.cursor().executemany(
            "INSERT INTO schedlog_tasks (id, session_id, status, next_at, body) "
            "VALUES (%s, %s, %s, %s, %s)",
            rows,
        )


def sql(url: str, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement on its own autocommit connection; its rows, if it returns any."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def pg_store(url: str) -> Any:
    """``open_store(url)``, checked to be the PostgreSQL store."""
    from schedlog.host.stores.open import open_store
    from schedlog.host.stores.postgres import PostgresTaskStore

    store = open_store(url)
    assert isinstance(store, PostgresTaskStore)
    return store
