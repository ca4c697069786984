"""``schedlog store``: task store administration (argparse wiring only).

* ``store migrate``: apply the PostgreSQL schema's forward migrations (a host never does).
"""

from __future__ import annotations

from typing import Any

from schedlog._lazy import lazy_command
from schedlog.cli.host_cmd import store_args

__all__ = ["register"]

_cmd_migrate = lazy_command("schedlog.cli._store", "cmd_store_migrate")


def register(sub: Any) -> None:
    """Add ``store migrate`` to the ``schedlog`` parsers."""
    store = sub.add_parser(
        "store",
        help="task store administration: schema migrations",
        description="Administer a host task store.",
    )
    ssub = store.add_subparsers(dest="store_command", required=True, metavar="COMMAND")
    migrate = ssub.add_parser(
        "migrate",
        help="bring a PostgreSQL store's schema to this version (file stores need none)",
        description=(
            "Apply the missing forward migrations of the PostgreSQL schema, each in its own "
            "transaction; safe to run again and from several processes at once. A host refuses "
            "a database whose schema is not current (version-mismatch) and never migrates it."
        ),
    )
    store_args(migrate)
    migrate.add_argument(
        "--to", type=int, metavar="N", help="stop at schema version N (default: the latest)"
    )
    migrate.set_defaults(func=_cmd_migrate)
