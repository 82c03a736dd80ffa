"""Two real django-q2 clusters reconcile one backlog: every prompt rebuilt once, completion recorded once.

Scale-out runs several `qcluster` processes against one database. Each batch
claims its conversations (row locks with SKIP LOCKED on PostgreSQL; the
IMMEDIATE write transaction on SQLite) and the completion row is written by a
conditional UPDATE, so the clusters share the work without doing any of it twice.
"""

from __future__ import annotations

import time

import pytest

from continuity import tasks
from continuity.models import PromptReconciliationRun
from continuity.services.reconciliation import completion_recorded, policy_version, stale_prompts
from tests.support.queue_cluster import QueueCluster
from tests.support.stale_prompts import seed_stale_prompts
from transcript.models import Message, Role

PROMPTS = 5_000
BATCH = 100
CHAINS = 4  # batch chains started at once, as if several dispatchers had each claimed the work


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.django_db(transaction=True)
def test_two_queue_clusters_rebuild_every_stale_prompt_exactly_once_and_record_completion_once():
    from django_q.models import OrmQ, Task
    from django_q.tasks import async_task

    ids = seed_stale_prompts(PROMPTS)
    version = policy_version()
    env = {"ELION_RECONCILE_BATCH_SIZE": str(BATCH), "ELION_QUEUE_WORKERS": "2"}
    clusters = [QueueCluster(env).start(), QueueCluster(env).start()]
    try:
        for _ in range(CHAINS):
            async_task(tasks.BATCH_TASK, BATCH, task_name="reconcile stored prompts")
        async_task(tasks.TICK_TASK)
        deadline = time.monotonic() + 120
        while not completion_recorded(version) and time.monotonic() < deadline:
            for cluster in clusters:
                assert cluster.process.poll() is None, cluster.log()[-3000:]
            time.sleep(0.2)
        assert completion_recorded(version), [cluster.log()[-2000:] for cluster in clusters]
        # Let every queued or running task (a batch that found nothing left) finish before counting:
        # the ORM broker deletes a queue row once its result is saved.
        while OrmQ.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not OrmQ.objects.exists()
    finally:
        for cluster in clusters:
            cluster.stop()
    logs = [cluster.log() for cluster in clusters]

    # Every prompt is current now...
    assert not stale_prompts().exists()
    assert Message.objects.filter(role=Role.SYSTEM, conversation_id__in=ids).count() == PROMPTS
    # ...and was rebuilt once: the batches' own counts add up to the backlog, no more.
    run = PromptReconciliationRun.objects.get(policy_version=version)
    assert run.rebuilt == PROMPTS
    batch_results = [task.result for task in Task.objects.filter(func=tasks.BATCH_TASK)]
    assert all(task.success for task in Task.objects.filter(func=tasks.BATCH_TASK))
    assert sum(result["rebuilt"] for result in batch_results) == PROMPTS
    assert sum(result["failed"] for result in batch_results) == 0
    # Both clusters did part of the work.
    for log in logs:
        assert f"Processed '{tasks.BATCH_TASK}'" in log, log[-2000:]
    # Completion was recorded by exactly one caller, in one of the two processes.
    recorded = sum(log.count("prompt reconciliation completion recorded") for log in logs)
    assert recorded == 1, [log[-2000:] for log in logs]
    assert run.completed_at is not None

