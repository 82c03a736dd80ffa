"""The one fetch-with-access (`elion.rows.access_row`): an id of any shape is a row or a JSON 404, never a 500.

An integer beyond the database's 64-bit range used to reach SQLite as is
(OverflowError, a 500); a bool or a decimal string named row 1.
"""

from __future__ import annotations

import pytest
from django.test import Client

from elion.rows import parse_id

pytestmark = pytest.mark.django_db

BAD_IDS = ["99999999999999999999999", "-1", "0", "1.0", "true", "%00", "abc", "1e3"]
PATHS = [
    "/api/memories/{}/",
    "/api/archive/documents/{}/",
    "/api/library/files/{}/",
    "/api/characters/{}/",
    "/api/deletions/{}/",
    "/api/conversations/{}/",
    "/api/conversations/{}/messages/",
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("bad", BAD_IDS)
def test_an_id_of_any_shape_is_a_json_404(path, bad):
    response = Client().get(path.format(bad))
    assert response.status_code == 404, (path, bad, response.content[:200])
    assert response.json()["error"].endswith("not_found")


def test_parse_id_accepts_only_what_can_name_a_row():
    assert parse_id("42", "int") == 42 and parse_id(42, "int") == 42
    for bad in (True, None, "4.2", 2**63, 0, -3, "x"):
        assert parse_id(bad, "int") is None
    assert parse_id("8c1f2a0e-5b7e-4b4e-9d2a-0f3c4b5a6d7e", "uuid") is not None
    assert parse_id("8c1f", "uuid") is None and parse_id(False, "uuid") is None
