"""A send reads, composes, then writes once: every read comes before the first write, and its messages (the
stored prompt on a first send, the user turn, the reply) are appended in one insert, with one update of
the conversation (docs/send_path.md)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from transcript.append import TranscriptAppend, transcript_write
from transcript.models import Conversation, Message, MessageStatus, Role

pytestmark = pytest.mark.django_db(transaction=True)

WRITES = ("INSERT", "UPDATE", "DELETE")


def _statements(conversation: Conversation, content: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        send_prepare(SendCommand(conversation_id=conversation.id, content=content))
    return [query["sql"] for query in queries.captured_queries]


def _finish(conversation: Conversation) -> None:
    conversation.refresh_from_db()
    Message.objects.filter(pk=conversation.head_id).update(status=MessageStatus.COMPLETE, content="Hi.")


def _transaction_body(statements: list[str]) -> list[str]:
    return [sql for sql in statements if not sql.startswith(("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"))]


@pytest.fixture
def recalling(make_conversation, make_turns):
    """A thread past its birth period, and an older one recall finds for the message sent."""
    from elion.base.assistant_settings import assistant_settings_get

    assistant_settings_get()  # the settings row exists after the app's first use
    other = make_conversation(persona="elion", title="Lighthouse")
    make_turns(other, (Role.USER, "The lighthouse garden had foxgloves."), (Role.ASSISTANT, "Purple ones."))
    conversation = make_conversation(persona="elion")
    make_turns(conversation, (Role.USER, "hello"), (Role.ASSISTANT, "hi"))
    return conversation


@pytest.mark.parametrize("first", [True, False])
def test_a_send_reads_everything_before_its_first_write(recalling, first):
    if not first:
        _statements(recalling, "first")
        _finish(recalling)
    body = _transaction_body(_statements(recalling, "Do you remember the lighthouse foxgloves?"))
    first_write = next(index for index, sql in enumerate(body) if sql.startswith(WRITES))
    assert any("conversations_messagesearchentry" in sql for sql in body[:first_write])  # recall read first
    assert all(sql.startswith(WRITES) for sql in body[first_write:]), body[first_write:]


def test_a_first_send_appends_prompt_turn_and_reply_in_one_insert(recalling):
    body = _statements(recalling, "Do you remember the lighthouse foxgloves?")
    inserts = [sql for sql in body if sql.startswith("INSERT") and '"conversations_message"' in sql.split("(")[0]]
    assert len(inserts) == 1
    updates = [sql for sql in body if sql.startswith("UPDATE") and '"conversations_conversation"' in sql]
    assert len(updates) == 1
    rows = list(Message.objects.filter(conversation=recalling).order_by("seq"))
    assert [row.role for row in rows][-3:] == [Role.SYSTEM, Role.USER, Role.ASSISTANT]
    recalling.refresh_from_db()
    assert recalling.last_seq == rows[-1].seq and recalling.head_id == rows[-1].id


def test_composing_writes_nothing_and_leaves_the_conversation_as_it_is(make_conversation):
    conversation = make_conversation(persona="elion")
    before = conversation.last_seq
    appending = TranscriptAppend(conversation)
    with CaptureQueriesContext(connection) as queries:
        turn = appending.add(parent=None, role=Role.USER, binding=None, make_head=False, content="a")
        reply = appending.add(parent=turn, role=Role.ASSISTANT, binding=None, make_head=True, content="b")
    assert not queries.captured_queries
    assert conversation.last_seq == before and (turn.seq, reply.seq) == (before + 1, before + 2)
    transcript_write(appending)
    conversation.refresh_from_db()
    assert (conversation.last_seq, conversation.head_id) == (before + 2, reply.id)
    assert Message.objects.get(pk=reply.pk).parent_id == turn.id


def test_a_composed_parent_must_be_an_earlier_message_of_the_same_conversation(make_conversation):
    one, other = make_conversation(persona="elion"), make_conversation(persona="elion")
    foreign = TranscriptAppend(other).add(parent=None, role=Role.USER, binding=None, make_head=False, content="x")
    with pytest.raises(ValueError, match="earlier message of the same conversation"):
        TranscriptAppend(one).add(parent=foreign, role=Role.ASSISTANT, binding=None, make_head=True, content="y")
