"""Visibility transitions: hide/unhide a folder, move a conversation, trash, restore,
keep a private chat, release a Continuity Shield (seed, "Hidden Folders and Continuity Quarantine",
"Continuity Shield"). Pages, the API and the admin all call these.

Rules:

* Hiding a folder, moving a conversation into a hidden folder and trashing
  put conversations in quarantine (`continuity.rules.eligibility`).
* A conversation that leaves quarantine (its folder is unhidden or deleted,
  it is moved out of a hidden folder, it is restored) becomes
  Continuity-Shielded. Only `conversation_shield_release` clears a shield.
* Keeping a private chat ("Keep this chat") makes it an ordinary
  conversation that is Continuity-Shielded, as any conversation leaving
  quarantine; the release is then the owner's own step.
* Every transition sends `visibility_changed` (the release: `shield_released`)
  after its writes; the receiver (`continuity.rules.refresh_triggers`) rebuilds
  the stored prompt of every thread that carries a handoff from an affected
  conversation, in the same transaction, so when the call returns no stored
  prompt holds continuity content its source may no longer give (and a
  released source's handoff is back).

Lock order (see `memories.services.write_lock`): every transition takes
`global_write_lock()` first, then the rows it changes, then the receiver's
`static_prompts_rebuild` locks the affected threads in id order. Transitions
are therefore serialised with each other, with memory writes and with
conversation creation; a first send racing a transition either commits its
prompt before the rebuild locks that thread (and is rebuilt) or waits for
the transition to commit (and then reads the new state).
"""

from __future__ import annotations

from uuid import UUID

from continuity.rules.eligibility import in_quarantine
from continuity.rules.prompt_refresh import refreshes_stale_prompts
from elion.base.domain_events import shield_released, visibility_changed
from elion.base.errors import Conflict, NotFound
from memories.services.write_lock import global_write_lock
from transcript.access import access_conversation, access_folder
from transcript.models import Conversation, Folder


def _locked_folder(folder_id: int | str) -> Folder:
    folder = access_folder(folder_id)
    if folder is None:
        raise NotFound("No folder has that id.", code="folder_not_found")
    return Folder.objects.select_for_update().get(pk=folder.pk)


@refreshes_stale_prompts
def folder_hidden_set(*, folder_id: int | str, hidden: bool) -> Folder:
    """Hide or unhide a folder. Unhiding shields every conversation in it."""
    global_write_lock()
    folder = _locked_folder(folder_id)
    was_hidden, folder.hidden = folder.hidden, bool(hidden)
    folder.save(update_fields=["hidden"])
    members = Conversation.objects.filter(folder=folder)
    if was_hidden and not folder.hidden:
        # Leaving quarantine; `update` leaves `updated_at` (the sidebar order) alone.
        members.update(shielded=True)
    visibility_changed.send(sender=Folder, conversation_ids=members.values("pk"))
    return folder


@refreshes_stale_prompts
def folder_remove(*, folder_id: int | str) -> int:
    """Delete a folder; its conversations move to no folder (nothing is lost). Returns how many moved.

    Conversations leaving a hidden folder this way leave quarantine, so they
    are shielded.
    """
    global_write_lock()
    folder = _locked_folder(folder_id)
    member_ids = list(Conversation.objects.filter(folder=folder).values_list("pk", flat=True))
    changes = {"folder": None, **({"shielded": True} if folder.hidden else {})}
    Conversation.objects.filter(pk__in=member_ids).update(**changes)
    folder.delete()
    visibility_changed.send(sender=Folder, conversation_ids=member_ids)
    return len(member_ids)


def conversation_move_locked(conversation: Conversation, folder_id: int | str | None) -> Conversation:
    """Move a conversation into a folder (None: no folder), shielding it if it leaves a hidden one.

    Precondition: inside a transaction holding `global_write_lock()` and the
    conversation's row lock. Saves only `folder` and `shielded`.
    """
    target = access_folder(folder_id)
    leaves_hidden = conversation.folder_id is not None and Folder.objects.filter(
        pk=conversation.folder_id, hidden=True
    ).exists()
    conversation.folder = target
    if leaves_hidden and not (target is not None and target.hidden):
        conversation.shielded = True
    conversation.save(update_fields=["folder", "shielded"])
    visibility_changed.send(sender=Conversation, conversation_ids=[conversation.pk])
    return conversation


@refreshes_stale_prompts
def conversation_trash(*, conversation_id: UUID | str) -> Conversation:
    """Move a conversation to the trash: still readable, no longer sendable, quarantined."""
    global_write_lock()
    conversation = access_conversation(conversation_id, lock=True)
    conversation.trashed = True
    conversation.save(update_fields=["trashed"])
    visibility_changed.send(sender=Conversation, conversation_ids=[conversation.pk])
    return conversation


@refreshes_stale_prompts
def conversation_restore(*, conversation_id: UUID | str) -> Conversation:
    """Take a conversation out of the trash; it comes back Continuity-Shielded."""
    global_write_lock()
    conversation = access_conversation(conversation_id, lock=True)
    if conversation.trashed:
        conversation.trashed, conversation.shielded = False, True
        conversation.save(update_fields=["trashed", "shielded"])
    visibility_changed.send(sender=Conversation, conversation_ids=[conversation.pk])
    return conversation


@refreshes_stale_prompts
def conversation_shield_release(*, conversation_id: UUID | str) -> Conversation:
    """The owner's explicit release: the conversation feeds automatic continuity again.

    Refused while the conversation is still in quarantine (trashed or in a
    hidden folder): leaving quarantine would shield it again anyway.
    """
    global_write_lock()
    conversation = access_conversation(conversation_id, lock=True)
    if in_quarantine(conversation):
        raise Conflict(
            "This conversation is in the trash or in a hidden folder; restore it or move it out first.",
            code="conversation_quarantined",
        )
    conversation.shielded = False
    conversation.save(update_fields=["shielded"])
    shield_released.send(sender=Conversation, conversation_id=conversation.pk)
    return conversation


@refreshes_stale_prompts
def conversation_keep(*, conversation_id: UUID | str) -> Conversation:
    """"Keep this chat": a private chat becomes an ordinary, Continuity-Shielded conversation.

    It is no longer private (so no longer expires) and, shielded, still
    feeds nothing automatically until the owner releases the shield. A
    conversation that is not private is left as it is, so a retried keep
    answers the same conversation.
    """
    global_write_lock()
    conversation = access_conversation(conversation_id, lock=True)
    if conversation.private:
        conversation.private, conversation.shielded = False, True
        conversation.save(update_fields=["private", "shielded"])
    visibility_changed.send(sender=Conversation, conversation_ids=[conversation.pk])
    return conversation
