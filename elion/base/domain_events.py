"""The domain events: what changed in a prompt's sources, sent by the service that changed it.

The design card asks for "signals that refresh affected prompts in
transactions". These are those signals, declared in one place and sent
explicitly (`event.send(sender=..., **payload)`), never derived from model
signals: `post_save` does not fire for `bulk_update` or a queryset's
`.update()`, and a model signal cannot say *why* a row changed.
docs/decisions/0007-domain-signals.md gives the reasons.

The contract every sender keeps:

- send inside the transaction that made the change, after its writes, so a
  receiver reads the new state and its own writes commit or roll back with
  the sender's;
- send with plain `send()`, never `send_robust()`: a receiver that raises
  fails the operation, so nothing reports success with a stale prompt;
- the sender is the model class the change is about; the payload is ids,
  never model instances, so a receiver re-reads what it needs.

The receivers live in `continuity.rules.refresh_triggers` (connected by
`continuity.apps.ContinuityConfig.ready`), one per event, and read as the
seed's list of prompt-refresh triggers. Bottom layer: imports nothing of the
project.
"""

from __future__ import annotations

from django.dispatch import Signal

# Settings: `fields` (frozenset[str]) names the settings the save changed.
settings_saved = Signal()

# Character Studio: a character was created, edited or deleted (`character_id`).
character_changed = Signal()

# Memories: `memory_id` (int) for one memory, `memory_ids` (list[int]) for a reorder.
memory_edited = Signal()
# Sent once the memory is out of every prompt's sources (inactive) while its snapshot
# rows still name the threads that held it; the rows and the memory go right after.
memory_deleted = Signal()
memories_reordered = Signal()

# Snapshots: `conversation_ids` (list[UUID]) whose snapshot membership was replaced.
snapshot_refreshed = Signal()
legacy_snapshots_backfilled = Signal()

# Visibility: `conversation_ids` (an iterable of UUIDs, or a queryset of `pk` values) whose
# eligibility may have changed: folder hidden or unhidden, folder deleted, moved, trashed,
# restored, a private chat kept.
visibility_changed = Signal()
# The owner's explicit release of a Continuity Shield (`conversation_id`).
shield_released = Signal()


DOMAIN_EVENTS: dict[str, Signal] = {
    "settings_saved": settings_saved,
    "character_changed": character_changed,
    "memory_edited": memory_edited,
    "memory_deleted": memory_deleted,
    "memories_reordered": memories_reordered,
    "snapshot_refreshed": snapshot_refreshed,
    "legacy_snapshots_backfilled": legacy_snapshots_backfilled,
    "visibility_changed": visibility_changed,
    "shield_released": shield_released,
}
