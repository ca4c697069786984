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

    Immutable. Lookups by id are O(1) through indexes built once per state (they do not take
    part in equality), which is what lets the invariant judge a candidate without re-folding.
    """

    active: tuple[Record, ...] = ()
    seen_ids: tuple[str, ...] = ()
    _by_id: Mapping[str, Record] = field(init=False, repr=False, compare=False)
    _seen: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {r.id: r for r in self.active})
        object.__setattr__(self, "_seen", frozenset(self.seen_ids))

    @classmethod
    def from_index(cls, active: Mapping[str, Record], seen_ids: Iterable[str]) -> FoldState:
        """A state from an insertion-ordered id -> record mapping (the fold's working form)."""
        return cls(active=tuple(active.values()), seen_ids=tuple(seen_ids))

    @property
    def by_id(self) -> Mapping[str, Record]:
        """Active records by id (read only)."""
        return self._by_id

    @property
    def seen(self) -> frozenset[str]:
        """The seen ids as a set."""
        return self._seen

    def get(self, record_id: str) -> Record | None:
        return self._by_id.get(record_id)

    def is_active(self, record_id: str) -> bool:
        return record_id in self._by_id

    def was_seen(self, record_id: str) -> bool:
        return record_id in self._seen

    def to_json(self) -> dict[str, Any]:
        """``{"active":[RECORD…],"seenIds":[…]}`` as in the batch ``fold`` result
        (docs/protocol.md#batch-rules)."""
        return {"active": [r.to_json() for r in self.active], "seenIds": list(self.seen_ids)}
