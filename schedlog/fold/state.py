"""The folded schedule state of one session's owned suffix (docs/protocol.md#fold)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from schedlog.rules.record import Record

__all__ = ["FoldState"]


@dataclass(frozen=True, slots=True)
class FoldState:
    """``active``: records in create order; ``seen_ids``: every created id, in first-create order.

    Immutable. Lookups by id are O(1) through indexes built once per state, on first use (they
    do not take part in equality), which is what lets the invariant judge a candidate without
    re-folding.
    """

    active: tuple[Record, ...] = ()
    seen_ids: tuple[str, ...] = ()
    # Built on first use (a replay that only prints the state never needs them).
    _by_id: Mapping[str, Record] | None = field(default=None, init=False, repr=False, compare=False)
    _seen: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_index(cls, active: Mapping[str, Record], seen_ids: Iterable[str]) -> FoldState:
        """A state from an insertion-ordered id -> record mapping (the fold's working form)."""
        return cls(active=tuple(active.values()), seen_ids=tuple(seen_ids))

    @property
    def by_id(self) -> Mapping[str, Record]:
        """Active records by id (read only)."""
        by_id = self._by_id
        if by_id is None:
            by_id = {r.id: r for r in self.active}
            object.__setattr__(self, "_by_id", by_id)
        return by_id

    @property
    def seen(self) -> frozenset[str]:
        """The seen ids as a set."""
        seen = self._seen
        if seen is None:
            seen = frozenset(self.seen_ids)
            object.__setattr__(self, "_seen", seen)
        return seen

    def get(self, record_id: str) -> Record | None:
        return self.by_id.get(record_id)

    def is_active(self, record_id: str) -> bool:
        return record_id in self.by_id

    def was_seen(self, record_id: str) -> bool:
        return record_id in self.seen

    def to_json(self) -> dict[str, Any]:
        """``{"active":[RECORD…],"seenIds":[…]}`` as in the batch ``fold`` result
        (docs/protocol.md#batch-rules)."""
        return {"active": [r.to_json() for r in self.active], "seenIds": list(self.seen_ids)}
