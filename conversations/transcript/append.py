"""Appending to the transcript tree: the one way a message joins a conversation (seed 004).

Every new message takes the conversation's next `seq`, names its parent (a
message of the same conversation with a smaller seq, or none for a root),
carries the provider binding it was produced under (empty for the stored
prompt, which no provider produced), and may become the head. Nothing is
ever rewritten: rewind moves the head, edit-and-resend and retry append a
sibling.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

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
    message = _next_message(conversation, parent, role, binding, fields)
    message.save(force_insert=True)
    if make_head:
        conversation.head = message
    return message


@dataclass(frozen=True)
class ChainLink:
    """One message of a chain `message_chain_append` writes: what `message_append` takes, per message."""

    role: str
    binding: ProviderBinding | None
    fields: dict


def message_chain_append(
    *, conversation: Conversation, parent: Message | None, links: Iterable[ChainLink], batch_size: int = 500
) -> list[Message]:
    """Append a straight chain after `parent` and make its last message the head: `message_append`
    for each link (each one the parent of the next), written in multi-row INSERTs of `batch_size`.

    Same precondition as `message_append` (the conversation's row lock, and saving its
    `APPENDED_FIELDS` before commit). A fork copies a whole branch this way.
    """
    chain: list[Message] = []
    for link in links:
        chain.append(_next_message(conversation, chain[-1] if chain else parent, link.role, link.binding, link.fields))
    Message.objects.bulk_create(chain, batch_size=batch_size)
    if chain:
        conversation.head = chain[-1]
    return chain


def _next_message(
    conversation: Conversation, parent: Message | None, role: str, binding: ProviderBinding | None, fields: dict
) -> Message:
    """The unsaved message after `parent` with the conversation's next seq and `binding` stamped."""
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
    return Message(conversation=conversation, parent=parent, seq=conversation.last_seq, role=role, **stamped, **fields)


def binding_of(message: Message) -> ProviderBinding:
    """The provider tuple recorded on a stored message (a fork copies it unchanged)."""
    return ProviderBinding(message.provider_id, message.provider_type, message.model, message.route_fingerprint)
