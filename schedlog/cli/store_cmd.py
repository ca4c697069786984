"""``schedlog store``: task store administration (argparse wiring only).

* ``store migrate``: apply the SQLite or PostgreSQL schema's forward migrations (a host never
  does).
* ``store copy SRC DST``: copy every task into an empty store of any backend, then verify.
"""

from __future__ import annotations

from typing import Any

from schedlog._lazy import lazy_command
from schedlog.cli.host_cmd import store_args

__all__ = ["register"]

_cmd_migrate = lazy_command("schedlog.cli._store", "cmd_store_migrate")
_cmd_copy = lazy_command("schedlog.cli._store", "cmd_store_copy")


def register(sub: Any) -> None:
    """Add ``store migrate`` and ``store copy`` to the ``schedlog`` parsers."""
    store = sub.add_parser(
        "store",
        help="task store administration: schema migrations",
        description="Administer a host task store.",
    )
    ssub = store.add_subparsers(dest="store_command", required=True, metavar="COMMAND")
    migrate = ssub.add_parser(
        "migrate",
        help="bring an SQLite or PostgreSQL store's schema to this version",
        description=(
            "Apply the missing forward migrations of the PostgreSQL schema, each in its own "
            "transaction; safe to run again and from several processes at once. A host refuses "
            "a database whose schema is not current (version-mismatch) and never migrates it. "
            "An SQLite store written by 0.2.0 opens as it is but cannot hold a paused task "
            "until migrated (stop its host first); the schedule.json document needs none."
        ),
    )
    store_args(migrate)
    migrate.add_argument(
        "--to", type=int, metavar="N", help="stop at schema version N (default: the latest)"
    )
    migrate.set_defaults(func=_cmd_migrate)
    copy = ssub.add_parser(
        "copy",
        help="copy every task from SRC into the empty store DST (any two backends)",
        description=(
            "Copy every task in storage order, with its id, session, status, receipt and "
            "history, into an empty destination (refused otherwise), then read both back and "
            "compare. SRC and DST are files (.json: JSON document, else SQLite) or "
            "postgresql:// URLs. Stop the hosts of SRC first."
        ),
    )
    copy.add_argument("src", metavar="SRC", help="the source store")
    copy.add_argument("dst", metavar="DST", help="the empty destination store")
    copy.set_defaults(func=_cmd_copy)
