"""What a send reads, read through indexes (issue 18: a send's cost must not grow with thread length).

1. The kept copy of a long thread (`transcript.tree_cache`) is
   brought up to date by reading a conversation's rows changed since a moment,
   its streaming rows and its stored prompt. Each of the three now has an
   index that starts with the conversation, so the read costs what changed,
   not the thread's length: `(conversation, updated_at)`, and a partial index
   of streaming rows per conversation (the stored prompt has its unique
   partial index already).
2. SQLite only: the full-text index of messages also indexes each row's
   conversation, so keyword recall, which never searches the current thread,
   says so in the MATCH (`… NOT conversation_id : "<id>"`) and FTS5 skips the
   current thread's rows inside its doclists. Before, every newest match of
   the current thread was joined and then refused by the eligibility probe:
   the longer the thread, the longer every recall. The table is rebuilt
   (triggers included) from the entry table; search text is unchanged.
"""

from django.db import migrations, models

from elion.base.db.vendor_sql import vendor_statements

ENTRY = "conversations_messagesearchentry"
FTS = "message_search_fts"

SQLITE_TRIGGERS_DROP = [
    f"DROP TRIGGER IF EXISTS {FTS}_update",
    f"DROP TRIGGER IF EXISTS {FTS}_delete",
    f"DROP TRIGGER IF EXISTS {FTS}_insert",
    f"DROP TABLE IF EXISTS {FTS}",
]


def _fts_create(columns: list[str]) -> list[str]:
    """The external-content FTS5 table over `columns` of the entry table, its three triggers, rebuilt."""
    names = ", ".join(columns)
    new = ", ".join(f"new.{column}" for column in columns)
    old = ", ".join(f"old.{column}" for column in columns)
    return [
        f"""CREATE VIRTUAL TABLE {FTS} USING fts5(
            {names}, content='{ENTRY}', content_rowid='id', tokenize="unicode61 remove_diacritics 0"
        )""",
        f"""CREATE TRIGGER {FTS}_insert AFTER INSERT ON {ENTRY} BEGIN
            INSERT INTO {FTS}(rowid, {names}) VALUES (new.id, {new});
        END""",
        f"""CREATE TRIGGER {FTS}_delete AFTER DELETE ON {ENTRY} BEGIN
            INSERT INTO {FTS}({FTS}, rowid, {names}) VALUES ('delete', old.id, {old});
        END""",
        f"""CREATE TRIGGER {FTS}_update AFTER UPDATE ON {ENTRY} BEGIN
            INSERT INTO {FTS}({FTS}, rowid, {names}) VALUES ('delete', old.id, {old});
            INSERT INTO {FTS}(rowid, {names}) VALUES (new.id, {new});
        END""",
        f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
    ]


class Migration(migrations.Migration):
    dependencies = [("conversations", "0012_conversation_private")]

    operations = [
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["conversation", "updated_at"], name="message_conversation_changed"),
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(
                fields=["conversation"],
                condition=models.Q(("status", "streaming")),
                name="message_conversation_streaming",
            ),
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(
                fields=["conversation"],
                condition=models.Q(("kind", "handoff_artifact")),
                name="message_conversation_handoff",
            ),
        ),
        migrations.AddIndex(
            model_name="messagesearchentry",
            index=models.Index(fields=["conversation", "id"], name="message_search_conv_newest"),
        ),
        migrations.RunPython(
            vendor_statements({"sqlite": [*SQLITE_TRIGGERS_DROP, *_fts_create(["search_text", "conversation_id"])]}),
            vendor_statements({"sqlite": [*SQLITE_TRIGGERS_DROP, *_fts_create(["search_text"])]}),
        ),
    ]
