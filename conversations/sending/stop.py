"""Stop: end a streaming reply's provider call and keep its partial text as `interrupted`.

The request may reach any worker process; the reply runs in one of them.
The stop is recorded in the database (`Message.stop_requested_at`, the
durable request the run checks at each flush and lease renewal) and then
broadcast on the reply's stop group (`reply_stream`), so the run hears it at
once wherever it is. The run itself stores the interrupted reply and says
`done`; `reply_stop` waits for that, briefly.

Idempotent: stopping a reply that was already stopped answers it again.
Stopping a reply that ended any other way is a 409 `reply_not_streaming`.
"""

from __future__ import annotations

import time
from uuid import UUID

from django.utils import timezone

from conversations.sending.broadcast import EVENT_TYPE, GroupSubscription, conversation_group, request_stop_broadcast
from conversations.sending.persist import persist
from conversations.sending.watch import reply_snapshot
from elion.base.errors import Conflict
from transcript.access import access_conversation
from transcript.leases import streams_interrupt_expired
from transcript.models import Message, MessageStatus

STOP_WAIT_SECONDS = 10.0
STOP_POLL_SECONDS = 0.5


def reply_stop_request(*, conversation_id: UUID | str, message_id: UUID | str) -> Message:
    """Record the stop request. Returns the reply; raises Conflict when it ended otherwise.

    A conditional UPDATE claims the streaming row, so a reply that finished
    a moment earlier is never marked.
    """
    # A write path: a stream whose process died is ended (kept as `interrupted`) before anything is recorded.
    streams_interrupt_expired(access_conversation(conversation_id))
    snapshot = reply_snapshot(conversation_id=conversation_id, message_id=message_id)
    Message.objects.filter(
        pk=snapshot.id, status=MessageStatus.STREAMING, stop_requested_at__isnull=True
    ).update(stop_requested_at=timezone.now())
    message = Message.objects.get(pk=snapshot.id)
    if message.status != MessageStatus.STREAMING and message.stop_requested_at is None:
        raise Conflict(
            f"This reply is not streaming (it is {message.status}); there is nothing to stop.",
            code="reply_not_streaming",
        )
    return message


def _stored(message_id: UUID) -> Message:
    return Message.objects.get(pk=message_id)


async def reply_stop(
    *, conversation_id: UUID | str, message_id: UUID | str, wait_seconds: float = STOP_WAIT_SECONDS
) -> tuple[Message, bool]:
    """Stop a reply and wait until its run stored it. Returns `(reply, settled)`;
    `settled` is False when the run did not confirm within `wait_seconds` (the
    request stays recorded, and the run acts on it at its next flush or lease
    renewal; a run whose process died is marked `interrupted` when its lease
    runs out)."""
    # Listen before asking, so the run's `done` cannot slip past.
    async with GroupSubscription(conversation_group(conversation_id)) as events:
        message = await persist(reply_stop_request)(conversation_id=conversation_id, message_id=message_id)
        if message.status != MessageStatus.STREAMING:
            return message, True
        await request_stop_broadcast(message.id)
        key = str(message.id)
        deadline = time.monotonic() + wait_seconds
        while (left := deadline - time.monotonic()) > 0:
            event = await events.get(timeout=min(STOP_POLL_SECONDS, left))
            if event is None:
                message = await persist(_stored)(message.id)
                if message.status != MessageStatus.STREAMING:
                    return message, True
            elif event.get("type") == EVENT_TYPE and event.get("message_id") == key and event.get("event") == "done":
                break
        message = await persist(_stored)(message.id)
        return message, message.status != MessageStatus.STREAMING
