"""The folded schedule state of one session's owned suffix (docs/protocol.md#fold)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from schedlog.rules.record import Record

__all__ = ["FoldState"]


class FoldState:
    """``active``: records in create order; ``seen_ids``: every created id, in first-create order.

    Immutable. Lookups by id are O(1) through indexes built once per state, on first use (they
    do not take part in equality), which is what lets the invariant judge a candidate without
    re-folding. A state the fast path of ``validate`` and ``replay`` gives
    (:meth:`built_later`) builds its ``active`` records on first use too: ``validate`` only
    counts them (:attr:`active_count`), ``replay`` prints their JSON form.
    """

    __slots__ = ("_active", "_build", "_by_id", "_count", "_seen", "seen_ids")
    seen_ids: tuple[str, ...]
    _active: tuple[Record, ...]
    _build: Callable[[], tuple[Record, ...]] | None
    _count: int
    _by_id: Mapping[str, Record] | None
    _seen: frozenset[str] | None

    def __init__(self, active: tuple[Record, ...] = (), seen_ids: tuple[str, ...] = ()) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "_active", active)
        setattr_(self, "_build", None)
        setattr_(self, "_count", len(active))
        setattr_(self, "seen_ids", seen_ids)
        setattr_(self, "_by_id", None)
        setattr_(self, "_seen", None)

    @classmethod
    def built_later(
        cls, count: int, build: Callable[[], tuple[Record, ...]], seen_ids: tuple[str, ...]
    ) -> FoldState:
        """A state of ``count`` active records that ``build()`` gives, called on first use of
        :attr:`active` (it must give exactly ``count``)."""
        state = cls((), seen_ids)
        object.__setattr__(state, "_build", build)
        object.__setattr__(state, "_count", count)
        return state

    @classmethod
    def from_index(cls, active: Mapping[str, Record], seen_ids: Iterable[str]) -> FoldState:
        """A state from an insertion-ordered id -> record mapping (the fold's working form)."""
        return cls(active=tuple(active.values()), seen_ids=tuple(seen_ids))

    @property
    def active(self) -> tuple[Record, ...]:
        build = self._build
        if build is not None:
            built = build()
            if len(built) != self._count:
                raise AssertionError("a state built later gave another count of records")
            object.__setattr__(self, "_active", built)
            object.__setattr__(self, "_build", None)
        return self._active

    @property
    def active_count(self) -> int:
        """``len(self.active)``, without building the records of a state built later."""
        return self._count

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a FoldState is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a FoldState is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not FoldState:
            return NotImplemented
        return self.seen_ids == other.seen_ids and self.active == other.active

    def __hash__(self) -> int:
        return hash((self.active, self.seen_ids))

    def __repr__(self) -> str:
        return f"FoldState(active={self.active!r}, seen_ids={self.seen_ids!r})"

    def __reduce__(self) -> tuple[type[FoldState], tuple[tuple[Record, ...], tuple[str, ...]]]:
        return FoldState, (self.active, self.seen_ids)

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
