"""What the ``/v1`` handlers share (:class:`ServeState`, set by the application's lifespan),
and the one ready check: a route runs only while the service is open and running
(docs/http-api.md: 503 ``service_unavailable`` otherwise, ``/readyz`` included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.requests import Request

from schedlog.host.service import HostService
from schedlog.host.tools import HostTools
from schedlog.serve.bodies import RetryState
from schedlog.serve.errors import HttpError
from schedlog.serve.sse import EventHub

__all__ = ["RetryLookup", "ServeState", "ready_service", "serve_state"]

#: ``task id -> retry state`` of the delivery sink (webhook delivery), None when not retrying.
RetryLookup = Callable[[str], RetryState | None]


@dataclass
class ServeState:
    """What the handlers share: set by the application's lifespan."""

    service: HostService | None = None
    tools: HostTools | None = None
    hub: EventHub | None = None
    retry_state: RetryLookup = field(default=lambda _id: None)

    @property
    def ready(self) -> bool:
        """The service is open and running (``/readyz``)."""
        return self.service is not None and self.service.running

    def ready_service(self) -> HostService:
        """The service, or 503 ``service_unavailable`` while it starts or stops."""
        if self.service is None or not self.service.running:
            raise HttpError("service_unavailable", "the schedule service is starting or stopping")
        return self.service


def serve_state(request: Request) -> ServeState:
    state: ServeState = request.app.state.serve
    return state


def ready_service(request: Request) -> HostService:
    """The running service of the request's application (see :meth:`ServeState.ready_service`)."""
    return serve_state(request).ready_service()
