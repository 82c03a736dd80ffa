"""Manifest entries know their conversation (issue 18: a send's cost must not grow with thread length).

A send reads every attachment manifest entry of its conversation. Until now
that joined the conversation's messages (`message__conversation_id`), a cost
that grew with the thread. Each entry now carries its message's
conversation, read by the index `(conversation, message, position)`.

1. The column is added nullable.
2. Each existing entry takes its message's conversation, inside the database:
   one UPDATE per batch of `FILL_BATCH` ids, its value a correlated subquery
   on the message row. (On PostgreSQL the foreign-key checks the UPDATEs
   queued are then run at once, so the ALTER below meets no pending trigger
   events.)
3. The column becomes NOT NULL, and the index is added. The default ordering
   names the columns (`message_id`, `position`): ordering by `message` joined
   the message and conversation tables into every unordered read.

The app keeps the column equal to the message's conversation on every write
(`conversations.models.manifest_entries_conversation_settle`); SQL cannot
check a rule across two tables.
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Max, Min, OuterRef, Subquery

FILL_BATCH = 5_000


def manifest_conversations_fill(apps, schema_editor) -> None:
    """Every entry without a conversation takes its message's, one UPDATE per batch of ids."""
    entry_model = apps.get_model("conversations", "MessageAttachment")
    message_model = apps.get_model("conversations", "Message")
    owner = Subquery(message_model.objects.filter(pk=OuterRef("message_id")).values("conversation_id")[:1])
    bounds = entry_model.objects.filter(conversation__isnull=True).aggregate(low=Min("pk"), high=Max("pk"))
    if bounds["low"] is None:
        return
    for start in range(bounds["low"], bounds["high"] + 1, FILL_BATCH):
        entry_model.objects.filter(
            pk__gte=start, pk__lt=start + FILL_BATCH, conversation__isnull=True
        ).update(conversation=owner)
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")


class Migration(migrations.Migration):
    dependencies = [("conversations", "0014_image_generation")]

    operations = [
        migrations.AddField(
            model_name="messageattachment",
            name="conversation",
            field=models.ForeignKey(
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="manifest_entries",
                to="conversations.conversation",
            ),
        ),
        migrations.RunPython(manifest_conversations_fill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="messageattachment",
            name="conversation",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="manifest_entries",
                to="conversations.conversation",
            ),
        ),
        migrations.AlterModelOptions(
            name="messageattachment",
            options={"ordering": ["message_id", "position"]},
        ),
        migrations.AddIndex(
            model_name="messageattachment",
            index=models.Index(fields=["conversation", "message", "position"], name="manifest_conversation_order"),
        ),
    ]
