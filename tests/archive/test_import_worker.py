"""Background imports in a real django-q2 cluster (`manage.py qcluster`): a cancel from outside while the
worker stores, a worker killed mid-import, and the resumes after both import exactly what is missing."""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta

import pytest
from django_q.models import Task

from archive.models import ArchiveChunk, ArchiveDocument, ImportJob
from bench.chatgpt_export_build import write_export_zip
from tests.support.queue_cluster import QueueCluster

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

IMPORT = "/api/archive/import/chatgpt/?background=true"


def job_url(job_id: str, action: str = "") -> str:
    return f"/api/archive/imports/{job_id}/" + (f"{action}/" if action else "")


def wait_for(condition, what: str, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def exported(tmp_path, settings, upload):
    settings.ELION_IMPORT_DIR = tmp_path / "imports"
    path = tmp_path / "export.zip"
    written = write_export_zip(path, 8, members=4)
    return path, written["conversations"]


def start_job(client, path) -> str:
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(IMPORT, {"file": [SimpleUploadedFile("export.zip", path.read_bytes())]})
    assert response.status_code == 202, response.content
    return response.json()["job_id"]


def cluster_for(settings, **extra: str) -> QueueCluster:
    return QueueCluster({"ELION_IMPORT_DIR": str(settings.ELION_IMPORT_DIR), **extra}).start()


def job(job_id: str) -> ImportJob:
    return ImportJob.objects.get(pk=job_id)


def assert_archive_is_the_export_exactly(total: int) -> None:
    ids = list(ArchiveDocument.objects.values_list("metadata__chatgpt_conversation_id", flat=True))
    assert len(ids) == len(set(ids)) == total  # nothing twice, nothing missing
    for document in ArchiveDocument.objects.all():
        assert ArchiveChunk.objects.filter(document=document).count() == document.chunk_count


def test_a_cancel_while_the_worker_stores_keeps_what_was_done_and_a_resume_imports_only_the_rest(
    client, exported, settings
):
    path, total = exported
    job_id = start_job(client, path)
    cluster = cluster_for(settings)
    try:
        wait_for(lambda: job(job_id).done >= 30, "30 conversations stored")
        cancelled = client.post(job_url(job_id, "cancel"))
        assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
        # The worker stops after the conversation it was storing (rolled back) and ends its task.
        wait_for(lambda: Task.objects.filter(name=f"import chatgpt {job_id}").exists(), "the task to end")
        stopped = client.get(job_url(job_id)).json()
        assert stopped["state"] == "cancelled" and 30 <= stopped["done"] < total, (stopped["done"], total)
        assert ArchiveDocument.objects.count() == stopped["conversations"] == len(stopped["document_ids"])

        resumed = client.post(job_url(job_id, "resume"))
        assert resumed.status_code == 202
        wait_for(lambda: job(job_id).state == "done", "the resumed job to finish")
    finally:
        cluster.stop()
    body = client.get(job_url(job_id)).json()
    assert (body["done"], body["total"], body["conversations"], body["duplicates"]) == (total, total, total, 0)
    assert_archive_is_the_export_exactly(total)


def test_a_worker_killed_mid_import_leaves_a_job_that_resumes_once_its_heartbeat_is_stale(
    client, exported, settings
):
    path, total = exported
    settings.ELION_IMPORT_STALE_SECONDS = 2
    job_id = start_job(client, path)
    cluster = cluster_for(settings, ELION_IMPORT_STALE_SECONDS="2")
    try:
        wait_for(lambda: job(job_id).done >= 30, "30 conversations stored")
        os.killpg(cluster.process.pid, signal.SIGKILL)  # no goodbye: the conversation in flight is rolled back
        cluster.process.wait(timeout=10)
    finally:
        cluster.stop()
    left = job(job_id)
    assert left.state == "running" and left.done < total
    assert ArchiveDocument.objects.count() == left.result["conversations"]
    busy = client.post(job_url(job_id, "resume"))
    assert busy.status_code == 409 and busy.json()["error"] == "import_not_resumable"  # it may still be alive

    # The dead worker's heartbeat ages past ELION_IMPORT_STALE_SECONDS: moved back, not waited out.
    ImportJob.objects.filter(pk=job_id).update(updated_at=left.updated_at - timedelta(seconds=3))
    assert client.post(job_url(job_id, "resume")).status_code == 202
    cluster = cluster_for(settings, ELION_IMPORT_STALE_SECONDS="2")
    try:
        wait_for(lambda: job(job_id).state == "done", "the resumed job to finish")
    finally:
        cluster.stop()
    assert client.get(job_url(job_id)).json()["conversations"] == total
    assert_archive_is_the_export_exactly(total)
