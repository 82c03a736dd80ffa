"""`backup` in `/api/health/`: `{"last_verified_at", "stale"}` (issue 42).

Stale while scheduled backups are on (Settings say daily or weekly, and a key
and a destination are set) and no backup was verified in the last 48 hours.
Read here from the rows alone (`elion.models.BackupRecord`, the settings row),
so the health check imports nothing of the backup machinery.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from conversations.models import AssistantSettings, BackupSchedule
from elion.models import BackupRecord, BackupStatus

STALE_AFTER = timedelta(hours=48)


def _schedules_on() -> bool:
    keyed = bool(settings.ELION_BACKUP_PASSPHRASE or settings.ELION_BACKUP_RECIPIENTS)
    placed = bool(settings.ELION_BACKUP_S3_BUCKET or settings.ELION_BACKUP_DIR)
    row = AssistantSettings.objects.filter(pk=1).only("backup_schedule").first()
    schedule = row.backup_schedule if row else BackupSchedule.DAILY
    return keyed and placed and schedule != BackupSchedule.OFF


def backup_health(now: datetime | None = None) -> dict:
    last = BackupRecord.objects.filter(status=BackupStatus.VERIFIED).aggregate(last=Max("verified_at"))["last"]
    stale = _schedules_on() and (last is None or (now or timezone.now()) - last > STALE_AFTER)
    return {"last_verified_at": last.isoformat() if last else None, "stale": stale}
