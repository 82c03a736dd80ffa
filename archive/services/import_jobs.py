"""Background imports: an export saved with its job, imported by django-q2 tasks, followed, cancelled, resumed.

`import_job_create` saves the uploaded files under `ELION_IMPORT_DIR/<job id>/`
(copied in chunks: never read whole) and enqueues `archive.tasks.run_import_job`.
A run claims the job with a token and goes through `import_runs.import_run`,
writing `done` and the counts in each conversation's own transaction, only
while it still holds the job: a cancel (or another run taking over) makes the
next write find nothing to update, which rolls that conversation back and
stops the run. A long import runs in slices (`ELION_IMPORT_SLICE_SECONDS`,
within the queue's timeout), each slice enqueueing the next.

A resumed job (`import_job_resume`, after a cancel, a failure, or a worker that
died: its heartbeat, `updated_at`, older than `ELION_IMPORT_STALE_SECONDS`)
starts at `done`; storing is idempotent per conversation besides, so nothing
is stored twice. Files are removed when the job is done, when the export
itself was refused, or when the job is deleted.

A job's `kind` is the source of its export: its importer is that source's row
of `importers.sources.IMPORTERS` (`chatgpt`, `claude`).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
import uuid
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from archive.models import ArchiveDocument, ImportJob, ImportState
from archive.services import upload_pieces
from archive.services.import_runs import (
    ImportFile,
    ImportStopped,
    ImportSummary,
    Resumption,
    import_run,
)
from archive.services.importers import export_steps
from archive.services.importers.sources import IMPORTERS, importer_for
from elion.base.errors import Conflict, ServiceError
from elion.base.rows import access_row
from elion.base.task_queue import task_queue_after_commit
from elion.base.uploads import closing_upload

logger = logging.getLogger(__name__)

RUN_TASK = "archive.tasks.run_import_job"
ACTIVE_STATES = (ImportState.QUEUED, ImportState.RUNNING)
COPY_CHUNK_BYTES = 1024**2


def job_folder(job_id: uuid.UUID | str) -> Path:
    return Path(settings.ELION_IMPORT_DIR) / str(job_id)


def access_import_job(job_id: object) -> ImportJob:
    return access_row(
        ImportJob.objects.all(), job_id, kind="uuid", missing="No import job has that id.", code="import_not_found"
    )


def _enqueue(job: ImportJob, *, new: bool = False) -> None:
    """Queue the job's run once the transaction commits. When the broker refuses it (503): a `new` job is
    forgotten (its request failed whole: the caller removes its files, pieces stay for another try); any
    other is left failed with its files, so it resumes (`import_job_resume`) once the queue is back."""
    job_id = str(job.pk)

    def refused(detail: str) -> None:
        if new:
            ImportJob.objects.filter(pk=job.pk).delete()
            return
        now = timezone.now()
        ImportJob.objects.filter(pk=job.pk, state__in=ACTIVE_STATES).update(
            state=ImportState.FAILED, runner="", error={"error": "queue_unavailable", "detail": detail},
            finished_at=now, updated_at=now)

    task_queue_after_commit(RUN_TASK, job_id, task_name=f"import {job.kind} {job_id}", what="The import",
                            refused=refused)


def _save_uploads(folder: Path, uploads: Sequence[UploadedFile]) -> list[dict]:
    folder.mkdir(parents=True, mode=0o700)
    saved = []
    for number, upload in enumerate(uploads):
        path = f"{number:03d}.upload"
        with (folder / path).open("xb") as out:
            for chunk in upload.chunks(COPY_CHUNK_BYTES):
                out.write(chunk)
        saved.append({"name": (upload.name or "")[:300], "path": path, "size": upload.size})
    return saved


def import_job_create(*, kind: str, uploads: Sequence[UploadedFile | None], options: dict) -> ImportJob:
    """Save the uploads with a new queued job and enqueue its run; 400/413 for what can be told at once."""
    with contextlib.ExitStack() as stack:
        for upload in uploads:
            stack.enter_context(closing_upload(upload))
        spec = importer_for(kind)
        spec.reader(**options)  # the options are checked now (an unknown collection is a 400 at once)
        uploads = export_steps.import_files_check(uploads, spec.missing_file)
        job = ImportJob(kind=kind, options=options)
        folder = job_folder(job.pk)
        try:
            with transaction.atomic():
                job.files = _save_uploads(folder, uploads)
                job.save()
                _enqueue(job, new=True)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
    return job


def import_job_create_from_pieces(*, kind: str, upload_ids: object, options: dict) -> ImportJob:
    """`import_job_create` from uploads sent in pieces (`archive.services.upload_pieces`); they are removed once
    the job holds its own copy."""
    files = upload_pieces.piece_files(upload_ids)
    job = import_job_create(kind=kind, uploads=files, options=options)
    upload_pieces.piece_uploads_remove(upload_ids)
    return job


# --- A run -----------------------------------------------------------------------------


class ImportPaused(ImportStopped):
    """The slice's time is up: the next slice goes on from `done`."""


class JobProgress:
    """Progress written on the job row, and only while this run holds it (`runner` = its token)."""

    def __init__(self, job: ImportJob, token: str, slice_ends: float) -> None:
        self.job_id, self.token, self.slice_ends = job.pk, token, slice_ends
        self.problems_written = len(job.problems)
        self.advanced_in_slice = 0

    def _held(self) -> QuerySet[ImportJob]:
        return ImportJob.objects.filter(pk=self.job_id, state=ImportState.RUNNING, runner=self.token)

    def _write(self, summary: ImportSummary, **fields: object) -> None:
        if len(summary.problems) != self.problems_written:
            fields["problems"] = [p.as_dict() for p in summary.problems]
        if not self._held().update(result=summary.counts(), updated_at=timezone.now(), **fields):
            raise ImportStopped()
        self.problems_written = len(summary.problems)

    def counted(self, total: int, summary: ImportSummary) -> None:
        # What the export offers is known now and written only now; each conversation's write then carries
        # only the counts (and the problems, when they changed).
        self._write(summary, total=total, done=0, offers=summary.offers())

    def proceed(self) -> None:
        # Every slice handles at least one conversation, so a job always gets on.
        if self.advanced_in_slice and time.monotonic() > self.slice_ends:
            raise ImportPaused()

    def advanced(self, done: int, summary: ImportSummary, document_id: int | None) -> None:
        self._write(summary, done=done)
        self.advanced_in_slice += 1
        if document_id is not None:
            ArchiveDocument.objects.filter(pk=document_id).update(import_job=self.job_id)


def _claim(job_id: object, token: str) -> bool:
    """Take the job: queued, between two slices, or running with a dead worker's heartbeat."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.ELION_IMPORT_STALE_SECONDS)
    claimable = Q(state=ImportState.QUEUED) | Q(state=ImportState.RUNNING) & (Q(runner="") | Q(updated_at__lt=stale))
    return bool(ImportJob.objects.filter(claimable, pk=job_id).update(
        state=ImportState.RUNNING, runner=token, updated_at=now
    ))


def _finish(job: ImportJob, token: str, state: str, **fields: object) -> bool:
    now = timezone.now()
    return bool(ImportJob.objects.filter(pk=job.pk, state=ImportState.RUNNING, runner=token).update(
        state=state, runner="", finished_at=now, updated_at=now, **fields
    ))


def _job_summary(job: ImportJob, summary_type: type[ImportSummary]) -> ImportSummary:
    """The import's summary as the job row holds it (its counts, what the export offers, its problems)."""
    return summary_type.from_dict({**job.result, **job.offers, "problems": job.problems})


def _resumption(job: ImportJob) -> Resumption | None:
    """Where an earlier run stopped (None: nothing was counted yet, start from the beginning)."""
    if job.total is None:
        return None
    return Resumption(summary=_job_summary(job, importer_for(job.kind).summary_type), done=job.done)


def import_job_run(job_id: str) -> str:
    """Run (one slice of) a job; answers the state it was left in. The task's whole work."""
    token = uuid.uuid4().hex
    if not _claim(job_id, token):
        return "not claimed"  # finished, cancelled, or held by a live run
    job = ImportJob.objects.get(pk=job_id)
    folder = job_folder(job.pk)
    progress = JobProgress(job, token, time.monotonic() + settings.ELION_IMPORT_SLICE_SECONDS)
    try:
        with contextlib.ExitStack() as stack:
            files = [
                ImportFile(f["name"], stack.enter_context((folder / f["path"]).open("rb")), f["size"])
                for f in job.files
            ]
            reader = importer_for(job.kind).reader(**job.options)
            summary = import_run(
                reader, files, suggestion=export_steps.custom_instructions_suggestion, progress=progress,
                resumption=_resumption(job), summary_type=importer_for(job.kind).summary_type,
            )
    except ImportPaused:
        if ImportJob.objects.filter(pk=job.pk, state=ImportState.RUNNING, runner=token).update(runner=""):
            _enqueue(job)  # the next slice
        return ImportState.RUNNING
    except ImportStopped:
        return ImportJob.objects.get(pk=job.pk).state
    except ServiceError as exc:
        # The export itself was refused (damaged, not an export, too large): resuming cannot help.
        if _finish(job, token, ImportState.FAILED, error={"error": exc.code, "detail": exc.detail}):
            shutil.rmtree(folder, ignore_errors=True)
        return ImportState.FAILED
    except Exception:
        logger.exception("import job %s failed", job.pk)
        _finish(job, token, ImportState.FAILED, error={
            "error": "import_interrupted",
            "detail": "The import stopped on an unexpected error; resume it to import the rest.",
        })
        raise
    if _finish(job, token, ImportState.DONE, result=summary.counts(), problems=[
        p.as_dict() for p in summary.problems
    ]):
        shutil.rmtree(folder, ignore_errors=True)
    return ImportState.DONE


# --- Following, cancelling, resuming ----------------------------------------------------


def import_job_cancel(*, job_id: object) -> ImportJob:
    """Stop a queued or running job after the conversation it is storing (that one is not kept)."""
    job = access_import_job(job_id)
    now = timezone.now()
    ImportJob.objects.filter(pk=job.pk, state__in=ACTIVE_STATES).update(
        state=ImportState.CANCELLED, runner="", finished_at=now, updated_at=now
    )
    job.refresh_from_db()
    if job.state != ImportState.CANCELLED:
        raise Conflict(f"The import is already {job.state}; there is nothing to cancel.", code="import_finished")
    return job


def _files_kept(job: ImportJob) -> bool:
    return all((job_folder(job.pk) / f["path"]).is_file() for f in job.files)


def import_job_resume(*, job_id: object) -> ImportJob:
    """Queue a cancelled or failed job again (or one whose worker died): it imports only what is missing."""
    job = access_import_job(job_id)
    stale = timezone.now() - timedelta(seconds=settings.ELION_IMPORT_STALE_SECONDS)
    resumable = job.state in (ImportState.CANCELLED, ImportState.FAILED) or (
        job.state in ACTIVE_STATES and job.updated_at < stale
    )
    if not resumable:
        raise Conflict(f"The import is {job.state}; only a cancelled, failed or stalled one resumes.",
                       code="import_not_resumable")
    if not _files_kept(job):
        raise Conflict("The import's files are gone (the export was refused); upload it again.",
                       code="import_not_resumable")
    with transaction.atomic():
        ImportJob.objects.filter(pk=job.pk).update(
            state=ImportState.QUEUED, runner="", error=None, finished_at=None, updated_at=timezone.now()
        )
        _enqueue(job)
    job.refresh_from_db()
    return job


def import_job_delete(*, job_id: object) -> None:
    """Forget a finished job and remove its files (the documents it stored stay)."""
    job = access_import_job(job_id)
    if job.state in ACTIVE_STATES:
        raise Conflict("The import is still running; cancel it first.", code="import_running")
    job.delete()
    shutil.rmtree(job_folder(job.pk), ignore_errors=True)


def import_job_current(kind: str) -> ImportJob | None:
    """The newest queued or running job of `kind` (what the import page follows after a reload)."""
    return ImportJob.objects.filter(kind=kind, state__in=ACTIVE_STATES).order_by("-created_at").first()


def import_job_repr(job: ImportJob) -> dict:
    """The job's answer: its state and progress, and the import's answer (its kind's) as of `done`."""
    summary_type = IMPORTERS[job.kind].summary_type if job.kind in IMPORTERS else ImportSummary
    return {
        "job_id": str(job.pk),
        "kind": job.kind,
        "state": job.state,
        "done": job.done,
        "total": job.total,
        **_job_summary(job, summary_type).as_dict(),
        "document_ids": list(job.documents.order_by("pk").values_list("pk", flat=True)),
        "error": job.error,
        "files": [{"name": f["name"], "size": f["size"]} for f in job.files],
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
