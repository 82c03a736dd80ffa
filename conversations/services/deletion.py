"""Deleting a conversation forever, step by step (seed 004, "native deletion continuity").

The steps are each app's own deletes, run in this order, each in its own transaction with the progress it
records: the transcript's search entries, memories' snapshot and proposals, continuity's handoffs and
compactions, the transcript's retry-safe actions, artifacts, then the transcript's messages, blob store and
conversation row. The intent, the claim, the generation check and the receipt are the transcript's
(`transcript.deletion`, whose docstring tells the whole operation). A step's name is stored in
`ConversationDeletion.next_step`: names never change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from artifacts.services import conversation_artifacts_delete
from continuity.rules.deletion_store import conversation_continuity_rows_delete
from memories.services.conversation_deletion import conversation_memory_rows_delete
from transcript.deletion import (
    CLAIM_LEASE,
    FIRST_STEP,
    attachment_blobs_delete,
    conversation_deletion_intent,
    conversation_row_delete,
    deletion_claim,
    deletion_generation_holds,
    deletion_receipt_publish,
    expired_private_chats,
    idempotent_actions_delete,
    messages_delete,
    private_chat_deletion_intent,
    search_entries_delete,
)
from transcript.models import ConversationDeletion, DeletionState

logger = logging.getLogger(__name__)

DELETION_STEPS: list[tuple[str, Callable[[UUID], dict[str, int]]]] = [
    ("search_entries", search_entries_delete),
    ("memory_snapshot", conversation_memory_rows_delete),
    ("continuity_records", conversation_continuity_rows_delete),
    ("idempotent_actions", idempotent_actions_delete),
    ("artifacts", conversation_artifacts_delete),
    ("messages", messages_delete),
    ("attachment_blobs", attachment_blobs_delete),
    ("conversation", conversation_row_delete),
]
STEP_NAMES = [name for name, _ in DELETION_STEPS]
assert STEP_NAMES[0] == FIRST_STEP, "a new deletion's intent names the first step"


def conversation_delete_forever(*, conversation_id: UUID | str) -> ConversationDeletion:
    """Intent, then every step, then the receipt. A crash part-way is finished by the job."""
    deletion = conversation_deletion_intent(conversation_id=conversation_id)
    try:
        deletion_run(deletion.pk)
    except Exception:  # noqa: BLE001 - the intent is committed; the job finishes what failed here
        logger.exception("deletion #%s stopped part-way; finish_pending_deletions will complete it", deletion.pk)
    deletion.refresh_from_db()
    return deletion


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
                deletion_receipt_publish(deletion)
                return True
            name = deletion.next_step
            step = dict(DELETION_STEPS)[name]
            # Only the stamped generation is ever touched; a conversation that is
            # gone (the last step committed) leaves nothing for earlier steps.
            counts = step(deletion.conversation_id) if deletion_generation_holds(deletion) else {}
            deletion.counts = {**deletion.counts, **{key: deletion.counts.get(key, 0) + n for key, n in counts.items()}}
            index = STEP_NAMES.index(name)
            deletion.next_step = STEP_NAMES[index + 1] if index + 1 < len(STEP_NAMES) else ""
            deletion.claimed_until = timezone.now() + CLAIM_LEASE
            deletion.save(update_fields=["counts", "next_step", "claimed_until"])
        if stop_after == name:
            return False


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
