"""The transcript's rows join the `transcript` app without moving any data (issue 45: transcript 0001 and 0002,
the other apps' state-only foreign keys, conversations 0033), on SQLite and PostgreSQL, and back.

A throwaway database of the suite's kind, driven through `manage.py` subprocesses: migrated to just before
the move (every app at its last migration that does not need transcript 0001), given rows through the
models of that state (a thread with an attachment, rows of memories, continuity and artifacts naming it, an
admin log entry on a message), then migrated forward. The rows, the full-text triggers on the message table
(migration conversations 0022 says why a rebuild would lose them) and the content type's id must all still
be there; then back to the state before the move, and forward again.
"""

from __future__ import annotations

import pytest

from tests.support.migrating_instance import before_the_move, last_json, migrating_instance

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

MOVE = ("transcript", "0001_rows_from_conversations")

BEFORE_THE_MOVE = before_the_move(MOVE)

MIGRATE_TO_BEFORE = BEFORE_THE_MOVE + """
executor.migrate(targets)
print("ok")
"""

ROWS_BEFORE = BEFORE_THE_MOVE + """
import json
apps = executor.loader.project_state(targets).apps
get = apps.get_model
Conversation, Message = get("conversations", "Conversation"), get("conversations", "Message")
conversation = Conversation.objects.create(title="before the move", last_seq=2)
user = Message.objects.create(conversation=conversation, seq=1, role="user", content="lighthouse keeper",
                              branch_depth=0)
reply = Message.objects.create(conversation=conversation, parent=user, seq=2, role="assistant",
                               content="the lamp is lit", branch_depth=1)
Conversation.objects.filter(pk=conversation.pk).update(head=reply)
attachment = get("conversations", "Attachment").objects.create(
    sha256="a" * 64, size=1, name="notes.md", mime="text/markdown", kind="file")
get("conversations", "MessageAttachment").objects.create(
    conversation=conversation, message=user, position=0, attachment=attachment)
get("memories", "ConversationMemorySnapshot").objects.create(conversation=conversation, provenance="new_chat")
get("continuity", "ThreadHandoff").objects.create(destination=conversation, handoff="handed over")
get("artifacts", "Artifact").objects.create(title="plan", kind="markdown", conversation=conversation,
                                            message=reply, tool_call_id="call_1")
content_types = get("contenttypes", "ContentType")
message_type, _ = content_types.objects.get_or_create(app_label="conversations", model="message")
user_model = get("auth", "User")
owner = user_model.objects.create(username="owner")
get("admin", "LogEntry").objects.create(user=owner, content_type=message_type, object_id=str(user.pk),
                                        object_repr="lighthouse keeper", action_flag=2, change_message="[]")
print(json.dumps({"conversation": str(conversation.pk), "user": str(user.pk), "reply": str(reply.pk),
                  "message_type": message_type.pk}))
"""

TRIGGERS = """
def message_triggers():
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
                           "AND tbl_name = 'conversations_message' ORDER BY name")
        else:
            cursor.execute("SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger "
                           "WHERE tgrelid = 'conversations_message'::regclass AND NOT tgisinternal ORDER BY tgname")
        return [list(row) for row in cursor.fetchall()]
"""

READ_AFTER = TRIGGERS + """
import json
from django.db import connection
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from artifacts.models import Artifact
from continuity.models import ThreadHandoff
from memories.models import ConversationMemorySnapshot
from transcript.models import Conversation, Message, MessageAttachment, MessageSearchEntry
conversation = Conversation.objects.get(title="before the move")
added = Message.objects.create(conversation=conversation, parent=conversation.head, seq=3, role="user",
                               content="after the move")
message_type = ContentType.objects.get_for_model(Message)
print(json.dumps({
    "messages": sorted(Message.objects.filter(conversation=conversation).values_list("content", flat=True)),
    "head": str(conversation.head_id),
    "manifest": [str(e.message_id) for e in MessageAttachment.objects.filter(conversation=conversation)],
    "search_entries": sorted(str(m) for m in MessageSearchEntry.objects.filter(
        conversation=conversation).values_list("message_id", flat=True)),
    "added": str(added.pk),
    "snapshot": str(ConversationMemorySnapshot.objects.get().conversation.pk),
    "handoff": ThreadHandoff.objects.get().destination.title,
    "artifact": str(Artifact.objects.get().message.pk),
    "message_type": [message_type.pk, message_type.app_label],
    "log_entry": [LogEntry.objects.get().content_type_id, str(LogEntry.objects.get().get_edited_object().pk)],
    "stale_types": list(ContentType.objects.filter(app_label="conversations", model="message").values_list("pk", flat=True)),
    "triggers": message_triggers(),
}))
"""

READ_BACK = TRIGGERS + """
import json
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("SELECT COUNT(*) FROM conversations_message")
    messages = cursor.fetchone()[0]
    cursor.execute("SELECT app_label FROM django_content_type WHERE model = 'message' ORDER BY app_label")
    labels = [row[0] for row in cursor.fetchall()]
print(json.dumps({"messages": messages, "labels": labels, "triggers": message_triggers()}))
"""



@pytest.fixture
def instance_before_the_move(tmp_path):
    with migrating_instance(tmp_path) as instance:
        assert last_json(instance, MIGRATE_TO_BEFORE + "\nprint(1)") == 1
        yield instance


@pytest.mark.timeout(600)  # seven `manage.py` processes, three of them migrating: about 100 s on an idle machine
def test_the_rows_join_the_transcript_app_with_their_data_triggers_and_content_types_and_back(
    instance_before_the_move,
):
    instance = instance_before_the_move
    made = last_json(instance, ROWS_BEFORE)
    triggers_before = last_json(instance, READ_BACK)["triggers"]
    assert len(triggers_before) >= 3, "the search index's triggers are on the message table before the move"

    instance.manage("migrate", "--noinput")
    after = last_json(instance, READ_AFTER)

    assert after["messages"] == ["after the move", "lighthouse keeper", "the lamp is lit"]
    assert after["head"] == made["reply"] and after["manifest"] == [made["user"]]
    # The triggers survived (no table rebuild) and still index a message written after the move.
    assert after["triggers"] == triggers_before
    assert sorted([made["user"], made["reply"], after["added"]]) == after["search_entries"]
    assert after["snapshot"] == made["conversation"] and after["handoff"] == "before the move"
    assert after["artifact"] == made["reply"]
    # The content type row was renamed, not replaced: its id, and the admin's log entry on it, follow the model.
    assert after["message_type"] == [made["message_type"], "transcript"] and after["stale_types"] == []
    assert after["log_entry"] == [made["message_type"], made["user"]]

    instance.manage("migrate", "--noinput", "transcript", "zero")
    back = last_json(instance, READ_BACK)
    assert back == {"messages": 3, "labels": ["conversations"], "triggers": triggers_before}

    instance.manage("migrate", "--noinput")
    assert last_json(instance, READ_BACK)["labels"] == ["transcript"]
