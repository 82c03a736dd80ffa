"""django-q2 task entry points: thin wrappers over services."""

from __future__ import annotations

import logging

from conversations.services.deletion import deletions_finish, private_chats_expire
from elion.models import BackupRecord
from operations.backup import restore_requests, runs, scheduling
from transcript.attachments.gc import attachment_garbage_collect
from transcript.attachments.verification import blobs_rehash_all
from transcript.leases import streams_interrupt_expired
from transcript.search_index import message_search_index_sync

logger = logging.getLogger(__name__)


def interrupt_stale_streams() -> int:
    """Scheduled every minute: replies whose process died become `interrupted`."""
    return streams_interrupt_expired()


def collect_attachment_garbage() -> dict[str, int]:
    """Scheduled hourly: stale uploads and unreferenced blobs past the grace period."""
    return attachment_garbage_collect().as_dict()


def rehash_attachment_blobs() -> dict[str, int]:
    """Scheduled daily (migration 0011): every referenced blob hashed whatever its file identity.

    A missing or tampered blob is logged as an error and loses its recorded
    identity, so every send refuses it from then on.
    """
    audit = blobs_rehash_all()
    for finding in audit.findings:
        logger.error("attachment blob problem: %s", finding)
    return audit.as_dict()


def finish_pending_deletions() -> int:
    """Scheduled every minute (and run at start): permanent deletions a crash interrupted are finished."""
    return deletions_finish()


def expire_private_chats() -> int:
    """Scheduled hourly (migration 0012): private chats inactive for `ELION_PRIVATE_CHAT_DAYS` are
    deleted forever through the permanent-deletion steps, each with its receipt."""
    return len(private_chats_expire())


def index_pending_messages() -> int:
    """Scheduled every minute (migration 0025): messages whose search-index rows are still pending, such
    as those of a reply whose indexing after the reply timed out, are indexed (nothing pending: one query)."""
    return message_search_index_sync()


# --- Backups that run themselves (issue 42): thin wrappers over `operations.backup` ------------------------


def scheduled_backup(slot: str | None = None) -> dict:
    """Scheduled daily or weekly (migration elion 0003, Settings → Backups): one backup per due slot."""
    return scheduling.scheduled_backup(slot)


def backup_now(record_id: str) -> str:
    """`POST /api/backups/`, Settings → Back up now: the recorded backup written, stored and verified."""
    record = BackupRecord.objects.filter(pk=record_id).first()
    return runs.backup_run(record).status if record else "gone"


def backup_verify_again(record_id: str) -> str:
    """`POST /api/backups/{id}/verify/`, Settings → Verify again."""
    record = BackupRecord.objects.filter(pk=record_id).first()
    return runs.backup_verify_claimed(record).status if record else "gone"


def restore_replace(run_id: str) -> str:
    """`POST /api/backups/{id}/restore/`, Settings → Restore: this instance replaced by the run's backup."""
    return restore_requests.restore_run_perform(run_id)
