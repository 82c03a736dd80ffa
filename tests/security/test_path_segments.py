"""Path segments are checked before a query: a NUL or a malformed content hash in a route's segment is a JSON
404, and no statement runs for it."""

from __future__ import annotations

import pytest
from django.test import Client

from archive.models import ArchiveDocument
from elion.base.rows import parse_sha256

pytestmark = pytest.mark.django_db


def test_a_nul_in_a_sha256_path_segment_is_a_json_404():
    document = ArchiveDocument.objects.create(title="t", collection="incarnations", content_sha256="0" * 64, text="t")
    for segment in ("%00", "a" * 63 + "%00", "A" * 64, "g" * 64, "%ED%A0%80"):
        response = Client().get(f"/api/archive/documents/{document.id}/attachments/{segment}/")
        assert response.status_code == 404, segment
        assert response.json()["error"].endswith("not_found")


def test_a_nul_in_any_path_segment_never_reaches_a_query(django_assert_num_queries):
    with django_assert_num_queries(0):
        response = Client().get("/api/conversations/%00/messages/")
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_parse_sha256_accepts_only_a_content_hash():
    digest = "0123456789abcdef" * 4
    assert parse_sha256(digest) == digest
    for bad in (digest.upper(), digest[:-1], digest + "0", digest[:-1] + "\x00", 7, None):
        assert parse_sha256(bad) is None
