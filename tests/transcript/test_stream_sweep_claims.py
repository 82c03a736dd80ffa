"""The stale-stream sweep runs in every queue cluster: a stale reply is interrupted by one sweep only.

`streams_interrupt_expired` is one conditional UPDATE (`status = streaming AND
lease expired`): a second sweep racing the first re-checks the condition on the
row the first one changed and leaves it alone, so the sweeps' counts add up to
the number of stale replies and no reply is rewritten twice.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from transcript.leases import streams_interrupt_expired
from transcript.models import Conversation, Message, MessageStatus, Role

STALE = 300
SWEEPERS = 4


@pytest.mark.django_db(transaction=True)
def test_concurrent_sweeps_interrupt_each_stale_stream_exactly_once():
    expired = timezone.now() - timedelta(minutes=5)
    conversations = Conversation.objects.bulk_create([Conversation(title=f"c{i}", last_seq=1) for i in range(STALE)])
    Message.objects.bulk_create(
        [
            Message(conversation=c, seq=1, role=Role.ASSISTANT, content="half a rep", status=MessageStatus.STREAMING,
                    lease_expires_at=expired)
            for c in conversations
        ]
    )
    live = Conversation.objects.create(title="live", last_seq=1)
    Message.objects.create(conversation=live, seq=1, role=Role.ASSISTANT, content="still going",
                           status=MessageStatus.STREAMING, lease_expires_at=timezone.now() + timedelta(minutes=5))
    counts: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(SWEEPERS)

    def sweep():
        try:
            start.wait(10)
            counts.append(streams_interrupt_expired())
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=sweep) for _ in range(SWEEPERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)

    assert not errors
    assert sum(counts) == STALE and len(counts) == SWEEPERS
    assert Message.objects.filter(status=MessageStatus.INTERRUPTED, content="half a rep").count() == STALE
    # A reply whose lease is live belongs to a running process: no sweep touches it.
    assert Message.objects.get(conversation=live).status == MessageStatus.STREAMING
    assert streams_interrupt_expired() == 0
