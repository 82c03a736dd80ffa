"""A concurrent approve and delete leaves no orphan (issue 35), with real transactions in real threads.

Each round races approvals and dismissals of proposals with the deletion forever
of the conversation they came from and the deletion of memories approved earlier.
Whatever the order, afterwards:
- every memory whose source is a proposal has its approved proposal, and every
  approved proposal has its memory (a check constraint holds the second);
- nothing pending or dismissed outlives its conversation;
- no snapshot holds a deleted memory, and each proposal was decided at most once.
On PostgreSQL this exercises the row locks; on SQLite the IMMEDIATE write lock.
"""

from __future__ import annotations

import random

import pytest
from django.conf import settings as django_settings

from conversations.services.deletion import conversation_delete_forever
from conversations.services.threads.thread_writes import conversation_create
from conversations.services.visibility.transitions import conversation_trash
from elion.base.errors import Conflict, NotFound
from memories.models import Memory, MemoryProposal, MemorySource, ProposalStatus, SnapshotMembership
from memories.services.memory_writes import memory_delete
from memories.services.proposals import memory_propose, proposal_approve, proposal_dismiss
from tests.support.factories import turns_append
from tests.support.racing import run_together
from transcript.models import Conversation, Role

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 40 if django_settings.DATABASE_IS_POSTGRES else 15


def proposals_from(conversation: Conversation, round_number: int, count: int) -> list[MemoryProposal]:
    _, reply = turns_append(conversation, (Role.USER, "Tell me."), (Role.ASSISTANT, "Of course."))
    made = []
    for i in range(count):
        outcome = memory_propose(
            conversation_id=conversation.pk, reply_id=reply.pk, tool_call_id=f"c{i}",
            text=f"Round {round_number} fact {i} from {conversation.pk}", reason="Worth keeping.",
        )
        made.append(outcome.proposal)
    return made


def assert_no_orphans() -> None:
    from_proposals = set(Memory.objects.filter(source=MemorySource.PROPOSAL).values_list("pk", flat=True))
    approved = MemoryProposal.objects.filter(status=ProposalStatus.APPROVED)
    assert set(approved.values_list("memory_id", flat=True)) == from_proposals
    assert not MemoryProposal.objects.exclude(status=ProposalStatus.APPROVED).filter(memory__isnull=False).exists()
    live = set(Conversation.all_objects.values_list("pk", flat=True))
    undecided = MemoryProposal.objects.exclude(status=ProposalStatus.APPROVED)
    assert set(undecided.values_list("conversation_id", flat=True)) <= live
    assert not SnapshotMembership.objects.exclude(memory_id__in=Memory.objects.values("pk")).exists()


def test_a_concurrent_approve_and_delete_leaves_no_orphan(settings):
    settings.ELION_MEMORY_PROPOSALS_PENDING_MAX = 10
    rng = random.Random(20261202)
    for round_number in range(ROUNDS):
        source = conversation_create()
        other = conversation_create()
        racing = proposals_from(source, round_number, 3)
        (earlier,) = proposals_from(other, round_number, 1)
        earlier_memory = proposal_approve(proposal_id=earlier.pk)
        conversation_trash(conversation_id=source.pk)

        operations = [lambda p=p: proposal_approve(proposal_id=p.pk) for p in racing]
        dismissed = rng.choice(racing)
        operations.append(lambda c=source.pk: conversation_delete_forever(conversation_id=c))
        operations.append(lambda m=earlier_memory.pk: memory_delete(memory_id=m))
        operations.append(lambda p=dismissed.pk: proposal_dismiss(proposal_id=p))
        rng.shuffle(operations)

        errors = run_together(operations, jitter=0.006)

        # The losers of a race hear about it cleanly: the proposal is gone (404) or already decided (409).
        assert all(isinstance(exc, (NotFound, Conflict)) for exc in errors), errors
        assert_no_orphans()
        assert not Memory.objects.filter(pk=earlier_memory.pk).exists()
        assert not MemoryProposal.objects.filter(pk=earlier.pk).exists()
        assert not Conversation.all_objects.filter(pk=source.pk).exists()
        for proposal in MemoryProposal.objects.filter(pk__in=[p.pk for p in racing]):
            # Survivors are the approved ones, detached from the deleted conversation.
            assert proposal.status == ProposalStatus.APPROVED and proposal.conversation_id is None
            assert (proposal.source_message_id, proposal.reply_id) == (None, None)
        approved_now = Memory.objects.filter(source=MemorySource.PROPOSAL, text__startswith=f"Round {round_number} ")
        assert approved_now.count() == MemoryProposal.objects.filter(pk__in=[p.pk for p in racing]).count()
