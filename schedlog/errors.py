"""One error tree for schedlog.

Every error carries a stable ``code`` (the contract, docs/errors.md) and a human ``message`` that
names the offending field. Callers branch on ``code``; messages are recommendations.

The exceptions below stand outside the tree on purpose (their subclasses with them). None of
them is ever an answer of the library: each is caught where it is raised, or one layer up, and
turned into an error of the tree, an HTTP answer or a usage error whose code depends on the
context, or it is a programming error of the caller; so giving it a code of the tree would be
wrong.

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
* :class:`schedlog.runtime.interfaces.SessionLogContractError` (``TypeError``): an embedder's
  ``SessionLog`` broke its contract, a programming error raised to the caller, never a value.
* :class:`schedlog.host.delivery.GroupFailed` and :class:`schedlog.host.webhook.WebhookError`:
  a delivery that was not acknowledged; the group stays due (``delivery.unacknowledged``),
  no caller sees it.
* :class:`schedlog.host.webhook_http.ProtocolError`: a receiver's answer that is not HTTP/1.x
  as the lean client reads it; the sink turns it into a :class:`WebhookError` ("unreachable")
  and it never leaves :mod:`schedlog.host.webhook`.
* :class:`schedlog.invariant.chunk_lines.Invalid` and
  :class:`schedlog.invariant.chunk_lines.NotTaken`: the fast check's signals that a log is not
  surely valid (the reference reader then decides, and gives the error of the tree) and that a
  chunk cannot be taken whole (it is read line by line). Both are caught inside the fast path
  and never leave :mod:`schedlog.invariant`.
* :class:`schedlog.host.stores.sqlite_load.ValidationStopped`: a start-up validation of the
  rest of a store cancelled because ``host run`` is stopping; ``host run`` catches it and
  stops as usual. It never leaves the command.
* :class:`schedlog.mcp.backends.UnknownSession` (``LookupError``): the MCP server answers it
  with the protocol's ``INVALID_PARAMS``.
* :class:`schedlog.serve.errors.HttpError`: an HTTP answer with its status and headers, raised
  by a handler and rendered by the application; outside the tree so that the application's
  :class:`ScheduleError` handler (500/503) never takes one.
* :class:`schedlog.serve.sse.TooManyClients`: every event stream slot is taken; the route
  answers 503 ``too_many_clients``.
* :class:`schedlog.serve.secrets.PrivateFileError` and
  :class:`schedlog.serve.secrets.StartupError` (with its :class:`schedlog.serve.auth.TokenError`
  and :class:`schedlog.serve.webhook.SecretError`): a token or secret file ``host serve`` cannot
  use; like :class:`~schedlog.host.config.ConfigError`, the command refuses to start with the
  error's own start-up code (``token-file``, ``webhook-config``...), which no tool carries.

:class:`schedlog.host.store_copy.CopyError` (``schedlog store copy``) is a :class:`ScheduleError`.
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
