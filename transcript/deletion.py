"""Deleting a conversation forever: a durable, multi-step operation (seed 004,
"native deletion continuity").

1. **Intent** (`conversation_delete_forever`, one transaction): the trashed
   conversation is stamped with a fresh `deletion_generation` and a
   `ConversationDeletion` row records it. From that commit on the default
   manager no longer selects it: lists, search, recall, handoff capture, the
   API (404) and the pages all stop seeing it.
2. **Steps** (`DELETION_STEPS`, each in its own transaction, in order): the
   rows that belong to it are removed and counted. Each step only touches a
   conversation that still carries the deletion's generation, so a stale job
   can never reach a newer record. The conversation's attachment blob store
   (nothing else references it: forks copy) is one of the steps.
3. **Receipt**: the deletion row becomes `complete` with its counts (no text).

A crash anywhere leaves the row `pending` with `next_step` naming where to
resume; `finish_pending_deletions` (a django-q2 schedule every minute, and
`scripts/run.sh` at start) finishes it. Work is claimed with a conditional
UPDATE of a lease, so two clusters never run the same deletion at once, and
each step commits together with the progress it records, so none runs twice.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from artifacts.models import Artifact, ArtifactVersion
from continuity.models import Compaction, PromptReconciliationFailure, ThreadHandoff
from elion.base.errors import Conflict, NotFound
from elion.base.rows import access_row
from memories.models import ConversationMemorySnapshot, MemoryProposal, ProposalStatus, SnapshotMembership
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


# --- Steps: (name, function(conversation_id) -> {count name: rows}) -------------------------


def _step_search_entries(conversation_id: UUID) -> dict[str, int]:
    deleted, _ = MessageSearchEntry.objects.filter(conversation_id=conversation_id).delete()
    return {"search_entries": deleted}


def _step_memory_snapshot(conversation_id: UUID) -> dict[str, int]:
    memberships, _ = SnapshotMembership.objects.filter(conversation_id=conversation_id).delete()
    snapshots, _ = ConversationMemorySnapshot.objects.filter(conversation_id=conversation_id).delete()
    return {"snapshot_memberships": memberships, "memory_snapshots": snapshots, **_memory_proposals(conversation_id)}


def _memory_proposals(conversation_id: UUID) -> dict[str, int]:
    """Its pending and dismissed memory proposals go with it; an approved one stays with its memory,
    without its source (the messages it named are deleted next)."""
    proposals, _ = MemoryProposal.objects.filter(conversation_id=conversation_id).exclude(
        status=ProposalStatus.APPROVED
    ).delete()
    detached = MemoryProposal.objects.filter(conversation_id=conversation_id).update(
        conversation=None, source_message=None, reply=None
    )
    return {"memory_proposals": proposals, "memory_proposals_detached": detached}


def _step_continuity_records(conversation_id: UUID) -> dict[str, int]:
    handoffs, _ = ThreadHandoff.objects.filter(destination_id=conversation_id).delete()
    # Handoffs this conversation gave keep their provenance row, without the source.
    detached = ThreadHandoff.objects.filter(source_id=conversation_id).update(source=None)
    failures, _ = PromptReconciliationFailure.objects.filter(conversation_id=conversation_id).delete()
    counts = {"handoffs": handoffs, "handoff_sources_detached": detached, "reconciliation_failures": failures}
    counts.update(_compactions_delete(conversation_id))
    return counts


def _compactions_delete(conversation_id: UUID) -> dict[str, int]:
    deleted, _ = Compaction.objects.filter(conversation_id=conversation_id).delete()
    return {"compactions": deleted}


def _step_idempotent_actions(conversation_id: UUID) -> dict[str, int]:
    deleted, _ = IdempotentAction.objects.filter(Q(source_id=conversation_id) | Q(result_id=conversation_id)).delete()
    return {"idempotent_actions": deleted}


def _step_artifacts(conversation_id: UUID) -> dict[str, int]:
    """Artifacts born here (with all their versions), and versions written here of artifacts born elsewhere."""
    _, per_model = Artifact.objects.filter(conversation_id=conversation_id).delete()
    versions, _ = ArtifactVersion.objects.filter(conversation_id=conversation_id).delete()
    return {
        "artifacts": per_model.get(Artifact._meta.label, 0),
        "artifact_versions": per_model.get(ArtifactVersion._meta.label, 0) + versions,
    }


def _step_messages(conversation_id: UUID) -> dict[str, int]:
    Conversation.all_objects.filter(pk=conversation_id).update(head=None)
    # Manifest entries first: the raw delete below cascades nothing.
    manifest_entries, _ = MessageAttachment.objects.filter(conversation_id=conversation_id).delete()
    count = Message.objects.filter(conversation_id=conversation_id).count()
    # One statement: parent links inside the conversation go with it (the
    # foreign keys are checked at commit), and the search-index trigger sees
    # each row leave.
    Message.objects.filter(conversation_id=conversation_id)._raw_delete(Message.objects.db)
    return {"messages": count, "attachment_manifest_entries": manifest_entries}


def _step_attachment_blobs(conversation_id: UUID) -> dict[str, int]:
    """The conversation's own blob store. Each conversation holds its own copy of
    every blob it lists (a fork copies, never shares), so nothing else references
    these files; attachment rows no manifest lists any more are the collector's."""
    store = conversation_store(conversation_id)
    files = sum(1 for path in store.rglob("*") if path.is_file()) if store.is_dir() else 0
    shutil.rmtree(store, ignore_errors=True)
    return {"attachment_blobs": files}


def _step_conversation(conversation_id: UUID) -> dict[str, int]:
    # The ORM delete cascades whatever a store added without its own step yet,
    # rather than leaving the step failing on a foreign key forever.
    _, per_model = Conversation.all_objects.filter(pk=conversation_id).delete()
    return {"conversations": per_model.get(Conversation._meta.label, 0)}


DELETION_STEPS: list[tuple[str, Callable[[UUID], dict[str, int]]]] = [
    ("search_entries", _step_search_entries),
    ("memory_snapshot", _step_memory_snapshot),
    ("continuity_records", _step_continuity_records),
    ("idempotent_actions", _step_idempotent_actions),
    ("artifacts", _step_artifacts),
    ("messages", _step_messages),
    ("attachment_blobs", _step_attachment_blobs),
    ("conversation", _step_conversation),
]
STEP_NAMES = [name for name, _ in DELETION_STEPS]


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
        conversation_id=conversation.pk, generation=generation, next_step=STEP_NAMES[0]
    )


def conversation_delete_forever(*, conversation_id: UUID | str) -> ConversationDeletion:
    """Intent, then every step, then the receipt. A crash part-way is finished by the job."""
    deletion = conversation_deletion_intent(conversation_id=conversation_id)
    try:
        deletion_run(deletion.pk)
    except Exception:  # noqa: BLE001 - the intent is committed; the job finishes what failed here
        logger.exception("deletion #%s stopped part-way; finish_pending_deletions will complete it", deletion.pk)
    deletion.refresh_from_db()
    return deletion


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


def private_chats_expire(*, now: datetime | None = None) -> list[ConversationDeletion]:
    """Delete forever every private chat inactive for `ELION_PRIVATE_CHAT_DAYS`, through the
    permanent-deletion steps; returns their deletions (receipts once complete)."""
    deletions = []
    for conversation_id in list(expired_private_chats(now=now).values_list("pk", flat=True)):
        deletion = private_chat_deletion_intent(conversation_id=conversation_id, now=now)
        if deletion is None:
            continue
        try:
            deletion_run(deletion.pk)
        except Exception:  # noqa: BLE001 - the intent is committed; finish_pending_deletions completes it
            logger.exception("deletion #%s of an expired private chat stopped part-way", deletion.pk)
        deletion.refresh_from_db()
        deletions.append(deletion)
    return deletions


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


def _generation_holds(deletion: ConversationDeletion) -> bool:
    """Is the conversation this deletion names still the generation it stamped (or gone)?"""
    current = Conversation.all_objects.filter(pk=deletion.conversation_id).values_list(
        "deletion_generation", flat=True
    ).first()
    return current == deletion.generation


def deletion_run(deletion_id: int, *, claim: UUID | None = None, stop_after: str | None = None) -> bool:
    """Run the remaining steps and publish the receipt; True when the receipt is published.

    `stop_after` names a step after which to stop, leaving the claim to run
    out as a killed process would (used to prove crash recovery).
    """
    claim = claim or deletion_claim(deletion_id)
    if claim is None:
        return False
    while True:
        with transaction.atomic():
            deletion = ConversationDeletion.objects.select_for_update().filter(pk=deletion_id, claim=claim).first()
            if deletion is None or deletion.state != DeletionState.PENDING:
                return False  # the claim was lost (lease ran out and another took it) or it is done
            if not deletion.next_step:
                _receipt_publish(deletion)
                return True
            name = deletion.next_step
            step = dict(DELETION_STEPS)[name]
            # Only the stamped generation is ever touched; a conversation that is
            # gone (the last step committed) leaves nothing for earlier steps.
            counts = step(deletion.conversation_id) if _generation_holds(deletion) else {}
            deletion.counts = {**deletion.counts, **{key: deletion.counts.get(key, 0) + n for key, n in counts.items()}}
            index = STEP_NAMES.index(name)
            deletion.next_step = STEP_NAMES[index + 1] if index + 1 < len(STEP_NAMES) else ""
            deletion.claimed_until = timezone.now() + CLAIM_LEASE
            deletion.save(update_fields=["counts", "next_step", "claimed_until"])
        if stop_after == name:
            return False


def _receipt_publish(deletion: ConversationDeletion) -> None:
    deletion.state = DeletionState.COMPLETE
    deletion.completed_at = timezone.now()
    deletion.claim = None
    deletion.claimed_until = None
    deletion.save(update_fields=["state", "completed_at", "claim", "claimed_until"])
    logger.info("conversation %s deleted forever (deletion #%s): %s", deletion.conversation_id, deletion.pk,
                deletion.counts)


def deletions_finish(*, now: datetime | None = None) -> int:
    """Finish every pending deletion whose claim is free or ran out; returns how many completed."""
    now = now or timezone.now()
    pending = ConversationDeletion.objects.filter(state=DeletionState.PENDING).filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)
    )
    finished = 0
    for deletion_id in list(pending.order_by("pk").values_list("pk", flat=True)):
        claim = deletion_claim(deletion_id, now=now)
        if claim is None:
            continue  # another cluster claimed it between the list and the claim
        ConversationDeletion.objects.filter(pk=deletion_id).update(attempts=F("attempts") + 1)
        try:
            finished += deletion_run(deletion_id, claim=claim)
        except Exception:  # noqa: BLE001 - one failing deletion must not stop the others; retried next run
            logger.exception("deletion #%s failed; it will be retried", deletion_id)
    return finished


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
