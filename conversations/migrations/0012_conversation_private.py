"""Private chats (issue 22): the `private` flag and the hourly django-q2 schedule that
deletes forever the private chats inactive for `ELION_PRIVATE_CHAT_DAYS`
(`conversations.tasks.expire_private_chats`)."""

from django.db import migrations, models

EXPIRE_TASK = "conversations.tasks.expire_private_chats"
EXPIRE_NAME = "expire private chats"


def add_expiry_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(name=EXPIRE_NAME, defaults={"func": EXPIRE_TASK, "schedule_type": "H", "repeats": -1})


def remove_expiry_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(name=EXPIRE_NAME).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("conversations", "0011_attachment_blob_identity"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="private",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(add_expiry_schedule, remove_expiry_schedule),
    ]
