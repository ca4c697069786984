"""The session-local engine (docs/protocol.md#session-tools, docs/protocol.md#session-archive,
docs/concepts.md#delivery-guarantees): tools, the live owner, and the interfaces an agent runtime
implements to embed it.

``Clock`` and ``MAX_WAIT_MS`` are defined in :mod:`schedlog.clock` (below this engine and the
host) and exported here too, as the embedding interface of this engine."""

from schedlog.clock import MAX_WAIT_MS, Clock
from schedlog.runtime.batch import BatchSession
from schedlog.runtime.clock import SystemClock, VirtualClock
from schedlog.runtime.delivery import Outcome, Selection, deliver_claimed, drive_pass, select_due
from schedlog.runtime.engine import SessionEngine
from schedlog.runtime.interfaces import (
    Agent,
    FollowupMessage,
    LogHeader,
    MaintenanceClaim,
    SessionLog,
    SessionLogContractError,
)
from schedlog.runtime.owner import LiveOwner
from schedlog.runtime.queue import SerialQueue
from schedlog.runtime.session_file import FileSession
from schedlog.runtime.tools import PersistenceUncertain, SessionTools

__all__ = [
    "MAX_WAIT_MS",
    "Agent",
    "BatchSession",
    "Clock",
    "FileSession",
    "FollowupMessage",
    "LiveOwner",
    "LogHeader",
    "MaintenanceClaim",
    "Outcome",
    "PersistenceUncertain",
    "Selection",
    "SerialQueue",
    "SessionEngine",
    "SessionLog",
    "SessionLogContractError",
    "SessionTools",
    "SystemClock",
    "VirtualClock",
    "deliver_claimed",
    "drive_pass",
    "select_due",
]
