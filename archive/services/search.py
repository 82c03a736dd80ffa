"""Full-text search over archive chunks, the same results on SQLite and PostgreSQL.

The recipe (Python-made tokens in `search_text`, the database's index only
deciding which rows match, ranking here) is `elion.base.fulltext`; the chunk
table's FTS5 table and GIN index are made by
`archive/migrations/0002_archive_chunk_full_text_search.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from archive.models import ArchiveChunk
from elion.base.fulltext import excerpt, matching_ids, query_terms, score, search_text_for

__all__ = ["ChunkHit", "archive_search", "query_terms", "search_text_for"]

CANDIDATE_LIMIT = 1_000
CHUNK_TABLE = ArchiveChunk._meta.db_table
FTS_TABLE = "archive_chunk_fts"
VECTOR_COLUMN = "search_vector"  # PostgreSQL only: a stored, generated tsvector of search_text


@dataclass(frozen=True)
class ChunkHit:
    document_id: int
    document_title: str
    collection: str
    chunk: int  # the chunk's 1-based position in its document
    speaker: str
    excerpt: str
    score: float
    branch: str = "current"  # "alternate": from a branch the owner left (an imported edit or regeneration)

    def as_dict(self) -> dict:
        return {
            "document_id": self.document_id,
            "document_title": self.document_title,
            "collection": self.collection,
            "chunk": self.chunk,
            "speaker": self.speaker,
            "excerpt": self.excerpt,
            "branch": self.branch,
        }


def _matching_ids(terms: list[str], collections: list[str] | None, limit: int) -> list[int]:
    """Ids of chunks containing every term, newest first (the database's part)."""
    if not collections:
        return matching_ids(
            table=CHUNK_TABLE, fts_table=FTS_TABLE, terms=terms, limit=limit, vector_column=VECTOR_COLUMN
        )
    return matching_ids(
        table=CHUNK_TABLE, fts_table=FTS_TABLE, terms=terms, limit=limit, vector_column=VECTOR_COLUMN,
        join="JOIN archive_archivedocument d ON d.id = c.document_id",
        where=f"AND d.collection IN ({', '.join(['%s'] * len(collections))})",
        params=collections,
    )


def archive_search(query: str, *, limit: int = 10, collections: list[str] | None = None) -> list[ChunkHit]:
    """The best `limit` chunks containing every word of `query`."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    ids = _matching_ids(terms, collections, CANDIDATE_LIMIT)
    scored = sorted(
        ((score(text, terms), pk) for pk, text in ArchiveChunk.objects.filter(pk__in=ids).values_list("pk", "search_text")),
        key=lambda item: (-item[0], -item[1]),
    )[:limit]
    chunks = ArchiveChunk.objects.select_related("document").in_bulk([pk for _, pk in scored])
    return [
        ChunkHit(
            document_id=chunk.document_id,
            document_title=chunk.document.title,
            collection=chunk.document.collection,
            chunk=chunk.position,
            speaker=chunk.speaker,
            excerpt=excerpt(chunk.text, terms),
            score=round(value, 6),
            branch=chunk.branch,
        )
        for value, pk in scored
        if (chunk := chunks.get(pk)) is not None
    ]
