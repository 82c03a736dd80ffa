"""A send and a retry do the same work at any thread length, statement by statement (issue 40).

The statement-count tests (`tests/transcript/test_branch_columns.py`) cannot see a statement whose
plan reads the whole thread: it is still one statement. Here every read statement of a send is run again
alone and its work measured (`tests.support.statement_work`: SQLite's virtual-machine steps, PostgreSQL's
buffers), for two threads that both fill the window: each statement of the 3,000-message thread's send
must cost what the 600-message thread's does. SQLite has no planner statistics here, as in the app, so a
query it can only answer by reading the thread's rows is caught (the binding gate's ends once were: their
`role <> 'system'` did not match the partial index's `NOT (role = 'system')`, so SQLite read every row).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.sending.commands import SendCommand
from conversations.sending.prepare import retry_prepare, send_prepare
from tests.support.factories import orchard_thread
from tests.support.statement_work import SLACK, assert_same_work, read_statements_work, statistics_as_deployed
from transcript.models import Message, MessageStatus

pytestmark = pytest.mark.django_db(transaction=True)


def reply_finished(conversation) -> Message:
    reply = Message.objects.get(conversation=conversation, status=MessageStatus.STREAMING)
    Message.objects.filter(pk=reply.pk).update(status=MessageStatus.COMPLETE, content="Done.", lease_expires_at=None)
    return reply


def send(conversation) -> None:
    send_prepare(SendCommand(conversation_id=conversation.id, content="What did we say about the pears?"))


def retry(conversation) -> None:
    conversation.refresh_from_db()
    retry_prepare(conversation_id=conversation.id, message_id=conversation.head_id)


def work_of(prepare, conversation) -> list[tuple[str, int]]:
    """`prepare` on a thread whose prompt a first send stored, each read statement with its work."""
    send_prepare(SendCommand(conversation_id=conversation.id, content="A first send stores the prompt."))
    reply_finished(conversation)
    with CaptureQueriesContext(connection) as queries:
        prepare(conversation)
    reply_finished(conversation)
    return read_statements_work(queries.captured_queries)


@pytest.mark.parametrize("prepare", [send, retry])
def test_no_statement_of_a_send_or_a_retry_does_more_work_at_3000_messages_than_at_600(settings, prepare):
    # 4,000 tokens: the stretch a send reads (budget, twice the trim step, a margin) is ~250 of these
    # messages, so both threads fill the window and only the thread's length differs.
    settings.ELION_INPUT_BUDGET_TOKENS = 4_000
    short = orchard_thread(600)
    statistics_as_deployed()
    short_work = work_of(prepare, short)
    long = orchard_thread(3_000)
    statistics_as_deployed()
    long_work = work_of(prepare, long)
    assert len(short_work) >= 8
    assert_same_work(short_work, long_work, SLACK[connection.vendor])
