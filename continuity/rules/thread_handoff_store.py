"""One conversation's handoffs as a send reads them: its handoff row (`continuity.rules.handoff_store`) and
its handoff bubbles (`continuity.rules.archive_handoff_store` for an archived conversation continued)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from continuity.models import ThreadHandoff
from continuity.rules.archive_handoff_store import archive_handoff_blocks_for, archive_handoff_blocks_from
from continuity.rules.handoff_store import RETIRED_COLUMNS, handoff_blocks_for, handoff_blocks_from, uuid_or_none
from elion.base.assistant_settings import assistant_settings_read
from elion.models import AssistantSettings
from transcript.models import Conversation, Message, MessageKind

# --- One conversation's handoffs, as a send reads them ------------------------


@dataclass(frozen=True)
class ThreadHandoffs:
    """One conversation's handoffs: its handoff row naming a source (New Chat continuity, Branch / Fresh
    Chat), if any, and its handoff bubbles (Branch / Fresh Chat, an archived conversation continued), in seq
    order. Read once by a send that builds its stored prompt or may recall (`thread_handoffs_read`)."""

    conversation: Conversation
    rows: tuple[ThreadHandoff, ...]
    bubbles: tuple[Message, ...]

    def blocks(self, *, settings_row: AssistantSettings, stored_prompt: str) -> dict[UUID, str]:
        """The conversation's rendered continuity slot (as `handoff_blocks_for` and
        `archive_handoff_blocks_for` render it), given its stored prompt ("" when it has none yet)."""
        stored_prompts = {self.conversation.pk: stored_prompt}
        archived = [
            (self.conversation.pk, self.conversation.persona, bubble.metadata)
            for bubble in self.bubbles
            if isinstance(bubble.metadata, dict) and "source_document_id" in bubble.metadata
        ]
        return {
            **archive_handoff_blocks_from(archived, settings_row=settings_row, stored_prompts=stored_prompts),
            **handoff_blocks_from(self.rows, settings_row=settings_row, stored_prompts=stored_prompts),
        }

    def source_ids(self) -> set[UUID]:
        """The conversations these handoffs came from (automatic recall never searches them): each row's
        source and each bubble's recorded `source_conversation_id`."""
        sources = {row.source_id for row in self.rows}
        for bubble in self.bubbles:
            recorded = uuid_or_none(bubble.metadata.get("source_conversation_id")) if isinstance(bubble.metadata, dict) else None
            if recorded is not None:
                sources.add(recorded)
        return sources


def thread_handoffs_read(conversation: Conversation, messages: Iterable[Message]) -> ThreadHandoffs:
    """`conversation`'s handoffs in one query (its handoff row); the bubbles are picked from `messages`,
    every row of the conversation the caller read (a send's, under its lock)."""
    rows = tuple(
        ThreadHandoff.objects.filter(destination_id=conversation.pk, source__isnull=False)
        .defer(*RETIRED_COLUMNS)
        .select_related("source")  # its destination is `conversation`, not joined again
    )
    for row in rows:
        row.destination = conversation
    bubbles = sorted((m for m in messages if m.kind == MessageKind.HANDOFF_ARTIFACT), key=lambda m: m.seq)
    return ThreadHandoffs(conversation=conversation, rows=rows, bubbles=tuple(bubbles))


def thread_handoff_source_ids(conversation: Conversation) -> set[UUID]:
    """`ThreadHandoffs.source_ids` for a caller that holds none of the conversation's rows (a send reads its
    handoffs from its own rows, `request_store.send_inputs_read`): its handoff row and its handoff bubbles, two
    queries."""
    # Unordered (`thread_handoffs_read` sorts them): ordered by seq, SQLite without planner statistics walks
    # the whole thread by (conversation, seq) rather than sort the few rows the partial handoff index finds.
    bubbles = (
        Message.objects.filter(conversation=conversation, kind=MessageKind.HANDOFF_ARTIFACT)
        .order_by()
        .only("id", "conversation_id", "kind", "seq", "metadata")
    )
    return thread_handoffs_read(conversation, bubbles).source_ids()


def handoff_block_for(conversation: Conversation) -> str:
    """The continuity slot for one conversation ("" when it has none)."""
    ids = [conversation.pk]
    settings_row = assistant_settings_read()
    blocks = {**archive_handoff_blocks_for(ids, settings_row=settings_row), **handoff_blocks_for(ids, settings_row=settings_row)}
    return blocks.get(conversation.pk, "")
