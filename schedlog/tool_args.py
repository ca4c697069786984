"""The error values both protocols' tool dispatchers answer before a tool runs: arguments that
are not a JSON object (docs/errors.md#invalid_arguments) and an engine that is not running
(docs/errors.md#engine_not_running). A leaf: it imports nothing from the package."""

from __future__ import annotations

__all__ = ["arguments_value", "not_running_value"]


def arguments_value(name: str, args: object) -> dict[str, str] | None:
    """The ``invalid_arguments`` error value when tool ``name`` was given ``args`` that are not
    a JSON object; None when they are one. ``schedule_list`` also takes None (no arguments)."""
    if isinstance(args, dict) or (args is None and name == "schedule_list"):
        return None
    return {
        "code": "invalid_arguments",
        "message": f"{name} arguments must be an object, not {type(args).__name__}.",
    }


def not_running_value() -> dict[str, str]:
    """The ``engine_not_running`` error value of a session engine never started or disposed."""
    return {
        "code": "engine_not_running",
        "message": "The session engine is not running: call start() first; a disposed engine "
        "takes no more tool calls.",
    }
