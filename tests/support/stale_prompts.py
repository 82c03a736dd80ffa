"""Legacy stored prompts for reconciliation to find."""

from __future__ import annotations

from transcript.models import Conversation, Message, MessageKind, Role

OLD_MARKERS = {"prompt_policy": "static-prompt/2025-01-01", "recall_policy": "recall/2025-01-01"}


RECENT_ACTIVITY = "=== RECENT ACTIVITY FROM OTHER CONVERSATIONS ===\n- Some other thread: None\n"


def seed_stale_prompts(count: int) -> list:
    """`count` legacy threads with a stale stored prompt each, bulk-loaded."""
    conversations = Conversation.objects.bulk_create(
        [Conversation(title=f"Legacy {i}", last_seq=1, origin="legacy") for i in range(count)], batch_size=2_000
    )
    Message.objects.bulk_create(
        [
            Message(
                conversation=conversation, seq=1, role=Role.SYSTEM, kind=MessageKind.STATIC_PROMPT,
                content="Legacy prompt\n" + RECENT_ACTIVITY, metadata={"policy_markers": OLD_MARKERS},
            )
            for conversation in conversations
        ],
        batch_size=2_000,
    )
    return [conversation.pk for conversation in conversations]
