"""Permanent deletion: the intent/receipt table, the generation stamp that hides a
conversation being deleted, and the django-q2 schedule that finishes deletions a
crash interrupted (`conversations.tasks.finish_pending_deletions`)."""

import django.db.models.manager
from django.db import migrations, models


TASK = "conversations.tasks.finish_pending_deletions"
NAME = "finish pending conversation deletions"


def add_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(name=NAME, defaults={"func": TASK, "schedule_type": "I", "minutes": 1, "repeats": -1})


def analyze_conversations(apps, schema_editor):
    """PostgreSQL: refresh the conversation table's statistics. Every continuity
    query now filters on the new `deletion_generation IS NULL`; with no statistics
    for it the planner guesses 0.5% of rows match and picks nested loops that run
    keyword recall's eligibility check thousands of times over (seen at 20,000
    conversations: 26 s for one query instead of milliseconds)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ANALYZE conversations_conversation")


def remove_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0007_message_stop_requested_at'),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='conversation',
            options={'base_manager_name': 'all_objects', 'ordering': ['-updated_at']},
        ),
        migrations.AlterModelManagers(
            name='conversation',
            managers=[
                ('objects', django.db.models.manager.Manager()),
                ('all_objects', django.db.models.manager.Manager()),
            ],
        ),
        migrations.AddField(
            model_name='conversation',
            name='deletion_generation',
            field=models.UUIDField(blank=True, editable=False, null=True),
        ),
        migrations.CreateModel(
            name='ConversationDeletion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('conversation_id', models.UUIDField(db_index=True)),
                ('generation', models.UUIDField(unique=True)),
                ('state', models.CharField(choices=[('pending', 'Pending'), ('complete', 'Complete')], default='pending', max_length=20)),
                ('next_step', models.CharField(blank=True, default='', max_length=50)),
                ('counts', models.JSONField(blank=True, default=dict)),
                ('claim', models.UUIDField(blank=True, null=True)),
                ('claimed_until', models.DateTimeField(blank=True, null=True)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('requested_at', models.DateTimeField(auto_now_add=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'indexes': [models.Index(fields=['state', 'claimed_until'], name='deletion_state_claim')],
            },
        ),
        migrations.RunPython(add_schedule, remove_schedule),
        migrations.RunPython(analyze_conversations, migrations.RunPython.noop),
    ]
