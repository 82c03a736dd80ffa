"""django-q2 task entry points of the archive: thin wrappers over services."""

from __future__ import annotations

from archive.services.import_jobs import import_job_run


def run_import_job(job_id: str) -> str:
    """Enqueued by a background import (`?background=true`) and by each slice of a long one."""
    return import_job_run(job_id)
