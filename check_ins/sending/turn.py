"""A check-in's turn: its trigger and an ordinary reply, through the ordinary send path.

`check_in_run_execute(run_id)` is what a worker (the minute's task, a run
taken again after its worker died) and Run now both call:

1. take the run's lease (`runs.run_take`): nobody else runs it meanwhile;
2. find where it writes: "a new chat each time" makes one through the ordinary
   New Chat path (`conversation_create`: its automatic handoff and memory
   snapshot), recorded on the run in the same transaction so a second attempt
   reuses it; "this conversation" is the target, which must be in the `normal`
   state (`continuity.rules.eligibility.may_write_first`) or the check-in is
   paused, saying why, with no run and no reply;
3. send: `send_prepare` with the trigger as the turn (`SendCommand.check_in`;
   its id the run's `trigger_message_id`), then the reply run to its end
   (`ReplyRun`, as every send's reply: stored, broadcast to watchers, indexed). A second attempt of
   the same run meets the stored turn: the send path answers it with the reply
   already stored, never a second one;
4. record how it ended (`runs.run_finish`) and tell the owner
   (`runs.announce_check_in_reply`), for a reply stored complete or failed alike.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from uuid import UUID
from zoneinfo import ZoneInfo

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from check_ins.models import CheckIn, CheckInRun, RunStatus, TargetKind
from check_ins.services.check_ins import check_in_pause
from check_ins.services.runs import announce_check_in_reply, run_conversation_set, run_finish, run_release, run_take
from continuity.rules.eligibility import may_write_first
from conversations.sending.commands import SendCommand
from conversations.sending.prepare import (
    CHECK_IN_TARGET_REFUSED,
    FreshReply,
    PreparedReply,
    ReplayedReply,
    send_prepare,
)
from conversations.sending.run import ReplyRun
from conversations.services.threads.thread_writes import conversation_create
from elion.base.errors import ServiceError
from operations.push.replies import notify_reply
from transcript.models import Conversation, Message, MessageStatus, Persona

logger = logging.getLogger(__name__)

# A reply that ended so is one the owner can read (or Retry, when failed): the run is done.
_WRITTEN = {MessageStatus.COMPLETE, MessageStatus.INCOMPLETE, MessageStatus.INTERRUPTED}


@dataclass(frozen=True)
class RunOutcome:
    """How one attempt at a run ended: its status (a `RunStatus`, or "busy"/"taken"), and where it wrote."""

    status: str
    conversation_id: UUID | None = None
    message_id: UUID | None = None
    reason: str = ""


def check_in_run_execute(run_id: UUID) -> RunOutcome:
    """Run one claimed run (steps 1 to 4 above). Precondition: no transaction is open (the send's is durable);
    called from sync code (a django-q task, a sync view): the reply streams in an event loop of asgiref's."""
    run = run_take(run_id)
    if run is None:
        return RunOutcome("taken")
    check_in = CheckIn.objects.filter(pk=run.check_in_id).first()
    if check_in is None:
        return RunOutcome("taken")  # deleted meanwhile: its runs went with it
    conversation = _target(run, check_in)
    refusal = may_write_first(conversation)
    if refusal is not None:
        return _paused(run, check_in, refusal)
    try:
        prepared = send_prepare(_command(run, check_in, conversation))
    except ServiceError as exc:
        return _refused(run, check_in, exc)
    if isinstance(prepared, ReplayedReply) and prepared.status == MessageStatus.STREAMING:
        # Taken again while its reply still streams in a live process: look again once its lease ran out.
        run_release(run, until=timezone.now() + timedelta(seconds=settings.ELION_STREAM_LEASE_SECONDS))
        return RunOutcome("busy", conversation.pk, prepared.assistant_message_id)
    status = async_to_sync(reply_to_end)(prepared) if isinstance(prepared, FreshReply) else prepared.status
    return _finished(run, prepared, status)


def _target(run: CheckInRun, check_in: CheckIn) -> Conversation | None:
    """Where the run writes: its target, or its new chat (made once, through the ordinary New Chat path)."""
    if check_in.target_kind == TargetKind.CONVERSATION:
        return Conversation.objects.select_related("folder").filter(pk=check_in.conversation_id).first()
    if run.conversation_id is not None:
        made = Conversation.objects.select_related("folder").filter(pk=run.conversation_id).first()
        if made is not None:
            return made
    # The conversation and the run's record of it commit together: a second attempt finds it.
    with transaction.atomic():
        conversation = conversation_create(persona=Persona.ELION, title=check_in.title, title_auto=True)
        run_conversation_set(run, conversation)
    return conversation


def _command(run: CheckInRun, check_in: CheckIn, conversation: Conversation) -> SendCommand:
    """The send of the run's trigger: the brief as the turn's content, the run's trigger id as its client id
    (so a second attempt is the same turn), and what the trigger records."""
    zone_due = timezone.localtime(run.due_at, timezone=ZoneInfo(check_in.time_zone))
    return SendCommand(
        conversation_id=conversation.pk,
        content=check_in.brief,
        client_message_id=run.trigger_message_id,
        check_in={
            "id": check_in.pk,
            "run_id": str(run.pk),
            "title": check_in.title,
            "due_at": run.due_at.isoformat(),
            "due_local": f"{zone_due:%a %d %b %Y, %H:%M} {check_in.time_zone}",
            "manual": run.manual,
        },
    )


async def reply_to_end(prepared: FreshReply) -> str:
    """Run the reply to its end (stored, broadcast to any watcher, indexed), as every send's reply runs
    (`ReplyRun`); its final status."""
    run = ReplyRun(prepared)
    await run.start()
    status = MessageStatus.FAILED
    while not run.queue.empty():
        name, data = run.queue.get_nowait()
        if name == "done":
            status = data.get("status", status)
    return status


def _finished(run: CheckInRun, prepared: PreparedReply, status: str) -> RunOutcome:
    if run.conversation_id != prepared.conversation_id:
        run_conversation_set(run, Conversation(pk=prepared.conversation_id))
    reply = Message.objects.filter(pk=prepared.assistant_message_id).only("status").first()
    stored = reply.status if reply is not None else status
    done = RunStatus.DONE if stored in _WRITTEN else RunStatus.FAILED
    run_finish(run, status=done, reply_message_id=prepared.assistant_message_id,
               reason="" if done == RunStatus.DONE else "the reply failed; Retry is under it")
    announce_check_in_reply(run)
    _notify_owner(run, failed=done == RunStatus.FAILED)
    return RunOutcome(done, prepared.conversation_id, prepared.assistant_message_id)


def _notify_owner(run: CheckInRun, *, failed: bool) -> None:
    """Web Push to the owner's browsers once the reply is stored (docs/push.md): the reply's text goes only to
    `notify_reply`, which leaves it out unless the owner turned `push_shows_text` on; a failed reply says so."""
    text = None
    if not failed:
        text = Message.objects.filter(pk=run.reply_message_id).values_list("content", flat=True).first()
    notify_reply(conversation_id=run.conversation_id, message_id=run.reply_message_id, text=text, failed=failed)


def _paused(run: CheckInRun, check_in: CheckIn, refusal: str) -> RunOutcome:
    """The target may not be written to: the check-in pauses, saying why; the run is recorded paused."""
    reason = f"Paused: {refusal}."
    check_in_pause(check_in=check_in, reason=reason)
    run_finish(run, status=RunStatus.PAUSED, reason=reason)
    return RunOutcome(RunStatus.PAUSED, reason=reason)


def _refused(run: CheckInRun, check_in: CheckIn, exc: ServiceError) -> RunOutcome:
    """The send refused the trigger before any reply: paused (the target changed under the send's lock),
    busy (a reply streams there now: a later pass tries again), or failed with the reason."""
    if exc.code == CHECK_IN_TARGET_REFUSED:
        return _paused(run, check_in, exc.detail)
    if exc.code == "reply_in_progress":
        run_release(run, until=timezone.now() + timedelta(seconds=60), attempt_spent=False)
        return RunOutcome("busy", reason=exc.detail)
    logger.warning("check-in run %s refused: %s (%s)", run.pk, exc.detail, exc.code)
    run_finish(run, status=RunStatus.FAILED, reason=f"{exc.detail} ({exc.code})")
    return RunOutcome(RunStatus.FAILED, reason=exc.detail)
