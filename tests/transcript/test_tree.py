"""Seed 004 / DESIGN.md transcript invariants: the message tree and the live branch."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from continuity.rules.request_policy import HistoryTurn, assemble_request
from conversations.services.threads.thread_writes import conversation_rewind
from transcript.models import Message, MessageKind, MessageStatus, Role
from transcript.tree import is_projectable, live_branch, tree_messages, tree_problems, walk_to_root

pytestmark = pytest.mark.django_db


def test_every_parent_is_in_the_same_conversation_with_a_smaller_seq(make_conversation, make_turns):
    conversation = make_conversation()
    make_turns(conversation, ("user", "one"), ("assistant", "two"), ("user", "three"))
    assert tree_problems(conversation.id, tree_messages(conversation).values()) == []

    other = make_conversation()
    (foreign,) = make_turns(other, ("user", "elsewhere"))
    broken = Message(conversation=conversation, parent=foreign, seq=99, role="user", content="x")
    problems = tree_problems(conversation.id, [*tree_messages(conversation).values(), broken])
    assert any("outside the conversation" in p for p in problems)


def test_tree_problems_reports_a_parent_with_a_larger_seq(make_conversation, make_turns):
    conversation = make_conversation()
    first, second = make_turns(conversation, ("user", "one"), ("assistant", "two"))
    first.seq = 50  # as if a row had been rewritten out of order
    problems = tree_problems(conversation.id, [first, second])
    assert any("not above its parent" in p for p in problems)


def test_head_to_root_walk_has_no_missing_parent(make_conversation, make_turns):
    conversation = make_conversation()
    turns = make_turns(conversation, ("user", "a"), ("assistant", "b"), ("user", "c"), ("assistant", "d"))
    assert [m.id for m in live_branch(conversation)] == [m.id for m in turns]

    rows = tree_messages(conversation)
    del rows[turns[1].id]
    with pytest.raises(ValueError, match="missing message"):
        walk_to_root(rows, conversation.head_id)


def test_children_are_derived_from_parent_never_stored_twice(make_conversation, make_turns):
    conversation = make_conversation()
    user, reply = make_turns(conversation, ("user", "q"), ("assistant", "a1"))
    (sibling,) = make_turns(conversation, ("assistant", "a2"), parent=user)
    assert set(user.children.values_list("id", flat=True)) == {reply.id, sibling.id}
    field_names = {f.name for f in Message._meta.concrete_fields}
    assert "children" not in field_names and "child_ids" not in field_names


def test_at_most_one_stored_system_message_per_conversation(make_conversation):
    conversation = make_conversation()
    Message.objects.create(conversation=conversation, seq=1, role=Role.SYSTEM, kind=MessageKind.STATIC_PROMPT)
    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(conversation=conversation, seq=2, role=Role.SYSTEM, kind=MessageKind.STATIC_PROMPT)


def test_seq_is_unique_within_a_conversation(make_conversation):
    conversation = make_conversation()
    Message.objects.create(conversation=conversation, seq=1, role=Role.USER, content="a")
    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(conversation=conversation, seq=1, role=Role.USER, content="b")


def test_rewind_moves_the_head_and_destroys_nothing(make_conversation, make_turns):
    conversation = make_conversation()
    turns = make_turns(conversation, ("user", "a"), ("assistant", "b"), ("user", "c"), ("assistant", "d"))
    conversation = conversation_rewind(conversation_id=conversation.id, message_id=turns[1].id)
    assert [m.content for m in live_branch(conversation)] == ["a", "b"]
    assert Message.objects.filter(conversation=conversation).count() == 4


def test_rewound_away_branch_never_reaches_the_model_request(make_conversation, make_turns):
    conversation = make_conversation()
    turns = make_turns(conversation, ("user", "keep"), ("assistant", "kept"), ("user", "SECRET-REWOUND"), ("assistant", "gone"))
    conversation = conversation_rewind(conversation_id=conversation.id, message_id=turns[1].id)
    make_turns(conversation, ("user", "new direction"))
    history = [HistoryTurn(m.role, m.content) for m in live_branch(conversation) if is_projectable(m)]
    request = assemble_request(static_prompt="S", history=history, input_budget_tokens=10_000)
    assert "SECRET-REWOUND" not in str(request.messages)
    assert [m["content"] for m in request.messages] == ["S", "keep", "kept", "new direction"]


def test_request_projection_is_a_pure_function_of_stored_rows(make_conversation, make_turns):
    conversation = make_conversation()
    make_turns(conversation, ("user", "a"), ("assistant", "b"), ("user", "c"))

    def project():
        fresh = type(conversation).objects.get(pk=conversation.pk)
        history = [HistoryTurn(m.role, m.content) for m in live_branch(fresh) if is_projectable(m)]
        return assemble_request(static_prompt="P", history=history, input_budget_tokens=10_000)

    assert project() == project()


def test_failed_and_streaming_replies_are_not_projected_as_history(make_conversation, make_turns):
    conversation = make_conversation()
    user, failed = make_turns(conversation, ("user", "q"), ("assistant", "partial"))
    failed.status = MessageStatus.FAILED
    assert not is_projectable(failed)
    failed.status = MessageStatus.STREAMING
    assert not is_projectable(failed)
    failed.status = MessageStatus.INTERRUPTED
    assert is_projectable(failed)  # interrupted text was shown to the owner, so it is history
    assert is_projectable(user)


def test_trim_keeps_the_newest_turn_and_never_opens_on_an_assistant_turn():
    history = [HistoryTurn("user", "x" * 400), HistoryTurn("assistant", "y" * 400), HistoryTurn("user", "z" * 40)]
    request = assemble_request(static_prompt="", history=history, input_budget_tokens=120)
    assert [m["content"] for m in request.messages] == ["z" * 40]
    assert request.diagnostics["trimmed_messages"] == 2
