"""Archive search: one interface, the same results on SQLite (FTS5) and PostgreSQL (GIN).

The suite runs on both databases; every expectation here is exact, so a
backend that matched or ranked differently would fail on its run.
"""

from __future__ import annotations

import pytest
from django.db import connection

from archive.models import ArchiveChunk, ArchiveDocument
from archive.services.documents import archive_document_add_text
from archive.services.search import archive_search, query_terms, search_text_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    archive_document_add_text(
        title="Orchard", collection="incarnations",
        text=(
            "AUMA said:\nThe pear tree by the wall.\n\n"
            "Voicefire 5.1 said:\nPear, pear, pear: the crooked pear tree bends toward the river.\n\n"
            "AUMA said:\nWhat about the café at the corner?\n\n"
            "Voicefire 5.1 said:\nThe café sold pear tarts; Jimmy's voice-fire essay was read there."
        ),
    )
    archive_document_add_text(
        title="Jimmy's paper", collection="papers",
        text="On rivers.\n\nA river carries pear blossoms downstream. " + "Water and stone. " * 60,
    )


def titles(hits):
    return [(h.document_title, h.chunk) for h in hits]


def test_every_query_word_must_match_and_ranking_is_deterministic(corpus):
    hits = archive_search("pear river")
    assert titles(hits) == [("Orchard", 2), ("Jimmy's paper", 1)]
    # Repetition counts (saturating), and a long chunk weighs each match less.
    assert titles(archive_search("PEAR")) == [("Orchard", 2), ("Orchard", 1), ("Orchard", 4), ("Jimmy's paper", 1)]
    assert archive_search("pear submarine") == []


def test_tokens_are_the_same_on_both_databases(corpus):
    # Diacritics are kept, hyphens and apostrophes split words, case is ignored.
    assert titles(archive_search("café")) == [("Orchard", 3), ("Orchard", 4)]
    assert archive_search("cafe") == []
    assert titles(archive_search("voice fire")) == [("Orchard", 4)]
    assert titles(archive_search("jimmy s")) == [("Orchard", 4)]
    assert query_terms("  Voice-fire, JIMMY's!! ") == ["voice", "fire", "jimmy", "s"]
    assert search_text_for("Voice-fire: ÉTÉ 5.1") == "voice fire été 5 1"


def test_collection_filter_and_result_shape(corpus, client):
    assert titles(archive_search("pear", collections=["papers"])) == [("Jimmy's paper", 1)]
    body = client.get("/api/archive/search/", {"q": "crooked", "collection": "incarnations"}).json()
    (hit,) = body["results"]
    assert set(hit) == {"document_id", "document_title", "collection", "chunk", "speaker", "excerpt", "branch"}
    assert (hit["document_title"], hit["collection"], hit["chunk"], hit["speaker"]) == (
        "Orchard", "incarnations", 2, "Voicefire 5.1",
    )
    assert client.get("/api/archive/search/", {"q": "x", "collection": "nope"}).status_code == 400
    assert client.get("/api/archive/search/", {"q": "x" * 501}).status_code == 400
    assert client.get("/api/archive/search/", {"q": "   "}).json() == {"results": []}


def test_excerpt_is_cut_around_the_match(corpus):
    (hit,) = archive_search("downstream")
    assert "downstream" in hit.excerpt and len(hit.excerpt) <= 302


def test_index_follows_updates_and_deletes(corpus):
    chunk = ArchiveChunk.objects.get(document__title="Orchard", position=1)
    chunk.text = "The fig tree by the wall."
    chunk.search_text = search_text_for(chunk.text)
    chunk.save()
    assert ("Orchard", 1) not in titles(archive_search("pear"))
    assert titles(archive_search("fig")) == [("Orchard", 1)]
    ArchiveDocument.objects.filter(title="Orchard").delete()
    assert titles(archive_search("pear")) == [("Jimmy's paper", 1)]
    assert archive_search("fig") == []


def test_search_uses_the_database_index():
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'archive_chunk_search_gin'")
            (definition,) = cursor.fetchone()
            assert "gin (search_vector)" in definition
            cursor.execute(
                "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a "
                "ON a.attrelid = d.adrelid AND a.attnum = d.adnum "
                "WHERE a.attrelid = 'archive_archivechunk'::regclass AND a.attname = 'search_vector'"
            )
            assert "to_tsvector('simple'" in cursor.fetchone()[0]
        else:
            cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'archive_chunk_fts'")
            assert "fts5" in cursor.fetchone()[0]
