"""What one send asks the database before the first token (bench/send_overhead.py).

Run against the real database with recall in play: another thread's words
match the message, and the search index has a pending row to tokenise.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from transcript.models import Conversation, Message, MessageStatus, Role

pytestmark = pytest.mark.django_db(transaction=True)


def finish_reply(conversation: Conversation, text: str) -> None:
    conversation.refresh_from_db()
    Message.objects.filter(pk=conversation.head_id).update(
        status=MessageStatus.COMPLETE, content=text, lease_expires_at=None
    )


def send(conversation: Conversation, content: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        send_prepare(SendCommand(conversation_id=conversation.id, content=content))
    return [query["sql"] for query in queries.captured_queries]


def touching(statements: list[str], table: str) -> list[str]:
    return [sql for sql in statements if f'"{table}"' in sql]


@pytest.fixture
def threads(make_conversation, make_turns):
    from elion.base.assistant_settings import assistant_settings_get

    assistant_settings_get()  # the settings row exists after the app's first use
    other = make_conversation(persona="elion", title="Lighthouse")
    make_turns(other, (Role.USER, "The lighthouse garden had foxgloves."), (Role.ASSISTANT, "Purple ones."))
    return make_conversation(persona="elion")


def test_a_send_reads_the_settings_once_and_updates_the_conversation_once(threads):
    conversation = threads
    first = send(conversation, "Hello there.")  # first send: the stored prompt is built too
    finish_reply(conversation, "Hello!")
    second = send(conversation, "Do you remember the lighthouse garden foxgloves?")  # recall runs
    for statements in (first, second):
        assert len(touching(statements, "conversations_assistantsettings")) == 1
        updates = [sql for sql in touching(statements, "conversations_conversation") if sql.startswith("UPDATE")]
        assert len(updates) == 1
    assert any("conversations_messagesearchentry" in sql for sql in second)  # recall searched the index


def test_a_send_takes_no_savepoint_not_even_the_first_which_stores_the_prompt(threads):
    conversation = threads
    first = send(conversation, "Hello there.")
    finish_reply(conversation, "Hello!")
    second = send(conversation, "Do you remember the lighthouse garden foxgloves?")
    assert Message.objects.filter(conversation=conversation, role=Role.SYSTEM).count() == 1
    assert not [sql for sql in first + second if sql.startswith("SAVEPOINT")]


@pytest.fixture
def imported(threads, make_turns):
    """A thread past its birth period whose prompt is not stored yet (its first send builds it, and recall
    runs in that send): New Chat continuity gave it a handoff from the Lighthouse thread, and a memory is in
    its snapshot."""
    from memories.models import Memory, SnapshotMembership

    conversation = threads
    make_turns(conversation, (Role.USER, "Good morning."), (Role.ASSISTANT, "Morning, AUMA."))
    memory = Memory.objects.create(text="AUMA keeps bees.")
    SnapshotMembership.objects.create(conversation=conversation, memory=memory)
    return conversation


def test_a_first_send_reads_its_handoffs_once_for_the_prompt_and_recall(imported):
    first = send(imported, "Do you remember the lighthouse garden foxgloves?")
    assert any("conversations_messagesearchentry" in sql for sql in first)  # recall ran
    assert len(touching(first, "conversation_summaries")) == 1
    prompt = Message.objects.get(conversation=imported, role=Role.SYSTEM).content
    assert "Continuity from a prior thread" in prompt and "AUMA keeps bees." in prompt


def test_a_first_send_reads_the_snapshot_memories_in_one_statement(imported):
    first = send(imported, "Do you remember the lighthouse garden foxgloves?")
    assert len(touching(first, "memories_snapshotmembership")) == 1
    assert len(touching(first, "memories_memory")) == 1


def test_the_stored_prompt_seq_is_saved_with_the_turns(threads):
    conversation = threads
    send(conversation, "Hello there.")
    conversation.refresh_from_db()
    rows = list(Message.objects.filter(conversation=conversation).order_by("seq"))
    assert [row.role for row in rows] == [Role.SYSTEM, Role.USER, Role.ASSISTANT]
    assert [row.seq for row in rows] == [1, 2, 3]
    assert conversation.last_seq == 3
