"""The foreign keys to the transcript's rows name the `transcript` app (issue 45). State only: the
columns and constraints already point at the same tables, so nothing in the database changes
(on SQLite an AlterField would rebuild the table)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0003_prompt_generation'),
        ('transcript', '0001_rows_from_conversations'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='conversationmemorysnapshot',
                    name='conversation',
                    field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='memory_snapshot', serialize=False, to='transcript.conversation'),
                ),
                migrations.AlterField(
                    model_name='memoryproposal',
                    name='conversation',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='memory_proposals', to='transcript.conversation'),
                ),
                migrations.AlterField(
                    model_name='memoryproposal',
                    name='reply',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='transcript.message'),
                ),
                migrations.AlterField(
                    model_name='memoryproposal',
                    name='source_message',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='transcript.message'),
                ),
                migrations.AlterField(
                    model_name='snapshotmembership',
                    name='conversation',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memory_memberships', to='transcript.conversation'),
                ),
            ],
        ),
    ]
