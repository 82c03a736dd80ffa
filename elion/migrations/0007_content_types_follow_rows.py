"""The content types of the moved rows follow them (issue 45): conversations.<model> becomes elion.<model>, as
transcript 0002 did for the transcript's rows.

Renaming the row (not making a new one) keeps its id, so the permissions and the admin's log entries that
name it follow the model. Where elion's row already exists (a `migrate` stopped between the two migrations,
whose post-migrate step made it), the log entries move to it and the old row is left for
`remove_stale_contenttypes`. Reversible: backwards renames them back.
"""

from django.db import migrations

MOVED = ("assistantsettings", "audiousage", "character")


def _relabel(apps, schema_editor, source, target):
    content_types = apps.get_model("contenttypes", "ContentType")
    log_entries = apps.get_model("admin", "LogEntry")
    database = schema_editor.connection.alias
    for model in MOVED:
        old = content_types.objects.using(database).filter(app_label=source, model=model).first()
        if old is None:
            continue
        new = content_types.objects.using(database).filter(app_label=target, model=model).first()
        if new is None:
            old.app_label = target
            old.save(update_fields=["app_label"])
        else:
            log_entries.objects.using(database).filter(content_type=old).update(content_type=new)
    content_types.objects.clear_cache()


def forwards(apps, schema_editor):
    _relabel(apps, schema_editor, "conversations", "elion")


def backwards(apps, schema_editor):
    _relabel(apps, schema_editor, "elion", "conversations")


class Migration(migrations.Migration):

    dependencies = [
        ("admin", "0003_logentry_add_action_flag_choices"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("conversations", "0034_owner_settings_moved_out"),
        ("elion", "0006_owner_settings_from_conversations"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
