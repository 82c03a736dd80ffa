"""Stop: a streaming reply's stop request, visible to the run in any process.

A nullable column without a default, so SQLite adds it with `ALTER TABLE ADD
COLUMN` and keeps the search-index triggers of `0004_message_search_index`.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0005_attachments_and_garbage_collection_schedule"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="stop_requested_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
