"""The implementation of ``schedlog mcp`` (docs/agents.md#stdio); :mod:`schedlog.cli.mcp_cmd`
holds its argparse wiring.

A usage error or a store that does not open is one ``{"error": {code, message}}`` line on
stderr (stdout belongs to the protocol) and exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys

from schedlog.cli.common import configure_diagnostics, write_json_line
from schedlog.errors import StoreOpenError

__all__ = ["cmd_mcp"]


def _fail(code: str, message: str) -> int:
    write_json_line({"error": {"code": code, "message": message}}, sys.stderr)
    return 1


def _usage(args: argparse.Namespace) -> str | None:
    if args.log is not None:
        store_given = args.store is not None and args.store != os.environ.get("SCHEDLOG_STORE")
        if store_given or args.sessions is not None or args.session is not None:
            return "give either --log, or --store with --sessions and --session, not both"
        return None
    if args.store is None or args.sessions is None or args.session is None:
        return "give --log PATH, or --store, --sessions and --session together"
    if args.session_id is not None:
        return "--session-id goes with --log; with --store the session is --session"
    return None


def cmd_mcp(args: argparse.Namespace) -> int:
    configure_diagnostics()
    problem = _usage(args)
    if problem is not None:
        return _fail("invalid_request", problem)
    try:
        from schedlog.mcp import stdio
    except ImportError:
        return _fail(
            "missing-extra", "schedlog mcp needs the mcp extra: pip install 'schedlog[mcp]'"
        )
    from schedlog.runtime.clock import SystemClock

    if args.log is not None:
        main = stdio.serve_log(args.log, clock=SystemClock(), session_id=args.session_id)
    else:
        main = stdio.serve_host(
            args.store, args.backend, args.sessions, args.session, clock=SystemClock()
        )
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(main)
    except StoreOpenError as exc:
        return _fail(exc.code, exc.message)
    return 0
