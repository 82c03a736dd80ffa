"""Migration 0015 (manifest entries know their conversation) fills every existing entry from its message.

Run on a throwaway database of the suite's kind (SQLite: a new file; PostgreSQL: a new database on the
same server) through `manage.py` subprocesses, never the test database: migrated to 0014, given entries
through the 0014 models (ids spread over several of the fill's batches), then migrated forward.
"""

from __future__ import annotations

import pytest

from tests.support.migrating_instance import last_json, migrating_instance

# Each test migrates a fresh instance in `manage.py` subprocesses (about 10 s idle): CI's load once took one
# past the suite's 120 s timeout (a whole `migrate` from 0014 on PostgreSQL, with other processes testing).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

BEFORE = "0014_image_generation"

# Two conversations (the second a fork listing the first's attachment again), entries at ids far apart.
ENTRIES_AT_0014 = f"""
import json
from django.db import connection
from django.db.migrations.loader import MigrationLoader
apps = MigrationLoader(connection).project_state(("conversations", "{BEFORE}")).apps
Conversation, Message = apps.get_model("conversations", "Conversation"), apps.get_model("conversations", "Message")
Attachment, Entry = apps.get_model("conversations", "Attachment"), apps.get_model("conversations", "MessageAttachment")
made = []
for n, ids in enumerate([(1, 2, 4_999), (5_000, 12_001)]):
    conversation = Conversation.objects.create(title=f"chat {{n}}", last_seq=2)
    user = Message.objects.create(conversation=conversation, seq=1, role="user", content="see")
    reply = Message.objects.create(conversation=conversation, parent=user, seq=2, role="assistant", content="seen")
    for position, pk in enumerate(ids):
        attachment = Attachment.objects.create(sha256=str(pk).rjust(64, "0"), size=1, name=f"{{pk}}.md",
                                               mime="text/markdown", kind="file")
        Entry.objects.create(pk=pk, message=user if position % 2 == 0 else reply, position=position,
                             attachment=attachment)
        made.append([pk, str(conversation.pk)])
print(json.dumps(made))
"""

ENTRIES_AFTER = """
import json
from django.db import IntegrityError, connection, transaction
from transcript.models import Attachment, MessageAttachment
rows = [[pk, str(c), str(m)] for pk, c, m in
        MessageAttachment.objects.order_by("pk").values_list("pk", "conversation_id", "message__conversation_id")]
spare = Attachment.objects.create(sha256="f" * 64, size=1, name="spare.md", mime="text/markdown", kind="file")
entry = MessageAttachment.objects.get(pk=rows[0][0])
as_db = (lambda value: value.hex) if connection.vendor == "sqlite" else (lambda value: value)

def inserted(conversation_id):
    # past the app's check, straight into the table
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                # An explicit id: the entries above were given theirs, so PostgreSQL's sequence never moved.
                "INSERT INTO conversations_messageattachment (id, message_id, position, attachment_id, conversation_id) "
                "VALUES (99999, %s, 50, %s, %s)", [as_db(entry.message_id), as_db(spare.pk), conversation_id]
            )
        return True
    except IntegrityError:
        return False

print(json.dumps({"rows": rows, "null_accepted": inserted(None),
                  "accepted": inserted(as_db(entry.conversation_id))}))
"""



@pytest.fixture
def instance_at_0014(tmp_path):
    with migrating_instance(tmp_path) as instance:
        instance.manage("migrate", "--noinput", "conversations", BEFORE)
        yield instance


def test_migration_0015_gives_every_existing_manifest_entry_its_messages_conversation(instance_at_0014):
    made = last_json(instance_at_0014, ENTRIES_AT_0014)
    assert len(made) == 5 and len({conversation for _, conversation in made}) == 2

    instance_at_0014.manage("migrate", "--noinput")
    after = last_json(instance_at_0014, ENTRIES_AFTER)

    assert [[pk, conversation] for pk, conversation, _ in after["rows"]] == made
    assert all(conversation == of_message for _, conversation, of_message in after["rows"])
    assert after["null_accepted"] is False and after["accepted"] is True  # NOT NULL once filled
