"""Scheduled backups run by a real django-q2 cluster: once at the slot they were due, and a missed one once after a
restart, never twice (issue 42).

The clock is injected through the Schedule itself: the test sets its
`next_run` (the slot that is due), and the cluster's own scheduler finds it
due, passes the slot to the task (`intended_date_kwarg`) and moves
`next_run` on, exactly as it does at 03:00.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule

from conversations import tasks
from elion.models import BackupRecord, BackupStatus
from operations.backup.scheduling import SCHEDULE_NAME, schedule_sync
from tests.support.factories import thread
from tests.support.queue_cluster import QueueCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
PASSPHRASE = "the tide tables"


@pytest.fixture
def backup_env(settings, tmp_path) -> dict[str, str]:
    env = {
        "ELION_BACKUP_PASSPHRASE": PASSPHRASE,
        "ELION_BACKUP_DIR": str(tmp_path / "backups"),
        "ELION_BACKUP_STAGING_DIR": str(tmp_path / "staging"),
        "ELION_ATTACHMENT_ROOT": str(tmp_path / "attachments"),
        "ELION_BACKUP_S3_BUCKET": "",
        "ELION_BACKUP_RECIPIENTS": "",
    }
    for name, value in env.items():
        setattr(settings, name, value)
    return env


def due(slot) -> None:
    Schedule.objects.filter(name=SCHEDULE_NAME).update(next_run=slot)


def wait_for_record(cluster: QueueCluster, slot, deadline: float) -> BackupRecord:
    while time.monotonic() < deadline:
        assert cluster.process.poll() is None, cluster.log()[-3000:]
        record = BackupRecord.objects.filter(slot=slot).exclude(status=BackupStatus.RUNNING).first()
        if record is not None:
            return record
        time.sleep(0.5)
    raise AssertionError(cluster.log()[-3000:])


@pytest.mark.django_db(transaction=True)
def test_a_scheduled_backup_runs_once_at_its_slot_and_a_missed_one_once_after_a_restart(backup_env):
    thread(("user", "When is high tide?"), ("assistant", "At six."))
    schedule_sync()
    now = timezone.now().replace(microsecond=0)
    first_slot = now - timedelta(minutes=1)
    due(first_slot)

    cluster = QueueCluster(backup_env).start()
    try:
        record = wait_for_record(cluster, first_slot, time.monotonic() + 400)
    finally:
        cluster.stop()
    assert record.status == BackupStatus.VERIFIED, (record.failure, cluster.log()[-2000:])
    assert record.slot == first_slot and record.counts["sample"]["messages"] == 2
    schedule = Schedule.objects.get(name=SCHEDULE_NAME)
    assert schedule.next_run > timezone.now(), "the scheduler moved on to the next day"
    # The same slot asked for again (a second cluster, a retried task): nothing more is written.
    assert tasks.scheduled_backup(first_slot.isoformat())["status"] == "taken already"
    assert BackupRecord.objects.count() == 1

    # Down for three days: three daily slots went by. At the next start, one backup, for the first one missed.
    missed = now - timedelta(days=3)
    due(missed)
    cluster = QueueCluster(backup_env).start()
    try:
        late = wait_for_record(cluster, missed, time.monotonic() + 400)
        # The scheduler moved next_run past now in the same pass: no second run of the missed days can follow.
        assert Schedule.objects.get(name=SCHEDULE_NAME).next_run > timezone.now()
    finally:
        cluster.stop()
    assert late.status == BackupStatus.VERIFIED, late.failure
    assert BackupRecord.objects.count() == 2
    assert set(BackupRecord.objects.values_list("slot", flat=True)) == {first_slot, missed}
