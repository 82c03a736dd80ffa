"""A check-in's turn (issue 44 item 2): its trigger stored as an app event, its reply an ordinary reply through
the ordinary send path, the provider seeing the brief as the owner's scheduled request; a failed provider call
leaves a failed reply with Retry; a target outside the `normal` state pauses the check-in with no reply."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from check_ins.models import CheckIn, CheckInRun, RunStatus
from check_ins.sending.turn import check_in_run_execute, reply_to_end
from check_ins.services.runs import due_runs_claim
from continuity.rules.app_events import SCHEDULED_CHECK_IN_OPENING
from conversations.sending.prepare import retry_prepare
from tests.check_ins.support import BRIEF, check_in_due, only_run, run_due
from tests.support.factories import thread
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, ConversationOrigin, Folder, Message, MessageKind, MessageStatus, Role

pytestmark = pytest.mark.django_db(transaction=True)


def _input_texts(request) -> list[tuple[str, str]]:
    return [(item["role"], str(item["content"])) for item in request.body["input"]]


def test_a_check_in_in_this_conversation_is_an_ordinary_reply_to_its_trigger(scripted_provider):
    conversation = thread(("user", "The interview is on Friday."), ("assistant", "Good luck with it."))
    check_in = check_in_due(target={"kind": "conversation", "conversation_id": str(conversation.pk)})
    scripted_provider.script(ScriptedReply(text="How did the interview go?"))

    [outcome] = run_due()

    run = only_run(check_in)
    assert (outcome.status, run.status, run.attempts) == (RunStatus.DONE, RunStatus.DONE, 1)
    rows = list(Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM).order_by("seq"))
    trigger, reply = rows[-2], rows[-1]
    assert (trigger.role, trigger.kind, trigger.content) == (Role.USER, MessageKind.CHECK_IN_TRIGGER, BRIEF)
    assert trigger.id == run.trigger_message_id and trigger.parent_id == rows[-3].id
    assert trigger.metadata["check_in"]["id"] == check_in.pk
    assert trigger.metadata["check_in"]["due_at"] == run.due_at.isoformat()
    assert (reply.role, reply.kind, reply.status, reply.content) == (
        Role.ASSISTANT, MessageKind.ORDINARY, MessageStatus.COMPLETE, "How did the interview go?"
    )
    assert reply.parent_id == trigger.id and run.reply_message_id == reply.id
    # The provider saw the brief as its newest input, framed as the owner's scheduled request, never bare.
    [request] = scripted_provider.requests
    texts = _input_texts(request)
    role, newest = texts[-1]
    assert role == "user" and newest.startswith(f"[{SCHEDULED_CHECK_IN_OPENING} (\"Interview\", due ")
    assert BRIEF in newest and "not writing now" in newest
    assert not any(text == BRIEF for _, text in texts)
    # The owner is told (the unread mark), and the check-in knows it ran.
    conversation.refresh_from_db()
    check_in.refresh_from_db()
    assert conversation.unread and check_in.last_run_at is not None
    assert check_in.next_run_at > run.due_at


def test_a_failed_provider_call_leaves_a_failed_reply_with_retry(scripted_provider):
    conversation = thread(("user", "Hello."), ("assistant", "Hi."))
    check_in = check_in_due(target={"kind": "conversation", "conversation_id": str(conversation.pk)})
    scripted_provider.script(ScriptedReply(status=500, error_message="upstream broke"))

    [outcome] = run_due()

    run = only_run(check_in)
    reply = Message.objects.get(pk=run.reply_message_id)
    assert (outcome.status, run.status) == (RunStatus.FAILED, RunStatus.FAILED)
    assert reply.status == MessageStatus.FAILED and reply.error
    conversation.refresh_from_db()
    assert conversation.unread, "a failed reply is announced too"
    # Retry is the ordinary retry of an assistant reply: a new sibling under the same trigger, framed alike.
    scripted_provider.script(ScriptedReply(text="Sorry, here I am: how did it go?"))
    retried = retry_prepare(conversation_id=conversation.pk, message_id=reply.pk)
    assert retried.user_message_id == run.trigger_message_id
    assert async_to_sync(reply_to_end)(retried) == MessageStatus.COMPLETE
    assert SCHEDULED_CHECK_IN_OPENING in _input_texts(scripted_provider.last_request())[-1][1]


@pytest.mark.parametrize("state", ["trashed", "hidden", "shielded", "private"])
def test_quarantine_and_shield_pause_a_check_in_with_no_run_and_no_reply(scripted_provider, state):
    conversation = thread(("user", "Hello."), ("assistant", "Hi."))
    check_in = check_in_due(target={"kind": "conversation", "conversation_id": str(conversation.pk)})
    if state == "hidden":
        conversation.folder = Folder.objects.create(name="Away", hidden=True)
    else:
        setattr(conversation, state, True)
    conversation.save()
    before = Message.objects.filter(conversation=conversation).count()

    [outcome] = run_due()

    check_in.refresh_from_db()
    run = only_run(check_in)
    assert outcome.status == RunStatus.PAUSED == run.status
    assert not check_in.enabled and check_in.next_run_at is None
    assert check_in.paused_reason.startswith("Paused: the conversation ")
    assert Message.objects.filter(conversation=conversation).count() == before
    assert not scripted_provider.requests
    conversation.refresh_from_db()
    assert not conversation.unread


def test_a_new_chat_each_time_goes_through_new_chat_with_its_automatic_handoff(scripted_provider):
    thread(("user", "We talked about the harbour lights."), ("assistant", "The harbour lights were lovely."))
    check_in = check_in_due()
    scripted_provider.script(ScriptedReply(text="Morning! How did it go?"))

    run_due()

    run = only_run(check_in)
    made = Conversation.objects.get(pk=run.conversation_id)
    assert made.origin == ConversationOrigin.NEW_CHAT and made.title == "Interview"
    prompt = Message.objects.get(conversation=made, role=Role.SYSTEM).content
    assert "VERBATIM_EXCHANGE_" in prompt and "harbour lights were lovely" in prompt
    assert [m.kind for m in Message.objects.filter(conversation=made).exclude(role=Role.SYSTEM).order_by("seq")] == [
        MessageKind.CHECK_IN_TRIGGER, MessageKind.ORDINARY,
    ]


def test_a_run_taken_again_after_its_worker_died_writes_no_second_turn_or_reply(scripted_provider):
    """The worker stored the trigger and began the reply, then died: the lease runs out, the reply is swept
    `interrupted`, and the run taken again finds them and records them, with no second send."""
    conversation = thread(("user", "Hello."), ("assistant", "Hi."))
    check_in = check_in_due(target={"kind": "conversation", "conversation_id": str(conversation.pk)})
    scripted_provider.script(ScriptedReply(text="First and only."))
    [outcome] = run_due()
    run = only_run(check_in)
    # As if that worker had died before recording the end: the run is running again and its lease ran out.
    CheckInRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, reply_message_id=None, finished_at=None,
                                               claimed_until=run.due_at)
    again = check_in_run_execute(run.pk)
    assert again.status == RunStatus.DONE and again.message_id == outcome.message_id
    assert Message.objects.filter(conversation=conversation, kind=MessageKind.CHECK_IN_TRIGGER).count() == 1
    assert Message.objects.filter(conversation=conversation, role=Role.ASSISTANT).count() == 2
    assert len(scripted_provider.requests) == 1
    run.refresh_from_db()
    assert (run.status, run.attempts, run.reply_message_id) == (RunStatus.DONE, 2, outcome.message_id)
    # A run that is finished, or held by a live worker, is not taken at all.
    assert check_in_run_execute(run.pk).status == "taken"


def test_a_deleted_check_in_runs_nothing(scripted_provider):
    check_in = check_in_due()
    [run_id] = due_runs_claim()
    CheckIn.objects.filter(pk=check_in.pk).delete()
    assert check_in_run_execute(run_id).status == "taken"
    assert not scripted_provider.requests


def test_a_check_in_reply_reaches_the_owners_browsers_as_a_push_without_its_text(scripted_provider, push_service):
    """Item 4: the runner's reply is announced by Web Push (a real push service on loopback decrypts it)."""
    from tests.support.factories import api_call

    browser = push_service.subscribe()
    api_call(Client(), "post", "/api/push/subscriptions/", browser.subscription_json(), status=201)
    conversation = thread(("user", "The interview is on Friday."), ("assistant", "Good luck with it."))
    check_in_due(target={"kind": "conversation", "conversation_id": str(conversation.pk)})
    scripted_provider.script(ScriptedReply(text="How did the interview go?"))

    run_due()

    reply = Message.objects.filter(conversation=conversation).order_by("-seq").first()
    [push] = push_service.received
    assert push.status == 201 and push.problem == ""
    assert push.payload == {
        "title": "Elion Voicefire wrote",
        "url": f"/c/{conversation.id}/?around={reply.id}#message-{reply.id}",
        "tag": f"conversation-{conversation.id}",
    }
    assert "interview" not in push.plaintext.decode()


def test_a_failed_check_in_reply_is_pushed_as_failed(scripted_provider, push_service):
    from tests.support.factories import api_call

    browser = push_service.subscribe()
    api_call(Client(), "post", "/api/push/subscriptions/", browser.subscription_json(), status=201)
    conversation = thread(("user", "Hello."), ("assistant", "Hi."))
    check_in_due(target={"kind": "conversation", "conversation_id": str(conversation.pk)})
    scripted_provider.script(ScriptedReply(status=500, error_message="upstream broke"))

    run_due()

    [push] = push_service.received
    assert push.payload["title"] == "Elion Voicefire could not reply" and "text" not in push.payload
