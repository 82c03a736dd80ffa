"""The assistant's settings, the characters and the audio usage rows now belong to the `elion` app (elion 0006,
issue 45): conversations forgets them, and with them its last models. State only: the tables stay, under their
`conversations_*` names, as elion's models.

After archive 0007, whose data migration reads the settings under `conversations.AssistantSettings`."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('archive', '0007_imported_voices'),
        ('conversations', '0033_transcript_rows_moved_out'),
        ('elion', '0006_owner_settings_from_conversations'),
        ('transcript', '0003_generated_character_points_at_elion'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name='AssistantSettings',
                ),
                migrations.DeleteModel(
                    name='AudioUsage',
                ),
                migrations.DeleteModel(
                    name='Character',
                ),
            ],
        ),
    ]
