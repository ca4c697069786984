"""The pure fold: session-log events in, active reminders out (docs/protocol.md#fold,
docs/protocol.md#id-allocation).

This is the readable reference fold. The fast path of a whole read and fold, a chunk of lines
at a time, is :mod:`schedlog.invariant.fastcheck` (``validate``, ``replay``), proven equal to
this fold by ``tests/invariant/test_fastcheck.py``.
"""

from schedlog.fold.ids import next_schedule_id
from schedlog.fold.replay import apply_change, apply_event, fold, fold_changes
from schedlog.fold.state import FoldState
from schedlog.fold.steps import Effect, FoldError, decode_event_change, plan

__all__ = [
    "Effect",
    "FoldError",
    "FoldState",
    "apply_change",
    "apply_event",
    "decode_event_change",
    "fold",
    "fold_changes",
    "next_schedule_id",
    "plan",
]
