"""What a New Chat carries, said on its page, and "Start without it" (issue 34).

A New Chat may begin with the prior thread's handoff (seed, automatic New Chat
continuity: `continuity.rules.handoff_store.new_chat_handoff_capture`). The page says so
in a quiet notice that is no message: it is rendered from the `ThreadHandoff` row,
so it never enters handoffs, recall, exports or the token estimate.

Before the first send the owner may start without it: the row goes, in one
transaction that takes the memory-set lock then the conversation's row lock (the
lock order every continuity write keeps), and only while the conversation holds no
message at all — a send commits its turn under the same row lock, so either the
handoff is gone before the first request is built, or the drop is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from django.db import transaction

from continuity.models import ThreadHandoff
from continuity.rules.eligibility import continuity_sources
from continuity.rules.handoff_store import RETIRED_COLUMNS
from elion.base.errors import Conflict
from memories.services.write_lock import global_write_lock
from transcript.access import access_conversation
from transcript.models import Conversation, ConversationOrigin, Message


@dataclass(frozen=True)
class NewChatHandoffNotice:
    """The notice's words: its source, how many of the source's messages it carries, and whether the
    owner may still start without it (nothing sent yet)."""

    source_id: UUID
    source_title: str
    messages: int
    can_start_without: bool


def _has_messages(conversation: Conversation) -> bool:
    return Message.objects.filter(conversation=conversation).exists()


def new_chat_handoff_notice(conversation: Conversation) -> NewChatHandoffNotice | None:
    """The notice for a New Chat whose handoff feeds it now (its source still eligible); None otherwise.

    One statement at most (the page's cost stays flat): the eligibility rule rides in it as a subquery, and
    "nothing sent yet" is the conversation's `last_seq` (every message, the stored prompt too, moves it)."""
    if conversation.origin != ConversationOrigin.NEW_CHAT:
        return None
    row = (
        ThreadHandoff.objects.filter(
            destination=conversation, source__in=continuity_sources(persona=conversation.persona).values("pk")
        )
        .exclude(handoff="")
        .defer(*RETIRED_COLUMNS)
        .select_related("source")
        .first()
    )
    if row is None or not row.source_message_ids:
        return None
    return NewChatHandoffNotice(
        source_id=row.source_id,
        source_title=row.source.display_title,
        messages=len(row.source_message_ids),
        can_start_without=conversation.last_seq == 0,
    )


@transaction.atomic
def new_chat_handoff_drop(*, conversation_id: UUID | str) -> Conversation:
    """"Start without it": this New Chat's handoff is removed before its first send."""
    global_write_lock()  # lock order step 1, before the conversation row
    conversation = access_conversation(conversation_id, lock=True)
    if conversation.origin != ConversationOrigin.NEW_CHAT:
        raise Conflict("Only a New Chat's automatic handoff can be left out.", code="not_a_new_chat")
    if _has_messages(conversation):
        raise Conflict(
            "This chat has begun: its handoff was already part of its first request.", code="new_chat_already_begun"
        )
    ThreadHandoff.objects.filter(destination=conversation).delete()
    return conversation
