"""One error tree for schedlog.

Every error carries a stable ``code`` (the contract, docs/errors.md) and a human ``message`` that
names the offending field. Callers branch on ``code``; messages are recommendations.

Five exceptions stand outside the tree on purpose. None of them is ever an answer: each is
caught where it is raised, or one layer up, and turned into an error of the tree (or a usage
error) whose code depends on the context, so giving it a code of its own would be wrong.

* :class:`schedlog.strictjson.JSONSyntaxError` (``ValueError``): the strict JSON reader's
  failure, with its position. The same bad text is ``corrupt_schedule_log`` in a session log,
  ``malformed-medium`` in a store and ``invalid_request`` on a batch line.
* :class:`schedlog.host.stores.base.StoreWriteError` (``OSError``): a task write that did not
  persist. It stays an ``OSError``, so everything that handles I/O failures handles it; the
  service answers ``internal_error`` or leaves the group unacknowledged.
* :class:`schedlog.host.config.ConfigError` (``ValueError``): an operator's configuration value
  out of range; the command line refuses to start (exit 2). No tool or wire answer carries it.
* :class:`schedlog.host.sessions.SessionIdTooLong` (``ValueError``): the sessions directory
  cannot name a log for that session; the delivery group fails (``delivery.unacknowledged``)
  and the task stays due.
* :class:`schedlog.cli.common.InvalidRequest`: the batch framing's ``invalid_request`` (a
  request line that cannot be processed at all), a CLI concern. Keeping it out of
  :class:`ScheduleError` means that no library code catching :class:`ScheduleError` can
  swallow a framing error.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "INTERNAL_MESSAGE",
    "CorruptScheduleError",
    "ScheduleError",
    "ScheduleInputError",
    "StoreOpenError",
]


#: The message of every ``internal_error`` value: an unexpected failure is never described.
INTERNAL_MESSAGE: Final = "The schedule operation failed."


class ScheduleError(Exception):
    """Base class: a stable ``code`` plus a message naming the field and value."""

    code: str
    message: str

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_value(self) -> dict[str, str]:
        """The ``{"code","message"}`` error value of docs/errors.md."""
        return {"code": self.code, "message": self.message}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class ScheduleInputError(ScheduleError, ValueError):
    """Bad input to a tool or rule: ``invalid_rule``, ``invalid_time_zone``, ``not_future``…"""


class CorruptScheduleError(ScheduleError, ValueError):
    """A stored record, change, fold or session log is invalid (``corrupt_schedule_log``).

    ``field`` is the record field that failed (``"everySeconds"``), when a record decoder knows
    it; ``None`` for failures of the record as a whole (not an object, wrong key set).
    """

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        offset: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__("corrupt_schedule_log", message)
        self.line = line
        self.offset = offset
        self.field = field


class StoreOpenError(ScheduleError, OSError):
    """A host store failed validation when opened (docs/protocol.md#open-failures); the service is
    refused."""
