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
  `write_lock.global_write_lock` (its docstring gives the lock order).
- Provenance (issue 35): every memory says where it came from (`source`:
  typed by the owner, imported from a file, approved from Elion's proposal,
  or `unrecorded` for rows saved before sources were kept: never inferred).
- `MemoryVersion`: the text, category and importance a memory had before
  an edit, with the time it was replaced. Deleting the memory deletes them.
- `MemoryProposal`: a memory Elion suggested with `propose_memory`. Not a
  memory: no snapshot, prompt, recall or export of memories reads this
  table. Approving creates an ordinary memory (new threads only) and links
  it here; deleting that memory deletes the approved proposal with it.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

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


class MemorySource(models.TextChoices):
    TYPED = "typed", "Typed by the owner"
    IMPORTED = "imported", "Imported"
    PROPOSAL = "proposal", "Suggested by Elion, approved by the owner"
    UNRECORDED = "unrecorded", "Saved before sources were recorded"


SOURCE_FILE_MAX = 255


class RemainingMemoryManager(models.Manager):
    """Memories that are not being deleted: the default manager.

    A deletion takes its memory out of every list, snapshot, prompt and edit the moment its first
    transaction commits (`deleting_since` set, `memories.services.memory_writes.memory_delete`); its
    snapshot rows are purged in bounded batches after it, then the row. The purge and its crash recovery
    use `Memory.all_objects`, as related-object access does.
    """

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().filter(deleting_since__isnull=True)


class Memory(models.Model):
    text = models.TextField()
    category = models.CharField(max_length=30, choices=MemoryCategory.choices, default=MemoryCategory.GENERAL)
    importance = models.PositiveSmallIntegerField(default=IMPORTANCE_DEFAULT)
    # Manual global order (1 is first); prompts list a thread's memories in it.
    position = models.PositiveIntegerField(default=0)
    active = models.BooleanField(default=True)
    # Where it came from; an import's file name (empty for pasted text).
    source = models.CharField(max_length=20, choices=MemorySource.choices, default=MemorySource.TYPED)
    source_file = models.CharField(max_length=SOURCE_FILE_MAX, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Set by a deletion's first transaction; the row is gone once its snapshot rows are purged.
    deleting_since = models.DateTimeField(null=True, blank=True, editable=False)

    objects = RemainingMemoryManager()
    all_objects = models.Manager()

    class Meta:
        base_manager_name = "all_objects"
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
        "transcript.Conversation", on_delete=models.CASCADE, primary_key=True, related_name="memory_snapshot"
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
    conversation = models.ForeignKey("transcript.Conversation", on_delete=models.CASCADE, related_name="memory_memberships")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="memberships")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "memory"], name="snapshot_membership_unique"),
        ]

    def __str__(self) -> str:
        return f"memory {self.memory_id} in {self.conversation_id}"


class MemorySetLock(models.Model):
    """Singleton (pk=1). Locked first by every write to memories or snapshots."""

    # Bumped by every operation that marks stored prompts stale, in its transaction (under this row's
    # lock): a refresh batch that read its sources at one generation writes only if it is still the
    # current one (`continuity.rules.prompt_refresh`).
    prompt_generation = models.PositiveBigIntegerField(default=0)
    # Until when a runner of refresh batches holds the right to run them (null: none does), renewed before
    # each of its batches: one runner at a time (`continuity.rules.prompt_refresh`, "One runner").
    prompt_refresh_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "memory set lock"


class MemoryVersion(models.Model):
    """What a memory said before one edit. Purged with the memory (cascade)."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="versions")
    text = models.TextField()
    category = models.CharField(max_length=30, choices=MemoryCategory.choices)
    importance = models.PositiveSmallIntegerField()
    replaced_at = models.DateTimeField()

    class Meta:
        ordering = ["memory_id", "-replaced_at", "-id"]

    def __str__(self) -> str:
        return f"memory {self.memory_id} before {self.replaced_at:%Y-%m-%d %H:%M}"


class ProposalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    DISMISSED = "dismissed", "Dismissed"


PROPOSAL_REASON_MAX = 500
TOOL_CALL_ID_MAX = 200


class MemoryProposal(models.Model):
    """A memory Elion suggested; only the owner turns it into one.

    `conversation`, `source_message` (the owner's turn the reply answered) and
    `reply` (the assistant message whose tool call proposed it) are set to
    null when that conversation is deleted forever (an approved proposal
    stays with its memory; a pending or dismissed one goes with the
    conversation). `text_key` is the text as duplicates are compared.
    """

    text = models.TextField()
    text_key = models.TextField(db_index=True)
    category = models.CharField(max_length=30, choices=MemoryCategory.choices, default=MemoryCategory.GENERAL)
    importance = models.PositiveSmallIntegerField(default=IMPORTANCE_DEFAULT)
    reason = models.CharField(max_length=PROPOSAL_REASON_MAX, blank=True, default="")
    conversation = models.ForeignKey(
        "transcript.Conversation", null=True, blank=True, on_delete=models.SET_NULL, related_name="memory_proposals"
    )
    source_message = models.ForeignKey("transcript.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reply = models.ForeignKey("transcript.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    tool_call_id = models.CharField(max_length=TOOL_CALL_ID_MAX, blank=True, default="")
    status = models.CharField(max_length=20, choices=ProposalStatus.choices, default=ProposalStatus.PENDING)
    memory = models.OneToOneField(Memory, null=True, blank=True, on_delete=models.CASCADE, related_name="proposal")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["conversation", "status"], name="proposal_conversation_status")]
        constraints = [
            models.CheckConstraint(
                condition=Q(importance__gte=IMPORTANCE_MIN, importance__lte=IMPORTANCE_MAX),
                name="proposal_importance_1_to_5",
            ),
            # An approved proposal always names its memory; no other one does.
            models.CheckConstraint(
                condition=Q(status=ProposalStatus.APPROVED, memory__isnull=False)
                | (~Q(status=ProposalStatus.APPROVED) & Q(memory__isnull=True)),
                name="proposal_memory_iff_approved",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.status}: {self.text[:60]}"
