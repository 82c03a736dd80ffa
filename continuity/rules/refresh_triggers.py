"""The seed's prompt-refresh triggers, as the receivers of the domain events.

Seed (continuity, "Layer 1"): "Existing stored prompts can still be refreshed
when their source state changes, including: Settings changes for Elion. Edits
to memories that the conversation already contains. Deletions of memories,
which remove the deleted IDs from affected snapshots. Folder visibility,
trash, restore, and Continuity Shield transitions." and "New memory additions
and bulk imports do not refresh older conversation snapshots."

Read `REFRESH_TRIGGERS` below as that list: one domain event
(`elion.base.domain_events`), one receiver, one docstring quoting the seed's
line for it. A memory added or imported sends nothing, so it refreshes nothing.

Every receiver runs synchronously inside the sender's transaction, after the
sender's writes (the senders' contract, see `elion.base.domain_events`). A
receiver whose scope is one thread or one batch rebuilds it there through
`static_prompts_rebuild`, which locks the affected conversations in id order. A
receiver whose scope grows with the owner's conversations (a settings save,
the holders of a memory, the handoffs of a folder's or a conversation's
threads) marks their prompts stale there instead (`static_prompts_mark_stale`):
no send uses a marked prompt, and the sending service, wrapped in
`prompt_refresh.refreshes_stale_prompts`, rebuilds them in bounded batches
after its transaction commits and before it returns. A receiver that raises
fails the sender, whose transaction rolls back; no operation reports success
while a prompt it made stale is still stored. `connect_refresh_triggers` wires
the table (called by `continuity.apps.ContinuityConfig.ready`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields as dataclass_fields
from uuid import UUID

from django.db.models import QuerySet
from django.dispatch import Signal

from continuity.rules.handoff_store import handoff_destinations
from continuity.rules.prompt_policy import PromptSettings
from continuity.rules.prompt_refresh import static_prompts_mark_stale
from continuity.rules.prompt_store import static_prompts_rebuild
from elion.base.domain_events import (
    character_changed,
    legacy_snapshots_backfilled,
    memories_reordered,
    memory_deleted,
    memory_edited,
    settings_saved,
    shield_released,
    snapshot_refreshed,
    visibility_changed,
)
from memories.models import SnapshotMembership
from transcript.models import Conversation

# The settings a stored prompt reads: saving any other setting rebuilds nothing.
PROMPT_SETTINGS = frozenset(field.name for field in dataclass_fields(PromptSettings))


def holders_of(*memory_ids: int) -> QuerySet[Conversation]:
    """Conversations whose snapshot holds any of these memory ids."""
    return Conversation.objects.filter(
        pk__in=SnapshotMembership.objects.filter(memory_id__in=memory_ids).values("conversation_id")
    )


def _handoff_destinations_mark(source_ids: Iterable[UUID] | QuerySet) -> None:
    """The only cross-thread content a stored prompt holds is a handoff, so the prompts a change of
    `source_ids` affects are those of the threads whose handoff came from them."""
    static_prompts_mark_stale(handoff_destinations(source_ids))


def settings_saved_refresh(sender: object, *, fields: Iterable[str], **_: object) -> None:
    """Seed: "Settings changes for Elion." / "Settings saves still refresh existing Elion prompts."

    Every stored prompt, when the save changed a setting a prompt reads."""
    if PROMPT_SETTINGS & set(fields):
        static_prompts_mark_stale(Conversation.objects.all())


def character_changed_refresh(sender: object, **_: object) -> None:
    """Seed, the static prompt's sections: "Saved characters, when any exist — names from Character
    Studio and guidance for image generation."

    Every stored prompt lists the characters, so every one is rebuilt, like a settings save."""
    static_prompts_mark_stale(Conversation.objects.all())


def memory_edited_refresh(sender: object, *, memory_id: int, **_: object) -> None:
    """Seed: "Edits to memories that the conversation already contains." / "Editing a memory: refreshes
    existing prompts only for threads whose snapshots already contain that memory ID."

    Only the holders; no newer memory is pulled in (their snapshots are read, never changed)."""
    static_prompts_mark_stale(holders_of(memory_id))


def memory_deleted_refresh(sender: object, *, memory_id: int, **_: object) -> None:
    """Seed: "Deletions of memories, which remove the deleted IDs from affected snapshots." / "Deleting a
    memory: removes the ID from every conversation snapshot and rebuilds affected prompts."

    Sent while the (inactive) memory's snapshot rows still name its holders; the sender removes them next."""
    static_prompts_mark_stale(holders_of(memory_id))


def memories_reordered_refresh(sender: object, *, memory_ids: list[int], **_: object) -> None:
    """Seed, the static prompt's sections: "Long-term memories, when any exist — saved facts in their
    manually controlled global order".

    A new order changes the prompts that hold a moved memory, like an edit of it."""
    static_prompts_mark_stale(holders_of(*memory_ids))


def snapshot_refreshed_refresh(sender: object, *, conversation_ids: list[UUID], **_: object) -> None:
    """Seed: "Explicit refresh: replaces one selected thread’s snapshot with the current eligible memory set
    and records the intentional action."

    The thread's prompt is rebuilt from its new membership before the refresh reports success."""
    static_prompts_rebuild(conversation_ids)


def legacy_snapshots_backfilled_refresh(sender: object, *, conversation_ids: list[UUID], **_: object) -> None:
    """Seed: "Legacy threads receive a one-time snapshot backfill so older conversations do not fall back to
    the global memory collection."

    Each backfilled thread's prompt is rebuilt from its new membership."""
    static_prompts_rebuild(conversation_ids)


def visibility_changed_refresh(
    sender: object, *, conversation_ids: Iterable[UUID] | QuerySet, **_: object
) -> None:
    """Seed: "Folder visibility, trash, restore, and Continuity Shield transitions." / "When a folder is
    hidden, a conversation is moved into a hidden folder, or a conversation is trashed, affected saved
    Elion prompts are refreshed before the operation reports success."

    Restoring and unhiding shield the conversations, so their handoffs leave prompts too."""
    _handoff_destinations_mark(conversation_ids)


def shield_released_refresh(sender: object, *, conversation_id: UUID, **_: object) -> None:
    """Seed: "The release is intentional and refreshes affected saved prompts before reporting success."

    A released source's handoff is back in the prompts of the threads it was handed to."""
    _handoff_destinations_mark([conversation_id])


# The seed's refresh triggers: the domain event, and what it refreshes.
REFRESH_TRIGGERS: tuple[tuple[Signal, Callable[..., None]], ...] = (
    (settings_saved, settings_saved_refresh),
    (character_changed, character_changed_refresh),
    (memory_edited, memory_edited_refresh),
    (memory_deleted, memory_deleted_refresh),
    (memories_reordered, memories_reordered_refresh),
    (snapshot_refreshed, snapshot_refreshed_refresh),
    (legacy_snapshots_backfilled, legacy_snapshots_backfilled_refresh),
    (visibility_changed, visibility_changed_refresh),
    (shield_released, shield_released_refresh),
)


def connect_refresh_triggers() -> None:
    """Connect every receiver of the table, once (a second call connects nothing more)."""
    for event, receiver in REFRESH_TRIGGERS:
        event.connect(receiver, weak=False, dispatch_uid=f"refresh_triggers.{receiver.__name__}")
