"""Automatic New Chat continuity (seed "Layer 3", "Automatic New Chat continuity")."""

from __future__ import annotations

import pytest
from django.test import Client

from continuity.models import ThreadHandoff
from continuity.rules import handoff_store
from conversations.services.threads.thread_writes import conversation_create, conversation_rewind
from transcript.models import Conversation, Folder, Message

pytestmark = pytest.mark.django_db


def create_via_api(persona: str = "elion") -> dict:
    response = Client().post("/api/conversations/", {"persona": persona}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()


def test_new_chat_captures_final_eight_of_most_recent_eligible_conversation(thread, make_turns):
    older = thread(*[("user" if i % 2 == 0 else "assistant", f"older {i}") for i in range(4)])
    newer = thread(*[("user" if i % 2 == 0 else "assistant", f"newer {i}") for i in range(12)])
    body = create_via_api()
    row = ThreadHandoff.objects.get(destination_id=body["id"])
    assert row.source == newer
    assert row.handoff.startswith("AUMA said:\nnewer 4\n") and row.handoff.endswith("newer 11")
    assert "older" not in row.handoff
    ids = [str(m.id) for m in Message.objects.filter(conversation=newer).order_by("seq")][-8:]
    assert body["handoff"] == {"source_conversation_id": str(newer.id), "source_message_ids": ids}
    # Renewed speech in the older thread makes it the most recent.
    make_turns(older, ("user", "older is back"), ("assistant", "welcome back"))
    assert ThreadHandoff.objects.get(destination_id=create_via_api()["id"]).source == older


def test_new_chat_without_any_prior_thread_has_no_handoff():
    body = create_via_api()
    assert body["handoff"] is None
    assert not ThreadHandoff.objects.exists()


def test_clipboard_never_uses_automatic_prior_thread_selection(thread):
    thread(("user", "elion talk"), ("assistant", "elion reply"))
    clipboard_source = thread(("user", "clipboard talk"), ("assistant", "clipboard reply"), persona="clipboard")
    body = create_via_api("clipboard")
    assert body["handoff"] is None
    assert not ThreadHandoff.objects.filter(destination_id=body["id"]).exists()
    # And an Elion New Chat never takes a Clipboard thread as its prior thread.
    elion_row = ThreadHandoff.objects.get(destination_id=create_via_api("elion")["id"])
    assert elion_row.source != clipboard_source and "clipboard" not in elion_row.handoff


@pytest.mark.parametrize("change", ["hidden_folder", "trashed", "shielded"])
def test_hidden_trashed_or_shielded_conversation_is_never_picked(thread, change):
    eligible = thread(("user", "eligible words"), ("assistant", "eligible reply"))
    quarantined = thread(("user", "quarantined words"), ("assistant", "quarantined reply"))
    if change == "hidden_folder":
        quarantined.folder = Folder.objects.create(name="Hidden", hidden=True)
    else:
        setattr(quarantined, change, True)
    quarantined.save()
    row = ThreadHandoff.objects.get(destination_id=create_via_api()["id"])
    assert row.source == eligible and "quarantined" not in row.handoff


def test_conversation_in_a_visible_folder_is_eligible(thread):
    source = thread(("user", "filed words"), ("assistant", "filed reply"))
    source.folder = Folder.objects.create(name="Open", hidden=False)
    source.save()
    assert ThreadHandoff.objects.get(destination_id=create_via_api()["id"]).source == source


def test_conversation_without_eligible_speech_is_skipped(thread, add_message):
    eligible = thread(("user", "real exchange"), ("assistant", "real reply"))
    failed_only = thread()
    add_message(failed_only, "assistant", "a failed reply", status="failed")
    add_message(failed_only, "user", "   ")
    row = ThreadHandoff.objects.get(destination_id=create_via_api()["id"])
    assert row.source == eligible


def test_rewound_away_branch_never_leaks_into_a_handoff(thread, make_turns):
    source = thread(("user", "kept question"), ("assistant", "kept answer"))
    make_turns(source, ("user", "abandoned question"), ("assistant", "abandoned answer"))
    conversation_rewind(
        conversation_id=source.id, message_id=Message.objects.get(conversation=source, content="kept answer").id
    )
    row = ThreadHandoff.objects.get(destination_id=create_via_api()["id"])
    assert row.source == source
    assert "kept answer" in row.handoff and "abandoned" not in row.handoff


def test_conversation_only_speaking_on_a_rewound_away_branch_is_skipped(thread, make_turns):
    eligible = thread(("user", "eligible words"), ("assistant", "eligible reply"))
    rewound = thread()
    first, _ = make_turns(rewound, ("user", "gone"), ("assistant", "gone too"))
    rewound.head = None  # rewound to before its first turn: nothing on the live branch
    rewound.save()
    assert ThreadHandoff.objects.get(destination_id=create_via_api()["id"]).source == eligible
    assert first.id


def test_capture_failure_leaves_no_conversation(thread, monkeypatch):
    thread(("user", "q"), ("assistant", "r"))

    def broken(**kwargs):
        raise RuntimeError("capture failed")

    monkeypatch.setattr(handoff_store, "handoff_row_create", broken)
    before = Conversation.objects.count()
    with pytest.raises(RuntimeError):
        conversation_create(persona="elion")
    assert Conversation.objects.count() == before
    assert not ThreadHandoff.objects.exists()


def test_capture_uses_database_reads_only(thread, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from transcript.provider import gateway as provider_gateway

    thread(("user", "q"), ("assistant", "r"))

    def no_model(*args, **kwargs):
        raise AssertionError("no model writes or reads the handoff")

    monkeypatch.setattr(provider_gateway, "stream_reply", no_model)
    with CaptureQueriesContext(connection) as queries:
        capture = handoff_store.new_chat_handoff_capture(persona="elion", origin="new_chat")
    assert capture is not None and capture.handoff.exchange.endswith("r")
    assert queries.captured_queries
    # Reads only: plain SELECTs, and the recursive walk of the source's newest messages (WITH … SELECT).
    for query in queries.captured_queries:
        sql = query["sql"].lstrip().upper()
        assert sql.startswith(("SELECT", "WITH RECURSIVE")), sql
        assert not any(f" {verb} " in f" {sql} " for verb in ("INSERT", "UPDATE", "DELETE")), sql


def test_branch_and_fork_origins_do_not_run_automatic_selection(thread):
    thread(("user", "q"), ("assistant", "r"))
    for origin in ("branch", "fork"):
        conversation = conversation_create(persona="elion", origin=origin)
        assert not ThreadHandoff.objects.filter(destination=conversation).exists()


@pytest.mark.django_db(transaction=True)
def test_new_chat_first_request_includes_handoff(thread, scripted_provider):
    thread(("user", 'Remember the "lighthouse"?'), ("assistant", "Always.\nEvery night."), title="Lighthouse talk")
    conversation_id = create_via_api()["id"]
    # The very first send, immediately after creation.
    response = Client().post(
        f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": "Good morning"},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    first = scripted_provider.requests[0].body
    assert [item["role"] for item in first["input"]] == ["system", "user"]
    system = first["input"][0]["content"]
    assert "## Continuity from a prior thread" in system
    assert 'AUMA said: "Remember the \\"lighthouse\\"?"' in system
    assert 'Elion Voicefire said: "Always.\\nEvery night."' in system
    assert "Lighthouse talk" not in system
    assert first["input"][1]["content"] == "Good morning"


@pytest.mark.django_db(transaction=True)
def test_clipboard_first_request_has_no_handoff(thread, scripted_provider):
    thread(("user", "elion words"), ("assistant", "elion reply"))
    thread(("user", "clip words"), ("assistant", "clip reply"), persona="clipboard")
    conversation_id = create_via_api("clipboard")["id"]
    response = Client().post(
        f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": "hi"},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    system = scripted_provider.requests[0].body["input"][0]["content"]
    assert "Continuity from a prior thread" not in system and "VERBATIM_EXCHANGE_" not in system
