"""The host protocol (docs/protocol.md#host): one task store for all sessions of a host, the
delivery runtime, the tools and the remote operations."""
