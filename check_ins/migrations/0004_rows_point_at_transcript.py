"""The foreign keys to the transcript's rows name the `transcript` app (issue 45). State only: the
columns and constraints already point at the same tables, so nothing in the database changes
(on SQLite an AlterField would rebuild the table)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('check_ins', '0003_check_in_proposals'),
        ('transcript', '0001_rows_from_conversations'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='checkin',
                    name='conversation',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='check_ins', to='transcript.conversation'),
                ),
                migrations.AlterField(
                    model_name='checkinproposal',
                    name='conversation',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='check_in_proposals', to='transcript.conversation'),
                ),
                migrations.AlterField(
                    model_name='checkinrun',
                    name='conversation',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='transcript.conversation'),
                ),
            ],
        ),
    ]
