"""``--deliver-to URL``: the webhook secret and the HTTP API's view of delivery retries
(docs/http-api.md#webhook-delivery). The sink itself is :mod:`schedlog.host.webhook`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import ClassVar, Final
from urllib.parse import urlsplit

from schedlog.host.retry import Backoff
from schedlog.rules.instants import format_instant
from schedlog.serve.bodies import RetryState
from schedlog.serve.secrets import StartupError
from schedlog.serve.state import RetryLookup

__all__ = ["SECRET_ENV", "SecretError", "check_url", "load_secret", "retry_lookup"]

SECRET_ENV: Final = "SCHEDLOG_WEBHOOK_SECRET"


class SecretError(StartupError):
    """The webhook secret or URL cannot be used (code ``webhook-config``)."""

    code = "webhook-config"
    #: A secret file that is a symlink, FIFO... or owned by another user has its own code.
    kind_codes: ClassVar[Mapping[str, str]] = {
        "type": "webhook-secret-type",
        "owner": "webhook-secret-owner",
    }


def check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SecretError(f"--deliver-to must be an http:// or https:// URL, not {url!r}")
    return url


def load_secret(path: str | None, environ: Mapping[str, str] | None = None) -> bytes:
    """The shared secret: ``--webhook-secret-file`` (mode 0600 or stricter), else
    ``SCHEDLOG_WEBHOOK_SECRET``; at least 16 bytes."""
    env = os.environ if environ is None else environ
    if path is not None:
        secret = SecretError.read_file(path, "the webhook secret file").strip()
        where = path
    elif env.get(SECRET_ENV):
        secret, where = env[SECRET_ENV].strip().encode("utf-8"), SECRET_ENV
    else:
        raise SecretError(f"--deliver-to needs --webhook-secret-file or {SECRET_ENV}")
    if len(secret) < 16:
        raise SecretError(f"the webhook secret in {where} must be at least 16 bytes")
    return secret


def retry_lookup(backoff: Backoff) -> RetryLookup:
    """``task id -> RetryState`` body for the catalog."""

    def lookup(task_id: str) -> RetryState | None:
        state = backoff.state(task_id)
        if state is None:
            return None
        return RetryState(state.attempts, format_instant(state.next_attempt_at), state.last_error)

    return lookup
