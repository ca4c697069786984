"""The validation of an SQLite store opened early, in a process of its own (docs/decisions.md,
"Start-up: due rows first"): the second core does it, and the host's event loop keeps the
interpreter to itself meanwhile.

:class:`~schedlog.host.stores.sqlite.EarlyValidation` starts
``python -c … PATH`` running :func:`main` with the parent's own package first on ``sys.path``.
:func:`validate_to` is :func:`~schedlog.host.stores.sqlite_validate.validate_live` (the same
checks, order and errors) with its outcome as one msgpack value on stdout: ``[count, targets,
seqs, ids]``, the timer keys of the active, unpaused tasks in storage order as three arrays, or
``{"code", "message"}`` of the :class:`~schedlog.errors.StoreOpenError`. :func:`read_result`
turns it back. Anything else (a worker that dies, output that does not decode) makes the parent
validate in its own process instead, so the outcome never depends on the worker.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

import msgspec

from schedlog.errors import StoreOpenError
from schedlog.host.stores.sqlite_validate import validate_live
from schedlog.host.task_typed import TimerKey

__all__ = ["WORKER_PROGRAM", "main", "read_result", "validate_to"]

#: What the parent runs with ``python -c``: its package root, then the store's path.
WORKER_PROGRAM: Final = (
    "import sys\n"
    "sys.path.insert(0, sys.argv.pop(1))\n"
    "from schedlog.host.stores.sqlite_worker import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


class _Failed(msgspec.Struct):
    code: str
    message: str


_Keys = tuple[int, list[int], list[int], list[str]]
_decode: Final = msgspec.msgpack.Decoder(_Keys | _Failed).decode


def validate_to(path: Path) -> bytes:
    """Validate the store at ``path`` (held open for writing by the parent); the outcome as
    msgpack."""
    keys: list[TimerKey] = []
    try:
        count = validate_live(path, keys)
    except StoreOpenError as exc:
        return msgspec.msgpack.encode(_Failed(exc.code, exc.message))
    targets = [key[0] for key in keys]
    seqs = [key[1] for key in keys]
    ids = [key[2] for key in keys]
    return msgspec.msgpack.encode((count, targets, seqs, ids))


def read_result(data: bytes) -> list[TimerKey] | None:
    """The timer keys of :func:`validate_to`'s output, or its error raised; None when the
    output is not one (the caller then validates itself)."""
    try:
        value = _decode(data)
    except msgspec.DecodeError:
        return None
    if isinstance(value, _Failed):
        raise StoreOpenError(value.code, value.message)
    _count, targets, seqs, ids = value
    if not len(targets) == len(seqs) == len(ids):
        return None
    return list(zip(targets, seqs, ids, strict=True))


def main(argv: list[str]) -> int:
    """``PATH``: the outcome on stdout, exit status 0 (a failure to write it: 1)."""
    out = validate_to(Path(argv[0]))
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return 0
