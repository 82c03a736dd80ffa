"""django-q2 task entry points: thin wrappers over services."""

from __future__ import annotations

from conversations.attachments.gc import attachment_garbage_collect
from conversations.transcript.deletion import deletions_finish
from conversations.transcript.leases import streams_interrupt_expired


def interrupt_stale_streams() -> int:
    """Scheduled every minute: replies whose process died become `interrupted`."""
    return streams_interrupt_expired()


def collect_attachment_garbage() -> dict[str, int]:
    """Scheduled hourly: stale uploads and unreferenced blobs past the grace period."""
    return attachment_garbage_collect().as_dict()


def finish_pending_deletions() -> int:
    """Scheduled every minute (and run at start): permanent deletions a crash interrupted are finished."""
    return deletions_finish()
