"""Concurrent edit / delete / refresh / first-send with real transactions.

Seed: "Memory edits or deletions racing with first-message prompt creation
cannot leave stale memory content behind, and a database uniqueness guard
ensures that exactly one stored system message exists. Concurrent edits,
deletions, and explicit refreshes are coordinated so that a stale rebuild
cannot restore an older memory value or re-add a deleted memory ID. The final
persisted memory snapshot and system prompt must agree, while visible user and
Elion history remains unchanged."

Each operation runs in its own thread with its own database connection and
commits for real. Prompt building is slowed by a random few milliseconds so
the window between reading prompt sources and writing the prompt is wide.
On PostgreSQL this exercises the row locks; on SQLite the IMMEDIATE write lock.
"""

from __future__ import annotations

import random
import time

import pytest
from django.conf import settings
from django.db import connection

from continuity.rules import prompt_store
from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from conversations.services.threads.thread_writes import conversation_create
from elion.base.errors import NotFound
from memories.models import Memory, SnapshotMembership
from memories.services.memory_writes import memory_add, memory_delete, memory_edit
from memories.services.snapshots import snapshot_refresh
from tests.memories.conftest import fresh_prompt, member_ids, memory_texts, stored_prompt
from tests.support.racing import Gate, MarkGate, run_paused, run_together
from transcript.models import Conversation, Message, Role, StalePrompt

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 200 if settings.DATABASE_IS_POSTGRES else 40


@pytest.fixture
def slow_prompt_building(monkeypatch):
    """Widen the read-then-write window of every prompt build."""
    real = prompt_store.build_static_prompt

    def slow(inputs):
        time.sleep(random.uniform(0, 0.004))
        return real(inputs)

    monkeypatch.setattr(prompt_store, "build_static_prompt", slow)


def assert_snapshot_and_prompt_agree(conversation: Conversation) -> None:
    prompts = Message.objects.filter(conversation_id=conversation.pk, role=Role.SYSTEM)
    assert prompts.count() <= 1
    assert member_ids(conversation) <= set(Memory.objects.values_list("pk", flat=True))
    prompt = stored_prompt(conversation)
    if prompt is not None:
        assert prompt == fresh_prompt(conversation)
        assert prompt_store.markers_are_current(prompts.get())


def first_send(conversation: Conversation, content: str):
    return lambda: send_prepare(SendCommand(conversation_id=conversation.pk, content=content))


def test_randomised_interleavings_never_leave_stale_text_or_resurrect_ids(slow_prompt_building):
    rng = random.Random(20261130)
    for round_number in range(ROUNDS):
        Memory.objects.all().delete()
        originals = [memory_add(text=f"r{round_number} fact {i}") for i in range(3)]
        held = {memory.pk for memory in originals}
        thread_a, thread_b = conversation_create(), conversation_create()
        if rng.random() < 0.5:
            first_send(thread_a, "opened earlier")()  # A already has a stored prompt
        sent_before = {c.pk: Message.objects.filter(conversation=c, role=Role.USER).count() for c in (thread_a, thread_b)}

        deleted: set[int] = set()
        refreshed: set = set()
        sends: set = set()
        operations = []
        for _ in range(rng.randint(2, 5)):
            kind = rng.choice(["send", "edit", "edit", "delete", "refresh", "add"])
            target = rng.choice([thread_a, thread_b])
            memory = rng.choice(originals)
            if kind == "send" and target.pk not in sends and not Message.objects.filter(conversation=target).exists():
                sends.add(target.pk)
                operations.append(first_send(target, f"first words {round_number}"))
            elif kind == "edit":
                text = f"r{round_number} fact {memory.pk} edited {rng.randint(0, 10**6)}"
                operations.append(lambda m=memory, t=text: memory_edit(memory_id=m.pk, changes={"text": t}))
            elif kind == "delete" and memory.pk not in deleted:
                deleted.add(memory.pk)
                operations.append(lambda m=memory: memory_delete(memory_id=m.pk))
            elif kind == "refresh":
                refreshed.add(target.pk)
                operations.append(lambda c=target: snapshot_refresh(c.pk))
            elif kind == "add":
                operations.append(lambda r=round_number: memory_add(text=f"r{r} added later"))
        if len(operations) < 2:
            continue

        errors = run_together(operations)
        # Editing a memory that a concurrent delete already removed is a clean 404.
        assert all(isinstance(exc, NotFound) for exc in errors), errors

        for conversation in (thread_a, thread_b):
            assert_snapshot_and_prompt_agree(conversation)
            members = member_ids(conversation)
            assert not members & deleted, f"round {round_number}: a deleted id survived"
            if conversation.pk not in refreshed:
                # Membership only shrinks by deletion; nothing added flows in.
                assert members == held - deleted, f"round {round_number}: membership changed"
            user_turns = Message.objects.filter(conversation=conversation, role=Role.USER).count()
            expected = sent_before[conversation.pk] + (1 if conversation.pk in sends else 0)
            assert user_turns == expected
        assert not SnapshotMembership.objects.filter(memory_id__in=deleted).exists()


def test_edit_racing_first_send_never_leaves_stale_text(monkeypatch):
    memory = memory_add(text="Original wording")
    conversation = conversation_create()
    gate = Gate()
    gate.install(monkeypatch)
    errors = run_paused(
        gate,
        first_send(conversation, "hello"),
        lambda: memory_edit(memory_id=memory.pk, changes={"text": "Corrected wording"}),
    )
    assert not errors
    assert memory_texts(stored_prompt(conversation)) == ["Corrected wording"]
    assert_snapshot_and_prompt_agree(conversation)


def test_delete_racing_first_send_leaves_no_deleted_memory(monkeypatch):
    doomed, kept = memory_add(text="Doomed"), memory_add(text="Kept")
    conversation = conversation_create()
    gate = Gate()
    gate.install(monkeypatch)
    errors = run_paused(gate, first_send(conversation, "hello"), lambda: memory_delete(memory_id=doomed.pk))
    assert not errors
    assert memory_texts(stored_prompt(conversation)) == ["Kept"]
    assert member_ids(conversation) == {kept.pk}
    assert Message.objects.filter(conversation=conversation, role=Role.SYSTEM).count() == 1


def test_refresh_racing_delete_never_resurrects_the_id(monkeypatch):
    doomed = memory_add(text="Doomed")
    conversation = conversation_create()
    memory_add(text="Later")
    first_send(conversation, "hello")()
    gate = Gate()
    gate.install(monkeypatch)
    # The refresh is paused mid-rebuild with the new membership written; the delete must wait for it.
    errors = run_paused(gate, lambda: snapshot_refresh(conversation.pk), lambda: memory_delete(memory_id=doomed.pk))
    assert not errors
    assert doomed.pk not in member_ids(conversation)
    assert memory_texts(stored_prompt(conversation)) == ["Later"]
    assert_snapshot_and_prompt_agree(conversation)


# A memory edit or delete marks the holders' prompts stale in its transaction (its locks held), commits, then
# rebuilds them in batches that read and build holding no lock (`continuity.rules.prompt_refresh`): the
# racing operation is paused at each of the two points.
PAUSE_POINTS = {"marking, locks held": (MarkGate, True), "rebuilding, no lock held": (Gate, False)}


@pytest.mark.parametrize("pause", PAUSE_POINTS.values(), ids=PAUSE_POINTS.keys())
def test_delete_racing_refresh_never_resurrects_the_id(monkeypatch, pause):
    gate_class, second_waits = pause
    doomed = memory_add(text="Doomed")
    conversation = conversation_create()
    memory_add(text="Later")
    first_send(conversation, "hello")()
    gate = gate_class()
    gate.install(monkeypatch)
    # The refresh must not read the set before the delete commits, nor the delete's batch write an older set.
    errors = run_paused(
        gate, lambda: memory_delete(memory_id=doomed.pk), lambda: snapshot_refresh(conversation.pk),
        second_waits=second_waits,
    )
    assert not errors
    assert doomed.pk not in member_ids(conversation)
    assert memory_texts(stored_prompt(conversation)) == ["Later"]
    assert_snapshot_and_prompt_agree(conversation)


@pytest.mark.parametrize("pause", PAUSE_POINTS.values(), ids=PAUSE_POINTS.keys())
def test_two_edits_of_one_memory_leave_the_last_committed_text(monkeypatch, pause):
    gate_class, second_waits = pause
    memory = memory_add(text="v0")
    conversation = conversation_create()
    first_send(conversation, "hello")()
    gate = gate_class()
    gate.install(monkeypatch)
    errors = run_paused(
        gate,
        lambda: memory_edit(memory_id=memory.pk, changes={"text": "v1"}),
        lambda: memory_edit(memory_id=memory.pk, changes={"text": "v2"}),
        second_waits=second_waits,
    )
    assert not errors
    assert Memory.objects.get(pk=memory.pk).text == "v2"
    assert memory_texts(stored_prompt(conversation)) == ["v2"]
    assert not StalePrompt.objects.filter(pk=conversation.pk).exists()


def test_concurrent_first_sends_store_exactly_one_system_message():
    memory_add(text="A fact")
    conversation = conversation_create()
    errors = run_together([first_send(conversation, "one"), first_send(conversation, "two")], jitter=0)
    # The second send waits for the row lock, then finds the reply streaming.
    assert len(errors) <= 1 and all(getattr(exc, "code", "") == "reply_in_progress" for exc in errors)
    assert Message.objects.filter(conversation=conversation, role=Role.SYSTEM).count() == 1
    assert_snapshot_and_prompt_agree(conversation)
    assert connection.vendor in ("sqlite", "postgresql")
