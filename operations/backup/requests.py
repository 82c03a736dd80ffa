"""What the owner asks of backups by hand: back up now, verify again, download a stored file (`/api/backups/`)."""

from __future__ import annotations

from collections.abc import Iterator

from elion.base.errors import Conflict, NotFound
from elion.models import BackupRecord, BackupStatus
from operations.backup import destinations, runs


def _record(backup_id: object) -> BackupRecord:
    record = BackupRecord.objects.filter(pk=backup_id, pruned_at__isnull=True).first()
    if record is None:
        raise NotFound("No such backup (it may have been pruned).", code="backup_not_found")
    return record


def backup_now_request() -> BackupRecord:
    """Record a backup and queue it (the queue writes, stores and verifies it); Conflict when none can be made."""
    runs.backups_interrupted_sweep()
    try:
        record = runs.backup_start()
    except runs.BackupNotConfigured as exc:
        raise Conflict(str(exc), code="backups_not_configured") from exc

    def refused(detail: str) -> None:
        # The request answers 503 whole: no running record is left that nothing will ever write.
        BackupRecord.objects.filter(pk=record.pk, status=BackupStatus.RUNNING, stored=False).delete()

    runs.backup_queue(record, refused=refused)
    return record


def backup_verify_request(backup_id: object) -> BackupRecord:
    record = _record(backup_id)
    if record.status == BackupStatus.RUNNING or not record.stored:
        raise Conflict("This backup is still being written, or never reached its destination.", code="backup_not_stored")
    # Refused: nothing was written, and the backup keeps what its last verification found.
    runs.backup_verify_queue(record)
    return record


def backup_download(backup_id: object) -> tuple[str, Iterator[bytes], int | None]:
    """(file name, chunks, size) of a stored backup, as it is at its destination (encrypted)."""
    record = _record(backup_id)
    try:
        destination = destinations.configured_destination()
    except destinations.DestinationProblem as exc:
        raise Conflict(str(exc), code="backups_not_configured") from exc
    if not record.stored or destination is None or destination.description != record.destination:
        raise Conflict("This backup's file is not at the configured destination.", code="backup_not_stored")
    return record.key, destination.chunks(record.key), record.size
