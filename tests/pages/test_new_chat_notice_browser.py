"""A New Chat says what it carries, in the browser at desktop and phone size (issue 34): the quiet notice at the
top of the thread, "Open source conversation", and "Start without it" leaving the first request the scripted
provider receives free of the handoff."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from continuity.models import ThreadHandoff
from tests.support.chat_page import SIZES, send, wait_settled
from tests.support.factories import thread
from tests.support.scripted_provider import ScriptedReply

pytestmark = pytest.mark.browser

SOURCE_WORDS = "lighthouse-keeper-ledger"


def open_new_chat(page: Page, live_app, size: str) -> None:
    page.set_viewport_size(SIZES[size])
    page.goto(f"{live_app.url}/c/new/")
    page.get_by_role("button", name="Start a new chat").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]{36}/$"))


@pytest.mark.parametrize("size", SIZES)
def test_a_new_chat_shows_what_it_carries_and_can_start_without_it(live_app, page: Page, scripted_server, size):
    source = thread(*[("user" if i % 2 == 0 else "assistant", f"{SOURCE_WORDS} {i}") for i in range(10)],
                    title="Harbour letters")
    open_new_chat(page, live_app, size)
    notice = page.locator("[data-handoff-notice]")
    expect(notice).to_contain_text("Continues from “Harbour letters” — the last 8 messages.")
    expect(notice).to_be_in_viewport()
    expect(notice.get_by_role("link", name="Open source conversation")).to_have_attribute("href", f"/c/{source.id}/")
    assert page.locator(".message").count() == 0, "the notice is not a message"
    expect(page.locator("[data-estimate]")).to_have_text("0")

    page.once("dialog", lambda dialog: dialog.accept())
    notice.get_by_role("button", name="Start without it").click()
    expect(page.locator("[data-handoff-notice]")).to_have_count(0)
    chat_id = page.url.rstrip("/").split("/")[-1]
    assert not ThreadHandoff.objects.filter(destination_id=chat_id).exists()

    scripted_server.script(ScriptedReply(text="Good morning to you."))
    send(page, "Good morning")
    wait_settled(page)
    first_request = json.dumps(scripted_server.last_request().body)
    assert "Good morning" in first_request and SOURCE_WORDS not in first_request
    assert page.js_errors == []


def test_the_notice_stays_and_its_action_goes_once_the_chat_has_begun(live_app, page: Page, scripted_server):
    thread(*[("user" if i % 2 == 0 else "assistant", f"{SOURCE_WORDS} {i}") for i in range(4)], title="Short one")
    open_new_chat(page, live_app, "desktop")
    expect(page.locator("[data-handoff-notice]")).to_contain_text("the last 4 messages")
    scripted_server.script(ScriptedReply(text="Hello again."))
    send(page, "Hello")
    wait_settled(page)
    expect(page.get_by_role("button", name="Start without it")).to_have_count(0)
    assert SOURCE_WORDS in json.dumps(scripted_server.last_request().body), "the kept handoff reached the request"
    assert page.js_errors == []
