"""A fresh PostgreSQL database per test module, on the server of ``SCHEDLOG_TEST_POSTGRES``.

Default ``postgresql://postgres@127.0.0.1:5432/test``: the database named there is only used to
create and drop the per-module databases. Without psycopg or a reachable server the tests that
need one skip with a message, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import secrets
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def server_url() -> str:
    return os.environ.get("SCHEDLOG_TEST_POSTGRES", DEFAULT_URL)


def with_database(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))


def _unavailable(reason: str, *, module: bool = False) -> None:
    message = f"PostgreSQL tests need a server at {server_url()} ({reason})"
    if os.environ.get("CI") == "true":
        pytest.fail(message + "; under CI=true they must run")
    pytest.skip(message, allow_module_level=module)


def require_psycopg() -> Any:
    """The ``psycopg`` module for a test module that needs it at import: skips the module with
    a message when it is missing, except under ``CI=true``, where the module fails (never
    ``pytest.importorskip``, which would skip under CI too)."""
    try:
        import psycopg
    except ImportError as exc:
        _unavailable(f"psycopg is not installed: {exc}", module=True)
    return psycopg


def admin() -> Any:
    """An autocommit connection to the server's maintenance database, or skip / fail."""
    try:
        import psycopg
    except ImportError as exc:
        _unavailable(f"psycopg is not installed: {exc}")
    try:
        return psycopg.connect(server_url(), autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        _unavailable(str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc))


def fresh_database(prefix: str = "schedlog_t") -> Iterator[str]:
    """Create a uniquely named database, yield its URL, drop it (``WITH (FORCE)``)."""
    name = f"{prefix}_{secrets.token_hex(6)}"
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

    from schedlog.host.store_postgres import migrate

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
    from schedlog.host.backends import open_store
    from schedlog.host.store_postgres import PostgresTaskStore

    store = open_store(url)
    assert isinstance(store, PostgresTaskStore)
    return store
