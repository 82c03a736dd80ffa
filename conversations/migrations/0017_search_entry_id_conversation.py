"""PostgreSQL only: an index of the message search rows' ids with each row's conversation beside it (issue 18).

Keyword recall reads the newest index rows of the other conversations first
(`continuity.rules.recall_store_postgres._walk_others_postgres`). A long current thread
holds the newest thousands of rows; walking the primary key read every one of
them (9–15 ms a term at 10,000 messages, bench/long_thread.py). This index
holds the conversation in its entries (`INCLUDE`), so an index-only scan walks
the ids down and leaves the current thread's rows out without reading them.

Index-only scans skip the table only for pages the visibility map marks
all-visible, which vacuum sets. The table is appended to and seldom changed,
so autovacuum's default trigger for inserts (a fifth of the table) would leave
the newest rows, the ones recall walks first, unmarked for long on a large
index: vacuum here after a hundredth instead.
"""

from django.db import migrations

from elion.base.db.vendor_sql import vendor_statements

ENTRY = "conversations_messagesearchentry"
INDEX = "message_search_id_conversation"


class Migration(migrations.Migration):
    dependencies = [("conversations", "0016_search_vector_conversation")]

    operations = [
        migrations.RunPython(
            vendor_statements({"postgresql": [
                f"CREATE UNIQUE INDEX IF NOT EXISTS {INDEX} ON {ENTRY} (id) INCLUDE (conversation_id)",
                f"ALTER TABLE {ENTRY} SET (autovacuum_vacuum_insert_scale_factor = 0.01)",
            ]}),
            vendor_statements({"postgresql": [
                f"DROP INDEX IF EXISTS {INDEX}",
                f"ALTER TABLE {ENTRY} RESET (autovacuum_vacuum_insert_scale_factor)",
            ]}),
        ),
    ]
