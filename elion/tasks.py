"""django-q2 task entry points of the project package: backups (thin wrappers over `operations.backup`)."""

from __future__ import annotations

from elion.models import BackupRecord
from operations.backup import runs, scheduling


def scheduled_backup(slot: str | None = None) -> dict:
    """Scheduled daily or weekly (migration 0003, Settings → Backups): one backup per due slot."""
    return scheduling.scheduled_backup(slot)


def backup_now(record_id: str) -> str:
    """`POST /api/backups/`, Settings → Back up now: the recorded backup written, stored and verified."""
    record = BackupRecord.objects.filter(pk=record_id).first()
    return runs.backup_run(record).status if record else "gone"


def backup_verify_again(record_id: str) -> str:
    """`POST /api/backups/{id}/verify/`, Settings → Verify again."""
    record = BackupRecord.objects.filter(pk=record_id).first()
    return runs.backup_verify(record).status if record else "gone"
