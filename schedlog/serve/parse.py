"""Reading a request, written once for every route (docs/http-api.md): query parameters (each
known and given once), bounded integers, and the strict-JSON body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from schedlog.serve.auth import read_body
from schedlog.serve.errors import HttpError
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = ["int_param", "json_body", "object_body", "query_params"]


def query_params(request: Request, allowed: tuple[str, ...]) -> dict[str, str]:
    """The query parameters; 400 ``invalid_request`` for one not ``allowed`` or repeated."""
    out: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if name not in allowed:
            raise HttpError("invalid_request", f"unknown query parameter {name!r}")
        if name in out:
            raise HttpError("invalid_request", f"query parameter {name!r} is repeated")
        out[name] = value
    return out


def int_param(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """Query parameter ``name``: decimal digits from ``low`` to ``high``, else ``default``."""
    text = query.get(name)
    if text is None:
        return default
    if not text.isascii() or not text.isdigit() or not low <= int(text) <= high:
        raise HttpError(
            "invalid_request", f"query parameter {name} must be an integer from {low} to {high}"
        )
    return int(text)


async def json_body(request: Request) -> Any:
    """The body as strict JSON (415 when it is not ``application/json``)."""
    content_type = request.headers.get("content-type", "application/json")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise HttpError("unsupported_media_type", "the body must be application/json", 415)
    raw = await read_body(request)
    try:
        return loads_strict(raw)
    except JSONSyntaxError as exc:
        raise HttpError("invalid_request", f"the body is not strict JSON: {exc.message}") from None


async def object_body(request: Request) -> dict[str, Any]:
    """:func:`json_body`, which must be a JSON object."""
    value = await json_body(request)
    if not isinstance(value, dict):
        raise HttpError("invalid_request", "the body must be a JSON object")
    return value
