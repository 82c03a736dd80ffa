"""A backup's run is a task of its own, with a time limit a large instance's backup fits in, and a backup never
stays `running` when its run stops (issue 40: an instance that lasts for years outgrows five minutes).

Found: every backup ran under the cluster's 300 s task limit (`Q_CLUSTER["timeout"]`), the scheduled one inside
the schedule's own task; a 1 GB instance takes 852 s (bench/results/backup_cost.md). django-q2 stops such a task
by raising `TimeoutException`, a `SystemExit`, which the run did not catch: the record stayed `running` for
ever, and a scheduled slot, taken, was never backed up. The ORM broker also hands a task still running after
`Q_CLUSTER["retry"]` (360 s) to a second worker.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone
from django_q.exceptions import TimeoutException
from django_q.models import OrmQ

from elion.models import BackupRecord, BackupStatus
from operations.backup import listing, requests, runs, scheduling
from tests.support.factories import thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]


def queued() -> list[dict]:
    """The tasks waiting in the ORM broker's table, decoded."""
    return [row.task for row in OrmQ.objects.all()]


def stored_record() -> BackupRecord:
    destination = runs.destinations.configured_destination()
    return BackupRecord.objects.create(
        destination=destination.description, encrypted=True, status=BackupStatus.VERIFIED, stored=True,
        key="elion-backup-stored.zip.age", size=1, sha256="0" * 64,
    )


def test_every_backup_task_is_queued_with_a_time_limit_beyond_the_clusters(backup_env):
    """Back up now, Verify again and the schedule's run: each task carries its own limit."""
    thread(("user", "Is the lamp lit?"), ("assistant", "Every night."))
    requests.backup_now_request()
    requests.backup_verify_request(stored_record().id)
    result = scheduling.scheduled_backup((timezone.now() - timedelta(minutes=1)).isoformat())
    assert result["status"] == "queued"
    tasks = queued()
    assert sorted(task["func"] for task in tasks) == sorted([runs.BACKUP_TASK, runs.BACKUP_TASK, runs.VERIFY_TASK])
    cluster_limit = settings.Q_CLUSTER["timeout"]
    for task in tasks:
        assert task.get("timeout", cluster_limit) > cluster_limit, task["func"]
    limits = {task["func"]: task["timeout"] for task in tasks}
    assert limits[runs.BACKUP_TASK] > limits[runs.VERIFY_TASK] > runs.TIMEOUT_SECONDS


def test_a_run_stopped_by_its_time_limit_is_recorded_failed_not_left_running(backup_env, monkeypatch):
    thread(("user", "Is the lamp lit?"), ("assistant", "Every night."))
    record = runs.backup_start()

    def stopped():
        yield b"PK"
        raise TimeoutException("Task exceeded maximum timeout value (300 seconds)")

    monkeypatch.setattr(runs, "backup_chunks", stopped)
    with pytest.raises(TimeoutException):
        runs.backup_run(record)
    record.refresh_from_db()
    assert record.status == BackupStatus.FAILED and "maximum timeout" in record.failure
    assert not list((runs._staging()).iterdir()), "its staging files removed"


def test_a_second_delivery_of_a_running_backup_writes_nothing(backup_env):
    """The ORM broker redelivers a task still running after its retry time: the second run finds the record
    claimed (its file name written) and returns it as it is."""
    thread(("user", "Is the lamp lit?"), ("assistant", "Every night."))
    record = runs.backup_start()
    BackupRecord.objects.filter(pk=record.pk).update(key="elion-backup-being-written.zip.age")
    again = runs.backup_run(BackupRecord.objects.get(pk=record.pk))
    assert again.status == BackupStatus.RUNNING and not again.stored
    assert again.key == "elion-backup-being-written.zip.age"
    folder = Path(backup_env["ELION_BACKUP_DIR"])
    assert not folder.exists() or not any(folder.iterdir()), "nothing stored by the second delivery"


def test_a_backup_whose_process_died_is_recorded_failed_past_its_time_limit(backup_env):
    """Counted from the claim of its run (a backup that waited in the queue is not swept while it runs), or
    from its record when no delivery ever claimed it; the listing shows it so."""
    thread(("user", "Is the lamp lit?"), ("assistant", "Every night."))
    dead, never_started, late, alive = (runs.backup_start() for _ in range(4))
    long_ago = timezone.now() - timedelta(seconds=runs.BACKUP_TASK_TIMEOUT_SECONDS + 601)
    BackupRecord.objects.filter(pk=dead.pk).update(created_at=long_ago, started_at=long_ago, key="dead.zip.age")
    BackupRecord.objects.filter(pk=never_started.pk).update(created_at=long_ago)
    BackupRecord.objects.filter(pk=late.pk).update(created_at=long_ago, started_at=timezone.now(), key="late.zip.age")
    listed = {row["id"]: row for row in listing.backups_listing()["results"]}
    for record in (dead, never_started, late, alive):
        record.refresh_from_db()
    assert dead.status == never_started.status == BackupStatus.FAILED and dead.failure == runs.INTERRUPTED
    assert late.status == alive.status == BackupStatus.RUNNING
    assert listed[str(dead.id)]["status"] == BackupStatus.FAILED


def test_a_second_delivery_of_verify_again_verifies_nothing_while_the_first_does(backup_env, monkeypatch):
    record = stored_record()
    verified = []
    monkeypatch.setattr(runs, "backup_verify", lambda record, **_: verified.append(record.pk) or record)
    BackupRecord.objects.filter(pk=record.pk).update(verifying_since=timezone.now())  # a delivery verifying
    assert runs.backup_verify_claimed(record).status == BackupStatus.VERIFIED
    assert verified == [], "the second delivery ran no verification"
    long_ago = timezone.now() - timedelta(seconds=runs.VERIFY_TASK_TIMEOUT_SECONDS + 1)
    BackupRecord.objects.filter(pk=record.pk).update(verifying_since=long_ago)  # that one died
    runs.backup_verify_claimed(record)
    assert verified == [record.pk]
    assert BackupRecord.objects.get(pk=record.pk).verifying_since is None, "released when it ended"


def test_a_verification_stopped_by_its_time_limit_is_recorded_failed(backup_env, monkeypatch):
    record = stored_record()

    def stopped(record, **_):
        raise TimeoutException("Task exceeded maximum timeout value (25200 seconds)")

    monkeypatch.setattr(runs, "backup_verify", stopped)
    with pytest.raises(TimeoutException):
        runs.backup_verify_claimed(record)
    record.refresh_from_db()
    assert record.status == BackupStatus.FAILED and record.failure.startswith("The verification stopped")
    assert record.verifying_since is None
