"""The implementation of ``schedlog store`` (:mod:`schedlog.cli.store_cmd` holds the wiring)."""

from __future__ import annotations

import argparse

from schedlog.cli.common import write_json_line
from schedlog.errors import StoreOpenError
from schedlog.host.stores.base import require_postgres
from schedlog.host.stores.open import select_backend

__all__ = ["cmd_store_copy", "cmd_store_migrate"]


def cmd_store_copy(args: argparse.Namespace) -> int:
    """Print ``{"source","destination","tasks"}``, or ``{"error"}`` and exit 1."""
    from schedlog.host.store_copy import CopyError, copy_store

    try:
        result = copy_store(args.src, args.dst)
    except (StoreOpenError, CopyError) as exc:
        write_json_line({"error": exc.to_value()})
        return 1
    write_json_line(result)
    return 0


def _migrate_sqlite(args: argparse.Namespace) -> int:
    from pathlib import Path

    from schedlog.host.stores.sqlite import migrate_sqlite
    from schedlog.host.stores.sqlite_validate import PAUSE_SCHEMA

    if args.to is not None and args.to != PAUSE_SCHEMA:
        message = f"--to must be {PAUSE_SCHEMA} for an SQLite store, not {args.to}"
        write_json_line({"error": {"code": "invalid_request", "message": message}})
        return 2
    try:
        result = migrate_sqlite(Path(args.store))
    except StoreOpenError as exc:
        write_json_line({"error": exc.to_value()})
        return 1
    write_json_line(result)
    return 0


def cmd_store_migrate(args: argparse.Namespace) -> int:
    """Print ``{"store","from","to","applied"}``; the JSON document needs none (it cannot hold
    a paused task, docs/protocol.md#pause)."""
    backend = select_backend(args.store, args.backend)
    if backend == "sqlite":
        return _migrate_sqlite(args)
    if backend != "postgresql":
        write_json_line({"store": args.store, "from": 1, "to": 1, "applied": []})
        return 0
    try:
        require_postgres()
    except StoreOpenError as error:
        write_json_line({"error": error.to_value()})
        return 1
    from schedlog.host.stores.pg_admin import migrate
    from schedlog.host.stores.pg_schema import SCHEMA_VERSION

    target = SCHEMA_VERSION if args.to is None else args.to
    if not 0 <= target <= SCHEMA_VERSION:
        write_json_line(
            {
                "error": {
                    "code": "invalid_request",
                    "message": f"--to must be from 0 through {SCHEMA_VERSION}, not {target}",
                }
            }
        )
        return 2
    try:
        result = migrate(args.store, target)
    except StoreOpenError as exc:
        write_json_line({"error": exc.to_value()})
        return 1
    write_json_line(result)
    return 0
