"""The owner's settings rows join the `elion` app (issue 45) where they already are: the assistant's settings,
Character Studio's characters and the audio usage rows keep their `conversations_*` tables (`db_table`), so
the move is state only and no data moves. The transcript's foreign key to a character follows (transcript
0003), then conversations forgets the models (conversations 0034) and their content types follow them (elion
0007)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0033_transcript_rows_moved_out'),
        ('elion', '0005_restore_runs'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='AssistantSettings',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('owner_name', models.CharField(default='AUMA', max_length=100)),
                        ('display_name', models.CharField(default='Elion Voicefire', max_length=100)),
                        ('personality', models.CharField(choices=[('natural', 'Natural'), ('warm', 'Warm'), ('playful', 'Playful'), ('concise', 'Concise'), ('reflective', 'Reflective')], default='natural', max_length=20)),
                        ('custom_instructions', models.TextField(blank=True, default='')),
                        ('archive_access', models.BooleanField(default=False)),
                        ('web_search', models.BooleanField(default=False)),
                        ('provider_store_responses', models.BooleanField(default=False)),
                        ('reasoning_effort', models.CharField(choices=[('minimal', 'Minimal'), ('low', 'Low'), ('medium', 'Medium'), ('high', 'High')], default='medium', max_length=10)),
                        ('verbosity', models.CharField(choices=[('low', 'Low'), ('medium', 'Medium'), ('high', 'High')], default='medium', max_length=10)),
                        ('reasoning_summary_shown', models.BooleanField(default=True)),
                        ('image_generation', models.BooleanField(default=False)),
                        ('memory_suggestions', models.BooleanField(default=True)),
                        ('voice', models.CharField(default='marin', max_length=40)),
                        ('voice_instructions', models.TextField(blank=True, default='')),
                        ('read_aloud_auto', models.BooleanField(default=False)),
                        ('keep_voice_recordings', models.BooleanField(default=False)),
                        ('voice_language', models.CharField(blank=True, default='', max_length=8)),
                        ('backup_schedule', models.CharField(choices=[('off', 'Off'), ('daily', 'Daily'), ('weekly', 'Weekly')], default='daily', max_length=10)),
                        ('backup_hour', models.PositiveSmallIntegerField(default=3)),
                        ('backup_keep_daily', models.PositiveSmallIntegerField(default=7)),
                        ('backup_keep_weekly', models.PositiveSmallIntegerField(default=4)),
                        ('backup_keep_monthly', models.PositiveSmallIntegerField(default=12)),
                        ('push_shows_text', models.BooleanField(default=False)),
                        ('time_zone', models.CharField(default='UTC', max_length=64)),
                        ('check_in_proposals', models.BooleanField(default=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        'verbose_name': 'assistant settings',
                        'verbose_name_plural': 'assistant settings',
                        'db_table': 'conversations_assistantsettings',
                    },
                ),
                migrations.CreateModel(
                    name='AudioUsage',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('transcription', 'Transcription'), ('speech', 'Speech')], max_length=16)),
                        ('model', models.CharField(max_length=100)),
                        ('reported', models.CharField(default='none', max_length=16)),
                        ('seconds', models.FloatField(null=True)),
                        ('input_tokens', models.PositiveIntegerField(null=True)),
                        ('input_audio_tokens', models.PositiveIntegerField(null=True)),
                        ('input_text_tokens', models.PositiveIntegerField(null=True)),
                        ('output_tokens', models.PositiveIntegerField(null=True)),
                        ('characters', models.PositiveIntegerField(null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ],
                    options={
                        'db_table': 'conversations_audiousage',
                    },
                ),
                migrations.CreateModel(
                    name='Character',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('description', models.TextField(blank=True, default='')),
                        ('image_guidance', models.TextField(blank=True, default='')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        'db_table': 'conversations_character',
                        'ordering': ['name', 'id'],
                    },
                ),
            ],
        ),
    ]
