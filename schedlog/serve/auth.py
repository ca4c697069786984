"""Security by default (docs/http-api.md#security): the bearer token, the ``Host`` allow-list
and the request body limit.

* The token comes from ``SCHEDLOG_TOKEN`` or from a file beside the store
  (``<store>.token``), generated on first start with mode 0600. A token file readable by the
  group or others is refused. Tokens are compared in constant time.
* Every ``/v1`` route needs ``Authorization: Bearer <token>``; ``/healthz``, ``/readyz`` and
  ``/openapi.json`` do not (they reveal nothing about tasks).
* A request whose ``Host`` header is not on the allow-list (loopback names and the listen
  address, plus ``--allow-host``) is answered 421 (400 without a ``Host`` header), which
  defends against DNS rebinding.
* A body longer than :data:`MAX_BODY_BYTES` is answered 413 before a handler sees it.
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import ClassVar, Final

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from schedlog.files import FILE_MODE
from schedlog.serve.errors import HttpError, error_response
from schedlog.serve.secrets import StartupError
from schedlog.serve.web import PAGE_PATHS

__all__ = [
    "MAX_BODY_BYTES",
    "TOKEN_ENV",
    "Guard",
    "TokenError",
    "allowed_hosts",
    "load_token",
    "read_body",
    "token_path",
]

MAX_BODY_BYTES: Final = 1 << 20
TOKEN_ENV: Final = "SCHEDLOG_TOKEN"
_LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")
#: ``/v1/signin`` takes a one-time code instead of the token (schedlog.serve.signin).
_OPEN_PATHS: Final = frozenset({"/healthz", "/readyz", "/openapi.json", "/v1/signin"}) | PAGE_PATHS


class TokenError(StartupError):
    """The token file cannot be used (code ``token-file``)."""

    code = "token-file"
    #: A token file that is a symlink, FIFO... or owned by another user has its own code.
    kind_codes: ClassVar[Mapping[str, str]] = {
        "type": "token-file-type",
        "owner": "token-file-owner",
    }


def token_path(store: str | os.PathLike[str]) -> Path:
    """``<store>.token``: the token file beside the store."""
    return Path(f"{os.fspath(store)}.token")


def _check_token(token: str, where: str) -> str:
    token = token.strip()
    if len(token) < 16 or any(c.isspace() for c in token):
        raise TokenError(f"the token in {where} must be at least 16 characters without spaces")
    return token


def load_token(path: Path, environ: dict[str, str] | None = None) -> tuple[str, Path | None]:
    """The token and the file it came from (None when it came from ``SCHEDLOG_TOKEN``).

    A missing file is created with a fresh random token, mode 0600 (written and fsynced before
    it is used). An existing file must not be readable or writable by the group or others.
    """
    env = os.environ if environ is None else environ
    if env.get(TOKEN_ENV):
        return _check_token(env[TOKEN_ENV], TOKEN_ENV), None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise TokenError(f"cannot create the token file {path}: {exc.strerror}") from None
    else:
        try:
            os.write(fd, (secrets.token_urlsafe(32) + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
    try:
        text = TokenError.read_file(path, "the token file").decode("utf-8")
    except UnicodeDecodeError:
        raise TokenError(f"the token file {path} is not UTF-8 text") from None
    return _check_token(text, str(path)), path


def allowed_hosts(listen_host: str, port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` header values accepted: loopback names and the listen host, with and
    without the port, plus each ``--allow-host`` value as given (lower-cased)."""
    host = listen_host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    names = {*_LOOPBACK_NAMES, host.lower()}
    out = {n for name in names for n in (name, f"{name}:{port}")}
    out.update(e.lower() for e in extra)
    return frozenset(out)


class Guard:
    """ASGI middleware in front of every route: ``Host``, then body length, then the token."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        hosts: frozenset[str],
        open_paths: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self._token = token.encode("utf-8")
        self._hosts = hosts
        #: Paths answered without the token besides the fixed ones (``/metrics`` with
        #: ``--metrics-public``); the Host check still applies.
        self._open = _OPEN_PATHS | open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check(scope)
        except HttpError as exc:
            await error_response(exc)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _check(self, scope: Scope) -> None:
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if name in headers and name in (b"host", b"authorization", b"content-length"):
                raise HttpError("invalid_request", f"repeated {name.decode()} header", 400)
            headers[name] = value
        host = headers.get(b"host")
        if host is None:
            raise HttpError("invalid_request", "the Host header is required", 400)
        if host.decode("latin-1").lower() not in self._hosts:
            raise HttpError(
                "misdirected_request",
                "the Host header names a host this server does not answer for",
                421,
            )
        length = headers.get(b"content-length")
        if length is not None:
            if not length.isdigit():
                raise HttpError("invalid_request", "Content-Length must be a number", 400)
            if int(length) > MAX_BODY_BYTES:
                raise HttpError(
                    "payload_too_large", f"the body is longer than {MAX_BODY_BYTES} bytes", 413
                )
        if scope["path"] in self._open:
            return
        given = headers.get(b"authorization", b"")
        scheme, _, credential = given.partition(b" ")
        # compare_digest takes constant time for equal-length inputs and never short-circuits
        # on the first differing byte; a wrong scheme is compared too, so timing says nothing.
        ok = hmac.compare_digest(credential.strip(), self._token)
        if not (ok and scheme.lower() == b"bearer"):
            raise HttpError(
                "unauthorized",
                "a valid Authorization: Bearer <token> header is required",
                401,
                {"WWW-Authenticate": 'Bearer realm="schedlog"'},
            )


async def read_body(request: Request) -> bytes:
    """The request body, refusing (413) one longer than :data:`MAX_BODY_BYTES` while it is
    still arriving (a chunked body has no Content-Length for the guard to check)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise HttpError(
                "payload_too_large", f"the body is longer than {MAX_BODY_BYTES} bytes", 413
            )
        chunks.append(chunk)
    return b"".join(chunks)
