"""The foreign keys to the transcript's rows name the `transcript` app (issue 45). State only: the
columns and constraints already point at the same tables, so nothing in the database changes
(on SQLite an AlterField would rebuild the table)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('artifacts', '0001_initial'),
        ('transcript', '0001_rows_from_conversations'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='artifact',
                    name='conversation',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='artifacts', to='transcript.conversation'),
                ),
                migrations.AlterField(
                    model_name='artifact',
                    name='message',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='artifacts_created', to='transcript.message'),
                ),
                migrations.AlterField(
                    model_name='artifactversion',
                    name='conversation',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='transcript.conversation'),
                ),
                migrations.AlterField(
                    model_name='artifactversion',
                    name='message',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='artifact_versions', to='transcript.message'),
                ),
            ],
        ),
    ]
