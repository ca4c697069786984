"""The replay invariant guarding every ``schedule/change`` append (docs/protocol.md#fold)."""

from schedlog.invariant.checker import InvariantError, check
from schedlog.invariant.logs import locate_fold_error, validate_log

__all__ = ["InvariantError", "check", "locate_fold_error", "validate_log"]
