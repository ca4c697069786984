"""schemathesis against /openapi.json (bounded examples): no 5xx answer, and every answer
conforms to the document (status code, content type, schema). The event stream is left out:
it never ends by design (tests/serve/test_serve_process.py reads it).

``SCHEDLOG_SCHEMATHESIS_EXAMPLES`` raises the number of examples per operation for a longer
local run (default 8).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve.deps import require_serve

require_serve()

import schemathesis  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from schedlog.serve.openapi import openapi  # noqa: E402
from tests.serve.support import AUTH, BASE, Api, running_api  # noqa: E402

EXAMPLES = int(os.environ.get("SCHEDLOG_SCHEMATHESIS_EXAMPLES", "8"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    tmp: Path = tmp_path_factory.mktemp("schemathesis")
    with running_api(tmp) as api:
        # Some tasks to find, in two sessions.
        for session in ("s-1", "s-2"):
            api.create(session, after_seconds=600)
            api.create(session, every_seconds=3600, title="Hourly")
        yield api


schema = schemathesis.openapi.from_dict(openapi()).exclude(path="/v1/events")


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_document(case: Any, running: Api) -> None:
    kwargs = case.as_transport_kwargs(base_url=BASE, headers=AUTH)
    kwargs.pop("cookies", None)  # the document has none
    if isinstance(kwargs.get("data"), bytes | str):  # raw bodies go as httpx content
        kwargs["content"] = kwargs.pop("data")
    response = running.client.request(kwargs.pop("method"), kwargs.pop("url"), **kwargs)
    case.validate_response(response, checks=CHECKS)
