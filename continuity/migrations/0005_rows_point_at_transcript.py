"""The foreign keys to the transcript's rows name the `transcript` app (issue 45). State only: the
columns and constraints already point at the same tables, so nothing in the database changes
(on SQLite an AlterField would rebuild the table)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('continuity', '0004_conversation_compaction'),
        ('transcript', '0001_rows_from_conversations'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='compaction',
                    name='conversation',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='compactions', to='transcript.conversation'),
                ),
                migrations.AlterField(
                    model_name='compaction',
                    name='through_message',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='transcript.message'),
                ),
                migrations.AlterField(
                    model_name='promptreconciliationfailure',
                    name='conversation',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='transcript.conversation'),
                ),
                migrations.AlterField(
                    model_name='threadhandoff',
                    name='destination',
                    field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='thread_handoff', to='transcript.conversation'),
                ),
                migrations.AlterField(
                    model_name='threadhandoff',
                    name='source',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='handoffs_given', to='transcript.conversation'),
                ),
            ],
        ),
    ]
