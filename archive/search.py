"""Full-text search over archive chunks: one interface, same results on both databases.

How the results stay identical on SQLite and PostgreSQL:

* Tokens are made here, in Python: each chunk stores `search_text`, its
  lower-cased words joined by single spaces, and a query becomes the same
  kind of words. The databases only ever see plain space-separated words, so
  SQLite's FTS5 (`unicode61`, diacritics kept) and PostgreSQL's `simple`
  text-search configuration split them identically, without stemming or
  stop words.
* The database decides only *which* chunks match (every query word must
  occur) through its index: the FTS5 table `archive_chunk_fts` (kept in step
  with the chunk table by triggers) or the GIN index over
  `to_tsvector('simple', search_text)`. The newest `CANDIDATE_LIMIT`
  matches are taken in id order, which both databases agree on.
* Ranking is done here, by one deterministic scoring function, with ties
  broken by chunk id.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from django.db import connection

from archive.models import ArchiveChunk

CANDIDATE_LIMIT = 1_000
MAX_QUERY_TERMS = 12
EXCERPT_CHARACTERS = 300
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The tokens both databases index: runs of letters and digits, lower-cased."""
    return _WORD.findall(text.lower())


def search_text_for(text: str) -> str:
    return " ".join(words(text))


def query_terms(query: str) -> list[str]:
    """Distinct query words in order, at most MAX_QUERY_TERMS."""
    seen: dict[str, None] = {}
    for word in words(query or ""):
        seen.setdefault(word, None)
    return list(seen)[:MAX_QUERY_TERMS]


@dataclass(frozen=True)
class ChunkHit:
    document_id: int
    document_title: str
    collection: str
    chunk: int  # the chunk's 1-based position in its document
    speaker: str
    excerpt: str
    score: float

    def as_dict(self) -> dict:
        return {
            "document_id": self.document_id,
            "document_title": self.document_title,
            "collection": self.collection,
            "chunk": self.chunk,
            "speaker": self.speaker,
            "excerpt": self.excerpt,
        }


def _matching_ids(terms: list[str], collections: list[str] | None, limit: int) -> list[int]:
    """Ids of chunks containing every term, newest first (the database's part)."""
    params: list = []
    if connection.vendor == "postgresql":
        sql = (
            "SELECT c.id FROM archive_archivechunk c {join}"
            "WHERE to_tsvector('simple', c.search_text) @@ to_tsquery('simple', %s) {where}"
            "ORDER BY c.id DESC LIMIT %s"
        )
        params.append(" & ".join(terms))
    else:
        # Quoted FTS5 strings: each term is one token, implicitly ANDed.
        sql = (
            "SELECT f.rowid FROM archive_chunk_fts f JOIN archive_archivechunk c ON c.id = f.rowid {join}"
            "WHERE archive_chunk_fts MATCH %s {where}"
            "ORDER BY f.rowid DESC LIMIT %s"
        )
        params.append(" ".join(f'"{term}"' for term in terms))
    join = where = ""
    if collections:
        join = "JOIN archive_archivedocument d ON d.id = c.document_id "
        where = f"AND d.collection IN ({', '.join(['%s'] * len(collections))}) "
        params.extend(collections)
    params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(sql.format(join=join, where=where), params)
        return [row[0] for row in cursor.fetchall()]


def score(search_text: str, terms: list[str]) -> float:
    """Term-frequency score with saturation and a mild length normalisation (BM25-like, no idf)."""
    tokens = search_text.split()
    counts = Counter(tokens)
    length_factor = 0.25 + 0.75 * len(tokens) / 120
    return sum(counts[t] * 2.2 / (counts[t] + 1.2 * length_factor) for t in terms)


def excerpt(text: str, terms: list[str], width: int = EXCERPT_CHARACTERS) -> str:
    """About `width` characters around the first term found, on word boundaries."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    hits = [lowered.find(term) for term in terms]
    first = min((h for h in hits if h >= 0), default=0)
    start = max(first - width // 3, 0)
    if start:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < first else start
    end = min(start + width, len(flat))
    if end < len(flat):
        space = flat.rfind(" ", start, end)
        end = space if space > start else end
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


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
        )
        for value, pk in scored
        if (chunk := chunks.get(pk)) is not None
    ]
