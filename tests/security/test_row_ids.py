"""The one fetch-with-access (`elion.base.rows.access_row`): an id of any shape is a row or a JSON 404, never a 500.

An integer beyond the database's 64-bit range used to reach SQLite as is
(OverflowError, a 500); a bool or a decimal string named row 1.
"""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest
from django.test import Client

from archive.services.upload_pieces import piece_upload_state
from conversations.sending.broadcast import conversation_group
from conversations.sending.prepare import retry_prepare
from conversations.web.api import parse_conversation_id
from elion.base.errors import NotFound
from elion.base.rows import id_or_not_found, parse_id
from transcript.attachments.projection import attachment_verified_content

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


MALFORMED_UUIDS = ["nope", "1", "", "8c1f2a0e-5b7e-4b4e-9d2a-0f3c4b5a6d7", True, None]
# The ids checked without a row read, each by its own rule once, now all through `id_or_not_found`.
ID_CHECKS = [
    (lambda raw: parse_conversation_id(raw), "conversation_not_found"),
    (lambda raw: conversation_group(raw), "conversation_not_found"),
    (lambda raw: retry_prepare(conversation_id=raw, message_id=uuid4()), "conversation_not_found"),
    (lambda raw: attachment_verified_content(conversation_id=uuid4(), attachment_id=raw), "attachment_not_found"),
    (lambda raw: piece_upload_state(raw), "upload_not_found"),
]


@pytest.mark.parametrize(("check", "code"), ID_CHECKS)
@pytest.mark.parametrize("bad", MALFORMED_UUIDS)
def test_a_malformed_id_is_a_404_on_every_path(check, code, bad):
    with pytest.raises(NotFound) as refused:
        check(bad)
    assert refused.value.code == code


def test_id_or_not_found_gives_the_id_or_the_404_it_is_told():
    raw = "8c1f2a0e-5b7e-4b4e-9d2a-0f3c4b5a6d7e"
    assert id_or_not_found(raw, kind="uuid", missing="m", code="c") == UUID(raw)
    assert id_or_not_found("42", kind="int", missing="m", code="c") == 42
    with pytest.raises(NotFound) as refused:
        id_or_not_found(2**63, kind="int", missing="No such row.", code="row_not_found")
    assert (refused.value.detail, refused.value.code) == ("No such row.", "row_not_found")
