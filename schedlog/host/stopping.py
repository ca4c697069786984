"""Stopping a host within ``--stop-timeout`` (docs/operations.md#stopping).

On SIGTERM or SIGINT the host takes no new work, lets the delivery in its FIFO slot finish and
commit, hands a shared store's claims back, and exits 0. A delivery that has not finished when
the timeout runs out (a webhook that does not answer) is abandoned: its reminders stay due and
are delivered by the next host to run (the receiver dedupes by ``messageId``).
"""

from __future__ import annotations

import asyncio
from typing import Final

import structlog

from schedlog.host.service import HostService

__all__ = ["DEFAULT_STOP_TIMEOUT_S", "stop_service"]

DEFAULT_STOP_TIMEOUT_S: Final = 10.0

_log = structlog.get_logger("schedlog.host")


async def stop_service(service: HostService, timeout_s: float) -> bool:
    """Close ``service``, waiting at most ``timeout_s`` for the work in flight; True when it
    finished in time, False when what was left was abandoned."""
    closing = asyncio.ensure_future(service.aclose())
    try:
        await asyncio.wait_for(asyncio.shield(closing), timeout_s)
        return True
    except TimeoutError:
        closing.cancel()
        await asyncio.gather(closing, return_exceptions=True)
        service.abandon()
        _log.warning(
            "host.stop_timeout",
            timeoutSeconds=timeout_s,
            message=(
                f"schedule: stopping took longer than {timeout_s:g} s: the delivery in flight "
                "was abandoned (its reminders stay due)"
            ),
        )
        return False
