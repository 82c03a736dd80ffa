"""Full-text search with the same results on SQLite and PostgreSQL.

Shared by every searchable table (archive chunks, conversation messages). The
recipe:

* Tokens are made here, in Python: a searchable row stores `search_text`, its
  lower-cased words joined by single spaces, and a query becomes the same
  kind of words. The databases only ever see plain space-separated words, so
  SQLite's FTS5 (`unicode61`, diacritics kept) and PostgreSQL's `simple`
  text-search configuration split them identically, without stemming or
  stop words.
* The database decides only *which* rows match (every query word must occur)
  through its index: an external-content FTS5 table kept in step with the
  row table by triggers, or a GIN index over
  `to_tsvector('simple', search_text)`. The newest `limit` matches are taken
  in id order, which both databases agree on.
* Ranking is done here, by one deterministic scoring function, with ties
  broken by id.

A table joins in with a `search_text` column, one migration creating its
FTS5 table and triggers (SQLite) or its GIN index (PostgreSQL) exactly like
`archive/migrations/0002_archive_chunk_full_text_search.py`, and one call to
`matching_ids`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from django.db import connection

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


def matching_ids(
    *, table: str, fts_table: str, terms: list[str], limit: int, join: str = "", where: str = "",
    params: Sequence = (), vector_column: str | None = None,
) -> list[int]:
    """Ids of `table` rows whose `search_text` holds every term, newest (highest id) first.

    `join` and `where` (`AND …`) narrow the rows; the row table is aliased
    `c`, and `params` are `where`'s parameters. Both are trusted SQL from the
    caller, never user input. `vector_column` names a stored tsvector column
    (PostgreSQL) to match instead of computing `to_tsvector` per row: with
    `ORDER BY id DESC LIMIT` the planner may walk the primary key and test
    rows one by one, and computing each row's tsvector then costs seconds.
    """
    if not terms:
        return []
    if connection.vendor == "postgresql":
        vector = f"c.{vector_column}" if vector_column else "to_tsvector('simple', c.search_text)"
        sql = (
            f"SELECT c.id FROM {table} c {join} "
            f"WHERE {vector} @@ to_tsquery('simple', %s) {where} "
            "ORDER BY c.id DESC LIMIT %s"
        )
        match = " & ".join(terms)
    else:
        # Quoted FTS5 strings: each term is one token, implicitly ANDed, in the
        # text column only (the message index also indexes each row's conversation).
        sql = (
            f"SELECT f.rowid FROM {fts_table} f JOIN {table} c ON c.id = f.rowid {join} "
            f"WHERE {fts_table} MATCH %s {where} "
            "ORDER BY f.rowid DESC LIMIT %s"
        )
        match = "search_text : (" + " ".join(f'"{term}"' for term in terms) + ")"
    with connection.cursor() as cursor:
        cursor.execute(sql, [match, *params, limit])
        return [row[0] for row in cursor.fetchall()]


def score(search_text: str, terms: list[str]) -> float:
    """Term-frequency score with saturation and a mild length normalisation (BM25-like, no idf)."""
    tokens = search_text.split()
    counts = Counter(tokens)
    length_factor = 0.25 + 0.75 * len(tokens) / 120
    return sum(counts[t] * 2.2 / (counts[t] + 1.2 * length_factor) for t in terms)


def _tidied(text: str, keep_lines: bool) -> str:
    """Whitespace runs as one space; with `keep_lines`, line breaks stay (at most one blank line in a row)."""
    if not keep_lines:
        return " ".join(text.split())
    kept: list[str] = []
    for line in (" ".join(raw.split()) for raw in text.splitlines()):
        if line or (kept and kept[-1]):
            kept.append(line)
    while kept and not kept[-1]:
        kept.pop()
    return "\n".join(kept)


_SPACE = re.compile(r"\s")


def excerpt(text: str, terms: list[str], width: int = EXCERPT_CHARACTERS, *, keep_lines: bool = False) -> str:
    """About `width` characters around the first term found, on word boundaries.

    On one line by default (a results list); `keep_lines` keeps the text's line
    breaks (a quote placed in the message box).
    """
    flat = _tidied(text, keep_lines)
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    hits = [lowered.find(term) for term in terms]
    first = min((h for h in hits if h >= 0), default=0)
    start = max(first - width // 3, 0)
    if start:
        space = _SPACE.search(flat, start)
        start = space.start() + 1 if space and space.start() < first else start
    end = min(start + width, len(flat))
    if end < len(flat):
        spaces = [m.start() for m in _SPACE.finditer(flat, start, end)]
        end = spaces[-1] if spaces and spaces[-1] > start else end
    return ("…" if start else "") + flat[start:end].strip() + ("…" if end < len(flat) else "")


def term_spans(text: str, terms: list[str]) -> list[tuple[int, int]]:
    """Where `terms` occur in `text` as whole tokens (as the index matches them), case-insensitively, in order."""
    wanted = [term for term in terms if term]
    if not wanted or not text:
        return []
    # Longest first, so a term that begins another is not preferred over it.
    alternatives = "|".join(re.escape(term) for term in sorted(set(wanted), key=len, reverse=True))
    pattern = re.compile(rf"(?<![^\W_])(?:{alternatives})(?![^\W_])", re.IGNORECASE)
    return [match.span() for match in pattern.finditer(text)]
