"""The session-local engine (docs/protocol.md#session-tools, docs/protocol.md#session-archive,
docs/concepts.md#delivery-guarantees): tools, the live owner, and the interfaces an agent runtime
implements to embed it.

``Clock`` and ``MAX_WAIT_MS`` are defined in :mod:`schedlog.clock` (below this engine and the
host) and exported here too, as the embedding interface of this engine.

The names below load lazily: ``session batch`` (:mod:`schedlog.runtime.batch`) imports neither
the live engine nor asyncio."""

from typing import TYPE_CHECKING, Final

from schedlog._lazy import lazy_exports

if TYPE_CHECKING:  # the table below, for type checkers (`X as X` marks a re-export)
    from schedlog.clock import MAX_WAIT_MS as MAX_WAIT_MS
    from schedlog.clock import Clock as Clock
    from schedlog.runtime.batch import BatchSession as BatchSession
    from schedlog.runtime.clock import SystemClock as SystemClock
    from schedlog.runtime.clock import VirtualClock as VirtualClock
    from schedlog.runtime.delivery import Outcome as Outcome
    from schedlog.runtime.delivery import Selection as Selection
    from schedlog.runtime.delivery import deliver_claimed as deliver_claimed
    from schedlog.runtime.delivery import drive_pass as drive_pass
    from schedlog.runtime.delivery import select_due as select_due
    from schedlog.runtime.engine import SessionEngine as SessionEngine
    from schedlog.runtime.interfaces import Agent as Agent
    from schedlog.runtime.interfaces import FollowupMessage as FollowupMessage
    from schedlog.runtime.interfaces import LogHeader as LogHeader
    from schedlog.runtime.interfaces import MaintenanceClaim as MaintenanceClaim
    from schedlog.runtime.interfaces import SessionLog as SessionLog
    from schedlog.runtime.interfaces import SessionLogContractError as SessionLogContractError
    from schedlog.runtime.owner import LiveOwner as LiveOwner
    from schedlog.runtime.queue import SerialQueue as SerialQueue
    from schedlog.runtime.session_file import FileSession as FileSession
    from schedlog.runtime.tools import PersistenceUncertain as PersistenceUncertain
    from schedlog.runtime.tools import SessionTools as SessionTools

#: The public names, each -> its module: the one table (``__all__`` is derived from it).
_LAZY: Final[dict[str, str]] = {
    "MAX_WAIT_MS": "schedlog.clock",
    "Agent": "schedlog.runtime.interfaces",
    "BatchSession": "schedlog.runtime.batch",
    "Clock": "schedlog.clock",
    "FileSession": "schedlog.runtime.session_file",
    "FollowupMessage": "schedlog.runtime.interfaces",
    "LiveOwner": "schedlog.runtime.owner",
    "LogHeader": "schedlog.runtime.interfaces",
    "MaintenanceClaim": "schedlog.runtime.interfaces",
    "Outcome": "schedlog.runtime.delivery",
    "PersistenceUncertain": "schedlog.runtime.tools",
    "Selection": "schedlog.runtime.delivery",
    "SerialQueue": "schedlog.runtime.queue",
    "SessionEngine": "schedlog.runtime.engine",
    "SessionLog": "schedlog.runtime.interfaces",
    "SessionLogContractError": "schedlog.runtime.interfaces",
    "SessionTools": "schedlog.runtime.tools",
    "SystemClock": "schedlog.runtime.clock",
    "VirtualClock": "schedlog.runtime.clock",
    "deliver_claimed": "schedlog.runtime.delivery",
    "drive_pass": "schedlog.runtime.delivery",
    "select_due": "schedlog.runtime.delivery",
}

__all__ = sorted(_LAZY, key=lambda name: (not name.isupper(), name))
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
