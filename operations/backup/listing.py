"""What Settings → Backups and `GET /api/backups/` say about backups (`/api/health/`: `elion.web.access.backup_health`)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from django.db.models import Max
from django_q.models import Schedule

from elion.base.assistant_settings import assistant_settings_read
from elion.models import BackupRecord, BackupSchedule, BackupStatus
from operations.backup import runs
from operations.backup.scheduling import SCHEDULE_NAME

LISTED = 200


def backup_repr(record: BackupRecord) -> dict:
    return {
        "id": str(record.id),
        "created_at": record.created_at.isoformat(),
        "size": record.size,
        "encrypted": record.encrypted,
        "destination": record.destination,
        "status": record.status,
        "verified_at": record.verified_at.isoformat() if record.verified_at else None,
        "counts": record.counts or None,
        "failure": record.failure or None,
        "scheduled_for": record.slot.isoformat() if record.slot else None,
    }


def last_verified_at() -> datetime | None:
    return BackupRecord.objects.filter(status=BackupStatus.VERIFIED).aggregate(last=Max("verified_at"))["last"]


def newest_verified() -> BackupRecord | None:
    """The newest backup that a restore verified (what Continuity Cleanup names)."""
    return (
        BackupRecord.objects.filter(status=BackupStatus.VERIFIED, verified_at__isnull=False, counts__has_key="rows")
        .order_by("-created_at")
        .first()
    )


def schedule_state() -> dict:
    row = assistant_settings_read()
    schedule = Schedule.objects.filter(name=SCHEDULE_NAME).first()
    problem = runs.configuration_problem()
    on = row.backup_schedule != BackupSchedule.OFF and not problem
    return {
        "backup_schedule": row.backup_schedule,
        "backup_hour": row.backup_hour,
        "time_zone": row.time_zone,
        "backup_keep_daily": row.backup_keep_daily,
        "backup_keep_weekly": row.backup_keep_weekly,
        "backup_keep_monthly": row.backup_keep_monthly,
        "next_run": (
            schedule.next_run.astimezone(ZoneInfo(row.time_zone)).isoformat() if on and schedule and schedule.next_run else None
        ),
        "running": on,
        "refused": problem or None,
    }


def backups_listing() -> dict:
    # A backup whose process died shows `failed` ("Interrupted: …") once past its time limit, not `running`.
    runs.backups_interrupted_sweep()
    records = BackupRecord.objects.filter(pruned_at__isnull=True)[:LISTED]
    last = last_verified_at()
    return {
        "results": [backup_repr(record) for record in records],
        "last_verified_at": last.isoformat() if last else None,
        "schedule": schedule_state(),
    }
