"""Keyword recall's database side: which past messages match (selectors only).

Searches the message index Past Conversation Search keeps
(`conversations.past_search`, `MessageSearchEntry`: SQLite FTS5 / PostgreSQL
GIN, tokens made in Python) through `elion.fulltext.matching_ids`, so the
same terms give the same candidates on both databases.

What may be recalled: live-branch user/assistant speech (`kind=ordinary`,
complete or interrupted) of other conversations that may feed automatic
continuity into this persona's thread (`continuity.eligibility`: never
hidden, trashed, Continuity-Shielded or the other persona's). Never the
current conversation or a handoff's source (the caller passes them in
`exclude`), never stored system prompts, tool parts or Branch handoff
bubbles (none of them is in the index).

Bounded work per send: one index query per term, at most
`CANDIDATES_PER_TERM` newest matches each, one query for those messages,
then a walk up from their conversations' heads (`live_message_ids`) for the
best-ranked few, to check that each sits on its live branch. Nothing loads
a whole table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from uuid import UUID

from django.db.models import Q

from continuity.eligibility import continuity_sources
from continuity.keyword_recall import RecallHit, words
from conversations.models import MessageKind, MessageStatus, Role

CANDIDATES_PER_TERM = 40
TITLE_SCAN_LIMIT = 200
RECALLABLE_ROLES = (Role.USER, Role.ASSISTANT)
RECALLABLE_STATUSES = (MessageStatus.COMPLETE, MessageStatus.INTERRUPTED)


def _sources(*, persona: str, exclude: Iterable[UUID]):
    return continuity_sources(persona=persona).exclude(pk__in=list(exclude))


def _candidate_entry_ids(terms: Sequence[str], *, persona: str, exclude: Iterable[UUID]) -> set[int]:
    from conversations.past_search import ENTRY_TABLE, FTS_TABLE, VECTOR_COLUMN
    from elion.fulltext import matching_ids

    sources = _sources(persona=persona, exclude=exclude).order_by().values("pk")
    sources_sql, sources_params = sources.query.sql_with_params()
    found: set[int] = set()
    for term in terms:
        found.update(
            matching_ids(
                table=ENTRY_TABLE,
                fts_table=FTS_TABLE,
                terms=[term],
                limit=CANDIDATES_PER_TERM,
                where=f"AND c.conversation_id IN ({sources_sql})",
                params=sources_params,
                vector_column=VECTOR_COLUMN,  # PostgreSQL's GIN index is on this stored column
            )
        )
    return found


def live_message_ids(hits: Sequence[RecallHit]) -> set[str]:
    """Which of `hits` sit on their conversation's live branch.

    One recursive query walks up from each conversation's head through
    parent links, and stops below the conversation's oldest hit (a parent's
    seq is always smaller than its child's), so it reads only that tail of
    each conversation, ids and parents only, and answers just the hits it met.
    """
    from django.db import connection

    from conversations.models import Message

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

    def db(value: str):
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
    from conversations.models import Message
    from conversations.past_search import message_search_index_sync

    terms = [term for term in dict.fromkeys(terms) if term]
    if not terms:
        return []
    exclude = list(exclude)
    message_search_index_sync()  # index the newest messages (the last reply) before searching
    entry_ids = _candidate_entry_ids(terms, persona=persona, exclude=exclude)
    if not entry_ids:
        return []
    rows = Message.objects.filter(
        search_entry__id__in=entry_ids,
        role__in=RECALLABLE_ROLES,
        kind=MessageKind.ORDINARY,
        status__in=RECALLABLE_STATUSES,
    ).values_list(
        "id", "conversation_id", "conversation__title", "conversation__head_id", "role", "content", "created_at",
        "seq",
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
        )
        for pk, conversation_id, title, head_id, role, content, created_at, seq in rows
        if content.strip()
    ]


def title_terms(terms: Sequence[str], *, persona: str, exclude: Iterable[UUID]) -> frozenset[str]:
    """Which of `terms` occur as whole words in the title of a recallable conversation.

    `icontains` folds only ASCII case on SQLite, so the common spellings of
    each term are asked for too; the words themselves then decide.
    """
    terms = [term for term in dict.fromkeys(terms) if term]
    if not terms:
        return frozenset()
    condition = Q()
    for term in terms:
        condition |= Q(title__icontains=term)
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


def handoff_source_ids(conversation_id: UUID) -> set[UUID]:
    """The conversations this thread's handoffs came from (New Chat continuity or Branch)."""
    from continuity.models import ThreadHandoff
    from conversations.models import Message

    sources = set(
        ThreadHandoff.objects.filter(destination_id=conversation_id, source__isnull=False).values_list(
            "source_id", flat=True
        )
    )
    for metadata in Message.objects.filter(
        conversation_id=conversation_id, kind=MessageKind.HANDOFF_ARTIFACT
    ).values_list("metadata", flat=True):
        try:
            sources.add(UUID(str((metadata or {}).get("source_conversation_id"))))
        except (TypeError, ValueError):
            continue
    return sources
