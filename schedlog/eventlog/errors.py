"""Located corruption: where in a session log (or a decoded value) a rule was broken.

Every error here is a :class:`~schedlog.errors.CorruptScheduleError` (code
``corrupt_schedule_log``); the extra attributes only say *where*, so callers that branch on the
code need nothing new.
"""

from __future__ import annotations

import re
from typing import Final

from schedlog.errors import CorruptScheduleError

__all__ = ["CorruptLogError", "child_path"]

_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def child_path(path: str, key: str | int) -> str:
    """The JSON path of ``key`` inside the value at ``path`` (msgspec style: ``$.data.id``)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}"
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'{path}["{escaped}"]'


class CorruptLogError(CorruptScheduleError):
    """A session log (or a value decoded from one) breaks a rule.

    * ``rule``: a stable name for the rule broken (``"json"``, ``"header"``, ``"id_reused"`` …);
    * ``path``: the JSON path of the bad value, relative to the line (``$.data.schedule.prompt``)
      or, before the value is placed in a line, relative to the value itself;
    * ``file``, ``line`` (1-based), ``offset`` (byte offset of the line's first byte in the
      file) and ``index`` (0-based event index; ``None`` for the header) when known.

    ``message`` is the diagnostic alone, without the location; :meth:`describe` adds it.
    """

    def __init__(
        self,
        message: str,
        *,
        rule: str,
        path: str = "$",
        file: str | None = None,
        line: int | None = None,
        offset: int | None = None,
        index: int | None = None,
    ) -> None:
        super().__init__(message, line=line, offset=offset)
        self.rule = rule
        self.path = path
        self.file = file
        self.index = index

    def locate(
        self, *, file: str | None = None, line: int | None = None, offset: int | None = None
    ) -> CorruptLogError:
        """Fill in the file location (in place) and return ``self``, for ``raise err.locate(…)``."""
        if file is not None:
            self.file = file
        if line is not None:
            self.line = line
        if offset is not None:
            self.offset = offset
        return self

    def under(self, prefix: str) -> str:
        """``path`` re-rooted below ``prefix`` (``$.schedule.id`` under ``$.data``)."""
        return prefix + self.path[1:]

    def describe(self) -> str:
        """One line: ``file:line (byte offset): message - at `$.path```."""
        where = []
        if self.file is not None:
            where.append(self.file if self.line is None else f"{self.file}:{self.line}")
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.offset is not None:
            where.append(f"(byte {self.offset})")
        head = " ".join(where)
        text = f"{self.message} - at `{self.path}`"
        return f"{head}: {text}" if head else text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, rule={self.rule!r}, path={self.path!r}, "
            f"line={self.line!r}, index={self.index!r})"
        )
