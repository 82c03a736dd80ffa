"""The django-q2 broker follows REDIS_URL: Redis when it is set, the database (ORM) otherwise.

The Redis case is proved end to end: a real redis-server on loopback, a real
`qcluster` subprocess and a task enqueued by another process with the same
settings; the task runs and the database's ORM queue is never used.
"""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.live_server import ROOT, subprocess_env
from tests.support.queue_cluster import QueueCluster
from tests.support.redis_server import RedisServer
from transcript.models import Conversation, Message, MessageStatus, Role

SHOW_BROKER = "from django_q.brokers import get_broker; print(type(get_broker()).__name__)"


def django_run(code: str, extra_env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=subprocess_env(extra_env),
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


@contextmanager
def redis_on_loopback():
    with RedisServer() as server:
        yield server.url


@pytest.mark.django_db(transaction=True)
def test_queue_uses_the_database_broker_without_redis_url():
    assert django_run(SHOW_BROKER, {"REDIS_URL": ""}) == "ORM"


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_queue_uses_the_redis_broker_when_redis_url_is_set():
    from django_q.models import OrmQ, Task

    conversation = Conversation.objects.create(title="stale", last_seq=1)
    reply = Message.objects.create(
        conversation=conversation, seq=1, role=Role.ASSISTANT, content="half", status=MessageStatus.STREAMING,
        lease_expires_at=timezone.now() - timedelta(minutes=5),
    )
    with redis_on_loopback() as url:
        env = {"REDIS_URL": url}
        assert django_run(SHOW_BROKER, env) == "Redis"
        cluster = QueueCluster(env).start()
        try:
            django_run(
                "from django_q.tasks import async_task; "
                "print(async_task('conversations.tasks.interrupt_stale_streams', task_name='swept via redis'))",
                env,
            )
            deadline = time.monotonic() + 60
            while not Task.objects.filter(name="swept via redis").exists() and time.monotonic() < deadline:
                assert cluster.process.poll() is None, cluster.log()[-3000:]
                time.sleep(0.1)
        finally:
            cluster.stop()
    task = Task.objects.get(name="swept via redis")
    assert task.success and task.result == 1, cluster.log()[-3000:]
    reply.refresh_from_db()
    assert reply.status == MessageStatus.INTERRUPTED
    assert not OrmQ.objects.exists()  # nothing went through the database queue
