"""Documents imported from a Claude.ai export say so: `DocumentSource.CLAUDE` ("claude").

Only the field's choices change; neither database alters a column.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0004_import_jobs"),
    ]

    operations = [
        migrations.AlterField(
            model_name="archivedocument",
            name="source",
            field=models.CharField(
                choices=[
                    ("text", "Plain text"),
                    ("markdown", "Markdown"),
                    ("conversation_export", "Elion conversation export"),
                    ("chatgpt", "ChatGPT export"),
                    ("claude", "Claude.ai export"),
                ],
                default="text",
                max_length=30,
            ),
        ),
    ]
