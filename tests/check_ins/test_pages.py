"""Settings → Check-ins, the check-in form, a proposal card's actions, the chat's "Check in" action, the unread
mark and the title bar's count (issue 44, items 3 to 5), through Django's test client: what each page renders
and what each form post does to the rows. The browser tests (tests/pages/test_check_ins_browser.py) drive the
same pages in chromium."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from check_ins.models import CheckIn, CheckInProposal, CheckInRun, RunStatus
from check_ins.services.check_ins import check_in_create
from check_ins.services.proposals import check_in_propose
from conversations.services.settings_writes import assistant_settings_update
from conversations.services.threads.thread_writes import conversation_create
from tests.support.factories import turns_append
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, Role

pytestmark = pytest.mark.django_db


def in_days(days: int, at: str = "09:00", zone: str = "UTC") -> str:
    return f"{(datetime.now(ZoneInfo(zone)).date() + timedelta(days=days)).isoformat()}T{at}"


def form(**fields: object) -> dict:
    base = {"title": "Morning", "brief": "Ask how I slept.", "schedule_kind": "daily", "at_time": "08:15",
            "at_datetime": "", "n": "2", "target": "new_chat", "time_zone": "Europe/Berlin",
            "quiet_start": "", "quiet_end": ""}
    return {**base, **fields}


def test_the_form_creates_each_schedule_kind_with_the_settings_zone_as_default():
    assistant_settings_update(time_zone="Europe/Berlin")
    client = Client()
    page = client.get("/settings/check-ins/new/").content.decode()
    assert 'value="Europe/Berlin"' in page and 'id="time-zone-names"' in page

    assert client.post("/settings/check-ins/new/", form()).status_code == 302
    client.post("/settings/check-ins/new/", form(title="Gym", schedule_kind="weekdays", at_time="18:00",
                                                 days=["thu", "mon"], quiet_start="22:00", quiet_end="07:00"))
    client.post("/settings/check-ins/new/", form(title="Plants", schedule_kind="every_n_days",
                                                 at_datetime=in_days(1, "07:30"), n="3"))
    client.post("/settings/check-ins/new/", form(title="Friday", schedule_kind="once", at_datetime=in_days(4)))
    rows = {c.title: c for c in CheckIn.objects.all()}
    assert (rows["Morning"].schedule_kind, rows["Morning"].schedule_at, rows["Morning"].time_zone) == (
        "daily", "08:15", "Europe/Berlin",
    )
    assert rows["Gym"].schedule_days == ["mon", "thu"] and rows["Gym"].quiet_start.strftime("%H:%M") == "22:00"
    assert (rows["Plants"].schedule_n, rows["Plants"].schedule_at) == (3, in_days(1, "07:30"))
    assert rows["Friday"].schedule_kind == "once" and all(c.next_run_at for c in rows.values())

    listing = client.get("/settings/check-ins/").content.decode()
    assert "Daily at 08:15" in listing and "Mondays and Thursdays at 18:00" in listing
    assert "Every 3 days at 07:30" in listing and "quiet 22:00–07:00" in listing
    assert listing.count("data-check-in-run-key") == 4


@pytest.mark.parametrize(("fields", "detail"), [
    ({"title": ""}, "title cannot be empty"),
    ({"schedule_kind": "once", "at_datetime": "2001-01-01T09:00"}, "in the past"),
    ({"schedule_kind": "weekdays"}, "schedule.days"),
    ({"time_zone": "Atlantis/Nowhere"}, "IANA"),
    ({"quiet_start": "22:00"}, "quiet_hours"),
    ({"schedule_kind": "hourly"}, "schedule.kind"),
    ({"target": "conversation", "conversation_id": "nope"}, "conversation"),
])
def test_a_refused_form_says_why_and_keeps_what_was_typed(fields, detail):
    response = Client().post("/settings/check-ins/new/", form(brief="Keep these words.", **fields))
    assert response.status_code == 400
    page = response.content.decode()
    assert detail in re.search(r'data-check-in-error>([^<]*)<', page).group(1)
    assert "Keep these words." in page
    assert not CheckIn.objects.exists()


def test_the_chat_menu_action_prefills_this_chat_and_a_private_chat_is_refused_with_a_reason():
    chat = conversation_create(title="Interview prep")
    page = Client().get(f"/c/{chat.pk}/").content.decode()
    assert f'href="/settings/check-ins/new/?conversation={chat.pk}"' in page

    form_page = Client().get(f"/settings/check-ins/new/?conversation={chat.pk}").content.decode()
    assert re.search(r'value="conversation" checked', form_page) and "Interview prep" in form_page
    Client().post("/settings/check-ins/new/", form(target="conversation", conversation_id=str(chat.pk)))
    assert str(CheckIn.objects.get().conversation_id) == str(chat.pk)

    private = conversation_create(title="Between us", private=True)
    refused = Client().get(f"/settings/check-ins/new/?conversation={private.pk}").content.decode()
    assert "the conversation is a private chat" in refused and 'value="conversation"' not in refused
    assert Client().get("/settings/check-ins/new/?conversation=garbage").status_code == 200


def test_edit_pause_resume_and_delete():
    check_in = check_in_create(title="Morning", brief="Ask.", schedule={"kind": "daily", "at": "08:00"},
                               target={"kind": "new_chat"})
    client = Client()
    edit = client.get(f"/settings/check-ins/{check_in.pk}/").content.decode()
    assert 'value="08:00"' in edit and "Morning" in edit
    client.post(f"/settings/check-ins/{check_in.pk}/", form(title="Early", at_time="06:45", time_zone="UTC"))
    check_in.refresh_from_db()
    assert (check_in.title, check_in.schedule_at) == ("Early", "06:45")

    client.post(f"/settings/check-ins/{check_in.pk}/pause/")
    check_in.refresh_from_db()
    assert not check_in.enabled and check_in.next_run_at is None
    assert "data-check-in-resume" in client.get("/settings/check-ins/").content.decode()
    client.post(f"/settings/check-ins/{check_in.pk}/resume/")
    check_in.refresh_from_db()
    assert check_in.enabled and check_in.next_run_at is not None

    client.post(f"/settings/check-ins/{check_in.pk}/delete/")
    assert not CheckIn.objects.exists()
    gone = client.get(f"/settings/check-ins/{check_in.pk}/", follow=True)
    assert "No check-in has that id." in gone.content.decode()
    assert client.post("/settings/check-ins/abc/pause/", follow=True).status_code == 200


def test_the_list_shows_the_last_run_with_a_link_to_its_reply_and_why_elion_paused_one():
    chat = conversation_create(title="Garden")
    _, reply = turns_append(chat, (Role.USER, "Hello."), (Role.ASSISTANT, "Hello there."))
    check_in = check_in_create(title="Water", brief="Remind me.", schedule={"kind": "daily", "at": "08:00"},
                               target={"kind": "conversation", "conversation_id": str(chat.pk)})
    CheckInRun.objects.create(check_in=check_in, due_at=datetime(2026, 1, 1, 8, tzinfo=ZoneInfo("UTC")),
                              status=RunStatus.DONE, conversation=chat, reply_message_id=reply.pk)
    CheckIn.objects.filter(pk=check_in.pk).update(
        last_run_at=datetime(2026, 1, 1, 8, tzinfo=ZoneInfo("UTC")), enabled=False,
        paused_reason="the conversation is in the trash",
    )
    page = Client().get("/settings/check-ins/").content.decode()
    assert f"?around={reply.pk}#message-{reply.pk}" in page and "Thu 1 Jan 2026, 08:00" in page
    assert "Paused by Elion: the conversation is in the trash." in page


def proposal_in(chat: Conversation) -> CheckInProposal:
    _, reply = turns_append(chat, (Role.USER, "Interview on Friday."), (Role.ASSISTANT, "Good luck!"))
    reply.parts = [{"type": "tool_call", "call_id": "c1", "name": "propose_check_in", "arguments": "{}", "round": 1}]
    reply.save(update_fields=["parts"])
    return check_in_propose(
        conversation_id=chat.pk, reply_id=reply.pk, tool_call_id="c1", title="The interview",
        brief="Ask how it went.", schedule={"kind": "once", "at": in_days(3)}, target="this_conversation",
        reason="It matters to AUMA.",
    ).proposal


def test_the_card_under_the_reply_approves_with_edits_and_answers_with_the_card_itself():
    chat = conversation_create(title="Interview prep")
    proposal = proposal_in(chat)
    client = Client()
    page = client.get(f"/c/{chat.pk}/").content.decode()
    assert "Elion suggests a check-in" in page and f'data-proposal-id="{proposal.pk}"' in page
    assert "It matters to AUMA." in page

    card = client.post(
        f"/settings/check-ins/suggestions/{proposal.pk}/approve/",
        {"place": "chat", "title": "Interview", "brief": "Ask how it went.", "schedule_kind": "daily",
         "at_time": "19:00", "target": "conversation", "conversation_id": str(chat.pk)},
        headers={"X-Elion-Fragment": "card"},
    )
    assert card.status_code == 200
    text = card.content.decode()
    assert text.lstrip().startswith("<section") and 'data-proposal-status="approved"' in text
    assert "Scheduled. It first runs" in text
    check_in = CheckIn.objects.get()
    assert (check_in.title, check_in.schedule_kind, check_in.schedule_at) == ("Interview", "daily", "19:00")

    again = client.post(f"/settings/check-ins/suggestions/{proposal.pk}/dismiss/", {"place": "chat"},
                        headers={"X-Elion-Fragment": "card"})
    assert again.status_code == 409 and "already approved" in again.content.decode()
    unknown = client.post(f"/settings/check-ins/suggestions/{proposal.pk}/explode/", {},
                          headers={"X-Elion-Fragment": "card"})
    assert unknown.status_code == 404


def test_the_card_without_javascript_redirects_back_to_the_reply_and_pending_ones_are_listed_in_settings():
    chat = conversation_create(title="Interview prep")
    proposal = proposal_in(chat)
    client = Client()
    assert "Suggested by" in client.get("/settings/check-ins/").content.decode()
    response = client.post(f"/settings/check-ins/suggestions/{proposal.pk}/dismiss/",
                           {"place": "chat", "next": f"/c/{chat.pk}/?around={proposal.reply_message_id}"})
    assert response.status_code == 302 and response["Location"].startswith(f"/c/{chat.pk}/")
    assert CheckInProposal.objects.get().status == "dismissed"
    assert "Suggested by" not in client.get("/settings/check-ins/").content.decode()


def test_the_sidebar_marks_unread_chats_and_the_title_counts_them_until_opened():
    first, second = conversation_create(title="Morning note"), conversation_create(title="Evening note")
    Conversation.objects.filter(pk__in=[first.pk, second.pk]).update(unread=True)
    client = Client()
    home = client.get("/settings/").content.decode()
    assert re.search(r"<title>\(2\) Settings · Elion</title>", home)
    assert home.count("data-unread-mark") == 2

    opened = client.get(f"/c/{first.pk}/").content.decode()
    assert re.search(r"<title>\(1\) Morning note · Elion</title>", opened)
    assert opened.count("data-unread-mark") == 1
    client.get(f"/c/{second.pk}/")
    page = client.get("/settings/").content.decode()
    assert "<title>Settings · Elion</title>" in page and "data-unread-mark" not in page


def test_settings_saves_the_time_zone_and_the_proposals_switch():
    client = Client()
    page = client.get("/settings/").content.decode()
    assert 'name="time_zone"' in page and 'name="check_in_proposals" checked' in page.replace("\n", "")
    fields = {"owner_name": "AUMA", "display_name": "Elion", "personality": "natural", "custom_instructions": "",
              "time_zone": "America/New_York"}
    assert client.post("/settings/", fields).status_code == 302
    from elion.base.assistant_settings import assistant_settings_get

    row = assistant_settings_get()
    assert (row.time_zone, row.check_in_proposals) == ("America/New_York", False)
    refused = client.post("/settings/", {**fields, "time_zone": "Nowhere/Land", "check_in_proposals": "on"})
    assert refused.status_code == 400 and "IANA" in refused.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_check_in_reply_carries_a_mark_naming_its_check_in_and_the_trigger_is_no_owner_bubble(scripted_provider):
    from tests.check_ins.support import check_in_due, run_due

    chat = conversation_create(title="Lighthouse")
    turns_append(chat, (Role.USER, "The interview is tomorrow."), (Role.ASSISTANT, "You will do well."))
    check_in_due(title="Interview check", target={"kind": "conversation", "conversation_id": str(chat.pk)})
    scripted_provider.script(ScriptedReply(text="How did the lighthouse interview go?"))
    (outcome,) = run_due()
    page = Client().get(f"/c/{chat.pk}/").content.decode()
    reply = re.search(rf'<article[^>]*id="message-{outcome.message_id}".*?</article>', page, re.DOTALL).group(0)
    assert re.search(r'data-check-in-mark[^>]*>Check-in: Interview check<', reply)
    trigger = re.search(r'<article[^>]*data-check-in-trigger.*?</article>', page, re.DOTALL).group(0)
    assert "ask how the lighthouse interview went" in trigger and ">Check-in<" in trigger
    assert "AUMA" not in trigger and 'data-action="edit"' not in trigger
    # Only the one reply is marked: the owner's earlier exchange carries no mark.
    assert page.count("Check-in: Interview check") == 1


@pytest.mark.django_db(transaction=True)
def test_run_now_without_javascript_runs_once_per_rendered_key_and_opens_the_reply(scripted_provider):
    chat = conversation_create(title="Garden")
    turns_append(chat, (Role.USER, "Tomatoes planted."), (Role.ASSISTANT, "Lovely."))
    check_in = check_in_create(title="Water", brief="Ask whether I watered them.",
                               schedule={"kind": "daily", "at": "08:00"},
                               target={"kind": "conversation", "conversation_id": str(chat.pk)})
    scripted_provider.script(ScriptedReply(text="Watered yet?"))
    client = Client()
    key = re.search(r'name="idempotency_key" value="([^"]+)"', client.get("/settings/check-ins/").content.decode()).group(1)
    first = client.post(f"/settings/check-ins/{check_in.pk}/run/", {"idempotency_key": key})
    run = CheckInRun.objects.get()
    assert first.status_code == 302 and first["Location"] == f"/c/{chat.pk}/?around={run.reply_message_id}"
    again = client.post(f"/settings/check-ins/{check_in.pk}/run/", {"idempotency_key": key})  # a double submit
    assert again["Location"] == first["Location"] and CheckInRun.objects.count() == 1
    assert len(scripted_provider.requests) == 1
    refused = client.post(f"/settings/check-ins/{check_in.pk}/run/", {}, follow=True)
    assert "Idempotency-Key" in refused.content.decode() and CheckInRun.objects.count() == 1


def test_the_list_says_where_replies_are_announced_and_shows_every_failed_delivery():
    from elion.models import PushSubscription

    page = Client().get("/settings/check-ins/").content.decode()
    assert "data-push-none" in page and "data-push-failure" not in page
    PushSubscription.objects.create(
        endpoint="https://push.example.net/one", p256dh="k", auth="a", user_agent="Phone",
        recent_failures=[{"at": "2026-12-03T09:00:00+00:00", "status": 500, "message": "the push service answered 500"},
                         {"at": "2026-12-02T09:00:00+00:00", "status": None, "message": "no answer in 10 s"}],
    )
    PushSubscription.objects.create(endpoint="https://push.example.net/two", p256dh="k", auth="a", user_agent="Laptop")
    page = Client().get("/settings/check-ins/").content.decode()
    assert "data-push-none" not in page and "on 2 browsers" in page
    assert page.count("data-push-failure>") == 2 and "the push service answered 500" in page
    assert "no answer in 10 s" in page and "Delivery to Phone failed" in page and "Delivery to Laptop" not in page
