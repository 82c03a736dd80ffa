"""`backup` in `/api/health/`: `{"last_verified_at", "stale"}`, and the pages' banner (issue 42).

Stale while scheduled backups are on (Settings say daily or weekly, and a key
and a destination are set) and no backup was verified in the last 48 hours.
Read here from the rows alone (`elion.models.BackupRecord`, the settings row),
so the health check imports nothing of the backup machinery. `backup_banner`
(a template context processor) hands the same rule to the pages.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max
from django.http import HttpRequest
from django.utils import timezone

from elion.models import AssistantSettings, BackupRecord, BackupSchedule, BackupStatus

STALE_AFTER = timedelta(hours=48)


def _schedules_on() -> bool:
    keyed = bool(settings.ELION_BACKUP_PASSPHRASE or settings.ELION_BACKUP_RECIPIENTS)
    placed = bool(settings.ELION_BACKUP_S3_BUCKET or settings.ELION_BACKUP_DIR)
    if not (keyed and placed):
        return False  # no query: a page on an instance without backups pays nothing for the banner
    row = AssistantSettings.objects.filter(pk=1).only("backup_schedule").first()
    schedule = row.backup_schedule if row else BackupSchedule.DAILY
    return schedule != BackupSchedule.OFF


def _last_verified_at() -> datetime | None:
    return BackupRecord.objects.filter(status=BackupStatus.VERIFIED).aggregate(last=Max("verified_at"))["last"]


def backup_stale(now: datetime | None = None) -> bool:
    """The one rule of `stale` (health) and of the pages' backup banner: schedules on, nothing verified in 48 h."""
    if not _schedules_on():
        return False
    last = _last_verified_at()
    return last is None or (now or timezone.now()) - last > STALE_AFTER


def backup_health(now: datetime | None = None) -> dict:
    last = _last_verified_at()
    return {"last_verified_at": last.isoformat() if last else None, "stale": backup_stale(now)}


def backup_banner(request: HttpRequest) -> dict:
    """`backup_stale` for `templates/base.html`: a callable, so the template asks it only on the owner's pages
    (`elion_is_owner and backup_stale`), and without a key or a destination it answers without a query."""
    return {"backup_stale": backup_stale}
