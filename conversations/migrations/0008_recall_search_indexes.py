"""PostgreSQL indexes for keyword recall's bounded searches (SQLite: nothing).

- A BRIN index on the message index's id: `continuity.rules.recall_store` reads a
  rare term's matches in id windows, a bitmap AND of the GIN index (the term)
  and this (the window), so only matching rows of the window are read. It is
  tiny (one range per 128 pages); `autosummarize` has autovacuum cover new
  pages soon, and pages not yet summarised are simply always read.
- A trigram GIN index on UPPER(title) (the expression Django's `icontains`
  compares): the skip rule's title check (`recall_search.title_terms`) no
  longer reads every conversation. `pg_trgm` ships with PostgreSQL and is a
  trusted extension, so the database owner may create it.
"""

from django.db import migrations

from elion.base.db.vendor_sql import vendor_statements

ENTRY = "conversations_messagesearchentry"
CONVERSATION = "conversations_conversation"

POSTGRES_FORWARD = [
    f"CREATE INDEX IF NOT EXISTS message_search_id_brin ON {ENTRY} USING brin (id) WITH (autosummarize = on)",
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    f"CREATE INDEX IF NOT EXISTS conversation_title_trgm ON {CONVERSATION} USING gin (UPPER(title::text) gin_trgm_ops)",
    f"ANALYZE {CONVERSATION}",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS conversation_title_trgm",
    "DROP INDEX IF EXISTS message_search_id_brin",
]


class Migration(migrations.Migration):
    dependencies = [("conversations", "0006_conversation_permanent_deletion")]

    operations = [migrations.RunPython(
            vendor_statements({"postgresql": POSTGRES_FORWARD}), vendor_statements({"postgresql": POSTGRES_BACKWARD})
        )]
