"""Migration 0003 (branches and attachments) keeps full-text search whole on both databases.

On SQLite adding the NOT NULL `branch` column rebuilds the chunk table, which drops the FTS5
triggers of 0002; 0003 recreates them and rebuilds the index.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from archive.models import ArchiveChunk, ArchiveDocument
from archive.search import archive_search, search_text_for

BEFORE = ("archive", "0002_archive_chunk_full_text_search")
AFTER = ("archive", "0003_chatgpt_branches_and_attachments")


def migrate_to(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


@pytest.mark.django_db(transaction=True)
def test_chunks_stored_before_0003_stay_searchable_and_new_ones_are_indexed():
    old_apps = migrate_to(BEFORE)
    try:
        document = old_apps.get_model("archive", "ArchiveDocument").objects.create(
            title="Before", collection="papers", content_sha256="1" * 64, text="lighthouse keeper", chunk_count=1,
        )
        old_apps.get_model("archive", "ArchiveChunk").objects.create(
            document=document, position=1, text="lighthouse keeper", search_text=search_text_for("lighthouse keeper"),
        )
    finally:
        migrate_to(AFTER)
    (hit,) = archive_search("lighthouse")
    assert (hit.document_title, hit.branch) == ("Before", "current")
    later = ArchiveDocument.objects.create(
        title="After", collection="papers", content_sha256="2" * 64, text="foghorn", chunk_count=1,
    )
    ArchiveChunk.objects.create(document=later, position=1, text="foghorn", search_text=search_text_for("foghorn"),
                                branch="alternate")
    (hit,) = archive_search("foghorn")
    assert (hit.document_title, hit.branch) == ("After", "alternate")
    ArchiveDocument.objects.filter(pk=later.pk).delete()
    assert archive_search("foghorn") == []
