"""Browser (issue 31): a refusal shows as a refusal, never an empty bubble; a reply the provider cut off
shows "Cut off" and a Continue button, which sends a turn asking for the rest and leaves the old reply
without the button."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message, MessageStatus, Role

pytestmark = pytest.mark.browser

COMPOSER = "[data-composer-input]"
REFUSED = "I can't help with writing that."


def open_new_chat(page: Page, url: str) -> None:
    page.goto(url)
    page.locator(".sidebar").get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))


def say(page: Page, text: str) -> None:
    page.fill(COMPOSER, text)
    page.press(COMPOSER, "Enter")
    expect(page.locator(".message-assistant.status-streaming")).to_have_count(0)


def test_a_refusal_shows_as_declined_not_as_an_empty_reply(live_app, page: Page, scripted_server):
    scripted_server.script(ScriptedReply(refusal=REFUSED, delay_between_chunks=0.05))
    open_new_chat(page, live_app.url)
    say(page, "Write something cruel about my neighbour.")
    reply = page.locator(".message-assistant").last
    expect(reply.locator("[data-refusal]")).to_have_text("Declined")
    expect(reply.locator("[data-refusal-text]")).to_contain_text("declined to answer this.")
    expect(reply.locator("[data-refusal-text] blockquote")).to_have_text(REFUSED)
    assert page.js_errors == []


def test_continue_on_a_cut_off_reply_sends_a_turn_asking_for_the_rest(live_app, page: Page, scripted_server):
    scripted_server.script(
        ScriptedReply(text="Once upon a time there was a hive", incomplete="max_output_tokens"),
        ScriptedReply(text=" that sang at dawn. The end."),
    )
    open_new_chat(page, live_app.url)
    say(page, "Tell me a long story.")
    cut = page.locator(".message-assistant").last
    expect(cut.locator("[data-incomplete-reason]")).to_have_attribute("data-incomplete-reason", "max_output_tokens")
    expect(cut.locator(".message-cut-off")).to_contain_text("The reply was cut off")
    cut.locator('[data-action="continue"]').click()

    expect(page.locator(".message-assistant")).to_have_count(2)
    expect(page.locator(".message-assistant.status-streaming")).to_have_count(0)
    expect(page.locator(".message-assistant").last).to_contain_text("The end.")
    expect(page.locator(".message-user").last).to_contain_text("Please continue from where your last reply was cut off.")
    page.reload()
    expect(page.locator('[data-action="continue"]')).to_have_count(0)  # only the newest reply offers it
    replies = list(Message.objects.filter(role=Role.ASSISTANT).order_by("seq").values_list("status", flat=True))
    assert replies == [MessageStatus.INCOMPLETE, MessageStatus.COMPLETE]
    assert page.js_errors == []
