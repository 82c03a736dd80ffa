"""PostgreSQL only: each message search row's vector also holds its conversation (issue 18).

Keyword recall never searches the current thread (nor a handoff's sources).
SQLite's FTS5 table learned the row's conversation in migration 0013, so a
MATCH skips the current thread inside its doclists. This gives PostgreSQL the
same: the generated `search_vector` also holds one lexeme naming the row's
conversation, `conversation:<32 hex digits>`, which no tokenised text can
produce (`elion.base.fulltext` makes tokens of letters and digits only). Recall
asks for `terms & !conversation:<current>` (`search_index.tsquery_excluding`),
so the GIN index leaves the current thread's rows out of a term's bitmap and
an id-ordered walk refuses them on the vector alone, without the eligibility
probe. Before, a term the current thread used often was fetched row by row
from the thread, however long, and then refused.

The column is generated, so it is dropped and added again with the new
expression (PostgreSQL 15 cannot change a generation expression in place),
and the GIN index is built again. Search text and every id are unchanged.
"""

from django.db import migrations

from elion.base.db.vendor_sql import vendor_statements

ENTRY = "conversations_messagesearchentry"
TEXT_VECTOR = "to_tsvector('simple', coalesce(search_text, ''))"
# uuid → text is immutable (text || uuid would not be, which a generated column refuses).
CONVERSATION_LEXEME = "array_to_tsvector(ARRAY['conversation:' || replace(conversation_id::text, '-', '')])"


def _vector(expression: str) -> list[str]:
    return [
        "DROP INDEX IF EXISTS message_search_gin",
        f"ALTER TABLE {ENTRY} DROP COLUMN IF EXISTS search_vector",
        f"ALTER TABLE {ENTRY} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({expression}) STORED",
        f"CREATE INDEX message_search_gin ON {ENTRY} USING gin (search_vector)",
    ]


class Migration(migrations.Migration):
    dependencies = [("conversations", "0015_manifest_conversation")]

    operations = [
        migrations.RunPython(
            vendor_statements({"postgresql": _vector(f"{TEXT_VECTOR} || {CONVERSATION_LEXEME}")}),
            vendor_statements({"postgresql": _vector(TEXT_VECTOR)}),
        ),
    ]
