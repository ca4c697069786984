"""The serve extra's presence: the HTTP API tests skip without it, except under CI=true."""

from __future__ import annotations

import importlib
import os

from tests.missing import missing


def require_modules(names: tuple[str, ...], extra: str) -> None:
    """Skip the calling test module when one of ``names`` (of ``extra``) is missing; under
    CI=true the ImportError fails it instead."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            if os.environ.get("CI") == "true":
                raise
            missing(f"{extra} extra", f"{name} is not installed", module=True)


def require_serve() -> None:
    """Skip the calling test module when the serve extra is missing (fail under CI)."""
    require_modules(("starlette", "uvicorn", "httpx"), "serve")
