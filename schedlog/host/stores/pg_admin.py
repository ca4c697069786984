"""The PostgreSQL backend's administration: the schema version, ``migrate`` and the read-only
validation (``schedlog store migrate``, ``schedlog validate --store postgresql://…``).

The schema itself is :mod:`schedlog.host.stores.pg_schema`; a host never migrates implicitly.
"""

from __future__ import annotations

from typing import Any

import psycopg

from schedlog.errors import StoreOpenError
from schedlog.host.stores import pg_queries as q
from schedlog.host.stores.pg_rows import (
    InvalidRow,
    connect,
    decode_or_invalid,
    malformed,
    redact_url,
)
from schedlog.host.stores.pg_schema import MIGRATION_LOCK, MIGRATIONS, SCHEMA_VERSION

__all__ = ["check_version", "migrate", "schema_version", "validate_postgres"]


def _version_of(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(q.VERSION_TABLE_EXISTS, (q.VERSION_TABLE,)).fetchone()
    if not row or not row[0]:
        return 0
    row = conn.execute(q.SCHEMA_VERSION).fetchone()
    return int(row[0]) if row else 0


def schema_version(url: str) -> int:
    """The schema version of the database at ``url`` (0: never migrated)."""
    try:
        with connect(url, autocommit=True) as conn:
            return _version_of(conn)
    except psycopg.Error as exc:
        raise malformed(url, exc) from None


def migrate(url: str, target: int = SCHEMA_VERSION) -> dict[str, Any]:
    """Apply the forward migrations up to ``target``; ``{"store","from","to","applied"}``.

    Each migration is one transaction that also records its version, so an interrupted run
    leaves the database at the last completed step and the next run continues from there.
    """
    if not 0 <= target <= SCHEMA_VERSION:
        raise ValueError(f"unknown schema version {target}")
    applied: list[int] = []
    try:
        with connect(url, autocommit=True) as conn:
            before = _version_of(conn)
            if before > SCHEMA_VERSION:
                raise StoreOpenError(
                    "version-mismatch",
                    f"schedule store {redact_url(url)} has schema version {before}, newer than "
                    f"this schedlog ({SCHEMA_VERSION})",
                )
            for migration in MIGRATIONS:
                if migration.version > target:
                    break
                with conn.transaction():
                    conn.execute(q.MIGRATION_LOCK, (MIGRATION_LOCK,))
                    conn.execute(q.CREATE_VERSION_TABLE)
                    if _version_of(conn) >= migration.version:
                        continue
                    conn.execute(migration.sql.encode())
                    conn.execute(
                        q.RECORD_MIGRATION,
                        (migration.version, migration.name),
                    )
                applied.append(migration.version)
            after = _version_of(conn)
    except psycopg.Error as exc:
        raise malformed(url, exc) from None
    return {"store": redact_url(url), "from": before, "to": after, "applied": applied}


def check_version(conn: psycopg.Connection[Any], url: str) -> None:
    version = _version_of(conn)
    if version == SCHEMA_VERSION:
        return
    if version < SCHEMA_VERSION:
        hint = f"run `schedlog store migrate --store {redact_url(url)}`"
        what = "has no schedlog schema" if version == 0 else f"has schema version {version}"
        raise StoreOpenError(
            "version-mismatch",
            f"schedule store {redact_url(url)} {what}, this schedlog needs {SCHEMA_VERSION}: "
            f"{hint}",
        )
    raise StoreOpenError(
        "version-mismatch",
        f"schedule store {redact_url(url)} has schema version {version}, newer than this "
        f"schedlog ({SCHEMA_VERSION})",
    )


def validate_postgres(url: str, *, limit: int = 100) -> tuple[int, list[InvalidRow], int]:
    """Check the schema version and strict-decode every row, read-only.

    Returns ``(rows, invalid, invalid_count)``: the number of rows, the first ``limit`` rows
    that do not decode (by ``seq``) and how many do not in all. Raises :class:`StoreOpenError`
    when the database cannot be read or its schema version is not this schedlog's.
    """
    invalid: list[InvalidRow] = []
    bad = 0
    count = 0
    try:
        with connect(url) as conn:
            conn.read_only = True
            check_version(conn, url)
            with conn.cursor(name="schedlog_validate") as cur:
                cur.itersize = 2000
                cur.execute(q.ALL_TASKS)
                for row in cur:
                    count += 1
                    result = decode_or_invalid(row)
                    if isinstance(result, InvalidRow):
                        bad += 1
                        if len(invalid) < limit:
                            invalid.append(result)
            conn.rollback()
    except psycopg.Error as exc:
        raise malformed(url, exc) from None
    return count, invalid, bad
