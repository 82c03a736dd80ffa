"""Seed 004 native deletion continuity: deleting a trashed conversation forever is
an intent first (unselectable at once), then named steps that remove its rows,
then a count-only receipt; a crash at any step is finished by the job, claims
never double-process, and a receipt never reaches a newer generation."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from conversations.services.deletion import STEP_NAMES, deletion_run, deletions_finish
from conversations.services.visibility.transitions import conversation_trash
from memories.models import ConversationMemorySnapshot
from tests.support.migration_state import apps_at
from transcript.deletion import conversation_deletion_intent
from transcript.models import Conversation, ConversationDeletion, Message, MessageSearchEntry

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "the lighthouse code is 4711"


@pytest.fixture
def trashed(make_conversation, make_turns):
    def make(title="to delete"):
        conversation = make_conversation(title=title)
        make_turns(conversation, ("user", SECRET), ("assistant", "noted"), ("user", "more"), ("assistant", "ok"))
        conversation_trash(conversation_id=conversation.id)
        return conversation

    return make


def rows_left(conversation_id) -> dict[str, int]:
    return {
        "messages": Message.objects.filter(conversation_id=conversation_id).count(),
        "search_entries": MessageSearchEntry.objects.filter(conversation_id=conversation_id).count(),
        "snapshots": ConversationMemorySnapshot.objects.filter(conversation_id=conversation_id).count(),
        "conversations": Conversation.all_objects.filter(pk=conversation_id).count(),
    }


def test_delete_forever_needs_the_conversation_in_the_trash(make_conversation):
    conversation = make_conversation()
    response = Client().delete(f"/api/conversations/{conversation.id}/")
    assert response.status_code == 409 and response.json()["error"] == "conversation_not_in_trash"
    assert Conversation.objects.filter(pk=conversation.pk).exists()


def test_delete_forever_removes_every_row_and_publishes_a_count_only_receipt(trashed):
    conversation = trashed()
    assert rows_left(conversation.id)["search_entries"] == 4
    client = Client()
    response = client.delete(f"/api/conversations/{conversation.id}/")
    assert response.status_code == 200
    receipt = response.json()
    assert receipt["state"] == "complete" and receipt["conversation_id"] == str(conversation.id)
    assert receipt["counts"]["messages"] == 4
    assert receipt["counts"]["search_entries"] == 4 and receipt["counts"]["conversations"] == 1
    assert receipt["counts"]["memory_snapshots"] == 1
    assert rows_left(conversation.id) == {"messages": 0, "search_entries": 0, "snapshots": 0, "conversations": 0}
    stored = client.get(f"/api/deletions/{receipt['id']}/").json()
    assert stored == receipt
    assert SECRET not in json.dumps(stored) and "to delete" not in json.dumps(stored)  # counts only, no text
    assert client.get(f"/api/conversations/{conversation.id}/").status_code == 404


def test_a_pending_deletion_is_unselectable_anywhere(trashed):
    conversation = trashed()
    deletion = conversation_deletion_intent(conversation_id=conversation.id)
    assert deletion.state == "pending" and Message.objects.filter(conversation_id=conversation.id).exists()
    client = Client()
    assert client.get(f"/api/conversations/{conversation.id}/").status_code == 404
    assert client.get(f"/api/conversations/{conversation.id}/messages/").status_code == 404
    listed = client.get("/api/conversations/?trashed=all").json()["results"]
    assert str(conversation.id) not in {c["id"] for c in listed}
    assert str(conversation.id) not in client.get("/trash/").content.decode()
    assert client.get(f"/c/{conversation.id}/").status_code == 404
    assert client.delete(f"/api/conversations/{conversation.id}/").status_code == 404  # a second intent finds nothing
    search = client.get("/api/search/", {"q": "lighthouse", "include_shielded": "true"}).json()["results"]
    assert search == []


@pytest.mark.parametrize("crash_after", STEP_NAMES)
def test_a_crash_after_any_step_is_finished_by_the_job_on_the_next_start(trashed, crash_after):
    conversation = trashed()
    deletion = conversation_deletion_intent(conversation_id=conversation.id)
    assert deletion_run(deletion.pk, stop_after=crash_after) is False
    deletion.refresh_from_db()
    assert deletion.state == "pending"
    # The dead process's claim still holds: nobody else runs it yet.
    assert deletions_finish() == 0
    assert deletions_finish(now=timezone.now() + timedelta(seconds=31)) == 1
    deletion.refresh_from_db()
    assert deletion.state == "complete" and deletion.next_step == ""
    assert deletion.counts["messages"] == 4 and deletion.counts["conversations"] == 1
    assert rows_left(conversation.id) == {"messages": 0, "search_entries": 0, "snapshots": 0, "conversations": 0}


def test_an_old_receipt_never_targets_a_recreated_generation(trashed, make_turns):
    conversation = trashed()
    deletion = conversation_deletion_intent(conversation_id=conversation.id)
    assert deletion_run(deletion.pk) is True
    # A record with the same id appears again (say, restored from a backup) ...
    recreated = Conversation.all_objects.create(id=conversation.id, title="recreated")
    make_turns(recreated, ("user", "new life"))
    # ... and a stale job replays the old deletion from its first step.
    ConversationDeletion.objects.filter(pk=deletion.pk).update(state="pending", next_step=STEP_NAMES[0])
    assert deletions_finish() == 1
    assert Conversation.objects.filter(pk=conversation.id).exists()
    assert Message.objects.filter(conversation_id=conversation.id).count() == 1


def test_two_clusters_never_double_process_a_deletion(trashed):
    conversations = [trashed(title=f"t{i}") for i in range(4)]
    for conversation in conversations:
        conversation_deletion_intent(conversation_id=conversation.id)
    results: list[int] = []
    barrier = threading.Barrier(2)

    def cluster():
        try:
            barrier.wait()
            results.append(deletions_finish())
        finally:
            connection.close()

    threads = [threading.Thread(target=cluster) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(results) == 4  # each deletion completed by exactly one cluster
    for deletion in ConversationDeletion.objects.all():
        assert deletion.state == "complete"
        assert deletion.counts["messages"] == 4 and deletion.counts["conversations"] == 1  # no step ran twice


def test_trash_page_deletes_forever_after_confirmation(trashed):
    conversation = trashed()
    client = Client()
    page = client.get("/trash/").content.decode()
    assert "data-delete-forever" in page and "Delete forever" in page and "cannot be restored" in page
    response = client.post(f"/c/{conversation.id}/delete-forever/", follow=True)
    assert "Deleted forever" in response.content.decode()
    assert rows_left(conversation.id)["conversations"] == 0


def test_queue_schedule_finishes_pending_deletions(trashed):
    import importlib

    from django_q.models import Schedule

    from conversations.tasks import finish_pending_deletions

    migration = importlib.import_module("conversations.migrations.0006_conversation_permanent_deletion")
    migration.add_schedule(apps_at("conversations", "0006_conversation_permanent_deletion"), None)
    migration.add_schedule(apps_at("conversations", "0006_conversation_permanent_deletion"), None)
    schedule = Schedule.objects.get(name="finish pending conversation deletions")
    assert schedule.func == "conversations.tasks.finish_pending_deletions" and schedule.minutes == 1
    conversation = trashed()
    conversation_deletion_intent(conversation_id=conversation.id)
    assert finish_pending_deletions() == 1
    assert rows_left(conversation.id)["conversations"] == 0
