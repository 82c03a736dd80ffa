"""Keyword recall's database side on PostgreSQL: the walks and id windows that find each term's newest
eligible index rows (`continuity.rules.recall_store._candidate_entry_ids` asks them) without a long walk
or a bitmap of every match, however long the current thread and however common the term."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple
from uuid import UUID

from django.db import connection

from transcript.models import Conversation
from transcript.search_index import ENTRY_TABLE, VECTOR_COLUMN, conversations_tsquery

# In index rows: the longest and the shortest walk for a term short in the probe (rows of the other
# conversations); the id windows read for rarer terms.
WALK_ROWS = 4_096
MIN_WALK_ROWS = 512
MIN_WINDOW_ROWS = 4_096
MAX_WINDOW_ROWS = 1_048_576


def _tsquery_postgres(terms: Sequence[str], excluded: Sequence[UUID]) -> tuple[str, list[str]]:
    """PostgreSQL: the tsquery for rows holding ANY of `terms` and not of an `excluded`
    conversation, and its parameters. Each vector holds its row's conversation as one
    lexeme (migration 0016), so the GIN index leaves the current thread out of a term's
    bitmap, and a walk refuses its rows on the vector alone, before any eligibility probe."""
    if not excluded:
        return "to_tsquery('simple', %s)", [" | ".join(terms)]
    return "(to_tsquery('simple', %s) && !! %s::tsquery)", [" | ".join(terms), conversations_tsquery(excluded)]


def _walk_range_postgres(
    terms: Sequence[str], *, source_sql: str, source_params: Sequence, excluded: Sequence[UUID], limit: int,
    since: int, before: int,
) -> list[tuple[int, str]]:
    """PostgreSQL: the newest eligible rows holding ANY of `terms` with `since <= id < before`, at most
    `limit`, by walking the primary key backwards: at most `before - since` rows are read, fewer when
    common terms fill the limit early. The cheaper walk where the other conversations hold most of the
    ids (`newest_matches_postgres`); the excluded conversations' rows met on the way are refused on the vector's
    conversation lexeme. `ts_match_vq` is `@@` as a function, which no index serves, so the planner cannot
    trade this bounded walk for a GIN bitmap of every match of a common term (110,000 rows at 1,000,000
    messages)."""
    tsquery, tsquery_params = _tsquery_postgres(terms, excluded)
    sql = (
        f"SELECT c.id, c.search_text FROM {ENTRY_TABLE} c "
        f"WHERE ts_match_vq(c.{VECTOR_COLUMN}, {tsquery}) AND c.id >= %s AND c.id < %s "
        f"AND EXISTS ({source_sql}) ORDER BY c.id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*tsquery_params, since, before, *source_params, limit])
        return cursor.fetchall()


def _others_newest_sql(excluded: Sequence[UUID], before: int | None) -> tuple[str, list]:
    """PostgreSQL: the subquery of the ids of the newest index rows of every conversation but the `excluded`
    ones (below `before` when given), newest first, at most `%s` of them (the caller's last parameter).

    An index-only scan of `message_search_id_conversation` (migration 0017: id with the row's conversation
    beside it) walks the ids down and leaves the excluded conversations' rows out inside the index, without
    reading them: a current thread that holds the newest ten thousand rows costs a walk of index entries,
    not ten thousand row reads."""
    older = "AND o.id < %s " if before is not None else ""
    sql = (
        f"SELECT o.id FROM {ENTRY_TABLE} o WHERE o.conversation_id <> ALL(%s::uuid[]) {older}"
        "ORDER BY o.id DESC LIMIT %s"
    )
    return sql, [[str(pk) for pk in excluded], *([before] if before is not None else [])]


def _walk_others_postgres(
    terms: Sequence[str], *, source_sql: str, source_params: Sequence, excluded: Sequence[UUID], limit: int,
    rows: int, before: int | None,
) -> list[tuple[int, str]]:
    """PostgreSQL: the newest eligible rows holding ANY of `terms` among the newest `rows` index rows of the
    other conversations (below id `before` when given), at most `limit`, newest first.

    The other conversations' ids come newest first from the index (`_others_newest_sql`); each is then read
    by its primary key and kept when its vector holds a term and its conversation may feed continuity, and
    the walk stops at `limit` matches: common terms fill it within a few rows. The cheaper walk where the
    excluded conversations hold most of the ids (a long current thread's newest rows): they cost index
    entries, not row reads (`newest_matches_postgres`). `ts_match_vq`, as in `_walk_range_postgres`; OFFSET 0 keeps
    each row's check its own primary-key probe (a join would walk the whole table's ids again, the excluded
    rows among them)."""
    others_sql, others_params = _others_newest_sql(excluded, before)
    sql = (
        f"SELECT c.id, c.search_text FROM ({others_sql}) o CROSS JOIN LATERAL ("
        f"SELECT c.id, c.search_text FROM {ENTRY_TABLE} c WHERE c.id = o.id "
        f"AND ts_match_vq(c.{VECTOR_COLUMN}, to_tsquery('simple', %s)) AND EXISTS ({source_sql}) OFFSET 0) c "
        "ORDER BY o.id DESC LIMIT %s"
    )
    params = [*others_params, rows, " | ".join(terms), *source_params, limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _others_span_postgres(excluded: Sequence[UUID], *, rows: int, before: int | None) -> tuple[int, int, int]:
    """PostgreSQL: (lowest id, highest id, how many) of the newest `rows` index rows of the other
    conversations below `before` (0, 0, 0 when there are none): the rows a walk (`newest_matches_postgres`) covers,
    which tell it which walk to take and where the id windows below it start. One index-only walk of the ids."""
    others_sql, others_params = _others_newest_sql(excluded, before)
    sql = f"SELECT min(o.id), max(o.id), count(*) FROM ({others_sql}) o"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*others_params, rows])
        low, high, count = cursor.fetchone()
    return (low, high, count) if count else (0, 0, 0)


class IndexTop(NamedTuple):
    """The index's lowest and newest row ids, and at most how many of its rows the conversations recall
    leaves out hold (`index_top_postgres`)."""

    lowest: int
    newest: int
    excluded_rows: int


def index_top_postgres(excluded: Sequence[UUID]) -> IndexTop | None:
    """PostgreSQL: the index's lowest and newest row ids (None when the index is empty), and at most how
    many index rows the `excluded` conversations hold: the sum of their `last_seq`, since each of their
    messages has its own seq up to it and an index row belongs to one message. One statement, three
    primary-key lookups."""
    conversations = connection.ops.quote_name(Conversation._meta.db_table)
    sql = (
        f"SELECT (SELECT min(e.id) FROM {ENTRY_TABLE} e), (SELECT max(e.id) FROM {ENTRY_TABLE} e), "
        f"(SELECT coalesce(sum(c.last_seq), 0) FROM {conversations} c WHERE c.id = ANY(%s::uuid[]))"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [[str(pk) for pk in excluded]])
        lowest, newest, excluded_rows = cursor.fetchone()
    return IndexTop(lowest, newest, int(excluded_rows)) if newest is not None else None


class WalkCover(NamedTuple):
    """The index ids a walk (`newest_matches_postgres`) covered: `low` to `high`, and whether no row of the other
    conversations lies below `low` (the walk met every row below `high`)."""

    low: int
    high: int
    every_row: bool


def newest_matches_postgres(
    terms: Sequence[str], *, rows: int, before: int, limit: int, index: IndexTop, query: dict
) -> tuple[list[tuple[int, str]], WalkCover]:
    """PostgreSQL: the newest eligible rows holding ANY of `terms` among about the newest `rows` index rows
    of the other conversations below id `before`, at most `limit`; and the ids the walk covered.

    Which walk, from how many index rows the excluded conversations can hold (`index.excluded_rows`):
    - at most `rows` (the usual case: a thread of fewer than 4,096 messages and its handoff sources): the
      primary key is walked over the newest `rows + index.excluded_rows` ids below `before`
      (`_walk_range_postgres`), at least `rows` of them the other conversations', with no statement first;
    - more: one index-only walk of the ids (`_others_span_postgres`) finds the range of the other
      conversations' newest `rows` rows. Where they hold at least half its ids, the primary key is walked
      over it; where the excluded conversations hold most of them (a long current thread's newest rows),
      each other row is looked up by its id from the index that leaves the excluded rows out
      (`_walk_others_postgres`).
    Either way a row of the excluded conversations is never a match, and the answer is the same."""
    if index.excluded_rows <= rows:
        since = max(before - rows - index.excluded_rows, index.lowest)
        found = _walk_range_postgres(terms, limit=limit, since=since, before=before, **query)
        return found, WalkCover(low=since, high=before - 1, every_row=since == index.lowest)
    low, high, count = _others_span_postgres(query["excluded"], rows=rows, before=before)
    cover = WalkCover(low=low, high=high, every_row=count < rows)
    if not count:
        return [], cover
    if 2 * count >= high - low + 1:
        found = _walk_range_postgres(terms, limit=limit, since=low, before=high + 1, **query)
    else:
        found = _walk_others_postgres(terms, limit=limit, rows=rows, before=before, **query)
    return found, cover


def _window_matches_postgres(
    term: str, *, source_sql: str, source_params: Sequence, excluded: Sequence[UUID], before: int,
    since: int | None, limit: int,
) -> list[tuple[int, str]]:
    """PostgreSQL: the newest `limit` eligible rows holding `term` with `since <= id < before`, newest first.

    The window's matches are found by a bitmap AND of the GIN index (the term,
    less the excluded conversations' rows) and the BRIN index on id, kept as
    found (`MATERIALIZED`: no ORDER BY ... LIMIT for the planner to trade for a
    walk of the primary key). Eligibility is then asked once per conversation
    among them, not once per row, and only the `limit` newest rows' text is read.
    A common term can match thousands of rows of the other threads in one window.
    """
    window = "AND c.id >= %s " if since is not None else ""
    tsquery, tsquery_params = _tsquery_postgres([term], excluded)
    sql = (
        f"WITH found AS MATERIALIZED (SELECT c.id, c.conversation_id FROM {ENTRY_TABLE} c "
        f"WHERE c.{VECTOR_COLUMN} @@ {tsquery} AND c.id < %s {window}), "
        f"eligible AS (SELECT c.conversation_id FROM (SELECT DISTINCT conversation_id FROM found) c "
        f"WHERE EXISTS ({source_sql})) "
        f"SELECT found.id, e.search_text FROM found JOIN eligible ON eligible.conversation_id = found.conversation_id "
        f"JOIN {ENTRY_TABLE} e ON e.id = found.id ORDER BY found.id DESC LIMIT %s"
    )
    params = [*tsquery_params, before, *([since] if since is not None else []), *source_params, limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def older_matches_postgres(
    missing: dict[str, int], seen: dict[str, int], *, span: int, before: int, index: IndexTop, query: dict
) -> dict[int, str]:
    """PostgreSQL: each term's `missing[term]` newest eligible rows with id below `before`.

    The probe met the term `seen[term]` times in `span` ids of the index,
    which estimates how many ids back its missing matches lie. A term whose
    missing matches should lie within `WALK_ROWS` rows is walked for among the
    other conversations' next rows (`newest_matches_postgres`), twice as many as expected
    (at least `MIN_WALK_ROWS`, at most `WALK_ROWS`): a term met in a burst lately
    and rare before it is not walked for through thousands of rows that cannot
    hold it, it goes on to the windows. Beyond that, or for a rarer term, a
    walk would read tens of thousands of rows at 1,000,000 messages, and a
    bitmap scan of every match costs as much for a term of middling
    frequency, so the rows are read in id windows
    (`_window_matches_postgres`): the first sized to hold about the missing
    matches, each next one eight times larger, the last unbounded. A term
    still short after a window matched less than expected there, so the next
    window holds at most about eight times its missing matches.
    """
    found: dict[int, str] = {}
    for term, need in missing.items():
        expected_rows = int(need * span / (seen[term] + 1))
        high = before
        if seen[term] and expected_rows <= WALK_ROWS:
            walk_rows = min(WALK_ROWS, max(MIN_WALK_ROWS, 2 * expected_rows))
            rows, cover = newest_matches_postgres(
                [term], rows=walk_rows, before=high, limit=need, index=index, query=query
            )
            found.update(rows)
            need -= len(rows)
            if cover.every_row:
                continue  # the walk read every other conversation's row below the probe
            high = cover.low
        size = max(MIN_WINDOW_ROWS, expected_rows)
        while need > 0 and high > 0:
            since = high - size if size < MAX_WINDOW_ROWS and high > size else None
            rows = _window_matches_postgres(term, before=high, since=since, limit=need, **query)
            found.update(rows)
            need -= len(rows)
            if since is None:
                break
            high, size = since, size * 8
    return found
