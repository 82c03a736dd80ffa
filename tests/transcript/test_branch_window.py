"""Reading the live branch in pieces (`branch_window`): batches for exports, windows for pages."""

from __future__ import annotations

import pytest

from continuity.rules.request_policy import estimate_tokens
from conversations.services.threads.thread_writes import conversation_rewind
from tests.support.factories import thread, turns_append
from transcript.branch_window import branch_token_estimate, branch_window_start, live_branch_batches
from transcript.models import Message, Role
from transcript.tree import live_branch

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


def test_the_start_window_is_the_first_messages_of_the_live_branch():
    conversation = branched(12)
    branch = live_branch(conversation)
    window = branch_window_start(conversation, limit=5)
    assert [m.id for m in window.messages] == [m.id for m in branch[:5]]
    assert (window.has_more_before, window.has_more_after) == (False, True)
    whole = branch_window_start(conversation, limit=len(branch))
    assert [m.id for m in whole.messages] == [m.id for m in branch]
    assert whole.has_more_after is False


def test_the_branch_estimate_sums_ceil_quarter_lengths_of_the_live_user_and_assistant_turns():
    conversation = branched(12)
    turns_append(conversation, ("tool", "t" * 40), ("user", "é" * 9), ("assistant", ""))
    conversation.refresh_from_db()
    branch = live_branch(conversation)
    expected = sum(estimate_tokens(m.content) for m in branch if m.role in (Role.USER, Role.ASSISTANT))
    assert expected > 0
    assert branch_token_estimate(conversation, (Role.USER, Role.ASSISTANT)) == expected
    # The rewound-away turns and the stored prompt are not on the branch.
    everything = Message.objects.filter(conversation=conversation, role__in=(Role.USER, Role.ASSISTANT))
    assert sum(estimate_tokens(m.content) for m in everything) > expected


def test_an_empty_conversation_has_no_start_window_and_no_estimate():
    conversation = thread()
    assert branch_window_start(conversation, limit=5).messages == []
    assert branch_token_estimate(conversation, (Role.USER,)) == 0
