"""May this transcript be written now? The one answer, for every write path.

A conversation's transcript is written by a send, a retry, a rewind, a
compaction, or its permanent deletion. Each first ends the streams whose
process died (their lease ran out: the text is kept as `interrupted`), then
refuses with a 409 when a reply is still streaming (`reply_in_progress`), or
when the conversation is in the trash (`conversation_trashed`) unless the
action is one the trash allows. Fork writes a new conversation and reads
this one, so it asks `reply_finished_guard` of the message it copies up to.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from elion.base.errors import Conflict
from transcript.leases import conversation_has_live_stream, streams_interrupt_expired
from transcript.models import Conversation, Message, MessageStatus

STILL_STREAMING = "A reply is still streaming in this conversation; wait for it to finish."


def transcript_write_guard(
    conversation: Conversation,
    *,
    action: str,
    allow_trashed: bool = False,
    loaded: Iterable[Message] | None = None,
) -> None:
    """Raise Conflict unless `action` (a verb: "send", "retry", "rewind", "compact") may write now.

    Precondition: the caller holds the conversation's row lock inside a
    transaction, so no reply can start between this check and the write.
    `loaded`: the conversation's messages when the caller already read them
    under that lock (a send), or at least every streaming one of them (the
    tree cache's `TreeRead.streaming`): the check then costs no query unless
    a stream died, and the dead rows are marked `interrupted` in memory too.
    """
    if conversation.trashed and not allow_trashed:
        raise Conflict(f"This conversation is in the trash; restore it to {action}.", code="conversation_trashed")
    if loaded is None:
        streams_interrupt_expired(conversation)
        if conversation_has_live_stream(conversation):
            raise Conflict(STILL_STREAMING, code="reply_in_progress")
        return
    streaming = [m for m in loaded if m.status == MessageStatus.STREAMING]
    if not streaming:
        return
    now = timezone.now()
    if any(m.lease_expires_at is not None and m.lease_expires_at > now for m in streaming):
        raise Conflict(STILL_STREAMING, code="reply_in_progress")
    # Their process died (the lease ran out): keep the text as `interrupted`.
    streams_interrupt_expired(conversation)
    for message in streaming:
        message.status = MessageStatus.INTERRUPTED


def reply_finished_guard(message: Message) -> None:
    """A message to copy or build on must not be a reply still streaming."""
    if message.status == MessageStatus.STREAMING:
        raise Conflict("That reply is still streaming; fork once it has finished.", code="reply_in_progress")
