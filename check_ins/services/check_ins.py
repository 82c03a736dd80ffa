"""The owner's writes to check-ins: create, update, pause, delete; and when one is next due.

Each write is one transaction that leaves `next_run_at` saying when the check-in
is next due (`check_in_next_due`), so the minute's task never computes a schedule
to find what is due. Fields come checked by `check_ins.services.inputs`; the
target conversation is checked here, against the one eligibility rule
(`continuity.rules.eligibility.may_write_first`).
"""

from __future__ import annotations

from datetime import datetime, time
from zoneinfo import ZoneInfo

from django.db import transaction
from django.utils import timezone

from check_ins.models import CheckIn, ScheduleKind
from check_ins.services import inputs
from check_ins.services.schedule_policy import WEEKDAYS, Schedule, next_due
from continuity.rules.eligibility import may_write_first
from elion.base.assistant_settings import assistant_settings_read
from elion.base.errors import InvalidInput
from elion.base.rows import access_row, parse_id
from elion.base.time_zones import time_zone_clean
from transcript.models import Conversation

CHANGEABLE = ("title", "brief", "schedule", "time_zone", "target", "quiet_hours", "enabled")


def access_check_in(check_in_id: object, *, lock: bool = False) -> CheckIn:
    """The check-in with this id, or 404 `check_in_not_found` (a malformed id too)."""
    return access_row(
        CheckIn.objects.all(), check_in_id, kind="int", missing="No check-in has that id.",
        code="check_in_not_found", lock=lock,
    )


def schedule_of(check_in: CheckIn) -> Schedule:
    """The row's schedule as plain data for `schedule_policy`."""
    first = None
    if check_in.schedule_kind in (ScheduleKind.ONCE, ScheduleKind.EVERY_N_DAYS):
        first = datetime.fromisoformat(check_in.schedule_at)
        at = first.time()
    else:
        at = time.fromisoformat(check_in.schedule_at)
    return Schedule(
        kind=check_in.schedule_kind,
        zone=ZoneInfo(check_in.time_zone),
        at=at,
        first=first,
        days=tuple(WEEKDAYS.index(day) for day in check_in.schedule_days),
        n=check_in.schedule_n,
        quiet_start=check_in.quiet_start,
        quiet_end=check_in.quiet_end,
    )


def check_in_next_due(check_in: CheckIn, *, after: datetime) -> datetime | None:
    """When `check_in` is next due strictly after `after` (DST-correct, quiet hours applied), or None."""
    return next_due(schedule_of(check_in), after)


def _target_conversation(raw_id: str) -> Conversation:
    pk = parse_id(raw_id, "uuid")
    if pk is None:
        raise InvalidInput("target.conversation_id must be a conversation's id.", code="invalid_target")
    conversation = Conversation.objects.filter(pk=pk).select_related("folder").first()
    if conversation is None:
        raise InvalidInput("target.conversation_id names no conversation.", code="invalid_target")
    refusal = may_write_first(conversation)
    if refusal is not None:
        raise InvalidInput(f"A check-in cannot write into this conversation: {refusal}.", code="invalid_target")
    return conversation


def _apply(check_in: CheckIn, changes: dict[str, object]) -> None:
    """Set the checked fields of `changes` on the row (nothing is saved)."""
    unknown = set(changes) - set(CHANGEABLE)
    if unknown:
        raise InvalidInput(f"Unknown check-in fields: {', '.join(sorted(map(str, unknown)))}.",
                           code="unknown_check_in_field")
    if "title" in changes:
        check_in.title = inputs.title_clean(changes["title"])
    if "brief" in changes:
        check_in.brief = inputs.brief_clean(changes["brief"])
    if "schedule" in changes:
        for name, value in inputs.schedule_clean(changes["schedule"]).items():
            setattr(check_in, name, value)
    if "time_zone" in changes:
        check_in.time_zone = time_zone_clean(changes["time_zone"])
    if "target" in changes:
        kind, conversation_id = inputs.target_clean(changes["target"])
        check_in.target_kind = kind
        check_in.conversation = _target_conversation(conversation_id) if conversation_id else None
    if "quiet_hours" in changes:
        check_in.quiet_start, check_in.quiet_end = inputs.quiet_hours_clean(changes["quiet_hours"])
    if "enabled" in changes:
        check_in.enabled = inputs.enabled_clean(changes["enabled"])


def _reschedule(check_in: CheckIn, now: datetime) -> None:
    """`next_run_at` from `now`: the next due time of an enabled check-in, none for a paused one."""
    check_in.next_run_at = check_in_next_due(check_in, after=now) if check_in.enabled else None


@transaction.atomic
def check_in_create(*, now: datetime | None = None, **fields: object) -> CheckIn:
    """A new check-in from checked `fields` (title, brief, schedule and target required; time_zone defaults
    to Settings' `time_zone`), enabled unless `enabled=False`, with its first due time. A once whose time
    is past is refused (400 `invalid_schedule`): it would never run."""
    missing = [name for name in ("title", "brief", "schedule", "target") if name not in fields]
    if missing:
        raise InvalidInput(f"A check-in needs {', '.join(missing)}.", code="invalid_check_in")
    check_in = CheckIn(time_zone=assistant_settings_read().time_zone)
    _apply(check_in, fields)
    _reschedule(check_in, now or timezone.now())
    if check_in.enabled and check_in.next_run_at is None:
        raise InvalidInput("schedule.at is in the past: this check-in would never run.", code="invalid_schedule")
    check_in.save()
    return check_in


@transaction.atomic
def check_in_update(*, check_in_id: object, now: datetime | None = None, **changes: object) -> CheckIn:
    """Change a check-in (PATCH): only the fields given. A change of schedule, zone or quiet hours, or
    enabling it, computes its next due time afresh from now; enabling clears `paused_reason` (the owner
    has seen why it paused). Disabling it leaves no next due time."""
    check_in = access_check_in(check_in_id, lock=True)
    _apply(check_in, changes)
    if "enabled" in changes and check_in.enabled:
        check_in.paused_reason = ""
    if {"schedule", "time_zone", "quiet_hours", "enabled"} & set(changes):
        _reschedule(check_in, now or timezone.now())
    check_in.save()
    return check_in


@transaction.atomic
def check_in_pause(*, check_in: CheckIn, reason: str) -> CheckIn:
    """The app pauses `check_in` and says why (`paused_reason`, shown to the owner); nothing more runs until
    the owner enables it again. Precondition: none (it locks the row itself)."""
    row = CheckIn.objects.select_for_update().filter(pk=check_in.pk).first()
    if row is None:
        return check_in
    row.enabled = False
    row.paused_reason = reason[:300]
    row.next_run_at = None
    row.save(update_fields=["enabled", "paused_reason", "next_run_at", "updated_at"])
    return row


@transaction.atomic
def check_in_delete(*, check_in_id: object) -> None:
    """Delete a check-in and its runs' records; the replies it wrote stay in their conversations.
    A run in flight finds its row gone and stops before writing (`check_ins.services.runs.run_take`)."""
    access_check_in(check_in_id, lock=True).delete()
