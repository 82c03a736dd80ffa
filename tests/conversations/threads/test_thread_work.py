"""Moving a long thread's head and branching from it do the same work at any thread length (issue 40).

The class `tests/conversations/sending/test_send_work.py` holds a send and a retry to: each read statement
of a rewind, a version switch near the head and a Branch (its final-eight handoff) is run again alone and
its work measured (`tests.support.statement_work`) on a 600- and a 3,000-message thread.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from continuity.services.branching import conversation_branch
from conversations.services.threads.thread_writes import conversation_rewind, conversation_switch
from tests.support.factories import orchard_thread
from tests.support.statement_work import SLACK, assert_same_work, read_statements_work, statistics_as_deployed
from transcript.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


def newest(conversation, role: str, skip: int = 0) -> Message:
    return Message.objects.filter(conversation=conversation, role=role).order_by("-seq")[skip]


def rewind(conversation) -> None:
    conversation_rewind(conversation_id=conversation.id, message_id=newest(conversation, "assistant", skip=1).id)


def switch(conversation) -> None:
    conversation_switch(conversation_id=conversation.id, message_id=newest(conversation, "user").id)


def branch(conversation) -> None:
    conversation_branch(conversation_id=conversation.id, idempotency_key=f"branch-{conversation.id}")


@pytest.mark.parametrize("operation", [rewind, switch, branch])
def test_no_statement_of_a_rewind_a_switch_or_a_branch_does_more_work_at_3000_messages_than_at_600(operation):
    works = []
    for count in (600, 3_000):
        conversation = orchard_thread(count)
        statistics_as_deployed()
        with CaptureQueriesContext(connection) as queries:
            operation(conversation)
        works.append(read_statements_work(queries.captured_queries))
    short, long = works
    assert len(short) >= 2
    assert_same_work(short, long, SLACK[connection.vendor])
