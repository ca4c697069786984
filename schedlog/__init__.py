"""schedlog: durable, exact reminders for the session logs of LLM agents."""

from schedlog.errors import CorruptScheduleError, ScheduleError, ScheduleInputError, StoreOpenError

__all__ = [
    "CorruptScheduleError",
    "ScheduleError",
    "ScheduleInputError",
    "StoreOpenError",
]
