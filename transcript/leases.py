"""Stream leases: is a reply streaming here now, and the sweep that ends dead ones.

A streaming reply holds a lease its process renews; a lease that ran out
belongs to a process that died mid-reply. Reads never expire leases
(STYLE 14): the sweep (`interrupt_stale_streams`) and the write paths call
`streams_interrupt_expired` as an explicit step.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from transcript.models import Conversation, Message, MessageStatus
from transcript.tool_pairing import interrupted_tool_calls_close

# What the sweep stores on a reply whose process died; reads show the same before the sweep runs.
INTERRUPTED_FIELDS = {
    "status": MessageStatus.INTERRUPTED,
    "error": "stream_interrupted",
    "error_detail": "The reply stopped because the server process ended; the partial text is kept.",
    "lease_expires_at": None,
}


def lease_deadline() -> datetime:
    return timezone.now() + timedelta(seconds=settings.ELION_STREAM_LEASE_SECONDS)


def conversation_has_live_stream(conversation: Conversation) -> bool:
    return Message.objects.filter(
        conversation=conversation, status=MessageStatus.STREAMING, lease_expires_at__gt=timezone.now()
    ).exists()


def streams_interrupt_expired(conversation: Conversation | None = None) -> int:
    """Mark replies whose stream lease ran out as `interrupted`, keeping their text.

    A lease is renewed while its process streams, so an expired one belongs
    to a process that died mid-reply.
    """
    stale = Message.objects.filter(status=MessageStatus.STREAMING, lease_expires_at__lte=timezone.now())
    if conversation is not None:
        stale = stale.filter(conversation=conversation)
    with transaction.atomic():
        # Claimed in primary-key order, skipping rows another sweep holds: two
        # sweeps never wait on each other's rows in opposite orders (PostgreSQL
        # reported deadlocks between concurrent sweeps updating the same set).
        stale_ids = list(stale.select_for_update(skip_locked=True).order_by("pk").values_list("pk", flat=True))
        if not stale_ids:
            return 0
        count = stale.filter(pk__in=stale_ids).update(**INTERRUPTED_FIELDS, updated_at=timezone.now())
        # A tool call the dead process left without a result gets a synthetic one.
        interrupted_tool_calls_close(stale_ids)
    return count


def lease_expired(message: Message, now: datetime | None = None) -> bool:
    """A reply still marked `streaming` whose lease ran out: its process died."""
    return (
        message.status == MessageStatus.STREAMING
        and message.lease_expires_at is not None
        and message.lease_expires_at <= (now or timezone.now())
    )


def stale_streams_read_as_interrupted(messages: Iterable[Message]) -> int:
    """Show dead streams as the sweep will store them, in memory only (reads don't write).

    A GET never expires a lease: the sweep (`interrupt_stale_streams`) and
    the write paths (`transcript_write_guard`) do. Until one runs, what a read
    returns already says `interrupted`, with the text kept. Returns how many.
    """
    now = timezone.now()
    changed = 0
    for message in messages:
        if lease_expired(message, now):
            for name, value in INTERRUPTED_FIELDS.items():
                setattr(message, name, value)
            changed += 1
    return changed
