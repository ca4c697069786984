"""``schedlog host serve``: the host service over HTTP (docs/http-api.md). The edge only: every
host feature (the catalog, explain, preview) is a :class:`~schedlog.host.service.HostService`
method, and nothing here reaches the service's core or its store.

* :mod:`~schedlog.serve.bodies`: the msgspec types of every request and response body; the
  OpenAPI document is generated from them.
* :mod:`~schedlog.serve.errors`: the ``{"error":{"code","message"}}`` body and its statuses.
* :mod:`~schedlog.serve.parse`: query parameters and the strict-JSON body, read once for all.
* :mod:`~schedlog.serve.state`: what the handlers share, and the one ready check.
* :mod:`~schedlog.serve.routes`: the ``/v1`` handlers over one :class:`HostService`.
* :mod:`~schedlog.serve.preview`: ``POST /v1/rules/preview``.
* :mod:`~schedlog.serve.sse`: ``schedule/changed`` as Server-Sent Events with resume.
* :mod:`~schedlog.serve.auth`, :mod:`~schedlog.serve.secrets`, :mod:`~schedlog.serve.headers`:
  the bearer token, the private files, the ``Host`` allow-list and the body limit.
* :mod:`~schedlog.serve.limits`, :mod:`~schedlog.serve.loglimit`: connection limits against
  hostile peers, and rate-limited diagnostics.
* :mod:`~schedlog.serve.signin`, :mod:`~schedlog.serve.web`: the web page and its sign-in codes.
* :mod:`~schedlog.serve.openapi`: ``/openapi.json``.
* :mod:`~schedlog.serve.webhook`: the webhook secret and the API's view of delivery retries.
* :mod:`~schedlog.serve.app`: the Starlette application and its lifespan.

Needs the ``serve`` extra (starlette, uvicorn, httpx).
"""

__all__: list[str] = []
