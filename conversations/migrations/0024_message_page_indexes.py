"""Two indexes of each conversation's rows for the chat page and the message list (issue 40).

`message_conversation_binding`: the page's binding check finds a thread's few distinct combinations
by one index seek each (`transcript.provider.binding_groups`) instead of grouping every row of the
thread. `message_conversation_parent`: a window's versions (its parents' children, and the
conversation's roots: `transcript.siblings.children_read`) are read by their parents, where a
planner without statistics read the whole thread along another index that starts with the
conversation.

On SQLite the new indexes are analyzed at once: in a database whose other indexes have statistics
(`ANALYZE` was ever run), an index without any looks to the planner like a selective one on
`conversation_id`, and it would read a whole thread through it where a primary-key lookup is
meant. PostgreSQL plans from the columns' own statistics and needs nothing.
"""

from django.db import migrations, models

from elion.base.db.vendor_sql import vendor_statements


class Migration(migrations.Migration):

    dependencies = [
        ("conversations", "0023_conversation_prompt_stale_and_recent"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="message",
            index=models.Index(
                fields=["conversation", "role", "kind", "provider_id", "provider_type", "model", "route_fingerprint"],
                name="message_conversation_binding",
            ),
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["conversation", "parent"], name="message_conversation_parent"),
        ),
        migrations.RunPython(
            vendor_statements({"sqlite": ["ANALYZE message_conversation_binding", "ANALYZE message_conversation_parent"]}), migrations.RunPython.noop
        ),
    ]
