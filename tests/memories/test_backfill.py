"""Legacy threads: a one-time snapshot backfill (seed, "Snapshot lifecycle" and
"Snapshot timing metadata")."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from memories.models import ConversationMemorySnapshot
from memories.services.memory_writes import memory_add, memory_delete
from tests.memories.conftest import member_ids, memory_texts, stored_prompt
from transcript.models import Conversation, Message, Role

pytestmark = pytest.mark.django_db


def legacy_thread(with_prompt: bool = False) -> Conversation:
    conversation = Conversation.objects.create(title="From before snapshots")
    if with_prompt:
        conversation.last_seq = 1
        conversation.save()
        Message.objects.create(conversation=conversation, seq=1, role=Role.SYSTEM, content="old prompt")
    return conversation


def test_backfill_marks_legacy_without_inventing_capture_time(capsys):
    kept = memory_add(text="Kept fact")
    doomed = memory_add(text="Doomed fact")
    memory_add(text="Shelved", active=False)
    memory_delete(memory_id=doomed.pk)
    legacy = legacy_thread(with_prompt=True)

    call_command("backfill_memory_snapshots")
    assert "Backfilled 1" in capsys.readouterr().out
    record = ConversationMemorySnapshot.objects.get(conversation=legacy)
    assert (record.provenance, record.captured_at, record.refreshed_at) == ("legacy", None, None)
    assert member_ids(legacy) == {kept.pk}
    # Its stored prompt now carries the backfilled snapshot, not the global collection.
    assert memory_texts(stored_prompt(legacy)) == ["Kept fact"]


def test_backfill_is_idempotent_and_leaves_captured_threads_alone(make_conversation, capsys):
    memory_add(text="First")
    captured = make_conversation()
    legacy = legacy_thread()
    call_command("backfill_memory_snapshots", batch_size=1)
    capsys.readouterr()
    before = {c.pk: member_ids(c) for c in (captured, legacy)}
    memory_add(text="Added after the backfill")

    call_command("backfill_memory_snapshots")
    assert "Backfilled 0" in capsys.readouterr().out
    assert {c.pk: member_ids(c) for c in (captured, legacy)} == before
    assert ConversationMemorySnapshot.objects.get(conversation=captured).provenance == "captured"
    assert ConversationMemorySnapshot.objects.get(conversation=legacy).provenance == "legacy"


def test_backfill_in_batches_covers_every_legacy_thread():
    memory_add(text="Fact")
    threads = [legacy_thread() for _ in range(5)]
    call_command("backfill_memory_snapshots", batch_size=2)
    assert ConversationMemorySnapshot.objects.filter(provenance="legacy").count() == 5
    assert all(len(member_ids(t)) == 1 for t in threads)
