"""Keyword recall's database side: which past messages match (selectors only).

Searches the message index Past Conversation Search keeps
(`conversations.services.visibility.past_search`, `MessageSearchEntry`: SQLite FTS5 / PostgreSQL
GIN, tokens made in Python) through `elion.base.fulltext.matching_ids`, so the
same terms give the same candidates on both databases.

What may be recalled: live-branch user/assistant speech (`kind=ordinary`,
complete or interrupted) of other conversations that may feed automatic
continuity into this persona's thread (`continuity.rules.eligibility`: never
hidden, trashed, Continuity-Shielded or the other persona's). Never the
current conversation or a handoff's source (the caller passes them in
`exclude`), never stored system prompts, tool parts or Branch handoff
bubbles (none of them is in the index).

Bounded work per send: at most `candidates_per_term()` newest matches per
term, found by one index probe plus one query per term that is rare lately
(`_candidate_entry_ids`), one query for those messages,
then a walk up from their conversations' heads (`live_message_ids`) for the
best-ranked few, to check that each sits on its live branch. Nothing loads
a whole table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple
from uuid import UUID

from django.db import connection
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL

from continuity.rules.eligibility import continuity_sources
from continuity.rules.recall_policy import MAX_EXCERPTS, RecallHit, hit_score, words
from conversations.models import Conversation, Message, MessageKind, MessageStatus, Role
from transcript.search_index import (
    ENTRY_TABLE,
    FTS_TABLE,
    VECTOR_COLUMN,
    conversations_tsquery,
    message_search_index_sync,
)

CANDIDATES_PER_TERM = 40
# A long message's eight keywords would ask for 320 candidates, each fetched and
# scored: the per-term share shrinks so the whole stays near this budget (but
# never below MIN_CANDIDATES_PER_TERM per term).
CANDIDATE_BUDGET = 160
MIN_CANDIDATES_PER_TERM = 20
# Message rows read first, in rank order (`best_recall_candidates`): enough for
# ten excerpts after the live-branch and overlap checks drop some.
BEST_FIRST = 4 * MAX_EXCERPTS
TITLE_SCAN_LIMIT = 200
# PostgreSQL (`_candidate_entry_ids`, `_older_matches_postgres`), in index rows:
# the probe's rows of the other conversations; the longest and the shortest walk for
# a term short in the probe (rows of the other conversations); the id windows read
# for rarer terms.
PROBE_ROWS = 4_096
WALK_ROWS = 4_096
MIN_WALK_ROWS = 512
MIN_WINDOW_ROWS = 4_096
MAX_WINDOW_ROWS = 1_048_576
RECALLABLE_ROLES = (Role.USER, Role.ASSISTANT)
RECALLABLE_STATUSES = (MessageStatus.COMPLETE, MessageStatus.INTERRUPTED, MessageStatus.INCOMPLETE)


def _sources(*, persona: str, exclude: Iterable[UUID]) -> QuerySet:
    return continuity_sources(persona=persona).exclude(pk__in=list(exclude))


def _newest_matches(
    terms: Sequence[str], *, source_sql: str, source_params: Sequence, excluded: Sequence[UUID], limit: int,
    before: int | None = None,
) -> list[tuple[int, str]]:
    """SQLite: (id, search_text) of the newest eligible index rows holding ANY
    of `terms` (below id `before` when given), at most `limit`. FTS5 walks its
    doclists newest first and stops at the limit, however rare the terms, and
    skips the `excluded` conversations' rows itself (the index holds each
    row's conversation: migration 0013), so the current thread, however long,
    costs nothing here; the EXISTS probe decides the rest."""
    older = "AND f.rowid < %s " if before is not None else ""
    sql = (
        f"SELECT c.id, c.search_text FROM {FTS_TABLE} f JOIN {ENTRY_TABLE} c ON c.id = f.rowid "
        f"WHERE {FTS_TABLE} MATCH %s {older}AND EXISTS ({source_sql}) ORDER BY f.rowid DESC LIMIT %s"
    )
    params = [_fts_match_any(terms, excluded=excluded), *([before] if before is not None else [])]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *source_params, limit])
        return cursor.fetchall()


def _fts_match_any(terms: Sequence[str], *, excluded: Sequence[UUID]) -> str:
    """The FTS5 query for rows holding any of `terms` in their text and not of an `excluded` conversation.

    SQLite stores a UUID as its 32 hex digits, which the index holds as one token."""
    match = "search_text : (" + " OR ".join(f'"{term}"' for term in terms) + ")"
    if excluded:
        match += " NOT conversation_id : (" + " OR ".join(f'"{pk.hex}"' for pk in excluded) + ")"
    return match


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
    ids (`_walk_postgres`); the excluded conversations' rows met on the way are refused on the vector's
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
    entries, not row reads (`_walk_postgres`). `ts_match_vq`, as in `_walk_range_postgres`; OFFSET 0 keeps
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
    conversations below `before` (0, 0, 0 when there are none): the rows a walk (`_walk_postgres`) covers,
    which tell it which walk to take and where the id windows below it start. One index-only walk of the ids."""
    others_sql, others_params = _others_newest_sql(excluded, before)
    sql = f"SELECT min(o.id), max(o.id), count(*) FROM ({others_sql}) o"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*others_params, rows])
        low, high, count = cursor.fetchone()
    return (low, high, count) if count else (0, 0, 0)


class IndexTop(NamedTuple):
    """The index's lowest and newest row ids, and at most how many of its rows the conversations recall
    leaves out hold (`_index_top_postgres`)."""

    lowest: int
    newest: int
    excluded_rows: int


def _index_top_postgres(excluded: Sequence[UUID]) -> IndexTop | None:
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
    """The index ids a walk (`_walk_postgres`) covered: `low` to `high`, and whether no row of the other
    conversations lies below `low` (the walk met every row below `high`)."""

    low: int
    high: int
    every_row: bool


def _walk_postgres(
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


def candidates_per_term(term_count: int) -> int:
    """How many newest matches each term contributes: `CANDIDATES_PER_TERM`, less when many terms share the budget."""
    share = max(MIN_CANDIDATES_PER_TERM, CANDIDATE_BUDGET // max(term_count, 1))
    return min(CANDIDATES_PER_TERM, share)


def _candidate_entry_ids(terms: Sequence[str], *, persona: str, exclude: Iterable[UUID]) -> dict[int, str]:
    """For each term, its `candidates_per_term` newest eligible index rows: {id: search_text}.

    The index's own tokens come back with the ids, so ranking never
    tokenises message text again (`keyword_recall.hit_score`).

    Done in two steps so no term costs a long walk on either database:

    1. One probe for the newest `candidates_per_term × len(terms)` rows holding
       any term (on PostgreSQL, among about the newest `PROBE_ROWS` index rows
       of the other conversations, `_walk_postgres`: a current thread of more
       than `PROBE_ROWS` messages has its own newest rows left out inside an
       index, not read; a shorter one's are refused on the conversation lexeme).
       Common terms fill it at once, and every term's newest matches down to
       the probe's oldest row are in it.
    2. Only a term with fewer than `candidates_per_term` matches in the probe
       is asked for again, for rows older than the probe: SQLite's FTS5 walks
       the term's own doclist newest first; PostgreSQL has no such order, so
       `_older_matches_postgres` bounds the work per term.

    Eligibility is a correlated EXISTS (one primary-key probe per row the
    search meets), not `IN (every eligible conversation)`, which would cost
    far more than the search itself (bench/recall.py).
    """
    exclude = list(exclude)
    source = (
        _sources(persona=persona, exclude=exclude).filter(pk=RawSQL("c.conversation_id", ())).order_by().values("pk")
    )
    source_sql, source_params = source.query.sql_with_params()
    postgres = connection.vendor == "postgresql"
    if postgres:
        # OFFSET 0 keeps the EXISTS a per-row primary-key probe: PostgreSQL would
        # otherwise turn it into a hash join that reads every conversation.
        source_sql += " OFFSET 0"
    excluded = sorted(UUID(str(pk)) for pk in exclude)
    query = {"source_sql": source_sql, "source_params": source_params, "excluded": excluded}
    per_term = candidates_per_term(len(terms))
    probe_size = per_term * len(terms)
    if postgres:
        index = _index_top_postgres(excluded)
        if index is None:
            return {}  # nothing is indexed yet
        probe, cover = _walk_postgres(
            terms, rows=PROBE_ROWS, before=index.newest + 1, limit=probe_size, index=index, query=query
        )
    else:
        probe = _newest_matches(terms, limit=probe_size, **query)
    found: dict[int, str] = {}
    counts = dict.fromkeys(terms, 0)
    for pk, search_text in probe:
        search_text = search_text or ""
        present = counts.keys() & search_text.split()
        keep = False
        for term in present:
            counts[term] += 1
            keep = keep or counts[term] <= per_term
        if keep:
            found[pk] = search_text
    if len(probe) == probe_size:
        oldest = min(pk for pk, _ in probe)
        span = cover.high - oldest + 1 if postgres else 0
    elif postgres:
        if cover.every_row:
            return found  # the probe read every other conversation's row
        oldest, span = cover.low, cover.high - cover.low + 1  # the probe holds every match in its rows
    else:
        return found  # the probe holds every match of every term
    short = {term: per_term - counts[term] for term in terms if counts[term] < per_term}
    if postgres:
        found.update(
            _older_matches_postgres(short, counts, span=span, before=oldest, index=index, query=query)
        )
        return found
    for term, missing in short.items():
        older = _newest_matches([term], limit=missing, before=oldest, **query)
        found.update((pk, search_text or "") for pk, search_text in older)
    return found


def _older_matches_postgres(
    missing: dict[str, int], seen: dict[str, int], *, span: int, before: int, index: IndexTop, query: dict
) -> dict[int, str]:
    """PostgreSQL: each term's `missing[term]` newest eligible rows with id below `before`.

    The probe met the term `seen[term]` times in `span` ids of the index,
    which estimates how many ids back its missing matches lie. A term whose
    missing matches should lie within `WALK_ROWS` rows is walked for among the
    other conversations' next rows (`_walk_postgres`), twice as many as expected
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
            rows, cover = _walk_postgres(
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


def live_message_ids(hits: Sequence[RecallHit]) -> set[str]:
    """Which of `hits` sit on their conversation's live branch.

    One recursive query walks up from each conversation's head through
    parent links, and stops below the conversation's oldest hit (a parent's
    seq is always smaller than its child's), so it reads only that tail of
    each conversation, ids and parents only, and answers just the hits it met.
    """
    bounds: dict[str, tuple[str, int]] = {}
    for hit in hits:
        if hit.head_id is None:
            continue
        head, low = bounds.get(hit.conversation_id, (hit.head_id, hit.seq))
        bounds[hit.conversation_id] = (head, min(low, hit.seq))
    wanted = [hit.message_id for hit in hits if hit.conversation_id in bounds]
    if not wanted:
        return set()
    pk = Message._meta.pk
    table = connection.ops.quote_name(Message._meta.db_table)

    def db(value: str) -> str:
        return pk.get_db_prep_value(UUID(value), connection)

    params: list = []
    for head, low in bounds.values():
        params += [db(head), low]
    params += [db(value) for value in wanted]
    sql = (
        f"WITH RECURSIVE bounds(head_id, low) AS (VALUES {', '.join(['(%s, %s)'] * len(bounds))}), "
        f"walk(id, parent_id, low) AS ("
        f"SELECT m.id, m.parent_id, b.low FROM {table} m JOIN bounds b ON m.id = b.head_id WHERE m.seq >= b.low "
        f"UNION "
        f"SELECT m.id, m.parent_id, w.low FROM {table} m JOIN walk w ON m.id = w.parent_id WHERE m.seq >= w.low"
        f") SELECT id FROM walk WHERE id IN ({', '.join(['%s'] * len(wanted))})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {str(pk.to_python(row[0])) for row in cursor.fetchall()}


def recall_candidates(terms: Sequence[str], *, persona: str, exclude: Iterable[UUID]) -> list[RecallHit]:
    """Recallable messages holding any of `terms`: unranked, and not yet checked
    against their live branch (`live_message_ids`, asked lazily for the best)."""
    terms = [term for term in dict.fromkeys(terms) if term]
    if not terms:
        return []
    return _hits(_entries(terms, persona=persona, exclude=exclude))


def best_recall_candidates(
    terms: Sequence[str], *, persona: str, exclude: Iterable[UUID], first: int = BEST_FIRST
) -> tuple[list[RecallHit], bool]:
    """A prefix of `recall_candidates` in rank order, and whether it is all of them.

    Candidates are scored on the index's own tokens (`hit_score`, the
    ranking's first two keys) before any message row is read; only the
    `first` best, with every candidate tied with the last of them, are read.
    Ranking that set walks the same order as ranking every candidate, so the
    caller reads the rest only when the prefix yields too few excerpts.
    """
    terms = [term for term in dict.fromkeys(terms) if term]
    if not terms:
        return [], True
    entries = _entries(terms, persona=persona, exclude=exclude)
    if len(entries) <= first:
        return _hits(entries), True
    keys = {pk: hit_score("", terms, tokens) for pk, tokens in entries.items()}
    threshold = sorted(keys.values(), reverse=True)[first - 1]
    best = {pk: tokens for pk, tokens in entries.items() if keys[pk] >= threshold}
    return _hits(best), len(best) == len(entries)


def _entries(terms: list[str], *, persona: str, exclude: Iterable[UUID]) -> dict[int, str]:
    exclude = list(exclude)
    # Each reply indexes its turn once stored and a fork its copies, so under a send's lock
    # this finds nothing pending unless another path wrote messages; the recalling thread's
    # own new turn needs no index now.
    message_search_index_sync(exclude_conversation_ids=exclude)
    return _candidate_entry_ids(terms, persona=persona, exclude=exclude)


def _hits(entry_ids: dict[int, str]) -> list[RecallHit]:
    """The recallable messages of these index rows, carrying the rows' tokens."""
    if not entry_ids:
        return []
    rows = Message.objects.filter(
        search_entry__id__in=list(entry_ids),
        role__in=RECALLABLE_ROLES,
        kind=MessageKind.ORDINARY,
        status__in=RECALLABLE_STATUSES,
    ).order_by().values_list(  # in no order: `rank_hits` orders them, fully
        "id", "conversation_id", "conversation__title", "conversation__head_id", "role", "content", "created_at",
        "seq", "search_entry__id",
    )
    return [
        RecallHit(
            message_id=str(pk),
            conversation_id=str(conversation_id),
            conversation_title=title or "",
            role=role,
            content=content,
            created_at=created_at,
            seq=seq,
            head_id=str(head_id) if head_id else None,
            tokens=entry_ids[entry_id],
        )
        for pk, conversation_id, title, head_id, role, content, created_at, seq, entry_id in rows
        if content.strip()
    ]


def title_terms(terms: Sequence[str], *, persona: str, exclude: Iterable[UUID]) -> frozenset[str]:
    """Which of `terms` occur as whole words in the title of a recallable conversation.

    `icontains` folds only ASCII case on SQLite, so for a term with other
    letters the common spellings are asked for too; the words themselves
    then decide.
    """
    terms = [term for term in dict.fromkeys(terms) if term]
    if not terms:
        return frozenset()
    condition = Q()
    for term in terms:
        condition |= Q(title__icontains=term)
        if not term.isascii():
            for variant in {term.capitalize(), term.upper(), term.title()} - {term}:
                condition |= Q(title__contains=variant)
    titles = (
        _sources(persona=persona, exclude=exclude)
        .filter(condition)
        .order_by("-updated_at", "pk")
        .values_list("title", flat=True)[:TITLE_SCAN_LIMIT]
    )
    wanted = set(terms)
    found: set[str] = set()
    for title in titles:
        found |= wanted.intersection(words(title))
    return frozenset(found)
