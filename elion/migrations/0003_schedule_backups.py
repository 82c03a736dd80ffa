"""The scheduled backup: daily at 03:00 in the server's time zone (Settings → Backups moves it).

It runs only once a key and a destination are set (`operations.backup.runs`);
until then each run is refused with the reason, and nothing is written.
"""

from datetime import timedelta

from django.db import migrations
from django.utils import timezone

TASK = "conversations.tasks.scheduled_backup"
NAME = "elion scheduled backup"
HOUR = 3


def add_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    local = timezone.localtime(timezone.now())
    due = local.replace(hour=HOUR, minute=0, second=0, microsecond=0)
    if due <= local:
        due = timezone.make_aware(due.replace(tzinfo=None) + timedelta(days=1))
    Schedule.objects.using(schema_editor.connection.alias).get_or_create(
        name=NAME,
        defaults={"func": TASK, "schedule_type": "D", "repeats": -1, "next_run": due, "intended_date_kwarg": "slot"},
    )


def remove_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.using(schema_editor.connection.alias).filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("elion", "0002_backup_records"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(add_schedule, remove_schedule)]
