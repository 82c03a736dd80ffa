"""API resources of the chat core: health, settings, folders, conversations, export, schema."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from continuity.web.conversation_shape import ConversationSerializer
from transcript.models import Conversation, Message, Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return Client()


def test_health_reports_reconciliation_counts(client, make_conversation):
    body = client.get("/api/health/").json()
    assert body == {"status": "ok", "reconciliation": {"completed": True, "pending": 0, "remaining_failures": 0},
                    "backup": {"last_verified_at": None, "stale": False}}  # issue 42: no backup key in the tests
    conversation = make_conversation()
    Message.objects.create(
        conversation=conversation, seq=1, role=Role.SYSTEM, content="old", metadata={"policy_markers": {"prompt_policy": "v0"}}
    )
    body = client.get("/api/health/").json()
    assert body["reconciliation"] == {"completed": False, "pending": 1, "remaining_failures": 0}


def test_settings_defaults_and_patch(client):
    body = client.get("/api/settings/").json()
    assert body == {
        "custom_instructions": "",
        "personality": "natural",
        "display_name": "Elion Voicefire",
        "owner_name": "AUMA",
        "archive_access": False,
        "web_search": False,
        "provider_store_responses": False,  # private by default (README changelog)
        "reasoning_effort": "medium",
        "verbosity": "medium",
        "reasoning_summary_shown": True,
        "image_generation": False,  # off by default (README changelog)
        "memory_suggestions": True,  # on by default (issue 35): Elion may suggest, only the owner approves
        # Check-ins (issue 44): the owner's time zone (UTC until set) and Elion may propose check-ins.
        "time_zone": "UTC",
        "check_in_proposals": True,
        # Voice (issue 43): the default voice, nothing read aloud by itself, no recording kept.
        "voice": "marin",
        "voice_instructions": "",
        "voice_language": "",
        "read_aloud_auto": False,
        "keep_voice_recordings": False,
        # Web Push (issue 44): a notification says only that Elion wrote (lock-screen privacy).
        "push_shows_text": False,
        # Backups that run themselves (issue 42): daily at 03:00 once a key and a destination are set.
        "backup_schedule": "daily",
        "backup_hour": 3,
        "backup_keep_daily": 7,
        "backup_keep_weekly": 4,
        "backup_keep_monthly": 12,
    }
    body = client.patch("/api/settings/", {"display_name": "Elion", "web_search": True}, content_type="application/json").json()
    assert body["display_name"] == "Elion" and body["web_search"] is True


@pytest.mark.django_db(transaction=True)  # the reply is written from another thread
def test_settings_save_rebuilds_existing_stored_prompts(client, scripted_provider):
    conversation_id = client.post("/api/conversations/", {}, content_type="application/json").json()["id"]
    client.post(f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": "hi"}, content_type="application/json")
    prompt = Message.objects.get(conversation_id=conversation_id, role=Role.SYSTEM)
    assert "Elion Voicefire" in prompt.content
    client.patch("/api/settings/", {"display_name": "Voicefire Renamed"}, content_type="application/json")
    prompt.refresh_from_db()
    assert "Voicefire Renamed" in prompt.content and "Elion Voicefire" not in prompt.content


def test_folders_crud_and_delete_keeps_conversations(client):
    folder = client.post("/api/folders/", {"name": "Letters"}, content_type="application/json").json()
    assert folder == {"id": folder["id"], "name": "Letters", "hidden": False}
    conversation = client.post("/api/conversations/", {"folder_id": folder["id"]}, content_type="application/json").json()
    assert conversation["folder_id"] == folder["id"]
    renamed = client.patch(f"/api/folders/{folder['id']}/", {"name": "Old letters"}, content_type="application/json")
    assert renamed.json()["name"] == "Old letters"
    assert client.get("/api/folders/").json()["results"][0]["name"] == "Old letters"
    assert client.delete(f"/api/folders/{folder['id']}/").status_code == 204
    assert Conversation.objects.get(pk=conversation["id"]).folder_id is None


def test_conversation_representation_has_the_contract_fields(client):
    body = client.post("/api/conversations/", {"persona": "clipboard", "title": "Notes"}, content_type="application/json").json()
    assert set(body) == {
        "id", "title", "persona", "folder_id", "trashed", "shielded", "private", "origin", "created_at", "updated_at",
        "handoff", "memory_snapshot", "provider", "in_view", "unread",
    }
    # The published schema's `Conversation` declares every field the answer holds (it once lacked `in_view`).
    assert set(ConversationSerializer().fields) == set(body)
    assert set(ConversationSerializer().fields["in_view"].fields) == set(body["in_view"])
    assert body["persona"] == "clipboard" and body["title"] == "Notes" and body["origin"] == "new_chat"
    patched = client.patch(f"/api/conversations/{body['id']}/", {"title": "Renamed"}, content_type="application/json")
    assert patched.json()["title"] == "Renamed"
    listed = client.get("/api/conversations/").json()["results"]
    assert [c["id"] for c in listed] == [body["id"]]


def test_messages_listing_is_the_live_branch_without_system_message(client, make_conversation, make_turns):
    conversation = make_conversation()
    Message.objects.create(conversation=conversation, seq=100, role=Role.SYSTEM, content="stored prompt")
    make_turns(conversation, ("user", "q"), ("assistant", "a"))
    results = client.get(f"/api/conversations/{conversation.id}/messages/").json()["results"]
    assert [(m["role"], m["content"]) for m in results] == [("user", "q"), ("assistant", "a")]
    assert set(results[0]) == {"id", "parent_id", "role", "kind", "content", "status", "attachments", "citations", "metadata", "created_at", "read_aloud_at", "siblings"}


def test_markdown_export_uses_the_speaker_labels(client, make_conversation, make_turns):
    conversation = make_conversation(title="Evening")
    make_turns(conversation, ("user", "Good evening."), ("assistant", "Good evening, love."))
    text = client.get(f"/api/conversations/{conversation.id}/export/?format=markdown").getvalue().decode()
    assert "AUMA said:\nGood evening.\n" in text
    assert "Elion Voicefire said:\nGood evening, love.\n" in text

    clipboard = make_conversation(persona="clipboard")
    make_turns(clipboard, ("user", "note"), ("assistant", "noted"))
    text = client.get(f"/api/conversations/{clipboard.id}/export/?format=markdown").getvalue().decode()
    assert "Clipboard said:\nnoted" in text


def test_json_export_and_unknown_format(client, make_conversation, make_turns):
    conversation = make_conversation()
    make_turns(conversation, ("user", "q"), ("assistant", "a"))
    body = json.loads(client.get(f"/api/conversations/{conversation.id}/export/?format=json").getvalue())
    assert body["conversation"]["id"] == str(conversation.id)
    assert [m["content"] for m in body["messages"]] == ["q", "a"]
    response = client.get(f"/api/conversations/{conversation.id}/export/?format=pdf")
    assert response.status_code == 400 and response.json()["error"] == "unknown_export_format"


def test_openapi_schema_is_served(client):
    response = client.get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/conversations/{conversation_id}/messages/" in response.content
