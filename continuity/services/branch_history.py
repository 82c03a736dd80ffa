"""Marking historical Branch / Fresh Chat bubbles (seed, "Historical branch bubbles").

A conversation's earliest remaining message is marked as a handoff artifact
only when the conversation's existing branch provenance (origin `branch` and
a handoff row naming its source) identifies an assistant seed there: the
earliest remaining message overall is an ordinary assistant message with no
parent. If the original seed was deleted and ordinary turns remain, the
earliest message is not a parentless assistant seed and nothing is marked.
Nothing is classified from prose, and the source message ids recorded in the
provenance are copied as they are; none are invented.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Exists, OuterRef

from continuity.models import ThreadHandoff
from transcript.models import Conversation, ConversationOrigin, Message, MessageKind, Role


def historical_branch_seeds() -> list[tuple[Message, ThreadHandoff]]:
    """(seed, provenance) pairs that qualify for marking; reads only."""
    already_marked = Message.objects.filter(conversation=OuterRef("pk"), kind=MessageKind.HANDOFF_ARTIFACT)
    candidates = (
        Conversation.objects.filter(origin=ConversationOrigin.BRANCH, thread_handoff__source__isnull=False)
        .exclude(Exists(already_marked))
        .select_related("thread_handoff")
        .order_by("created_at", "pk")
    )
    pairs = []
    for conversation in candidates.iterator(chunk_size=500):
        earliest = (
            Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM).order_by("seq").first()
        )
        if (
            earliest is not None
            and earliest.role == Role.ASSISTANT
            and earliest.kind == MessageKind.ORDINARY
            and earliest.parent_id is None
        ):
            pairs.append((earliest, conversation.thread_handoff))
    return pairs


@transaction.atomic
def historical_branch_artifacts_mark(*, dry_run: bool = False) -> int:
    """Mark every qualifying seed; returns how many were (or would be) marked. Idempotent."""
    pairs = historical_branch_seeds()
    if dry_run:
        return len(pairs)
    for seed, provenance in pairs:
        metadata = {**(seed.metadata or {}), "source_conversation_id": str(provenance.source_id)}
        if provenance.source_message_ids:
            metadata["source_message_ids"] = list(provenance.source_message_ids)
        seed.kind = MessageKind.HANDOFF_ARTIFACT
        seed.metadata = metadata
        seed.save(update_fields=["kind", "metadata", "updated_at"])
    return len(pairs)
