"""One runner of refresh batches on the queue at a time (issue 40: the longest waits during a large refresh).

Measured (PostgreSQL, 10,000 conversations, `bench/many_conversations.py` with a timeline of every batch):
for 37 % of a refresh's time two workers ran batches side by side, because the reconciliation tick, every
minute, ran a whole pass of its own beside the operation's chain of slices, both from the lowest marked id,
building the same batches twice on a two-core machine. The queue's runners (`stale_prompts_refresh_slice`,
`prompts_reconcile_tick`) now take the lock row's runner lease (`continuity.rules.prompt_refresh`, "One
runner"); an operation's own rebuild takes none and never waits for one.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ

from continuity.rules import prompt_refresh
from continuity.tasks import prompts_reconcile_tick, stale_prompts_refresh_slice
from conversations.services.settings_writes import assistant_settings_update
from elion.base.assistant_settings import assistant_settings_get
from elion.models import AssistantSettings
from memories.models import MemorySetLock
from tests.continuity.stored_prompts import prompts, threads_with_prompts
from tests.support.factories import prompts_marked
from tests.support.racing import Gate
from transcript.models import Conversation, StalePrompt

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

THREADS = 6


@pytest.fixture
def marked_after_a_save(settings):
    """Every prompt marked as a Settings save marks them, the new instructions written underneath."""
    settings.ELION_PROMPT_REFRESH_ON_QUEUE = True
    settings.ELION_PROMPT_REFRESH_BATCH = 2
    threads_with_prompts(THREADS)
    assistant_settings_get()
    AssistantSettings.objects.filter(pk=1).update(custom_instructions="Answer in riddles.")
    prompts_marked(Conversation.all_objects.all())
    return settings


def lease_held_elsewhere(*, for_seconds: float) -> None:
    MemorySetLock.objects.update_or_create(
        pk=1, defaults={"prompt_refresh_until": timezone.now() + timedelta(seconds=for_seconds)}
    )


def lease_until():
    return MemorySetLock.objects.values_list("prompt_refresh_until", flat=True).first()


def test_a_slice_leaves_the_marks_to_the_runner_holding_the_lease_and_queues_none(marked_after_a_save):
    lease_held_elsewhere(for_seconds=30)
    queued = get_broker().queue_size()
    assert stale_prompts_refresh_slice() == 0
    assert StalePrompt.objects.count() == THREADS, "no batch ran beside the holder"
    assert get_broker().queue_size() == queued, "no next slice queued behind the holder's chain"


def test_the_reconciliation_tick_runs_no_pass_beside_a_running_refresh(marked_after_a_save):
    lease_held_elsewhere(for_seconds=30)
    prompts_reconcile_tick()
    assert StalePrompt.objects.count() == THREADS


def test_a_lease_whose_runner_died_lapses_and_the_next_runner_takes_it(marked_after_a_save):
    lease_held_elsewhere(for_seconds=-1)
    assert stale_prompts_refresh_slice() == THREADS
    assert not StalePrompt.objects.exists()
    assert all("Answer in riddles." in text for text in prompts())
    assert lease_until() is None, "released when the slice ended"


def test_a_runner_renews_its_lease_before_every_batch(marked_after_a_save, monkeypatch):
    renewals = []
    real_renew = prompt_refresh.RunnerLease.renew

    def renew(lease):
        renewed = real_renew(lease)
        renewals.append((renewed, lease_until()))
        return renewed

    monkeypatch.setattr(prompt_refresh.RunnerLease, "renew", renew)
    assert prompt_refresh.stale_prompts_refresh_leased() == THREADS
    batches = THREADS // marked_after_a_save.ELION_PROMPT_REFRESH_BATCH
    assert len(renewals) == batches + 1, "before each batch, and before the look that finds none left"
    assert all(renewed and until > timezone.now() for renewed, until in renewals)
    assert lease_until() is None


def test_a_runner_whose_lease_another_took_stops_and_leaves_the_others_lease(marked_after_a_save, monkeypatch):
    """Stalled past its lease (here: another runner's lease written over it after the first batch), a runner
    neither renews nor releases the other's lease: it stops before its next batch."""
    real_batch = prompt_refresh._batch_refresh
    others = timezone.now() + timedelta(seconds=25)

    def batch_then_taken_over(ids):
        done = real_batch(ids)
        MemorySetLock.objects.filter(pk=1).update(prompt_refresh_until=others)
        return done

    monkeypatch.setattr(prompt_refresh, "_batch_refresh", batch_then_taken_over)
    assert prompt_refresh.stale_prompts_refresh_leased() == marked_after_a_save.ELION_PROMPT_REFRESH_BATCH
    assert lease_until() == others, "the other runner's lease, neither renewed nor released"
    assert StalePrompt.objects.count() == THREADS - marked_after_a_save.ELION_PROMPT_REFRESH_BATCH


def test_the_tick_queues_a_slice_for_what_its_pass_leaves_marked(marked_after_a_save):
    marked_after_a_save.ELION_PROMPT_REFRESH_SLICE_SECONDS = 0  # its pass ends before its first batch
    prompts_reconcile_tick()
    assert StalePrompt.objects.count() == THREADS
    queued = [row.task["func"] for row in OrmQ.objects.all()]
    assert queued.count(prompt_refresh.REFRESH_TASK) == 1, "the rest handed to a slice, not left to the next tick"


def test_a_lease_is_released_when_the_runner_fails(marked_after_a_save, monkeypatch):
    def failing(ids):
        raise RuntimeError("a batch failed")

    monkeypatch.setattr(prompt_refresh, "_batch_refresh", failing)
    with pytest.raises(RuntimeError):
        prompt_refresh.stale_prompts_refresh_leased()
    assert lease_until() is None


def test_two_runners_at_once_one_runs_the_batches_the_other_returns_at_once(marked_after_a_save, monkeypatch):
    """Real threads, each on its own connection: the first is paused inside its first prompt build (holding no
    row lock, its lease held); the second finds the lease held and returns without building anything."""
    gate = Gate()
    gate.install(monkeypatch)
    gate.thread_name = "first-runner"
    results: dict[str, object] = {}

    def run(name):
        try:
            results[name] = prompt_refresh.stale_prompts_refresh_leased()
        finally:
            connections.close_all()

    first = threading.Thread(target=run, args=("first-runner",), name="first-runner")
    first.start()
    assert gate.reached.wait(timeout=30)
    second = threading.Thread(target=run, args=("second-runner",), name="second-runner")
    second.start()
    second.join(timeout=30)
    assert not second.is_alive() and results["second-runner"] is None
    gate.release.set()
    first.join(timeout=60)
    assert results["first-runner"] == THREADS
    assert not StalePrompt.objects.exists()


def test_an_operations_own_refresh_never_waits_for_a_runner(settings):
    """A small scope is rebuilt in the operation's process whoever holds the lease (its batches lock their
    rows, so nothing is rewritten twice or from older sources)."""
    settings.ELION_PROMPT_REFRESH_QUEUE_FROM = 1_000
    threads_with_prompts(THREADS)
    lease_held_elsewhere(for_seconds=30)
    assistant_settings_update(custom_instructions="Answer in riddles.")
    assert not StalePrompt.objects.exists()
    assert all("Answer in riddles." in text for text in prompts())
