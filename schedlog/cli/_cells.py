"""Table cells of user text for the terminal (``host catalog``): bidi controls are shown as
escapes instead of reordering the line, combining marks are kept to two per character (so a
stack of them cannot cover the rows around), and a cell is clipped to a width
(docs/operations.md#catalog)."""

from __future__ import annotations

import unicodedata
from typing import Final

__all__ = ["MAX_CELL", "MAX_MARKS", "cell"]

MAX_CELL: Final = 60
MAX_MARKS: Final = 2
#: Embeddings, overrides, isolates and the implicit marks (LRM, RLM, ALM).
_BIDI: Final = frozenset(
    [*"\u202a\u202b\u202c\u202d\u202e", *"\u2066\u2067\u2068\u2069", *"\u200e\u200f\u061c"]
)


def cell(text: str, width: int = MAX_CELL) -> str:
    """``text`` made safe for one table cell of at most ``width`` characters."""
    out: list[str] = []
    marks = 0
    for ch in text:
        if ch in _BIDI:
            out.append(f"\\u{ord(ch):04x}")
            marks = 0
            continue
        if unicodedata.combining(ch):
            marks += 1
            if marks > MAX_MARKS:
                continue
        else:
            marks = 0
        out.append(ch)
    safe = "".join(out)
    return safe if len(safe) <= width else safe[: width - 1] + "…"
