"""The seed's memory-snapshot rules ("Conversation-Scoped Long-Term Memory",
"Memory Changes and Prompt Freshness"), one test per rule."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from continuity.rules.prompt_store import prompt_inputs_for
from elion.base.assistant_settings import assistant_settings_get
from memories.models import ConversationMemorySnapshot, Memory, SnapshotMembership
from memories.services import importing
from memories.services.memory_writes import memories_reorder, memory_delete, memory_edit, memory_edit_impact
from memories.services.snapshots import snapshot_refresh
from tests.memories.conftest import fresh_prompt, member_ids, memory_texts, stored_prompt
from transcript.models import Conversation, Message, Role

pytestmark = pytest.mark.django_db


def test_new_thread_captures_current_eligible_set_at_creation(make_memory, make_conversation):
    first, second = make_memory("First fact"), make_memory("Second fact")
    inactive = make_memory("Shelved fact", active=False)
    conversation = make_conversation()
    assert member_ids(conversation) == {first.pk, second.pk}
    assert inactive.pk not in member_ids(conversation)
    snapshot = ConversationMemorySnapshot.objects.get(conversation=conversation)
    assert snapshot.provenance == "captured" and snapshot.captured_at is not None and snapshot.refreshed_at is None


def test_memory_added_before_first_send_does_not_join_captured_snapshot(make_memory, make_conversation, send_and_capture):
    make_memory("Known at creation")
    conversation = make_conversation()
    make_memory("Added while the thread sat open")
    prompt = send_and_capture(conversation)
    assert memory_texts(prompt) == ["Known at creation"]


def test_new_memory_does_not_reach_existing_thread(make_memory, make_conversation, send_and_capture):
    make_memory("Old fact")
    conversation = make_conversation()
    before = send_and_capture(conversation)
    make_memory("Brand new fact")
    after = send_and_capture(conversation, "And again.")
    assert memory_texts(after) == ["Old fact"]
    assert after == before == stored_prompt(conversation)


def test_bulk_import_does_not_reach_existing_thread(make_memory, make_conversation, store_prompt):
    make_memory("Old fact")
    conversation = make_conversation()
    before = store_prompt(conversation)
    drafts = importing.memories_parse(text='["Imported one", "Imported two"]')
    importing.memories_import(drafts=drafts)
    assert stored_prompt(conversation) == before
    assert memory_texts(before) == ["Old fact"]
    assert len(member_ids(conversation)) == 1


def test_import_reaches_new_threads(make_conversation):
    importing.memories_import(drafts=importing.memories_parse(text="text,category\nImported fact,place\n"))
    conversation = make_conversation()
    assert memory_texts(fresh_prompt(conversation)) == ["Imported fact"]


def test_edit_reaches_only_threads_holding_the_memory(make_memory, make_conversation, store_prompt):
    shared = make_memory("Shared fact")
    old_thread = make_conversation()
    newer = make_memory("Newer fact")
    new_thread = make_conversation()
    store_prompt(old_thread), store_prompt(new_thread)
    old_row = Message.objects.get(conversation=old_thread, role=Role.SYSTEM)

    memory_edit(memory_id=newer.pk, changes={"text": "Newer fact, corrected"})
    assert Message.objects.get(pk=old_row.pk).updated_at == old_row.updated_at  # not touched at all
    assert memory_texts(stored_prompt(old_thread)) == ["Shared fact"]
    assert memory_texts(stored_prompt(new_thread)) == ["Shared fact", "Newer fact, corrected"]

    memory_edit(memory_id=shared.pk, changes={"text": "Shared fact, corrected", "importance": 5})
    # The edit reaches the old thread without pulling the newer memory in.
    assert memory_texts(stored_prompt(old_thread)) == ["Shared fact, corrected"]
    assert "importance 5" in stored_prompt(old_thread)
    assert memory_texts(stored_prompt(new_thread)) == ["Shared fact, corrected", "Newer fact, corrected"]


def test_delete_purges_id_from_every_snapshot_and_stored_prompt(make_memory, make_conversation, store_prompt):
    doomed, kept = make_memory("Doomed fact"), make_memory("Kept fact")
    threads = [make_conversation() for _ in range(3)]
    for thread in threads[:2]:
        store_prompt(thread)  # the third has no stored prompt yet
    assert memory_delete(memory_id=doomed.pk) == 3
    assert not SnapshotMembership.objects.filter(memory_id=doomed.pk).exists()
    assert not Memory.objects.filter(pk=doomed.pk).exists()
    for thread in threads:
        assert member_ids(thread) == {kept.pk}
    for thread in threads[:2]:
        assert memory_texts(stored_prompt(thread)) == ["Kept fact"]
        assert "Doomed" not in stored_prompt(thread)
    assert memory_texts(store_prompt(threads[2])) == ["Kept fact"]


def test_deleted_memory_cannot_enter_future_snapshots(make_memory, make_conversation):
    doomed = make_memory("Doomed fact")
    old = make_conversation()
    memory_delete(memory_id=doomed.pk)
    assert member_ids(make_conversation()) == set()
    snapshot_refresh(old.pk)
    assert member_ids(old) == set()


def test_empty_snapshot_stays_empty(make_conversation, make_memory, store_prompt, client):
    conversation = make_conversation()  # no memories exist: an empty snapshot
    make_memory("Added later")
    assert member_ids(conversation) == set()
    prompt = store_prompt(conversation)
    assert "## Long-term memories" not in prompt
    # A full rebuild (a settings save rebuilds every prompt) still reads the empty snapshot.
    client.patch("/api/settings/", {"custom_instructions": "Be gentle."}, content_type="application/json")
    rebuilt = stored_prompt(conversation)
    assert "Be gentle." in rebuilt and "## Long-term memories" not in rebuilt


def test_thread_without_snapshot_record_never_loads_all_memories(make_memory):
    make_memory("A fact")
    legacy = Conversation.objects.create()  # predates snapshots: no record, no rows
    assert prompt_inputs_for(legacy, settings_row=assistant_settings_get()).memories == ()


def test_refresh_replaces_one_thread_snapshot(make_memory, make_conversation, store_prompt):
    first = make_memory("First fact")
    refreshed, untouched = make_conversation(), make_conversation()
    store_prompt(refreshed), store_prompt(untouched)
    captured_at = ConversationMemorySnapshot.objects.get(conversation=refreshed).captured_at
    second = make_memory("Second fact")

    snapshot_refresh(refreshed.pk)
    assert member_ids(refreshed) == {first.pk, second.pk}
    assert memory_texts(stored_prompt(refreshed)) == ["First fact", "Second fact"]
    assert member_ids(untouched) == {first.pk}
    assert memory_texts(stored_prompt(untouched)) == ["First fact"]
    record = ConversationMemorySnapshot.objects.get(conversation=refreshed)
    assert record.provenance == "refreshed" and record.refreshed_at is not None
    assert record.captured_at == captured_at  # the intentional action is recorded, the capture kept
    assert ConversationMemorySnapshot.objects.get(conversation=untouched).provenance == "captured"


def test_refresh_of_legacy_thread_does_not_invent_capture_time(make_memory):
    make_memory("A fact")
    legacy = Conversation.objects.create()
    snapshot_refresh(legacy.pk)
    record = ConversationMemorySnapshot.objects.get(conversation=legacy)
    assert record.provenance == "refreshed" and record.captured_at is None and record.refreshed_at is not None


def test_refresh_memory_api_answers_the_conversation(make_memory, make_conversation, client):
    conversation = make_conversation()
    make_memory("Later fact")
    response = client.post(f"/api/conversations/{conversation.pk}/refresh-memory/", {}, content_type="application/json")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == str(conversation.pk) and body["memory_snapshot"]["provenance"] == "refreshed"
    assert len(member_ids(conversation)) == 1
    missing = client.post("/api/conversations/00000000-0000-0000-0000-000000000000/refresh-memory/")
    assert missing.status_code == 404 and missing.json()["error"] == "conversation_not_found"


def test_snapshot_timing_exposes_no_ids_or_text(make_memory, make_conversation, client):
    memory = make_memory("Secret memory text 7f3a")
    conversation = make_conversation()
    body = client.get(f"/api/conversations/{conversation.pk}/").json()
    timing = body["memory_snapshot"]
    assert set(timing) == {"captured_at", "refreshed_at", "provenance"}
    assert timing["provenance"] == "captured" and timing["refreshed_at"] is None
    rendered = str(timing)
    assert "Secret memory" not in rendered and f"'{memory.pk}'" not in rendered
    assert all(value is None or isinstance(value, str) for value in timing.values())
    legacy = Conversation.objects.create()
    assert client.get(f"/api/conversations/{legacy.pk}/").json()["memory_snapshot"] == {
        "captured_at": None, "refreshed_at": None, "provenance": "legacy",
    }


def test_reorder_changes_global_order_in_threads_holding_the_memories(make_memory, make_conversation, store_prompt):
    a, b, c = make_memory("Alpha"), make_memory("Beta"), make_memory("Gamma")
    conversation = make_conversation()
    store_prompt(conversation)
    memories_reorder(ids=[c.pk, a.pk, b.pk])
    assert memory_texts(stored_prompt(conversation)) == ["Gamma", "Alpha", "Beta"]
    assert stored_prompt(conversation) == fresh_prompt(conversation)


def test_deactivating_a_memory_acts_like_an_edit(make_memory, make_conversation, store_prompt):
    memory = make_memory("Paused fact")
    holder = make_conversation()
    store_prompt(holder)
    memory_edit(memory_id=memory.pk, changes={"active": False})
    assert memory_texts(stored_prompt(holder)) == []
    assert member_ids(holder) == {memory.pk}  # membership kept
    assert member_ids(make_conversation()) == set()  # not eligible for new threads
    later = make_memory("Later fact")
    memory_edit(memory_id=memory.pk, changes={"active": True})
    assert memory_texts(stored_prompt(holder)) == ["Paused fact"]
    assert later.pk not in member_ids(holder)


def test_memory_edit_impact_counts_threads_from_snapshots(make_memory, make_conversation, client):
    memory = make_memory("Counted fact")
    for _ in range(3):
        make_conversation()
    make_memory("Other fact")
    assert memory_edit_impact(memory.pk) == 3
    assert client.get(f"/api/memories/{memory.pk}/impact/").json() == {"threads": 3}


def test_stored_prompt_is_reused_not_rebuilt_on_later_sends(make_memory, make_conversation, send_and_capture):
    make_memory("A fact")
    conversation = make_conversation()
    send_and_capture(conversation)
    row = Message.objects.get(conversation=conversation, role=Role.SYSTEM)
    send_and_capture(conversation, "Second turn.")
    again = Message.objects.get(conversation=conversation, role=Role.SYSTEM)
    assert (again.pk, again.updated_at, again.content) == (row.pk, row.updated_at, row.content)
    assert Message.objects.filter(conversation=conversation, role=Role.SYSTEM).count() == 1


def test_stale_policy_prompt_is_rebuilt_before_reaching_the_model(make_memory, make_conversation, send_and_capture):
    make_memory("A fact")
    conversation = make_conversation()
    send_and_capture(conversation)
    Message.objects.filter(conversation=conversation, role=Role.SYSTEM).update(
        content="=== AUTO-RECALLED CONTEXT ===\nRecent activity from other conversations: None",
        metadata={"policy_markers": {"prompt_policy": "static-prompt/old", "recall_policy": "old"}},
    )
    received = send_and_capture(conversation, "Still there?")
    assert received == fresh_prompt(conversation)
    assert "AUTO-RECALLED" not in received and "Recent activity" not in received


def test_memory_changes_leave_visible_history_untouched(make_memory, make_conversation, send_and_capture, client):
    memory = make_memory("A fact")
    conversation = make_conversation()
    send_and_capture(conversation, "My words stay.")
    before = client.get(f"/api/conversations/{conversation.pk}/messages/").json()["results"]
    memory_edit(memory_id=memory.pk, changes={"text": "An edited fact"})
    snapshot_refresh(conversation.pk)
    memory_delete(memory_id=memory.pk)
    after = client.get(f"/api/conversations/{conversation.pk}/messages/").json()["results"]
    assert after == before


def test_branch_destination_captures_current_set_without_deleted_ids(make_memory, make_conversation, make_turns):
    from continuity.services.branching import conversation_branch

    first = make_memory("First fact")
    source = make_conversation()
    make_turns(source, ("user", "Hi"), ("assistant", "Hello"))
    second = make_memory("Second fact")
    memory_delete(memory_id=first.pk)
    destination, created = conversation_branch(conversation_id=source.pk, idempotency_key="k1")
    assert created and member_ids(destination) == {second.pk}
    assert ConversationMemorySnapshot.objects.get(conversation=destination).provenance == "captured"


def test_memory_edit_fanout_query_count_does_not_grow_with_threads(make_memory, make_conversation, store_prompt):
    memory = make_memory("Fan-out fact")

    def edit_with_threads(count: int, text: str) -> int:
        while Conversation.objects.count() < count:
            store_prompt(make_conversation())
        with CaptureQueriesContext(connection) as queries:
            memory_edit(memory_id=memory.pk, changes={"text": text})
        assert all(memory_texts(stored_prompt(c)) == [text] for c in Conversation.objects.all())
        return len(queries)

    # The same fixed number of queries for 5 and 50 threads (bench/memory_fanout.py checks 5,000).
    assert edit_with_threads(5, "Edited for five") == edit_with_threads(50, "Edited for fifty")
