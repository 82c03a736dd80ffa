"""Stored continuity rows.

The historical `conversation_summaries` table keeps its name and its retired
`summary` and `recent_raw` columns for schema compatibility (seed "Legacy
continuity rows"). Runtime continuity code uses handoff terminology and reads
or writes only `handoff` and its provenance; the retired columns are never
read by it and stay empty on new rows.
"""

from __future__ import annotations

from django.db import models

from conversations.models import Conversation


class ThreadHandoff(models.Model):
    """The verbatim final-eight handoff a conversation was opened with."""

    destination = models.OneToOneField(Conversation, on_delete=models.CASCADE, related_name="thread_handoff")
    # Provenance stays even if the source disappears; injection then finds nothing to rebuild.
    source = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="handoffs_given"
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
