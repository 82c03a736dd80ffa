"""Each due time runs exactly once with real django-q2 clusters (`manage.py qcluster` subprocesses) on the test
database: under two clusters claiming at once, and under a SIGKILL of the cluster mid-reply (the run is taken
again once its lease ran out, and writes no second turn or reply).

The clock is injected through the rows, as the backups' tests do: a check-in's `next_run_at` is set to the
due time that has come, and the Schedule's `next_run` to now, so the cluster's own scheduler (or the
dispatches queued here, as several clusters would) finds the work.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import suppress
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task

from check_ins.models import CheckInRun, RunStatus
from tests.check_ins.support import check_in_due
from tests.support.queue_cluster import QueueCluster
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message, MessageKind, MessageStatus, Role

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.django_db(transaction=True)]
SCHEDULE_NAME = "run due check-ins"
DISPATCH_TASK = "check_ins.tasks.check_ins_run_due"


def _env(provider, **more: str) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": provider.base_url, "ELION_API_SELECTOR": "responses",
        "ELION_MODEL": "gpt-5.5", "ELION_PROVIDER_ID": "openai", "ELION_QUEUE_WORKERS": "2", **more,
    }


def _schedule_due_now() -> None:
    """The minute's Schedule (migration check_ins 0002; the suite empties tables between tests), due now."""
    Schedule.objects.update_or_create(
        name=SCHEDULE_NAME,
        defaults={"func": DISPATCH_TASK, "schedule_type": Schedule.MINUTES, "minutes": 1, "repeats": -1,
                  "next_run": timezone.now()},
    )


def _wait(predicate, clusters: list[QueueCluster], seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for cluster in clusters:
            assert cluster.process.poll() is None, cluster.log()[-3000:]
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what}: " + " | ".join(cluster.log()[-2000:] for cluster in clusters))


def _kill(cluster: QueueCluster) -> None:
    """SIGKILL the cluster and every process of it, at once: no handler, no clean-up, as a power cut."""
    with suppress(ProcessLookupError):
        os.killpg(cluster.process.pid, signal.SIGKILL)
    cluster.process.wait(timeout=30)


def test_two_clusters_claiming_at_once_run_each_due_time_exactly_once(scripted_provider):
    check_ins = [check_in_due(title=f"Check-in {n}", brief=f"ask about plan {n}") for n in range(6)]
    _schedule_due_now()
    clusters = [QueueCluster(_env(scripted_provider)).start(), QueueCluster(_env(scripted_provider)).start()]
    try:
        # Several dispatches at once, as several clusters' schedulers would send them, on top of the Schedule's.
        for _ in range(4):
            async_task(DISPATCH_TASK)
        _wait(lambda: CheckInRun.objects.filter(status=RunStatus.DONE).count() == len(check_ins), clusters, 300,
              "every run done")
        time.sleep(3)  # any late duplicate would show now
    finally:
        for cluster in clusters:
            cluster.stop()
    assert CheckInRun.objects.count() == len(check_ins)
    assert sorted(CheckInRun.objects.values_list("check_in_id", flat=True)) == sorted(c.pk for c in check_ins)
    assert Message.objects.filter(kind=MessageKind.CHECK_IN_TRIGGER).count() == len(check_ins)
    replies = Message.objects.filter(role=Role.ASSISTANT, parent__kind=MessageKind.CHECK_IN_TRIGGER)
    assert replies.count() == len(check_ins)
    assert set(replies.values_list("status", flat=True)) == {MessageStatus.COMPLETE}
    assert len(scripted_provider.requests) == len(check_ins), "one provider call per due time"


def test_a_cluster_killed_mid_reply_leaves_a_run_taken_again_once_with_no_second_reply(scripted_provider):
    check_in = check_in_due(brief="ask how the move went")
    gate = threading.Event()
    scripted_provider.script(ScriptedReply(chunks=["How did ", "the move ", "go?"], hold=gate))
    _schedule_due_now()
    leases = {"ELION_CHECK_IN_LEASE_SECONDS": "5", "ELION_STREAM_LEASE_SECONDS": "3"}
    first = QueueCluster(_env(scripted_provider, **leases)).start()
    try:
        async_task(DISPATCH_TASK)
        reply = _wait(
            lambda: Message.objects.filter(role=Role.ASSISTANT, status=MessageStatus.STREAMING)
            .exclude(content="").first(),
            [first], 240, "the reply streaming",
        )
        _kill(first)  # mid-reply: the trigger and the partial reply are stored, the run is `running`
    finally:
        gate.set()
        first.stop()
    run = CheckInRun.objects.get()
    assert run.status == RunStatus.RUNNING and run.attempts == 1
    assert reply.content == "How did "

    second = QueueCluster(_env(scripted_provider, **leases)).start()
    try:
        time.sleep(6)  # both leases run out
        Schedule.objects.filter(name=SCHEDULE_NAME).update(next_run=timezone.now())
        async_task(DISPATCH_TASK)
        _wait(lambda: CheckInRun.objects.filter(status=RunStatus.DONE).exists(), [second], 240, "the run taken again")
    finally:
        second.stop()
    run.refresh_from_db()
    assert (run.status, run.attempts, run.reply_message_id) == (RunStatus.DONE, 2, reply.id)
    assert Message.objects.filter(kind=MessageKind.CHECK_IN_TRIGGER).count() == 1
    [only] = Message.objects.filter(role=Role.ASSISTANT, conversation_id=run.conversation_id)
    # The partial text is kept as `interrupted` (Retry is under it), as for any reply whose process died.
    assert (only.id, only.status, only.content) == (reply.id, MessageStatus.INTERRUPTED, "How did ")
    assert len(scripted_provider.requests) == 1, "no second provider call"
    check_in.refresh_from_db()
    assert check_in.next_run_at > timezone.now() - timedelta(minutes=5)
