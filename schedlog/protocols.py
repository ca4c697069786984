"""The names of the two protocols, which are also the ``deliveryMode`` of their views and pick
the ``source`` of a ``message/followup`` event. A leaf: it imports nothing."""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["HOST", "SESSION_LOCAL", "ProtocolName"]

ProtocolName = Literal["session-local", "host"]
#: The session-local protocol: the engine inside the agent runtime.
SESSION_LOCAL: Final = "session-local"
#: The host protocol: the service owning a task store for all sessions.
HOST: Final = "host"
