"""A manifest entry names its message's conversation (issue 18): a send reads a conversation's
manifests by that column, never joining the thread's messages, and no write through the app
makes the two differ (there is no SQL check across tables: `manifest_entries_conversation_settle`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from tests.support.attachment_files import png_bytes
from tests.support.factories import request_for, thread
from tests.support.fork import fork
from tests.support.manifests import sent_with
from transcript.attachments.generated import generated_image_store
from transcript.attachments.manifests import manifests_in_conversation
from transcript.attachments.projection import attachments_preverify
from transcript.models import Attachment, AttachmentKind, Conversation, Message, MessageAttachment, Role

pytestmark = pytest.mark.django_db(transaction=True)

# The message table by name: not `conversations_messageattachment`, not `conversations_messagesearchentry`.
MESSAGE_TABLE = re.compile(rf"\b{Message._meta.db_table}\b")


@pytest.fixture(autouse=True)
def attachment_root(settings, tmp_path) -> Path:
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    return settings.ELION_ATTACHMENT_ROOT


def entries_off_their_message() -> list[int]:
    return list(MessageAttachment.objects.exclude(conversation_id=F("message__conversation_id")).values_list("pk", flat=True))


def an_attachment(name: str = "photo.png") -> Attachment:
    data = png_bytes()
    return Attachment.objects.create(sha256="0" * 64, size=len(data), name=name, mime="image/png",
                                     kind=AttachmentKind.IMAGE)


def test_a_conversations_manifests_are_read_without_the_message_table():
    conversation = thread(("user", "Look at the harbour."), ("assistant", "I see it."))
    image, notes = sent_with(conversation, ("photo.png", png_bytes()), ("notes.md", b"# Notes\n"))
    (other_image,) = sent_with(thread(("user", "Another chat."), ("assistant", "Yes.")), ("other.png", png_bytes((1, 2, 3))))
    user_turn = Message.objects.get(conversation=conversation, role=Role.USER, content="see")

    with CaptureQueriesContext(connection) as queries:
        manifests = manifests_in_conversation(conversation.id)
    assert {message_id: [a.id for a in listed] for message_id, listed in manifests.items()} == {
        user_turn.id: [image.id, notes.id]
    }
    (statement,) = [query["sql"] for query in queries.captured_queries]
    assert not MESSAGE_TABLE.search(statement), statement

    # The send's verification before its lock reads them the same way.
    with CaptureQueriesContext(connection) as queries:
        parts = attachments_preverify(conversation_id=conversation.id, attachment_ids=()).parts
    assert set(parts) == {image.id, notes.id} and other_image.id not in parts
    assert not [q["sql"] for q in queries.captured_queries if MESSAGE_TABLE.search(q["sql"])]
    # The entries (with only the attachment columns a part needs: no row is read again) and the blobs' identities.
    assert len(queries.captured_queries) == 2, [q["sql"] for q in queries.captured_queries]


def test_a_send_reads_its_attachment_rows_once_before_its_lock_and_only_ids_under_it():
    conversation = thread(("user", "Hello."), ("assistant", "Hi."))
    image, notes = sent_with(conversation, ("photo.png", png_bytes()), ("notes.md", b"# Notes\n"))
    attachment_table = re.compile(rf"\b{Attachment._meta.db_table}\b")
    with CaptureQueriesContext(connection) as queries:
        send_prepare(SendCommand(conversation_id=conversation.id, content="And again?"))
    statements = [q["sql"] for q in queries.captured_queries]
    assert len([sql for sql in statements if attachment_table.search(sql)]) == 1, statements
    request = request_for(conversation)  # the parts still reach the request, in manifest order
    seen = [m for m in request.messages if m["role"] == "user" and isinstance(m["content"], list)]
    assert [part["type"] for part in seen[0]["content"]] == ["text", "image", "text"]


def test_a_send_lists_its_uploads_under_its_own_conversation():
    conversation = thread(("user", "Hello."), ("assistant", "Hi."))
    image, notes = sent_with(conversation, ("photo.png", png_bytes()), ("notes.md", b"# Notes\n"))
    entries = MessageAttachment.objects.filter(attachment__in=[image, notes])
    assert sorted(entries.values_list("conversation_id", flat=True)) == [conversation.id, conversation.id]
    assert entries_off_their_message() == []


def test_an_entry_takes_its_messages_conversation_and_refuses_another():
    conversation = thread(("user", "Hello."), ("assistant", "Hi."))
    other = thread(("user", "Elsewhere."), ("assistant", "Yes."))
    message = Message.objects.get(conversation=conversation, role=Role.USER)
    first, second, third = an_attachment("a.png"), an_attachment("b.png"), an_attachment("c.png")

    # Given only the message id, the entry takes the message row's conversation.
    entry = MessageAttachment.objects.create(message_id=message.id, position=0, attachment=first)
    assert MessageAttachment.objects.get(pk=entry.pk).conversation_id == conversation.id

    refused = "must name that message's conversation"
    with pytest.raises(ValueError, match=refused):
        MessageAttachment.objects.create(conversation=other, message=message, position=1, attachment=second)
    with pytest.raises(ValueError, match=refused):
        MessageAttachment.objects.bulk_create(
            [MessageAttachment(conversation_id=other.id, message_id=message.id, position=1, attachment=second)]
        )
    with pytest.raises(ValueError, match=refused):  # a message instance held, not read: its conversation is used
        MessageAttachment.objects.bulk_create(
            [MessageAttachment(conversation_id=conversation.id, message=message, position=1, attachment=second),
             MessageAttachment(conversation_id=other.id, message=message, position=2, attachment=third)]
        )
    with pytest.raises(ValueError, match="immutable"):
        MessageAttachment.objects.filter(pk=entry.pk).update(conversation=other)
    assert list(MessageAttachment.objects.values_list("pk", "conversation_id")) == [(entry.pk, conversation.id)]

    created = MessageAttachment.objects.bulk_create(
        [MessageAttachment(message_id=message.id, position=1, attachment=second)]
    )
    assert created[0].conversation_id == conversation.id and entries_off_their_message() == []


def test_a_fork_lists_its_copies_under_the_fork(client):
    source = thread(("user", "Hello."), ("assistant", "Hi."))
    image, notes = sent_with(source, ("photo.png", png_bytes()), ("notes.md", b"# Notes\n"))
    source.refresh_from_db()
    response = fork(client, source, Message.objects.get(pk=source.head_id))
    assert response.status_code == 201, response.content
    destination = response.json()["id"]

    copies = MessageAttachment.objects.filter(conversation_id=destination).order_by("position")
    assert [entry.attachment_id for entry in copies] == [image.id, notes.id]
    assert {entry.message.conversation_id for entry in copies} == {Conversation.objects.get(pk=destination).id}
    assert MessageAttachment.objects.filter(conversation=source).count() == 2  # the source's own, untouched
    assert entries_off_their_message() == []
    assert [a.id for listed in manifests_in_conversation(destination).values() for a in listed] == [image.id, notes.id]


def test_a_generated_image_is_listed_under_its_replys_conversation_only():
    conversation = thread(("user", "Draw the lighthouse."), ("assistant", "Here it is."))
    other = thread(("user", "Elsewhere."), ("assistant", "Yes."))
    conversation.refresh_from_db()
    record = {"prompt": "a lighthouse", "status": "complete"}
    attachment = generated_image_store(
        conversation_id=conversation.id, message_id=conversation.head_id, data=png_bytes(), mime="image/png",
        character_id=None, record=record,
    )
    assert MessageAttachment.objects.get(attachment=attachment).conversation_id == conversation.id
    # A reply of one conversation never lists an image stored for another.
    with pytest.raises(ValueError, match="must name that message's conversation"):
        generated_image_store(
            conversation_id=other.id, message_id=conversation.head_id, data=png_bytes((9, 9, 9)), mime="image/png",
            character_id=None, record=record,
        )
    assert MessageAttachment.objects.count() == 1 and entries_off_their_message() == []
