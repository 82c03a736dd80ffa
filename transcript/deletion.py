"""Deleting a conversation forever: the transcript's part of a durable, multi-step operation (seed 004,
"native deletion continuity"). The steps run in order from `conversations.services.deletion`, which
lists them with the other apps' (memories, continuity, artifacts: each deletes its own rows).

1. **Intent** (`conversation_deletion_intent`, one transaction): the trashed
   conversation is stamped with a fresh `deletion_generation` and a
   `ConversationDeletion` row records it. From that commit on the default
   manager no longer selects it: lists, search, recall, handoff capture, the
   API (404) and the pages all stop seeing it.
2. **Steps** (`conversations.services.deletion.DELETION_STEPS`, each in its own
   transaction, in order): the rows that belong to it are removed and counted.
   Each step only touches a conversation that still carries the deletion's
   generation (`deletion_generation_holds`), so a stale job can never reach a
   newer record. The conversation's attachment blob store (nothing else
   references it: forks copy) is one of the steps.
3. **Receipt** (`deletion_receipt_publish`): the deletion row becomes `complete`
   with its counts (no text).

A crash anywhere leaves the row `pending` with `next_step` naming where to
resume; `finish_pending_deletions` (a django-q2 schedule every minute, and
`scripts/run.sh` at start) finishes it. Work is claimed with a conditional
UPDATE of a lease (`deletion_claim`), so two clusters never run the same
deletion at once, and each step commits together with the progress it records,
so none runs twice.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from elion.base.errors import Conflict, NotFound
from elion.base.rows import access_row
from transcript.access import access_conversation
from transcript.attachments.store import conversation_store
from transcript.guard import transcript_write_guard
from transcript.models import (
    Conversation,
    ConversationDeletion,
    DeletionState,
    IdempotentAction,
    Message,
    MessageAttachment,
    MessageSearchEntry,
)

logger = logging.getLogger(__name__)

CLAIM_LEASE = timedelta(seconds=30)


# --- The transcript's steps: function(conversation_id) -> {count name: rows} -----------------------

# The step a new deletion starts at (`conversations.services.deletion.DELETION_STEPS` begins with it).
FIRST_STEP = "search_entries"


def search_entries_delete(conversation_id: UUID) -> dict[str, int]:
    deleted, _ = MessageSearchEntry.objects.filter(conversation_id=conversation_id).delete()
    return {"search_entries": deleted}


def idempotent_actions_delete(conversation_id: UUID) -> dict[str, int]:
    deleted, _ = IdempotentAction.objects.filter(Q(source_id=conversation_id) | Q(result_id=conversation_id)).delete()
    return {"idempotent_actions": deleted}


def messages_delete(conversation_id: UUID) -> dict[str, int]:
    Conversation.all_objects.filter(pk=conversation_id).update(head=None)
    # Manifest entries first: the raw delete below cascades nothing.
    manifest_entries, _ = MessageAttachment.objects.filter(conversation_id=conversation_id).delete()
    count = Message.objects.filter(conversation_id=conversation_id).count()
    # One statement: parent links inside the conversation go with it (the
    # foreign keys are checked at commit), and the search-index trigger sees
    # each row leave.
    Message.objects.filter(conversation_id=conversation_id)._raw_delete(Message.objects.db)
    return {"messages": count, "attachment_manifest_entries": manifest_entries}


def attachment_blobs_delete(conversation_id: UUID) -> dict[str, int]:
    """The conversation's own blob store. Each conversation holds its own copy of
    every blob it lists (a fork copies, never shares), so nothing else references
    these files; attachment rows no manifest lists any more are the collector's."""
    store = conversation_store(conversation_id)
    files = sum(1 for path in store.rglob("*") if path.is_file()) if store.is_dir() else 0
    shutil.rmtree(store, ignore_errors=True)
    return {"attachment_blobs": files}


def conversation_row_delete(conversation_id: UUID) -> dict[str, int]:
    # The ORM delete cascades whatever a store added without its own step yet,
    # rather than leaving the step failing on a foreign key forever.
    _, per_model = Conversation.all_objects.filter(pk=conversation_id).delete()
    return {"conversations": per_model.get(Conversation._meta.label, 0)}


# --- Intent ---------------------------------------------------------------------------------


@transaction.atomic
def conversation_deletion_intent(*, conversation_id: UUID | str) -> ConversationDeletion:
    """Record the intent to delete a trashed conversation forever; it is unselectable from this commit."""
    conversation = access_conversation(conversation_id, lock=True)
    if not conversation.trashed:
        raise Conflict(
            "Only a conversation in the trash can be deleted forever; move it to the trash first.",
            code="conversation_not_in_trash",
        )
    return _deletion_intent_locked(conversation)


def _deletion_intent_locked(conversation: Conversation) -> ConversationDeletion:
    """Stamp the locked conversation and record the intent. Precondition: in a transaction holding its row lock."""
    transcript_write_guard(conversation, action="delete", allow_trashed=True)
    generation = uuid.uuid4()
    # Conditional: a concurrent intent that already stamped it wins; this one finds nothing.
    stamped = Conversation.objects.filter(pk=conversation.pk, deletion_generation__isnull=True).update(
        deletion_generation=generation
    )
    if stamped != 1:
        raise NotFound("No conversation has that id.", code="conversation_not_found")
    return ConversationDeletion.objects.create(
        conversation_id=conversation.pk, generation=generation, next_step=FIRST_STEP
    )


# --- Private chats past their inactivity period -----------------------------------------------


def private_chat_expiry_cutoff(*, now: datetime | None = None) -> datetime:
    """A private chat with no activity (its `updated_at`) since this moment has expired."""
    return (now or timezone.now()) - timedelta(days=settings.ELION_PRIVATE_CHAT_DAYS)


def expired_private_chats(*, now: datetime | None = None) -> QuerySet[Conversation]:
    return Conversation.objects.filter(private=True, updated_at__lt=private_chat_expiry_cutoff(now=now))


@transaction.atomic
def private_chat_deletion_intent(*, conversation_id: UUID, now: datetime | None = None) -> ConversationDeletion | None:
    """Record the intent to delete an expired private chat forever; None when it no longer qualifies
    (kept, written to since it was listed, or already being deleted)."""
    conversation = expired_private_chats(now=now).select_for_update().filter(pk=conversation_id).first()
    if conversation is None:
        return None
    try:
        return _deletion_intent_locked(conversation)
    except (Conflict, NotFound):
        return None  # a reply is streaming in it (activity), or a concurrent intent stamped it first


# --- Running the steps ----------------------------------------------------------------------


def deletion_claim(deletion_id: int, *, now: datetime | None = None) -> UUID | None:
    """Claim a pending deletion whose lease is free or ran out; None when someone else holds it."""
    now = now or timezone.now()
    claim = uuid.uuid4()
    claimed = (
        ConversationDeletion.objects.filter(pk=deletion_id, state=DeletionState.PENDING)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lte=now))
        .update(claim=claim, claimed_until=now + CLAIM_LEASE)
    )
    return claim if claimed == 1 else None


def deletion_generation_holds(deletion: ConversationDeletion) -> bool:
    """Is the conversation this deletion names still the generation it stamped (or gone)?"""
    current = Conversation.all_objects.filter(pk=deletion.conversation_id).values_list(
        "deletion_generation", flat=True
    ).first()
    return current == deletion.generation


def deletion_receipt_publish(deletion: ConversationDeletion) -> None:
    deletion.state = DeletionState.COMPLETE
    deletion.completed_at = timezone.now()
    deletion.claim = None
    deletion.claimed_until = None
    deletion.save(update_fields=["state", "completed_at", "claim", "claimed_until"])
    logger.info("conversation %s deleted forever (deletion #%s): %s", deletion.conversation_id, deletion.pk,
                deletion.counts)


def deletion_receipt(deletion: ConversationDeletion) -> dict:
    """The receipt: identities and counts, never text."""
    return {
        "id": deletion.pk,
        "conversation_id": str(deletion.conversation_id),
        "generation": str(deletion.generation),
        "state": deletion.state,
        "counts": deletion.counts,
        "requested_at": deletion.requested_at.isoformat() if deletion.requested_at else None,
        "completed_at": deletion.completed_at.isoformat() if deletion.completed_at else None,
    }


def access_deletion(deletion_id: object) -> ConversationDeletion:
    return access_row(
        ConversationDeletion.objects.all(), deletion_id, kind="int", missing="No deletion has that id.", code="deletion_not_found"
    )
