"""Scheduled backups: one django-q2 Schedule, kept in step with Settings (`backup_schedule`, `backup_hour`).

The Schedule (`SCHEDULE_NAME`, made by migration `elion.0003`) runs
`conversations.tasks.scheduled_backup` daily or weekly at the owner's hour in the
owner's time zone (Settings `time_zone`); `off` sets its repeats to 0, which
django-q2's scheduler skips. django-q2 steps a daily Schedule by 24 hours, so
each scheduled run sets the next one again at the owner's hour: a change to or
from summer time moves the backup by no hour, and an hour that does not exist
that night (spring forward) is the first instant after it. Saving the time zone
in Settings moves the Schedule too. django-q2 passes each run the time it was due
(`intended_date_kwarg="slot"`), and `runs.backup_start` records that slot
under a unique key: a slot is backed up once, whichever cluster takes it.

A backup missed while the server was down: the Schedule's `next_run` is in
the past at the next start, so the scheduler runs it once and moves
`next_run` past now (`catch_up` is off in Q_CLUSTER): one backup, never one
per missed day, and never twice.
"""

from __future__ import annotations

import logging
from datetime import UTC as dt_utc
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.db import transaction
from django.utils import timezone
from django_q.models import Schedule

from elion.base.assistant_settings import assistant_settings_get, assistant_settings_read
from elion.base.errors import InvalidInput
from elion.base.task_queue import QueueUnavailable
from elion.models import AssistantSettings, BackupSchedule, BackupStatus
from operations.backup import runs

logger = logging.getLogger(__name__)

SCHEDULE_NAME = "elion scheduled backup"
TASK = "conversations.tasks.scheduled_backup"
NUMBER_RANGES = {
    "backup_hour": (0, 23),
    "backup_keep_daily": (0, 1000),
    "backup_keep_weekly": (0, 1000),
    "backup_keep_monthly": (0, 1000),
}
BACKUP_SETTINGS = ("backup_schedule", *NUMBER_RANGES)


def next_due(now: datetime, hour: int, time_zone: str = "UTC") -> datetime:
    """The first moment after `now` at `hour`:00 on the wall clock of `time_zone` (an hour skipped by a spring
    forward is the first instant after it; an hour passed twice in autumn, its first pass)."""
    zone = ZoneInfo(time_zone)
    local = now.astimezone(zone)
    for days in (0, 1, 2):
        wall = datetime.combine(local.date() + timedelta(days=days), time(hour), tzinfo=zone)
        due = wall.astimezone(dt_utc).astimezone(zone)  # a wall time that does not exist moves past the gap
        if due > local:
            return due.astimezone(dt_utc)
    raise AssertionError("a day has every hour once or its next hour")


def schedule_sync(row: AssistantSettings | None = None, *, now: datetime | None = None) -> Schedule:
    """Make the Schedule say what Settings say: its type, its repeats and its next run at the owner's hour."""
    row = row or assistant_settings_read()
    schedule_type = Schedule.WEEKLY if row.backup_schedule == BackupSchedule.WEEKLY else Schedule.DAILY
    schedule, _ = Schedule.objects.update_or_create(
        name=SCHEDULE_NAME,
        defaults={
            "func": TASK,
            "schedule_type": schedule_type,
            "repeats": 0 if row.backup_schedule == BackupSchedule.OFF else -1,
            "next_run": next_due(now or timezone.now(), row.backup_hour, row.time_zone),
            "intended_date_kwarg": "slot",
        },
    )
    return schedule


def schedule_realign() -> None:
    """The Schedule's next run (django-q2 stepped it by 24 hours or 7 days) put back on the owner's hour on the
    same local day: across a change to or from summer time the step lands an hour off."""
    row = assistant_settings_read()
    schedule = Schedule.objects.filter(name=SCHEDULE_NAME).first()
    if schedule is None or schedule.next_run is None:
        return
    zone = ZoneInfo(row.time_zone)
    stepped = schedule.next_run.astimezone(zone)
    candidates = [
        datetime.combine(stepped.date() + timedelta(days=days), time(row.backup_hour), tzinfo=zone)
        .astimezone(dt_utc) for days in (-1, 0, 1)
    ]
    closest = min(candidates, key=lambda due: abs(due - schedule.next_run))
    if closest != schedule.next_run:
        Schedule.objects.filter(pk=schedule.pk).update(next_run=closest)


def backup_settings_update(**changes: object) -> AssistantSettings:
    """Save the backup settings (checked: InvalidInput with a code) and move the Schedule to match.

    No stored prompt reads them, so unlike the other settings their save
    rebuilds nothing (`settings_writes` sends `settings_saved` for those).
    """
    unknown = set(changes) - set(BACKUP_SETTINGS)
    if unknown:
        raise InvalidInput(f"Unknown backup settings: {', '.join(sorted(unknown))}.", code="unknown_setting")
    if "backup_schedule" in changes and changes["backup_schedule"] not in BackupSchedule.values:
        raise InvalidInput(
            f"backup_schedule must be one of {', '.join(BackupSchedule.values)}.", code="invalid_backup_schedule"
        )
    for name, (low, high) in NUMBER_RANGES.items():
        value = changes.get(name)
        if name in changes and (isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high):
            raise InvalidInput(f"{name} must be a whole number from {low} to {high}.", code=f"invalid_{name}")
    with transaction.atomic():
        row = assistant_settings_get()
        row = AssistantSettings.objects.select_for_update().get(pk=row.pk)
        for name, value in changes.items():
            setattr(row, name, value)
        row.save(update_fields=[*changes, "updated_at"])
        if {"backup_schedule", "backup_hour"} & set(changes):
            schedule_sync(row)
    return row


def scheduled_backup(slot: str | datetime | None = None) -> dict:
    """The scheduled run for `slot` (the time it was due): one backup per slot, recorded here and queued as a
    task of its own to be written, stored and verified (`runs.backup_queue`: a schedule's task has the
    cluster's 300 s, which a large instance's backup outlasts)."""
    due = datetime.fromisoformat(slot) if isinstance(slot, str) else slot
    if due is not None and timezone.is_naive(due):
        due = timezone.make_aware(due)
    runs.backups_interrupted_sweep()
    try:
        record = runs.backup_start(slot=due)
    except runs.BackupNotConfigured as exc:
        logger.warning("scheduled backup refused: %s", exc)
        return {"status": "refused", "reason": str(exc)}
    if record is None:
        logger.info("scheduled backup for %s was taken already", due)
        return {"status": "taken already", "slot": str(due)}
    schedule_realign()
    try:
        runs.backup_queue(record, refused=lambda detail: runs.backup_refused(record, detail))
    except QueueUnavailable as exc:
        return {"status": BackupStatus.FAILED, "id": str(record.id), "slot": str(due), "reason": str(exc)}
    return {"status": "queued", "id": str(record.id), "slot": str(due)}
