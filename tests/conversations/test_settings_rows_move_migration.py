"""The owner's settings rows join the `elion` app without moving any data (issue 45: elion 0006 and 0007, the
transcript's state-only foreign key to a character in transcript 0003, conversations 0034), on SQLite and
PostgreSQL, and back.

A throwaway database of the suite's kind, driven through `manage.py` subprocesses: migrated to just before
the move (every app at its last migration that does not need elion 0006), given rows through the models of
that state (the assistant's settings, a character and an image it generated, an audio usage row, an admin
log entry and a permission on the character), then migrated forward. The rows, their tables' names, the
sequences (a row written after the move takes the next id) and the content type's id must all still be
there; then back to the state before the move, and forward again.
"""

from __future__ import annotations

import pytest

from tests.support.migrating_instance import before_the_move, last_json, migrating_instance

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BEFORE_THE_MOVE = before_the_move(("elion", "0006_owner_settings_from_conversations"))

MIGRATE_TO_BEFORE = BEFORE_THE_MOVE + """
executor.migrate(targets)
print(1)
"""

ROWS_BEFORE = BEFORE_THE_MOVE + """
import json
apps = executor.loader.project_state(targets).apps
get = apps.get_model
get("conversations", "AssistantSettings").objects.create(pk=1, display_name="Lantern", voice="cedar",
                                                          backup_schedule="weekly", check_in_proposals=False)
keeper = get("conversations", "Character").objects.create(name="Harbour keeper", image_guidance="Oilskin coat.")
conversation = get("transcript", "Conversation").objects.create(title="before the move")
image = get("transcript", "Attachment").objects.create(sha256="b" * 64, size=1, name="keeper.png", mime="image/png",
                                                       kind="image", generated=True, generated_character=keeper)
usage = get("conversations", "AudioUsage").objects.create(kind="speech", model="gpt-4o-mini-tts", characters=42)
content_types = get("contenttypes", "ContentType")
character_type, _ = content_types.objects.get_or_create(app_label="conversations", model="character")
permission = get("auth", "Permission").objects.create(content_type=character_type, codename="change_character",
                                                      name="Can change character")
owner = get("auth", "User").objects.create(username="owner")
owner.user_permissions.add(permission)
get("admin", "LogEntry").objects.create(user=owner, content_type=character_type, object_id=str(keeper.pk),
                                        object_repr="Harbour keeper", action_flag=2, change_message="[]")
print(json.dumps({"character": keeper.pk, "image": str(image.pk), "usage": usage.pk,
                  "character_type": character_type.pk}))
"""

READ_AFTER = """
import json
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from elion.models import AssistantSettings, AudioUsage, Character
from transcript.models import Attachment
settings = AssistantSettings.objects.get(pk=1)
added = Character.objects.create(name="Lamplighter")
character_type = ContentType.objects.get_for_model(Character)
tables = set(connection.introspection.table_names())
print(json.dumps({
    "settings": [settings.display_name, settings.voice, settings.backup_schedule, settings.check_in_proposals],
    "characters": list(Character.objects.order_by("pk").values_list("pk", "name")),
    "image": [str(Attachment.objects.get().pk), Attachment.objects.get().generated_character.name],
    "usage": list(AudioUsage.objects.values_list("pk", "kind", "characters")),
    "character_type": [character_type.pk, character_type.app_label],
    "log_entry": [LogEntry.objects.get().content_type_id, LogEntry.objects.get().get_edited_object().name],
    "may_change": User.objects.get(username="owner").has_perm("elion.change_character"),
    "stale_types": list(ContentType.objects.filter(app_label="conversations").values_list("model", flat=True)),
    "tables": sorted(t for t in tables if t.endswith(("assistantsettings", "character", "audiousage"))),
    "added": added.pk,
}))
"""

READ_BACK = """
import json
from django.db import connection
with connection.cursor() as cursor:
    counts = {}
    for table in ("conversations_assistantsettings", "conversations_character", "conversations_audiousage"):
        cursor.execute(f"SELECT COUNT(*) FROM {table}")
        counts[table] = cursor.fetchone()[0]
    cursor.execute("SELECT app_label FROM django_content_type WHERE model = 'character' ORDER BY app_label")
    labels = [row[0] for row in cursor.fetchall()]
print(json.dumps({"counts": counts, "labels": labels}))
"""


@pytest.fixture
def instance_before_the_move(tmp_path):
    with migrating_instance(tmp_path) as instance:
        assert last_json(instance, MIGRATE_TO_BEFORE) == 1
        yield instance


@pytest.mark.timeout(600)  # seven `manage.py` processes, three of them migrating, as the transcript's move test
def test_the_settings_rows_join_the_elion_app_with_their_data_and_content_types_and_back(instance_before_the_move):
    instance = instance_before_the_move
    made = last_json(instance, ROWS_BEFORE)

    instance.manage("migrate", "--noinput")
    after = last_json(instance, READ_AFTER)

    assert after["settings"] == ["Lantern", "cedar", "weekly", False]
    assert after["characters"] == [[made["character"], "Harbour keeper"], [after["added"], "Lamplighter"]]
    assert after["added"] > made["character"], "the table's sequence carried on"
    assert after["image"] == [made["image"], "Harbour keeper"]
    assert after["usage"] == [[made["usage"], "speech", 42]]
    # No table was made or renamed: the models read the conversations_* tables.
    assert after["tables"] == [
        "conversations_assistantsettings", "conversations_audiousage", "conversations_character"
    ]
    # The content type row was renamed, not replaced: its id, the admin's log entry and the permission follow.
    assert after["character_type"] == [made["character_type"], "elion"]
    assert after["log_entry"] == [made["character_type"], "Harbour keeper"]
    assert after["may_change"] is True
    assert not {"assistantsettings", "audiousage", "character"} & set(after["stale_types"])

    instance.manage("migrate", "--noinput", "elion", "0005_restore_runs")
    back = last_json(instance, READ_BACK)
    assert back == {
        "counts": {"conversations_assistantsettings": 1, "conversations_character": 2, "conversations_audiousage": 1},
        "labels": ["conversations"],
    }

    instance.manage("migrate", "--noinput")
    assert last_json(instance, READ_BACK)["labels"] == ["elion"]
