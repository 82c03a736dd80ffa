"""The one answer to "may this conversation feed automatic continuity?".

Visibility states (seed, "Hidden Folders and Continuity Quarantine" and
"Continuity Shield"), strongest first:

* `trashed`: in the trash. Quarantined.
* `hidden`: in a hidden folder. Quarantined.
* `private`: a private chat (issue 22, "Private chats"): born outside
  automatic continuity and kept out of it until the owner keeps it ("Keep
  this chat" makes it an ordinary conversation that is shielded). Visible.
* `shielded`: left quarantine (restored, folder unhidden, moved out of a
  hidden folder) and not yet released. Visible, but kept out of automatic
  continuity until the owner releases the shield.
* `normal`: everything else.

Every automatic layer asks here: prior-thread selection for New Chat, handoff
capture, handoff injection into a stored prompt, keyword recall, and the
model's past-conversation search tool. A conversation feeds automatic
continuity only in the `normal` state, and only into a thread of its own
persona. The owner's Past Conversation Search (deliberate) reads normal
conversations, and shielded or private ones only when asked for that one
search. Whether a conversation is private is decided by `private_chats_excluded`
and nowhere else; a private chat is never archived (nothing copies a
conversation into the archive by itself).

Model-written derived records never feed automatic continuity, whatever the
conversation's state: a compacted summary (`continuity.rules.compaction`) lives in
its own table, not among the messages, so handoff capture, keyword recall, the
model's search tool, Past Conversation Search and the archive (which all read
messages or archive rows) cannot reach it; it enters only its own
conversation's requests, labelled as a summary.
An artifact (`artifacts`) is the same: its text lives in its own tables and
in the tool call's stored parts, never in `Message.content`, so no automatic
channel carries it; the model reads one back only with `read_artifact`,
which reaches the current conversation's artifacts and those born in a
conversation this module lets feed automatic continuity for its persona.

Memory suggestions (issue 35) follow the same line: only a conversation in
the `normal` state may be offered `propose_memory` (`may_suggest_memories`),
and the proposal service asks again when the call runs. A private, shielded or
quarantined conversation cannot shape memory silently, nor suggest.

Check-ins (issue 44) ask here too: a check-in writes first only into a
conversation in the `normal` state (`may_write_first`); in any other state it
does not run and is paused, saying why.

Deliberate access is not decided here: opening a conversation, reading it,
and an explicit Branch / Fresh Chat work whatever this module says.

The state lives in three columns and a folder flag (`Conversation.trashed`,
`Conversation.private`, `Conversation.shielded`, `Folder.hidden`); the transitions that change them
are `conversations.services.visibility.transitions`.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from uuid import UUID

from django.db.models import Q, QuerySet

from transcript.models import Conversation


class VisibilityState(StrEnum):
    NORMAL = "normal"
    HIDDEN = "hidden"
    TRASHED = "trashed"
    PRIVATE = "private"
    SHIELDED = "shielded"


def quarantined() -> Q:
    """The quarantine rule as a query condition, the one place it is written for the database: in the
    trash, or in a hidden folder. Automatic continuity, the owner's search and the pages all leave it out
    (`~quarantined()`); `visibility_state` says the same of a loaded row."""
    return Q(trashed=True) | Q(folder__hidden=True)


def private_chats_excluded() -> Q:
    """The private-chat rule: a private chat never feeds automatic continuity
    (New Chat handoff selection and injection, keyword recall, the model's
    search tool) and is left out of the owner's search unless asked for."""
    return Q(private=False)


def outside_quarantine() -> QuerySet[Conversation]:
    """Conversations neither trashed nor in a hidden folder: what the sidebar lists and a page may land on."""
    return Conversation.objects.exclude(quarantined())


def visibility_state(conversation: Conversation) -> VisibilityState:
    """The conversation's state as loaded (its folder row is read if not cached)."""
    if conversation.trashed:
        return VisibilityState.TRASHED
    if conversation.folder_id is not None and conversation.folder.hidden:
        return VisibilityState.HIDDEN
    if conversation.private:
        return VisibilityState.PRIVATE
    if conversation.shielded:
        return VisibilityState.SHIELDED
    return VisibilityState.NORMAL


def in_quarantine(conversation: Conversation) -> bool:
    """`quarantined()` of a loaded row (its folder row is read if not cached)."""
    return visibility_state(conversation) in (VisibilityState.TRASHED, VisibilityState.HIDDEN)


# --- Automatic continuity ----------------------------------------------------------


def continuity_source_filter(*, persona: str) -> Q:
    """The eligibility rule as a query condition (for querysets over Conversation)."""
    return Q(persona=persona, shielded=False) & private_chats_excluded() & ~quarantined()


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


def continuity_source_ids(conversation_ids: Iterable[UUID], *, persona: str) -> set:
    """Which of `conversation_ids` may feed automatic continuity for a `persona` thread."""
    return set(continuity_sources(persona=persona).filter(pk__in=conversation_ids).values_list("pk", flat=True))


def model_search_sources(*, persona: str, current_conversation_id: UUID | str | None) -> QuerySet[Conversation]:
    """What the model's `search_past_conversations` tool may read: automatic-continuity
    sources of its persona, never the conversation it is answering in. The tool
    has no shielded option: shielded material is always out of its reach."""
    sources = continuity_sources(persona=persona)
    if current_conversation_id is not None:
        sources = sources.exclude(pk=current_conversation_id)
    return sources


def may_suggest_memories(conversation: Conversation) -> bool:
    """May Elion propose a memory from this conversation? Only in the `normal` state
    (never private, shielded, trashed or in a hidden folder). The setting is the caller's."""
    return visibility_state(conversation) == VisibilityState.NORMAL


# Why a check-in may not write into a conversation in each state but `normal` (the owner reads it).
WRITE_FIRST_REFUSALS = {
    VisibilityState.TRASHED: "the conversation is in the trash",
    VisibilityState.HIDDEN: "the conversation is in a hidden folder",
    VisibilityState.PRIVATE: "the conversation is a private chat",
    VisibilityState.SHIELDED: "the conversation is continuity-shielded",
}


def may_write_first(conversation: Conversation | None) -> str | None:
    """May a check-in (issue 44) write first into this conversation? None when it may (the `normal` state
    only, as for memory suggestions: quarantine governs the present), else why not, in words. A
    conversation gone (deleted forever) may not. Reads the folder row as loaded or fresh."""
    if conversation is None:
        return "the conversation was deleted"
    state = visibility_state(conversation)
    return WRITE_FIRST_REFUSALS.get(state)


# --- Deliberate search ------------------------------------------------------------


def deliberate_search_filter(*, include_shielded: bool, include_private: bool = False) -> Q:
    """The owner's Past Conversation Search: never hidden or trashed; shielded
    and private ones only when the owner asks for them in that search (which
    changes nothing else)."""
    condition = ~quarantined()
    if not include_shielded:
        condition &= Q(shielded=False)
    if not include_private:
        condition &= private_chats_excluded()
    return condition


def deliberate_search_sources(*, include_shielded: bool, include_private: bool = False) -> QuerySet[Conversation]:
    return Conversation.objects.filter(
        deliberate_search_filter(include_shielded=include_shielded, include_private=include_private)
    )
