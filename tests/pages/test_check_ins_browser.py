"""Browser (issue 44, items 3 to 5), desktop 1366×900 and phone 390×844: creating a check-in in Settings →
Check-ins, Pause and Resume, Run now (the reply written, linked, and carrying the mark naming its check-in),
the chat menu's "Check in" with this chat pre-filled as the target, and approving (as proposed, with edits)
or dismissing a check-in Elion proposed, from its card under the reply. Every step is checked against the
rows, and the pages against axe, with no script error and no CSP violation."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Page, expect

from check_ins.models import CheckIn, CheckInProposal, CheckInRun
from check_ins.services.check_ins import check_in_create
from conversations.services.threads.thread_writes import conversation_create
from tests.support.axe import axe_violations, violation_lines
from tests.support.factories import turns_append
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, Role

pytestmark = pytest.mark.browser

COMPOSER = "[data-composer-input]"
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
SIZES = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])


def days_ahead(days: int, at: str) -> str:
    return f"{(datetime.now(ZoneInfo('UTC')).date() + timedelta(days=days)).isoformat()}T{at}"


def check_in_item(page: Page, title: str):
    return page.locator("[data-check-in]").filter(has_text=title)


@SIZES
def test_creating_a_check_in_then_pausing_and_resuming_it(live_app, page: Page, viewport):
    page.set_viewport_size(viewport)
    page.goto(f"{live_app.url}/settings/")
    page.locator("[data-check-ins-link] a").click()
    page.wait_for_url(f"{live_app.url}/settings/check-ins/")
    expect(page.locator("[data-check-ins-empty]")).to_be_visible()
    page.locator("[data-check-in-new]").click()
    page.wait_for_url(f"{live_app.url}/settings/check-ins/new/")
    found = violation_lines("new check-in form", axe_violations(page))

    page.fill("#title", "Evening walk")
    page.fill("#brief", "Ask whether I went for my walk.")
    page.select_option("#schedule_kind", "weekdays")
    # Only the fields a weekdays schedule uses are shown.
    expect(page.locator("#at_time")).to_be_visible()
    expect(page.locator("#at_datetime")).to_be_hidden()
    expect(page.locator("#n")).to_be_hidden()
    page.fill("#at_time", "19:30")
    page.get_by_label("Mon", exact=True).check()
    page.get_by_label("Fri", exact=True).check()
    page.fill("#quiet_start", "22:00")
    page.fill("#quiet_end", "07:00")
    expect(page.locator("#time_zone")).to_have_value("UTC")  # Settings' zone
    page.locator("[data-check-in-save]").click()
    page.wait_for_url(f"{live_app.url}/settings/check-ins/")

    item = check_in_item(page, "Evening walk")
    expect(item).to_contain_text("Mondays and Fridays at 19:30")
    expect(item.locator("[data-check-in-state]")).to_have_text("Active")
    expect(item.locator("[data-check-in-next-run]")).not_to_have_text("—")
    check_in = CheckIn.objects.get()
    assert (check_in.schedule_kind, check_in.schedule_at, check_in.schedule_days) == ("weekdays", "19:30", ["mon", "fri"])
    assert check_in.quiet_start.strftime("%H:%M") == "22:00" and check_in.next_run_at is not None
    found += violation_lines("check-ins list with its 'saved' flash", axe_violations(page))

    item.locator("[data-check-in-pause]").click()
    expect(check_in_item(page, "Evening walk").locator("[data-check-in-state]")).to_have_text("Paused")
    expect(check_in_item(page, "Evening walk").locator("[data-check-in-next-run]")).to_have_text("—")
    check_in.refresh_from_db()
    assert not check_in.enabled and check_in.next_run_at is None
    check_in_item(page, "Evening walk").locator("[data-check-in-resume]").click()
    expect(check_in_item(page, "Evening walk").locator("[data-check-in-state]")).to_have_text("Active")
    check_in.refresh_from_db()
    assert check_in.enabled and check_in.next_run_at is not None

    page.once("dialog", lambda dialog: dialog.accept())
    check_in_item(page, "Evening walk").locator("[data-check-in-delete]").click()
    expect(page.locator("[data-check-ins-empty]")).to_be_visible()
    assert not CheckIn.objects.exists()
    assert found == [], "\n".join(found)
    assert page.js_errors == []


@SIZES
def test_run_now_writes_the_reply_once_and_the_reply_carries_the_check_ins_mark(live_app, page: Page, scripted_server,
                                                                                 viewport):
    page.set_viewport_size(viewport)
    chat = conversation_create(title="Garden")
    turns_append(chat, (Role.USER, "I planted tomatoes."), (Role.ASSISTANT, "Lovely."))
    check_in_create(title="Tomatoes", brief="Ask whether I watered the tomatoes.",
                    schedule={"kind": "daily", "at": "08:00"},
                    target={"kind": "conversation", "conversation_id": str(chat.pk)})
    scripted_server.script(ScriptedReply(text="Did the tomatoes get their water?"))
    page.goto(f"{live_app.url}/settings/check-ins/")
    item = check_in_item(page, "Tomatoes")
    expect(item.locator("[data-check-in-last-run]")).to_have_text("—")
    item.locator("[data-check-in-run-button]").click()
    link = item.locator("[data-check-in-run-link]")
    expect(link).to_be_visible(timeout=30_000)
    run = CheckInRun.objects.get()
    assert run.manual and run.idempotency_key and run.reply_message_id is not None
    assert len(scripted_server.requests) == 1

    link.click()
    page.wait_for_url(re.compile(rf"/c/{chat.pk}/\?around={run.reply_message_id}"))
    reply = page.locator(f"#message-{run.reply_message_id}")
    expect(reply).to_contain_text("Did the tomatoes get their water?")
    expect(reply.locator("[data-check-in-mark]")).to_have_text("Check-in: Tomatoes")
    trigger = page.locator("[data-check-in-trigger]")
    expect(trigger).to_contain_text("Ask whether I watered the tomatoes.")
    expect(trigger.locator(".author")).to_have_text("Check-in")
    found = violation_lines("chat with a check-in's reply", axe_violations(page))

    # Back on the list: the last run links to the reply; a second Run now is a new run (a fresh key).
    page.goto(f"{live_app.url}/settings/check-ins/")
    expect(check_in_item(page, "Tomatoes").locator("[data-check-in-run-status]")).to_have_text("done")
    assert found == [], "\n".join(found)
    assert page.js_errors == []


@SIZES
def test_the_chat_menus_check_in_action_prefills_this_chat_as_the_target(live_app, page: Page, viewport):
    page.set_viewport_size(viewport)
    chat = conversation_create(title="Interview prep")
    turns_append(chat, (Role.USER, "The interview is on Friday."), (Role.ASSISTANT, "You will do well."))
    page.goto(f"{live_app.url}/c/{chat.pk}/")
    page.locator("[data-conversation-menu] summary").click()
    page.locator("[data-check-in-action]").click()
    page.wait_for_url(re.compile(rf"/settings/check-ins/new/\?conversation={chat.pk}"))
    target = page.locator("[data-check-in-target-conversation]")
    expect(target).to_be_checked()
    expect(page.locator("[data-check-in-form]")).to_contain_text("Interview prep")
    page.fill("#title", "After the interview")
    page.fill("#brief", "Ask how the interview went.")
    page.select_option("#schedule_kind", "once")
    expect(page.locator("#at_time")).to_be_hidden()
    page.fill("#at_datetime", days_ahead(3, "17:00"))
    page.locator("[data-check-in-save]").click()
    page.wait_for_url(f"{live_app.url}/settings/check-ins/")
    expect(check_in_item(page, "After the interview")).to_contain_text("in “Interview prep”")
    check_in = CheckIn.objects.get()
    assert (check_in.target_kind, check_in.conversation_id, check_in.schedule_at) == (
        "conversation", chat.pk, days_ahead(3, "17:00"),
    )

    # A private chat cannot be a target: the form says why and offers a new chat each time.
    private = conversation_create(title="Between us", private=True)
    page.goto(f"{live_app.url}/c/{private.pk}/")
    page.locator("[data-conversation-menu] summary").click()
    page.locator("[data-check-in-action]").click()
    expect(page.locator("[data-check-in-refusal]")).to_contain_text("private chat")
    expect(page.locator("[data-check-in-target-conversation]")).to_have_count(0)
    assert page.js_errors == []


def proposal_call(call_id: str, title: str, brief: str, schedule: dict) -> dict:
    return {"name": "propose_check_in", "call_id": call_id,
            "arguments": {"title": title, "brief": brief, "schedule": schedule, "target": "this_conversation",
                          "reason": "AUMA mentioned it."}}


def card_of(page: Page, title: str):
    named = page.locator("[data-check-in-proposal-title]").get_by_text(title, exact=True)
    return page.locator("[data-check-in-proposal]").filter(has=named)


@SIZES
def test_approving_a_proposed_check_in_from_its_card(live_app, page: Page, scripted_server, viewport):
    page.set_viewport_size(viewport)
    friday = days_ahead(3, "09:00")
    scripted_server.script(
        ScriptedReply(tool_calls=[
            proposal_call("c1", "The interview", "Ask how the interview went.", {"kind": "once", "at": friday}),
            proposal_call("c2", "Morning run", "Ask whether I ran.", {"kind": "daily", "at": "07:00"}),
            proposal_call("c3", "Plants", "Remind me to water the plants.", {"kind": "every_n_days", "at": friday,
                                                                              "n": 3}),
        ]),
        ScriptedReply(text="Shall I ask you on Friday how it went?"),
    )
    page.goto(live_app.url)
    if viewport is PHONE:
        page.locator("[data-sidebar-open]").click()
    page.locator(".sidebar").get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    conversation_id = page.url.rstrip("/").rsplit("/", 1)[1]
    page.fill(COMPOSER, "The interview is on Friday morning; I also want to run and keep my plants alive.")
    page.press(COMPOSER, "Enter")

    reply = page.locator(".message-assistant").last
    expect(reply).to_contain_text("Shall I ask you on Friday")
    expect(reply.locator("[data-check-in-proposal]")).to_have_count(3)
    expect(card_of(page, "The interview")).to_contain_text("Elion suggests a check-in")
    expect(card_of(page, "Plants")).to_contain_text("Every 3 days at 09:00")
    assert not CheckIn.objects.exists()
    found = violation_lines("chat with check-in proposal cards", axe_violations(page))

    # Approve as proposed: a check-in in this chat, the card answering in place.
    card_of(page, "The interview").get_by_role("button", name="Approve").click()
    approved = card_of(page, "The interview")
    expect(approved).to_have_attribute("data-proposal-status", "approved")
    expect(approved.locator("[data-proposal-note]")).to_contain_text("Scheduled. It first runs")
    interview = CheckIn.objects.get(title="The interview")
    assert (interview.target_kind, str(interview.conversation_id), interview.schedule_at) == (
        "conversation", conversation_id, friday,
    )

    # Edit, then approve with the edits.
    run = card_of(page, "Morning run")
    run.locator("[data-proposal-edit] summary").click()
    run.locator("input[name=title]").fill("Evening run")
    run.locator("select[name=schedule_kind]").select_option("weekdays")
    run.locator("input[name=at_time]").fill("18:30")
    run.get_by_label("Tue", exact=True).check()
    run.get_by_label("Thu", exact=True).check()
    found += violation_lines("a check-in card's Edit open", axe_violations(page))
    run.get_by_role("button", name="Approve with these edits").click()
    expect(card_of(page, "Morning run")).to_have_attribute("data-proposal-status", "approved")
    edited = CheckIn.objects.get(title="Evening run")
    assert (edited.schedule_kind, edited.schedule_at, edited.schedule_days) == ("weekdays", "18:30", ["tue", "thu"])

    card_of(page, "Plants").get_by_role("button", name="Dismiss").click()
    expect(card_of(page, "Plants")).to_have_attribute("data-proposal-status", "dismissed")
    assert CheckInProposal.objects.get(title="Plants").status == "dismissed"
    assert CheckIn.objects.count() == 2

    # A reload renders the same cards from the server; the approved one opens its check-in.
    page.reload()
    expect(card_of(page, "The interview")).to_have_attribute("data-proposal-status", "approved")
    card_of(page, "The interview").locator("[data-check-in-link]").click()
    page.wait_for_url(f"{live_app.url}/settings/check-ins/{interview.pk}/")
    expect(page.locator("#title")).to_have_value("The interview")
    assert found == [], "\n".join(found)
    assert page.js_errors == []


@SIZES
def test_the_sidebar_marks_what_elion_wrote_and_the_title_counts_it_until_opened(live_app, page: Page, viewport):
    page.set_viewport_size(viewport)
    first, second = conversation_create(title="Morning note"), conversation_create(title="Evening note")
    Conversation.objects.filter(pk__in=[first.pk, second.pk]).update(unread=True)
    page.goto(f"{live_app.url}/settings/")
    expect(page).to_have_title("(2) Settings · Elion")
    if viewport is PHONE:
        page.locator("[data-sidebar-open]").click()
    link = page.locator(f'[data-conversation-link="{first.pk}"]')
    expect(link.locator("[data-unread-mark]")).to_be_attached()
    expect(link).to_contain_text("(unread)")  # what a screen reader reads
    link.click()
    page.wait_for_url(f"{live_app.url}/c/{first.pk}/")
    expect(page).to_have_title("(1) Morning note · Elion")
    expect(page.locator(f'[data-conversation-link="{first.pk}"] [data-unread-mark]')).to_have_count(0)
    expect(page.locator(f'[data-conversation-link="{second.pk}"] [data-unread-mark]')).to_have_count(1)
    assert not Conversation.objects.get(pk=first.pk).unread
    assert page.js_errors == []
