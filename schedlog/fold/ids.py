"""Session-local id allocation (docs/protocol.md#id-allocation)."""

from __future__ import annotations

from schedlog.fold.state import FoldState

__all__ = ["next_schedule_id"]


def next_schedule_id(state: FoldState) -> str:
    """``schedule-(N+1)`` for N seen ids, incremented while taken; ids are never reused."""
    n = len(state.seen_ids) + 1
    while f"schedule-{n}" in state.seen:
        n += 1
    return f"schedule-{n}"
