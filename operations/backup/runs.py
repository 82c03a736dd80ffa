"""Taking a backup to its destination, encrypted, and verifying it by a real restore (docs/operations.md).

`backup_start` records a backup (`BackupRecord`, status `running`); for a
scheduled one its due slot is unique, so a slot is backed up once however
many clusters or restarts ask. `backup_run` then:

1. streams the backup zip (`writing.backup_chunks`, one consistent snapshot)
   to a staging file under `ELION_BACKUP_STAGING_DIR` (in the data dir, which
   holds the same data in clear already);
2. encrypts it (`encryption.encrypt_stream`, streamed) to a second staging file;
3. stores that at the destination (atomically: `destinations`), and only then
   marks the record `stored`, with the size and sha256 of the stored bytes;
4. verifies it (`backup_verify`): fetches the stored file back, checks its
   sha256, decrypts it when the server holds the passphrase (with recipients
   only, the server cannot: the staged plaintext that was encrypted is
   restored instead), restores it into a scratch instance
   (`verification.scratch_restore_verify`) and records `verified` with the
   counts and the time, or `failed` with the reason (the file is kept);
5. prunes by the retention policy (`retention`).

Staging files are removed at the end whatever happened. Memory stays bounded
throughout: every step streams.

**On the queue.** Every run, by hand or on the schedule, is a task of its own
(`backup_queue`) with a time limit of `BACKUP_TASK_TIMEOUT_SECONDS`: under the
cluster's 300 s a 1 GB instance (852 s, bench/results/backup_cost.md) was
stopped half-way, every time. A run that stops for any reason (its time limit
included, which django-q2 raises as a `SystemExit`) records `failed` with the
reason instead of staying `running`; a run whose process died is found
`running` past the limit by `backups_interrupted_sweep` and recorded `failed`.
The ORM broker hands a task still running after `Q_CLUSTER["retry"]` (360 s)
to a second worker: the run claims its record first (its file name and
`started_at` written while none is), Verify again its `verifying_since`, so the
second delivery returns without writing or verifying.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from elion.base.task_queue import task_queue_after_commit
from elion.models import BackupRecord, BackupStatus
from operations.backup import destinations, encryption
from operations.backup.refusals import BackupRefused
from operations.backup.retention import backups_prune
from operations.backup.verification import TIMEOUT_SECONDS, VerificationFailed, scratch_restore_verify
from operations.backup.writing import backup_chunks

logger = logging.getLogger(__name__)
READ_CHUNK = 1 << 20
BACKUP_TASK = "conversations.tasks.backup_now"
VERIFY_TASK = "conversations.tasks.backup_verify_again"
# A backup's task: writing, encrypting and storing, then the verification's scratch restore (itself limited to
# `TIMEOUT_SECONDS`); "Verify again": fetching and the scratch restore.
BACKUP_TASK_TIMEOUT_SECONDS = 2 * TIMEOUT_SECONDS
VERIFY_TASK_TIMEOUT_SECONDS = TIMEOUT_SECONDS + 3600
INTERRUPTED = "Interrupted: the process writing this backup stopped before it finished (a restart, or out of memory)."


class BackupNotConfigured(Exception):
    """Scheduled backups cannot run: no key or no destination. The message says what to set."""


def configuration_problem() -> str:
    """Why backups cannot run as configured ("" when they can): shown in Settings → Backups."""
    keys = encryption.configured_keys()
    try:
        destination = destinations.configured_destination()
        encryption.parsed_recipients(keys)
    except (destinations.DestinationProblem, encryption.BackupKeyProblem) as exc:
        return str(exc)
    if not keys.configured:
        return (
            "Scheduled backups are off: no encryption key. Set ELION_BACKUP_PASSPHRASE (a passphrase) or "
            "ELION_BACKUP_RECIPIENTS (age public keys) and restart. Download backup still works, unencrypted."
        )
    if destination is None:
        return (
            "Scheduled backups are off: no destination. Set ELION_BACKUP_DIR (a folder outside the data dir) or "
            "ELION_BACKUP_S3_BUCKET (with ELION_BACKUP_S3_URL for MinIO, Backblaze or R2) and restart."
        )
    return ""


def _staging() -> Path:
    path = Path(settings.ELION_BACKUP_STAGING_DIR)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _file_chunks(path: Path):  # noqa: ANN202 - an iterator of bytes
    with path.open("rb") as source:
        while chunk := source.read(READ_CHUNK):
            yield chunk


def backup_start(*, slot: datetime | None = None) -> BackupRecord | None:
    """Record a new backup (`running`); None when `slot` was backed up (or is being backed up) already.

    BackupNotConfigured when no key or no destination is set: nothing is recorded.
    """
    problem = configuration_problem()
    if problem:
        raise BackupNotConfigured(problem)
    destination = destinations.configured_destination()
    try:
        with transaction.atomic():
            return BackupRecord.objects.create(slot=slot, destination=destination.description, encrypted=True)
    except IntegrityError:
        return None


def backup_queue(record: BackupRecord, *, refused: Callable[[str], None] | None = None) -> None:
    """Queue the run of `record` (once the enclosing transaction commits), with its time limit."""
    task_queue_after_commit(BACKUP_TASK, str(record.id), task_name=f"backup {record.id}", what="The backup",
                            refused=refused, timeout=BACKUP_TASK_TIMEOUT_SECONDS)


def backup_verify_queue(record: BackupRecord) -> None:
    task_queue_after_commit(VERIFY_TASK, str(record.id), task_name=f"verify backup {record.id}",
                            what="The verification", timeout=VERIFY_TASK_TIMEOUT_SECONDS)


def backups_interrupted_sweep() -> int:
    """Record `failed` every backup still `running` past its task's time limit, counted from the claim of its
    run (or from its record, when no delivery ever claimed it): its process died, nothing will ever finish
    it. Returns how many."""
    deadline = timezone.now() - timedelta(seconds=BACKUP_TASK_TIMEOUT_SECONDS + 600)
    past = Q(started_at__lt=deadline) | Q(started_at__isnull=True, created_at__lt=deadline)
    dead = BackupRecord.objects.filter(past, status=BackupStatus.RUNNING)
    if not dead.exists():  # read first: the listing calls this, and a read takes no write lock for nothing
        return 0
    return dead.update(status=BackupStatus.FAILED, failure=INTERRUPTED)


def backup_refused(record: BackupRecord, detail: str) -> None:
    """The queue refused `record`'s run: recorded `failed` with its sentence (nothing will run it)."""
    _failed(record, detail)


def _failed(record: BackupRecord, reason: str) -> BackupRecord:
    record.status = BackupStatus.FAILED
    record.failure = reason
    record.save(update_fields=["status", "failure"])
    logger.error("backup %s failed: %s", record.id, reason)
    return record


def backup_run(record: BackupRecord) -> BackupRecord:
    """Write, encrypt, store and verify the backup `record` describes (the module docstring)."""
    keys = encryption.configured_keys()
    destination = destinations.configured_destination()
    key = f"elion-backup-{timezone.localtime(record.created_at):%Y%m%d-%H%M%S}-{record.id.hex[:8]}.zip.age"
    claimed = BackupRecord.objects.filter(pk=record.pk, status=BackupStatus.RUNNING, key="")
    if not claimed.update(key=key, started_at=timezone.now()):
        logger.info("backup %s is run by another delivery of its task, or finished", record.id)
        return BackupRecord.objects.get(pk=record.pk)
    record.key = key
    workdir = _staging() / f"backup-{record.id}"
    workdir.mkdir(mode=0o700, exist_ok=True)
    plain, sealed = workdir / "backup.zip", workdir / "backup.zip.age"
    try:
        with plain.open("wb") as out:
            for chunk in backup_chunks():
                out.write(chunk)
        with sealed.open("wb") as out:
            encryption.encrypt_stream(_file_chunks(plain), out, keys)
        if isinstance(destination, destinations.BucketDestination):
            destination.abandoned_uploads_abort()
        record.sha256 = _file_sha256(sealed)
        record.size = destination.store(sealed, record.key)
        record.stored = True
        record.save(update_fields=["key", "sha256", "size", "stored"])
        sealed.unlink()
        record = backup_verify(record, plaintext=plain)
    except (destinations.DestinationProblem, encryption.BackupKeyProblem, OSError) as exc:
        return _failed(record, str(exc))
    except BaseException as exc:  # its time limit (a SystemExit), a bug: recorded, never left `running`
        _failed(record, _stopped("The backup", exc))
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if record.status == BackupStatus.VERIFIED:
        backups_prune()
    return record


def _stopped(what: str, exc: BaseException) -> str:
    return f"{what} stopped before it finished" + (f": {exc}" if str(exc) else ".")


def backup_verify_claimed(record: BackupRecord) -> BackupRecord:
    """Verify again (`backup_verify`), as its task runs it: claimed first, so a second delivery of the task
    returns the record as it is while the first verifies; a verification stopped by its time limit (or any
    error) is recorded `failed` with the reason."""
    now = timezone.now()
    free = Q(verifying_since__isnull=True) | Q(verifying_since__lt=now - timedelta(seconds=VERIFY_TASK_TIMEOUT_SECONDS))
    if not BackupRecord.objects.filter(free, pk=record.pk).update(verifying_since=now):
        logger.info("backup %s is verified by another delivery of its task", record.id)
        return BackupRecord.objects.get(pk=record.pk)
    try:
        return backup_verify(record)
    except BaseException as exc:
        _failed(record, _stopped("The verification", exc))
        raise
    finally:
        BackupRecord.objects.filter(pk=record.pk, verifying_since=now).update(verifying_since=None)


def backup_verify(record: BackupRecord, *, plaintext: Path | None = None) -> BackupRecord:
    """Fetch the stored file, check its sha256, decrypt it and restore it into a scratch instance; record the result.

    With recipients only (the server holds no key that decrypts), the restore
    reads `plaintext`, the bytes that were encrypted, when the caller has them
    (right after the backup); "Verify again" then checks the stored file's
    sha256 and size alone, and says so in the counts.
    """
    keys = encryption.configured_keys()
    try:
        destination = destinations.configured_destination()
    except destinations.DestinationProblem as exc:
        return _failed(record, str(exc))
    if not record.stored:
        return _failed(record, "The backup never reached its destination: a partial upload does not count.")
    if destination is None or destination.description != record.destination:
        return _failed(record, f"{record.destination} is no longer the configured destination: cannot fetch it.")
    workdir = _staging() / f"verify-{record.id}-{uuid.uuid4().hex[:6]}"
    workdir.mkdir(mode=0o700)
    fetched, opened = workdir / "fetched", workdir / "opened.zip"
    try:
        destination.fetch(record.key, fetched)
        if fetched.stat().st_size != record.size or _file_sha256(fetched) != record.sha256:
            return _failed(record, "The stored file differs from the one written (size or sha256): it was altered.")
        if keys.can_decrypt:
            encryption.decrypt_file(fetched, opened, passphrase=keys.passphrase)
            source, how = opened, "the stored file, decrypted"
        elif plaintext is not None:
            source, how = plaintext, "the bytes encrypted into the stored file (the server holds no decrypting key)"
        else:
            record.verified_at = timezone.now()
            record.counts = {**record.counts, "checked": "the stored file's sha256 and size (no decrypting key here)"}
            record.save(update_fields=["verified_at", "counts"])
            return record
        fetched.unlink()
        counts = scratch_restore_verify(source, workdir)
    except (destinations.DestinationProblem, BackupRefused, VerificationFailed, OSError) as exc:
        return _failed(record, str(exc))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    record.status = BackupStatus.VERIFIED
    record.verified_at = timezone.now()
    record.counts = {**counts, "restored_from": how}
    record.failure = ""
    record.save(update_fields=["status", "verified_at", "counts", "failure"])
    logger.info("backup %s verified: %s rows, %s blobs", record.id, sum(counts["rows"].values()), counts["blobs"])
    return record
