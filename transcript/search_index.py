"""The message search index: one row per searchable message, tokenised in Python.

Database triggers (migration `0004_message_search_index`) write a row with
`search_text` NULL on every message write; `message_search_index_sync`
tokenises the pending rows, and `message_matching_ids` is the one way to
query the index (Past Conversation Search, keyword recall, the model's
tool). Imports models and `elion.base.fulltext` only.
"""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from django.db import connection, transaction
from django.db.models import QuerySet

from elion.base.fulltext import matching_ids, search_text_for
from transcript.models import Conversation, MessageSearchEntry

INDEX_BATCH = 1_000
ENTRY_TABLE = MessageSearchEntry._meta.db_table
FTS_TABLE = "message_search_fts"
VECTOR_COLUMN = "search_vector"  # PostgreSQL only: the stored, generated tsvector of search_text
# PostgreSQL only: the vector's one lexeme naming the row's conversation (migration 0016), never a token of text.
CONVERSATION_LEXEME_PREFIX = "conversation:"


def message_search_index_sync(*, batch_size: int = INDEX_BATCH, exclude_conversation_ids: Iterable[UUID] = ()) -> int:
    """Tokenise every pending index row (written by the message triggers); returns how many.

    `exclude_conversation_ids`: conversations whose rows may stay pending (keyword
    recall never searches the recalling conversation, whose new turn a send has
    just written under its lock).

    A row is only ever replaced (a new id) when its message changes, so
    writing `search_text` by id can never put an old text on a newer row.
    The pending rows are read first (outside any transaction when the caller
    has none), so with nothing to index no write transaction starts: on
    SQLite that would take the database's write lock for nothing. Each batch
    writes in a transaction of its own; inside a caller's transaction (a
    send's recall) it takes no savepoint: a failure rolls the whole caller back.
    """
    excluded = list(exclude_conversation_ids)
    done = 0
    while True:
        pending = list(
            MessageSearchEntry.objects.filter(search_text__isnull=True)
            .exclude(conversation_id__in=excluded)
            .order_by("id")
            .values_list("id", "message__content")[:batch_size]
        )
        if pending:
            texts = [(pk, search_text_for(content or "")) for pk, content in pending]
            with transaction.atomic(savepoint=False):
                _search_texts_write(texts)
        done += len(pending)
        if len(pending) < batch_size:
            return done  # a short batch was the last one: no second query for the usual single new row


def _search_texts_write(rows: list[tuple[int, str]]) -> None:
    """One `UPDATE … FROM (VALUES …)` per batch (PostgreSQL, SQLite ≥ 3.33); `bulk_update`'s
    CASE chains made a first sync of a large archive take many times longer."""
    table = connection.ops.quote_name(ENTRY_TABLE)
    values = ", ".join(["(%s, %s)"] * len(rows))
    cast = "::bigint" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH v(id, search_text) AS (VALUES {values}) "
            f"UPDATE {table} SET search_text = v.search_text FROM v WHERE {table}.id = v.id{cast}",
            [value for row in rows for value in row],
        )


def message_search_texts_copy(pairs: Iterable[tuple[UUID, UUID]], *, batch_size: int = INDEX_BATCH) -> None:
    """Give each copied message's pending index row its original's tokens: `pairs` is
    (copy id, original id), and a copy has its original's content, so the tokens are the same.

    The text moves inside the database (one `UPDATE … FROM (VALUES …)` per batch),
    so a fork of a long thread neither reads nor tokenises it again. An original
    not yet indexed leaves its copy pending for `message_search_index_sync`.
    """
    table = connection.ops.quote_name(ENTRY_TABLE)
    cast = "::uuid" if connection.vendor == "postgresql" else ""
    field = MessageSearchEntry._meta.get_field("message").target_field
    pairs = list(pairs)
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start:start + batch_size]
        values = ", ".join(["(%s, %s)"] * len(batch))
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH v(copy_id, original_id) AS (VALUES {values}) "
                f"UPDATE {table} AS t SET search_text = o.search_text FROM v JOIN {table} o ON o.message_id = v.original_id{cast} "
                f"WHERE t.message_id = v.copy_id{cast} AND t.search_text IS NULL AND o.search_text IS NOT NULL",
                [field.get_db_prep_value(value, connection) for pair in batch for value in pair],
            )


def conversations_tsquery(conversation_ids: Iterable[UUID]) -> str:
    """PostgreSQL: the tsquery text matching the rows of any of `conversation_ids`
    (by their vector's conversation lexeme), to be negated: `terms && !! this`."""
    return " | ".join(f"'{CONVERSATION_LEXEME_PREFIX}{pk.hex}'" for pk in conversation_ids)


def message_matching_ids(terms: list[str], *, sources: QuerySet[Conversation], limit: int) -> list[int]:
    """Index-row ids (newest first) of messages in `sources` holding every term.

    The one way to query this index (Past Conversation Search, keyword recall,
    the model's tool): run `message_search_index_sync()` first.
    """
    sources_sql, sources_params = sources.order_by().values("pk").query.sql_with_params()
    return matching_ids(
        table=ENTRY_TABLE,
        fts_table=FTS_TABLE,
        terms=terms,
        limit=limit,
        where=f"AND c.conversation_id IN ({sources_sql})",
        params=sources_params,
        vector_column=VECTOR_COLUMN,
    )
