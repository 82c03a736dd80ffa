"""Schemathesis fuzzes every operation `/api/schema/` publishes, against a running, protected Daphne.

Rules: no generated request (valid or not) makes the API answer 500, and every answer it
gives matches what the schema says about it (JSON body shape, content type). The server is
the session's protected offline-demo Daphne, driven with the owner's bearer token, on the
suite's database (SQLite or PostgreSQL, whichever this run uses).

Bounded on purpose: a few examples per operation keeps one database's run near a minute.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from tests.pages.conftest import OWNER_API_TOKEN

pytestmark = [pytest.mark.slow, pytest.mark.fuzz]

AUTH = {"Authorization": f"Bearer {OWNER_API_TOKEN}"}
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


MODES = {GenerationMode.POSITIVE: 8, GenerationMode.NEGATIVE: 5}  # examples per operation


def refused_by_twisted(case, response) -> bool:
    """Daphne's HTTP layer (twisted.web.http.Request) parses multipart bodies itself and answers a
    bare 400 (no headers, no body) to one it cannot parse, before the app sees the request."""
    sent_type = (case.media_type or "").split(";")[0]
    return (
        sent_type == "multipart/form-data"
        and response.status_code == 400
        and not response.headers.get("content-type")
        and not response.content
    )


def fuzz_operation(operation, mode: GenerationMode, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case):
        response = case.call(headers=AUTH, timeout=30)
        if refused_by_twisted(case, response):
            return
        case.validate_response(response, checks=CHECKS, headers=AUTH)

    run()


def test_no_request_gets_a_500_or_an_answer_outside_the_schema(offline_protected_app):
    schema = schemathesis.openapi.from_url(f"{offline_protected_app.url}/api/schema/", headers=AUTH, timeout=30)
    failures, labels = [], []
    for result in schema.get_all_operations():
        operation = result.ok()  # a schema the fuzzer cannot read is itself a failure
        labels.append(operation.label)
        for mode, examples in MODES.items():
            try:
                fuzz_operation(operation, mode, examples)
            except Unsatisfiable:
                # Only string path parameters and no body: there is no schema-invalid request to make.
                assert mode is GenerationMode.NEGATIVE, operation.label
            except BaseException as failure:  # schemathesis raises a BaseExceptionGroup; report them all
                if isinstance(failure, (KeyboardInterrupt, SystemExit)):
                    raise
                failures.append(f"--- {operation.label} ({mode.value}):\n{failure}")
    assert len(labels) >= 45, labels  # the schema really lists the API, not a fallback
    assert not failures, "\n\n".join(failures)
