"""The one "not supplied" sentinel. A leaf: it imports nothing."""

from __future__ import annotations

from typing import Final

__all__ = ["ABSENT", "Absent"]


class Absent:
    """Type of :data:`ABSENT`: an argument that was not supplied at all (means "keep").

    Distinct from ``None``, which is a present JSON ``null`` and is validated (and rejected).
    """

    _instance: Absent | None = None

    def __new__(cls) -> Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Final = Absent()
