"""Stored continuity rows.

The historical `conversation_summaries` table keeps its name and its retired
`summary` and `recent_raw` columns for schema compatibility (seed "Legacy
continuity rows"). Runtime continuity code uses handoff terminology and reads
or writes only `handoff` and its provenance; the retired columns are never
read by it and stay empty on new rows.
"""

from __future__ import annotations

from django.db import models


class ThreadHandoff(models.Model):
    """The verbatim final-eight handoff a conversation was opened with."""

    destination = models.OneToOneField("transcript.Conversation", on_delete=models.CASCADE, related_name="thread_handoff")
    # Provenance stays even if the source disappears; injection then finds nothing to rebuild.
    source = models.ForeignKey(
        "transcript.Conversation", null=True, blank=True, on_delete=models.SET_NULL, related_name="handoffs_given"
    )
    source_message_ids = models.JSONField(default=list, blank=True)
    handoff = models.TextField(blank=True, default="")
    policy_marker = models.CharField(max_length=100, blank=True, default="")
    # Retired generated-summary columns: kept for compatibility, never injected.
    summary = models.TextField(blank=True, default="")
    recent_raw = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "conversation_summaries"

    def __str__(self) -> str:
        return f"Handoff into {self.destination_id} from {self.source_id}"


class PromptReconciliationRun(models.Model):
    """Legacy-prompt reconciliation under one policy version.

    `completed_at` is set only once every stale prompt of that version was
    rebuilt and no failure remained; its presence lets later starts skip the
    scan. `dispatch_until` is the lease of whichever cluster is enqueueing
    batches (claimed with a conditional UPDATE).
    """

    policy_version = models.CharField(max_length=64, unique=True)
    markers = models.JSONField(default=dict)
    started_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    rebuilt = models.PositiveIntegerField(default=0)
    dispatch_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "continuity_prompt_reconciliation"

    def __str__(self) -> str:
        state = "completed" if self.completed_at else "incomplete"
        return f"Prompt reconciliation {self.policy_version[:12]} ({state})"


class PromptReconciliationFailure(models.Model):
    """A stale prompt whose rebuild failed: retried with backoff up to a limit.

    Holds an error class name only, never prompt or memory text.
    """

    policy_version = models.CharField(max_length=64)
    conversation = models.ForeignKey("transcript.Conversation", on_delete=models.CASCADE, related_name="+")
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=200, blank=True, default="")
    last_failed_at = models.DateTimeField()
    next_attempt_at = models.DateTimeField()

    class Meta:
        db_table = "continuity_prompt_reconciliation_failure"
        constraints = [
            models.UniqueConstraint(
                fields=["policy_version", "conversation"], name="one_reconciliation_failure_per_prompt"
            )
        ]

    def __str__(self) -> str:
        return f"Reconciliation failure for {self.conversation_id} ({self.attempts} attempts)"


class Compaction(models.Model):
    """A model-written summary of a conversation's live branch up to `through_message`.

    A derived record, never history: requests carry it in place of the turns
    it covers while `through_message` is an ancestor of (or is) the head
    (`continuity.rules.compaction`). The messages themselves, their ids and their
    tool pairing are untouched; deleting this row (Undo) removes the
    projection. Model-written, so it never feeds handoffs, keyword recall,
    search or the archive. The provider binding is recorded like on every
    durable record.
    """

    conversation = models.ForeignKey("transcript.Conversation", on_delete=models.CASCADE, related_name="compactions")
    through_message = models.ForeignKey("transcript.Message", on_delete=models.CASCADE, related_name="+")
    summary = models.TextField()
    covered_messages = models.PositiveIntegerField(default=0)
    provider_id = models.CharField(max_length=100, blank=True, default="")
    provider_type = models.CharField(max_length=50, blank=True, default="")
    model = models.CharField(max_length=100, blank=True, default="")
    route_fingerprint = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "continuity_compaction"
        ordering = ["conversation", "-id"]

    def __str__(self) -> str:
        return f"Compacted summary of {self.conversation_id} through {self.through_message_id}"
