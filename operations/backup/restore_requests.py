"""Restoring a backup over this lived-in instance from Settings or `POST /api/backups/{id}/restore/`: a typed
confirmation, the backup opened and checked while the owner waits, then the replacement as a background job.

1. `restore_confirmation_check`: the owner typed the word `replace` (any case,
   spaces around it ignored): a word a screen reader reads as a word, and one
   the page says. Missing or different: `InvalidInput`, nothing happens.
2. `restore_from_backup_request` (a stored backup) fetches the file from its
   destination, checks its sha256 against the one recorded when it was stored,
   decrypts it (the server's ELION_BACKUP_PASSPHRASE, or an age identity the
   owner pastes: used for this request only, never written anywhere) into the
   staging dir, and checks the whole backup (`restoring.backup_restore_check`:
   the manifest, every member's sha256 and size, the schema). A wrong key, a
   truncated, altered or newer-schema file is refused here (`Conflict`,
   `backup_refused`, with the refusal's own words) before anything changes.
   `restore_from_upload_request` takes a zip the restore page already opened
   and checked the same way.
3. A `RestoreRun` is recorded (`queued`) and `conversations.tasks.restore_replace`
   queued. The job (`restore_run_perform`) claims the run, then runs
   `replacing.backup_restore_replace`, the very service of
   `manage.py restore PATH --replace` (a verified backup of the current state
   first, then the replacement in steps a crash cannot leave half-done), saving
   each step as it begins, and records the outcome. The staged zip is removed.

The owner's session survives a restore: users and sessions are not among the
backed-up apps (`members.APPS`), so a restore neither replaces nor removes them.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import uuid
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from elion.base.errors import Conflict, InvalidInput, NotFound
from elion.base.task_queue import task_queue_after_commit
from elion.models import BackupRecord, RestoreRun, RestoreStatus
from operations.backup import descriptions, destinations, encryption, replacing
from operations.backup.refusals import BackupRefused
from operations.backup.restoring import RestoreCheck, backup_restore_check
from operations.backup.verification import TIMEOUT_SECONDS

logger = logging.getLogger(__name__)

CONFIRM_WORD = "replace"
RESTORE_TASK = "conversations.tasks.restore_replace"
# A queued or running restore blocks another one; a run a crash left "running" stops blocking after this.
ACTIVE_FOR = timedelta(seconds=TIMEOUT_SECONDS * 2)
READ_CHUNK = 1 << 20


def restore_confirmation_check(confirm: object) -> None:
    if not isinstance(confirm, str) or not confirm.strip():
        raise InvalidInput(
            f"Type the word {CONFIRM_WORD} to confirm: the restore replaces everything in this instance.",
            code="confirmation_required",
        )
    if confirm.strip().casefold() != CONFIRM_WORD:
        raise InvalidInput(
            f"The confirmation must be the word {CONFIRM_WORD}; nothing was changed.", code="confirmation_mismatch"
        )


def _staging() -> Path:
    folder = Path(settings.ELION_BACKUP_STAGING_DIR)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def _staged_path(run_id: object) -> Path:
    """Where a run's opened (plain) backup waits for its job: the staging dir, inside the data dir."""
    return _staging() / f"restore-{run_id}.zip"


def _refuse_while_a_restore_runs() -> None:
    active = RestoreRun.objects.filter(
        status__in=[RestoreStatus.QUEUED, RestoreStatus.RUNNING], created_at__gte=timezone.now() - ACTIVE_FOR
    )
    if active.exists():
        raise Conflict("A restore is already under way: wait for it to finish.", code="restore_running")


def _identities(identity: object) -> list:
    if identity in (None, ""):
        return []
    if not isinstance(identity, str):
        raise InvalidInput("identity must be the text of an age identity file.", code="invalid_identity")
    try:
        return encryption.identities_from_text(identity)
    except BackupRefused as exc:
        raise InvalidInput(str(exc), code="invalid_identity") from exc


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def opened_backup(source: Path, target: Path, identities: list) -> None:
    """`source` (a zip, or an age-encrypted backup) as a plain zip at `target`; BackupRefused when it cannot be."""
    if encryption.file_kind(source) == "zip":
        shutil.copyfile(source, target)
        return
    encryption.decrypt_file(source, target, passphrase=encryption.configured_keys().passphrase, identities=identities)


def _queued(run: RestoreRun) -> RestoreRun:
    run_id = str(run.id)

    def refused(detail: str) -> None:
        # The request answers 503 whole: no queued run is left to block the next try, no staged copy kept.
        RestoreRun.objects.filter(pk=run.pk, status=RestoreStatus.QUEUED).delete()
        _staged_path(run.id).unlink(missing_ok=True)

    task_queue_after_commit(RESTORE_TASK, run_id, task_name=f"restore {run_id}", what="The restore",
                            refused=refused, timeout=TIMEOUT_SECONDS)
    return run


def _recorded(check: RestoreCheck, *, source: str, backup: BackupRecord | None, staged: Path) -> RestoreRun:
    run = RestoreRun(backup=backup, source=source, restored={"holds": {"rows": check.rows, "blobs": check.blobs}})
    staged.replace(_staged_path(run.id))
    run.save()
    return _queued(run)


def restore_from_backup_request(backup_id: object, confirm: object, identity: object = None) -> RestoreRun:
    """Check the confirmation, open and check the stored backup, then queue the replacement (the module docstring)."""
    restore_confirmation_check(confirm)
    identities = _identities(identity)
    record = BackupRecord.objects.filter(pk=backup_id, pruned_at__isnull=True).first()
    if record is None:
        raise NotFound("No such backup (it may have been pruned).", code="backup_not_found")
    _refuse_while_a_restore_runs()
    try:
        destination = destinations.configured_destination()
    except destinations.DestinationProblem as exc:
        raise Conflict(str(exc), code="backups_not_configured") from exc
    if not record.stored or destination is None or destination.description != record.destination:
        raise Conflict("This backup's file is not at the configured destination.", code="backup_not_stored")
    work = _staging() / f"restore-fetch-{uuid.uuid4().hex}"
    work.mkdir(mode=0o700)
    try:
        fetched, opened = work / "fetched", work / "opened.zip"
        try:
            destination.fetch(record.key, fetched)
        except destinations.DestinationProblem as exc:
            raise Conflict(str(exc), code="backup_not_stored") from exc
        try:
            if record.sha256 and _sha256(fetched) != record.sha256:
                raise BackupRefused("The stored file differs from the one written (its sha256): it was altered.")
            opened_backup(fetched, opened, identities)
            check = backup_restore_check(opened, require_empty=False)
        except BackupRefused as exc:
            raise Conflict(f"This backup cannot be restored, nothing was changed: {exc}", code="backup_refused") from exc
        made = timezone.localtime(record.created_at)
        source = f"the backup made {made.day} {made:%B %Y at %H:%M} ({record.destination})"
        return _recorded(check, source=source, backup=record, staged=opened)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def restore_from_upload_request(opened_zip: Path, confirm: object, source: str) -> RestoreRun:
    """Queue the replacement by an uploaded backup the restore page already opened (decrypted) at `opened_zip`;
    `source` says in words what it is ("the uploaded backup made …")."""
    restore_confirmation_check(confirm)
    _refuse_while_a_restore_runs()
    try:
        check = backup_restore_check(opened_zip, require_empty=False)
    except BackupRefused as exc:
        raise Conflict(f"This backup cannot be restored, nothing was changed: {exc}", code="backup_refused") from exc
    return _recorded(check, source=source, backup=None, staged=opened_zip)


# --- The job (django-q2) ---------------------------------------------------------------------------


def _finished(run_id: object, status: str, detail: str, **fields: object) -> None:
    RestoreRun.objects.filter(pk=run_id).update(status=status, detail=detail, finished_at=timezone.now(), **fields)


def restore_run_perform(run_id: object) -> str:
    """Replace this instance by the run's staged backup (the module docstring, step 3); the run's status.

    Runs once: a task the queue hands out again (its broker's retry) finds the run claimed and returns.
    """
    if not RestoreRun.objects.filter(pk=run_id, status=RestoreStatus.QUEUED).update(status=RestoreStatus.RUNNING):
        run = RestoreRun.objects.filter(pk=run_id).first()
        return run.status if run else "gone"
    staged = _staged_path(run_id)
    reached: list[str] = []

    def progress(step: str) -> None:
        reached.append(step)
        RestoreRun.objects.filter(pk=run_id).update(step=step)

    try:
        report, safety = replacing.backup_restore_replace(staged, progress)
    except BackupRefused as exc:
        _finished(run_id, RestoreStatus.FAILED, f"Restore refused, nothing was changed: {exc}")
    except Exception as exc:  # noqa: BLE001 - the owner is told; the job never dies silently
        logger.exception("restore %s failed at %s", run_id, reached[-1:] or "start")
        if reached and reached[-1] == replacing.STEPS[-1]:
            detail = (f"The backup is in place, but removing the files it no longer uses failed ({exc}); the "
                      "hourly attachment collection removes them.")
            _finished(run_id, RestoreStatus.DONE, detail)
        else:
            _finished(run_id, RestoreStatus.FAILED, f"The restore stopped, nothing was changed: {exc}")
    else:
        run = RestoreRun.objects.get(pk=run_id)
        restored = {**run.restored, "rows": report.rows, "blobs": report.blobs, "damaged_blobs": report.damaged_blobs}
        _finished(run_id, RestoreStatus.DONE, "", restored=restored, safety_backup=str(safety))
    finally:
        staged.unlink(missing_ok=True)
    return RestoreRun.objects.get(pk=run_id).status


# --- What the page and the API say ----------------------------------------------------------------


def restore_run_get(run_id: object) -> RestoreRun:
    run = RestoreRun.objects.filter(pk=run_id).first()
    if run is None:
        raise NotFound("No such restore.", code="restore_not_found")
    return run


def _words(counts: dict | None) -> str:
    if not counts:
        return ""
    return ", ".join(descriptions.described(counts.get("rows", {}), counts.get("blobs", 0))) or "nothing yet"


def restore_run_repr(run: RestoreRun) -> dict:
    done = run.status == RestoreStatus.DONE and "rows" in run.restored
    return {
        "id": str(run.id),
        "created_at": run.created_at.isoformat(),
        "backup_id": str(run.backup_id) if run.backup_id else None,
        "source": run.source,
        "status": run.status,
        "step": run.step or None,
        "steps": list(replacing.STEPS),
        "backup_holds": _words(run.restored.get("holds")),
        "restored": {"rows": run.restored["rows"], "blobs": run.restored["blobs"]} if done else None,
        "restored_words": _words(run.restored) if done else None,
        "safety_backup": run.safety_backup or None,
        "detail": run.detail or None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }
