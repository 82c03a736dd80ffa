"""Check-in proposals: Elion may suggest a check-in, only the owner schedules one (issue 44, item 3).

They follow memory proposals' governance (`memories.services.proposals`):

- `check_in_propose` (the `propose_check_in` tool's service) records a
  suggestion with its source: the conversation, the owner's turn the reply
  answered, the reply and the tool call. It schedules nothing. It refuses,
  with a reason the model reads, when Settings → "Elion may propose
  check-ins" is off, when the conversation may not suggest
  (`continuity.rules.eligibility.may_suggest_memories`: never private,
  shielded, trashed or hidden; the same line as memories), when the same
  title and brief are already pending or were dismissed, and when the
  conversation already has `PENDING_MAX` pending. Its fields are checked as
  the check-ins API checks them (`check_ins.services.inputs`), so a malformed
  schedule is an error result the model can correct, never a card that
  cannot be approved.
- `check_in_proposal_approve` creates an ordinary check-in through
  `check_ins.services.check_ins.check_in_create` (optionally with the owner's
  edits), so every rule of a check-in the owner makes by hand holds: the
  target is checked against `may_write_first` when it is approved, not only
  when it was proposed.
- `check_in_proposal_dismiss` keeps it as dismissed (the same suggestion is
  then refused).

Each write locks the proposal's row, so an approve racing a dismiss (two tabs)
leaves exactly one of them done and the other a 409.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID
from zoneinfo import ZoneInfo

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from check_ins.models import CheckIn, CheckInProposal, ProposalStatus, TargetKind
from check_ins.services import inputs
from check_ins.services.check_ins import check_in_create, check_in_next_due
from continuity.rules.eligibility import may_suggest_memories
from elion.base.assistant_settings import assistant_settings_read
from elion.base.errors import InvalidInput
from elion.base.proposals import (
    ProposalOutcome,
    proposal_changes_checked,
    proposal_dismissed,
    proposal_pending_check,
    proposal_reason_clean,
    proposal_refused,
    proposals_of_status,
)
from elion.base.rows import access_row
from transcript.models import Conversation, Message

# Pending proposals one conversation may hold: enough to choose from, too few to nag.
PENDING_MAX = 3
REASON_MAX = 500
TOOL_CALL_ID_MAX = 200
# The tool's words for where a check-in writes, and the API's.
TOOL_TARGETS = {"this_conversation": TargetKind.CONVERSATION, "new_chat": TargetKind.NEW_CHAT}
APPROVE_FIELDS = ("title", "brief", "schedule", "target", "time_zone", "quiet_hours")


def suggestion_key(title: str, brief: str) -> str:
    """A suggestion as duplicates are compared: title and brief, spacing collapsed, case folded."""
    return " ".join(f"{title}\n{brief}".split()).casefold()


def _target_kind(value: object) -> str:
    if value not in TOOL_TARGETS:
        raise InvalidInput(f"target must be one of {', '.join(TOOL_TARGETS)}.", code="invalid_target")
    return TOOL_TARGETS[value]


def schedule_as_given(columns: dict) -> dict:
    """The API's schedule object from `inputs.schedule_clean`'s columns (what a card shows and approve sends)."""
    schedule: dict = {"kind": columns["schedule_kind"], "at": columns["schedule_at"]}
    if columns["schedule_days"]:
        schedule["days"] = list(columns["schedule_days"])
    if columns["schedule_n"] is not None:
        schedule["n"] = columns["schedule_n"]
    return schedule


def _first_run(schedule: dict, zone_name: str, now: datetime) -> datetime | None:
    """When the proposed schedule would first run, were it approved now (None: never, a once in the past)."""
    draft = CheckIn(time_zone=zone_name)
    for name, value in inputs.schedule_clean(schedule).items():
        setattr(draft, name, value)
    return check_in_next_due(draft, after=now)


def _pending_count(conversation_id: UUID) -> int:
    return CheckInProposal.objects.filter(conversation_id=conversation_id, status=ProposalStatus.PENDING).count()


@transaction.atomic
def check_in_propose(
    *, conversation_id: UUID, reply_id: UUID | None, tool_call_id: str,
    title: object, brief: object, schedule: object, target: object = "this_conversation", reason: object = None,
    now: datetime | None = None,
) -> ProposalOutcome:
    """Record Elion's suggestion for the owner's review, or say why not. Bad arguments raise InvalidInput."""
    clean_title, clean_brief = inputs.title_clean(title), inputs.brief_clean(brief)
    clean_schedule = schedule_as_given(inputs.schedule_clean(schedule))
    target_kind, reason_text = _target_kind(target), proposal_reason_clean(reason, limit=REASON_MAX)
    settings_row = assistant_settings_read()
    if not settings_row.check_in_proposals:
        return proposal_refused("proposals_off", "The owner has turned check-in proposals off; nothing was proposed.")
    conversation = Conversation.objects.select_related("folder").filter(pk=conversation_id).first()
    if conversation is None or not may_suggest_memories(conversation):
        return proposal_refused(
            "not_allowed_here",
            "Check-ins cannot be proposed from this conversation (private, shielded or hidden); nothing was proposed.",
        )
    now = now or timezone.now()
    first = _first_run(clean_schedule, settings_row.time_zone, now)
    if first is None:
        local_now = now.astimezone(ZoneInfo(settings_row.time_zone))
        return proposal_refused(
            "in_the_past",
            f"That time has passed: it is now {local_now:%Y-%m-%dT%H:%M} in the owner's time zone "
            f"({settings_row.time_zone}); nothing was proposed.",
        )
    key = suggestion_key(clean_title, clean_brief)
    earlier = (
        CheckInProposal.objects.filter(key=key, status__in=[ProposalStatus.PENDING, ProposalStatus.DISMISSED])
        .values_list("status", flat=True).first()
    )
    if earlier == ProposalStatus.PENDING:
        return proposal_refused("duplicate_pending", "This check-in is already waiting for the owner's review; nothing was proposed.")
    if earlier == ProposalStatus.DISMISSED:
        return proposal_refused("duplicate_dismissed", "The owner dismissed this check-in before; do not propose it again.")
    if _pending_count(conversation.pk) >= PENDING_MAX:
        return proposal_refused(
            "pending_limit",
            f"The owner already has {PENDING_MAX} check-in suggestions from this conversation to review; "
            "that is enough for now, so nothing was proposed.",
        )
    reply = Message.objects.filter(pk=reply_id, conversation=conversation).only("pk", "parent_id").first()
    proposal = CheckInProposal.objects.create(
        title=clean_title, brief=clean_brief, key=key, schedule=clean_schedule, target_kind=target_kind,
        reason=reason_text, conversation=conversation, reply_message_id=reply.pk if reply else None,
        source_message_id=reply.parent_id if reply else None, tool_call_id=(tool_call_id or "")[:TOOL_CALL_ID_MAX],
    )
    local_first = first.astimezone(ZoneInfo(settings_row.time_zone))
    return ProposalOutcome(
        "proposed", "proposed",
        f"Proposed. Nothing is scheduled: the owner will approve, edit or dismiss it. If approved as it is, it "
        f"first runs {local_first:%A %Y-%m-%d %H:%M} ({settings_row.time_zone}).",
        proposal,
    )


def access_check_in_proposal(proposal_id: object, *, lock: bool = False) -> CheckInProposal:
    # Locked: its own row only (PostgreSQL refuses FOR UPDATE on the nullable side of the joins).
    rows = CheckInProposal.objects.all() if lock else CheckInProposal.objects.select_related("conversation", "check_in")
    return access_row(
        rows, proposal_id, kind="int",
        missing="No check-in proposal has that id.", code="check_in_proposal_not_found", lock=lock,
    )


def proposal_target(proposal: CheckInProposal) -> dict:
    """The API's target object of a proposal as Elion made it."""
    if proposal.target_kind == TargetKind.CONVERSATION:
        conversation_id = str(proposal.conversation_id) if proposal.conversation_id else None
        return {"kind": TargetKind.CONVERSATION, "conversation_id": conversation_id}
    return {"kind": TargetKind.NEW_CHAT}


@transaction.atomic
def check_in_proposal_approve(*, proposal_id: object, changes: dict | None = None) -> CheckIn:
    """Turn a pending proposal into an ordinary check-in, with the owner's optional edits (any of
    `APPROVE_FIELDS`, in the check-ins API's shapes). Checked exactly as a check-in made by hand."""
    changes = proposal_changes_checked(
        changes if changes is not None else {}, APPROVE_FIELDS, noun="check-in", code="unknown_check_in_field"
    )
    proposal = access_check_in_proposal(proposal_id, lock=True)
    proposal_pending_check(proposal, "approved", code="check_in_proposal_not_pending")
    fields = {"title": proposal.title, "brief": proposal.brief, "schedule": proposal.schedule,
              "target": proposal_target(proposal), **changes}
    if fields["target"] == {"kind": TargetKind.CONVERSATION, "conversation_id": None}:
        raise InvalidInput("The conversation it was proposed in is gone; choose a new chat each time.",
                           code="invalid_target")
    check_in = check_in_create(**fields)
    proposal.status, proposal.check_in, proposal.decided_at = ProposalStatus.APPROVED, check_in, timezone.now()
    proposal.save(update_fields=["status", "check_in", "decided_at"])
    return check_in


@transaction.atomic
def check_in_proposal_dismiss(*, proposal_id: object) -> CheckInProposal:
    """Keep a pending proposal as dismissed: the same suggestion is refused from now on. Twice is a no-op."""
    return proposal_dismissed(access_check_in_proposal(proposal_id, lock=True), code="check_in_proposal_not_pending")


def check_in_proposals_list(status: object = None) -> QuerySet[CheckInProposal]:
    """Pending and dismissed proposals (approved ones live on as check-ins), newest first; or one status."""
    return proposals_of_status(CheckInProposal.objects.select_related("conversation", "check_in"), status)


def reply_check_in_proposals(reply_id: UUID) -> list[CheckInProposal]:
    """The proposals one reply made (the chat's cards), oldest first."""
    return list(
        CheckInProposal.objects.filter(reply_message_id=reply_id).select_related("check_in").order_by("created_at", "id")
    )
