"""Error answers of the HTTP API: ``{"error":{"code","message"}}`` with a fitting status
(docs/http-api.md#errors). Nothing ever answers with a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from starlette.responses import Response

from schedlog.rules.text import json_bytes
from schedlog.serve.bodies import ErrorBody, ErrorDetail

__all__ = [
    "JSON",
    "HttpError",
    "error_response",
    "json_response",
    "status_of_code",
]

JSON: Final = "application/json"

#: Codes of the rule layer that are not input errors, and the transport's own codes.
_STATUS: Final[Mapping[str, int]] = {
    "invalid_request": 400,
    "unauthorized": 401,
    "signin_code_refused": 401,
    "schedule_not_found": 404,
    "delivery_cursor_not_found": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "schedule_conflict": 409,
    "pause_unsupported": 409,
    "schedule_ended": 410,
    "payload_too_large": 413,
    "unsupported_media_type": 415,
    "misdirected_request": 421,
    "internal_error": 500,
    "service_unavailable": 503,
    "too_many_clients": 503,
    "storage_full": 507,
}


def status_of_code(code: str) -> int:
    """The status of an error code: any rule input code (``invalid_rule``, ``not_future``,
    ``invalid_time_zone``...) is 422."""
    return _STATUS.get(code, 422)


class HttpError(Exception):
    """An error answer: raised by a handler or a guard, rendered by the application."""

    def __init__(
        self,
        code: str,
        message: str,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status if status is not None else status_of_code(code)
        self.headers = dict(headers or {})


def json_response(
    value: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """``value`` (Structs, dicts, lists) as JSON; a lone surrogate as ``\\udxxx``."""
    return Response(json_bytes(value), status, headers=headers, media_type=JSON)


def error_response(error: HttpError) -> Response:
    body = ErrorBody(ErrorDetail(error.code, error.message))
    return json_response(body, error.status, error.headers)
