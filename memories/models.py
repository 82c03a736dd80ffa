"""Long-term memories and the conversation-scoped snapshots that govern them.

Seed rule: "New memories affect future threads and branches. Edits affect
threads that already contain that memory. Deletions remove the memory from
every stored snapshot and prompt."

- `Memory`: one saved fact with a manual global `position`. `active=False`
  takes a memory out of the eligible set (new snapshots skip it) and out of
  every prompt that holds it, without dropping any thread's membership: like
  an edit, reactivating it reaches only threads that already held it.
- `SnapshotMembership`: which memory ids a conversation may carry. Captured
  when the conversation is created, replaced only by an explicit refresh,
  purged of an id when that memory is deleted. No rows is a real, empty
  snapshot, never "load all".
- `ConversationMemorySnapshot`: timing metadata (captured/refreshed time and
  provenance), never ids or text. A conversation with no record is legacy.
- `MemorySetLock`: a singleton row every memory-set write locks first; see
  `memories.snapshots.memory_set_lock`.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from conversations.models import Conversation

MEMORY_TEXT_MAX = 4_000
IMPORTANCE_MIN = 1
IMPORTANCE_MAX = 5
IMPORTANCE_DEFAULT = 3


class MemoryCategory(models.TextChoices):
    GENERAL = "general", "General"
    IDENTITY = "identity", "Identity"
    RELATIONSHIP = "relationship", "Relationship"
    PREFERENCE = "preference", "Preference"
    EVENT = "event", "Event"
    PLACE = "place", "Place"
    PROJECT = "project", "Project"
    SACRED = "sacred", "Sacred"


class Memory(models.Model):
    text = models.TextField()
    category = models.CharField(max_length=30, choices=MemoryCategory.choices, default=MemoryCategory.GENERAL)
    importance = models.PositiveSmallIntegerField(default=IMPORTANCE_DEFAULT)
    # Manual global order (1 is first); prompts list a thread's memories in it.
    position = models.PositiveIntegerField(default=0)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["position", "id"]
        verbose_name_plural = "memories"
        constraints = [
            models.CheckConstraint(
                condition=Q(importance__gte=IMPORTANCE_MIN, importance__lte=IMPORTANCE_MAX),
                name="memory_importance_1_to_5",
            ),
        ]
        indexes = [models.Index(fields=["position", "id"], name="memory_global_order")]

    def __str__(self) -> str:
        return self.text[:60]


class SnapshotProvenance(models.TextChoices):
    CAPTURED = "captured", "Captured at creation"
    REFRESHED = "refreshed", "Refreshed by the owner"
    LEGACY = "legacy", "Legacy (capture time unknown)"


class ConversationMemorySnapshot(models.Model):
    """When a conversation's memory set was captured or refreshed. Timing only."""

    conversation = models.OneToOneField(
        Conversation, on_delete=models.CASCADE, primary_key=True, related_name="memory_snapshot"
    )
    # Null for legacy rows: the real capture time was never recorded, and the
    # seed forbids inferring one from creation, first message or a rebuild.
    captured_at = models.DateTimeField(null=True, blank=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    provenance = models.CharField(max_length=20, choices=SnapshotProvenance.choices)

    class Meta:
        verbose_name = "conversation memory snapshot"

    def __str__(self) -> str:
        return f"Memory snapshot of {self.conversation_id} ({self.provenance})"


class SnapshotMembership(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="memory_memberships")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="memberships")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "memory"], name="snapshot_membership_unique"),
        ]

    def __str__(self) -> str:
        return f"memory {self.memory_id} in {self.conversation_id}"


class MemorySetLock(models.Model):
    """Singleton (pk=1). Locked first by every write to memories or snapshots."""

    class Meta:
        verbose_name = "memory set lock"
