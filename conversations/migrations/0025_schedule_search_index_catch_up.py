"""Issue 41, item 18: a django-q2 schedule, every minute, that indexes any message left pending
(`conversations.tasks.index_pending_messages`): the indexing after a reply that timed out (a
database outage, a lock held too long) is retried here, as the reconciliation jobs retry theirs."""

from django.db import migrations

INDEX_TASK = "conversations.tasks.index_pending_messages"
INDEX_NAME = "index pending messages"


def add_index_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        name=INDEX_NAME, defaults={"func": INDEX_TASK, "schedule_type": "I", "minutes": 1, "repeats": -1}
    )


def remove_index_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(name=INDEX_NAME).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("conversations", "0024_message_page_indexes"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(add_index_schedule, remove_index_schedule)]
