"""``schedlog host serve``: the host service over HTTP (docs/http-api.md).

* :mod:`~schedlog.serve.bodies`: the msgspec types of every request and response body; the
  OpenAPI document is generated from them.
* :mod:`~schedlog.serve.errors`: the ``{"error":{"code","message"}}`` body and its statuses.
* :mod:`~schedlog.serve.auth`: the bearer token, the ``Host`` allow-list and the body limit.
* :mod:`~schedlog.serve.sse`: ``schedule/changed`` as Server-Sent Events with resume.
* :mod:`~schedlog.serve.routes`: the ``/v1`` handlers over one :class:`HostService`.
* :mod:`~schedlog.serve.openapi`: ``/openapi.json``.
* :mod:`~schedlog.serve.app`: the Starlette application and its lifespan.
* :mod:`~schedlog.serve.webhook`: the webhook secret and the receiver-side signature check.

Needs the ``serve`` extra (starlette, uvicorn, httpx).
"""

__all__: list[str] = []
