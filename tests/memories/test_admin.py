"""The Django admin writes through the services, so the refresh rules hold there too."""

from __future__ import annotations

import pytest

from memories.models import ConversationMemorySnapshot, Memory
from memories.services.memory_writes import memory_add
from tests.memories.conftest import memory_texts, stored_prompt

pytestmark = pytest.mark.django_db


def test_admin_lists_memories_and_snapshots(client, make_conversation):
    memory_add(text="Listed in admin")
    make_conversation()
    assert client.get("/admin/memories/memory/").status_code == 200
    assert "Listed in admin" in client.get("/admin/memories/memory/").content.decode()
    assert client.get("/admin/memories/conversationmemorysnapshot/").status_code == 200


def test_admin_add_edit_delete_go_through_services(client, make_conversation, store_prompt):
    response = client.post(
        "/admin/memories/memory/add/", {"text": "Added in admin", "category": "general", "importance": "3", "active": "on"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    memory = Memory.objects.get()
    assert memory.position == 1
    conversation = make_conversation()
    store_prompt(conversation)

    client.post(
        f"/admin/memories/memory/{memory.pk}/change/",
        {"text": "Edited in admin", "category": "general", "importance": "4", "active": "on"},
    )
    assert memory_texts(stored_prompt(conversation)) == ["Edited in admin"]

    bad = client.post(f"/admin/memories/memory/{memory.pk}/change/", {"text": "x", "category": "general", "importance": "9"})
    assert bad.status_code == 200 and Memory.objects.get().importance == 4

    client.post(f"/admin/memories/memory/{memory.pk}/delete/", {"post": "yes"})
    assert not Memory.objects.exists()
    assert memory_texts(stored_prompt(conversation)) == []


def test_admin_refresh_action(client, make_conversation):
    conversation = make_conversation()
    memory_add(text="Joins on refresh")
    client.post(
        "/admin/memories/conversationmemorysnapshot/",
        {"action": "refresh_memory", "_selected_action": [str(conversation.pk)]},
    )
    assert ConversationMemorySnapshot.objects.get(conversation=conversation).provenance == "refreshed"
