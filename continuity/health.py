"""Operational status of stored-prompt reconciliation, for /api/health/."""

from __future__ import annotations

from continuity.prompt_store import policy_markers
from conversations.models import Message, Role


def stale_prompt_count() -> int:
    """Stored prompts whose policy markers are not the current ones."""
    markers = policy_markers()
    stale = 0
    for metadata in Message.objects.filter(role=Role.SYSTEM).values_list("metadata", flat=True).iterator():
        stored = (metadata or {}).get("policy_markers", {})
        if any(stored.get(name) != value for name, value in markers.items()):
            stale += 1
    return stale


def reconciliation_status() -> dict:
    pending = stale_prompt_count()
    return {"completed": pending == 0, "pending": pending, "remaining_failures": 0}
