"""Appending to the transcript tree: the one way a message joins a conversation (seed 004).

Every new message takes the conversation's next `seq`, names its parent (a
message of the same conversation with a smaller seq, or none for a root),
carries the provider binding it was produced under (empty for the stored
prompt, which no provider produced), and may become the head. Nothing is
ever rewritten: rewind moves the head, edit-and-resend and retry append a
sibling.
"""

from __future__ import annotations

from conversations.models import Conversation, Message
from conversations.provider.gateway import ProviderBinding

# The conversation columns an append changes in memory; the caller saves them.
APPENDED_FIELDS = ("head", "last_seq", "updated_at")


def message_append(
    *,
    conversation: Conversation,
    parent: Message | None,
    role: str,
    binding: ProviderBinding | None,
    make_head: bool,
    **fields: object,
) -> Message:
    """Insert one message after `parent` with the conversation's next seq.

    Precondition: the caller holds the conversation's row lock inside a
    transaction (so no other writer takes the same seq), and saves the
    conversation's `APPENDED_FIELDS` before that transaction commits: a send
    appends two or three messages and saves the conversation once.
    `binding` is the provider tuple to stamp (None only for the stored prompt).
    """
    if parent is not None and (parent.conversation_id != conversation.pk or parent.seq > conversation.last_seq):
        raise ValueError("a parent must be an earlier message of the same conversation")
    conversation.last_seq += 1
    stamped = (
        {
            "provider_id": binding.provider_id,
            "provider_type": binding.provider_type,
            "model": binding.model,
            "route_fingerprint": binding.route_fingerprint,
        }
        if binding is not None
        else {}
    )
    message = Message.objects.create(
        conversation=conversation, parent=parent, seq=conversation.last_seq, role=role, **stamped, **fields
    )
    if make_head:
        conversation.head = message
    return message


def binding_of(message: Message) -> ProviderBinding:
    """The provider tuple recorded on a stored message (a fork copies it unchanged)."""
    return ProviderBinding(message.provider_id, message.provider_type, message.model, message.route_fingerprint)
