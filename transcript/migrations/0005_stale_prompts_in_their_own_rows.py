"""A stored prompt's stale mark moves from a column of its conversation to a row of its own (`StalePrompt`):
every conversation marked now keeps its mark, as a row, before the column goes. A mark written on the
conversation row rewrote that wide row and all its indexes, under the operation's row locks (issue 40)."""

import django.db.models.deletion
from django.db import migrations, models


def marks_to_rows(apps, schema_editor):
    """Every conversation whose `prompt_stale` is set gets its `StalePrompt` row."""
    Conversation = apps.get_model("transcript", "Conversation")
    StalePrompt = apps.get_model("transcript", "StalePrompt")
    marked = Conversation._base_manager.filter(prompt_stale=True).values_list("pk", flat=True).iterator()
    StalePrompt.objects.bulk_create((StalePrompt(conversation_id=pk) for pk in marked), batch_size=500)


def marks_to_column(apps, schema_editor):
    Conversation = apps.get_model("transcript", "Conversation")
    StalePrompt = apps.get_model("transcript", "StalePrompt")
    Conversation._base_manager.filter(pk__in=StalePrompt.objects.values("conversation_id")).update(prompt_stale=True)


class Migration(migrations.Migration):

    dependencies = [
        ('transcript', '0004_partial_indexes_keyed_by_their_condition'),
    ]

    operations = [
        migrations.CreateModel(
            name='StalePrompt',
            fields=[
                ('conversation', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='stale_prompt', serialize=False, to='transcript.conversation')),
            ],
            options={
                'db_table': 'transcript_stale_prompt',
            },
        ),
        migrations.RunPython(marks_to_rows, marks_to_column),
        migrations.RemoveIndex(
            model_name='conversation',
            name='conversation_prompt_stale',
        ),
        migrations.RemoveField(
            model_name='conversation',
            name='prompt_stale',
        ),
    ]
