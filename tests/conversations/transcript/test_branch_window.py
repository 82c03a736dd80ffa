"""Reading the live branch in pieces (`branch_window`): batches for exports, windows for pages."""

from __future__ import annotations

import pytest

from conversations.models import Message, Role
from conversations.threads.services import conversation_rewind
from conversations.transcript.branch_window import live_branch_batches
from conversations.transcript.tree import live_branch
from tests.support.factories import thread, turns_append

pytestmark = pytest.mark.django_db


def branched(length: int):
    conversation = thread(*[("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(length)])
    keep = live_branch(conversation)[length // 2 - 1]
    turns_append(conversation, ("user", "gone"), ("assistant", "gone too"))
    conversation_rewind(conversation_id=conversation.id, message_id=keep.id)
    conversation.refresh_from_db()
    turns_append(conversation, ("user", "back"), ("assistant", "again"))
    Message.objects.create(conversation=conversation, seq=999, role=Role.SYSTEM, content="stored prompt")
    conversation.refresh_from_db()
    return conversation


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, 200])
def test_batches_join_into_the_live_branch_root_first_none_larger_than_asked(batch_size):
    conversation = branched(12)
    batches = list(live_branch_batches(conversation, batch_size=batch_size))
    assert [m.id for batch in batches for m in batch] == [m.id for m in live_branch(conversation)]
    assert all(0 < len(batch) <= batch_size for batch in batches)


def test_batches_keep_only_the_roles_asked_for():
    conversation = branched(8)
    turns_append(conversation, ("tool", "a tool row"))
    conversation.refresh_from_db()
    batches = list(live_branch_batches(conversation, roles=(Role.USER, Role.ASSISTANT), batch_size=2))
    assert [m.content for batch in batches for m in batch] == ["m0", "m1", "m2", "m3", "back", "again"]


def test_an_empty_conversation_has_no_batches():
    assert list(live_branch_batches(thread())) == []
