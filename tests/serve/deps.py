"""The serve extra's presence: the HTTP API tests skip without it, except under CI=true."""

from __future__ import annotations

import importlib
import os

from tests.missing import missing


def require_serve() -> None:
    """Skip the calling test module when the serve extra is missing (fail under CI)."""
    for name in ("starlette", "uvicorn", "httpx"):
        try:
            importlib.import_module(name)
        except ImportError:
            if os.environ.get("CI") == "true":
                raise
            missing("serve extra", f"{name} is not installed", module=True)
