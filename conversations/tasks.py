"""django-q2 task entry points: thin wrappers over services."""

from __future__ import annotations

from conversations.services import streams_interrupt_expired


def interrupt_stale_streams() -> int:
    """Scheduled every minute: replies whose process died become `interrupted`."""
    return streams_interrupt_expired()
