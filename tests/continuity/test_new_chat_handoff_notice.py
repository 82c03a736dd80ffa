"""A New Chat says what it carries (issue 34): the notice above its thread names the source and how many of its
messages the handoff holds; "Start without it" clears the handoff before the first send, through the continuity
service, so the first request carries none of it; the notice is no message (not in exports, not in the estimate);
a New Chat with no eligible source says nothing; `GET /c/new/` shows the choice."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from continuity.models import ThreadHandoff
from continuity.services.new_chat_handoff import new_chat_handoff_drop, new_chat_handoff_notice
from conversations.services.threads.thread_writes import conversation_create
from conversations.services.visibility.transitions import conversation_restore, conversation_trash
from elion.base.errors import Conflict
from tests.support.factories import sent_and_answered, thread
from transcript.models import Message

SOURCE_WORDS = "lighthouse-keeper-ledger"


def source_thread(turns: int = 10):
    return thread(*[("user" if i % 2 == 0 else "assistant", f"{SOURCE_WORDS} {i}") for i in range(turns)],
                  title="Harbour letters")


@pytest.mark.django_db
def test_a_new_chat_with_a_handoff_says_its_source_and_the_real_count():
    source = source_thread()
    chat = conversation_create()
    notice = new_chat_handoff_notice(chat)
    assert (notice.source_id, notice.source_title, notice.messages, notice.can_start_without) == (
        source.id, "Harbour letters", 8, True)
    page = Client().get(f"/c/{chat.id}/").content.decode()
    assert "Continues from “<span data-handoff-source-title>Harbour letters</span>” — the last " \
           "<span data-handoff-count>8</span> messages." in page
    assert f'href="/c/{source.id}/" data-open-source>Open source conversation</a>' in page
    assert "data-start-without>Start without it</button>" in page


@pytest.mark.django_db
def test_a_short_source_is_counted_as_it_is():
    source_thread(turns=3)
    assert new_chat_handoff_notice(conversation_create()).messages == 3


@pytest.mark.django_db
def test_a_new_chat_with_no_eligible_source_says_nothing():
    lonely = conversation_create()
    assert new_chat_handoff_notice(lonely) is None
    assert "data-handoff-notice" not in Client().get(f"/c/{lonely.id}/").content.decode()
    # A source that became shielded feeds nothing, so the notice goes too.
    source = source_thread()
    chat = conversation_create()
    conversation_trash(conversation_id=source.id)
    conversation_restore(conversation_id=source.id)
    assert new_chat_handoff_notice(chat) is None
    assert "data-handoff-notice" not in Client().get(f"/c/{chat.id}/").content.decode()


@pytest.mark.django_db
def test_branch_and_private_chats_show_no_new_chat_notice():
    source = source_thread()
    assert new_chat_handoff_notice(conversation_create(private=True)) is None
    branch_id = Client().post(f"/api/conversations/{source.id}/branch/", headers={"Idempotency-Key": "k"}).json()["id"]
    assert "data-handoff-notice" not in Client().get(f"/c/{branch_id}/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_start_without_it_leaves_the_first_request_free_of_the_handoff(scripted_provider):
    source_thread()
    carried, dropped = conversation_create(), conversation_create()
    response = Client().post(f"/c/{dropped.id}/handoff/drop/")
    assert response.status_code == 302 and response["Location"] == f"/c/{dropped.id}/"
    assert not ThreadHandoff.objects.filter(destination=dropped).exists()
    assert "data-handoff-notice" not in Client().get(f"/c/{dropped.id}/").content.decode()

    sent_and_answered(dropped, "Good morning")
    assert SOURCE_WORDS not in json.dumps(scripted_provider.last_request().body)
    # The same send in the chat that kept its handoff carries the source's words.
    sent_and_answered(carried, "Good morning")
    assert SOURCE_WORDS in json.dumps(scripted_provider.last_request().body)


@pytest.mark.django_db(transaction=True)
def test_start_without_it_is_refused_once_the_chat_has_begun(scripted_provider):
    source_thread()
    chat = conversation_create()
    sent_and_answered(chat, "Hello")
    with pytest.raises(Conflict) as refused:
        new_chat_handoff_drop(conversation_id=chat.id)
    assert refused.value.code == "new_chat_already_begun"
    assert ThreadHandoff.objects.filter(destination=chat).exists()
    page = Client().get(f"/c/{chat.id}/").content.decode()
    assert "data-handoff-notice" in page and "data-start-without" not in page
    response = Client().post(f"/c/{chat.id}/handoff/drop/", follow=True)
    assert "already part of its first request" in response.content.decode()


@pytest.mark.django_db
def test_start_without_it_refuses_a_branch_and_an_unknown_chat():
    source = source_thread()
    branch_id = Client().post(f"/api/conversations/{source.id}/branch/", headers={"Idempotency-Key": "k"}).json()["id"]
    with pytest.raises(Conflict):
        new_chat_handoff_drop(conversation_id=branch_id)
    assert Client().post("/c/not-a-uuid/handoff/drop/").status_code == 302
    assert Client().get("/c/not-a-uuid/handoff/drop/").status_code == 405


@pytest.mark.django_db
def test_the_notice_is_not_a_message():
    source_thread()
    chat = conversation_create()
    assert not Message.objects.filter(conversation=chat).exists()
    response = Client().get(f"/api/conversations/{chat.id}/export/?format=markdown")
    exported = b"".join(response.streaming_content).decode()
    assert "Continues from" not in exported and SOURCE_WORDS not in exported
    page = Client().get(f"/c/{chat.id}/").content.decode()
    assert "<span data-estimate>0</span>" in page


@pytest.mark.django_db
def test_get_new_chat_shows_the_choice():
    response = Client().get("/c/new/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Start a new chat" in page and "Start a private chat" in page
    assert Client().put("/c/new/").status_code == 405
