"""A request that hands work to the task queue while its broker refuses it (`elion.base.task_queue`).

The broker is Redis on a port nobody listens on, so `async_task` fails after the request's commit.
Every such request answers 503 `queue_unavailable` with `Retry-After` in the JSON error shape (never a
500), and leaves no row waiting for a task nobody queued: a new import, backup or restore is removed with
its files, an import that was resuming is left failed with its files, and a backup asked to verify again
keeps what it had. Every call site of `async_task` in the app is listed below, so a new one must choose.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from django_q.models import OrmQ

from archive.models import ImportJob, ImportState
from elion.models import BackupRecord, BackupStatus, RestoreRun
from tests.support.backup_files import backup_file
from tests.support.factories import thread
from tests.support.import_jobs import IMPORT, job_url
from tests.support.live_server import ROOT, free_port
from tests.support.stored_backups import stored

# The modules that call `async_task` themselves, each with its reason; every request goes through
# `task_queue_after_commit`.
DIRECT_ENQUEUES = {
    "elion/base/task_queue.py": "the one queueing helper for requests",
    "continuity/rules/prompt_refresh.py": "a refused refresh task is rebuilt in place by the operation itself",
    "continuity/tasks.py": "the cluster's reconciliation chain and refresh slices",
    "check_ins/tasks.py": "the cluster's per-minute tick hands each due run to a worker",
}
APP_FOLDERS = ("archive", "check_ins", "continuity", "conversations", "elion", "memories", "operations", "transcript")


@pytest.fixture
def refusing_broker(monkeypatch):
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "ORM", None)
    monkeypatch.setattr(Conf, "DJANGO_REDIS", None)
    monkeypatch.setattr(Conf, "REDIS", f"redis://127.0.0.1:{free_port()}/0")


def unavailable(response) -> None:
    assert response.status_code == 503, response.content
    assert response.json()["error"] == "queue_unavailable", response.json()
    assert "Nothing was lost" in response.json()["detail"]
    assert response["Retry-After"] == "5"


def test_every_module_that_queues_a_task_itself_is_named_with_its_reason():
    calls = set()
    for folder in APP_FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            if re.search(r"\basync_task\(", path.read_text()):
                calls.add(str(path.relative_to(ROOT)))
    assert calls == set(DIRECT_ENQUEUES)


@pytest.mark.django_db(transaction=True)
def test_a_new_background_import_answers_503_and_keeps_no_job_nor_file(refusing_broker, settings, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.ELION_IMPORT_DIR = tmp_path / "imports"
    upload = SimpleUploadedFile("export.zip", b"PK\x05\x06" + b"\x00" * 18)
    unavailable(Client().post(f"{IMPORT}?background=true", {"file": [upload]}))
    assert not ImportJob.objects.exists()
    assert not any(Path(settings.ELION_IMPORT_DIR).glob("*/*"))


@pytest.mark.django_db(transaction=True)
def test_a_resumed_import_refused_is_left_failed_with_its_files_and_resumes_later(
    refusing_broker, settings, tmp_path, monkeypatch
):
    from django_q.conf import Conf

    settings.ELION_IMPORT_DIR = tmp_path / "imports"
    job = ImportJob.objects.create(kind="chatgpt", state=ImportState.CANCELLED,
                                   files=[{"name": "export.zip", "path": "000.upload", "size": 3}])
    folder = Path(settings.ELION_IMPORT_DIR) / str(job.pk)
    folder.mkdir(parents=True)
    (folder / "000.upload").write_bytes(b"zip")
    client = Client()
    unavailable(client.post(job_url(str(job.pk), "resume")))
    job.refresh_from_db()
    assert job.state == ImportState.FAILED and job.error["error"] == "queue_unavailable"
    assert (folder / "000.upload").read_bytes() == b"zip"

    monkeypatch.setattr(Conf, "ORM", "default")  # the queue is back: the same job resumes
    resumed = client.post(job_url(str(job.pk), "resume"))
    assert resumed.status_code == 202 and resumed.json()["state"] == "queued"
    assert OrmQ.objects.get().task["args"] == (str(job.pk),)


@pytest.mark.django_db(transaction=True)
def test_back_up_now_answers_503_and_leaves_no_running_backup(refusing_broker, backup_env):
    client = Client()
    unavailable(client.post("/api/backups/"))
    assert not BackupRecord.objects.exists()
    # The Settings page says the same sentence instead of a 500.
    page = client.post("/settings/backups/now/", follow=True)
    assert page.status_code == 200 and b"could not be handed to Elion&#x27;s task queue" in page.content
    assert not BackupRecord.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_verify_again_answers_503_and_the_backup_keeps_what_it_had(refusing_broker, backup_env, tmp_path):
    thread(("user", "the ferry at dawn"), ("assistant", "the keeper waves"))
    record = stored(backup_file(tmp_path))
    BackupRecord.objects.filter(pk=record.pk).update(status=BackupStatus.VERIFIED)
    unavailable(Client().post(f"/api/backups/{record.id}/verify/"))
    record.refresh_from_db()
    assert record.status == BackupStatus.VERIFIED and record.failure == "" and record.stored


@pytest.mark.django_db(transaction=True)
def test_a_restore_answers_503_and_leaves_no_queued_run_nor_staged_copy(refusing_broker, backup_env, tmp_path):
    thread(("user", "the ferry at dawn"), ("assistant", "the keeper waves"))
    record = stored(backup_file(tmp_path))
    client = Client()
    unavailable(client.post(f"/api/backups/{record.id}/restore/", {"confirm": "replace"},
                            content_type="application/json"))
    assert not RestoreRun.objects.exists()  # so nothing blocks the next try as "a restore under way"
    assert not list(Path(backup_env["ELION_BACKUP_STAGING_DIR"]).glob("restore-*"))
