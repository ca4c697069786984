"""The MCP server (docs/agents.md): schedlog's tools, and each session's reminders as a
subscribable resource, for any Model Context Protocol client, built on the official ``mcp`` SDK
(the ``mcp`` extra).

Layer: above :mod:`schedlog.runtime` and :mod:`schedlog.host`, below :mod:`schedlog.serve` and
:mod:`schedlog.cli`. :mod:`schedlog.mcp.server` builds the SDK server over a
:class:`~schedlog.mcp.backends.ToolBackend`; :mod:`schedlog.mcp.backends` holds the two backends
(the host tools of a :class:`~schedlog.host.service.HostService`, the session-local tools of a
:class:`~schedlog.runtime.engine.SessionEngine`); :mod:`schedlog.mcp.stdio` runs one process per
conversation over stdio; :mod:`schedlog.mcp.http` is the streamable-HTTP mount of
``schedlog host serve``.
"""
