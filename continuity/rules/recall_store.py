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
from uuid import UUID

from django.db import connection
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL

from continuity.rules.eligibility import continuity_sources
from continuity.rules.recall_policy import MAX_EXCERPTS, RecallHit, hit_score, words
from continuity.rules.recall_store_postgres import index_top_postgres, newest_matches_postgres, older_matches_postgres
from transcript.models import Message, MessageKind, MessageStatus, Role
from transcript.search_index import (
    ENTRY_TABLE,
    FTS_TABLE,
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
# PostgreSQL (`_candidate_entry_ids`): the probe's rows of the other conversations, in index rows.
PROBE_ROWS = 4_096
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
       of the other conversations, `newest_matches_postgres`: a current thread of more
       than `PROBE_ROWS` messages has its own newest rows left out inside an
       index, not read; a shorter one's are refused on the conversation lexeme).
       Common terms fill it at once, and every term's newest matches down to
       the probe's oldest row are in it.
    2. Only a term with fewer than `candidates_per_term` matches in the probe
       is asked for again, for rows older than the probe: SQLite's FTS5 walks
       the term's own doclist newest first; PostgreSQL has no such order, so
       `older_matches_postgres` bounds the work per term.

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
        index = index_top_postgres(excluded)
        if index is None:
            return {}  # nothing is indexed yet
        probe, cover = newest_matches_postgres(
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
            older_matches_postgres(short, counts, span=span, before=oldest, index=index, query=query)
        )
        return found
    for term, missing in short.items():
        older = _newest_matches([term], limit=missing, before=oldest, **query)
        found.update((pk, search_text or "") for pk, search_text in older)
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
    # The status is checked here, not in SQL: a `status IN (...)` condition lets SQLite's planner (without
    # ANALYZE statistics, as a deployment runs) start from the `message_status_lease` index, which covers
    # every message, instead of the few index rows asked for by id (EXPLAIN QUERY PLAN in
    # tests/continuity/test_recall_plan.py).
    rows = Message.objects.filter(
        search_entry__id__in=list(entry_ids),
        role__in=RECALLABLE_ROLES,
        kind=MessageKind.ORDINARY,
    ).order_by().values_list(  # in no order: `rank_hits` orders them, fully
        "id", "conversation_id", "conversation__title", "conversation__head_id", "role", "content", "created_at",
        "seq", "search_entry__id", "status",
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
        for pk, conversation_id, title, head_id, role, content, created_at, seq, entry_id, status in rows
        if status in RECALLABLE_STATUSES and content.strip()
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
