"""The serve extra's presence: the HTTP API tests skip without it, except under CI=true."""

from __future__ import annotations

import importlib
import os

import pytest


def require_modules(names: tuple[str, ...], extra: str) -> None:
    """Skip the calling test module when one of ``names`` (of ``extra``) is missing; under
    CI=true the ImportError fails it instead."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            if os.environ.get("CI") == "true":
                raise
            pytest.skip(
                f"{name} is not installed: pip install -e '.[{extra}]'", allow_module_level=True
            )


def require_serve() -> None:
    """Skip the calling test module when the serve extra is missing (fail under CI)."""
    require_modules(("starlette", "uvicorn", "httpx"), "serve")
