"""Message status `incomplete` (issue 31): the provider cut the reply off; its text is kept and searchable.

A cut-off reply is speech like an interrupted one, so Past Conversation Search indexes it: the
triggers of `0004_message_search_index` are written again with `incomplete` among the searchable
statuses, and existing rows need no backfill (none can have the new status yet).
"""

from django.db import migrations, models

from elion.base.db.vendor_sql import vendor_statements

ENTRY = "conversations_messagesearchentry"
MESSAGE = "conversations_message"
# Frozen here (a migration must not change with the code): which messages are searchable.
SEARCHABLE = (
    "{row}.role IN ('user', 'assistant') AND {row}.kind = 'ordinary' "
    "AND {row}.status IN ('complete', 'interrupted', 'incomplete')"
)
SEARCHABLE_BEFORE = (
    "{row}.role IN ('user', 'assistant') AND {row}.kind = 'ordinary' AND {row}.status IN ('complete', 'interrupted')"
)


def _sqlite(searchable: str) -> list[str]:
    return [
        "DROP TRIGGER IF EXISTS message_search_mark_insert",
        "DROP TRIGGER IF EXISTS message_search_mark_update",
        f"""CREATE TRIGGER message_search_mark_insert AFTER INSERT ON {MESSAGE}
            WHEN {searchable.format(row="new")}
        BEGIN
            INSERT INTO {ENTRY}(message_id, conversation_id, search_text) VALUES (new.id, new.conversation_id, NULL);
        END""",
        f"""CREATE TRIGGER message_search_mark_update AFTER UPDATE OF content, role, kind, status ON {MESSAGE}
            WHEN ({searchable.format(row="new")}) OR ({searchable.format(row="old")})
        BEGIN
            DELETE FROM {ENTRY} WHERE message_id = old.id;
            INSERT INTO {ENTRY}(message_id, conversation_id, search_text)
                SELECT new.id, new.conversation_id, NULL WHERE {searchable.format(row="new")};
        END""",
    ]


def _postgres(searchable: str) -> list[str]:
    return [
        f"""CREATE OR REPLACE FUNCTION message_search_mark() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                DELETE FROM {ENTRY} WHERE message_id = OLD.id;
            END IF;
            IF TG_OP <> 'DELETE' THEN
                IF {searchable.format(row="NEW")} THEN
                    INSERT INTO {ENTRY}(message_id, conversation_id, search_text) VALUES (NEW.id, NEW.conversation_id, NULL);
                END IF;
            END IF;
            RETURN NULL;
        END
        $$""",
        f"DROP TRIGGER IF EXISTS message_search_mark_insert ON {MESSAGE}",
        f"DROP TRIGGER IF EXISTS message_search_mark_update ON {MESSAGE}",
        f"""CREATE TRIGGER message_search_mark_insert AFTER INSERT ON {MESSAGE} FOR EACH ROW
            WHEN ({searchable.format(row="NEW")}) EXECUTE FUNCTION message_search_mark()""",
        f"""CREATE TRIGGER message_search_mark_update AFTER UPDATE OF content, role, kind, status ON {MESSAGE}
            FOR EACH ROW WHEN (({searchable.format(row="NEW")}) OR ({searchable.format(row="OLD")}))
            EXECUTE FUNCTION message_search_mark()""",
    ]


class Migration(migrations.Migration):
    dependencies = [("conversations", "0020_title_words")]

    operations = [
        migrations.AlterField(
            model_name="message",
            name="status",
            field=models.CharField(
                choices=[
                    ("streaming", "Streaming"), ("complete", "Complete"), ("interrupted", "Interrupted"),
                    ("failed", "Failed"), ("incomplete", "Incomplete"),
                ],
                default="complete",
                max_length=20,
            ),
        ),
        migrations.RunPython(
            vendor_statements({"sqlite": _sqlite(SEARCHABLE), "postgresql": _postgres(SEARCHABLE)}),
            vendor_statements({"sqlite": _sqlite(SEARCHABLE_BEFORE), "postgresql": _postgres(SEARCHABLE_BEFORE)}),
        ),
    ]
