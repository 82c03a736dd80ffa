"""Read-side answers about a conversation's continuity state, for the API.

Filled in by the memory-snapshot and handoff layers. A conversation with no
handoff row has no handoff provenance (None); one with no snapshot record is
reported as a legacy snapshot with no times.
"""

from __future__ import annotations

from continuity.models import ThreadHandoff
from conversations.models import Conversation, Message, MessageKind
from memories.models import ConversationMemorySnapshot, SnapshotProvenance


def conversation_handoff_provenance(conversation: Conversation) -> dict | None:
    """`{"source_conversation_id", "source_message_ids"}` of the thread's handoff.

    From its handoff row (New Chat continuity and Branch / Fresh Chat), else
    from a historical branch bubble marked by `mark_historical_branch_artifacts`,
    else, for an archived conversation continued in a new chat, with
    `"source_document_id"` added (and no source conversation).
    A retired summary-only row is not a handoff and answers None.
    """
    row = (
        ThreadHandoff.objects.filter(destination=conversation)
        .exclude(handoff="")
        .values_list("source_id", "source_message_ids")
        .first()
    )
    if row is not None:
        source_id, message_ids = row
        return {
            "source_conversation_id": str(source_id) if source_id else None,
            "source_message_ids": list(message_ids or []),
        }
    metadata = (
        Message.objects.filter(conversation=conversation, kind=MessageKind.HANDOFF_ARTIFACT)
        .order_by("seq")
        .values_list("metadata", flat=True)
        .first()
    )
    if metadata and metadata.get("source_conversation_id"):
        return {
            "source_conversation_id": metadata["source_conversation_id"],
            "source_message_ids": list(metadata.get("source_message_ids") or []),
        }
    if metadata and metadata.get("source_document_id") is not None:
        # An archived conversation continued in a new chat: its source is an archive document.
        return {"source_conversation_id": None, "source_message_ids": [], "source_document_id": metadata["source_document_id"]}
    return None


def conversation_snapshot_timing(conversation: Conversation) -> dict:
    """`{"captured_at", "refreshed_at", "provenance"}`: timing only, never ids or text.

    A conversation without a snapshot record predates snapshots: it is
    reported as `legacy` with no times, never with a time inferred from its
    creation, first message or a prompt rebuild.
    """
    row = (
        ConversationMemorySnapshot.objects.filter(conversation_id=conversation.pk)
        .values_list("captured_at", "refreshed_at", "provenance")
        .first()
    )
    if row is None:
        return {"captured_at": None, "refreshed_at": None, "provenance": SnapshotProvenance.LEGACY.value}
    captured_at, refreshed_at, provenance = row
    return {
        "captured_at": captured_at.isoformat() if captured_at else None,
        "refreshed_at": refreshed_at.isoformat() if refreshed_at else None,
        "provenance": provenance,
    }
