"""Writes on whole conversations and folders: create, rename, move, rewind, switch versions; folders.

Creating a conversation captures the prior thread's handoff and the memory
snapshot in one transaction; a move or a hide is a visibility transition
(`conversations.services.visibility.transitions`). Sits with the other services:
imports continuity, memories' snapshot capture, visibility and the base layer.
"""

from __future__ import annotations

from uuid import UUID

from django.db import transaction

from continuity.rules.handoff_store import new_chat_handoff_capture, new_chat_handoff_store
from continuity.rules.prompt_refresh import refreshes_stale_prompts
from conversations.services.threads.titles import AUTO_TITLE_CHARACTERS, copy_family, copy_title
from conversations.services.visibility.transitions import conversation_move_locked, folder_hidden_set, folder_remove
from elion.base.errors import InvalidInput, NotFound
from memories.services.snapshots import snapshot_capture
from memories.services.write_lock import global_write_lock
from transcript.access import access_conversation, access_folder, message_in_conversation
from transcript.guard import transcript_write_guard
from transcript.models import Conversation, ConversationOrigin, Folder, Message, MessageStatus, Persona, Role
from transcript.siblings import switch_head

TITLE_MAX = 300


def _clean_title(title: str | None) -> str:
    title = (title or "").strip()
    if len(title) > TITLE_MAX:
        raise InvalidInput(f"A title can be at most {TITLE_MAX} characters.", code="title_too_long")
    return title


def private_chat_memories(*, private: bool, use_memories: bool) -> bool:
    """Does a new conversation's snapshot hold the current memories? Always for an
    ordinary conversation; for a private chat only when the owner ticked "Use memories"."""
    return use_memories or not private


@transaction.atomic
def conversation_create(
    *, persona: str = Persona.ELION, title: str | None = None, folder_id: int | None = None,
    origin: str = ConversationOrigin.NEW_CHAT, private: bool = False, use_memories: bool = False,
    title_auto: bool = False,
) -> Conversation:
    """A new conversation with its handoff (New Chat) and its memory snapshot.

    A private chat (`private`) receives no New Chat handoff and captures an
    empty snapshot unless `use_memories`; it never feeds continuity itself
    (`continuity.rules.eligibility.private_chats_excluded`).
    """
    if persona not in Persona.values:
        raise InvalidInput(f"persona must be one of {', '.join(Persona.values)}.", code="unknown_persona")
    # Seed, automatic New Chat continuity: capture the prior thread's handoff
    # (database reads only) before inserting; this transaction makes capture,
    # conversation and handoff row one unit, so a failed capture leaves nothing.
    # Lock order step 1 before the capture reads eligibility: a visibility
    # transition (which takes the same lock) either committed before the
    # capture or waits until this conversation and its handoff row exist.
    global_write_lock()
    handoff_capture = new_chat_handoff_capture(persona=persona, origin=origin, private=private)
    conversation = Conversation.objects.create(
        persona=persona, title=_clean_title(title), folder=access_folder(folder_id), origin=origin,
        private=bool(private), title_auto=bool(title_auto),
    )
    new_chat_handoff_store(handoff_capture, destination=conversation)
    # Seed: the memory snapshot is captured at creation, in the same
    # transaction, before any static prompt can be built from it.
    snapshot_capture(conversation, with_memories=private_chat_memories(private=private, use_memories=use_memories))
    return conversation


def conversation_mark_read(conversation: Conversation) -> None:
    """The owner opened the conversation's page: the unread mark a check-in's reply set goes (issue 44; the
    API does the same with `PATCH {"unread": false}`). One conditional UPDATE, nothing when already read."""
    if conversation.unread:
        Conversation.objects.filter(pk=conversation.pk).update(unread=False)
        conversation.unread = False


def copy_title_for(source_title: str) -> str:
    """A copy's title (Branch / Fresh Chat, Fork, an archive document continued): its source's words, numbered
    after the titles its family already holds ("Harbour plans (3)"). Callers hold `global_write_lock()`, so two
    copies made at once never take one number."""
    prefix = copy_family(source_title)[: AUTO_TITLE_CHARACTERS // 2]
    taken = Conversation.all_objects.filter(title__startswith=prefix).values_list("title", flat=True)
    return copy_title(source_title, taken)


@refreshes_stale_prompts
def conversation_update(*, conversation_id: UUID, changes: dict) -> Conversation:
    """Rename and/or move. A move is a visibility transition (`conversations.services.visibility.transitions`)."""
    moving = "folder_id" in changes
    if moving:
        global_write_lock()  # lock order: before the conversation row
    conversation = access_conversation(conversation_id, lock=True)
    if "title" in changes:
        conversation.title = _clean_title(changes["title"])
        conversation.title_auto = False  # typed by the owner: never rewritten
    if "unread" in changes:
        if changes["unread"] is not False:
            raise InvalidInput("unread can only be set to false (read).", code="invalid_unread")
        conversation.unread = False
    if moving:
        conversation_move_locked(conversation, changes["folder_id"])
    conversation.save()
    return conversation


@transaction.atomic
def conversation_rewind(*, conversation_id: UUID, message_id: UUID | str) -> Conversation:
    """Move the head to an earlier message; nothing is deleted."""
    conversation = access_conversation(conversation_id, lock=True)
    # Rewinding only moves the head, so the trash allows it (reading is allowed there too).
    transcript_write_guard(conversation, action="rewind", allow_trashed=True)
    target = message_in_conversation(conversation, message_id)
    if target.role != Role.ASSISTANT or target.status == MessageStatus.STREAMING:
        # The head is always a finished reply, so the next send answers it;
        # to redo a question, edit it (a sibling) or retry its reply.
        raise InvalidInput("Rewind to one of the assistant's finished replies.", code="invalid_rewind_target")
    conversation.head = target
    conversation.save(update_fields=["head", "updated_at"])
    return conversation


@transaction.atomic
def conversation_switch(*, conversation_id: UUID, message_id: UUID | str) -> Conversation:
    """Show another version: move the head to the newest end under `message_id` (`siblings.switch_head`).

    Like rewind, only the head moves; nothing is deleted or rewritten, so every
    other version stays reachable the same way. 409 `reply_in_progress` while a
    reply streams (the head is the streaming reply's until it settles); 404 for
    a message of another conversation; 400 `invalid_switch_target` for a user
    turn with no stored reply under it.
    """
    conversation = access_conversation(conversation_id, lock=True)
    transcript_write_guard(conversation, action="switch versions", allow_trashed=True)
    target = message_in_conversation(conversation, message_id)
    # Every message under the target has a larger seq: the rows from its seq on hold its whole subtree
    # (a version switch picks among recent turns, so this is the thread's newest end, not the thread).
    tree = {m.id: m for m in Message.objects.filter(conversation=conversation, seq__gte=target.seq).exclude(role=Role.SYSTEM)}
    head = switch_head(tree, target.id) if target.role != Role.SYSTEM else None
    if head is None:
        raise InvalidInput("That message has no reply to show; pick another version.", code="invalid_switch_target")
    if conversation.head_id != head.id:
        conversation.head = head
        conversation.save(update_fields=["head", "updated_at"])
    return conversation


@transaction.atomic
def folder_create(*, name: str, hidden: bool = False) -> Folder:
    name = (name or "").strip()
    if not name:
        raise InvalidInput("A folder needs a name.", code="folder_name_required")
    return Folder.objects.create(name=name[:200], hidden=bool(hidden))


@refreshes_stale_prompts  # hiding refreshes prompts: after this transaction commits, not inside it
def folder_update(*, folder_id: int, changes: dict) -> Folder:
    """Rename and/or hide/unhide. Hiding is a visibility transition (`conversations.services.visibility.transitions`)."""
    if "hidden" in changes:
        global_write_lock()  # lock order: before the folder row the rename writes
    folder = access_folder(folder_id)
    if folder is None:
        raise NotFound("No folder has that id.", code="folder_not_found")
    if "name" in changes:
        name = (changes["name"] or "").strip()
        if not name:
            raise InvalidInput("A folder needs a name.", code="folder_name_required")
        folder.name = name[:200]
        folder.save(update_fields=["name"])
    if "hidden" in changes:
        folder = folder_hidden_set(folder_id=folder.pk, hidden=bool(changes["hidden"]))
    return folder


@refreshes_stale_prompts  # as folder_update
def folder_delete(*, folder_id: int) -> int:
    """Delete a folder; its conversations move to no folder (nothing is lost, and
    those leaving a hidden folder are shielded: see `conversations.services.visibility.transitions`).
    Returns how many conversations moved."""
    return folder_remove(folder_id=folder_id)
