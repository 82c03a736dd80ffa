"""The Memories page: the owner sees the refresh rule before acting."""

from __future__ import annotations

import pytest

from continuity.rules.refresh_triggers import holders_of
from memories.models import Memory, SnapshotMembership
from memories.services.memory_writes import memory_add

pytestmark = pytest.mark.django_db


def test_page_lists_memories_and_says_adds_reach_new_threads_only(client, make_conversation):
    memory = memory_add(text="Loves the sea", category="place", importance=4)
    make_conversation()
    page = client.get("/memories/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Loves the sea" in html and "Place" in html and "Importance 4" in html
    assert "Reaches new threads only" in html
    assert "Held by 1 thread" in html
    assert f'href="/memories/{memory.pk}/edit/"' in html


def test_add_from_page(client):
    response = client.post("/memories/", {"text": "From the page", "category": "event", "importance": "2"})
    assert response.status_code == 302
    memory = Memory.objects.get()
    assert (memory.text, memory.category, memory.importance) == ("From the page", "event", 2)
    assert "reaches new threads only" in client.get("/memories/").content.decode()


def test_bad_add_from_page_shows_the_error_and_saves_nothing(client):
    response = client.post("/memories/", {"text": "", "category": "general", "importance": "3"})
    assert response.status_code == 400 and "A memory needs some text." in response.content.decode()
    assert not Memory.objects.exists()


def test_edit_page_shows_thread_count_before_saving(client, make_conversation):
    memory = memory_add(text="Counted")
    make_conversation(), make_conversation()
    page = client.get(f"/memories/{memory.pk}/edit/").content.decode()
    assert "Saving this edit changes 2 existing threads." in page
    response = client.post(
        f"/memories/{memory.pk}/edit/", {"text": "Counted, edited", "category": "general", "importance": "3", "active": "on"}
    )
    assert response.status_code == 302
    assert Memory.objects.get(pk=memory.pk).text == "Counted, edited"


def test_delete_page_shows_thread_count_before_deleting(client, make_conversation):
    memory = memory_add(text="Doomed")
    make_conversation()
    page = client.get(f"/memories/{memory.pk}/delete/").content.decode()
    assert "Deleting this memory changes 1 existing thread: it is removed from that thread's snapshot" in page
    assert "It cannot enter new threads or branches afterwards." in page
    assert Memory.objects.filter(pk=memory.pk).exists()
    assert client.post(f"/memories/{memory.pk}/delete/").status_code == 302
    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert client.get(f"/memories/{memory.pk}/delete/").status_code == 404


def test_move_reorders(client):
    first, second = memory_add(text="First"), memory_add(text="Second")
    client.post(f"/memories/{second.pk}/move/", {"direction": "up"})
    assert list(Memory.objects.order_by("position").values_list("pk", flat=True)) == [second.pk, first.pk]


def test_import_preview_then_import(client):
    page = client.post("/memories/import/", {"action": "preview", "text": "text,category\nOne,place\nTwo,event\n"})
    html = page.content.decode()
    assert page.status_code == 200 and "Preview: 2 memories" in html and "new threads only" in html
    assert not Memory.objects.exists()
    response = client.post("/memories/import/", {"action": "import", "text": "text,category\nOne,place\nTwo,event\n"})
    assert response.status_code == 302
    assert list(Memory.objects.values_list("text", flat=True)) == ["One", "Two"]


def test_import_error_names_the_line_and_imports_nothing(client):
    page = client.post("/memories/import/", {"action": "import", "format": "csv", "text": "ok,general,3\nbad,general,9\n"})
    assert page.status_code == 400 and "Line 2" in page.content.decode()
    assert not Memory.objects.exists()


def test_refresh_memory_control_renders_and_no_js_path_refreshes(client, make_conversation):
    from django.template.loader import render_to_string

    conversation = make_conversation()
    html = render_to_string("chat/_refresh_memory.html", {"conversation": conversation, "csrf_token": "t"})
    assert f"/api/conversations/{conversation.pk}/refresh-memory/" in html and "Refresh memory" in html
    response = client.post(f"/memories/refresh/{conversation.pk}/")
    assert response.status_code == 302 and response.url == f"/c/{conversation.pk}/"
    assert conversation.memory_snapshot.__class__.objects.get(conversation=conversation).provenance == "refreshed"


def test_delete_page_says_exactly_which_threads_change_and_that_is_what_happens(client, make_conversation):
    before = make_conversation()
    memory = memory_add(text="Held by some")
    holders = [make_conversation(), make_conversation()]
    page = client.get(f"/memories/{memory.pk}/delete/").content.decode()
    assert "Deleting this memory changes 2 existing threads: it is removed from their snapshots" in page
    assert "every thread" not in page and "no existing threads" not in page
    assert set(holders_of(memory.pk)) == set(holders)
    client.post(f"/memories/{memory.pk}/delete/")
    assert not SnapshotMembership.objects.filter(conversation__in=[before, *holders]).exists()


def test_delete_page_of_a_memory_no_thread_holds_says_it_changes_none(client, make_conversation):
    make_conversation()
    memory = memory_add(text="Held by none")
    page = client.get(f"/memories/{memory.pk}/delete/").content.decode()
    assert "Deleting this memory changes no existing threads: none holds it in its snapshot." in page
    assert "removed from" not in page
