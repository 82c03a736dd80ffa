"""Seed 004: killing the process mid-reply loses no turn.

A real Daphne process serves the send while the scripted provider holds the
reply open; the process is SIGKILLed; a fresh process finds the user turn
stored and the assistant message `interrupted` with its partial text.
"""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from conversations.services.threads.thread_writes import conversation_create
from tests.support.crash_recovery import app_env
from tests.support.factories import wait_until
from tests.support.live_server import LiveApp
from tests.support.migration_state import apps_at
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message, MessageStatus, Role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_sigkill_mid_reply_keeps_user_turn_and_partial_text_as_interrupted(scripted_server):
    scripted_server.clear()
    gate = threading.Event()
    scripted_server.script(ScriptedReply(chunks=["Partial words ", "never finished"], hold=gate))
    conversation = conversation_create()
    app = LiveApp(app_env(scripted_server)).start()
    try:
        # Send and stop reading once the first delta arrived; the server then dies.
        with httpx.Client(timeout=10) as client, client.stream(
            "POST",
            f"{app.base_url}/api/conversations/{conversation.id}/messages/",
            json={"content": "tell me a long story"},
        ) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("data: ") and "text" in json.loads(line[6:]):
                    break
            assistant = wait_until(
                lambda: Message.objects.filter(
                    conversation=conversation, role=Role.ASSISTANT, content__startswith="Partial"
                ).first()
            )
            assert assistant.status == MessageStatus.STREAMING
            app.kill()
    finally:
        gate.set()
        app.stop()

    restarted = LiveApp(app_env(scripted_server)).start()
    try:
        url = f"{restarted.base_url}/api/conversations/{conversation.id}/messages/"

        def listing_once_the_lease_ran_out() -> dict | None:
            body = httpx.get(url, timeout=10).json()
            return body if body["results"][-1]["status"] != "streaming" else None

        # No fixed sleep: the listing is read until the dead process's lease (1 s) has run out.
        listing = wait_until(listing_once_the_lease_ran_out, timeout=20)
    finally:
        restarted.stop()
    user, reply = listing["results"]
    assert (user["role"], user["content"], user["status"]) == ("user", "tell me a long story", "complete")
    assert reply["status"] == "interrupted"
    assert reply["content"] == "Partial words "


def test_interrupted_reply_can_be_retried_after_a_crash(scripted_provider, make_conversation):
    conversation = make_conversation()
    from django.test import Client

    client = Client()
    scripted_provider.script(ScriptedReply(text="first"), ScriptedReply(text="second, retried"))
    body = client.post(
        f"/api/conversations/{conversation.id}/messages/?stream=false", {"content": "hi"}, content_type="application/json"
    ).json()
    # As if the process had died mid-stream and its lease had run out.
    Message.objects.filter(pk=body["assistant_message"]["id"]).update(status=MessageStatus.INTERRUPTED)
    retried = client.post(
        f"/api/conversations/{conversation.id}/messages/{body['assistant_message']['id']}/retry/?stream=false"
    ).json()
    assert retried["assistant_message"]["content"] == "second, retried"
    assert retried["assistant_message"]["parent_id"] == body["user_message"]["id"]


def test_a_reply_with_a_live_lease_is_not_marked_interrupted(make_conversation, make_turns, settings):
    from transcript.leases import lease_deadline, streams_interrupt_expired

    conversation = make_conversation()
    _, reply = make_turns(conversation, ("user", "q"), ("assistant", "streaming..."))
    Message.objects.filter(pk=reply.pk).update(status=MessageStatus.STREAMING, lease_expires_at=lease_deadline())
    assert streams_interrupt_expired(conversation) == 0
    Message.objects.filter(pk=reply.pk).update(lease_expires_at="2000-01-01T00:00:00Z")
    assert streams_interrupt_expired(conversation) == 1
    reply.refresh_from_db()
    assert reply.status == MessageStatus.INTERRUPTED and reply.content == "streaming..."


def test_client_that_drops_the_connection_still_gets_its_reply_stored(scripted_server):
    """Over real HTTP: the browser goes away mid-stream, the server finishes and stores the reply."""
    scripted_server.clear()
    scripted_server.script(ScriptedReply(chunks=["one ", "two ", "three"], delay_between_chunks=0.2))
    conversation = conversation_create()
    with LiveApp(app_env(scripted_server)) as app:
        with httpx.Client(timeout=10) as client, client.stream(
            "POST", f"{app.base_url}/api/conversations/{conversation.id}/messages/", json={"content": "hello"}
        ) as response:
            for line in response.iter_lines():
                if line.startswith("event: delta"):
                    break  # leave mid-stream; closing the response drops the connection
        reply = wait_until(
            lambda: Message.objects.filter(
                conversation=conversation, role=Role.ASSISTANT, status=MessageStatus.COMPLETE
            ).first()
        )
    assert reply.content == "one two three"


def test_queue_schedule_sweeps_stale_streams(make_conversation, make_turns):
    """A django-q2 schedule (created by a migration) runs the sweep every minute."""
    import importlib

    from django_q.models import Schedule

    from conversations.tasks import interrupt_stale_streams

    # Transactional tests flush migration-created rows, so apply the data
    # migration's function again (it is idempotent) and check what it made.
    migration = importlib.import_module("conversations.migrations.0002_schedule_stale_stream_sweep")
    migration.add_schedule(apps_at("conversations", "0002_schedule_stale_stream_sweep"), None)
    migration.add_schedule(apps_at("conversations", "0002_schedule_stale_stream_sweep"), None)
    schedule = Schedule.objects.get(name="interrupt stale streams")
    assert schedule.func == "conversations.tasks.interrupt_stale_streams" and schedule.minutes == 1
    conversation = make_conversation()
    _, reply = make_turns(conversation, ("user", "q"), ("assistant", "half"))
    Message.objects.filter(pk=reply.pk).update(status=MessageStatus.STREAMING, lease_expires_at="2000-01-01T00:00:00Z")
    assert interrupt_stale_streams() == 1
    reply.refresh_from_db()
    assert reply.status == MessageStatus.INTERRUPTED
