"""What a conversation deleted forever takes of memories' rows: its memory snapshot and its proposals.

One step of the permanent deletion (`conversations.services.deletion`), run in the step's transaction.
"""

from __future__ import annotations

from uuid import UUID

from memories.models import ConversationMemorySnapshot, MemoryProposal, ProposalStatus, SnapshotMembership


def conversation_memory_rows_delete(conversation_id: UUID) -> dict[str, int]:
    """The conversation's snapshot and memberships go; so do its pending and dismissed memory proposals,
    while an approved one stays with its memory, without its source (the messages it named are deleted
    next)."""
    memberships, _ = SnapshotMembership.objects.filter(conversation_id=conversation_id).delete()
    snapshots, _ = ConversationMemorySnapshot.objects.filter(conversation_id=conversation_id).delete()
    proposals, _ = MemoryProposal.objects.filter(conversation_id=conversation_id).exclude(
        status=ProposalStatus.APPROVED
    ).delete()
    detached = MemoryProposal.objects.filter(conversation_id=conversation_id).update(
        conversation=None, source_message=None, reply=None
    )
    return {
        "snapshot_memberships": memberships,
        "memory_snapshots": snapshots,
        "memory_proposals": proposals,
        "memory_proposals_detached": detached,
    }
