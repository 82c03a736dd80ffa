from django.db import migrations

TASK = "conversations.tasks.interrupt_stale_streams"
NAME = "interrupt stale streams"


def add_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(name=NAME, defaults={"func": TASK, "schedule_type": "I", "minutes": 1, "repeats": -1})


def remove_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0001_transcript_tree"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(add_schedule, remove_schedule)]
