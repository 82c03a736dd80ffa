"""django-q2 task entry points: thin wrappers over services."""

from __future__ import annotations

from conversations.services import streams_interrupt_expired


def interrupt_stale_streams() -> int:
    """Scheduled every minute: replies whose process died become `interrupted`."""
    return streams_interrupt_expired()


def finish_pending_deletions() -> int:
    """Scheduled every minute (and run at start): permanent deletions a crash interrupted are finished."""
    from conversations.deletion import deletions_finish

    return deletions_finish()
