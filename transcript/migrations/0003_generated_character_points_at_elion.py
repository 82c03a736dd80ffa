"""An image's generating character names the `elion` app (issue 45: the characters moved there, elion 0006).
State only: the column and its constraint already point at the same table, so nothing in the database changes
(on SQLite an AlterField would rebuild the table)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('elion', '0006_owner_settings_from_conversations'),
        ('transcript', '0002_content_types_follow_rows'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='attachment',
                    name='generated_character',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='generated_images', to='elion.character'),
                ),
            ],
        ),
    ]
