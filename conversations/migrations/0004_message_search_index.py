"""Past Conversation Search: an index row per searchable message, kept by triggers.

`MessageSearchEntry` holds one row per searchable message (user/assistant,
`kind=ordinary`, status complete or interrupted). Triggers on the message
table create, replace and remove those rows on every write path (ORM, bulk,
admin, raw SQL), leaving `search_text` NULL; `conversations.past_search`
tokenises pending rows in Python before each search, so both databases see
identical words (the recipe in `elion/base/fulltext.py`).

Full-text index over `search_text`: SQLite, an external-content FTS5 table
kept in step by triggers on the entry table; PostgreSQL, a stored generated
`search_vector` column (`to_tsvector('simple', search_text)`) with a GIN index.

SQLite drops a table's triggers when a migration rebuilds that table: a later
migration that alters `conversations_message` (or the entry table) must run
these statements again. `tests/conversations/visibility/test_past_search.py` fails if
the triggers are missing after all migrations.
"""

import django.db.models.deletion
from django.db import migrations, models

from elion.base.db.vendor_sql import vendor_statements

ENTRY = "conversations_messagesearchentry"
MESSAGE = "conversations_message"
FTS = "message_search_fts"
# Frozen here (a migration must not change with the code): which messages are searchable.
SEARCHABLE = "{row}.role IN ('user', 'assistant') AND {row}.kind = 'ordinary' AND {row}.status IN ('complete', 'interrupted')"

SQLITE_FORWARD = [
    f"""CREATE VIRTUAL TABLE {FTS} USING fts5(
        search_text, content='{ENTRY}', content_rowid='id', tokenize="unicode61 remove_diacritics 0"
    )""",
    f"""CREATE TRIGGER {FTS}_insert AFTER INSERT ON {ENTRY} BEGIN
        INSERT INTO {FTS}(rowid, search_text) VALUES (new.id, new.search_text);
    END""",
    f"""CREATE TRIGGER {FTS}_delete AFTER DELETE ON {ENTRY} BEGIN
        INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.id, old.search_text);
    END""",
    f"""CREATE TRIGGER {FTS}_update AFTER UPDATE ON {ENTRY} BEGIN
        INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.id, old.search_text);
        INSERT INTO {FTS}(rowid, search_text) VALUES (new.id, new.search_text);
    END""",
    f"""CREATE TRIGGER message_search_mark_insert AFTER INSERT ON {MESSAGE}
        WHEN {SEARCHABLE.format(row="new")}
    BEGIN
        INSERT INTO {ENTRY}(message_id, conversation_id, search_text) VALUES (new.id, new.conversation_id, NULL);
    END""",
    f"""CREATE TRIGGER message_search_mark_update AFTER UPDATE OF content, role, kind, status ON {MESSAGE}
        WHEN ({SEARCHABLE.format(row="new")}) OR ({SEARCHABLE.format(row="old")})
    BEGIN
        DELETE FROM {ENTRY} WHERE message_id = old.id;
        INSERT INTO {ENTRY}(message_id, conversation_id, search_text)
            SELECT new.id, new.conversation_id, NULL WHERE {SEARCHABLE.format(row="new")};
    END""",
    f"""CREATE TRIGGER message_search_mark_delete AFTER DELETE ON {MESSAGE} BEGIN
        DELETE FROM {ENTRY} WHERE message_id = old.id;
    END""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS message_search_mark_delete",
    "DROP TRIGGER IF EXISTS message_search_mark_update",
    "DROP TRIGGER IF EXISTS message_search_mark_insert",
    f"DROP TRIGGER IF EXISTS {FTS}_update",
    f"DROP TRIGGER IF EXISTS {FTS}_delete",
    f"DROP TRIGGER IF EXISTS {FTS}_insert",
    f"DROP TABLE IF EXISTS {FTS}",
]
POSTGRES_FORWARD = [
    # A stored vector (unknown to the ORM, kept by the database): matching stays
    # cheap even when the planner walks the primary key for ORDER BY id DESC LIMIT.
    f"ALTER TABLE {ENTRY} ADD COLUMN search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple', coalesce(search_text, ''))) STORED",
    f"CREATE INDEX message_search_gin ON {ENTRY} USING gin (search_vector)",
    f"""CREATE FUNCTION message_search_mark() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            DELETE FROM {ENTRY} WHERE message_id = OLD.id;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            IF {SEARCHABLE.format(row="NEW")} THEN
                INSERT INTO {ENTRY}(message_id, conversation_id, search_text) VALUES (NEW.id, NEW.conversation_id, NULL);
            END IF;
        END IF;
        RETURN NULL;
    END
    $$""",
    f"""CREATE TRIGGER message_search_mark_insert AFTER INSERT ON {MESSAGE} FOR EACH ROW
        WHEN ({SEARCHABLE.format(row="NEW")}) EXECUTE FUNCTION message_search_mark()""",
    f"""CREATE TRIGGER message_search_mark_update AFTER UPDATE OF content, role, kind, status ON {MESSAGE}
        FOR EACH ROW WHEN (({SEARCHABLE.format(row="NEW")}) OR ({SEARCHABLE.format(row="OLD")}))
        EXECUTE FUNCTION message_search_mark()""",
    f"""CREATE TRIGGER message_search_mark_delete AFTER DELETE ON {MESSAGE} FOR EACH ROW
        EXECUTE FUNCTION message_search_mark()""",
]
POSTGRES_BACKWARD = [
    f"DROP TRIGGER IF EXISTS message_search_mark_delete ON {MESSAGE}",
    f"DROP TRIGGER IF EXISTS message_search_mark_update ON {MESSAGE}",
    f"DROP TRIGGER IF EXISTS message_search_mark_insert ON {MESSAGE}",
    "DROP FUNCTION IF EXISTS message_search_mark()",
    "DROP INDEX IF EXISTS message_search_gin",
    f"ALTER TABLE {ENTRY} DROP COLUMN IF EXISTS search_vector",
]
# Messages that already exist become pending rows; the first search tokenises them.
BACKFILL = (
    f"INSERT INTO {ENTRY}(message_id, conversation_id, search_text) "
    f"SELECT m.id, m.conversation_id, NULL FROM {MESSAGE} m WHERE {SEARCHABLE.format(row='m')}"
)


class Migration(migrations.Migration):
    dependencies = [("conversations", "0003_character_studio")]

    operations = [
        migrations.CreateModel(
            name="MessageSearchEntry",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("search_text", models.TextField(blank=True, null=True)),
                (
                    "conversation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="conversations.conversation"
                    ),
                ),
                (
                    "message",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="search_entry",
                        to="conversations.message",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        condition=models.Q(("search_text__isnull", True)), fields=["id"], name="message_search_pending"
                    )
                ],
            },
        ),
        migrations.RunPython(
            vendor_statements({"sqlite": [*SQLITE_FORWARD, BACKFILL], "postgresql": [*POSTGRES_FORWARD, BACKFILL]}),
            vendor_statements({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        ),
    ]
