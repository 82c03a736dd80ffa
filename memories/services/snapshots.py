"""Conversation-scoped memory snapshots: capture, refresh, legacy backfill.

Every writer here takes `memories.services.write_lock.global_write_lock()` first (its docstring gives the lock order).

Precondition for Branch / Fresh Chat and fork: take `global_write_lock()`
before locking the source conversation, then create the destination and call
`snapshot_capture` in the same transaction.
"""

from __future__ import annotations

from uuid import UUID

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from elion.base.domain_events import legacy_snapshots_backfilled, snapshot_refreshed
from memories.models import (
    ConversationMemorySnapshot,
    Memory,
    SnapshotMembership,
    SnapshotProvenance,
)
from memories.services.write_lock import global_write_lock
from transcript.access import access_conversation
from transcript.models import Conversation

BACKFILL_BATCH_SIZE = 500


def eligible_memory_ids() -> list[int]:
    """The memories a new or refreshed snapshot may hold: every active one."""
    return list(Memory.objects.filter(active=True).order_by("position", "id").values_list("id", flat=True))


def _memberships_write(conversation_ids: list[UUID], memory_ids: list[int]) -> None:
    SnapshotMembership.objects.bulk_create(
        [SnapshotMembership(conversation_id=c, memory_id=m) for c in conversation_ids for m in memory_ids],
        batch_size=2_000,
    )


@transaction.atomic
def snapshot_capture(conversation: Conversation, *, with_memories: bool = True) -> ConversationMemorySnapshot:
    """Capture the current eligible set for a conversation being created.

    Called inside the transaction that creates the conversation (New Chat,
    Branch / Fresh Chat, fork), before any prompt exists, so later memory
    changes cannot alter the captured membership and a deleted memory cannot
    slip in (deletes hold the same lock). `with_memories=False` (a private
    chat started without "Use memories") captures an empty snapshot: a
    record with no membership, so the thread's prompt holds no memory until
    the owner refreshes it.
    """
    global_write_lock()
    if with_memories:
        _memberships_write([conversation.pk], eligible_memory_ids())
    return ConversationMemorySnapshot.objects.create(
        conversation=conversation, captured_at=timezone.now(), provenance=SnapshotProvenance.CAPTURED
    )


@transaction.atomic
def snapshot_refresh(conversation_id: UUID | str) -> Conversation:
    """Explicit Refresh memory: replace one thread's snapshot with the current eligible set.

    Marks the record `refreshed` (its original capture time, or its absence
    for a legacy thread, is kept) and sends `snapshot_refreshed`, whose
    receiver rebuilds the thread's stored prompt in the same transaction.
    """
    global_write_lock()
    conversation = access_conversation(conversation_id, lock=True)
    SnapshotMembership.objects.filter(conversation=conversation).delete()
    _memberships_write([conversation.pk], eligible_memory_ids())
    now = timezone.now()
    updated = ConversationMemorySnapshot.objects.filter(conversation=conversation).update(
        refreshed_at=now, provenance=SnapshotProvenance.REFRESHED
    )
    if not updated:
        ConversationMemorySnapshot.objects.create(
            conversation=conversation, captured_at=None, refreshed_at=now, provenance=SnapshotProvenance.REFRESHED
        )
    snapshot_refreshed.send(sender=ConversationMemorySnapshot, conversation_ids=[conversation.pk])
    return conversation


def snapshot_members(conversation_id: UUID | str) -> list[Memory]:
    """"Memories in this chat": the memories this conversation's snapshot holds, current text, global order.

    Owner-opened (a deliberate read, so a hidden conversation opens too).
    Inactive members are listed (the snapshot holds them; the prompt shows
    them again if they are switched back on). Nothing here says whether newer
    memories exist: the seed forbids a stale warning.
    """
    conversation = access_conversation(conversation_id)
    return list(
        Memory.objects.filter(memberships__conversation=conversation).order_by("position", "id")
    )


def legacy_conversations() -> QuerySet[Conversation]:
    """Conversations with no snapshot record: created before snapshots existed."""
    record = ConversationMemorySnapshot.objects.filter(conversation=OuterRef("pk"))
    return Conversation.objects.filter(~Exists(record))


def snapshots_backfill_legacy(*, batch_size: int = BACKFILL_BATCH_SIZE) -> int:
    """Give every legacy thread a one-time snapshot of the current eligible set.

    Marked `legacy` with no capture or refresh time: the real capture time
    was never recorded and is not inferred. Threads that already have a
    record are untouched, so running it again changes nothing. Each batch
    is its own transaction and sends `legacy_snapshots_backfilled`, whose
    receiver rebuilds the batch's stored prompts.
    """
    total = 0
    while True:
        with transaction.atomic():
            global_write_lock()
            batch = list(
                legacy_conversations().select_for_update().order_by("pk").values_list("pk", flat=True)[:batch_size]
            )
            if not batch:
                return total
            _memberships_write(batch, eligible_memory_ids())
            ConversationMemorySnapshot.objects.bulk_create(
                [ConversationMemorySnapshot(conversation_id=pk, provenance=SnapshotProvenance.LEGACY) for pk in batch]
            )
            legacy_snapshots_backfilled.send(sender=ConversationMemorySnapshot, conversation_ids=batch)
            total += len(batch)
