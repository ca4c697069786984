"""The host protocol (SPEC §11): one task store for all sessions of a host, the delivery
runtime, the tools and the remote operations."""
