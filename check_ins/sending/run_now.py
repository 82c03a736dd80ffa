"""Run now (`POST /api/check-ins/{id}/run/`, Settings → Check-ins): one run of a check-in at this moment, named
by the request's Idempotency-Key, through the same steps as a scheduled run (`check_ins.sending.turn`).

The first request with a key claims a run (its due time: now) and runs it to the end: the answer names the
reply. The same key again names the same run and its reply, and runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from check_ins.models import CheckInRun, RunStatus
from check_ins.sending.turn import check_in_run_execute
from check_ins.services.check_ins import access_check_in
from check_ins.services.runs import run_now_claim
from elion.base.errors import Conflict
from elion.base.idempotency import idempotency_key_clean
from transcript.models import Message, Role


@dataclass(frozen=True)
class RunNowResult:
    conversation_id: UUID
    message_id: UUID
    created: bool


def check_in_run_now(*, check_in_id: object, idempotency_key: object) -> RunNowResult:
    """Run the check-in now (400 `idempotency_key_required` without a key; 404 unknown check-in). 409 when it
    wrote nothing: its target may not be written to (`check_in_paused`, the check-in is paused), a reply is
    streaming there now (`reply_in_progress`: the run waits and the minute's task runs it), or the send was
    refused (`check_in_run_failed`, with the reason); the same key asked again while its run is still going
    is 409 `check_in_run_in_progress` until the reply exists."""
    key = idempotency_key_clean(idempotency_key)
    check_in = access_check_in(check_in_id)
    run, created = run_now_claim(check_in=check_in, idempotency_key=key)
    if created:
        outcome = check_in_run_execute(run.id)
        run.refresh_from_db()
        if outcome.message_id is None or outcome.status == "busy":
            _refusal(run, outcome.status, outcome.reason)
        return RunNowResult(outcome.conversation_id, outcome.message_id, created=True)
    reply_id = run.reply_message_id or _reply_of(run)
    if reply_id is None or run.conversation_id is None:
        if run.status in (RunStatus.PAUSED, RunStatus.FAILED):
            _refusal(run, run.status, run.reason)
        raise Conflict("This run is still going; ask again in a moment.", code="check_in_run_in_progress")
    return RunNowResult(run.conversation_id, reply_id, created=False)


def _reply_of(run: CheckInRun) -> UUID | None:
    """The reply under the run's trigger, once the send stored it (the run may not have recorded it yet)."""
    return (
        Message.objects.filter(parent_id=run.trigger_message_id, role=Role.ASSISTANT)
        .order_by("seq").values_list("pk", flat=True).first()
    )


def _refusal(run: CheckInRun, status: str, reason: str) -> None:
    if status == RunStatus.PAUSED:
        raise Conflict(reason, code="check_in_paused")
    if status == "busy":
        raise Conflict(
            "A reply is streaming in this conversation now; the check-in runs once it has finished.",
            code="reply_in_progress",
        )
    raise Conflict(f"The check-in wrote nothing: {reason}", code="check_in_run_failed")
