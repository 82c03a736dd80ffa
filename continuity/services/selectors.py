"""Read-side answers about a conversation's continuity state, for the API.

Filled in by the memory-snapshot and handoff layers. A conversation with no
handoff row has no handoff provenance (None); one with no snapshot record is
reported as a legacy snapshot with no times.
"""

from __future__ import annotations

from uuid import UUID

from continuity.models import ThreadHandoff
from memories.models import ConversationMemorySnapshot, SnapshotProvenance
from transcript.models import Conversation, Message, MessageKind


def conversation_handoff_provenance(conversation: Conversation) -> dict | None:
    """`{"source_conversation_id", "source_message_ids"}` of the thread's handoff.

    From its handoff row (New Chat continuity and Branch / Fresh Chat), else
    from a historical branch bubble marked by `mark_historical_branch_artifacts`,
    else, for an archived conversation continued in a new chat, with
    `"source_document_id"` added (and no source conversation).
    A retired summary-only row is not a handoff and answers None.
    """
    return handoff_provenances([conversation.pk]).get(conversation.pk)


def handoff_provenances(conversation_ids: list[UUID]) -> dict[UUID, dict]:
    """`conversation_handoff_provenance` of each of these conversations that has one, in at most two queries
    however many there are (the conversation list)."""
    found: dict[UUID, dict] = {}
    rows = ThreadHandoff.objects.filter(destination_id__in=conversation_ids).exclude(handoff="")
    for destination_id, source_id, message_ids in rows.values_list("destination_id", "source_id", "source_message_ids"):
        found[destination_id] = {
            "source_conversation_id": str(source_id) if source_id else None,
            "source_message_ids": list(message_ids or []),
        }
    rest = [pk for pk in conversation_ids if pk not in found]
    if not rest:
        return found
    # Unordered, the first bubble of each picked here: ordered by seq, SQLite (no planner statistics) walked
    # every message of the conversation in seq order rather than sort the handful its partial index finds.
    bubbles = (
        Message.objects.filter(conversation_id__in=rest, kind=MessageKind.HANDOFF_ARTIFACT)
        .order_by()
        .values_list("conversation_id", "seq", "metadata")
    )
    first: dict[UUID, tuple[int, dict]] = {}
    for conversation_id, seq, metadata in bubbles:
        if conversation_id not in first or seq < first[conversation_id][0]:
            first[conversation_id] = (seq, metadata or {})
    for conversation_id, (_, metadata) in first.items():
        if metadata.get("source_conversation_id"):
            found[conversation_id] = {
                "source_conversation_id": metadata["source_conversation_id"],
                "source_message_ids": list(metadata.get("source_message_ids") or []),
            }
        elif metadata.get("source_document_id") is not None:
            # An archived conversation continued in a new chat: its source is an archive document.
            found[conversation_id] = {
                "source_conversation_id": None, "source_message_ids": [], "source_document_id": metadata["source_document_id"],
            }
    return found


LEGACY_TIMING = {"captured_at": None, "refreshed_at": None, "provenance": SnapshotProvenance.LEGACY.value}


def conversation_snapshot_timing(conversation: Conversation) -> dict:
    """`{"captured_at", "refreshed_at", "provenance"}`: timing only, never ids or text.

    A conversation without a snapshot record predates snapshots: it is
    reported as `legacy` with no times, never with a time inferred from its
    creation, first message or a prompt rebuild.
    """
    return snapshot_timings([conversation.pk])[conversation.pk]


def snapshot_timings(conversation_ids: list[UUID]) -> dict[UUID, dict]:
    """`conversation_snapshot_timing` of each of these conversations, in one query."""
    timings = {pk: dict(LEGACY_TIMING) for pk in conversation_ids}
    rows = ConversationMemorySnapshot.objects.filter(conversation_id__in=conversation_ids).values_list(
        "conversation_id", "captured_at", "refreshed_at", "provenance"
    )
    for conversation_id, captured_at, refreshed_at, provenance in rows:
        timings[conversation_id] = {
            "captured_at": captured_at.isoformat() if captured_at else None,
            "refreshed_at": refreshed_at.isoformat() if refreshed_at else None,
            "provenance": provenance,
        }
    return timings
