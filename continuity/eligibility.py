"""The one answer to "may this conversation feed automatic continuity?".

Every automatic layer asks here: prior-thread selection for New Chat, handoff
capture, handoff injection into a stored prompt (and, as they arrive, keyword
recall and past-conversation search defaults). A conversation feeds automatic
continuity only when it is not in a hidden folder, not trashed, not
Continuity-Shielded, and has the same persona as the thread it would feed.

Deliberate access is not decided here: opening a conversation, reading it,
and an explicit Branch / Fresh Chat work whatever this module says.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet

from conversations.models import Conversation


def continuity_source_filter(*, persona: str) -> Q:
    """The eligibility rule as a query condition (for querysets over Conversation)."""
    return Q(persona=persona, trashed=False, shielded=False) & ~Q(folder__hidden=True)


def continuity_sources(*, persona: str) -> QuerySet[Conversation]:
    """Conversations that may feed automatic continuity for a `persona` thread."""
    return Conversation.objects.filter(continuity_source_filter(persona=persona))


def feeds_automatic_continuity(conversation: Conversation | None, *, persona: str) -> bool:
    """May `conversation` feed automatic continuity into a `persona` thread now?

    Reads the folder row fresh, so a folder hidden after `conversation` was
    loaded still counts as hidden.
    """
    if conversation is None:
        return False
    return continuity_sources(persona=persona).filter(pk=conversation.pk).exists()


def continuity_source_ids(conversation_ids, *, persona: str) -> set:
    """Which of `conversation_ids` may feed automatic continuity for a `persona` thread."""
    return set(continuity_sources(persona=persona).filter(pk__in=conversation_ids).values_list("pk", flat=True))
