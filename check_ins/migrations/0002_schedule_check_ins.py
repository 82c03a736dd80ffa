"""Issue 44: a django-q2 schedule, every minute, that claims the check-ins' due times and starts their runs
(`check_ins.tasks.check_ins_run_due`, `check_ins.services.runs`). The schedule only finds work: each due time
is claimed by its run row's UNIQUE (check_in, due_at) key, so a pass run twice (two clusters, a restart)
claims nothing twice."""

from django.db import migrations

TASK = "check_ins.tasks.check_ins_run_due"
NAME = "run due check-ins"


def add_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.using(schema_editor.connection.alias).get_or_create(
        name=NAME, defaults={"func": TASK, "schedule_type": "I", "minutes": 1, "repeats": -1}
    )


def remove_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.using(schema_editor.connection.alias).filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("check_ins", "0001_check_ins_and_runs"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(add_schedule, remove_schedule)]
