"""schedlog: durable, exact reminders for the session logs of LLM agents.

The public names are importable from here. They load lazily (PEP 562), so ``import schedlog``
and the command line stay cheap: the host service and the asyncio runtime are imported only
when one of their names is first used. ``__version__`` (the installed distribution's version,
:func:`schedlog.about.package_version`) is one of them: the package metadata is read on first use.

:data:`_LAZY` is the one table of the public names (name -> module); ``__all__`` is derived
from it and the four eagerly imported errors. The ``TYPE_CHECKING`` imports repeat the table for
type checkers only, and a test keeps them equal to it.

Each name is one object whatever was imported first: importing a submodule never rebinds an
exported name (``schedlog.fold`` stays the function after ``schedlog.fold.replay`` is imported;
import such a module with ``from schedlog.fold import replay``), and ``dir(schedlog)`` lists the
public names (:func:`schedlog._lazy.lazy_exports`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from schedlog._lazy import lazy_exports
from schedlog.errors import CorruptScheduleError as CorruptScheduleError
from schedlog.errors import ScheduleError as ScheduleError
from schedlog.errors import ScheduleInputError as ScheduleInputError
from schedlog.errors import StoreOpenError as StoreOpenError

if TYPE_CHECKING:  # the table below, for type checkers (`X as X` marks a re-export)
    from schedlog._version import __version__ as __version__
    from schedlog.clock import Clock as Clock
    from schedlog.eventlog import Header as Header
    from schedlog.eventlog import LogEvent as LogEvent
    from schedlog.eventlog import build_followup as build_followup
    from schedlog.eventlog import decode_change as decode_change
    from schedlog.eventlog import event_from_value as event_from_value
    from schedlog.eventlog import fork_log as fork_log
    from schedlog.eventlog import message_id as message_id
    from schedlog.eventlog import read_log as read_log
    from schedlog.fold import FoldState as FoldState
    from schedlog.fold import fold as fold
    from schedlog.fold import next_schedule_id as next_schedule_id
    from schedlog.framing import batch_framing as batch_framing
    from schedlog.framing import single_framing as single_framing
    from schedlog.host.config import Retention as Retention
    from schedlog.host.service import HostService as HostService
    from schedlog.host.sessions import SessionsDirectory as SessionsDirectory
    from schedlog.host.stores.base import TaskStore as TaskStore
    from schedlog.host.stores.open import open_store as open_store
    from schedlog.host.tools import HostTools as HostTools
    from schedlog.invariant import check as check
    from schedlog.invariant.appender import LogAppender as LogAppender
    from schedlog.rules.at import parse_at as parse_at
    from schedlog.rules.cron import canonical_cron as canonical_cron
    from schedlog.rules.cron import parse_cron as parse_cron
    from schedlog.rules.decide import Decision as Decision
    from schedlog.rules.decide import decide as decide
    from schedlog.rules.instants import format_instant as format_instant
    from schedlog.rules.instants import parse_canonical_instant as parse_canonical_instant
    from schedlog.rules.record import Record as Record
    from schedlog.rules.records import build_host_record as build_host_record
    from schedlog.rules.records import build_session_record as build_session_record
    from schedlog.rules.records import decode_host_record as decode_host_record
    from schedlog.rules.records import decode_legacy_record as decode_legacy_record
    from schedlog.rules.update import resolve_update as resolve_update
    from schedlog.rules.zones import canonical_zone_name as canonical_zone_name
    from schedlog.rules.zones import check_time_zone as check_time_zone
    from schedlog.runtime import Agent as Agent
    from schedlog.runtime import FileSession as FileSession
    from schedlog.runtime import FollowupMessage as FollowupMessage
    from schedlog.runtime import LogHeader as LogHeader
    from schedlog.runtime import SessionEngine as SessionEngine
    from schedlog.runtime import SessionLog as SessionLog
    from schedlog.runtime import SessionLogContractError as SessionLogContractError
    from schedlog.runtime import SystemClock as SystemClock
    from schedlog.runtime import VirtualClock as VirtualClock

#: Every lazily loaded public name -> the module it is imported from on first use.
_LAZY: Final[dict[str, str]] = {
    "Agent": "schedlog.runtime",
    "Clock": "schedlog.clock",
    "Decision": "schedlog.rules.decide",
    "FileSession": "schedlog.runtime",
    "FollowupMessage": "schedlog.runtime",
    "FoldState": "schedlog.fold",
    "Header": "schedlog.eventlog",
    "HostService": "schedlog.host.service",
    "HostTools": "schedlog.host.tools",
    "LogAppender": "schedlog.invariant.appender",
    "LogEvent": "schedlog.eventlog",
    "LogHeader": "schedlog.runtime",
    "Retention": "schedlog.host.config",
    "Record": "schedlog.rules.record",
    "SessionEngine": "schedlog.runtime",
    "SessionLog": "schedlog.runtime",
    "SessionLogContractError": "schedlog.runtime",
    "SessionsDirectory": "schedlog.host.sessions",
    "SystemClock": "schedlog.runtime",
    "TaskStore": "schedlog.host.stores.base",
    "VirtualClock": "schedlog.runtime",
    "__version__": "schedlog._version",
    "batch_framing": "schedlog.framing",
    "build_followup": "schedlog.eventlog",
    "build_host_record": "schedlog.rules.records",
    "build_session_record": "schedlog.rules.records",
    "canonical_cron": "schedlog.rules.cron",
    "canonical_zone_name": "schedlog.rules.zones",
    "check": "schedlog.invariant",
    "check_time_zone": "schedlog.rules.zones",
    "decide": "schedlog.rules.decide",
    "decode_change": "schedlog.eventlog",
    "decode_host_record": "schedlog.rules.records",
    "decode_legacy_record": "schedlog.rules.records",
    "event_from_value": "schedlog.eventlog",
    "fold": "schedlog.fold",
    "fork_log": "schedlog.eventlog",
    "format_instant": "schedlog.rules.instants",
    "message_id": "schedlog.eventlog",
    "next_schedule_id": "schedlog.fold",
    "open_store": "schedlog.host.stores.open",
    "parse_at": "schedlog.rules.at",
    "parse_canonical_instant": "schedlog.rules.instants",
    "parse_cron": "schedlog.rules.cron",
    "read_log": "schedlog.eventlog",
    "resolve_update": "schedlog.rules.update",
    "single_framing": "schedlog.framing",
}
_EAGER: Final = (CorruptScheduleError, ScheduleError, ScheduleInputError, StoreOpenError)

__all__ = sorted([*(error.__name__ for error in _EAGER), *_LAZY])

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
