"""Every minute, django-q2 checks whether stored prompts still need reconciling.

The tick returns at once when completion is recorded for the current policy
version; otherwise it enqueues bounded batches (see `continuity.tasks`).
"""

from django.db import migrations

TASK = "continuity.tasks.prompts_reconcile_tick"
NAME = "reconcile stale stored prompts"


def add_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(name=NAME, defaults={"func": TASK, "schedule_type": "I", "minutes": 1, "repeats": -1})


def remove_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("continuity", "0002_prompt_reconciliation"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(add_schedule, remove_schedule)]
