"""Where a store is served: ``<store>.serve``, written by ``schedlog host serve`` while it holds
the store, so that a command refused with ``store-locked`` can name the URL to use instead.

The file holds ``{"url","pid"}``. It is consulted only when the store's lock is held, and only
while that pid is alive, so a file left by a killed server never misleads.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import msgspec

from schedlog.errors import StoreOpenError

__all__ = ["endpoint_path", "remove_endpoint", "served_url", "with_serve_hint", "write_endpoint"]


class _Endpoint(msgspec.Struct, forbid_unknown_fields=True):
    url: str
    pid: int


def endpoint_path(store: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(store)}.serve")


def write_endpoint(store: str | os.PathLike[str], url: str) -> None:
    """Record that this process serves ``store`` at ``url`` (replaced atomically)."""
    path = endpoint_path(store)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, msgspec.json.encode(_Endpoint(url, os.getpid())))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def remove_endpoint(store: str | os.PathLike[str]) -> None:
    """Remove the file when it is this process's."""
    path = endpoint_path(store)
    with contextlib.suppress(OSError, msgspec.DecodeError):
        if msgspec.json.decode(path.read_bytes(), type=_Endpoint).pid == os.getpid():
            path.unlink()


def served_url(store: str | os.PathLike[str]) -> str | None:
    """The URL of the live ``serve`` process that wrote the file, if any."""
    try:
        endpoint = msgspec.json.decode(endpoint_path(store).read_bytes(), type=_Endpoint)
        os.kill(endpoint.pid, 0)
    except (OSError, msgspec.DecodeError):
        return None
    return endpoint.url


def with_serve_hint(exc: StoreOpenError, store: str | os.PathLike[str]) -> StoreOpenError:
    """``exc`` itself, or for ``store-locked`` while ``serve`` holds the store, the same code
    with a message that names the URL of its HTTP API."""
    if exc.code != "store-locked":
        return exc
    url = served_url(store)
    if url is None:
        return exc
    return StoreOpenError(
        "store-locked",
        f"{exc.message}: `schedlog host serve` holds it; use its HTTP API at {url}/v1 "
        "(docs/http-api.md)",
    )
