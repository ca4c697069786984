"""Command handlers that import their implementation only when the command runs.

The ``*_cmd`` modules hold argparse wiring only, so ``schedlog --help`` and light commands never
pay for asyncio, SQLite, the host or the runtime.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

__all__ = ["lazy_command"]


def lazy_command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A handler that imports ``module`` on first call and runs its ``name(args)``."""

    def handler(args: argparse.Namespace) -> int:
        command: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(module), name
        )
        return command(args)

    handler.__name__ = handler.__qualname__ = name
    return handler
