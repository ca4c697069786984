"""The cyclic garbage collector paused around work that builds many acyclic values that all
survive it (a log's read and fold, a store's rows, a batched delivery pass), and enabled again
afterwards only if it was enabled before.

Reference counting frees those values; the cyclic collector would only traverse them again
and again as they are promoted (docs/decisions.md, "Opening a session" and "One directory
fsync per batched run"). Nested or overlapping pauses never leave the collector off: only the
pause that found it enabled enables it again, also on a failure or a cancellation.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the ``with`` block (see the module docstring)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
