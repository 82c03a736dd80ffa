"""Expected client errors (a form with too many fields, a multipart body without a boundary) are logged as
one line, never as a traceback."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_expected_client_errors_log_one_line_not_a_traceback(caplog):
    many_fields = "&".join(f"f{i}=1" for i in range(2_000))
    with caplog.at_level(logging.INFO):
        form = Client().post("/memories/import/", many_fields, content_type="application/x-www-form-urlencoded")
        boundaryless = Client().post("/memories/import/", b"--x\r\n", content_type="multipart/form-data")
    assert form.status_code == 400 and boundaryless.status_code == 400
    assert [r for r in caplog.records if r.exc_info] == []
    refused = [r for r in caplog.records if r.getMessage().startswith("refused POST /memories/import/")]
    assert len(refused) == 2
