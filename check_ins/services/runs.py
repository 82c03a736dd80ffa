"""Claiming and finishing a check-in's due times: each due time runs exactly once.

1. The minute's task (`check_ins.tasks.check_ins_run_due`) calls
   `due_runs_claim`: for every enabled check-in whose `next_run_at` has come,
   one transaction INSERTs the due time's `CheckInRun` (its UNIQUE
   (check_in, due_at) key is the claim: a second cluster's INSERT fails and it
   moves on) and moves `next_run_at` to the next due time after now. A due time
   missed while the server was down runs if it is younger than
   `ELION_CHECK_IN_MAX_LATE`; older ones are recorded `skipped` (at most
   `MISSED_RECORDED` of them per check-in, the newest).
2. A worker takes a claimed run with `run_take`: a conditional UPDATE of its
   lease (`claim`, `claimed_until`), checked by row count, so two workers given
   the same run never both run it. A worker killed mid-run leaves the lease to
   run out; `free_runs` finds it and a worker takes it again. Taking it again
   never writes a second turn or reply: the trigger's id is the run's
   (`trigger_id_for`), and the send path answers a repeated turn with the reply
   already stored (`conversations.sending.prepare`).
3. `run_finish` records how it ended; `announce_check_in_reply` tells the owner.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from check_ins.models import FINISHED_STATUSES, CheckIn, CheckInRun, RunStatus
from check_ins.services.check_ins import schedule_of
from check_ins.services.schedule_policy import due_times_through, next_due
from transcript.models import Conversation

logger = logging.getLogger(__name__)

# A run taken this many times without finishing is given up (recorded failed): a run that kills its worker
# every time must not be retried forever.
MAX_ATTEMPTS = 3
# Missed due times recorded `skipped` per check-in and pass (the newest); older ones leave no row.
MISSED_RECORDED = 50
# Check-ins claimed per pass of the minute's task; the next pass (a minute later) takes the rest.
CLAIMS_PER_PASS = 5000
_TRIGGER_NAMESPACE = uuid.UUID("6f7c0f0e-8d1e-4c52-9a55-44c8ec4e1c44")


def trigger_id_for(run_id: UUID) -> UUID:
    """The id of the trigger a run writes: derived from the run, so every attempt names the same turn."""
    return uuid.uuid5(_TRIGGER_NAMESPACE, str(run_id))


def _lease(now: datetime) -> datetime:
    return now + timedelta(seconds=settings.ELION_CHECK_IN_LEASE_SECONDS)


def _run_insert(check_in: CheckIn, due_at: datetime, *, status: str, now: datetime, **fields: object) -> CheckInRun | None:
    """INSERT the run of `due_at` in a savepoint: None when that due time is claimed already."""
    run_id = uuid.uuid4()
    run = CheckInRun(
        id=run_id, check_in=check_in, due_at=due_at, status=status, trigger_message_id=trigger_id_for(run_id),
        # Dispatched with a lease: the minute's task hands it on again only if nobody took it by then.
        claimed_until=_lease(now) if status == RunStatus.RUNNING else None,
        finished_at=None if status == RunStatus.RUNNING else now, **fields,
    )
    try:
        with transaction.atomic():
            run.save(force_insert=True)
    except IntegrityError:
        return None
    return run


def _claim_due(check_in_id: int, now: datetime) -> CheckInRun | None:
    """One check-in's due times through `now`: the newest run (if young enough) claimed, older ones skipped,
    `next_run_at` moved past now. Locks the check-in row, so two passes never interleave on it."""
    with transaction.atomic():
        check_in = CheckIn.objects.select_for_update().filter(pk=check_in_id, enabled=True).first()
        if check_in is None or check_in.next_run_at is None or check_in.next_run_at > now:
            return None  # another pass took it meanwhile, or the owner paused it
        schedule = schedule_of(check_in)
        dues = due_times_through(schedule, check_in.next_run_at, now, limit=MISSED_RECORDED)
        max_late = timedelta(seconds=settings.ELION_CHECK_IN_MAX_LATE)
        claimed = None
        for due in dues:
            if now - due > max_late:
                _run_insert(check_in, due, status=RunStatus.SKIPPED, now=now,
                            reason=f"missed while the server was down ({_hours(now - due)} late)")
            elif due is not dues[-1]:
                _run_insert(check_in, due, status=RunStatus.SKIPPED, now=now,
                            reason="missed while the server was down; a later due time ran instead")
            else:
                claimed = _run_insert(check_in, due, status=RunStatus.RUNNING, now=now)
        check_in.next_run_at = next_due(schedule, now)
        check_in.save(update_fields=["next_run_at", "updated_at"])
        return claimed


def _hours(late: timedelta) -> str:
    hours = late.total_seconds() / 3600
    return f"{hours:.1f} h" if hours >= 1 else f"{int(late.total_seconds() // 60)} min"


def due_runs_claim(*, now: datetime | None = None) -> list[UUID]:
    """Claim every due time that has come (step 1 above); the ids of the runs to start now.

    Of several due times missed while the server was down only the newest can run (once, if younger than
    `ELION_CHECK_IN_MAX_LATE`); the others are recorded skipped. Nothing is claimed twice, whichever
    process calls this and however often.
    """
    now = now or timezone.now()
    due_ids = list(
        CheckIn.objects.filter(enabled=True, next_run_at__lte=now).order_by("next_run_at")
        .values_list("pk", flat=True)[:CLAIMS_PER_PASS]
    )
    claimed = []
    for check_in_id in due_ids:
        run = _claim_due(check_in_id, now)
        if run is not None:
            claimed.append(run.id)
    return claimed


def run_now_claim(*, check_in: CheckIn, idempotency_key: str, now: datetime | None = None) -> tuple[CheckInRun, bool]:
    """Run now (the owner's button, `POST /api/check-ins/{id}/run/`): the run of this Idempotency-Key,
    claimed now if new. (run, created): the same key again returns the first run, `created` False."""
    now = now or timezone.now()
    existing = CheckInRun.objects.filter(check_in=check_in, idempotency_key=idempotency_key).first()
    if existing is not None:
        return existing, False
    run = _run_insert(check_in, now, status=RunStatus.RUNNING, now=now, manual=True, idempotency_key=idempotency_key)
    if run is None:  # the same key at the same moment from another request
        return CheckInRun.objects.get(check_in=check_in, idempotency_key=idempotency_key), False
    return run, True


def run_take(run_id: UUID, *, now: datetime | None = None) -> CheckInRun | None:
    """Take the lease of a claimed run (step 2 above): the run, or None when it is finished, gone, or held by
    a live worker. A run taken `MAX_ATTEMPTS` times already is given up (recorded failed) instead."""
    now = now or timezone.now()
    # Never taken (attempts 0: the first taker wins, the UPDATE sets attempts), or its taker's lease ran out.
    free = Q(pk=run_id, status=RunStatus.RUNNING) & (Q(attempts=0) | Q(claimed_until__lte=now))
    taken = CheckInRun.objects.filter(free, attempts__lt=MAX_ATTEMPTS).update(
        claimed_until=_lease(now), attempts=F("attempts") + 1
    )
    if not taken:
        CheckInRun.objects.filter(free, attempts__gte=MAX_ATTEMPTS).update(
            status=RunStatus.FAILED, reason="given up: its worker stopped every time it ran", finished_at=now
        )
        return None
    return CheckInRun.objects.select_related("check_in").filter(pk=run_id).first()


def run_release(run: CheckInRun, *, until: datetime, attempt_spent: bool = True) -> None:
    """Give the run's lease back until `until`, when a later pass takes it again: its reply still streams in
    another process, or the conversation is busy with the owner's own reply (`attempt_spent=False`: waiting
    for the owner is no failed attempt)."""
    changes: dict[str, object] = {"claimed_until": until}
    if not attempt_spent:
        # Never below 1: a run at 0 could be taken by anyone at once, lease or not.
        changes["attempts"] = Greatest(F("attempts") - 1, 1)
    CheckInRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(**changes)


def free_runs(*, now: datetime | None = None) -> list[UUID]:
    """Runs nobody holds whose lease ran out: dispatched and never taken (their task was lost), their worker
    died, or released until now (step 2 above). Handing one to two workers is harmless: one takes it."""
    now = now or timezone.now()
    return list(
        CheckInRun.objects.filter(status=RunStatus.RUNNING, claimed_until__lte=now)
        .values_list("pk", flat=True)[:CLAIMS_PER_PASS]
    )


def run_conversation_set(run: CheckInRun, conversation: Conversation) -> None:
    """Record where the run writes (a new chat made for it), in the caller's transaction."""
    run.conversation = conversation
    CheckInRun.objects.filter(pk=run.pk).update(conversation=conversation)


def run_finish(run: CheckInRun, *, status: str, reason: str = "", reply_message_id: UUID | None = None,
               now: datetime | None = None) -> None:
    """Record how the run ended (a finished status), and the check-in's `last_run_at` for a run that wrote."""
    now = now or timezone.now()
    assert status in FINISHED_STATUSES, status
    with transaction.atomic():
        CheckInRun.objects.filter(pk=run.pk).update(
            status=status, reason=reason[:300], reply_message_id=reply_message_id, finished_at=now,
        )
        if status in (RunStatus.DONE, RunStatus.FAILED):
            CheckIn.objects.filter(pk=run.check_in_id).update(last_run_at=now)
    run.status, run.reason, run.reply_message_id, run.finished_at = status, reason, reply_message_id, now


def announce_check_in_reply(run: CheckInRun) -> None:
    """A check-in's reply is stored (done or failed): tell the owner. The one place that does: the
    conversation gets its unread mark (`Conversation.unread`, shown in the sidebar and the list API;
    cleared by `conversations.services.threads.thread_writes.conversation_mark_read`) — and Web Push is sent
    from here (wired at merge)."""
    if run.conversation_id is not None:
        Conversation.objects.filter(pk=run.conversation_id).update(unread=True)
