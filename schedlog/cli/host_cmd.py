"""``schedlog host``: the host protocol on the command line (docs/protocol.md#batch-host,
docs/protocol.md#batch-session).

* ``host batch``: JSON Lines requests on a virtual clock (every clock sample is the request's
  ``now``); deliveries happen only on ``tick``.
* ``host run``: the host service on the real clock until SIGINT/SIGTERM, delivering into the
  sessions directory.
* ``host catalog`` / ``host history``: human read commands (tables, or ``--json``).

Only the argparse wiring lives here: each command imports its implementation
(:mod:`schedlog.cli._host`) when it runs. ``HostBatch`` and ``BatchClock`` are still importable
from here; they load on first use.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any, Final

from schedlog._lazy import lazy_command, lazy_exports
from schedlog.about import docs_url
from schedlog.cli.run_log import add_run_log_args

if TYPE_CHECKING:
    from schedlog.cli._host import BatchClock, HostBatch

__all__ = ["BatchClock", "HostBatch", "register"]

#: The implementation's classes, imported on first use.
_LAZY: Final = {"BatchClock": "schedlog.cli._host", "HostBatch": "schedlog.cli._host"}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


# --- commands: each imports its implementation when it runs -----------------------------------


_cmd_batch = lazy_command("schedlog.cli._host", "cmd_batch")
_cmd_run = lazy_command("schedlog.cli._host", "cmd_run")
_cmd_catalog = lazy_command("schedlog.cli._host", "cmd_catalog")
_cmd_history = lazy_command("schedlog.cli._host", "cmd_history")
_cmd_migrate = lazy_command("schedlog.cli._host", "cmd_migrate")
_cmd_serve = lazy_command("schedlog.cli._serve", "cmd_serve")


# --- argument types and groups --------------------------------------------------------------


def _days(text: str) -> int:
    from schedlog.host.config import ConfigError, retention

    try:
        return retention(int(text), 1).days
    except (ValueError, ConfigError) as exc:
        raise argparse.ArgumentTypeError("must be an integer from 1 through 3650") from exc


def _records(text: str) -> int:
    from schedlog.host.config import ConfigError, retention

    try:
        return retention(1, int(text)).records
    except (ValueError, ConfigError) as exc:
        raise argparse.ArgumentTypeError("must be an integer from 1 through 10000") from exc


def store_args(parser: argparse.ArgumentParser, *, optional: bool = False) -> None:
    """``--store`` (default ``$SCHEDLOG_STORE``; required without it unless ``optional``) and
    ``--backend``."""
    default = os.environ.get("SCHEDLOG_STORE") or None
    parser.add_argument(
        "--store",
        required=default is None and not optional,
        default=default,
        metavar="PATH|URL",
        help=(
            "task store: a file (.json: JSON document, else SQLite) or a postgresql:// URL "
            "(default: $SCHEDLOG_STORE)"
        ),
    )
    parser.add_argument(
        "--backend", choices=("sqlite", "json", "postgresql"), help="override the backend"
    )


_store_args = store_args


def _service_args(parser: argparse.ArgumentParser) -> None:
    _store_args(parser)
    parser.add_argument("--sessions", required=True, help="sessions directory (DIR/<enc>.jsonl)")
    parser.add_argument(
        "--history-days",
        type=_days,
        default=30,
        metavar="N",
        help="keep delivery records of the last N days per task (1-3650)",
    )
    parser.add_argument(
        "--history-records",
        type=_records,
        default=200,
        metavar="N",
        help="keep at most N delivery records per task (1-10000)",
    )


def _retry_args(parser: argparse.ArgumentParser) -> None:
    """The backoff of failed deliveries (docs/operations.md#retries), and ``--stop-timeout``."""
    parser.add_argument(
        "--retry-base-ms",
        type=int,
        default=1000,
        metavar="MS",
        help="first retry delay of a failed delivery, to a log or a webhook (default 1000)",
    )
    parser.add_argument(
        "--retry-cap-ms",
        type=int,
        default=300_000,
        metavar="MS",
        help="longest retry delay; each failure doubles the delay up to it (default 300000)",
    )
    parser.add_argument(
        "--stop-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="on SIGTERM/SIGINT, seconds to finish deliveries in flight before exiting "
        "(default 10)",
    )


def _http_args(parser: Any) -> None:
    """``host serve``'s listener: address, token, allowed hosts and origins, limits."""
    parser.add_argument(
        "--listen",
        default="127.0.0.1:8765",
        metavar="HOST:PORT",
        help="address to listen on (default 127.0.0.1:8765, loopback only; port 0: any free)",
    )
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help="bearer token file (default <store>.token; <sessions>.token for postgresql://)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME[:PORT]",
        help="another Host header value to answer (loopback names are always allowed)",
    )
    parser.add_argument(
        "--cors-origin", action="append", metavar="ORIGIN", help="allow CORS from this origin"
    )
    parser.add_argument(
        "--max-event-clients",
        type=int,
        default=32,
        metavar="N",
        help="concurrent /v1/events streams (default 32)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=256,
        metavar="N",
        help="open connections at most; one more is answered 503 (default 256, lowered to keep "
        "64 descriptors free under the open-files limit)",
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds a client has to send a request's headers, idle connections included "
        "(default 10)",
    )


def _webhook_args(parser: Any) -> None:
    """``host serve --deliver-to``: the secret, the deadline and the concurrency of the POSTs."""
    parser.add_argument(
        "--webhook-secret-file",
        metavar="PATH",
        help="HMAC secret for --deliver-to (mode 0600; else SCHEDLOG_WEBHOOK_SECRET)",
    )
    parser.add_argument(
        "--webhook-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="deadline of one whole POST to the receiver, in seconds (default 10)",
    )
    parser.add_argument(
        "--webhook-concurrency",
        type=int,
        default=64,  # schedlog.host.inflight.DEFAULT_LIMIT (not imported: the CLI loads lazily)
        metavar="N",
        help="webhook POSTs in flight at once, each session's in order (default 64)",
    )


def _serve_parser(hsub: Any) -> None:
    serve = hsub.add_parser(
        "serve",
        help=f"serve the host service over HTTP ({docs_url('http-api.md')})",
        description=(
            "Deliver due reminders (as host run does) and serve the /v1 HTTP API on the same "
            "service. Every /v1 route needs Authorization: Bearer <token>; the token comes "
            "from SCHEDLOG_TOKEN or from the token file (generated on first start, mode 0600). "
            "Prints the URL and the token file on start (never the token), then the URL of "
            "the web task page at / with a one-time sign-in code in its fragment, valid for "
            f"60 s ({docs_url('operations.md#web-page')}). Needs the serve extra."
        ),
    )
    _store_args(serve)
    sink = serve.add_mutually_exclusive_group(required=True)
    sink.add_argument("--sessions", help="sessions directory (DIR/<enc>.jsonl)")
    sink.add_argument(
        "--deliver-to",
        metavar="URL",
        help="POST each due group to this webhook instead (signed; retried with backoff)",
    )
    serve.add_argument("--history-days", type=_days, default=30, metavar="N")
    serve.add_argument("--history-records", type=_records, default=200, metavar="N")
    _http_args(serve)
    _webhook_args(serve)
    _retry_args(serve)
    serve.add_argument(
        "--metrics-public",
        action="store_true",
        help=f"answer GET /metrics without the token ({docs_url('operations.md#metrics')})",
    )
    add_run_log_args(serve)
    serve.set_defaults(func=_cmd_serve)


def register(sub: Any) -> None:
    """Add ``host batch|run|catalog|history`` and ``migrate`` to the ``schedlog`` parsers."""
    host = sub.add_parser(
        "host",
        help="the host protocol: one task store for all sessions",
        description=(
            f"Run the host service ({docs_url('protocol.md#host')}) over a task store and a "
            "sessions directory."
        ),
    )
    hsub = host.add_subparsers(dest="host_command", required=True, metavar="COMMAND")
    batch = hsub.add_parser(
        "batch",
        help=f"answer JSON Lines host requests from stdin ({docs_url('protocol.md#batch-host')})",
        description=(
            "One JSON request per stdin line, one JSON result per line, on a virtual clock; "
            "deliveries happen only on tick."
        ),
    )
    _service_args(batch)
    batch.set_defaults(func=_cmd_batch)
    run = hsub.add_parser(
        "run",
        help="run the host service on the real clock until SIGINT/SIGTERM",
        description=(
            "Deliver due reminders into the sessions directory until SIGINT/SIGTERM. On a "
            "terminal stderr shows a start line (store, backend, sessions, active tasks, next "
            "target in UTC and local time), one line per delivery, warnings and a stop line; "
            "otherwise, or with --log-format json, one structlog JSON object per event. "
            "stdout stays empty."
        ),
    )
    _service_args(run)
    _retry_args(run)
    run.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help=f"serve Prometheus metrics at http://HOST:PORT/metrics "
        f"({docs_url('operations.md#metrics')}; needs the metrics extra)",
    )
    add_run_log_args(run)
    run.set_defaults(func=_cmd_run)
    _serve_parser(hsub)
    catalog = hsub.add_parser("catalog", help="list every task of the store")
    _store_args(catalog)
    catalog.add_argument("--json", action="store_true", help="print the catalog as JSON")
    catalog.set_defaults(func=_cmd_catalog)
    history = hsub.add_parser("history", help="show a task's delivery history, newest first")
    _store_args(history)
    history.add_argument("--session", required=True, help="the session the task belongs to")
    history.add_argument("--id", required=True, help="the task id")
    history.add_argument("--limit", type=int, default=20, help="records per page (1-100)")
    history.add_argument("--before", help="page cursor: a messageId from nextBefore")
    history.add_argument(
        "--json",
        action="store_true",
        help=f"print the page as JSON ({docs_url('protocol.md#history')})",
    )
    history.set_defaults(func=_cmd_history)
    migrate = sub.add_parser(
        "migrate",
        help=(
            "recreate a log's legacy reminders as host tasks "
            f"({docs_url('operations.md#migration')})"
        ),
        description="Fold the log's owned suffix and create a host task per active reminder.",
    )
    migrate.add_argument("--log", required=True, help="the session log (never modified)")
    _store_args(migrate)
    migrate.add_argument("--dry-run", action="store_true", help="report without writing")
    migrate.set_defaults(func=_cmd_migrate)
