"""Read-side answers about a conversation's continuity state, for the API.

Filled in by the memory-snapshot and handoff layers; until a conversation has
a snapshot record or a handoff row these answer None.
"""

from __future__ import annotations

from conversations.models import Conversation


def conversation_handoff_provenance(conversation: Conversation) -> dict | None:
    """`{"source_conversation_id", "source_message_ids"}` of the thread's handoff."""
    return None


def conversation_snapshot_timing(conversation: Conversation) -> dict | None:
    """`{"captured_at", "refreshed_at", "provenance"}`: timing only, never ids or text."""
    return None
